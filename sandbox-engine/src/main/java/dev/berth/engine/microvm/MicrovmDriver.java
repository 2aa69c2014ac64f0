package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxDamagedException;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import java.io.File;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

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
 */
public final class MicrovmDriver implements IsolationDriver {

    /** Which guest image to run. */
    public enum ImageKind { TEST, DEVELOPER, AUTO }

    static final Duration AGENT_TIMEOUT = Duration.ofSeconds(Long.getLong("berth.microvm.agentTimeoutSeconds", 90));
    static final int MIN_MEMORY_MIB = 96;
    /**
     * {@code -Dberth.microvm.unsafeUnconfinedRuns=true}: guests booted now run commands unconfined (in the agent's pid
     * namespace, with its capabilities; no pids limit inside). For benchmarks only (IsolationBenchmark's "before").
     */
    static boolean unsafeUnconfinedRuns() { return Boolean.getBoolean("berth.microvm.unsafeUnconfinedRuns"); }

    static final boolean WARM_BASE = Boolean.parseBoolean(System.getProperty("berth.microvm.warmBase", "true"));
    static final String BASE_COMPLETE = WarmBases.COMPLETE;
    private static final System.Logger LOG = System.getLogger("berth.microvm");

    private final ImageBuilder images;
    private final WarmBases bases;
    private final ImageKind kind;
    private final String qemu;
    private volatile Accel accel;
    private volatile GuestImage image;
    private final SecureRandom random = new SecureRandom();

    public MicrovmDriver(ImageBuilder images, ImageKind kind) {
        this.images = images;
        this.bases = new WarmBases(images.cacheDir());
        this.kind = kind;
        this.qemu = System.getProperty("berth.microvm.qemu", "qemu-system-x86_64");
    }

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
                + (VmmJail.enabled() ? "; QEMU jailed (own uid, mount namespace, cgroup v1 cpu/memory/pids)" : "; QEMU not jailed (Berth is not root)")
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
                        + (VmmJail.enabled() ? "; QEMU jailed: its own uid, mount namespace and cgroup, no capabilities, seccomp"
                        : "; QEMU NOT jailed (runs as the server's user)")
                        + (unsafeUnconfinedRuns() ? "; commands NOT confined in the guest (unsafeUnconfinedRuns)"
                        : "; commands confined below the guest agent (own pid and mount namespace, no capabilities, seccomp, a pids/memory cgroup)"),
                true, true, true, accel().name());
    }

    @Override
    public List<dev.berth.engine.spi.Limit> limits(dev.berth.engine.spi.Resources r) {
        String how = VmmJail.enabled() ? "its QEMU is jailed in cgroup v1 cpu/memory/pids groups" : "its QEMU is not jailed (Berth is not root)";
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

    Accel accel() {
        Accel a = accel;
        if (a == null) {
            synchronized (this) {
                if (accel == null) accel = Accel.detect(qemu);
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
        ParkManifest.warmUp(); // the first park or resume of this server would pay for the digest's JIT otherwise
        try {
            Files.createDirectories(request.stateDir());
            Files.createDirectories(request.runtimeDir());
            return switch (request.mode()) {
                case StartRequest.Fresh f -> startFresh(request);
                case StartRequest.Resume r -> startResume(request);
                case StartRequest.Fork f -> startFork(request, f.snapshotStateDir(), false);
                case StartRequest.Inspect i -> startInspect(request);
            };
        } catch (SandboxDamagedException e) {
            cleanupRuntime(request.runtimeDir());
            throw e;
        } catch (IOException | RuntimeException e) {
            cleanupRuntime(request.runtimeDir());
            throw new SandboxException("microvm " + request.workspaceId() + ": start failed: " + e.getMessage(), e);
        }
    }

    /**
     * A fresh workspace is a fork of a pristine "base" snapshot of the same image and shape, taken right after the
     * first boot and kept in the image cache: open_workspace then costs a restore (~0.2-0.3 s under TCG) instead
     * of a boot (~3-6 s). The fork path sets the clock and reseeds the guest RNG, so workspaces made from one base
     * share no randomness. Off with {@code -Dberth.microvm.warmBase=false}.
     */
    private Sandbox startFresh(StartRequest req) throws IOException {
        if (!WARM_BASE) return bootFresh(req);
        String imageId = imageFor(req).id();
        Path base = bases.of(imageId, req.resources(), req.proxyPort());
        java.util.Optional<WarmBases.Lease> lease = bases.use(base);
        if (lease.isPresent()) {
            try (WarmBases.Lease held = lease.get()) {
                return startFork(req, base, true); // copies what it needs: the base can go once this returns
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "warm base " + base + " unusable, booting instead: " + e.getMessage());
                cleanupRuntime(req.runtimeDir());
                clearDir(req.stateDir());
                clearDir(req.runtimeDir());
            }
        }
        Sandbox fresh = bootFresh(req);
        Path tmp = null;
        try {
            Files.createDirectories(base.getParent());
            tmp = Files.createTempDirectory(base.getParent(), ".base-");
            fresh.snapshot(tmp);
            bases.publish(tmp, base);
            tmp = null;
            // a new base is the moment an image was rebuilt or upgraded: collect what that superseded
            List<String> removed = bases.collect(imageId, Instant.now());
            if (!removed.isEmpty()) LOG.log(System.Logger.Level.INFO, "warm bases collected: " + removed);
        } catch (IOException | SandboxException | RuntimeException e) {
            // the workspace is fine without a base; the next fresh one boots too and tries again
            LOG.log(System.Logger.Level.INFO, "no warm base for " + base.getFileName() + ": " + e.getMessage());
        } finally {
            if (tmp != null) dev.berth.engine.spi.Trees.delete(tmp);
        }
        return fresh;
    }

    private static void clearDir(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) return;
        try (var s = Files.list(dir)) {
            for (Path p : s.toList()) dev.berth.engine.spi.Trees.delete(p);
        }
    }

    private Sandbox bootFresh(StartRequest req) throws IOException {
        Resources r = req.resources();
        if (r.memoryMiB() < MIN_MEMORY_MIB) throw new IOException("memory " + r.memoryMiB() + " MiB is below the minimum of " + MIN_MEMORY_MIB + " MiB");
        if (r.vcpus() < 1 || r.vcpus() > 64) throw new IOException("vcpus must be 1..64, not " + r.vcpus());
        if (r.diskMiB() < 16) throw new IOException("disk must be at least 16 MiB, not " + r.diskMiB());
        GuestImage img = imageFor(req);
        var runAs = req.image() == null ? null : req.image().runAs();
        VmSpec spec = new VmSpec(img.id(), img.kernel().toString(), img.initramfs().toString(),
                img.baseDisk() == null ? null : img.baseDisk().toString(), r.memoryMiB(), r.vcpus(),
                "ram", true, null, req.proxyPort(), null,
                runAs == null ? null : Integer.toUnsignedString(runAs.uid()) + ":" + Integer.toUnsignedString(runAs.gid()));
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        createDataDisk(disk, r.diskMiB());
        spec.write(req.stateDir().resolve(VmSpec.WORKSPACE_FILE));
        QemuMachine m = QemuMachine.launch(qemu, accel(), spec, req.stateDir(), disk, req.runtimeDir(), null);
        return connect(req, spec, m, false, false);
    }

    private Sandbox startResume(StartRequest req) throws IOException, SandboxDamagedException {
        Phases phases = new Phases();
        awaitExit(req.stateDir());
        Path specFile = req.stateDir().resolve(VmSpec.WORKSPACE_FILE);
        if (!Files.exists(specFile)) throw new IOException("no saved machine in " + req.stateDir());
        VmSpec spec = VmSpec.read(specFile);
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        // a snapshot the server died in: drop the overlay QEMU had not switched to, and links nothing uses
        DiskLayers.recover(req.stateDir(), null);
        DiskLayers.prune(req.stateDir(), spec, disk);
        phases.mark("spec and layers");
        Path state = spec.stateFile() == null ? null : req.stateDir().resolve(spec.stateFile());
        if (spec.memShared()) stopHoles(req.stateDir().resolve(spec.memPath()));
        phases.mark("stop hole punching");
        java.util.concurrent.CompletableFuture<Void> verified = java.util.concurrent.CompletableFuture.completedFuture(null);
        if (state != null && (ParkManifest.exists(req.stateDir()) || VmSpec.promisesManifest(specFile))) {
            // load exactly what park wrote, or nothing: a missing, truncated or foreign file is refused by name. The
            // check runs while QEMU starts, and QEMU loads nothing before it passed.
            verified = java.util.concurrent.CompletableFuture.runAsync(() -> {
                try {
                    ParkManifest.verify(req.workspaceId(), req.stateDir());
                } catch (SandboxDamagedException | IOException e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            }, ParkManifest.ORCHESTRATE); // its own thread: the common pool has one worker on two cores
        } else if (state != null && !Files.isRegularFile(state)) {
            throw new SandboxDamagedException("vm.json names the saved state " + spec.stateFile() + ", which is missing");
        }
        java.util.concurrent.CompletableFuture<Void> check = verified;
        // No saved state (the server or QEMU died while it ran): boot cold on the workspace's own disk.
        QemuMachine m;
        try {
            m = QemuMachine.launch(qemu, accel(), spec, req.stateDir(), disk, req.runtimeDir(), state, () -> {
                try {
                    check.join();
                } catch (java.util.concurrent.CompletionException e) {
                    throw new IOException(e.getCause().getMessage(), e.getCause());
                }
            }, phases);
        } catch (IOException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof SandboxDamagedException d) throw d;
            }
            check.exceptionally(x -> null).join(); // QEMU failed for its own reasons: let the check finish first
            throw e;
        }
        VmSpec running = spec;
        if (state != null) {
            // Until cont the RAM file is untouched and a failed resume can be retried. From cont on the RAM file is
            // live and the saved device state no longer matches it: forget the state first (a later failure then
            // resumes as a cold boot on the disk, never as a restore onto changed RAM).
            running = spec.withState(null);
            running.write(specFile);
            Files.deleteIfExists(state);
            Files.deleteIfExists(req.stateDir().resolve(ParkManifest.FILE));
            phases.mark("forget the saved state");
            m.cont();
            phases.mark("cont");
        }
        MicrovmSandbox sb = connect(req, running, m, state != null, false, phases);
        DiskLayers.flattenIfDeep(m, req.stateDir());
        phases.mark("chain depth check");
        sb.startPhases = phases.millis();
        return sb;
    }

    /**
     * A damaged workspace's disk, booted cold and read-only: a throwaway qcow2 overlay in the runtime directory on
     * top of the workspace's disk (which QEMU, jailed, sees read-only as its backing file), fresh memory there too,
     * and nothing written into the state directory: whatever failed verification (saved RAM, device state) is left
     * as it is for the operator. What only the saved memory held is not there; what the guest had written to its
     * disk is. The sandbox is destroyed after use.
     */
    private Sandbox startInspect(StartRequest req) throws IOException {
        awaitExit(req.stateDir());
        Path specFile = req.stateDir().resolve(VmSpec.WORKSPACE_FILE);
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        if (!Files.isRegularFile(specFile) || !Files.isRegularFile(disk)) {
            throw new IOException("the workspace has no machine description or disk left in " + req.stateDir() + " to read");
        }
        Path dir = req.runtimeDir().resolve("inspect");
        clearDir(dir);
        Files.createDirectories(dir);
        VmSpec spec = VmSpec.read(specFile).withMemory("ram", true).withState(null);
        Path overlay = dir.resolve(QemuMachine.DATA_DISK);
        ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                disk.toAbsolutePath().toString(), overlay.toString()), 60);
        QemuMachine m = QemuMachine.launch(qemu, accel(), spec, dir, overlay, req.runtimeDir(), null);
        StartRequest view = new StartRequest(req.workspaceId(), dir, req.runtimeDir(), req.mode(), req.resources(), req.proxyPort(),
                req.image());
        return connect(view, spec, m, false, false);
    }

    /**
     * A new machine from a snapshot: a qcow2 overlay on the snapshot's top disk layer, and its RAM either mapped
     * copy-on-write (share=off: a fork costs no copy, but its park must write every page it changed into the state
     * stream) or, with {@code ownMemory}, copied (sparse) into the workspace so that it is the workspace's own
     * share=on file like a booted machine's: park and resume then move only device state. Fresh workspaces made from
     * the warm base own their memory (they must park like a booted machine); forks of a user's snapshot share it.
     *
     * <p>A fork first hard-links every layer of the snapshot (disk chain, RAM, device state) into its own
     * {@code layers/} directory ({@link DiskLayers}): from then on it needs nothing under the snapshot's name, so the
     * snapshot may be deleted at any time, during this start too (the start then fails cleanly before its links
     * are complete, or succeeds on its own links).
     */
    private Sandbox startFork(StartRequest req, Path snapDir, boolean ownMemory) throws IOException {
        Phases phases = new Phases();
        VmSpec snap = VmSpec.read(snapDir.resolve(VmSpec.SNAPSHOT_FILE));
        Path snapDisk = snapDir.resolve(snap.disk() == null ? QemuMachine.DATA_DISK : snap.disk()).toAbsolutePath();
        // only a snapshot of a machine whose RAM was its own file has a stream without RAM pages: then its RAM file
        // can become the fork's own
        boolean own = ownMemory && !Path.of(snap.memPath()).isAbsolute() && DiskLayers.chain(snapDisk).isEmpty();
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        Path layers = DiskLayers.ensureDir(req.stateDir());
        // the device state under a name of the fork's own (a read-only layer until the restore has read it)
        Path state = layers.resolve(DiskLayers.newId("s-") + ".state");
        DiskLayers.link(snapDir.resolve(snap.stateFile()), state);
        VmSpec spec;
        if (own) {
            copySparse(snapDir.resolve(snap.memPath()), req.stateDir().resolve("ram"));
            spec = snap.withMemory("ram", true).withState(null).withDisk(null);
            // the workspace's own disk too (a warm base's is a few MiB, copied sparse), so nothing refers to the base
            copySparse(snapDisk, disk);
            // layers are read-only and copies keep the mode: the workspace's own files must be writable by its QEMU
            for (Path f : List.of(disk, req.stateDir().resolve("ram")))
                Files.setPosixFilePermissions(f, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            writeBackLater(req.stateDir().resolve("ram"));
        } else {
            String top;
            String mem = snap.memPath();
            if (snap.disk() != null) {
                DiskLayers.linkAll(snapDir, req.stateDir());
                top = snap.disk();
            } else {
                // a snapshot written before layers: its disk and RAM become layers of the fork
                top = DiskLayers.DIR + "/" + DiskLayers.newId("d-") + ".qcow2";
                DiskLayers.link(snapDisk, req.stateDir().resolve(top));
                if (!Path.of(mem).isAbsolute()) {
                    String ram = DiskLayers.DIR + "/" + DiskLayers.newId("r-") + ".ram";
                    DiskLayers.link(snapDir.resolve(mem), req.stateDir().resolve(ram));
                    mem = ram;
                }
            }
            DiskLayers.createOverlay(disk, top, DiskLayers.virtualSize(req.stateDir().resolve(top)));
            spec = snap.withMemory(mem, false).withState(null).withDisk(null);
        }
        spec.write(req.stateDir().resolve(VmSpec.WORKSPACE_FILE));
        phases.mark(own ? "copy RAM and disk" : "link layers, overlay");
        QemuMachine m = QemuMachine.launch(qemu, accel(), spec, req.stateDir(), disk, req.runtimeDir(), state);
        phases.mark("launch QEMU, restore device state");
        Files.deleteIfExists(state);
        m.cont();
        phases.mark("cont");
        MicrovmSandbox sb = connect(req, spec, m, true, true, phases);
        if (!own) DiskLayers.flattenIfDeep(m, req.stateDir());
        sb.startPhases = phases.millis();
        LOG.log(System.Logger.Level.DEBUG, () -> "microvm " + req.workspaceId() + ": fork phases (ms) " + sb.startPhases);
        return sb;
    }

    private MicrovmSandbox connect(StartRequest req, VmSpec spec, QemuMachine m, boolean restored, boolean forked) throws IOException {
        return connect(req, spec, m, restored, forked, new Phases());
    }

    private MicrovmSandbox connect(StartRequest req, VmSpec spec, QemuMachine m, boolean restored, boolean forked, Phases phases)
            throws IOException {
        AgentClient agent;
        GuestRunLimits runLimits;
        List<dev.berth.engine.spi.Limit> io;
        // disk throttling is QEMU's alone: it is set while the agent's HELLO is under way
        var throttle = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> DiskThrottle.apply(m, req.stateDir(), req.resources().io()), SETTINGS);
        try {
            agent = connectAgent(m, AGENT_TIMEOUT);
            phases.mark("agent HELLO");
            // The host-side settings after HELLO are independent round trips (the run limits and the clock to the
            // agent; the throttling to QEMU started before HELLO): sent together they cost the slowest of them, not
            // the sum (each was 5-25 ms under TCG). The reseed of a fork stays on this thread; all are done before the
            // sandbox exists.
            AgentClient a = agent;
            var limits = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> GuestRunLimits.apply(a, req.resources().maxPids()), SETTINGS);
            try {
                if (restored) agent.setClock(Instant.now());
                if (forked) {
                    byte[] seed = new byte[64];
                    random.nextBytes(seed);
                    if (agent.confinedRuns()) {
                        // an agent that confines runs reseeds the CRNG itself (a run has no CAP_SYS_ADMIN for berth-reseed)
                        if (!agent.seedRngCredited(seed))
                            throw new IOException("guest CRNG reseed failed: the fork would share random numbers with its siblings");
                    } else {
                        agent.seedRng(seed);
                        reseed(agent);
                    }
                }
            } finally {
                runLimits = limits.join();
                io = throttle.join();
            }
            phases.mark("clock, guest run limits, disk throttling (together)");
        } catch (IOException | RuntimeException e) {
            m.kill();
            throttle.exceptionally(x -> null).join();
            throw new IOException("guest agent: " + e.getMessage() + m.log(), e);
        }
        return new MicrovmSandbox(req.workspaceId(), req.stateDir(), req.runtimeDir(), spec, m, agent, runLimits, io);
    }

    /** Virtual threads for the settings {@link #connect} sends together (they only wait on a socket). */
    private static final java.util.concurrent.ExecutorService SETTINGS =
            java.util.concurrent.Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("berth-vm-settings-", 0).factory());

    /**
     * Forces the guest CRNG to reseed from the pool the host seed went into (see images/berth-reseed.c): without it,
     * forks of one snapshot return the same /dev/urandom bytes until the kernel's next timed reseed.
     */
    static void reseed(AgentClient agent) throws IOException {
        try {
            var h = agent.exec(new dev.berth.engine.agent.ExecRequest(List.of("/sbin/berth-reseed"), List.of(), "/", 10_000, false),
                    new dev.berth.engine.agent.ExecListener() {
                        @Override public void onStdout(byte[] d) { }
                        @Override public void onStderr(byte[] d) { }
                    });
            var exit = h.exit().get(15, TimeUnit.SECONDS);
            if (exit.exitCode() != 0 || exit.termSignal() != 0)
                throw new IOException("guest CRNG reseed failed (" + exit + "): the fork would share random numbers with its siblings");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted during guest reseed");
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IOException("guest CRNG reseed: " + e, e);
        }
    }

    static AgentClient connectAgent(QemuMachine m, Duration timeout) throws IOException {
        SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(m.runtimeDir.resolve(QemuMachine.AGENT_SOCK)));
        try {
            return AgentClient.handshake(ch, timeout);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** A sparse qcow2 holding a fresh ext4 filesystem of {@code mib} MiB (made on the host, never by the guest). */
    static void createDataDisk(Path disk, int mib) throws IOException {
        Path raw = disk.resolveSibling(disk.getFileName() + ".raw");
        try {
            ImageBuilder.run(List.of("truncate", "-s", mib + "M", raw.toString()), 30);
            ImageBuilder.run(List.of("mkfs.ext4", "-q", "-F", "-L", "berth-data", "-E",
                    "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0", raw.toString()), 60);
            ImageBuilder.run(List.of("qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2", raw.toString(), disk.toString()), 120);
        } finally {
            Files.deleteIfExists(raw);
        }
    }

    /**
     * Writes the copied RAM file back to disk in the background, off the open path. The copy put its tens of MiB in
     * the page cache as dirty pages; the kernel would write them back within {@code dirty_expire_centisecs} (30 s)
     * anyway, but a park before then had to wait for all of them in its RAM fsync (most of a young workspace's park
     * time). Writing them now leaves a park only the pages the guest changed since.
     */
    static void writeBackLater(Path ram) {
        Thread.ofVirtual().name("berth-ram-writeback").start(() -> writeBack(ram));
    }

    /** Writes a RAM file's dirty pages to disk ({@code fdatasync}); quietly does nothing when it cannot. */
    static void writeBack(Path ram) {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(ram, java.nio.file.StandardOpenOption.WRITE)) {
            ch.force(false);
        } catch (IOException e) {
            // the file is gone (the workspace was closed) or the disk refused: park fsyncs it itself and reports that
        }
    }

    /** QEMUs of parked workspaces that were told to quit and may not have exited yet, by state directory. */
    private static final java.util.Map<Path, java.util.concurrent.CompletableFuture<Void>> EXITING =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** Records that the QEMU of {@code stateDir} is exiting; {@code exit} completes once it is gone and cleaned up. */
    static void exiting(Path stateDir, java.util.concurrent.CompletableFuture<Void> exit) {
        Path key = stateDir.toAbsolutePath().normalize();
        EXITING.put(key, exit);
        exit.whenComplete((x, e) -> EXITING.remove(key, exit));
    }

    /**
     * Waits until a parked workspace's QEMU has exited (park does not wait for it): it holds the disk's image lock
     * and its runtime files until then.
     */
    static void awaitExit(Path stateDir) {
        var f = EXITING.get(stateDir.toAbsolutePath().normalize());
        if (f != null) f.exceptionally(x -> null).join();
    }

    /** Waits until every parked machine told to quit has exited (each is killed after 10 s at most). */
    @Override
    public void quiesce() {
        for (var f : List.copyOf(EXITING.values())) f.exceptionally(x -> null).join();
    }

    /** RAM files whose zero blocks are being punched into holes after a park, by path. */
    private static final java.util.Map<Path, Digger> DIGGING = new java.util.concurrent.ConcurrentHashMap<>();

    /** One {@code fallocate --dig-holes} run; {@link #stop} ends it early (the file stays as dug so far). */
    private static final class Digger {
        final java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
        private Process process;
        private boolean stopped;

        synchronized Process start(Path ram) throws IOException {
            if (stopped) return null;
            process = new ProcessBuilder("fallocate", "--dig-holes", ram.toString())
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return process;
        }

        void stop() {
            synchronized (this) {
                stopped = true;
                if (process != null) process.destroyForcibly();
            }
            done.join();
        }
    }

    /**
     * Punches the zero blocks of a parked RAM file into holes, off the park path. The content stays the same (the
     * manifest stays true). QEMU writing a page while fallocate punches it could lose the write, so a resume stops it
     * first ({@link #stopHoles}: each punch is one atomic {@code fallocate} call on a range that reads zero, so ending
     * it at any point leaves the content as it was, with fewer holes) and a snapshot waits for it ({@link #awaitHoles}).
     * It starts once {@code after} (the park's digests, which read the same blocks) is done.
     */
    static void digHolesLater(Path ram, java.util.concurrent.CompletableFuture<Void> after) {
        Path key = ram.toAbsolutePath().normalize();
        Digger d = new Digger();
        DIGGING.put(key, d);
        Thread.ofVirtual().name("berth-dig-holes").start(() -> {
            try {
                after.exceptionally(x -> null).join();
                Process p = d.start(key);
                if (p != null) p.waitFor(120, TimeUnit.SECONDS);
            } catch (IOException e) {
                // not every filesystem can punch holes; the file is then just larger
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                DIGGING.remove(key, d);
                d.done.complete(null);
            }
        });
    }

    /** Waits until no hole punching runs on {@code ram}. */
    static void awaitHoles(Path ram) {
        Digger d = DIGGING.get(ram.toAbsolutePath().normalize());
        if (d != null) d.done.join();
    }

    /** A parked machine's exit and its park's digests are awaited, and its hole punching ended, before the directory goes. */
    @Override
    public void release(Path stateDir) {
        awaitExit(stateDir);
        try {
            VmSpec spec = VmSpec.read(stateDir.resolve(VmSpec.WORKSPACE_FILE));
            if (spec.memShared()) stopHoles(stateDir.resolve(spec.memPath()));
        } catch (IOException e) {
            // no spec (never started, or already gone): nothing of ours runs on it
        }
    }

    /** Ends any hole punching on {@code ram} now and waits until its process is gone (a resume is about to map it). */
    static void stopHoles(Path ram) {
        Digger d = DIGGING.get(ram.toAbsolutePath().normalize());
        if (d != null) d.stop();
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
            Optional<QemuMachine> found = QemuMachine.adopt(req.runtimeDir());
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
            AgentClient agent = connectAgent(m, AGENT_TIMEOUT);
            return Optional.of(new MicrovmSandbox(req.workspaceId(), req.stateDir(), req.runtimeDir(), spec, m, agent,
                    GuestRunLimits.readBack(agent, null), DiskThrottle.apply(m, req.stateDir(), req.resources().io())));
        } catch (IOException | RuntimeException e) {
            if (m != null) m.kill();
            cleanupRuntime(req.runtimeDir());
            throw new SandboxException("microvm " + req.workspaceId() + ": could not adopt the running machine: " + e.getMessage(), e);
        }
    }

    @Override
    public void snapshotParked(Path workspaceStateDir, Path snapshotStateDir) throws SandboxException {
        try {
            awaitExit(workspaceStateDir);
            VmSpec spec = VmSpec.read(workspaceStateDir.resolve(VmSpec.WORKSPACE_FILE));
            if (spec.memShared()) awaitHoles(workspaceStateDir.resolve(spec.memPath()));
            // a snapshot of a damaged parked state would hand the damage to every fork
            if (ParkManifest.exists(workspaceStateDir)) ParkManifest.verify(null, workspaceStateDir);
            if (spec.stateFile() == null || !Files.isRegularFile(workspaceStateDir.resolve(spec.stateFile())))
                throw new IOException("the workspace has no saved memory state (it was not parked cleanly)");
            Files.createDirectories(snapshotStateDir);
            copySparse(workspaceStateDir.resolve(spec.stateFile()), snapshotStateDir.resolve("state"));
            // the parked machine's own overlay is copied as the snapshot's top layer (the workspace writes it again
            // when it resumes); the layers below it are linked, not copied
            String top = DiskLayers.newId("d-") + ".qcow2";
            Path wsLayers = DiskLayers.ensureDir(workspaceStateDir);
            copySparse(workspaceStateDir.resolve(QemuMachine.DATA_DISK), wsLayers.resolve(top));
            DiskLayers.seal(wsLayers.resolve(top));
            try {
                writeSnapshot(spec, workspaceStateDir, snapshotStateDir, top);
            } finally {
                Files.deleteIfExists(wsLayers.resolve(top)); // the workspace's disk does not build on this copy
            }
        } catch (SandboxDamagedException e) {
            throw new SandboxException("microvm: the parked workspace's saved state failed verification, so no snapshot"
                    + " was taken of it: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new SandboxException("microvm: snapshot of parked workspace failed: " + e.getMessage(), e);
        }
    }

    /**
     * Fills {@code snapDir} from the workspace's {@code layers/}: hard links of the disk layer {@code topLayer} and of
     * every layer below it (no disk byte is copied), the RAM (copied, sparse, when the workspace owns it; linked
     * when it is a fork's read-only RAM layer), and writes snapshot.json last.
     */
    static void writeSnapshot(VmSpec spec, Path stateDir, Path snapDir, String topLayer) throws IOException {
        writeSnapshot(spec, stateDir, snapDir, topLayer, null, new Phases());
    }

    /**
     * As above; {@code copiedRam}, when not null, names the copy of the workspace's own RAM file that the caller
     * already made in {@code snapDir} (a live snapshot copies it beside the device-state save).
     */
    static void writeSnapshot(VmSpec spec, Path stateDir, Path snapDir, String topLayer, String copiedRam, Phases phases)
            throws IOException {
        Path layers = DiskLayers.ensureDir(snapDir);
        Path top = stateDir.resolve(DiskLayers.DIR).resolve(topLayer);
        DiskLayers.link(top, layers.resolve(topLayer));
        for (Path below : DiskLayers.chain(top)) {
            String name = below.getFileName().toString();
            // a layer; a chain of a fork made before layers goes on through the old snapshot's absolute path
            if (name.startsWith("d-") && !Files.exists(layers.resolve(name))) DiskLayers.link(below, layers.resolve(name));
        }
        String memPath;
        phases.mark("link the disk layers");
        if (spec.memShared() && copiedRam != null) {
            memPath = copiedRam;
        } else if (spec.memShared()) {
            memPath = DiskLayers.DIR + "/" + DiskLayers.newId("r-") + ".ram";
            copySparse(stateDir.resolve(spec.memPath()), snapDir.resolve(memPath));
            phases.mark("copy the RAM file");
        } else if (!Path.of(spec.memPath()).isAbsolute()) {
            memPath = spec.memPath();
            DiskLayers.link(stateDir.resolve(memPath), snapDir.resolve(memPath));
        } else {
            memPath = spec.memPath(); // a fork made before layers maps its snapshot's RAM by absolute path
        }
        VmSpec.fsync(layers);
        spec.withMemory(memPath, false).withState("state").withDisk(DiskLayers.DIR + "/" + topLayer)
                .write(snapDir.resolve(VmSpec.SNAPSHOT_FILE));
        phases.mark("fsync, snapshot.json");
    }

    static void copySparse(Path from, Path to) throws IOException {
        ImageBuilder.run(List.of("cp", "--sparse=always", from.toString(), to.toString()), 600);
    }

    /** Bytes the files really occupy on disk (sparse files count only their allocated blocks). */
    static long allocatedBytes(List<Path> files) {
        List<String> cmd = new java.util.ArrayList<>(List.of("du", "-B1", "-c"));
        for (Path f : files) if (Files.exists(f)) cmd.add(f.toString());
        if (cmd.size() == 3) return 0;
        try {
            String out = ImageBuilder.run(cmd, 30).strip();
            String last = out.substring(out.lastIndexOf('\n') + 1);
            return Long.parseLong(last.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
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
