package dev.berth.proxy;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.Policy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

/**
 * A proxy on a loopback listener plus real loopback upstreams, a test resolver, and recorders
 * for decisions and audit records. Everything binds to 127.0.0.1.
 */
final class Harness implements AutoCloseable {
    final Upstreams.Echo tlsEcho;
    final Upstreams.Echo plainEcho;
    final Upstreams.Http http;
    final TestResolver resolver = new TestResolver();
    final List<Decision> decisions = new CopyOnWriteArrayList<>();
    final List<AuditRecord> audit = new CopyOnWriteArrayList<>();
    final EgressProxy proxy;
    final EgressProxy.Listener listener;
    final ProxyConfig config;

    Harness(UnaryOperator<ProxyConfig.Builder> tweak) throws IOException {
        this(tweak, System::nanoTime);
    }

    /** With a clock for quota windows, connection rates and placeholder lifetimes. */
    Harness(UnaryOperator<ProxyConfig.Builder> tweak, java.util.function.LongSupplier nanos) throws IOException {
        this((h, b) -> tweak.apply(b), nanos);
    }

    /** With a config tweak that can use the harness's upstream ports. */
    Harness(java.util.function.BiFunction<Harness, ProxyConfig.Builder, ProxyConfig.Builder> tweak, java.util.function.LongSupplier nanos) throws IOException {
        this(tweak, nanos, dev.berth.proxy.session.Delays.NETTY);
    }

    /** With a clock and the timer that releases shaped connection setups (a {@link FakeDelays} never waits). */
    Harness(java.util.function.BiFunction<Harness, ProxyConfig.Builder, ProxyConfig.Builder> tweak, java.util.function.LongSupplier nanos,
            dev.berth.proxy.session.Delays delays) throws IOException {
        tlsEcho = new Upstreams.Echo("127.0.0.1");
        plainEcho = new Upstreams.Echo("127.0.0.1");
        http = new Upstreams.Http();
        int t = tlsEcho.port(), p = plainEcho.port(), h = http.port();
        resolver.map("allowed.test", "127.0.0.1")
                .map("api.github.com", "127.0.0.1")
                .map("private.test", "10.0.0.5")
                .map("metadata.test", "169.254.169.254")
                .map("mixed.test", "127.0.0.1", "100.64.0.1")
                .map("nat64.test", "64:ff9b::a00:1")
                .map("sixtofour.test", "2002:a9fe:a9fe::1")
                .map("ula.test", "fd00::1");
        Policy ceiling = Policy.of(List.of(
                "allowed.test:" + t + "," + p + "," + h,
                "*.github.com:" + p,
                "private.test:" + p, "metadata.test:" + p, "mixed.test:" + p, "nat64.test:" + p,
                "sixtofour.test:" + p, "ula.test:" + p, "rebind.test:" + p + "," + h,
                "127.0.0.1:" + h, "10.0.0.1:443"));
        config = tweak.apply(this, ProxyConfig.builder()
                .ceiling(ceiling)
                .tlsPorts(java.util.Set.of(443, t))
                .maxHeaderBytes(8192)
                .maxHeaderCount(50)
                .headerTimeout(Duration.ofSeconds(5))
                .unsafeAllowLoopbackUpstreams(true)).build();
        proxy = EgressProxy.builder(config).resolver(resolver).auditSink(audit::add).threads(2).clock(nanos).delays(delays).start();
        listener = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                new EgressContext("ws-test", "run-1", ceiling, decisions::add));
    }

    Harness() throws IOException {
        this(b -> b);
    }

    Socket connect() throws IOException {
        Socket s = new Socket();
        s.connect(listener.address(), 2000);
        s.setSoTimeout(5000);
        return s;
    }

    /** Sends raw bytes on a fresh connection and reads one response (or EOF). */
    Response send(String raw) throws IOException {
        try (Socket s = connect()) {
            s.getOutputStream().write(raw.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            return Response.read(s.getInputStream());
        }
    }

    /** Waits (see {@link Await}) until {@code condition} holds; fails naming {@code what}. */
    static void await(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        Await.until(what, condition);
    }

    Decision awaitDecision(int index) throws InterruptedException {
        Await.until("decision #" + index + " (got " + decisions + ")", () -> decisions.size() > index);
        return decisions.get(index);
    }

    AuditRecord awaitAudit(java.util.function.Predicate<AuditRecord> p) throws InterruptedException {
        return Await.result("a matching audit record", () -> first(audit, p), () -> audit);
    }

    /** The first element of {@code list} (a concurrent list) that matches, or null. */
    static <T> T first(List<T> list, java.util.function.Predicate<T> p) {
        for (T t : list) if (p.test(t)) return t;
        return null;
    }

    @Override
    public void close() throws IOException {
        listener.close();
        proxy.close();
        tlsEcho.close();
        plainEcho.close();
        http.close();
    }

    /** A parsed HTTP response; status -1 if the connection closed without one. */
    record Response(int status, List<String> headers, String body) {
        String header(String name) {
            for (String h : headers) {
                int c = h.indexOf(':');
                if (c > 0 && h.substring(0, c).trim().equalsIgnoreCase(name)) return h.substring(c + 1).trim();
            }
            return null;
        }

        static Response read(InputStream in) throws IOException {
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            int state = 0;
            try {
                while (state < 4) {
                    int b = in.read();
                    if (b < 0) break;
                    head.write(b);
                    state = (b == '\r' && (state == 0 || state == 2)) || (b == '\n' && (state == 1 || state == 3)) ? state + 1 : (b == '\r' ? 1 : 0);
                }
            } catch (java.net.SocketException e) {
                // reset: treat like EOF
            }
            if (state < 4) return new Response(-1, List.of(), head.toString(StandardCharsets.ISO_8859_1));
            String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
            int status = Integer.parseInt(lines[0].split(" ")[1]);
            List<String> headers = new ArrayList<>(List.of(lines).subList(1, lines.length));
            Response r = new Response(status, headers, "");
            String cl = r.header("Content-Length");
            String te = r.header("Transfer-Encoding");
            byte[] body;
            if (cl != null) {
                body = in.readNBytes(Integer.parseInt(cl));
            } else if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
                body = readChunked(in);
            } else if (status == 200 && lines[0].contains("Connection established")) {
                body = new byte[0];
            } else {
                body = new byte[0];
            }
            return new Response(status, headers, new String(body, StandardCharsets.UTF_8));
        }

        private static byte[] readChunked(InputStream in) throws IOException {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            while (true) {
                String line = readLine(in);
                int size = Integer.parseInt(line.split(";")[0].trim(), 16);
                if (size == 0) {
                    readLine(in);
                    return out.toByteArray();
                }
                out.writeBytes(in.readNBytes(size));
                readLine(in);
            }
        }

        private static String readLine(InputStream in) throws IOException {
            StringBuilder sb = new StringBuilder();
            int b;
            while ((b = in.read()) >= 0 && b != '\n') if (b != '\r') sb.append((char) b);
            return sb.toString();
        }
    }

    /** Reads until EOF or reset; true if the peer closed (used after denials mid-tunnel). */
    static boolean closedByPeer(Socket s) throws IOException {
        try {
            InputStream in = s.getInputStream();
            byte[] buf = new byte[1024];
            while (in.read(buf) >= 0) {
                // drain
            }
            return true;
        } catch (java.net.SocketException e) {
            return true;
        } catch (java.net.SocketTimeoutException e) {
            return false;
        }
    }

    static void write(Socket s, String text) throws IOException {
        OutputStream o = s.getOutputStream();
        o.write(text.getBytes(StandardCharsets.ISO_8859_1));
        o.flush();
    }
}
