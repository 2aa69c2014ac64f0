package dev.berth.engine.microvm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Test helper: a guest whose "agent" is a busybox shell on the virtio-serial port, so QEMU mechanics (boot, save,
 * restore, fork) can be tested without the real agent. Each command is followed by an end marker.
 */
final class ShellGuest implements AutoCloseable {

    /** Stands in for /sbin/berth-agent: runs a shell on the port (a virtio port opens only once); after a host disconnect (EOF) it waits and reopens. */
    static final byte[] SHELL_AGENT = """
            #!/bin/sh
            exec 3<>"$2"
            while true; do /bin/sh <&3 >&3 2>&3; sleep 0.05; done
            """.getBytes(StandardCharsets.UTF_8);

    private final SocketChannel ch;
    private int seq;

    private ShellGuest(SocketChannel ch) { this.ch = ch; }

    static ShellGuest connect(Path agentSock, Duration timeout) throws IOException {
        ShellGuest g = new ShellGuest(SocketChannel.open(UnixDomainSocketAddress.of(agentSock)));
        long deadline = System.nanoTime() + timeout.toNanos();
        // The shell may not be reading yet (guest still booting): repeat a marker until one comes back.
        while (true) {
            try {
                g.run("true", Duration.ofSeconds(2));
                return g;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) { g.close(); throw e; }
            }
        }
    }

    /** Runs {@code cmd} in the guest shell and returns its output. */
    String run(String cmd, Duration timeout) throws IOException {
        String marker = "__END" + (++seq) + "__";
        ByteBuffer req = ByteBuffer.wrap((cmd + "\necho " + marker + "\n").getBytes(StandardCharsets.UTF_8));
        while (req.hasRemaining()) ch.write(req);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ch.configureBlocking(false);
        try (var sel = java.nio.channels.Selector.open()) {
            ch.register(sel, java.nio.channels.SelectionKey.OP_READ);
            long deadline = System.nanoTime() + timeout.toNanos();
            ByteBuffer buf = ByteBuffer.allocate(8192);
            while (true) {
                String s = out.toString(StandardCharsets.UTF_8);
                int i = s.indexOf(marker + "\n");
                if (i >= 0) return s.substring(0, i);
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) throw new IOException("no answer to " + cmd + " (got: " + s + ")");
                sel.select(left);
                sel.selectedKeys().clear();
                buf.clear();
                int n = ch.read(buf);
                if (n < 0) throw new IOException("guest closed the port");
                out.write(buf.array(), 0, n);
                if (out.size() > 1 << 20) throw new IOException("too much output");
            }
        }
    }

    @Override
    public void close() throws IOException { ch.close(); }
}
