package dev.berth.proxy;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.audit.FileAuditSink;
import dev.berth.proxy.policy.Policy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Every broken config under testdata/ is listed in testdata/errors.tsv with the error it must produce. */
class ConfigLoaderTest {
    static Path dir(String name) throws URISyntaxException {
        return Path.of(ConfigLoaderTest.class.getResource("/" + name).toURI());
    }

    static Stream<Arguments> brokenConfigs() throws Exception {
        return Files.readAllLines(dir("testdata").resolve("errors.tsv")).stream()
                .filter(l -> !l.isBlank())
                .map(l -> l.split("\t", 2))
                .map(p -> Arguments.of(p[0], p[1]));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenConfigs")
    void load_brokenFixture_failsWithNamedError(String file, String expected) throws Exception {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(dir("testdata").resolve(file)));
        assertTrue(e.getMessage().contains(expected), () -> file + ": '" + e.getMessage() + "' lacks '" + expected + "'");
    }

    @Test
    void fixtures_everyBrokenFileListed_noneForgotten() throws Exception {
        try (Stream<Path> files = Files.list(dir("testdata"))) {
            List<String> json = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json")).sorted().toList();
            List<String> listed = brokenConfigs().map(a -> (String) a.get()[0]).sorted().toList();
            assertEquals(json, listed);
        }
    }

    @Test
    void load_validFullConfig_parsesPolicyAndLimits() throws Exception {
        ProxyConfig c = ConfigLoader.load(dir("valid").resolve("full.json"));
        assertFalse(c.unsafeAllowLoopbackUpstreams());
        assertEquals(16384, c.maxHeaderBytes());
        assertEquals(Duration.ofSeconds(2), c.headerTimeout());
        assertEquals(8, c.maxTunnelsPerWorkspace());
        List<String> d = c.ceiling().describe();
        assertTrue(d.contains("example.com:[443]"), d.toString());
        assertTrue(d.contains("*.corp.example:[443, 8443]"), d.toString());
        assertTrue(d.contains("203.0.113.7:[80]"), d.toString());
        assertTrue(d.contains("registry.npmjs.org:[443]"), d.toString());
        assertTrue(d.contains("deb.debian.org:[80, 443]"), d.toString());
    }

    @Test
    void load_oldCamelCaseFile_sameMeaning_oneWarningPerKey() throws Exception {
        String camel = Files.readString(dir("valid").resolve("full-camel-case.json"));
        List<String> warnings = new java.util.ArrayList<>();
        ProxyConfig old = ConfigLoader.parse(camel, System::getenv, warnings::add, "config");
        ProxyConfig now = ConfigLoader.load(dir("valid").resolve("full.json"));
        assertEquals(now.ceiling().describe(), old.ceiling().describe());
        assertEquals(List.of(now.maxHeaderBytes(), now.headerTimeout(), now.maxTunnelsPerWorkspace(), now.maxBytesPerWorkspace(),
                        now.unsafeAllowLoopbackUpstreams()),
                List.of(old.maxHeaderBytes(), old.headerTimeout(), old.maxTunnelsPerWorkspace(), old.maxBytesPerWorkspace(),
                        old.unsafeAllowLoopbackUpstreams()));
        assertEquals(List.of(
                "egress key 'maxHeaderBytes' is deprecated; use 'max_header_bytes'",
                "egress key 'headerTimeoutMs' is deprecated; use 'header_timeout_ms'",
                "egress key 'maxTunnelsPerWorkspace' is deprecated; use 'max_tunnels_per_workspace'",
                "egress key 'maxBytesPerWorkspace' is deprecated; use 'max_bytes_per_workspace'",
                "egress key 'unsafeAllowLoopbackUpstreams' is deprecated; use 'unsafe_allow_loopback_upstreams'"), warnings);
    }

    @Test
    void examples_egressPolicy_usesTheCurrentSpelling() throws Exception {
        List<String> warnings = new java.util.ArrayList<>();
        ConfigLoader.parse(Files.readString(Path.of("../examples/egress-policy.json")), System::getenv, warnings::add, "config");
        assertEquals(List.of(), warnings);
    }

    @Test
    void parse_oldKeyRepeated_warnsOncePerLoad() throws Exception {
        List<String> warnings = new java.util.ArrayList<>();
        ConfigLoader.parse("""
                {"allow": [{"host": "a.example"}, {"host": "b.example"}], "presets": ["github"],
                 "secrets": {"one": {"env": "ONE", "hosts": ["api.github.com"], "fromEnv": "X"},
                             "two": {"env": "TWO", "hosts": ["github.com"], "fromEnv": "X"}}}""", n -> "v", warnings::add, "egress");
        assertEquals(List.of("egress key 'fromEnv' is deprecated; use 'from_env'"), warnings);
        List<String> none = new java.util.ArrayList<>();
        ConfigLoader.parse("{\"limits\": {\"max_header_bytes\": 100}}", n -> null, none::add, "egress");
        assertEquals(List.of(), none, "the new spelling warns about nothing");
    }

    @Test
    void parseSection_unknownKey_saysInEgressAndSuggestsTheClosestKey() {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.parseSection("{\"alow\": []}", w -> { }));
        assertTrue(e.getMessage().startsWith("unknown key 'alow' in egress; did you mean 'allow'?"), e.getMessage());
    }

    @Test
    void closest_editDistance_suggestsOnlyWhatIsClose() {
        var keys = List.of("allow", "limits", "presets", "preset_mirrors");
        assertEquals("allow", ConfigKeys.closest("alow", keys));
        assertEquals("preset_mirrors", ConfigKeys.closest("presetMirror", keys));
        assertEquals(null, ConfigKeys.closest("tenants", keys));
        assertEquals("max_tunnels_per_workspace", ConfigKeys.snakeCase("maxTunnelsPerWorkspace"));
        assertEquals("durations_s", ConfigKeys.snakeCase("durationsS"));
    }

    @Test
    void tlsPorts_addPortsThatGetTheSniCheckAndInterception() throws Exception {
        assertEquals(java.util.Set.of(443), ConfigLoader.parse("{}").tlsPorts());
        assertEquals(java.util.Set.of(443, 8443), ConfigLoader.parse("{\"tls\": {\"ports\": [8443, 443]}}").tlsPorts());
    }

    @Test
    void load_explicitUnsafeBlock_enablesLoopbackAndIsAudited() throws Exception {
        ProxyConfig c = ConfigLoader.parse("{\"unsafe\": {\"unsafeAllowLoopbackUpstreams\": true}}");
        assertTrue(c.unsafeAllowLoopbackUpstreams());
        List<AuditRecord> audit = new java.util.ArrayList<>();
        try (EgressProxy p = EgressProxy.builder(c).auditSink(audit::add).threads(1).start()) {
            assertTrue(audit.stream().anyMatch(r -> r.event().equals("unsafe-setting") && r.reason().contains("UNSAFE")), audit.toString());
        }
    }

    @Test
    void load_emptyObject_deniesEverything() throws Exception {
        assertTrue(ConfigLoader.parse("{}").ceiling().isEmpty());
    }

    @Test
    void load_missingFile_reportsPath() {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(Path.of("/nonexistent/egress.json")));
        assertTrue(e.getMessage().contains("/nonexistent/egress.json"));
    }

    @Test
    void fileAuditSink_records_appendsJsonLinesWithConstantFields(@org.junit.jupiter.api.io.TempDir Path tmp) throws IOException {
        Path log = tmp.resolve("audit.jsonl");
        try (FileAuditSink sink = new FileAuditSink(log)) {
            sink.record(new AuditRecord("decision", java.time.Instant.EPOCH, "ws", null, "c1", "http", "GET", "evil.test", 80,
                    null, "deny", "host 'evil.test' matches no allowlist entry", 0, 0, 1, "denied"));
            sink.record(AuditRecord.note("proxy-start", "x"));
        }
        List<String> lines = Files.readAllLines(log);
        assertEquals(2, lines.size());
        for (String f : List.of("\"workspace\":\"ws\"", "\"run\":null", "\"host\":\"evil.test\"", "\"port\":80", "\"resolvedAddress\":null",
                "\"decision\":\"deny\"", "\"reason\":\"host 'evil.test' matches no allowlist entry\"", "\"bytesUp\":0", "\"bytesDown\":0",
                "\"durationMs\":1")) {
            assertTrue(lines.get(0).contains(f), () -> lines.get(0) + " lacks " + f);
        }
    }

    @Test
    void presetMirrors_pointAPresetAtTheOperatorsHosts_inTheCeilingAndInEveryNarrowing() throws Exception {
        ProxyConfig c = ConfigLoader.parse("""
                {"presetMirrors": {"debian": [{"host": "apt.corp.example", "ports": [80]}]},
                 "presets": ["debian", "npm"]}
                """);
        List<String> d = c.ceiling().describe();
        assertTrue(d.contains("apt.corp.example:[80]") && d.contains("registry.npmjs.org:[443]"), d.toString());
        assertFalse(d.toString().contains("deb.debian.org"), d.toString());
        // a workspace's or recipe's "preset:debian" means the mirror too, and narrows the ceiling to it
        List<String> narrowed = c.ceiling().narrow(Policy.of(List.of("preset:debian"), c.presetMirrors())).describe();
        assertEquals(List.of("apt.corp.example:[80]"), narrowed);
        assertEquals(List.of(), c.ceiling().narrow(Policy.of(List.of("preset:debian"))).describe(), "without the mirrors it names the public hosts");
        var unknown = assertThrows(ConfigException.class, () -> ConfigLoader.parse("{\"presetMirrors\": {\"debain\": [{\"host\": \"a.example\"}]}}"));
        assertTrue(unknown.getMessage().contains("presetMirrors.debain: unknown preset"), unknown.getMessage());
        var empty = assertThrows(ConfigException.class, () -> ConfigLoader.parse("{\"presetMirrors\": {\"npm\": []}}"));
        assertTrue(empty.getMessage().contains("presetMirrors.npm must be a non-empty array"), empty.getMessage());
    }
}
