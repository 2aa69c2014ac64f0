package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxDamagedException;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Isolation driver {@code microvm}: one QEMU {@code -machine microvm} process per workspace, with its own guest
 * kernel, no network device, RAM in a file so that park and snapshots keep memory, and the guest agent on a
 * virtio-serial port. See DESIGN.md in this package.
 *
 * <p>Workspace state directory: {@code vm.json} (how to start QEMU again), {@code data.qcow2} (the workspace's own
 * disk: /workspace, and in the developer image the root overlay), {@code ram} (guest RAM, share=on), {@code state}
 * (device state while parked). Snapshot directory: {@code snapshot.json}, {@code state}, {@code ram},
 * {@code data.qcow2}, never modified after it was written; forks map its RAM copy-on-write and put a qcow2 overlay
 * on its disk.
 *
 * <p>Implementation notes: this class answers the SPI and picks the start mode; each mode is a class of its own
 * ({@link ColdBoot}, {@link WarmStart}, {@link Restore}, {@link Fork}), all ending in {@link GuestLink}. The
 * work a call lets finish after it returned (parked QEMUs' exits, hole punching, RAM write-back) belongs to this
 * driver's {@link BackgroundTasks}: one driver per Berth home. Tunables come from {@link MicrovmSettings}, read
 * once when the driver is made. Thread-safe.
 */
public final class MicrovmDriver implements IsolationDriver {

    /** Which guest image to run. */
    public enum ImageKind { TEST, DEVELOPER, AUTO }

    static final String BASE_COMPLETE = WarmBases.COMPLETE;

    private final ImageBuilder images;
    private final ImageKind kind;
    private final VmHome home;
    private final String qemu;
    private final ColdBoot coldBoot;
    private final WarmStart warmStart;
    private final Restore restore;
    private final Fork fork;
    private volatile Accel accel;
    private volatile GuestImage image;

    /**
     * A driver with the settings of the {@code berth.microvm.*} system properties ({@link MicrovmSettings#fromSystem}).
     *
     * @throws IllegalArgumentException when a property is out of range (the message names it and the range)
     */
    public MicrovmDriver(ImageBuilder images, ImageKind kind) { this(images, kind, MicrovmSettings.fromSystem()); }

    /** A driver with the given settings; nothing is read from system properties. */
    public MicrovmDriver(ImageBuilder images, ImageKind kind, MicrovmSettings settings) {
        this.images = images;
        this.kind = kind;
        this.home = VmHome.of(settings);
        this.qemu = settings.qemu();
        StartContext ctx = new StartContext(home, this::accel, this::imageFor, new GuestLink(home));
        this.coldBoot = new ColdBoot(ctx);
        this.fork = new Fork(ctx);
        this.restore = new Restore(ctx);
        this.warmStart = new WarmStart(ctx, new WarmBases(images.cacheDir(), settings.unsafeUnconfinedRuns()), coldBoot, fork,
                this::cleanupRuntime);
    }

    /** The settings this driver was made with. */
    public MicrovmSettings settings() { return home.settings(); }

    /** The developer image when it was built (berth setup), otherwise the test image. */
    public MicrovmDriver() { this(ImageBuilder.defaults(), ImageKind.AUTO); }

    @Override
    public String name() { return "microvm"; }

    @Override
    public Availability probe() {
        Optional<Path> bin = which(qemu);
        if (bin.isEmpty()) return Availability.no("QEMU not found (" + qemu + "): install the Debian package qemu-system-x86");
        String unusable = qemuCheck(bin.get());
        if (unusable != null) return Availability.no("QEMU at " + bin.get() + " is unusable: " + unusable);
        GuestImage img;
        try {
            img = image();
        } catch (IOException e) {
            return Availability.no("no guest image: " + e.getMessage()
                    + " (needs the kernel package from the Debian registry, busybox-static and the built agent)");
        }
        Accel a = accel();
        return Availability.yes("QEMU microvm with " + a.name() + " (" + a.why() + "), image " + img.id()
                + (home.settings().jailed() ? "; QEMU jailed (own uid, mount namespace, cgroup v1 cpu/memory/pids)" : "; QEMU not jailed (Berth is not root)")
                + (a.kvm() ? "" : "; the KVM path is checked at the command-line level only, never run here"));
    }

    /** The binary a {@link #qemuCheck} found usable (path, size, mtime, inode). */
    private record QemuCheck(Path bin, Object identity) {}

    private volatile QemuCheck qemuChecked;

    /**
     * Null when the QEMU at {@code bin} has the microvm machine type, else why not. Asking QEMU spawns it (38-40 ms
     * here, on every {@code open_workspace}, since every open probes its driver), so a yes is kept for as long as the
     * file is the same one: a QEMU upgraded or replaced in place is asked again. A no is not kept (it may have been
     * a time-out on a loaded host).
     */
    private String qemuCheck(Path bin) {
        Object identity;
        try {
            var a = java.nio.file.Files.readAttributes(bin, java.nio.file.attribute.BasicFileAttributes.class);
            identity = List.of(a.size(), a.lastModifiedTime(), String.valueOf(a.fileKey()));
        } catch (IOException e) {
            return "cannot read it: " + e.getMessage();
        }
        QemuCheck c = qemuChecked;
        if (c != null && c.bin().equals(bin) && c.identity().equals(identity)) return null;
        try {
            ImageBuilder.run(List.of(bin.toString(), "-machine", "help"), 20).lines()
                    .filter(l -> l.startsWith("microvm")).findFirst()
                    .orElseThrow(() -> new IOException("this QEMU has no microvm machine type"));
        } catch (IOException e) {
            return e.getMessage();
        }
        qemuChecked = new QemuCheck(bin, identity);
        return null;
    }

    @Override
    public DriverCapabilities capabilities() {
        return new DriverCapabilities("microvm",
                "QEMU microvm with its own guest kernel, no network device; the guest reaches the host only through the agent's virtio-serial port"
                        + (home.settings().jailed() ? "; QEMU jailed: its own uid, mount namespace and cgroup, no capabilities, seccomp"
                        : "; QEMU NOT jailed (runs as the server's user)")
                        + (home.settings().unsafeUnconfinedRuns() ? "; commands NOT confined in the guest (unsafeUnconfinedRuns)"
                        : "; commands confined below the guest agent (own pid and mount namespace, no capabilities, seccomp, a pids/memory cgroup)"),
                true, true, true, accel().name());
    }

    @Override
    public List<dev.berth.engine.spi.Limit> limits(dev.berth.engine.spi.Resources r) {
        String how = home.settings().jailed() ? "its QEMU is jailed in cgroup v1 cpu/memory/pids groups" : "its QEMU is not jailed (Berth is not root)";
        List<dev.berth.engine.spi.Limit> out = new java.util.ArrayList<>(List.of(
                dev.berth.engine.spi.Limit.enforced("cpu", r.vcpus(), "vcpus", "the guest's vCPUs; " + how),
                dev.berth.engine.spi.Limit.enforced("memory", r.memoryMiB(), "MiB", "guest RAM; " + how),
                dev.berth.engine.spi.Limit.enforced("pids", r.maxPids(), "processes", "runs' cgroup v2 pids.max inside the guest (the agent outside it); " + how),
                dev.berth.engine.spi.Limit.enforced("disk", r.diskMiB(), "MiB", "the guest's data disk (qcow2) has this size")));
        out.addAll(dev.berth.engine.spi.Limit.io(r.io(), n -> dev.berth.engine.spi.Limit.enforced(n, r.io().value(n),
                dev.berth.engine.spi.IoLimits.unit(n), "QEMU block throttling on the guest's disks (whatever the host's cgroups allow); a jailed QEMU is also"
                        + " in a cgroup v1 blkio group with the same limits on the host disk under the workspace")));
        return List.copyOf(out);
    }

    /** The accelerator, detected once per driver on the guest image's kernel ({@link Accel#detect}). */
    Accel accel() {
        Accel a = accel;
        if (a == null) {
            synchronized (this) {
                if (accel == null) {
                    try {
                        accel = Accel.detect(home.settings(), image().kernel());
                    } catch (IOException e) {
                        // no kernel to probe with: nothing can start either; not kept, the next call tries again
                        return new Accel(false, Accel.hostTscKhz(), "no guest kernel to probe KVM with (" + e.getMessage() + "): TCG");
                    }
                }
                a = accel;
            }
        }
        return a;
    }

    /** The guest image's content-derived id (kernel, initramfs inputs, agent, base disk recipe). */
    @Override
    public String imageId() {
        try {
            return image().id();
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * The image this driver runs, resolved once per driver (resolving asks apt for the kernel version and hashes
     * every input: about a second, too much for every start). A new driver instance sees a rebuilt image.
     */
    GuestImage image() throws IOException {
        GuestImage img = image;
        if (img == null) {
            synchronized (this) {
                if (image == null) image = resolveImage();
                img = image;
            }
        }
        return img;
    }

    /**
     * The image hook: a workspace on an imported image boots the built-in kernel and initramfs (which bring the
     * agent) with the image's ext4 base as the read-only lower layer of its root overlay, in place of the developer
     * image's; the image's files are never changed (the agent is copied into the overlay's upper layer at boot).
     * Resume and fork read the base from the saved machine spec, so a workspace keeps its image.
     */
    GuestImage imageFor(StartRequest req) throws IOException {
        GuestImage builtIn = image();
        if (req.image() == null) return builtIn;
        String hex = req.image().digest().substring("sha256:".length(), "sha256:".length() + 16);
        // "oci<digest>-<built-in id>": its warm bases are superseded (WarmBases.collect) only by the same image on
        // another kernel and initramfs, never by another image's
        return new GuestImage("oci" + hex + "-" + builtIn.id().substring(builtIn.id().lastIndexOf('+') + 1),
                builtIn.kernel(), builtIn.initramfs(), req.image().baseDisk());
    }

    private GuestImage resolveImage() throws IOException {
        return switch (kind) {
            case TEST -> images.testImage();
            case DEVELOPER -> {
                GuestImage d = images.developerImage();
                if (d == null) throw new IOException("developer image not built: run `berth setup` (ImageBuilder developer)");
                yield d;
            }
            case AUTO -> {
                GuestImage d = images.developerImage();
                yield d != null ? d : images.testImage();
            }
        };
    }

    @Override
    public Sandbox start(StartRequest request) throws SandboxException {
        ParkManifest.warmUp(home.tasks()); // the first park or resume of this server would pay for the digest's JIT otherwise
        try {
            Files.createDirectories(request.stateDir());
            Files.createDirectories(request.runtimeDir());
            return switch (request.mode()) {
                case StartRequest.Fresh f -> warmStart.start(request);
                case StartRequest.Resume r -> restore.start(request);
                case StartRequest.Fork f -> fork.start(request, f.snapshotStateDir(), false);
                case StartRequest.Inspect i -> coldBoot.inspect(request);
            };
        } catch (SandboxDamagedException e) {
            cleanupRuntime(request.runtimeDir());
            throw e;
        } catch (IOException | RuntimeException e) {
            cleanupRuntime(request.runtimeDir());
            throw new SandboxException("microvm " + request.workspaceId() + ": start failed: " + e.getMessage(), e);
        }
    }

    /** Waits until a parked workspace's QEMU has exited (park does not wait for it). */
    void awaitExit(Path stateDir) { home.tasks().awaitExit(stateDir); }

    /** Waits until no hole punching runs on {@code ram}. */
    void awaitHoles(Path ram) { home.tasks().awaitHoles(ram); }

    /**
     * Waits until every parked machine told to quit has exited (each is killed after 10 s at most) and its hole
     * punching has ended ({@link BackgroundTasks#quiesce}).
     */
    @Override
    public void quiesce() { home.tasks().quiesce(); }

    /** A parked machine's exit and its park's digests are awaited, and its hole punching ended, before the directory goes. */
    @Override
    public void release(Path stateDir) {
        home.tasks().awaitExit(stateDir);
        try {
            VmSpec spec = VmSpec.read(stateDir.resolve(VmSpec.WORKSPACE_FILE));
            if (spec.memShared()) home.tasks().stopHoles(stateDir.resolve(spec.memPath()));
        } catch (IOException e) {
            // no spec (never started, or already gone): nothing of ours runs on it
        }
    }

    /** Forks hard-link the snapshot's layers into their own directory ({@link DiskLayers}). */
    @Override
    public boolean forksNeedSnapshot() { return false; }

    @Override
    public boolean hasSavedMemory(Path stateDir) {
        try {
            VmSpec spec = VmSpec.read(stateDir.resolve(VmSpec.WORKSPACE_FILE));
            return spec.stateFile() != null && Files.isRegularFile(stateDir.resolve(spec.stateFile()));
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void cleanupRuntime(Path runtimeDir) {
        QemuMachine.processOf(runtimeDir).ifPresent(ph -> {
            ph.destroyForcibly();
            QemuMachine.waitFor(ph, 10_000);
        });
        VmmJail.remove(VmmJail.key(runtimeDir));
        for (String f : List.of(QemuMachine.QMP_SOCK, QemuMachine.AGENT_SOCK, QemuMachine.PID_FILE,
                QemuMachine.CONSOLE_FILE, VmmJail.ROOT_DIR)) {
            try { Files.deleteIfExists(runtimeDir.resolve(f)); } catch (IOException ignored) { }
        }
    }

    /**
     * Takes over the QEMU a dead server left running for this workspace, so nothing the guest held is lost:
     * <ul>
     * <li>running (or paused mid-snapshot, with no saved state): re-attached, continued if paused, and returned;</li>
     * <li>paused after park had written its state (vm.json names it), or paused before a resume had continued:
     *     the saved state is the truth, so QEMU is told to quit and the workspace stays parked (empty);</li>
     * <li>no QEMU, or one whose QMP or agent does not answer: empty (it is killed; the next start cold-boots the
     *     disk, or restores the saved state if there is one).</li>
     * </ul>
     */
    @Override
    public Optional<Sandbox> adopt(StartRequest req) throws SandboxException {
        Path specFile = req.stateDir().resolve(VmSpec.WORKSPACE_FILE);
        QemuMachine m = null;
        try {
            if (!Files.isRegularFile(specFile)) return Optional.empty();
            Optional<QemuMachine> found = QemuMachine.adopt(req.runtimeDir(), home.settings().jailed());
            if (found.isEmpty()) return Optional.empty();
            m = found.get();
            VmSpec spec = VmSpec.read(specFile);
            String status = m.runState();
            boolean saved = spec.stateFile() != null && Files.isRegularFile(req.stateDir().resolve(spec.stateFile()));
            if (saved) {
                m.quit(); // park had finished writing, or a resume had not continued yet: the saved state wins
                cleanupRuntime(req.runtimeDir());
                return Optional.empty();
            }
            // stopped for a snapshot when the server died: finish or undo the disk switch, then continue
            DiskLayers.recover(req.stateDir(), m);
            if (!status.equals("running")) m.cont();
            AgentClient agent = GuestLink.connectAgent(m, home.settings().agentTimeout());
            return Optional.of(new MicrovmSandbox(home, req.workspaceId(), req.stateDir(), req.runtimeDir(), spec, m, agent,
                    GuestRunLimits.readBack(agent, null), DiskThrottle.apply(m, req.stateDir(), req.resources().io())));
        } catch (IOException | RuntimeException e) {
            if (m != null) m.kill();
            cleanupRuntime(req.runtimeDir());
            throw new SandboxException("microvm " + req.workspaceId() + ": could not adopt the running machine: " + e.getMessage(), e);
        }
    }

    @Override
    public void snapshotParked(Path workspaceStateDir, Path snapshotStateDir) throws SandboxException {
        SnapshotWriter.ofParked(home, workspaceStateDir, snapshotStateDir);
    }

    static Optional<Path> which(String cmd) {
        if (cmd.contains("/")) return Files.isExecutable(Path.of(cmd)) ? Optional.of(Path.of(cmd)) : Optional.empty();
        String path = System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
        for (String d : path.split(File.pathSeparator)) {
            Path p = Path.of(d, cmd);
            if (Files.isExecutable(p)) return Optional.of(p);
        }
        return Optional.empty();
    }
}
