package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.api.Tenant;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class OperatorConfigTest {
    static final Path BROKEN = Path.of("src/test/resources/testdata/config");

    static Stream<String> brokenConfigs() throws IOException {
        try (var files = Files.list(BROKEN)) {
            List<String> names = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json"))
                    .map(n -> n.substring(0, n.length() - 5)).sorted().toList();
            assertTrue(names.size() >= 10, "the broken-config fixtures are missing: " + names);
            return names.stream();
        }
    }

    /** Each fixture NAME.json must be refused with a message containing NAME.error (and the file's name). */
    @ParameterizedTest
    @MethodSource("brokenConfigs")
    void brokenConfig_isRefusedWithItsError(String name) throws IOException {
        Path file = BROKEN.resolve(name + ".json");
        String expected = Files.readString(BROKEN.resolve(name + ".error")).strip();
        var e = assertThrows(OperatorConfig.ConfigException.class, () -> OperatorConfig.load(file));
        assertTrue(e.getMessage().contains(expected), () -> name + ": expected '" + expected + "' in: " + e.getMessage());
        assertTrue(e.getMessage().contains(file.toString()), () -> "the error must name the file: " + e.getMessage());
    }

    @Test
    void pool_onByDefault_offWithSizeZero_andABudgetOfItsOwn(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.json");
        Files.writeString(f, "{}");
        var dflt = OperatorConfig.loadForStdio(f).templates();
        assertEquals(dev.berth.engine.api.TemplateSettings.serverDefault(16), dflt, "no pool section: the server's default pool");
        assertEquals(1, dflt.poolSize());
        assertTrue(dflt.poolMemoryMiB() > 0 && dflt.poolMemoryMiB() <= 2048, "a small default budget: " + dflt.poolMemoryMiB());
        assertFalse(dflt.poolEmulated(), "no emulated microVM members by default");
        Files.writeString(f, "{\"pool\": {\"size\": 0}}");
        assertEquals(0, OperatorConfig.loadForStdio(f).templates().poolSize(), "size 0 turns it off");
        Files.writeString(f, "{\"pool\": {\"size\": 3, \"memory_mib\": 1024}}");
        var sized = OperatorConfig.loadForStdio(f).templates();
        assertEquals(3, sized.poolSize());
        assertEquals(1024, sized.poolMemoryMiB());
        assertTrue(sized.poolEmulated(), "an explicit size covers every available level");
        Files.writeString(f, "{\"pool\": {\"memory_mib\": -1}}");
        var e = assertThrows(OperatorConfig.ConfigException.class, () -> OperatorConfig.loadForStdio(f));
        assertTrue(e.getMessage().contains("pool.memory_mib must be 0 (no pool) or more, got -1"), e.getMessage());
    }

    @Test
    void lifecycle_serverDefaultsAndTenantOverrides(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.json");
        Files.writeString(f, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}]},
                 "lifecycle": {"idle_park_s": 600, "ttl_s": 7200, "max_live_workspaces": 12},
                 "tenants": {"alice": {"lifecycle": {"idle_park_s": 0}}, "bob": {}}}
                """.formatted("a".repeat(64)));
        OperatorConfig c = OperatorConfig.load(f);
        assertEquals(new dev.berth.engine.api.LifecyclePolicy(600, 3600, 7200), c.lifecyclePolicy(), "absent fields keep the defaults");
        assertEquals(java.util.Map.of("alice", new dev.berth.engine.api.LifecyclePolicy(0, 3600, 7200)), c.tenantLifecycle(),
                "a tenant overrides only what it names");
        assertEquals(12, c.maxLiveWorkspaces());
        Files.writeString(f, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}]}, "tenants": {"alice": {}}}
                """.formatted("a".repeat(64)));
        OperatorConfig d = OperatorConfig.load(f);
        assertEquals(dev.berth.engine.api.LifecyclePolicy.DEFAULT, d.lifecyclePolicy());
        assertEquals(dev.berth.engine.api.EngineConfig.DEFAULT_MAX_WORKSPACES, d.maxLiveWorkspaces());
    }

    @Test
    void validConfig_defaultsToLoopbackAndMapsQuotas(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.json");
        Files.writeString(f, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}]},
                 "tenants": {"alice": {"quota": {"workspaces": 2, "memory_mib": 1024}}, "bob": {}}}
                """.formatted("a".repeat(64)));
        OperatorConfig c = OperatorConfig.load(f);
        assertEquals("127.0.0.1", c.http().bind());
        assertEquals(8080, c.http().port());
        assertEquals("http://127.0.0.1:8080", c.http().publicUrl());
        assertEquals(OperatorConfig.LOOPBACK_HOSTS, c.http().allowedHosts());
        assertEquals(OperatorConfig.LOOPBACK_ORIGINS, c.http().allowedOrigins());
        Tenant alice = c.tenant("alice");
        assertEquals(2, alice.quota().workspaces());
        assertEquals(1024, alice.quota().memoryMiB());
        assertEquals(Integer.MAX_VALUE, alice.quota().vcpus(), "an absent quota field is no limit");
        assertEquals(Tenant.Quota.UNLIMITED, c.tenant("bob").quota());
        assertThrows(IllegalArgumentException.class, () -> c.tenant("mallory"));
    }

    @Test
    void flagsOverrideFile_andPublicUrlFollowsThem(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.json");
        Files.writeString(f, """
                {"http": {"port": 9000}, "auth": {"tokens": [{"tenant": "a", "sha256": "%s"}]}, "tenants": {"a": {}}}
                """.formatted("b".repeat(64)));
        OperatorConfig c = OperatorConfig.load(f, "127.0.0.2", 9100);
        assertEquals("http://127.0.0.2:9100", c.http().publicUrl());
    }

    @Test
    void jwtAudienceDefaultsToPublicUrl_andJwksResolvesNextToTheFile(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("keys.json"), JwtFixture.create().publicJwks());
        Path f = dir.resolve("c.json");
        Files.writeString(f, """
                {"http": {"public_url": "https://berth.example/"}, "auth": {"jwt": {"issuer": "https://idp.example", "jwks_file": "keys.json"}},
                 "tenants": {"a": {}}}""");
        OperatorConfig c = OperatorConfig.load(f);
        assertEquals("https://berth.example", c.auth().jwt().audience());
        assertEquals(dir.resolve("keys.json").toString(), c.auth().jwt().jwksFile());
        assertEquals("sub", c.auth().jwt().tenantClaim());
    }

    /** The operator config shown in the README loads (once its placeholder hash and key file are real). */
    @Test
    void secretBindings_relativeFileResolvesNextToTheConfig_andTenantsMayOnlyNameDefinedOnes(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("gh.token"), "ghp_fromfile\n");
        String egress = """
                "egress": {"presets": ["github"], "secrets": {"github": {"env": "GITHUB_TOKEN", "hosts": ["api.github.com"], "fromFile": "gh.token"}}}""";
        Path ok = dir.resolve("ok.json");
        Files.writeString(ok, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}]}, %s,
                 "tenants": {"alice": {"secrets": ["github"]}, "bob": {}}}""".formatted("a".repeat(64), egress));
        OperatorConfig c = OperatorConfig.load(ok);
        assertEquals(java.util.Set.of("github"), c.egressConfig().secrets().keySet());
        assertTrue(c.tenant("alice").maySecret("github"));
        assertTrue(!c.tenant("bob").maySecret("github"), "a tenant gets no binding it was not given");
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}]}, %s,
                 "tenants": {"alice": {"secrets": ["gitlab"]}}}""".formatted("a".repeat(64), egress));
        var e = assertThrows(OperatorConfig.ConfigException.class, () -> OperatorConfig.load(bad));
        assertTrue(e.getMessage().contains("tenants.alice.secrets names 'gitlab', which egress.secrets does not define (defined: github)"),
                e.getMessage());
    }

    @Test
    void readmeExample_loads(@TempDir Path dir) throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        int at = readme.indexOf("```json", readme.indexOf("The operator config"));
        assertTrue(at > 0, "README lost its operator config example");
        String json = readme.substring(at + 7, readme.indexOf("```", at + 7));
        Files.writeString(dir.resolve("issuer-keys.json"), JwtFixture.create().publicJwks());
        Files.writeString(dir.resolve("c.json"), json.replace("<sha256 of alice's token>", "c".repeat(64)));
        OperatorConfig c = OperatorConfig.load(dir.resolve("c.json"));
        assertEquals("https://berth.example.com", c.auth().jwt().audience());
        assertEquals(8, c.tenant("alice").quota().vcpus());
    }

    @Test
    void oldEgressSpelling_loadsWithTheSameMeaning_andWarnsOncePerKey(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("gh.token"), "ghp_fromfile\n");
        String old = """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}]}, "tenants": {"alice": {"secrets": ["github", "api"]}},
                 "egress": {"presets": ["github"], "limits": {"maxTunnelsPerWorkspace": 9, "headerTimeoutMs": 3000},
                  "secrets": {"github": {"env": "GITHUB_TOKEN", "hosts": ["github.com"], "fromFile": "gh.token"},
                              "api": {"env": "API_TOKEN", "hosts": ["api.github.com"], "fromFile": "gh.token"}}}}""".formatted("a".repeat(64));
        String now = old.replace("maxTunnelsPerWorkspace", "max_tunnels_per_workspace").replace("headerTimeoutMs", "header_timeout_ms")
                .replace("fromFile", "from_file");
        Files.writeString(dir.resolve("old.json"), old);
        Files.writeString(dir.resolve("new.json"), now);
        List<String> oldWarnings = new java.util.ArrayList<>();
        List<String> newWarnings = new java.util.ArrayList<>();
        OperatorConfig o = OperatorConfig.load(dir.resolve("old.json"), null, null, true, oldWarnings::add);
        OperatorConfig n = OperatorConfig.load(dir.resolve("new.json"), null, null, true, newWarnings::add);
        assertEquals(List.of("egress key 'maxTunnelsPerWorkspace' is deprecated; use 'max_tunnels_per_workspace'",
                "egress key 'headerTimeoutMs' is deprecated; use 'header_timeout_ms'",
                "egress key 'fromFile' is deprecated; use 'from_file'"), oldWarnings, "one warning per key, however often it appears");
        assertEquals(List.of(), newWarnings);
        var oe = o.egressConfig();
        var ne = n.egressConfig();
        assertEquals(9, oe.maxTunnelsPerWorkspace());
        assertEquals(ne.maxTunnelsPerWorkspace(), oe.maxTunnelsPerWorkspace());
        assertEquals(ne.headerTimeout(), oe.headerTimeout());
        // the old key's relative file resolves next to the config too (a missing file would have refused the load)
        assertEquals(ne.secrets().keySet(), oe.secrets().keySet());
        assertEquals(ne.secrets().get("api").hosts(), oe.secrets().get("api").hosts());
    }

    @Test
    void missingFile_saysSo() {
        var e = assertThrows(OperatorConfig.ConfigException.class, () -> OperatorConfig.load(Path.of("/nonexistent/berth.json")));
        assertEquals("config file /nonexistent/berth.json does not exist", e.getMessage());
    }

    @Test
    void fleet_absentIsSingleNode_presentIsResolvedWithDefaults(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.json");
        String auth = "\"auth\": {\"tokens\": [{\"tenant\": \"a\", \"sha256\": \"" + "ab".repeat(32) + "\"}]}, \"tenants\": {\"a\": {}}";
        Files.writeString(f, "{" + auth + "}");
        assertEquals(null, OperatorConfig.load(f).fleet(), "no fleet section: a single node, as before");
        Files.writeString(dir.resolve("node.secret"), "0123456789abcdef0123456789abcdef\n");
        Files.writeString(f, "{" + auth + ", \"http\": {\"bind\": \"127.0.0.2\", \"port\": 8181}, \"fleet\": {\"endpoints\":"
                + " [\"http://127.0.0.1:2379\", \"http://127.0.0.1:22379\"], \"node_id\": \"n-1\", \"labels\": {\"zone\": \"a\"},"
                + " \"internal_credential_file\": \"node.secret\"}}");
        var fleet = OperatorConfig.load(f).fleet();
        assertEquals("http://127.0.0.2:8181", fleet.advertise(), "advertised at the public URL unless told");
        assertEquals(dir.resolve("node.secret").toString(), fleet.internalCredentialFile());
        assertEquals(10, fleet.leaseTtlS());
        assertEquals("/berth/", fleet.prefix());
        assertEquals(2, fleet.etcd().endpoints().size());
        assertEquals(32, fleet.credential().length);
    }
}
