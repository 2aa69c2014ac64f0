package dev.berth.engine.testing;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.host.AgentBinary;
import dev.berth.engine.host.AgentListener;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxDamagedException;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

/**
 * TEST DOUBLE, NO ISOLATION: an isolation driver that runs the real guest agent ({@code berth-agent}, built by this
 * module) as a plain host process, for tests of the engine's own logic (state machine, recovery, quotas, the idle
 * reaper) that should take milliseconds and need neither bubblewrap nor QEMU. Commands run on the host, as the user
 * running the tests, with the host's filesystem; only the agent's file requests and working directories are kept in
 * the workspace's state directory ({@code workspace/} for {@code /workspace}, {@code home/} for {@code /root}) by a
 * {@link PathMappingRelay}. It lives in test sources only and must never be offered by a server.
 *
 * <p>What it keeps: park stops the agent and its runs and keeps the directory (memory is not kept, as with the
 * namespace driver); a snapshot, live or parked, and a fork copy the directory. No egress listener is started
 * (the request's proxy port is ignored: every workspace would share the host's loopback). Capabilities say all this.
 *
 * <p>Seams for tests: {@link #starts()} records every start with its mode, and {@link #damageNextResume} makes the
 * next resume of a workspace fail verification, as a microVM's tampered saved memory would.
 *
 * <p>Thread-safe. Owns the agent processes it starts; a JVM shutdown hook kills those still running, and
 * {@link #cleanupRuntime} kills one a previous engine on the same home left behind (by its pid file).
 */
public final class HostProcessDriver implements IsolationDriver {
    /** The driver's name: not one Berth ships, so its level is {@code OTHER} and it claims nothing. */
    public static final String NAME = "host-process";
    static final String PID_FILE = "agent.pid";
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(10);

    private final Path home;
    private final Set<HostProcessSandbox> live = ConcurrentHashMap.newKeySet();
    private final List<String> starts = new CopyOnWriteArrayList<>();
    private final Set<String> damaged = ConcurrentHashMap.newKeySet();

    /** A driver that extracts the agent under {@code home/images}, as the real drivers do. */
    public HostProcessDriver(Path home) {
        this.home = home.toAbsolutePath();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> live.forEach(HostProcessSandbox::destroy)));
    }

    @Override
    public String name() { return NAME; }

    @Override
    public Availability probe() {
        return HostProcessDriver.class.getClassLoader().getResource(AgentBinary.RESOURCE) != null
                ? Availability.yes("TEST DOUBLE: the guest agent as a plain host process, no isolation")
                : Availability.no("the guest agent binary is not built (" + AgentBinary.RESOURCE + " is not on the class path)");
    }

    @Override
    public DriverCapabilities capabilities() {
        return new DriverCapabilities(NAME, "NONE: a test double; commands run as plain host processes with the host's"
                + " filesystem, network and kernel", false, false, false, "none");
    }

    /** Every start so far, as {@code "<workspace id> <mode>"} with the mode's simple name ({@code Fresh}, {@code Resume}...). */
    public List<String> starts() { return List.copyOf(starts); }

    /** Makes the next resume of {@code workspaceId} fail verification ({@link SandboxDamagedException}). */
    public void damageNextResume(String workspaceId) { damaged.add(workspaceId); }

    @Override
    public Sandbox start(StartRequest request) throws SandboxException {
        Path state = request.stateDir();
        Path workspace = state.resolve("workspace");
        Path rootHome = state.resolve("home");
        try {
            switch (request.mode()) {
                case StartRequest.Fresh f -> { }
                case StartRequest.Resume r -> {
                    if (damaged.remove(request.workspaceId())) {
                        throw new SandboxDamagedException("test double: " + state.resolve("workspace") + " was marked damaged");
                    }
                }
                case StartRequest.Fork f -> copyTree(f.snapshotStateDir(), state);
                case StartRequest.Inspect i -> throw new SandboxException(NAME + " workspaces keep no saved memory to fail"
                        + " verification, so they are never inspected");
            }
            starts.add(request.workspaceId() + " " + request.mode().getClass().getSimpleName());
            Files.createDirectories(workspace);
            Files.createDirectories(rootHome);
            Files.createDirectories(request.runtimeDir());
            return launch(request, workspace, rootHome);
        } catch (IOException e) {
            throw new SandboxException("starting the host-process agent failed: " + e.getMessage(), e);
        }
    }

    private Sandbox launch(StartRequest request, Path workspace, Path rootHome) throws IOException, SandboxException {
        Path agentBin = AgentBinary.extract(home.resolve("images"));
        Path runtime = request.runtimeDir();
        Path agentSock = runtime.resolve("agent.sock");
        Path hostSock = runtime.resolve("host.sock");
        Files.deleteIfExists(agentSock);
        Files.deleteIfExists(hostSock);
        Process p = null;
        try (ServerSocketChannel forAgent = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
             ServerSocketChannel forHost = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            forAgent.bind(UnixDomainSocketAddress.of(agentSock));
            forHost.bind(UnixDomainSocketAddress.of(hostSock));
            Path log = runtime.resolve("agent.log");
            // no --isolate-runs and no --run-as: both need the namespaces this double does not have
            ProcessBuilder pb = new ProcessBuilder(agentBin.toString(), "--connect", "unix:" + agentSock)
                    .redirectErrorStream(true).redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .directory(workspace.toFile());
            pb.environment().clear();
            pb.environment().put("PATH", "/usr/local/bin:/usr/bin:/bin");
            p = pb.start();
            Files.writeString(runtime.resolve(PID_FILE), Long.toString(p.pid()));
            SocketChannel agentSide = AgentListener.accept(forAgent, p, "the host-process agent", log, READY_TIMEOUT);
            SocketChannel client = SocketChannel.open(UnixDomainSocketAddress.of(hostSock));
            SocketChannel hostSide = forHost.accept();
            PathMappingRelay relay = new PathMappingRelay(hostSide, agentSide, workspace, rootHome);
            AgentClient agent;
            try {
                agent = AgentClient.handshake(client, READY_TIMEOUT);
            } catch (IOException e) {
                relay.close();
                client.close();
                throw e;
            }
            HostProcessSandbox s = new HostProcessSandbox(p, agent, relay, request.stateDir(), runtime, this);
            live.add(s);
            return s;
        } catch (IOException | SandboxException | RuntimeException e) {
            if (p != null) HostProcessSandbox.kill(p.toHandle());
            throw e;
        } finally {
            Files.deleteIfExists(agentSock);
            Files.deleteIfExists(hostSock);
        }
    }

    void forget(HostProcessSandbox s) { live.remove(s); }

    /** Kills an agent a previous engine on this home left running (its pid file names it), and what it started. */
    @Override
    public void cleanupRuntime(Path runtimeDir) {
        Path pidFile = runtimeDir.resolve(PID_FILE);
        try {
            if (!Files.isRegularFile(pidFile, LinkOption.NOFOLLOW_LINKS)) return;
            long pid = Long.parseLong(Files.readString(pidFile).strip());
            ProcessHandle.of(pid).filter(h -> h.info().command().orElse("").contains("berth-agent"))
                    .ifPresent(HostProcessSandbox::kill);
        } catch (IOException | NumberFormatException ignored) {
            // nothing readable to clean up
        }
    }

    /** Forks copy the snapshot's directory, so the snapshot may be deleted while they live. */
    @Override
    public boolean forksNeedSnapshot() { return false; }

    @Override
    public void snapshotParked(Path workspaceStateDir, Path snapshotStateDir) throws SandboxException {
        try {
            copyTree(workspaceStateDir, snapshotStateDir);
        } catch (IOException e) {
            throw new SandboxException("copying the workspace files failed: " + e.getMessage(), e);
        }
    }

    /** Copies a tree without following symbolic links (a run may plant them); directories may already exist. */
    static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t, LinkOption.NOFOLLOW_LINKS, StandardCopyOption.COPY_ATTRIBUTES,
                            StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }
}
