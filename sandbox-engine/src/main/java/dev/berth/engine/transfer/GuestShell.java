package dev.berth.engine.transfer;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.ExecExit;
import dev.berth.engine.agent.ExecHandle;
import dev.berth.engine.agent.ExecListener;
import dev.berth.engine.agent.ExecRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One command inside a workspace through its agent (EXEC), for the transfers: a script run by {@code sh -c}, its
 * standard input fed as a stream of STDIN frames (the agent's stream gives the back-pressure: a full pipe inside
 * stops the agent reading), its output kept up to a bound. What the workspace prints is data, never trusted: callers
 * parse it strictly. Not thread-safe; one per command.
 */
final class GuestShell {
    /** Largest STDIN frame payload (below the protocol's MAX_PAYLOAD). */
    static final int CHUNK = 512 * 1024;
    private static final int KEEP = 1 << 20;
    static final List<String> ENV = List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
            "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1",
            "GIT_AUTHOR_NAME=Berth", "GIT_AUTHOR_EMAIL=berth@localhost", "GIT_COMMITTER_NAME=Berth", "GIT_COMMITTER_EMAIL=berth@localhost");

    /** How the command ended and what it printed (each stream's first {@code KEEP} bytes). */
    record Done(int exit, byte[] stdout, String stderr) {
        String out() { return new String(stdout, StandardCharsets.UTF_8).trim(); }
    }

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final ExecHandle handle;

    private GuestShell(AgentClient agent, String script, List<String> env, boolean stdin, long timeoutMs) throws IOException {
        List<String> e = new java.util.ArrayList<>(ENV);
        e.addAll(env);
        this.handle = agent.exec(new ExecRequest(List.of("/bin/sh", "-c", script), e, "/", timeoutMs, stdin), new ExecListener() {
            @Override public void onStdout(byte[] d) { keep(out, d); }
            @Override public void onStderr(byte[] d) { keep(err, d); }
        });
    }

    private static void keep(ByteArrayOutputStream b, byte[] d) {
        synchronized (b) {
            if (b.size() < KEEP) b.write(d, 0, Math.min(d.length, KEEP - b.size()));
        }
    }

    /** Runs {@code script} with no input and waits for it. */
    static Done run(AgentClient agent, String script, List<String> env, long timeoutMs) throws IOException {
        GuestShell s = new GuestShell(agent, script, env, false, timeoutMs);
        return s.await(timeoutMs);
    }

    /** Starts {@code script} with its standard input open; write to {@link #stdin()}, then {@link #finish}. */
    static GuestShell withInput(AgentClient agent, String script, List<String> env, long timeoutMs) throws IOException {
        return new GuestShell(agent, script, env, true, timeoutMs);
    }

    /** The command's standard input as a stream: each flush (or full buffer) is one STDIN frame. */
    OutputStream stdin() {
        return new java.io.BufferedOutputStream(new OutputStream() {
            @Override public void write(int b) throws IOException { write(new byte[] {(byte) b}, 0, 1); }
            @Override public void write(byte[] b, int off, int len) throws IOException {
                while (len > 0) {
                    int n = Math.min(len, CHUNK);
                    handle.writeStdin(java.util.Arrays.copyOfRange(b, off, off + n));
                    off += n;
                    len -= n;
                }
            }
        }, CHUNK);
    }

    /** Closes standard input and waits for the command to end. */
    Done finish(long timeoutMs) throws IOException {
        handle.closeStdin();
        return await(timeoutMs);
    }

    /** Stops the command (its whole process tree) after a failure on the host's side. */
    void kill() {
        try {
            handle.signal(9);
        } catch (IOException ignored) {
            // the connection is gone: so is the command's input, and it ends on its own
        }
    }

    private Done await(long timeoutMs) throws IOException {
        ExecExit x;
        try {
            x = handle.exit().get(timeoutMs + 5_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            kill();
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while waiting for the workspace");
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } catch (TimeoutException e) {
            kill();
            throw new IOException("the workspace did not finish within " + timeoutMs / 1000 + " s");
        }
        byte[] o;
        String es;
        synchronized (out) { o = out.toByteArray(); }
        synchronized (err) { es = err.toString(StandardCharsets.UTF_8).trim(); }
        if (es.length() > 2000) es = es.substring(0, 2000) + "...";
        int code = x.termSignal() != 0 ? 128 + x.termSignal() : x.exitCode();
        if (x.timedOut()) code = 124;
        return new Done(code, o, es);
    }
}
