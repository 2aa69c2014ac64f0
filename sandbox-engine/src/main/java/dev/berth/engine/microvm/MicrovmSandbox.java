package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** One running microVM. Lifecycle calls are serialised by the engine; {@link #agent()} may be used concurrently. */
final class MicrovmSandbox implements Sandbox {

    private final String workspaceId;
    private final Path stateDir;
    private final Path runtimeDir;
    volatile VmSpec spec;
    private final QemuMachine machine;
    private final AgentClient agent;
    private volatile boolean stopped;

    MicrovmSandbox(String workspaceId, Path stateDir, Path runtimeDir, VmSpec spec, QemuMachine machine, AgentClient agent) {
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

    @Override
    public ParkOutcome park() throws SandboxException {
        requireRunning("park");
        long t0 = System.nanoTime();
        try {
            agent.close();
            Path tmp = stateDir.resolve("state.tmp");
            Files.deleteIfExists(tmp);
            machine.stopAndSave(tmp);
            machine.quit();
            stopped = true;
            // Durable before we call it parked: the RAM file (share=on) and the device state. Zero pages (most of
            // them: the guest runs with init_on_free=1) become holes first, so the parked RAM file is small.
            if (spec.memShared()) {
                Path ram = stateDir.resolve(spec.memPath());
                try {
                    ImageBuilder.run(List.of("fallocate", "--dig-holes", ram.toString()), 120);
                } catch (IOException e) {
                    // not every filesystem can punch holes; the file is then just larger
                }
                VmSpec.fsync(ram);
            }
            VmSpec.fsync(tmp);
            Files.move(tmp, stateDir.resolve("state"), java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            VmSpec parked = spec.withState("state");
            parked.write(stateDir.resolve(VmSpec.WORKSPACE_FILE));
            spec = parked;
            long millis = (System.nanoTime() - t0) / 1_000_000;
            cleanRuntime();
            return new ParkOutcome(true, stateBytes(stateDir, spec), millis);
        } catch (IOException e) {
            destroy();
            throw new SandboxException("microvm " + workspaceId + ": park failed, the machine was stopped and its memory lost"
                    + " (files on its disk are kept): " + e.getMessage(), e);
        }
    }

    @Override
    public ParkOutcome snapshot(Path snapshotStateDir) throws SandboxException {
        requireRunning("snapshot");
        long t0 = System.nanoTime();
        try {
            Files.createDirectories(snapshotStateDir);
            // a jailed QEMU sees only its own directories: it writes the state there, and the host moves it
            Path saved = stateDir.resolve(".snapshot-state");
            machine.stopAndSave(saved);
            Files.move(saved, snapshotStateDir.resolve("state"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            try {
                MicrovmDriver.writeSnapshot(spec, stateDir, snapshotStateDir);
            } finally {
                machine.cont();
            }
            long millis = (System.nanoTime() - t0) / 1_000_000;
            VmSpec snap = VmSpec.read(snapshotStateDir.resolve(VmSpec.SNAPSHOT_FILE));
            return new ParkOutcome(true, stateBytes(snapshotStateDir, snap), millis);
        } catch (IOException e) {
            throw new SandboxException("microvm " + workspaceId + ": snapshot failed: " + e.getMessage(), e);
        }
    }

    /** State file + disk layer + RAM file, when that file belongs to {@code dir}. */
    static long stateBytes(Path dir, VmSpec s) {
        Path ram = dir.resolve(s.memPath());
        List<Path> files = new java.util.ArrayList<>(List.of(dir.resolve("state"), dir.resolve(QemuMachine.DATA_DISK)));
        if (ram.toAbsolutePath().normalize().startsWith(dir.toAbsolutePath().normalize())) files.add(ram);
        return MicrovmDriver.allocatedBytes(files);
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
        return VmmJail.limits(VmmJail.key(runtimeDir), spec, diskMiB, dev.berth.engine.spi.Resources.DEFAULT.maxPids());
    }

    private volatile int diskMiB = -1;

    private int diskMiB() {
        try {
            String out = new String(new ProcessBuilder("qemu-img", "info", "-U", "--output=json", stateDir.resolve(QemuMachine.DATA_DISK).toString())
                    .redirectErrorStream(true).start().getInputStream().readAllBytes());
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
