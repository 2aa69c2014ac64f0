package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.ExecListener;
import dev.berth.engine.agent.ExecRequest;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The last phase of every start: the guest agent's HELLO, then the host-side settings (clock, run limits, disk
 * throttling) and, for a fork, the guest CRNG's reseed; the result is a {@link MicrovmSandbox}. Thread-safe.
 */
final class GuestLink {
    private final VmHome home;
    private final SecureRandom random = new SecureRandom();

    GuestLink(VmHome home) { this.home = home; }

    MicrovmSandbox connect(StartRequest req, VmSpec spec, QemuMachine m, boolean restored, boolean forked) throws IOException {
        return connect(req, spec, m, restored, forked, new Phases());
    }

    MicrovmSandbox connect(StartRequest req, VmSpec spec, QemuMachine m, boolean restored, boolean forked, Phases phases)
            throws IOException {
        AgentClient agent;
        GuestRunLimits runLimits;
        List<Limit> io;
        // disk throttling is QEMU's alone: it is set while the agent's HELLO is under way
        var throttle = CompletableFuture.supplyAsync(
                () -> DiskThrottle.apply(m, req.stateDir(), req.resources().io()), home.tasks().settings);
        try {
            agent = connectAgent(m, home.settings().agentTimeout());
            phases.mark("agent HELLO");
            // The host-side settings after HELLO are independent round trips (the run limits and the clock to the
            // agent; the throttling to QEMU started before HELLO): sent together they cost the slowest of them, not
            // the sum (each was 5-25 ms under TCG). The reseed of a fork stays on this thread; all are done before the
            // sandbox exists.
            AgentClient a = agent;
            var limits = CompletableFuture.supplyAsync(
                    () -> GuestRunLimits.apply(a, req.resources().maxPids()), home.tasks().settings);
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
        return new MicrovmSandbox(home, req.workspaceId(), req.stateDir(), req.runtimeDir(), spec, m, agent, runLimits, io);
    }

    /**
     * Forces the guest CRNG to reseed from the pool the host seed went into (see images/berth-reseed.c): without it,
     * forks of one snapshot return the same /dev/urandom bytes until the kernel's next timed reseed.
     */
    static void reseed(AgentClient agent) throws IOException {
        try {
            var h = agent.exec(new ExecRequest(List.of("/sbin/berth-reseed"), List.of(), "/", 10_000, false),
                    new ExecListener() {
                        @Override public void onStdout(byte[] d) { }
                        @Override public void onStderr(byte[] d) { }
                    });
            var exit = h.exit().get(15, TimeUnit.SECONDS);
            if (exit.exitCode() != 0 || exit.termSignal() != 0)
                throw new IOException("guest CRNG reseed failed (" + exit + "): the fork would share random numbers with its siblings");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted during guest reseed");
        } catch (ExecutionException | TimeoutException e) {
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
}
