package dev.berth.proxy;

import dev.berth.proxy.audit.AuditRecord;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Bodies far larger than the socket buffers and water marks, so back-pressure paths actually run. */
class LargeTransferTest extends HarnessTest {
    @Test
    void httpPost_16MiBFixedLengthBody_arrivesComplete() throws Exception {
        int n = 16 << 20;
        try (Socket s = h.connect()) {
            Harness.write(s, "POST http://allowed.test:" + h.http.port() + "/up HTTP/1.1\r\nHost: allowed.test:" + h.http.port()
                    + "\r\nContent-Length: " + n + "\r\n\r\n");
            byte[] block = new byte[1 << 20];
            for (int i = 0; i < 16; i++) s.getOutputStream().write(block);
            Harness.Response r = Harness.Response.read(s.getInputStream());
            assertEquals("hello POST /up body=" + n, r.body());
        }
        AuditRecord a = h.awaitAudit(x -> "POST".equals(x.method()) && x.bytesUp() == n);
        assertEquals("complete", a.closeReason());
    }

    @Test
    void httpGet_32MiBResponse_arrivesCompleteWithKeepAlive() throws Exception {
        int n = 32 << 20;
        try (Socket s = h.connect()) {
            String req = "GET http://allowed.test:" + h.http.port() + "/big?n=" + n + " HTTP/1.1\r\nHost: allowed.test:" + h.http.port() + "\r\n\r\n";
            Harness.write(s, req);
            Harness.Response r = Harness.Response.read(s.getInputStream());
            assertEquals(n, r.body().length());
            Harness.write(s, req.replace("n=" + n, "n=10"));
            assertEquals("z".repeat(10), Harness.Response.read(s.getInputStream()).body());
        }
    }

    @Test
    void httpGet_chunkedResponseToHttp10Client_dechunkedAndClosed() throws Exception {
        try (Socket s = h.connect()) {
            Harness.write(s, "GET http://allowed.test:" + h.http.port() + "/big?n=100000&chunked HTTP/1.0\r\nHost: allowed.test:" + h.http.port() + "\r\n\r\n");
            InputStream in = s.getInputStream();
            Harness.Response head = Harness.Response.read(in); // no length/TE: body left in stream
            assertEquals(200, head.status());
            assertNull(head.header("Transfer-Encoding"));
            assertEquals("close", head.header("Connection"));
            byte[] body = in.readAllBytes();
            assertEquals(100000, body.length);
            assertEquals('z', body[99999]);
        }
    }

    @Test
    void connect_64MiBEachWay_echoedIntact() throws Exception {
        long n = 64L << 20;
        try (Socket s = h.connect()) {
            Harness.write(s, "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
            assertEquals(200, Harness.Response.read(s.getInputStream()).status());
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    byte[] block = "0123456789abcdef".repeat(4096).getBytes(StandardCharsets.US_ASCII);
                    for (long sent = 0; sent < n; sent += block.length) s.getOutputStream().write(block);
                    s.shutdownOutput();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            s.setSoTimeout(20000);
            long got = 0;
            byte[] buf = new byte[1 << 16];
            int r;
            InputStream in = s.getInputStream();
            while ((r = in.read(buf)) > 0) got += r;
            writer.join();
            assertEquals(n, got);
        }
    }
}
