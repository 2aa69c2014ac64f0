package dev.berth.engine.namespace;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A static HTTPS server (Python's {@code http.server}, with the certificate and key it is given) in a network namespace this fixture creates, reached from the
 * host over a veth pair with addresses in the benchmarking range 198.18.0.0/15: an upstream on this machine that is
 * not loopback, so the egress proxy's address rules apply to it as to an internal mirror on a private network (a
 * named host may reach it only through {@code internal_hosts}). Files without an extension are served as JSON (a
 * PyPI JSON API laid out as files). Needs root and {@code ip}; {@link #missing()} says why not. Closing it stops the
 * server and removes the namespace and the pair. Not thread-safe.
 */
final class NetnsHttpServer implements AutoCloseable {
    static final int PORT = 8443;
    /** The handler: http.server's with extension-less files typed as JSON, quiet, bound to the namespace's address. */
    private static final String SERVER = "import http.server,functools,ssl,sys\n"
            + "class H(http.server.SimpleHTTPRequestHandler):\n"
            + "    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, '': 'application/json'}\n"
            + "    def log_message(self, *a): sys.stderr.write(self.requestline + '\\n')\n"
            + "s = http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), functools.partial(H, directory=sys.argv[3]))\n"
            + "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[4], sys.argv[5])\n"
            + "s.socket = c.wrap_socket(s.socket, server_side=True)\n"
            + "s.serve_forever()\n";

    private final String ns;
    private final String hostIf;
    /** The server's address inside the namespace, and the /30 that holds both ends. */
    final String address;
    final String range;
    private final Process server;

    private NetnsHttpServer(String ns, String hostIf, String address, String range, Process server) {
        this.ns = ns;
        this.hostIf = hostIf;
        this.address = address;
        this.range = range;
        this.server = server;
    }

    /** Why this machine cannot run it, or null. */
    static String missing() {
        if (!"root".equals(System.getProperty("user.name"))) return "network namespaces need root";
        for (String tool : List.of("/usr/sbin/ip", "/usr/bin/python3")) {
            if (!java.nio.file.Files.isExecutable(Path.of(tool))) return tool + " is missing";
        }
        return null;
    }

    /**
     * Serves {@code root} over TLS ({@code cert} and {@code key}, PEM) on {@link #PORT} of a fresh namespace's
     * address; waits until it accepts connections.
     */
    static NetnsHttpServer start(Path root, Path cert, Path key, Path log) throws Exception {
        int id = ThreadLocalRandom.current().nextInt(1, 4096);
        String ns = "berth-idx-" + id;
        String hostIf = "bidx" + id + "h";
        String nsIf = "bidx" + id + "n";
        // one /30 of 198.18.0.0/15 per id: .1 on the host's end, .2 in the namespace
        int base = id * 4;
        String net = "198." + (18 + (base >> 16)) + "." + ((base >> 8) & 255) + ".";
        String hostAddr = net + ((base & 255) + 1);
        String nsAddr = net + ((base & 255) + 2);
        String range = net + (base & 255) + "/30";
        ip("netns", "add", ns);
        try {
            ip("link", "add", hostIf, "type", "veth", "peer", "name", nsIf);
            ip("link", "set", nsIf, "netns", ns);
            ip("addr", "add", hostAddr + "/30", "dev", hostIf);
            ip("link", "set", hostIf, "up");
            ip("-n", ns, "addr", "add", nsAddr + "/30", "dev", nsIf);
            ip("-n", ns, "link", "set", nsIf, "up");
            ip("-n", ns, "link", "set", "lo", "up");
            Process p = new ProcessBuilder("/usr/sbin/ip", "netns", "exec", ns, "/usr/bin/python3", "-c", SERVER, nsAddr,
                    String.valueOf(PORT), root.toString(), cert.toString(), key.toString()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            NetnsHttpServer s = new NetnsHttpServer(ns, hostIf, nsAddr, range, p);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (true) {
                try (Socket probe = new Socket()) {
                    probe.connect(new InetSocketAddress(nsAddr, PORT), 1000);
                    return s;
                } catch (IOException notYet) {
                    if (!p.isAlive() || System.nanoTime() > deadline) {
                        s.close();
                        throw new IllegalStateException("the index server in " + ns + " did not come up (exit "
                                + (p.isAlive() ? "none" : p.exitValue()) + "): " + java.nio.file.Files.readString(log));
                    }
                    Thread.sleep(50);
                }
            }
        } catch (Exception e) {
            ipQuietly("link", "del", hostIf);
            ipQuietly("netns", "del", ns);
            throw e;
        }
    }

    private static void ip(String... args) throws IOException, InterruptedException {
        List<String> cmd = new java.util.ArrayList<>(List.of("/usr/sbin/ip"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IOException("ip " + String.join(" ", args) + ": " + out.strip());
    }

    private static void ipQuietly(String... args) {
        try {
            ip(args);
        } catch (IOException | InterruptedException ignored) {
            // already gone
        }
    }

    @Override
    public void close() throws InterruptedException {
        server.destroy();
        if (!server.waitFor(30, TimeUnit.SECONDS)) server.destroyForcibly().waitFor();
        ipQuietly("link", "del", hostIf);
        ipQuietly("netns", "del", ns);
    }
}
