package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.SandboxStillRunningException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** One running microVM. Lifecycle calls are serialised by the engine; {@link #agent()} may be used concurrently. */
final class MicrovmSandbox implements Sandbox {
    private static final System.Logger LOG = System.getLogger("berth.microvm");

    private final VmHome home;
    private final String workspaceId;
    private final Path stateDir;
    private final Path runtimeDir;
    volatile VmSpec spec;
    private final QemuMachine machine;
    private final AgentClient agent;
    private final GuestRunLimits runLimits;
    private final List<dev.berth.engine.spi.Limit> io;
    private volatile boolean stopped;

    MicrovmSandbox(VmHome home, String workspaceId, Path stateDir, Path runtimeDir, VmSpec spec, QemuMachine machine,
                   AgentClient agent, GuestRunLimits runLimits, List<dev.berth.engine.spi.Limit> io) {
        this.home = home;
        this.runLimits = runLimits;
        this.io = io;
        this.workspaceId = workspaceId;
        this.stateDir = stateDir;
        this.runtimeDir = runtimeDir;
        this.spec = spec;
        this.machine = machine;
        this.agent = agent;
    }

    @Override
    public AgentClient agent() { return agent; }

    @Override
    public long hostPid() { return machine.process.pid(); }

    @Override
    public boolean isAlive() { return !stopped && machine.process.isAlive(); }

    private void requireRunning(String op) throws SandboxException {
        if (stopped) throw new SandboxException("cannot " + op + " microvm " + workspaceId + ": it is stopped");
        if (!machine.process.isAlive())
            throw new SandboxException("cannot " + op + " microvm " + workspaceId + ": QEMU exited" + machine.log());
    }

    /**
     * Parks: saves device state (RAM stays in its file, x-ignore-shared), makes it and the RAM file durable (beside the
     * state's digest and the {@link ParkManifest}'s write), writes the spec naming the state, and only then stops QEMU;
     * the RAM file's and the disk's digests are recorded right after ({@link ParkManifest#completeLater}). Until the spec is written nothing
     * is lost: a failure (a full disk, for one) removes what was written and continues the guest, and the caller gets
     * {@link SandboxStillRunningException}. A server killed between the spec and QEMU's exit leaves a QEMU that
     * the next server's {@code adopt} tells to quit, keeping the saved state.
     */
    @Override
    public ParkOutcome park() throws SandboxException {
        requireRunning("park");
        long t0 = System.nanoTime();
        Phases phases = new Phases();
        Path tmp = stateDir.resolve("state.tmp");
        Path state = stateDir.resolve("state");
        Path specFile = stateDir.resolve(VmSpec.WORKSPACE_FILE);
        VmSpec parked = spec.withState("state");
        long manifestNanos;
        java.util.concurrent.CompletableFuture<Void> ramDurable = java.util.concurrent.CompletableFuture.completedFuture(null);
        java.util.concurrent.CompletableFuture<Void> stateDurable = java.util.concurrent.CompletableFuture.completedFuture(null);
        java.util.concurrent.CompletableFuture<Void> manifestDurable = java.util.concurrent.CompletableFuture.completedFuture(null);
        Map<String, ParkManifest.Entry> entries = new java.util.LinkedHashMap<>();
        try {
            Files.deleteIfExists(tmp);
            machine.stop();
            phases.mark("stop");
            // From stop on the RAM file and the disk no longer change: the RAM file's write-back (disk) runs while
            // QEMU writes the device state; their digests are taken after the commit (ParkManifest.completeLater)
            Path ram = spec.memShared() ? stateDir.resolve(spec.memPath()) : null;
            if (ram != null) ramDurable = fsyncAsync(ram);
            machine.save(tmp);
            phases.mark("save device state");
            // the state file's fsync runs beside the manifest's write; the spec that names it (the commit point) is
            // written only after both, and its directory fsync makes the rename durable too
            Files.move(tmp, state, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            long s0 = System.nanoTime();
            List<String> files = parkedFiles(spec);
            // digested before its fsync starts: beside it, ext4 held the digest's lseek and reads 5-7 ms for 60 KiB
            entries.putAll(ParkManifest.measure(home.tasks(), stateDir, List.of("state")));
            for (String f : files.subList(1, files.size())) entries.put(f, ParkManifest.pending(stateDir.resolve(f)));
            phases.mark("state digest");
            long digestNanos = System.nanoTime() - s0;
            stateDurable = fsyncAsync(state);
            // the manifest is written (and synced) beside the state's fsync: two fsyncs in flight share ext4's journal
            // commit; the spec's directory fsync below makes its name durable
            manifestDurable = java.util.concurrent.CompletableFuture.runAsync(() -> {
                try {
                    ParkManifest.write(workspaceId, stateDir, entries, false);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, home.tasks().waits);
            join(stateDurable);
            phases.mark("wait for the state fsync");
            long w0 = System.nanoTime();
            join(manifestDurable);
            phases.mark("wait for the manifest write (beyond the state fsync)");
            // the manifest's cost on the park path: the state file's digest and the manifest's write beyond what
            // overlapped the state's fsync (the RAM file's and the disk's digests follow the commit)
            manifestNanos = digestNanos + (System.nanoTime() - w0);
            join(ramDurable);
            phases.mark("wait for the RAM fsync");
            parked.write(specFile);
            phases.mark("spec write");
        } catch (IOException e) {
            // nothing is lost yet: undo what was written and let the guest go on (after the write-back and the
            // writes in flight: they touch files that are about to change or be deleted)
            ramDurable.exceptionally(x -> null).join();
            stateDurable.exceptionally(x -> null).join();
            manifestDurable.exceptionally(x -> null).join();
            for (Path p : List.of(tmp, state, stateDir.resolve(ParkManifest.FILE))) {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort: what matters is that the spec names no state and the guest runs on
                }
            }
            try {
                machine.cont(); // vm.json still names no state: MetaFile writes are atomic, a failed one changed nothing
            } catch (IOException e2) {
                destroy();
                throw new SandboxException("microvm " + workspaceId + ": park failed (" + e.getMessage() + ") and the machine"
                        + " could not be continued (" + e2.getMessage() + "); it was stopped, its memory lost, files on its disk kept", e);
            }
            throw new SandboxStillRunningException("microvm " + workspaceId + ": park failed: " + e.getMessage()
                    + "; nothing was saved and the workspace is still running as before", e);
        }
        spec = parked;
        agent.close();
        stopped = true;
        // parked from here on (the spec names the durable state): QEMU exits after the reply, the frozen files are
        // digested into the manifest, and whatever starts this workspace's files again waits for both first
        // (BackgroundTasks.awaitExit)
        java.util.concurrent.CompletableFuture<Void> digested = ParkManifest.completeLater(home.tasks(), workspaceId, stateDir, entries);
        lastDigests = digested;
        home.tasks().exiting(stateDir, java.util.concurrent.CompletableFuture.allOf(machine.quitLater().thenRun(this::cleanRuntime), digested));
        phases.mark("quit QEMU (asked, not awaited)");
        lastParkPhases = phases.millis();
        long millis = (System.nanoTime() - t0) / 1_000_000;
        lastManifestMillis = manifestNanos / 1_000_000.0;
        // Zero pages (most of them: the guest runs with init_on_free=1) become holes, so the parked RAM file is small.
        // Content is unchanged (the manifest stays true), QEMU no longer maps the file, and it is not on the park path.
        // After the digests: the two would compete for the cores, and the digest reads each block once either way.
        if (spec.memShared()) home.tasks().digHolesLater(stateDir.resolve(spec.memPath()), digested);
        return new ParkOutcome(true, stateBytes(stateDir, spec), millis);
    }

    /** How long after a run's end its RAM write-out starts: after the run's end record and result, not beside them. */
    static final long WRITE_OUT_DELAY_MS = 250;
    /** At most one RAM write-out per workspace in this long (the kernel's own write-back age, dirty_expire: 30 s). */
    static final long WRITE_OUT_INTERVAL_MS = 30_000;
    private java.util.concurrent.CompletableFuture<Void> writeOut = java.util.concurrent.CompletableFuture.completedFuture(null);
    private long writeOutStarted = Long.MIN_VALUE / 2;

    /**
     * A run ended: the RAM file's dirty pages (what the guest changed) are written out in the background, so that a
     * later park's RAM fsync, which the park waits for, finds little left to write (park phases: its wait for the
     * write-back, through the manifest's fsync and ext4's ordered journal, was 15-47 ms of a 100-140 ms park). It
     * starts {@link #WRITE_OUT_DELAY_MS} after the run, so the run's own durable records are not queued behind it,
     * and at most every {@link #WRITE_OUT_INTERVAL_MS} per workspace: the kernel writes pages that old back anyway,
     * so this moves that write earlier instead of adding writes for a workspace that runs command after command.
     */
    @Override
    public synchronized java.util.concurrent.CompletableFuture<Void> flushInBackground() {
        if (stopped || !spec.memShared()) return java.util.concurrent.CompletableFuture.completedFuture(null);
        long now = System.nanoTime();
        if (!writeOut.isDone() || now - writeOutStarted < WRITE_OUT_INTERVAL_MS * 1_000_000) return writeOut;
        writeOutStarted = now;
        Path ram = stateDir.resolve(spec.memPath());
        // the guest's sync waits on this workspace's own guest (up to GUEST_SYNC_TIMEOUT_MS if the guest is slow or
        // hostile): on a thread of its own, so only the RAM files' writes queue on the one shared write-out thread
        writeOut = java.util.concurrent.CompletableFuture.runAsync(() -> {
            if (!stopped) guestSync();
        }, java.util.concurrent.CompletableFuture.delayedExecutor(WRITE_OUT_DELAY_MS, java.util.concurrent.TimeUnit.MILLISECONDS, home.tasks().guestSync))
                .thenRunAsync(() -> {
                    if (!stopped) BackgroundTasks.writeBack(ram);
                }, home.tasks().writeOut()); // one write-out at a time for every workspace of the home
        return writeOut;
    }

    /** Longest a background guest {@code sync} is waited for; past it the write-out goes on without it. */
    static final long GUEST_SYNC_TIMEOUT_MS = 120_000;

    /**
     * The guest writes its dirty page cache to its disk ({@code sync} as a process of its own: the agent's SYNC
     * request would hold the agent's loop, and every run's streams with it, for as long as the write takes). Done
     * once here, the write lands in the workspace's disk layer, which a snapshot freezes and shares; otherwise every
     * fork of a snapshot taken soon after a large write repeats the same write-back into its own overlay (under TCG
     * that was most of a fork's first run after 50,000 new files), and the snapshot's stop waits for the guest's
     * requests in flight. The guest kernel would write those pages within 30 s anyway (its dirty_expire). Best
     * effort: a failure or timeout only leaves the kernel to do it.
     */
    private void guestSync() {
        try {
            var h = agent.exec(new dev.berth.engine.agent.ExecRequest(List.of("/bin/sh", "-c", "sync"),
                    List.of("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), "/", GUEST_SYNC_TIMEOUT_MS, false),
                    new dev.berth.engine.agent.ExecListener() {
                        @Override public void onStdout(byte[] d) { }
                        @Override public void onStderr(byte[] d) { }
                    });
            h.exit().get(GUEST_SYNC_TIMEOUT_MS + 5_000, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "microvm " + workspaceId + ": background guest sync: " + e);
        }
    }

    private java.util.concurrent.CompletableFuture<Void> fsyncAsync(Path f) {
        return java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                VmSpec.fsync(f);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, home.tasks().waits);
    }

    private static void join(java.util.concurrent.CompletableFuture<Void> f) throws IOException {
        try {
            f.join();
        } catch (java.util.concurrent.CompletionException ce) {
            if (ce.getCause() instanceof java.io.UncheckedIOException u) throw u.getCause();
            throw ce;
        }
    }

    /** Where the last park spent its time (for the benchmark). */
    volatile Map<String, Double> lastParkPhases = Map.of();
    /** Where the start that made this sandbox spent its time (a resume's phases; for the benchmark). */
    volatile Map<String, Double> startPhases = Map.of();

    /** Milliseconds the last park spent on its manifest (the state file's digest and the manifest's write; for the benchmark). */
    volatile double lastManifestMillis;
    /** The last park's digests of the RAM file and the disk, taken after its commit (for the benchmark). */
    volatile java.util.concurrent.CompletableFuture<Void> lastDigests = java.util.concurrent.CompletableFuture.completedFuture(null);

    /** The files a restore of {@code s} reads from the workspace's own directory. */
    static List<String> parkedFiles(VmSpec s) {
        List<String> files = new java.util.ArrayList<>(List.of("state", QemuMachine.DATA_DISK));
        // a fork's RAM (share=off) is a read-only layer shared with its snapshot: the snapshot's digest covers it
        if (s.memShared()) files.add(s.memPath());
        return files;
    }

    @Override
    public ParkOutcome snapshot(Path snapshotStateDir) throws SandboxException {
        requireRunning("snapshot");
        long t0 = System.nanoTime();
        Phases phases = new Phases();
        try {
            Files.createDirectories(snapshotStateDir);
            // a jailed QEMU sees only its own directories: it writes the state there, and the host moves it
            Path saved = stateDir.resolve(".snapshot-state");
            machine.stop();
            phases.mark("stop");
            // The RAM file no longer changes from stop on: its copy (the part of a snapshot that grows with the
            // guest's page cache) runs beside the disk freeze and the device-state save, which do not touch it
            String ram = spec.memShared() ? DiskLayers.DIR + "/" + DiskLayers.newId("r-") + ".ram" : null;
            java.util.concurrent.CompletableFuture<Void> ramCopied = java.util.concurrent.CompletableFuture.completedFuture(null);
            if (ram != null) {
                DiskLayers.ensureDir(snapshotStateDir);
                Path from = stateDir.resolve(spec.memPath());
                Path to = snapshotStateDir.resolve(ram);
                ramCopied = java.util.concurrent.CompletableFuture.runAsync(() -> {
                    try {
                        SnapshotWriter.copySparse(from, to);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }, home.tasks().waits);
            }
            try {
                // the disk is frozen as a shared layer (no copy) while the guest is paused, then the device state
                // saved: both are of the same instant
                String layer = DiskLayers.freezeLive(machine, stateDir, home.overlays(), phases);
                machine.save(saved);
                Files.move(saved, snapshotStateDir.resolve("state"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                phases.mark("save the device state");
                join(ramCopied);
                phases.mark("wait for the RAM copy (beyond freeze and save)");
                SnapshotWriter.write(spec, stateDir, snapshotStateDir, layer, ram, phases);
            } finally {
                // a failure above: the copy is not left running into a directory the engine is about to delete
                ramCopied.exceptionally(x -> null).join();
                machine.cont();
                phases.mark("cont");
            }
            lastFlatten = DiskLayers.flattenIfDeep(machine, stateDir, home.settings().maxChainDepth());
            long millis = (System.nanoTime() - t0) / 1_000_000;
            VmSpec snap = VmSpec.read(snapshotStateDir.resolve(VmSpec.SNAPSHOT_FILE));
            long bytes = stateBytes(snapshotStateDir, snap);
            phases.mark("chain depth, state bytes");
            lastSnapshotPhases = phases.millis();
            LOG.log(System.Logger.Level.DEBUG, () -> "microvm " + workspaceId + ": snapshot phases (ms) " + lastSnapshotPhases);
            return new ParkOutcome(true, bytes, millis);
        } catch (IOException e) {
            throw new SandboxException("microvm " + workspaceId + ": snapshot failed: " + e.getMessage(), e);
        }
    }

    /** Where the last live snapshot spent its time (logged at DEBUG on {@code berth.microvm}; for the benchmark). */
    volatile Map<String, Double> lastSnapshotPhases = Map.of();

    /** Whether the last snapshot started flattening the disk's backing chain (for tests). */
    volatile boolean lastFlatten;

    /** The machine (for tests in this package). */
    QemuMachine machine() { return machine; }

    /** State file + disk (a snapshot's: its top layer) + RAM file, when that file belongs to {@code dir}. */
    static long stateBytes(Path dir, VmSpec s) {
        Path ram = dir.resolve(s.memPath());
        List<Path> files = new java.util.ArrayList<>(List.of(dir.resolve("state"),
                dir.resolve(s.disk() == null ? QemuMachine.DATA_DISK : s.disk())));
        if (ram.toAbsolutePath().normalize().startsWith(dir.toAbsolutePath().normalize())) files.add(ram);
        return SnapshotWriter.allocatedBytes(files);
    }

    @Override
    public void destroy() {
        stopped = true;
        agent.close();
        machine.kill();
        cleanRuntime();
        VmmJail.remove(VmmJail.key(runtimeDir));
    }

    @Override
    public List<dev.berth.engine.spi.Limit> limits() {
        if (diskMiB < 0) diskMiB = diskMiB();
        return VmmJail.limits(VmmJail.key(runtimeDir), machine.jailed, spec, diskMiB, runLimits, io);
    }

    private volatile int diskMiB = -1;

    private int diskMiB() {
        try {
            String out = dev.berth.engine.host.HostCommand.run(List.of("qemu-img", "info", "-U", "--output=json",
                    stateDir.resolve(QemuMachine.DATA_DISK).toString()), java.time.Duration.ofSeconds(30)).output();
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"virtual-size\":\\s*(\\d+)").matcher(out);
            return m.find() ? (int) (Long.parseLong(m.group(1)) >> 20) : 0;
        } catch (IOException e) {
            return 0;
        }
    }

    private void cleanRuntime() {
        for (String f : List.of(QemuMachine.QMP_SOCK, QemuMachine.AGENT_SOCK, QemuMachine.PID_FILE,
                QemuMachine.CONSOLE_FILE, VmmJail.ROOT_DIR)) {
            try { Files.deleteIfExists(runtimeDir.resolve(f)); } catch (IOException ignored) { }
        }
    }

    @Override
    public String toString() { return "microvm " + workspaceId + " (pid " + hostPid() + ")"; }
}
