package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Issue 16, "Then" 1 for PyPI with real parts: a PEP 503 index (HTML Simple pages, the JSON API as static files that
 * carry the upload times, wheels) served by a real nginx over TLS on loopback holds {@code req-lib} 1.0.0 (uploaded in
 * 2020) and 2.1.0 (uploaded two hours ago). With a pypi registry rule of 7 days, the real {@code pip} (Debian's, inside
 * a workspace, one subclass per isolation level, through the egress proxy with interception) installs 1.0.0, the run result says 2.1.0 was
 * hidden and why, and the fresh wheel asked for directly is refused with the reason.
 */
abstract class AbstractPipSupplyChainE2eTest extends AbstractRealClientE2eTest {
    static final Instant OLD = Instant.parse("2020-03-04T05:06:07Z");
    static final Instant FRESH = Instant.now().minus(2, ChronoUnit.HOURS).truncatedTo(ChronoUnit.SECONDS);

    NginxServer index;

    @BeforeAll
    void start() throws Exception {
        prepare("pip");
        Path www = Files.createDirectories(dir.resolve("www"));
        Files.createDirectories(www.resolve("files"));
        StringBuilder links = new StringBuilder();
        StringBuilder releases = new StringBuilder();
        for (String v : List.of("1.0.0", "2.1.0")) {
            String file = "req_lib-" + v + "-py3-none-any.whl";
            wheel(www.resolve("files").resolve(file), v);
            links.append("<a href=\"../../files/").append(file).append("\">").append(file).append("</a><br/>\n");
            if (releases.length() > 0) releases.append(',');
            releases.append("\"").append(v).append("\":[{\"filename\":\"").append(file).append("\",\"upload_time_iso_8601\":\"")
                    .append(v.equals("1.0.0") ? OLD : FRESH).append("\"}]");
        }
        Files.createDirectories(www.resolve("simple/req-lib"));
        Files.writeString(www.resolve("simple/req-lib/index.html"),
                "<!DOCTYPE html><html><body><h1>Links for req-lib</h1>\n" + links + "</body></html>\n");
        Files.createDirectories(www.resolve("pypi/req-lib"));
        Files.writeString(www.resolve("pypi/req-lib/json"), "{\"info\":{\"name\":\"req-lib\",\"version\":\"2.1.0\"},\"releases\":{" + releases
                + "},\"urls\":[]}");
        index = serve(NginxServer.start(dir.resolve("nginx"), tls.cert(), tls.key(), """
                    root %s;
                    location / { index index.html; }
                    location /pypi/ { default_type application/json; }
                """.formatted(www), false));
        startBerth(index.port, "\"registryRules\": {\"pypi\": {\"hosts\": [\"localhost\"], \"minReleaseAgeDays\": 7}}");
    }

    /** A minimal pure-Python wheel: a module that knows its version, and the dist-info pip reads. */
    private static void wheel(Path file, String version) throws IOException {
        String info = "req_lib-" + version + ".dist-info/";
        Map<String, String> entries = new java.util.LinkedHashMap<>();
        entries.put("req_lib/__init__.py", "VERSION = '" + version + "'\n");
        entries.put(info + "METADATA", "Metadata-Version: 2.1\nName: req-lib\nVersion: " + version + "\n");
        entries.put(info + "WHEEL", "Wheel-Version: 1.0\nGenerator: berth-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n");
        entries.put(info + "RECORD", "req_lib/__init__.py,,\n" + info + "METADATA,,\n" + info + "WHEEL,,\n" + info + "RECORD,,\n");
        try (OutputStream out = Files.newOutputStream(file); ZipOutputStream zip = new ZipOutputStream(out)) {
            for (var e : entries.entrySet()) {
                zip.putNextEntry(new ZipEntry(e.getKey()));
                zip.write(e.getValue().getBytes(StandardCharsets.UTF_8));
                zip.closeEntry();
            }
        }
    }

    @Test
    void pipInstall_resolvesToTheOldEnoughRelease_freshWheelRefused() throws Exception {
        String ws = ok("open_workspace", level().open(Map.of())).path("workspace").asString();
        String simple = "https://localhost:" + index.port + "/simple/";
        JsonNode r = ok("run", Map.of("workspace", ws, "timeout_s", 300, "command",
                "env -u NO_PROXY -u no_proxy HOME=/workspace PIP_BREAK_SYSTEM_PACKAGES=1 /usr/bin/python3 -m pip install -q --no-cache-dir"
                        + " --disable-pip-version-check --target /workspace/site --index-url " + simple + " req-lib 2>&1;"
                        + " PYTHONPATH=/workspace/site /usr/bin/python3 -c 'import req_lib; print(req_lib.VERSION)'"));
        assertEquals(0, r.path("exit_code").asInt(), r.toString());
        assertTrue(r.path("stdout").asString().trim().endsWith("1.0.0"), r.toString());
        String filtered = r.path("egress_filtered").toString();
        assertTrue(filtered.contains("req-lib 2.1.0 was published " + FRESH + ", less than 7 days ago (registryRules.pypi.minReleaseAgeDays"),
                r.toString());
        assertFalse(index.accessLog().contains("req_lib-2.1.0-py3-none-any.whl"), "pip never saw the fresh wheel");

        JsonNode direct = ok("run", Map.of("workspace", ws, "command", "env -u NO_PROXY -u no_proxy curl -sS -o /dev/null -w '%{http_code}' "
                + "https://localhost:" + index.port + "/files/req_lib-2.1.0-py3-none-any.whl"));
        assertEquals("403", direct.path("stdout").asString(), direct.toString());
        assertTrue(direct.path("egress_denied").get(0).path("reason").asString().startsWith("req-lib 2.1.0 was published " + FRESH), direct.toString());
    }
}
