package dev.berth.engine.agent;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/** Host-side state of one EXEC channel: STARTED/ERROR resolve {@link #started}, EXIT resolves {@link #exit()}. */
final class ExecChannel implements ExecHandle {
    private final AgentClient client;
    private final int chan;
    private final ExecListener listener;
    final CompletableFuture<Integer> started = new CompletableFuture<>();
    private final CompletableFuture<ExecExit> exit = new CompletableFuture<>();
    private final boolean stdinOpen;
    private volatile boolean stdinClosed;
    /** The run's agent name: known at EXEC from the session tag, or given to ATTACH. */
    private final String run;
    /** Whether this channel took over a run by ATTACH (answered by ATTACHED instead of STARTED). */
    private final boolean attach;
    private volatile long dropped;
    /** On a terminal (EXEC_TTY): input is typed, end of input is ^D (the terminal stays), RESIZE applies. */
    private final boolean tty;

    ExecChannel(AgentClient client, int chan, ExecListener listener, boolean stdinOpen, String run, boolean attach, boolean tty) {
        this.tty = tty;
        this.client = client;
        this.chan = chan;
        this.listener = listener;
        this.stdinOpen = stdinOpen;
        this.run = run;
        this.attach = attach;
    }

    /** Handles one frame on this channel (reader thread). Returns true when it was the final frame. */
    boolean onFrame(Frame f) throws ProtocolException {
        PayloadReader r = new PayloadReader(f);
        switch (f.type()) {
            case Protocol.STARTED, Protocol.ATTACHED -> {
                if ((f.type() == Protocol.ATTACHED) != attach) throw new ProtocolException("unexpected " + f + " on exec channel " + chan);
                int pid = r.i32();
                if (attach) {
                    long d = r.i64();
                    if (d < 0) throw new ProtocolException("ATTACHED with " + Long.toUnsignedString(d) + " dropped bytes");
                    dropped = d;
                }
                r.end();
                if (started.isDone()) throw new ProtocolException("second " + f + " on channel " + chan);
                try {
                    listener.onStarted(chan);
                } catch (RuntimeException e) {
                    System.getLogger(ExecChannel.class.getName()).log(System.Logger.Level.WARNING, "exec listener failed on STARTED", e);
                }
                started.complete(pid);
                return false;
            }
            case Protocol.STDOUT -> { requireStarted(f); listener.onStdout(r.rest()); return false; }
            case Protocol.STDERR -> { requireStarted(f); listener.onStderr(r.rest()); return false; }
            case Protocol.EXIT -> {
                requireStarted(f);
                int code = r.i32();
                int sig = r.i32();
                int timedOut = r.u8();
                ExecExit e = client.exitLeft() ? withLeft(r, code, sig, timedOut != 0) : new ExecExit(code, sig, timedOut != 0);
                r.end();
                exit.complete(e);
                return true;
            }
            case Protocol.ERROR -> {
                AgentException e = AgentClient.errorOf(f, "EXEC");
                if (!started.completeExceptionally(e)) exit.completeExceptionally(e);
                return true;
            }
            default -> throw new ProtocolException("unexpected " + f + " on exec channel " + chan);
        }
    }

    /** EXIT's CAP_EXIT_LEFT tail: u32 total, u32 listed, listed x (u32 pid, str command). */
    private static ExecExit withLeft(PayloadReader r, int code, int sig, boolean timedOut) throws ProtocolException {
        int total = r.i32();
        int listed = r.i32();
        if (listed < 0 || listed > Protocol.LEFT_LISTED || total < listed) {
            throw new ProtocolException("EXIT lists " + Integer.toUnsignedString(listed) + " of " + Integer.toUnsignedString(total) + " processes left");
        }
        var left = new java.util.ArrayList<ExecExit.LeftProcess>(listed);
        for (int i = 0; i < listed; i++) {
            int pid = r.i32();
            String cmd = r.str();
            if (pid <= 0 || cmd.length() > Protocol.LEFT_COMMAND) throw new ProtocolException("EXIT lists a left process with pid " + pid + " and a " + cmd.length() + "-character command");
            left.add(new ExecExit.LeftProcess(pid, cmd));
        }
        return new ExecExit(code, sig, timedOut, left, total);
    }

    private void requireStarted(Frame f) throws ProtocolException {
        if (!started.isDone()) throw new ProtocolException(f + " before STARTED");
    }

    void fail(AgentException e) {
        started.completeExceptionally(e);
        exit.completeExceptionally(e);
    }

    @Override
    public int pid() { return started.join(); }

    @Override
    public int channel() { return chan; }

    @Override
    public String run() { return run; }

    @Override
    public long droppedWhileDetached() { return dropped; }

    @Override
    public void writeStdin(byte[] data) throws IOException {
        // the agent would drop these bytes silently; a caller bug should be loud
        if (!stdinOpen || (attach && !tty)) throw new IllegalStateException("channel " + chan + " was started without stdinOpen; its stdin is /dev/null");
        if (stdinClosed) throw new IllegalStateException("stdin of channel " + chan + " is already closed");
        // an empty STDIN frame means "close", so empty writes are simply not sent; large ones are split
        for (int off = 0; off < data.length; off += Protocol.MAX_PAYLOAD) {
            int n = Math.min(Protocol.MAX_PAYLOAD, data.length - off);
            client.send(Protocol.STDIN, chan, data, off, n);
        }
    }

    @Override
    public void closeStdin() throws IOException {
        if (stdinClosed) return;
        stdinClosed = !tty; // on a terminal the agent types ^D: more input may follow
        client.send(Protocol.STDIN, chan, new byte[0], 0, 0);
    }

    @Override
    public void signal(int signo) throws IOException {
        if (signo < 1 || signo > 64) throw new IllegalArgumentException("signal number out of range 1..64: " + signo);
        client.send(Protocol.SIGNAL, chan, new PayloadWriter().u32(signo).toBytes(), 0, 4);
    }

    @Override
    public void resize(int cols, int rows) throws IOException {
        if (!tty) throw new IllegalStateException("channel " + chan + " has no terminal to resize");
        if (cols < 1 || rows < 1 || cols > Protocol.TTY_MAX || rows > Protocol.TTY_MAX) {
            throw new IllegalArgumentException("terminal size " + cols + "x" + rows + " is outside 1.." + Protocol.TTY_MAX);
        }
        client.send(Protocol.RESIZE, chan, new PayloadWriter().u16(cols).u16(rows).toBytes(), 0, 4);
    }

    @Override
    public CompletableFuture<ExecExit> exit() { return exit; }
}
