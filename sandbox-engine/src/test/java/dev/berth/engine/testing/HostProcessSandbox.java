package dev.berth.engine.testing;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One sandbox of the {@link HostProcessDriver}: the real guest agent as a plain host process (NO isolation), its
 * {@code /workspace} and {@code /root} directories of the workspace's state directory. Park stops the process and
 * keeps the directory (memory is not kept); a snapshot copies the directory. Lifecycle calls are serialised by the
 * engine; {@link #agent()} is thread-safe.
 */
final class HostProcessSandbox implements Sandbox {
    private final Process process;
    private final AgentClient agent;
    private final PathMappingRelay relay;
    private final Path stateDir;
    private final Path runtimeDir;
    private final HostProcessDriver driver;

    HostProcessSandbox(Process process, AgentClient agent, PathMappingRelay relay, Path stateDir, Path runtimeDir,
                       HostProcessDriver driver) {
        this.process = process;
        this.agent = agent;
        this.relay = relay;
        this.stateDir = stateDir;
        this.runtimeDir = runtimeDir;
        this.driver = driver;
    }

    @Override
    public AgentClient agent() { return agent; }

    @Override
    public long hostPid() { return process.pid(); }

    @Override
    public ParkOutcome park() {
        long t0 = System.nanoTime();
        destroy();
        return new ParkOutcome(false, Trees.bytes(stateDir), (System.nanoTime() - t0) / 1_000_000);
    }

    @Override
    public ParkOutcome snapshot(Path snapshotStateDir) throws SandboxException {
        long t0 = System.nanoTime();
        try {
            HostProcessDriver.copyTree(stateDir, snapshotStateDir);
        } catch (IOException e) {
            throw new SandboxException("copying the workspace files failed: " + e.getMessage(), e);
        }
        return new ParkOutcome(false, Trees.bytes(snapshotStateDir), (System.nanoTime() - t0) / 1_000_000);
    }

    @Override
    public void destroy() {
        agent.close();
        relay.close();
        kill(process.toHandle());
        driver.forget(this);
        try {
            Files.deleteIfExists(runtimeDir.resolve(HostProcessDriver.PID_FILE));
        } catch (IOException ignored) {
            // the engine deletes the runtime directory next
        }
    }

    @Override
    public boolean isAlive() { return process.isAlive(); }

    /**
     * Kills the agent and everything below it: the agent is a child subreaper, so the orphans of its runs are still
     * its descendants. The tree is listed before anything dies, so nothing is reparented out of reach.
     */
    static void kill(ProcessHandle agent) {
        List<ProcessHandle> tree = agent.descendants().toList();
        agent.destroyForcibly();
        tree.forEach(ProcessHandle::destroyForcibly);
        try {
            agent.onExit().get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            if (e instanceof InterruptedException) Thread.currentThread().interrupt();
        }
    }
}
