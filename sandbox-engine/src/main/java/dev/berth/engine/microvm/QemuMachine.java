package dev.berth.engine.microvm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;

/**
 * One QEMU {@code -machine microvm} process and its QMP connection. Knows nothing about workspaces: it boots or
 * restores a {@link VmSpec}, saves device state to a file, pauses, continues and quits.
 *
 * <p>Runtime files (all host-only, in the workspace runtime directory): {@code qmp.sock}, {@code agent.sock},
 * {@code qemu.pid}, and {@code console.log} only when
 * {@link MicrovmSettings#console()} ({@code -Dberth.microvm.console=true}) (off by default: the guest could fill the host disk through its serial port).
 * QEMU's own output is kept in memory, bounded ({@link BoundedLog}).
 */
final class QemuMachine implements AutoCloseable {

    static final String QMP_SOCK = "qmp.sock";
    static final String AGENT_SOCK = "agent.sock";
    static final String PID_FILE = "qemu.pid";
    static final String CONSOLE_FILE = "console.log";
    static final String DATA_DISK = "data.qcow2";
    /** unix socket paths are limited to 108 bytes including the terminator. */
    static final int MAX_SOCKET_PATH = 107;

    /** The QEMU process: our child when launched, a process a previous server left behind when adopted. */
    final ProcessHandle process;
    final QmpClient qmp;
    final Path runtimeDir;
    /** Whether this QEMU runs in its jail ({@link VmmJail}): files it must not write are then also given to root. */
    final boolean jailed;
    private final BoundedLog log;

    private QemuMachine(ProcessHandle process, QmpClient qmp, Path runtimeDir, boolean jailed, BoundedLog log) {
        this.process = process;
        this.jailed = jailed;
        this.qmp = qmp;
        this.runtimeDir = runtimeDir;
        this.log = log;
        qmp.onEvent(e -> {
            if ("MIGRATION".equals(e.path("event").asString(""))) {
                synchronized (migrationEvents) {
                    migrationEvents[0]++;
                    migrationEvents.notifyAll();
                }
            }
        });
    }

    /** MIGRATION events seen (QMP reader thread); {@link #awaitMigration} waits on it between its polls. */
    private final long[] migrationEvents = new long[1];

    /** The full QEMU command line for {@code spec}; {@code specDir} resolves the spec's relative paths. */
    static List<String> commandLine(MicrovmSettings settings, Accel accel, VmSpec spec, Path specDir, Path dataDisk, Path runtimeDir,
                                    boolean incoming) {
        return commandLine(settings, accel, spec, specDir, dataDisk, runtimeDir, incoming, false);
    }

    /** With {@code paused} a cold boot waits for {@code cont} ({@code -S}); an incoming machine always does. */
    static List<String> commandLine(MicrovmSettings settings, Accel accel, VmSpec spec, Path specDir, Path dataDisk, Path runtimeDir,
                                    boolean incoming, boolean paused) {
        List<String> a = new ArrayList<>();
        a.add(settings.qemu());
        a.add("-name"); a.add("berth");
        a.add("-machine"); a.add("microvm,memory-backend=mem");
        if (accel.kvm()) {
            a.add("-accel"); a.add("kvm");
            a.add("-cpu"); a.add("host");
        } else {
            // Several vCPUs on multi-threaded TCG were measured to hurt on these 2-core hosts: round-robin them.
            a.add("-accel"); a.add(spec.vcpus() > 1 ? "tcg,tb-size=256,thread=single" : "tcg,tb-size=256");
            a.add("-cpu"); a.add("max");
        }
        a.add("-smp"); a.add(Integer.toString(spec.vcpus()));
        a.add("-m"); a.add(spec.memoryMiB() + "M");
        a.add("-object"); a.add("memory-backend-file,id=mem,size=" + spec.memoryMiB() + "M,mem-path="
                + opt(specDir.resolve(spec.memPath()).toString()) + ",share=" + (spec.memShared() ? "on" : "off"));
        a.add("-nodefaults"); a.add("-no-user-config"); a.add("-display"); a.add("none"); a.add("-no-reboot");
        // seccomp for QEMU itself; spawn stays allowed because save/restore go through exec:cat (7.2 has no file:)
        a.add("-sandbox"); a.add("on,obsolete=deny,elevateprivileges=deny,resourcecontrol=deny");
        a.add("-kernel"); a.add(spec.kernel());
        a.add("-initrd"); a.add(spec.initramfs());
        StringBuilder cmdline = new StringBuilder("console=ttyS0 quiet panic=-1 init_on_free=" + (settings.initOnFree() ? 1 : 0));
        if (!accel.kvm() && accel.tscKhz() > 0) cmdline.append(" tsc_early_khz=").append(accel.tscKhz());
        cmdline.append(" berth.proxy_port=").append(spec.proxyPort());
        // the image's User: the guest's init hands it to the agent (--run-as), which runs every command as it
        if (spec.runAs() != null && spec.runAs().matches("[0-9]{1,10}:[0-9]{1,10}")) cmdline.append(" berth.run_as=").append(spec.runAs());
        // benchmarks only: the guest's init starts the agent without confined runs (run("true") before/after)
        if (settings.unsafeUnconfinedRuns()) cmdline.append(" berth.unsafe_unconfined_runs=1");
        a.add("-append"); a.add(cmdline.toString());
        if (settings.console()) {
            a.add("-serial"); a.add("file:" + runtimeDir.resolve(CONSOLE_FILE));
        } else {
            a.add("-serial"); a.add("null");
        }
        if (spec.baseDisk() != null) {
            a.add("-drive"); a.add("file=" + opt(spec.baseDisk()) + ",if=none,id=base,format=raw,readonly=on");
            a.add("-device"); a.add("virtio-blk-device,drive=base,serial=berth-base");
        }
        // auto-read-only=off: QEMU reopens a file by its name only when told to. A snapshot renames the overlay it
        // switched to (DiskLayers.freezeLive); with auto-read-only QEMU would reopen it by that stale name whenever its
        // permissions change (a save inactivates the disk) and fail
        a.add("-drive"); a.add("file=" + opt(dataDisk.toString()) + ",if=none,id=data,format=qcow2,discard=unmap,auto-read-only=off");
        a.add("-device"); a.add("virtio-blk-device,drive=data,serial=berth-data");
        a.add("-device"); a.add("virtio-serial-device,max_ports=2");
        a.add("-chardev"); a.add("socket,id=agent,path=" + opt(runtimeDir.resolve(AGENT_SOCK).toString()) + ",server=on,wait=off");
        a.add("-device"); a.add("virtserialport,chardev=agent,name=berth.agent");
        a.add("-qmp"); a.add("unix:" + opt(runtimeDir.resolve(QMP_SOCK).toString()) + ",server=on,wait=off");
        a.add("-pidfile"); a.add(runtimeDir.resolve(PID_FILE).toString());
        if (incoming || paused) a.add("-S");
        if (incoming) {
            a.add("-incoming"); a.add("defer");
        }
        return a;
    }

    /** Escapes a value for QEMU's comma-separated option syntax. */
    static String opt(String v) { return v.replace(",", ",,"); }

    /**
     * Starts QEMU and connects QMP. With {@code stateFile} the machine is restored from it (paused until
     * {@link #cont()}); without, it boots cold and runs.
     */
    static QemuMachine launch(MicrovmSettings settings, Accel accel, VmSpec spec, Path specDir, Path dataDisk, Path runtimeDir,
                              Path stateFile) throws IOException {
        return launch(settings, accel, spec, specDir, dataDisk, runtimeDir, stateFile, () -> { }, new Phases());
    }

    /** A check that must pass before QEMU loads anything it was given (it runs while QEMU starts). */
    @FunctionalInterface
    interface BeforeLoad {
        void check() throws IOException;
    }

    /**
     * Like {@link #launch(MicrovmSettings, Accel, VmSpec, Path, Path, Path, Path)}, calling {@code beforeLoad} once QEMU is up
     * and paused and before it loads the state: a failed check kills QEMU before it read a byte of the state.
     */
    static QemuMachine launch(MicrovmSettings settings, Accel accel, VmSpec spec, Path specDir, Path dataDisk, Path runtimeDir,
                              Path stateFile, BeforeLoad beforeLoad, Phases phases) throws IOException {
        Files.createDirectories(runtimeDir);
        for (String f : List.of(QMP_SOCK, AGENT_SOCK, PID_FILE)) Files.deleteIfExists(runtimeDir.resolve(f));
        for (String f : List.of(QMP_SOCK, AGENT_SOCK)) {
            if (runtimeDir.resolve(f).toAbsolutePath().toString().length() > MAX_SOCKET_PATH)
                throw new IOException("runtime directory path too long for a unix socket: " + runtimeDir);
        }
        if (stateFile != null && stateFile.toString().contains("'"))
            throw new IOException("state file path must not contain a quote: " + stateFile);
        boolean jailed = settings.jailed();
        // jailed, a cold boot also starts paused: the guest runs only once QEMU is in its cgroups (see below)
        List<String> cmd = commandLine(settings, accel, spec, specDir, dataDisk, runtimeDir, stateFile != null, jailed && stateFile == null);
        List<Path> cgroups = List.of();
        if (jailed) {
            boolean own = stateFile == null || stateFile.toAbsolutePath().startsWith(specDir.toAbsolutePath());
            VmmJail.Launch l = VmmJail.wrap(cmd, accel, spec, specDir, dataDisk, runtimeDir, own ? List.of() : List.of(stateFile));
            cmd = l.command();
            cgroups = l.cgroups();
        }
        phases.mark("jail set-up");
        ProcessBuilder pb = new ProcessBuilder(cmd)
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .redirectOutput(ProcessBuilder.Redirect.PIPE)
                .redirectErrorStream(true)
                .directory(runtimeDir.toFile());
        Process p = pb.start();
        // into its cgroups while it starts (each move waits for an RCU grace period); joined before the guest runs
        List<Path> groups = cgroups;
        java.util.concurrent.CompletableFuture<Void> inGroups = groups.isEmpty() ? java.util.concurrent.CompletableFuture.completedFuture(null)
                : java.util.concurrent.CompletableFuture.runAsync(() -> {
                    try {
                        VmmJail.join(p.pid(), groups);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }, r -> Thread.ofVirtual().name("qemu-cgroups").start(r));
        // QEMU's own messages can be provoked by the guest (device errors): keep only a bounded tail in memory.
        BoundedLog log = new BoundedLog();
        // a platform thread: a blocking read of a pipe holds a virtual thread's carrier for QEMU's whole life, and with
        // a few VMs running every carrier was held (a CI run hung: the audit writer and park's digest waiters, virtual
        // threads, never ran again)
        Thread.ofPlatform().daemon().name("qemu-log").start(() -> log.drain(p.getInputStream()));
        QmpClient qmp;
        try {
            qmp = connectQmp(p, runtimeDir);
        } catch (IOException e) {
            p.destroyForcibly();
            waitFor(p.toHandle(), 5000);
            inGroups.exceptionally(x -> null).join();
            throw new IOException(e.getMessage() + log.tail(), e);
        }
        QemuMachine m = new QemuMachine(p.toHandle(), qmp, runtimeDir, jailed, log);
        phases.mark("QEMU start to QMP");
        try {
            // events: QEMU says when a migration changes state, so a save or restore is seen done at once instead
            // of at the next poll (polls back off to 20 ms; a save here takes 10-30)
            qmp.execute("migrate-set-capabilities", Map.of("capabilities",
                    List.of(Map.of("capability", "x-ignore-shared", "state", true),
                            Map.of("capability", "events", "state", true))), Duration.ofSeconds(10));
            phases.mark("QMP set-up");
            try {
                inGroups.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw new IOException("QEMU could not be moved into its cgroups: " + e.getCause().getMessage(), e.getCause());
            }
            phases.mark("wait for the cgroups");
            if (jailed && stateFile == null) qmp.execute("cont"); // a cold boot, started paused for the cgroups above
            beforeLoad.check();
            phases.mark("wait for the manifest check");
            if (stateFile != null) {
                qmp.execute("migrate-incoming", Map.of("uri", "exec:cat '" + stateFile + "'"), Duration.ofSeconds(10));
                m.awaitMigration(Duration.ofSeconds(120));
                phases.mark("load device state");
            }
        } catch (IOException e) {
            m.kill();
            throw new IOException(e.getMessage() + log.tail(), e);
        }
        return m;
    }

    /**
     * The QEMU a previous server process left running in {@code runtimeDir}, with a new QMP connection, or empty when
     * there is none: no pid file, no such process, or a process that is not the QEMU of this runtime directory (a
     * recycled pid is never adopted, let alone killed). {@code jailed}: whether this driver jails the QEMUs it launches.
     */
    static java.util.Optional<QemuMachine> adopt(Path runtimeDir, boolean jailed) throws IOException {
        java.util.Optional<ProcessHandle> p = processOf(runtimeDir);
        if (p.isEmpty()) return java.util.Optional.empty();
        QmpClient qmp = QmpClient.connect(runtimeDir.resolve(QMP_SOCK), "berth", Duration.ofSeconds(20));
        return java.util.Optional.of(new QemuMachine(p.get(), qmp, runtimeDir, jailed, new BoundedLog()));
    }

    /** The live QEMU process whose pid file is in {@code runtimeDir} and whose command line names that directory. */
    static java.util.Optional<ProcessHandle> processOf(Path runtimeDir) {
        long pid;
        try {
            pid = Long.parseLong(Files.readString(runtimeDir.resolve(PID_FILE)).strip());
        } catch (IOException | NumberFormatException e) {
            return java.util.Optional.empty();
        }
        return ProcessHandle.of(pid).filter(ProcessHandle::isAlive).filter(h -> isOurQemu(pid, runtimeDir));
    }

    /** True only if {@code pid} is a QEMU whose command line names this runtime directory's QMP socket. */
    static boolean isOurQemu(long pid, Path runtimeDir) {
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
            String[] argv = new String(raw, java.nio.charset.StandardCharsets.UTF_8).split("\0");
            if (argv.length == 0 || !Path.of(argv[0]).getFileName().toString().startsWith("qemu-system")) return false;
            String qmpArg = "unix:" + opt(runtimeDir.resolve(QMP_SOCK).toString()) + ",server=on,wait=off";
            return List.of(argv).contains(qmpArg);
        } catch (IOException e) {
            return false;
        }
    }

    /** QEMU's run state ("running", "paused", "postmigrate", "inmigrate", ...). */
    String runState() throws IOException {
        JsonNode r = qmp.execute("query-status");
        return r == null ? "" : r.path("status").asString("");
    }

    private static QmpClient connectQmp(Process p, Path runtimeDir) throws IOException {
        Path sock = runtimeDir.resolve(QMP_SOCK);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(sock)) {
            if (!p.isAlive()) throw new IOException("QEMU exited at start (exit " + p.exitValue() + ")");
            if (System.nanoTime() > deadline) throw new IOException("QEMU did not create its QMP socket in 30 s");
            QmpClient.pollPause(2); // QEMU announces its socket nowhere; the file's existence is the check
        }
        return QmpClient.connect(sock, "berth", Duration.ofSeconds(20));
    }

    /** The last lines QEMU wrote (stdout + stderr), for error messages; empty when it wrote nothing. */
    String log() { return log.tail(); }

    /** Keeps the last {@link #CAPACITY} bytes of a stream; everything before is dropped. */
    static final class BoundedLog {
        static final int CAPACITY = 8192;
        private final byte[] ring = new byte[CAPACITY];
        private long written;

        void drain(java.io.InputStream in) {
            byte[] buf = new byte[4096];
            try (in) {
                int n;
                while ((n = in.read(buf)) > 0) append(buf, n);
            } catch (IOException ignored) { }
        }

        synchronized void append(byte[] b, int n) {
            for (int i = 0; i < n; i++) ring[(int) ((written + i) % CAPACITY)] = b[i];
            written += n;
        }

        synchronized String tail() {
            int len = (int) Math.min(written, CAPACITY);
            byte[] out = new byte[len];
            for (int i = 0; i < len; i++) out[i] = ring[(int) ((written - len + i) % CAPACITY)];
            String s = new String(out, java.nio.charset.StandardCharsets.UTF_8).strip();
            return s.isEmpty() ? "" : " [qemu: " + ImageBuilder.tail(s) + "]";
        }
    }

    /** Waits until the current (incoming or outgoing) migration completed; fails on "failed"/"cancelled". */
    void awaitMigration(Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleep = 1;
        while (true) {
            long seen;
            synchronized (migrationEvents) { seen = migrationEvents[0]; }
            JsonNode r = qmp.execute("query-migrate");
            String status = r == null ? "" : r.path("status").asString("");
            if (status.equals("completed")) return;
            if (status.equals("failed") || status.equals("cancelled"))
                throw new IOException("migration " + status + ": " + r.path("error-desc").asString("") + log());
            if (!process.isAlive()) throw new IOException("QEMU exited during migration");
            if (System.nanoTime() > deadline) throw new IOException("migration did not finish in " + timeout.toSeconds() + " s (" + status + ")");
            // until the next MIGRATION event (QEMU with the events capability) or the next poll, whichever is first:
            // a QEMU a previous server started may not send events
            synchronized (migrationEvents) {
                long until = System.nanoTime() + sleep * 1_000_000;
                try {
                    while (migrationEvents[0] == seen && System.nanoTime() < until) {
                        migrationEvents.wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while waiting for a migration");
                }
            }
            sleep = Math.min(sleep * 2, 20);
        }
    }

    /** Pauses the guest and writes its device state (and any RAM not in a shared file) to {@code file}. */
    void stopAndSave(Path file) throws IOException {
        stop();
        save(file);
    }

    /** Pauses the guest: from here its RAM file and disk do not change until {@link #cont}. */
    void stop() throws IOException { qmp.execute("stop"); }

    /** Writes the stopped guest's device state (and any RAM not in a shared file) to {@code file}. */
    void save(Path file) throws IOException {
        if (file.toString().contains("'")) throw new IOException("state file path must not contain a quote: " + file);
        // QEMU reports the migration completed once it has written everything into the pipe, not when cat has put it
        // in the file: a park that measured the file then recorded 0 bytes under load (MicrovmVerifiedResumeTest saw
        // "state is 62206 bytes, park wrote 0"). cat writes a partial name and the file appears, renamed, only whole.
        Path partial = file.resolveSibling(file.getFileName() + ".partial");
        Files.deleteIfExists(partial);
        Files.deleteIfExists(file);
        qmp.execute("migrate", Map.of("uri", "exec:cat > '" + partial + "' && mv '" + partial + "' '" + file + "'"), Duration.ofSeconds(30));
        awaitMigration(Duration.ofSeconds(300));
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!Files.exists(file)) {
            if (System.nanoTime() > deadline) {
                throw new IOException("QEMU's saved state never reached " + file + " (the writer left "
                        + (Files.exists(partial) ? Files.size(partial) + " bytes in " + partial : "nothing") + ")");
            }
            java.util.concurrent.locks.LockSupport.parkNanos(200_000); // cat and mv finish within milliseconds
        }
    }

    void cont() throws IOException { qmp.execute("cont"); }

    /** Asks QEMU to quit and waits for it; kills it if it does not exit within 10 s. */
    void quit() {
        try {
            qmp.execute("quit", null, Duration.ofSeconds(5));
        } catch (IOException ignored) {
            // QEMU may close the socket before answering
        }
        if (!waitFor(process, 10_000)) kill();
        qmp.close();
    }

    /**
     * {@link #quit} on a thread of its own: returns at once with a future of QEMU's exit (killed if it has not exited
     * within 10 s). For a park: the state is durable before, so QEMU's exit need not hold up the caller.
     */
    java.util.concurrent.CompletableFuture<Void> quitLater() {
        java.util.concurrent.CompletableFuture<Void> gone = new java.util.concurrent.CompletableFuture<>();
        // the command too: its answer waited for QEMU's main loop, 2-25 ms under load
        Thread.ofVirtual().name("qemu-quit").start(() -> {
            try {
                quit();
            } finally {
                gone.complete(null);
            }
        });
        return gone;
    }

    void kill() {
        qmp.close();
        process.destroyForcibly();
        waitFor(process, 10_000);
    }

    static boolean waitFor(ProcessHandle p, long ms) {
        try {
            p.onExit().get(ms, TimeUnit.MILLISECONDS);
            return true;
        } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
            return !p.isAlive();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !p.isAlive();
        }
    }

    @Override
    public void close() { kill(); }
}
