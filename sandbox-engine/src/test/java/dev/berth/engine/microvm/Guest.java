package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.ExecExit;
import dev.berth.engine.agent.ExecHandle;
import dev.berth.engine.agent.ExecListener;
import dev.berth.engine.agent.ExecRequest;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Test helper: runs a command through the guest agent and collects its output. */
final class Guest {
    static final List<String> ENV = List.of("PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root");

    record Result(ExecExit exit, String out, String err) {
        int code() { return exit.exitCode(); }
    }

    static Result sh(AgentClient agent, String script) throws Exception { return run(agent, 0, "/bin/sh", "-c", script); }

    /**
     * Starts a shell script as a run of its own and returns at once: a long-lived process must be one (a process
     * backgrounded with {@code &} ends with the run that started it).
     */
    static ExecHandle start(AgentClient agent, String script) throws Exception {
        return agent.exec(new ExecRequest(List.of("/bin/sh", "-c", script), ENV, "/", 0, false), new ExecListener() {
            @Override public void onStdout(byte[] d) { }
            @Override public void onStderr(byte[] d) { }
        });
    }

    static Result run(AgentClient agent, long timeoutMs, String... argv) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        ExecHandle h = agent.exec(new ExecRequest(List.of(argv), ENV, "/", timeoutMs, false), new ExecListener() {
            @Override public void onStdout(byte[] d) { synchronized (out) { out.writeBytes(d); } }
            @Override public void onStderr(byte[] d) { synchronized (err) { err.writeBytes(d); } }
        });
        ExecExit exit = h.exit().get(120, TimeUnit.SECONDS);
        synchronized (out) {
            synchronized (err) {
                return new Result(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
            }
        }
    }
}
