package dev.berth.engine.namespace;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.host.CgroupLimits;
import dev.berth.engine.host.DiskImage;
import dev.berth.engine.host.GuestNames;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.host.Layout;
import dev.berth.engine.spi.Limit;
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
 * One running bubblewrap sandbox with the guest agent as its only process at start. The host listens on a unix
 * socket in the runtime directory; the agent inside connects to it through a bind mount. Lifecycle calls are
 * serialised by the engine; {@link #agent()} is thread-safe.
 */
final class NamespaceSandbox implements Sandbox {
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(15);
    /** The size of a workspace's /run (a tmpfs, charged to its memory), at most its memory. */
    static final int RUN_MIB = 64;

    private final Process process;
    private final AgentClient agent;
    private final Layout layout;
    private final CgroupLimits limits;
    /** The layer pool holding this sandbox's layer, or null (an ext4 image or plain directories). */
    private final dev.berth.engine.host.BtrfsPool pool;

    private NamespaceSandbox(Process process, AgentClient agent, Layout layout, CgroupLimits limits) throws IOException {
        this.process = process;
        this.agent = agent;
        this.layout = layout;
        this.limits = limits;
        this.pool = layout.usesPool() ? dev.berth.engine.host.BtrfsPool.at(dev.berth.engine.host.BtrfsPool.readRef(layout.layerRef()).pool()) : null;
    }

    @Override
    public List<Limit> limits() {
        List<Limit> out = new ArrayList<>(limits.limits());
        out.add(layout.usesPool() ? Limit.enforced("disk", layout.diskMiB(), "MiB", NamespaceDriver.POOL_DISK)
                : layout.usesImage()
                ? Limit.enforced("disk", layout.diskMiB(), "MiB", "a size-limited ext4 image (loop mount); writes beyond it get ENOSPC")
                : Limit.notEnforced("disk", layout.diskMiB(), "MiB", HostIdentity.isRoot()
                        ? "this workspace was created before disk images: its layer is a plain directory"
                        : "Berth is not root: no loop mount, the layer is a plain directory"));
        out.addAll(limits.io());
        return out;
    }

    static NamespaceSandbox launch(Path bwrap, Path agentBin, Path etc, Layout layout, StartRequest req, NamespaceSettings settings,
                                   Path imageRoot) throws SandboxException, IOException {
        Files.deleteIfExists(layout.socket());
        CgroupLimits limits = HostIdentity.isRoot() ? CgroupLimits.create(req.workspaceId(), req.resources(),
                layout.usesImage() ? dev.berth.engine.host.BlockIoLimits.deviceOf(layout.mountPoint()) : null)
                : CgroupLimits.none(req.resources(), "Berth is not root: it cannot create cgroups");
        Process p = null;
        UserNamespace userns = null;
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(layout.socket()));
            layout.chownForSandbox(layout.socket());
            if (layout.ids() > 1) userns = UserNamespace.create(layout.uid(), layout.ids());
            List<String> cmd = command(bwrap, agentBin, etc, layout, req, limits, settings, userns == null ? -1 : userns.pid(), imageRoot);
            Path log = layout.runtime().resolve("sandbox.log");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            // bwrap stays in the sandbox's pid namespace as its pid 1, and /proc/1/environ is readable from inside:
            // it must not carry the server's environment (the operator's tokens, the secret bindings' fromEnv values).
            // --clearenv only cleans what the agent gets.
            pb.environment().clear();
            pb.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
            pb.directory(new java.io.File("/")); // nor the server's working directory
            pb.environment().put("PWD", "/");
            p = pb.start();
            SocketChannel ch = dev.berth.engine.host.AgentListener.accept(server, p, "bubblewrap", log, READY_TIMEOUT);
            AgentClient agent = AgentClient.handshake(ch, Duration.ofSeconds(10));
            return new NamespaceSandbox(p, agent, layout, limits);
        } catch (SandboxException | IOException | RuntimeException e) {
            if (p != null) kill(p);
            CgroupLimits.removeFor(req.workspaceId());
            throw e;
        } finally {
            if (userns != null) userns.close(); // the sandbox is in the namespace (or gone): the holder is not needed
            Files.deleteIfExists(layout.socket());
        }
    }

    /**
     * The sandbox command line. Order matters for bwrap: later mounts go on top of earlier ones, so the writable
     * layer comes after the read-only base it covers.
     */
    static List<String> command(Path bwrap, Path agentBin, Path etc, Layout layout, StartRequest req, CgroupLimits limits,
                                NamespaceSettings settings, long userNsHolder, Path imageRoot) {
        List<String> c = new ArrayList<>();
        if (!limits.groups().isEmpty() || userNsHolder > 0) {
            // join the cgroups before bwrap forks, so every process of the sandbox is inside them; open the
            // workspace's user namespace (UserNamespace) as descriptor 3 for bwrap --userns
            StringBuilder sh = new StringBuilder();
            for (Path g : limits.groups()) sh.append("echo $$ > '").append(g.resolve("cgroup.procs")).append("' && ");
            if (userNsHolder > 0) sh.append("exec 3</proc/").append(userNsHolder).append("/ns/user && ");
            sh.append("exec \"$@\"");
            c.addAll(List.of("/bin/sh", "-c", sh.toString(), "berth-launch"));
        }
        if (layout.uid() >= 0) {
            c.addAll(List.of("setpriv", "--reuid=" + layout.uid(), "--regid=" + layout.uid(), "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"));
        }
        c.add(bwrap.toString());
        // one uid inside (the workspace's own): root, or the image's User, as which the agent and its runs are seen
        var runAs = req.image() == null ? null : req.image().runAs();
        // the workspace's ids: its whole range, mapped by the server (UserNamespace), or only its own id (Berth not root)
        // With the range, the agent stays root and switches each run to the image's User itself (--run-as, as on
        // the other levels: bwrap cannot take another uid in a namespace it joined); with one id, bwrap maps the
        // image's User onto it and the agent is that user too.
        boolean agentSwitches = userNsHolder > 0 && runAs != null;
        c.addAll(userNsHolder > 0 ? List.of("--userns", "3") : List.of("--unshare-user"));
        c.addAll(List.of("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--uid", runAs == null || agentSwitches ? "0" : Integer.toUnsignedString(runAs.uid()),
                "--gid", runAs == null || agentSwitches ? "0" : Integer.toUnsignedString(runAs.gid()), "--hostname", GuestNames.HOSTNAME,
                "--die-with-parent", "--new-session", "--cap-drop", "ALL"));
        // The agent (only it: it confines every run below itself, --isolate-runs) keeps, valid only inside the
        // sandbox's own user namespace, SYS_ADMIN to give each run its own pid and mount namespace with a fresh /proc,
        // and root's ordinary capabilities, which it hands on to runs (RUN_CAPS in confine.c) after cutting their
        // bounding set to them.
        // benchmarks only (-Dberth.namespace.unsafeUnconfinedRuns=true): the agent runs commands itself, with no
        // capabilities at all, to measure what confinement costs (IsolationBenchmark)
        if (!settings.unsafeUnconfinedRuns()) {
            c.addAll(List.of("--cap-add", "CAP_SYS_ADMIN"));
            for (String cap : dev.berth.engine.host.AgentBinary.RUN_CAPS) c.addAll(List.of("--cap-add", cap));
        }
        Path s = layout.layer();
        boolean image = layout.usesImage();
        if (req.image() != null) {
            // read-only base: the imported image's whole root tree, its own /etc included
            // (a recipe build's scratch root is entered writable, so that what its steps install lands in it)
            // (read-only: bound from its idmapped mount when Berth is root, so its files keep their owners inside)
            // (made writable for this workspace when Berth is root: the overlay of RootOverlay, its changes in the layer)
            boolean overlay = imageRoot != null && imageRoot.equals(dev.berth.engine.host.RootOverlay.merged(layout.runtime()));
            c.addAll(List.of(req.image().writable() || overlay ? "--bind" : "--ro-bind",
                    (imageRoot != null ? imageRoot : req.image().rootTree()).toString(), "/"));
        } else {
            // read-only base: the host's /usr and a curated /etc
            c.addAll(List.of("--ro-bind", "/usr", "/usr"));
            for (String l : List.of("bin", "lib", "lib64", "sbin")) {
                if (Files.isSymbolicLink(Path.of("/" + l))) {
                    c.addAll(List.of("--symlink", "usr/" + l, "/" + l));
                } else if (Files.isDirectory(Path.of("/" + l))) {
                    c.addAll(List.of("--ro-bind", "/" + l, "/" + l));
                }
            }
        }
        boolean writableRoot = req.image() == null || !req.image().writable();
        if (writableRoot) {
            // the workspace's own writable /etc and /home (WritableRoot), in its layer: seeded from the built-in /etc
            // or the image's, with the names every workspace sees (GuestNames) and its own hosts file in it
            c.addAll(List.of("--bind", s.resolve(dev.berth.engine.host.WritableRoot.ETC).toString(), "/etc"));
            if (dev.berth.engine.host.WritableRoot.canMountHome(req.image())) {
                c.addAll(List.of("--bind", s.resolve(dev.berth.engine.host.WritableRoot.HOMES).toString(), "/home"));
            }
        } else {
            // a recipe build's scratch root: its own /etc, with the names every workspace sees put over it
            try {
                for (GuestNames.Cover v : GuestNames.covers(req.image().rootTree(), image ? s.resolve(".berth/etc") : etc,
                        s.resolve(GuestNames.LAYER_HOSTS))) {
                    c.addAll(List.of(v.writable() ? "--bind" : "--ro-bind", v.source().toString(), v.target()));
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        c.addAll(List.of("--proc", "/proc", "--dev", "/dev"));
        c.addAll(List.of("--size", String.valueOf((long) Math.min(req.resources().memoryMiB(), 1024) << 20), "--tmpfs", "/tmp"));
        // per-workspace writable layer
        c.addAll(List.of("--bind", s.resolve("workspace").toString(), "/workspace"));
        if (req.image() == null || !req.image().writable()) {
            c.addAll(List.of("--bind", s.resolve("home").toString(), "/root"));
            c.addAll(List.of("--bind", s.resolve("usr-local").toString(), "/usr/local"));
            c.addAll(List.of("--bind", s.resolve("var").toString(), "/var"));
        }
        // the agent and its socket
        // /run is writable, as a normal machine's (lock files: adduser's /run/adduser, a daemon's pid file), and
        // small; the agent's binary and socket directory are mounts in it, which a workload can neither replace nor
        // remove (a run does not see the socket directory at all)
        c.addAll(List.of("--size", String.valueOf((long) Math.min(req.resources().memoryMiB(), RUN_MIB) << 20), "--tmpfs", "/run", "--ro-bind", image ? s.resolve(".berth/berth-agent").toString() : agentBin.toString(), "/run/berth-agent",
                "--bind", layout.socketDir().toString(), "/run/berth"));
        c.addAll(List.of("--chdir", "/workspace", "--clearenv",
                "--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
        // no nested user namespaces (with --userns the holder already set the namespace's limit to 0)
        if (userNsHolder <= 0) c.add("--disable-userns");
        c.add("--");
        c.addAll(List.of("/run/berth-agent", "--connect", "unix:/run/berth/agent.sock"));
        if (!settings.unsafeUnconfinedRuns()) c.add("--isolate-runs");
        if (req.proxyPort() > 0) c.addAll(List.of("--proxy-port", String.valueOf(req.proxyPort())));
        if (agentSwitches) c.addAll(List.of("--run-as", Integer.toUnsignedString(runAs.uid()) + ":" + Integer.toUnsignedString(runAs.gid())));
        return c;
    }

    @Override
    public AgentClient agent() { return agent; }

    @Override
    public long hostPid() { return process.pid(); }

    @Override
    public ParkOutcome park() {
        long t0 = System.nanoTime();
        destroy();
        return new ParkOutcome(false, Trees.bytes(layout.state()), (System.nanoTime() - t0) / 1_000_000);
    }

    @Override
    public ParkOutcome snapshot(Path snapshotStateDir) throws SandboxException {
        long t0 = System.nanoTime();
        if (layout.usesPool()) return snapshotPool(snapshotStateDir, t0);
        try {
            agent.sync();
        } catch (IOException e) {
            throw new SandboxException("the agent did not sync the workspace before the snapshot: " + e.getMessage(), e);
        }
        // freeze every process so the copy is consistent (no half-written files), and the image's filesystem so
        // that its file is (flushed, journal committed); thaw whatever happens
        boolean frozen = limits.freeze(true);
        boolean fsFrozen = layout.usesImage() && DiskImage.freeze(layout.mountPoint());
        try {
            if (layout.usesImage() && !fsFrozen) {
                throw new SandboxException("could not freeze the workspace's filesystem for a consistent snapshot (fsfreeze failed)");
            }
            Layout.copyTree(layout.state(), snapshotStateDir);
        } catch (IOException e) {
            throw new SandboxException("copying the workspace files failed: " + e.getMessage(), e);
        } finally {
            if (fsFrozen) DiskImage.thaw(layout.mountPoint());
            if (frozen) limits.freeze(false);
        }
        return new ParkOutcome(false, Trees.bytes(snapshotStateDir), (System.nanoTime() - t0) / 1_000_000);
    }

    /**
     * A pool layer's snapshot: the processes frozen (where the freezer is available), then a read-only subvolume
     * snapshot, which flushes the subvolume's dirty data itself and shares every extent (constant time; no
     * {@code fsfreeze}, which would freeze the whole pool, every workspace's layer).
     */
    private ParkOutcome snapshotPool(Path snapshotStateDir, long t0) throws SandboxException {
        boolean frozen = limits.freeze(true);
        long bytes;
        try {
            bytes = Layout.snapshotPool(layout.state(), snapshotStateDir);
        } catch (IOException e) {
            throw new SandboxException("snapshotting the workspace's layer failed: " + e.getMessage(), e);
        } finally {
            if (frozen) limits.freeze(false);
        }
        return new ParkOutcome(false, bytes, (System.nanoTime() - t0) / 1_000_000);
    }

    /** A pool layer: a background commit of the pool ({@link dev.berth.engine.host.BtrfsPool#flushSoon}). */
    @Override
    public java.util.concurrent.CompletableFuture<Void> flushInBackground() {
        if (pool == null) return Sandbox.super.flushInBackground();
        return pool.flushSoon(layout.mountPoint());
    }

    /**
     * Stops every process of the sandbox, then releases its storage: the commands under the agent get SIGTERM and
     * up to {@link #TERM_GRACE} to end, then the sandbox and whatever is left of it is killed and reaped (and its
     * cgroups removed), and only then is the layer unmounted, so that no process of the workspace still holds it.
     */
    @Override
    public void destroy() {
        agent.close();
        terminateCommands(TERM_GRACE);
        List<ProcessHandle> left = process.descendants().toList();
        kill(process);
        for (ProcessHandle h : left) h.destroyForcibly();
        awaitExit(left, Duration.ofSeconds(5));
        CgroupLimits.removeFor(layout.workspaceId()); // kills and reaps what escaped the tree (a double fork)
        layout.release();
    }

    /**
     * How long commands get between SIGTERM and SIGKILL when their sandbox is destroyed: short, because the whole
     * stop must fit what MCP clients allow a stdio server (the official TypeScript SDK closes stdin, sends SIGTERM
     * 2 s later and SIGKILL 2 s after that), and a killed server leaves its workspaces mounted until the next start.
     */
    static final Duration TERM_GRACE = Duration.ofSeconds(1);

    /**
     * Sends SIGTERM to every process the agent started and waits until they are gone or {@code grace} is over. The
     * agent and the sandbox's init are spared: either one ending would take every command down with SIGKILL at once.
     */
    private void terminateCommands(Duration grace) {
        ProcessHandle agentProcess = process.descendants()
                .filter(h -> h.info().command().map(c -> c.endsWith("berth-agent")).orElse(false))
                .findFirst().orElse(null);
        if (agentProcess == null) return; // gone already, or not visible: killed below without a grace
        List<ProcessHandle> commands = agentProcess.descendants().toList();
        for (ProcessHandle h : commands) h.destroy();
        awaitExit(commands, grace);
    }

    /**
     * Waits until every process has ended or {@code bound} is over. A zombie counts as ended: its parent inside the
     * sandbox (or the agent, cut off from the host) may never reap it, and it holds nothing. Polls, because
     * {@link ProcessHandle#onExit} of a process that is not our child cannot tell a zombie from a live process.
     */
    private static void awaitExit(List<ProcessHandle> processes, Duration bound) {
        long deadline = System.nanoTime() + bound.toNanos();
        List<ProcessHandle> left = new java.util.ArrayList<>(processes);
        // a killed sandbox is usually gone within a millisecond or two: the first polls are short (1, 2, 4, 8 ms, then
        // every 10), so a park does not wait a whole 10 ms step for processes that have already ended
        for (long pause = 1; ; pause = Math.min(10, pause * 2)) {
            left.removeIf(h -> !h.isAlive() || zombie(h.pid()));
            if (left.isEmpty() || System.nanoTime() >= deadline) return;
            try {
                Thread.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Whether the process is a zombie (state Z in /proc/PID/stat; the state follows the command name's ')'). */
    private static boolean zombie(long pid) {
        try {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc", Long.toString(pid), "stat"));
            int i = stat.lastIndexOf(')');
            return i > 0 && i + 2 < stat.length() && stat.charAt(i + 2) == 'Z';
        } catch (java.io.IOException | RuntimeException e) {
            return true; // gone
        }
    }

    @Override
    public boolean isAlive() { return process.isAlive(); }

    private static void kill(Process p) {
        // bwrap's sandbox init dies with it (--die-with-parent), and with the pid namespace's init every process in it
        p.destroyForcibly();
        try {
            p.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
