package dev.berth.engine.gvisor;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.host.CgroupLimits;
import dev.berth.engine.host.DiskImage;
import dev.berth.engine.host.Layout;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One running gVisor sandbox: {@code runsc run} in the foreground as a child of the server, the guest agent as the
 * container's only process, connected to a unix socket the host listens on. Lifecycle calls are serialised by the
 * engine; {@link #agent()} is thread-safe.
 */
final class GvisorSandbox implements Sandbox {
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(20);
    private static final Path CGROUP = Path.of("/sys/fs/cgroup");

    private final Runsc runsc;
    private final Process process;
    private final AgentClient agent;
    private final Layout layout;
    private final String id;
    private final Resources resources;
    private final String cgroup;

    private GvisorSandbox(Runsc runsc, Process process, AgentClient agent, Layout layout, String id, Resources resources,
                          String cgroup) {
        this.cgroup = cgroup;
        this.runsc = runsc;
        this.process = process;
        this.agent = agent;
        this.layout = layout;
        this.id = id;
        this.resources = resources;
    }

    static Path runscRoot(Path runtimeDir) { return runtimeDir.resolve("runsc"); }

    static GvisorSandbox launch(Runsc runsc, Path bundle, Layout layout, StartRequest req, String cgroup)
            throws SandboxException, IOException {
        Path root = runscRoot(req.runtimeDir());
        Files.createDirectories(root);
        Files.deleteIfExists(layout.socket());
        Process p = null;
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(layout.socket()));
            Path log = req.runtimeDir().resolve("sandbox.log");
            ProcessBuilder pb = new ProcessBuilder(runsc.command(root, "run", "--bundle", bundle.toString(), req.workspaceId()))
                    .redirectErrorStream(true).redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            pb.environment().clear(); // nothing of the server's environment reaches the sandbox
            pb.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
            pb.directory(new java.io.File("/"));
            p = pb.start();
            SocketChannel ch = dev.berth.engine.host.AgentListener.accept(server, p, "runsc", log, READY_TIMEOUT);
            AgentClient agent = AgentClient.handshake(ch, Duration.ofSeconds(10));
            return new GvisorSandbox(runsc, p, agent, layout, req.workspaceId(), req.resources(), cgroup);
        } catch (SandboxException | IOException | RuntimeException e) {
            if (p != null) forceDelete(runsc, root, req.workspaceId(), p);
            throw e;
        } finally {
            Files.deleteIfExists(layout.socket());
        }
    }

    @Override
    public AgentClient agent() { return agent; }

    @Override
    public long hostPid() { return process.pid(); }

    /** Files only: the packaged runsc cannot checkpoint a sandbox whose agent is connected (see DESIGN.md). */
    @Override
    public ParkOutcome park() {
        long t0 = System.nanoTime();
        destroy();
        return new ParkOutcome(false, Trees.bytes(layout.state()), (System.nanoTime() - t0) / 1_000_000);
    }

    @Override
    public ParkOutcome snapshot(Path snapshotStateDir) throws SandboxException {
        long t0 = System.nanoTime();
        try {
            agent.sync();
        } catch (IOException e) {
            throw new SandboxException("the agent did not sync the workspace before the snapshot: " + e.getMessage(), e);
        }
        Path root = runscRoot(layout.runtime());
        boolean paused = runscQuiet(runsc, root, "pause", id);
        boolean fsFrozen = layout.usesImage() && DiskImage.freeze(layout.mountPoint());
        try {
            if (layout.usesImage() && !fsFrozen) {
                throw new SandboxException("could not freeze the workspace's filesystem for a consistent snapshot (fsfreeze failed)");
            }
            dev.berth.engine.host.Layout.copyTree(layout.state(), snapshotStateDir);
        } catch (IOException e) {
            throw new SandboxException("copying the workspace files failed: " + e.getMessage(), e);
        } finally {
            if (fsFrozen) DiskImage.thaw(layout.mountPoint());
            if (paused) runscQuiet(runsc, root, "resume", id);
        }
        return new ParkOutcome(false, Trees.bytes(snapshotStateDir), (System.nanoTime() - t0) / 1_000_000);
    }

    @Override
    public List<Limit> limits() {
        List<Limit> out = new ArrayList<>();
        String g = "berth-gvisor/" + cgroup;
        String cpu = read(CGROUP.resolve("cpu").resolve(g).resolve("cpu.cfs_quota_us"));
        String mem = read(CGROUP.resolve("memory").resolve(g).resolve("memory.limit_in_bytes"));
        String pids = read(CGROUP.resolve("pids").resolve(g).resolve("pids.max"));
        String why = "runsc did not set up this cgroup (no cgroup v1 controller for it here)";
        out.add(cpu.equals(String.valueOf(resources.vcpus() * 100_000L))
                ? Limit.enforced("cpu", resources.vcpus(), "vcpus", "cgroup v1 cpu quota on the whole sandbox (set by runsc)")
                : Limit.notEnforced("cpu", resources.vcpus(), "vcpus", why));
        out.add(mem.equals(String.valueOf((long) (resources.memoryMiB() + OciBundle.OVERHEAD_MIB) << 20))
                ? Limit.enforced("memory", resources.memoryMiB(), "MiB", "cgroup v1 memory limit on the whole sandbox (set by runsc): "
                        + resources.memoryMiB() + " MiB + " + OciBundle.OVERHEAD_MIB + " MiB for the Sentry and gofer")
                : Limit.notEnforced("memory", resources.memoryMiB(), "MiB", why));
        out.add(pids.equals(String.valueOf(resources.maxPids() + OciBundle.OVERHEAD_TASKS))
                ? Limit.notEnforced("pids", resources.maxPids(), "processes", GvisorDriver.PIDS_NOT_EXACT + " (set by runsc): "
                        + resources.maxPids() + " + " + OciBundle.OVERHEAD_TASKS)
                : Limit.notEnforced("pids", resources.maxPids(), "processes", why));
        out.add(layout.usesImage()
                ? Limit.enforced("disk", layout.diskMiB(), "MiB", "a size-limited ext4 image (loop mount) served by the gofer; writes beyond it get ENOSPC")
                : Limit.notEnforced("disk", layout.diskMiB(), "MiB", "Berth is not root: no loop mount"));
        out.addAll(layout.usesImage()
                ? GvisorDriver.gvisorIo(dev.berth.engine.host.BlockIoLimits.report(CGROUP.resolve("blkio").resolve(g), true,
                        dev.berth.engine.host.BlockIoLimits.deviceOf(layout.mountPoint()), resources.io()))
                : Limit.ioNotEnforced(resources.io(), "Berth is not root: no loop mount, no block device of the workspace's own to throttle"));
        return out;
    }

    private static String read(Path p) {
        try {
            return Files.readString(p).strip();
        } catch (IOException e) {
            return "";
        }
    }

    @Override
    public void destroy() {
        agent.close();
        forceDelete(runsc, runscRoot(layout.runtime()), id, process);
        layout.release();
        removeCgroups(id);
    }

    /**
     * Removes the cgroups runsc made for this workspace's sandboxes ({@code berth-gvisor/<id>-*} under every
     * controller), killing whatever is still in them: runsc leaves them behind when its sandbox dies abruptly.
     */
    static void removeCgroups(String workspaceId) {
        try (var controllers = Files.list(CGROUP)) {
            for (Path c : controllers.toList()) {
                Path parent = c.resolve("berth-gvisor");
                if (!Files.isDirectory(parent)) continue;
                try (var groups = Files.list(parent)) {
                    for (Path g : groups.filter(x -> x.getFileName().toString().startsWith(workspaceId + "-")).toList()) {
                        for (String pid : Files.readAllLines(g.resolve("cgroup.procs"))) {
                            if (!pid.isBlank()) ProcessHandle.of(Long.parseLong(pid.strip())).ifPresent(ProcessHandle::destroyForcibly);
                        }
                        try {
                            Files.deleteIfExists(g);
                        } catch (IOException busy) {
                            // its last tasks are still exiting; removed by the next start or clean-up
                        }
                    }
                }
            }
        } catch (IOException | NumberFormatException | java.io.UncheckedIOException e) {
            // nothing to remove
        }
    }

    @Override
    public boolean isAlive() { return process.isAlive(); }

    /** Kills the sandbox and removes runsc's record of it (and with it the cgroups runsc made). */
    static void forceDelete(Runsc runsc, Path root, String id, Process p) {
        runscQuiet(runsc, root, "kill", id, "KILL");
        runscQuiet(runsc, root, "delete", "-force", id);
        if (p != null) {
            p.destroyForcibly();
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static boolean runscQuiet(Runsc runsc, Path root, String... args) {
        try {
            Process p = new ProcessBuilder(runsc.command(root, args)).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
