package dev.berth.engine.testing;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Relays BAP frames ({@code tool-schemas/agent-protocol.md}) between the host's {@code AgentClient} and a guest agent
 * that runs as a plain host process, so that the sandbox's paths land in a test directory: {@code /workspace} and
 * {@code /root} in EXEC's cwd and {@code HOME}, and in FILE_READ, FILE_WRITE and FILE_LIST, are rewritten to
 * directories under the workspace's state directory, and back in ERROR messages. File requests outside those two
 * roots are refused (the agent would otherwise read and write the host's files). The guest operations that reach
 * the whole machine (SYNC, CLOCK_SET, RNG_SEED) are answered here and never reach the agent: on a host, as root, they
 * would sync every filesystem, set the host's clock and credit its RNG.
 *
 * <p>Shell commands themselves are not rewritten: a command naming {@code /workspace/...} reaches the host's
 * {@code /workspace}; tests use paths relative to their working directory. Two virtual threads, one per direction;
 * frames the relay answers itself are written under the host side's lock, so frames never interleave. Owns both
 * channels: {@link #close} closes them.
 */
final class PathMappingRelay implements AutoCloseable {
    private static final int OK = 0x05;
    private static final int ERROR = 0x04;
    private static final int EXEC = 0x10;
    private static final int FILE_READ = 0x20;
    private static final int FILE_WRITE = 0x21;
    private static final int FILE_LIST = 0x22;
    private static final int SYNC = 0x30;
    private static final int CLOCK_SET = 0x31;
    private static final int RNG_SEED = 0x32;
    private static final int EACCES = 13;
    private static final int MAX_FRAME = 1048576 + 5;

    private final SocketChannel host;
    private final SocketChannel agent;
    /** Guest root (no trailing slash) to host directory, longest first. */
    private final Map<String, Path> roots;
    private final OutputStream toHost;
    private final OutputStream toAgent;

    PathMappingRelay(SocketChannel host, SocketChannel agent, Path workspace, Path home) {
        this.host = host;
        this.agent = agent;
        this.roots = Map.of("/workspace", workspace.toAbsolutePath(), "/root", home.toAbsolutePath());
        this.toHost = Channels.newOutputStream(host);
        this.toAgent = Channels.newOutputStream(agent);
        Thread.ofVirtual().name("host-process-relay-out").start(() -> pump(Channels.newInputStream(host), true));
        Thread.ofVirtual().name("host-process-relay-in").start(() -> pump(Channels.newInputStream(agent), false));
    }

    private void pump(InputStream in, boolean fromHost) {
        DataInputStream d = new DataInputStream(in);
        try {
            for (;;) {
                int len = d.readInt();
                if (len < 5 || len > MAX_FRAME) throw new IOException("bad frame length " + len);
                byte[] frame = new byte[len];
                d.readFully(frame);
                if (fromHost) fromHost(frame);
                else send(toHost, unmapError(frame));
            }
        } catch (EOFException e) {
            close();
        } catch (IOException | RuntimeException e) {
            close();
        }
    }

    private void fromHost(byte[] frame) throws IOException {
        int type = frame[0] & 0xff;
        ByteBuffer b = ByteBuffer.wrap(frame);
        int chan = b.getInt(1);
        switch (type) {
            case SYNC, CLOCK_SET -> send(toHost, frame(OK, chan, new byte[0]));
            case RNG_SEED -> send(toHost, frame(OK, chan, new byte[] {0}));
            case EXEC -> send(toAgent, mapExec(frame, chan));
            case FILE_READ, FILE_WRITE, FILE_LIST -> {
                b.position(5);
                String path = str(b);
                String mapped = map(path);
                if (mapped == null) {
                    send(toHost, error(chan, EACCES, "the host-process test driver keeps files under /workspace and /root"
                            + " only, not " + path));
                    return;
                }
                ByteBuffer out = ByteBuffer.allocate(frame.length + mapped.getBytes(StandardCharsets.UTF_8).length);
                out.put(frame, 0, 5);
                putStr(out, mapped);
                out.put(frame, b.position(), frame.length - b.position());
                send(toAgent, java.util.Arrays.copyOf(out.array(), out.position()));
            }
            default -> send(toAgent, frame);
        }
    }

    /** EXEC: u32 flags, u32 timeout_ms, str cwd, strlist argv, strlist env. */
    private byte[] mapExec(byte[] frame, int chan) {
        ByteBuffer b = ByteBuffer.wrap(frame);
        b.position(5);
        int flags = b.getInt();
        int timeout = b.getInt();
        String cwd = str(b);
        List<String> argv = strList(b);
        List<String> env = new ArrayList<>();
        for (String e : strList(b)) env.add(e.startsWith("HOME=") && map(e.substring(5)) != null ? "HOME=" + map(e.substring(5)) : e);
        String mappedCwd = map(cwd);
        ByteBuffer out = ByteBuffer.allocate(frame.length + 8192);
        out.put(frame, 0, 5).putInt(flags).putInt(timeout);
        putStr(out, mappedCwd == null ? cwd : mappedCwd);
        out.putInt(argv.size());
        for (String a : argv) putStr(out, a);
        out.putInt(env.size());
        for (String e : env) putStr(out, e);
        return java.util.Arrays.copyOf(out.array(), out.position());
    }

    /** The host path of a guest path under a mapped root, or null when it is under none. */
    String map(String guestPath) {
        for (var r : roots.entrySet()) {
            String root = r.getKey();
            if (guestPath.equals(root)) return r.getValue().toString();
            if (guestPath.startsWith(root + "/")) return r.getValue() + guestPath.substring(root.length());
        }
        return null;
    }

    private byte[] unmapError(byte[] frame) {
        if ((frame[0] & 0xff) != ERROR) return frame;
        ByteBuffer b = ByteBuffer.wrap(frame);
        int chan = b.getInt(1);
        b.position(5);
        int code = b.getInt();
        String msg = str(b);
        for (var r : roots.entrySet()) msg = msg.replace(r.getValue().toString(), r.getKey());
        return error(chan, code, msg);
    }

    private static byte[] error(int chan, int code, String message) {
        byte[] m = message.getBytes(StandardCharsets.UTF_8);
        return frame(ERROR, chan, ByteBuffer.allocate(8 + m.length).putInt(code).putInt(m.length).put(m).array());
    }

    private static byte[] frame(int type, int chan, byte[] payload) {
        return ByteBuffer.allocate(5 + payload.length).put((byte) type).putInt(chan).put(payload).array();
    }

    private static String str(ByteBuffer b) {
        byte[] s = new byte[b.getInt()];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private static List<String> strList(ByteBuffer b) {
        int n = b.getInt();
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) out.add(str(b));
        return out;
    }

    private static void putStr(ByteBuffer b, String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        b.putInt(bytes.length).put(bytes);
    }

    private static void send(OutputStream out, byte[] frame) throws IOException {
        synchronized (out) {
            out.write(ByteBuffer.allocate(4 + frame.length).putInt(frame.length).put(frame).array());
            out.flush();
        }
    }

    @Override
    public void close() {
        try {
            host.close();
        } catch (IOException ignored) {
            // closing is all that is left to do
        }
        try {
            agent.close();
        } catch (IOException ignored) {
            // idem
        }
    }
}
