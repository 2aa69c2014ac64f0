package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

/**
 * The largest transfers the schemas allow reach the official TypeScript client whole, on stdio (whose client drops
 * a connection at 10 MiB per message) and on Streamable HTTP (whose request bodies are capped at 4 MiB): a 2 MiB
 * binary write, a 2 MiB read (base64 once, not mirrored), a larger file paged with next_offset, and a run whose two
 * 512 KiB output streams are control characters (the worst case for JSON escaping).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ResultSizeE2eTest {
    static final int MAX = 2 * 1024 * 1024;
    Path dir;
    BerthHttp http;

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("berth-sizes-");
        // sandboxes run as their own uids and must traverse to their state under the homes
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        http = BerthHttp.start(Files.createDirectories(dir.resolve("http")), """
                {"auth": {"tokens": [{"tenant": "t", "sha256": "%s"}]}, "tenants": {"t": {}}}
                """.formatted(BearerAuthenticatorTest.sha256("size-token")));
    }

    @AfterAll
    void stop() throws Exception {
        http.close();
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    private McpBridge client(String transport) throws Exception {
        McpBridge b = transport.equals("stdio") ? McpBridge.stdio(Files.createDirectories(dir.resolve("stdio-home")), "--isolation", "namespace")
                : McpBridge.http(http.url("/mcp"), "size-token");
        b.connect();
        return b;
    }

    @ParameterizedTest
    @ValueSource(strings = {"stdio", "http"})
    void largestTransfers_reachTheClientWhole_andLargerOnesArePaged(String transport) throws Exception {
        try (McpBridge mcp = client(transport)) {
            String ws = mcp.ok("open_workspace", Map.of()).path("workspace").asString();
            byte[] data = new byte[MAX];
            new Random(10).nextBytes(data);
            String b64 = Base64.getEncoder().encodeToString(data);
            JsonNode w = mcp.ok("write_file", Map.of("workspace", ws, "path", "blob", "content", b64, "encoding", "base64"));
            assertEquals(MAX, w.path("bytes_written").asLong());
            // one more MiB appended: 3 MiB, read in two pages
            mcp.ok("write_file", Map.of("workspace", ws, "path", "blob", "content", Base64.getEncoder().encodeToString(new byte[1 << 20]),
                    "encoding", "base64", "append", true));

            JsonNode r = mcp.call("read_file", Map.of("workspace", ws, "path", "blob", "max_bytes", MAX));
            assertFalse(r.path("isError").asBoolean(), r::toString);
            JsonNode page = r.path("structuredContent");
            SchemaCheck.assertValid("read_file", page);
            assertEquals("base64", page.path("encoding").asString());
            assertArrayEquals(data, Base64.getDecoder().decode(page.path("content").asString()));
            assertTrue(page.path("truncated").asBoolean());
            assertEquals(MAX, page.path("next_offset").asLong());
            String mirror = r.path("content").get(0).path("text").asString();
            assertTrue(mirror.length() < 4096 && mirror.contains("not repeated in this text"), "the mirror must not repeat the base64");

            JsonNode rest = mcp.ok("read_file", Map.of("workspace", ws, "path", "blob", "offset", page.path("next_offset").asLong(), "max_bytes", MAX));
            assertEquals(1 << 20, rest.path("bytes").asInt());
            assertFalse(rest.path("truncated").asBoolean());
            assertEquals(3 << 20, rest.path("next_offset").asLong());

            JsonNode tooMuch = mcp.call("read_file", Map.of("workspace", ws, "path", "blob", "max_bytes", 2 * MAX));
            assertTrue(tooMuch.path("isError").asBoolean(), "max_bytes over 2 MiB is refused by the schema: " + tooMuch);

            JsonNode run = mcp.call("run", Map.of("workspace", ws, "max_output_bytes", 524288,
                    "command", "head -c 524288 /dev/zero | tr '\\0' '\\1'; head -c 524288 /dev/zero | tr '\\0' '\\2' >&2"));
            assertFalse(run.path("isError").asBoolean(), () -> run.toString().substring(0, 500));
            JsonNode out = run.path("structuredContent");
            assertEquals(524288, out.path("stdout_bytes").asLong());
            assertEquals(524288, out.path("stderr_bytes").asLong());
            assertEquals(524288, out.path("stdout").asString().length());
            mcp.ok("close_workspace", Map.of("workspace", ws));
        }
    }
}
