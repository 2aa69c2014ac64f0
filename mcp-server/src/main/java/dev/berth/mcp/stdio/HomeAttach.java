package dev.berth.mcp.stdio;

import dev.berth.engine.api.HomeOwnedException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/**
 * The attaching side of "one home, many clients": a {@code berth stdio} that found its home owned by a live Berth
 * process pipes its client's bytes to the owner's {@link HomeSocket} and back, touching nothing in the home itself.
 * It ends when its client closes stdin (the owner then ends that session) or when the owner goes away (it says so on
 * stderr; the next {@code berth stdio} becomes the owner and takes over cleanly).
 */
public final class HomeAttach {
    private HomeAttach() {}

    /** Pipes until one side ends; returns the process exit code. */
    public static int pipe(HomeOwnedException owned, InputStream stdin, OutputStream stdout) {
        Path sock = owned.home().resolve(HomeSocket.FILE);
        String owner = owned.ownerPid() == null ? "another Berth process" : "Berth process " + owned.ownerPid();
        SocketChannel ch;
        try {
            ch = SocketChannel.open(UnixDomainSocketAddress.of(sock));
        } catch (IOException | RuntimeException e) {
            System.err.println("berth: home " + owned.home() + " is owned by " + owner + ", and its socket " + sock
                    + " does not answer (" + e.getMessage() + "); stop that process or use another --home");
            return 1;
        }
        System.err.println("berth: home " + owned.home() + " is owned by " + owner + "; serving this client through it");
        Thread up = Thread.ofPlatform().daemon().name("berth-attach-up").start(() -> {
            byte[] buf = new byte[64 * 1024];
            try {
                int n;
                while ((n = stdin.read(buf)) > 0) {
                    ByteBuffer b = ByteBuffer.wrap(buf, 0, n);
                    while (b.hasRemaining()) ch.write(b);
                }
                ch.shutdownOutput(); // our client is done: the owner ends this session
            } catch (IOException ignored) {
                // the owner went away; the down direction reports it
            }
        });
        try {
            ByteBuffer b = ByteBuffer.allocate(64 * 1024);
            while (ch.read(b) > 0) {
                stdout.write(b.array(), 0, b.position());
                stdout.flush();
                b.clear();
            }
        } catch (IOException ignored) {
            // the owner closed the connection
        }
        boolean clientDone = !up.isAlive();
        try { ch.close(); } catch (IOException ignored) { }
        if (!clientDone) {
            System.err.println("berth: " + owner + ", which owns home " + owned.home() + ", stopped; start berth stdio again"
                    + " to take the home over");
            return 1;
        }
        return 0;
    }
}
