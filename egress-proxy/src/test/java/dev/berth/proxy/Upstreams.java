package dev.berth.proxy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** Real loopback upstream servers for tests and the benchmark. Loopback only. */
final class Upstreams {
    private Upstreams() {}

    /** Echoes every byte back; records which local address each connection arrived on. */
    static final class Echo implements AutoCloseable {
        final ServerSocket server;
        final List<InetSocketAddress> accepted = new CopyOnWriteArrayList<>();
        private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();

        Echo(String bindAddress) throws IOException {
            server = new ServerSocket(0, 100, InetAddress.getByName(bindAddress));
            threads.execute(this::acceptLoop);
        }

        int port() {
            return server.getLocalPort();
        }

        private void acceptLoop() {
            while (!server.isClosed()) {
                try {
                    Socket s = server.accept();
                    accepted.add((InetSocketAddress) s.getLocalSocketAddress());
                    try {
                        threads.execute(() -> echo(s));
                    } catch (java.util.concurrent.RejectedExecutionException closing) {
                        s.close();
                        return;
                    }
                } catch (IOException e) {
                    return;
                }
            }
        }

        private static void echo(Socket s) {
            try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
                byte[] buf = new byte[64 * 1024];
                int n;
                while ((n = in.read(buf)) > 0) {
                    out.write(buf, 0, n);
                }
                s.shutdownOutput();
            } catch (IOException ignored) {
                // peer went away
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            threads.shutdownNow();
        }
    }

    /** Minimal HTTP origin; records the headers of every request it serves. */
    static final class Http implements AutoCloseable {
        final HttpServer server;
        final List<Map<String, List<String>>> seenHeaders = new CopyOnWriteArrayList<>();
        final List<String> seenPaths = new CopyOnWriteArrayList<>();

        Http() throws IOException {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
            server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            server.createContext("/big", ex -> {
                // /big?n=BYTES: a large response; chunked (length 0) when ?chunked is present.
                String q = ex.getRequestURI().getQuery();
                long n = Long.parseLong(q.replaceAll(".*n=(\\d+).*", "$1"));
                ex.getRequestBody().readAllBytes();
                ex.sendResponseHeaders(200, q.contains("chunked") ? 0 : n);
                byte[] block = new byte[64 * 1024];
                java.util.Arrays.fill(block, (byte) 'z');
                try (var out = ex.getResponseBody()) {
                    for (long left = n; left > 0; left -= block.length) out.write(block, 0, (int) Math.min(block.length, left));
                }
            });
            server.createContext("/", ex -> {
                seenHeaders.add(Map.copyOf(ex.getRequestHeaders()));
                seenPaths.add(ex.getRequestURI().toString());
                byte[] reqBody = ex.getRequestBody().readAllBytes();
                byte[] body = ("hello " + ex.getRequestMethod() + " " + ex.getRequestURI() + " body=" + reqBody.length)
                        .getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
                ex.close();
            });
            server.start();
        }

        int port() {
            return server.getAddress().getPort();
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }
}
