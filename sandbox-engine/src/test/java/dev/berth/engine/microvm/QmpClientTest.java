package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The QMP client against a scripted fake QEMU on a unix socket: no QEMU needed. */
class QmpClientTest {

    @TempDir Path dir;

    /** Serves one connection: greeting, then {@code handler(request, out)} per line. */
    private Thread fakeQemu(Path sock, BiConsumer<JsonNode, SocketChannel> handler) throws IOException {
        ServerSocketChannel srv = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        srv.bind(UnixDomainSocketAddress.of(sock));
        Thread t = Thread.ofVirtual().start(() -> {
            try (srv; SocketChannel c = srv.accept()) {
                send(c, "{\"QMP\": {\"version\": {}, \"capabilities\": []}}");
                StringBuilder line = new StringBuilder();
                ByteBuffer b = ByteBuffer.allocate(1);
                while (c.read(b.clear()) > 0) {
                    char ch = (char) b.get(0);
                    if (ch != '\n') { line.append(ch); continue; }
                    handler.accept(JsonMapper.builder().build().readTree(line.toString()), c);
                    line.setLength(0);
                }
            } catch (IOException ignored) { }
        });
        return t;
    }

    static void send(SocketChannel c, String s) {
        ByteBuffer b = ByteBuffer.wrap((s + "\n").getBytes(StandardCharsets.UTF_8));
        try { while (b.hasRemaining()) c.write(b); } catch (IOException e) { throw new RuntimeException(e); }
    }

    @Test
    void execute_answersOutOfOrderWithEvents_matchesById() throws Exception {
        Path sock = dir.resolve("q.sock");
        CopyOnWriteArrayList<String> events = new CopyOnWriteArrayList<>();
        fakeQemu(sock, (req, c) -> {
            String id = req.path("id").asString("");
            String cmd = req.path("execute").asString("");
            send(c, "{\"event\": \"STOP\", \"timestamp\": {}}");
            if (cmd.equals("query-status")) send(c, "{\"return\": {\"status\": \"paused\"}, \"id\": \"" + id + "\"}");
            else if (cmd.equals("bad")) send(c, "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"no bad\"}, \"id\": \"" + id + "\"}");
            else send(c, "{\"return\": {}, \"id\": \"" + id + "\"}");
        });
        try (QmpClient q = QmpClient.connect(sock, "t", Duration.ofSeconds(5))) {
            q.onEvent(e -> events.add(e.path("event").asString("")));
            assertEquals("paused", q.execute("query-status").path("status").asString(""));
            QmpClient.QmpException e = assertThrows(QmpClient.QmpException.class, () -> q.execute("bad"));
            assertEquals("CommandNotFound", e.errorClass);
            assertTrue(q.execute("migrate", Map.of("uri", "exec:cat > 'x'"), Duration.ofSeconds(5)).isObject());
            assertTrue(events.contains("STOP"));
        }
    }

    @Test
    void reader_lineLongerThanTheLimit_closesTheClientAndFailsPendingCalls() throws Exception {
        Path sock = dir.resolve("q.sock");
        fakeQemu(sock, (req, c) -> {
            if (req.path("execute").asString("").equals("qmp_capabilities")) {
                send(c, "{\"return\": {}, \"id\": \"" + req.path("id").asString("") + "\"}");
            } else {
                send(c, "\"" + "x".repeat(QmpClient.MAX_LINE + 10) + "\"");
            }
        });
        try (QmpClient q = QmpClient.connect(sock, "t", Duration.ofSeconds(5))) {
            IOException e = assertThrows(IOException.class, () -> q.execute("query-status", null, Duration.ofSeconds(10)));
            assertTrue(e.getMessage().contains("longer than"), e.getMessage());
            assertFalse(q.isOpen());
        }
    }

    @Test
    void connect_noSocket_failsWithinTheTimeout() {
        long t0 = System.nanoTime();
        assertThrows(IOException.class, () -> QmpClient.connect(dir.resolve("none.sock"), "t", Duration.ofMillis(200)));
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 5000);
    }
}
