package dev.berth.engine.gvisor;

import dev.berth.engine.host.AgentBinary;
import dev.berth.engine.host.BaseEtc;
import dev.berth.engine.host.CgroupLimits;
import dev.berth.engine.host.DiskImage;
import dev.berth.engine.host.ImageSeed;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.host.Layout;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Isolation by gVisor's user-space kernel ({@code runsc}, ptrace platform here): guest system calls are served by the
 * Sentry, which itself runs sandboxed on the host; files reach it through the gofer. The same guest agent, the same
 * filesystem view and writable layer (an ext4 image) as the namespace driver, no network device
 * ({@code --network=none}; egress goes over the agent's channel), runs confined below the agent.
 *
 * <p>Honest limits with Debian 12's runsc (release 20221219), each measured here: park keeps files only, because
 * {@code runsc checkpoint} panics on the agent's connected host unix socket; GNU coreutils' {@code ls}, {@code stat}
 * and {@code du} fail with EINVAL (that runsc rejects {@code AT_NO_AUTOMOUNT} in statx/newfstatat). Thread-safe.
 */
public final class GvisorDriver implements IsolationDriver {
    static final String NAME = "gvisor";
    /** Told to users with the capabilities and by {@code berth doctor}. */
    static final String KNOWN_DEFECTS = "with runsc 20221219 (Debian 12) park keeps files only (runsc checkpoint panics on the agent's"
            + " connected unix socket) and GNU ls/stat/du fail with EINVAL (runsc rejects AT_NO_AUTOMOUNT in statx/newfstatat);"
            + " busybox, python and the agent's file tools work";

    private final Path home;
    private final Runsc runsc;

    /**
     * A driver with the settings of the {@code berth.gvisor.*} system properties ({@link GvisorSettings#fromSystem}).
     *
     * @param home Berth home: the agent binary and the curated /etc are prepared under {@code home/images}.
     */
    public GvisorDriver(Path home) { this(home, GvisorSettings.fromSystem()); }

    /** A driver with the given settings; nothing is read from system properties. */
    public GvisorDriver(Path home, GvisorSettings settings) {
        this.home = home.toAbsolutePath();
        this.runsc = Runsc.find(settings);
    }

    @Override
    public String name() { return NAME; }

    @Override
    public Availability probe() {
        if (runsc == null) return Availability.no("runsc (gVisor) is not installed; apt-get install runsc");
        if (runsc.release() < Runsc.MIN_RELEASE) {
            return Availability.no("runsc at " + runsc.binary() + " is release " + runsc.release() + ", older than "
                    + Runsc.MIN_RELEASE + ", the oldest tried; install a newer runsc");
        }
        if (!HostIdentity.isRoot()) return Availability.no("runsc needs root here (rootless runsc is not supported by Berth)");
        return Availability.yes("runsc release " + runsc.release() + " at " + runsc.binary() + ", ptrace platform, --network=none; "
                + KNOWN_DEFECTS);
    }

    @Override
    public DriverCapabilities capabilities() {
        return new DriverCapabilities(NAME, "gVisor user-space kernel (runsc, ptrace platform): guest system calls are served by the"
                + " Sentry, not the host kernel; no network device; runs confined below the agent; " + KNOWN_DEFECTS,
                true, false, false, "ptrace");
    }

    @Override
    public String imageId() {
        try {
            return "host-usr+" + AgentBinary.extract(home.resolve("images")).getFileName() + "+runsc-" + (runsc == null ? "none" : runsc.release());
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Why gVisor reports the pids limit as not enforced: the guest's count is not what the host can cap (see
     * OciBundle.OVERHEAD_TASKS), so only the sandbox's host tasks are capped, and reaching that cap kills the Sentry.
     */
    static final String PIDS_NOT_EXACT = "not enforced exactly: the Sentry's RLIMIT_NPROC did not stop a fork bomb, and under the ptrace"
            + " platform the sandbox's host tasks are not proportional to the guest's processes; the host is protected by a cgroup v1"
            + " pids.max on the whole sandbox's host tasks (reaching it kills the sandbox, not the host)";

    /**
     * What the blkio throttle on the workspace's loop device amounts to under gVisor (measured with 8 MiB at 1 MiB/s:
     * O_DIRECT write 0.06 s, O_DIRECT read of a file just written 0.08 s, buffered write + fsync 8.1 s). The throttle
     * is set on runsc's group, which holds the gofer, the only process touching the disk; but the Sentry does not pass
     * O_DIRECT on, so both directions go through its and the host's page caches, and a run cannot be held to a rate:
     * only what reaches the disk is (the gofer's reads, and its flush when a run calls fsync).
     */
    static List<Limit> gvisorIo(List<Limit> host) {
        return host.stream().map(l -> l.value() == 0 || !l.how().contains("blkio.throttle") ? l
                : Limit.notEnforced(l.name(), l.value(), l.unit(), (dev.berth.engine.spi.IoLimits.read(l.name())
                        ? "not enforced for runs: the Sentry serves reads from its and the host's page caches and does not pass O_DIRECT"
                        + " on; reads that reach the disk (the gofer's) are held to it"
                        : "not enforced for runs: the Sentry does not pass O_DIRECT on, so writes land in the host's page cache and"
                        + " the kernel's writeback (root cgroup under v1) flushes them; a run's fsync (the gofer's flush) is held to it"
                        + " only for what is still dirty then")
                        + " by " + l.how().substring(l.how().indexOf("cgroup v1 blkio.throttle")).replaceAll(";.*", ""))).toList();
    }

    @Override
    public List<Limit> limits(Resources r) {
        List<Limit> out = new ArrayList<>();
        boolean v1 = CgroupLimits.hierarchy().equals("v1");
        String how = "cgroup v1 limit on the whole sandbox, set by runsc";
        String no = "runsc sets cgroup v1 limits only; this host has cgroup " + CgroupLimits.hierarchy();
        out.add(v1 ? Limit.enforced("cpu", r.vcpus(), "vcpus", how) : Limit.notEnforced("cpu", r.vcpus(), "vcpus", no));
        out.add(v1 ? Limit.enforced("memory", r.memoryMiB(), "MiB", how + " (+" + OciBundle.OVERHEAD_MIB + " MiB for the Sentry and gofer)")
                : Limit.notEnforced("memory", r.memoryMiB(), "MiB", no));
        out.add(Limit.notEnforced("pids", r.maxPids(), "processes", v1 ? PIDS_NOT_EXACT : no));
        out.add(Limit.enforced("disk", r.diskMiB(), "MiB", "a size-limited ext4 image per workspace (loop mount)"));
        out.addAll(v1 ? gvisorIo(dev.berth.engine.host.BlockIoLimits.predict(r.io())) : Limit.ioNotEnforced(r.io(), no));
        return out;
    }

    @Override
    public Sandbox start(StartRequest request) throws SandboxException {
        Availability a = probe();
        if (!a.available()) throw new SandboxException("gvisor isolation is not available: " + a.reason());
        try {
            Path agent = AgentBinary.extract(home.resolve("images"));
            Path etc = BaseEtc.prepare(home.resolve("images"));
            // the gofer serves the layer as root (the guest's root is the host's, inside gVisor's own sandboxing)
            Layout layout = Layout.owned(request, 0);
            try {
                switch (request.mode()) {
                    case StartRequest.Fresh f -> {
                        layout.createFresh();
                        if (request.image() != null) ImageSeed.seed(request.image(), layout);
                    }
                    case StartRequest.Resume r -> layout.prepare();
                    case StartRequest.Fork f -> layout.copyFrom(f.snapshotStateDir());
                    case StartRequest.Inspect i -> throw new SandboxException(name() + " workspaces keep no saved memory to fail"
                            + " verification, so they are never damaged and never inspected: open them as usual");
                }
                if (layout.usesImage()) layout.installBase(etc, agent);
                // the workspace's own writable /etc and /home (a recipe build's scratch root is writable already)
                if (request.image() == null || !request.image().writable()) dev.berth.engine.host.WritableRoot.seed(layout, etc, request.image());
                dev.berth.engine.host.GuestNames.prepare(request.image(), layout);
                // the image's root made writable for this workspace alone (its changes in the layer)
                if (request.image() != null && !request.image().writable() && dev.berth.engine.host.HostIdentity.isRoot()) {
                    dev.berth.engine.host.RootOverlay.mount(request.image().rootTree(), layout);
                }
                GvisorSandbox.removeCgroups(request.workspaceId()); // a previous sandbox's, if it died
                String cgroup = request.workspaceId() + "-" + Long.toHexString(System.nanoTime() & 0xffffffffL);
                Path bundle = OciBundle.write(Files.createDirectories(request.runtimeDir().resolve("bundle")), layout, etc, agent,
                        request, cgroup);
                return GvisorSandbox.launch(runsc, bundle, layout, request, cgroup);
            } catch (IOException | SandboxException | RuntimeException e) {
                layout.release();
                throw e;
            }
        } catch (IOException e) {
            throw new SandboxException("preparing the gVisor sandbox failed: " + e.getMessage(), e);
        }
    }

    @Override
    public void cleanupRuntime(Path runtimeDir) {
        Path root = GvisorSandbox.runscRoot(runtimeDir);
        if (runsc != null && Files.isDirectory(root)) {
            GvisorSandbox.forceDelete(runsc, root, runtimeDir.getFileName().toString(), null);
        }
        DiskImage.unmount(dev.berth.engine.host.RootOverlay.merged(runtimeDir)); // over the layer: first
        DiskImage.unmount(runtimeDir.resolve("disk"));
        DiskImage.unmount(runtimeDir.resolve("disk.raw")); // a crash between the two mounts of an idmapped image
        GvisorSandbox.removeCgroups(runtimeDir.getFileName().toString());
    }

    @Override
    public void snapshotParked(Path workspaceStateDir, Path snapshotStateDir) throws SandboxException {
        try {
            Layout.copyTree(workspaceStateDir, snapshotStateDir);
        } catch (IOException e) {
            throw new SandboxException("copying the workspace files failed: " + e.getMessage(), e);
        }
    }
}
