package dev.berth.engine;

import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsServer;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.proxy.policy.RegistryRule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Issue 16, "Then" 1 (read-only registries), with the real npm client inside a real namespace workspace: the
 * registry host has an npm rule, so the proxy intercepts it for every workspace (no secret needed; the engine
 * installs its CA), reads work, and {@code npm publish} with a token the workspace got hold of is refused with the
 * reason before anything reaches the registry.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegistryRulesEndToEndTest {
    Path home;
    TestPki pki;
    HttpsServer registry;
    int port;
    Engine engine;
    final List<String> seen = new CopyOnWriteArrayList<>();

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-registry-");
        pki = TestPki.create();
        registry = pki.https(ex -> {
            seen.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath());
            if (ex.getRequestURI().getPath().equals("/left-pad")) {
                return "{\"name\":\"left-pad\",\"dist-tags\":{\"latest\":\"1.3.0\"},\"versions\":{\"1.3.0\":{\"name\":\"left-pad\","
                        + "\"version\":\"1.3.0\",\"dist\":{\"tarball\":\"https://npm.reg.test:" + port + "/left-pad/-/left-pad-1.3.0.tgz\"}}}}";
            }
            return "{}";
        }, "npm.reg.test");
        port = registry.getAddress().getPort();
        Path testCa = pki.writeCaPem(home.resolve("test-root.pem"));
        EgressSettings egress = EgressFixture.registryProxy(List.of("npm.reg.test:" + port), port, testCa,
                RegistryRule.of(RegistryRule.Kind.NPM, List.of("npm.reg.test"), null));
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withEgress(egress));
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        TestPki.close(registry);
        dev.berth.engine.spi.Trees.delete(home);
    }

    RunResult sh(String ws, String cmd) throws EngineException {
        return engine.run(Tenant.LOCAL, new RunRequest(ws, cmd, null, Map.of(), 120, null, null), OutputListener.NONE);
    }

    @Test
    void npmView_reads_butNpmPublish_refusedWithReason_neverReachesTheRegistry() throws Exception {
        String ws = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
        String reg = "https://npm.reg.test:" + port + "/";
        RunResult view = sh(ws, "npm view left-pad version --registry " + reg + " --fetch-retries=0 2>&1");
        assertEquals("1.3.0\n", view.stdout(), view.toString());
        RunResult publish = sh(ws, "mkdir -p /workspace/evil && cd /workspace/evil && npm init -y >/dev/null"
                + " && printf '//npm.reg.test:" + port + "/:_authToken=stolen\\n' > .npmrc"
                + " && npm publish --registry " + reg + " 2>&1; echo exit=$?");
        assertTrue(publish.stdout().contains("403"), publish.toString());
        assertTrue(publish.stdout().trim().endsWith("exit=1"), publish.toString());
        assertTrue(publish.egressDenied().stream().anyMatch(d -> d.host().equals("npm.reg.test")
                && d.reason().equals("npm registry 'npm.reg.test' is read-only for workspaces: PUT /evil (publish) refused")),
                publish.egressDenied().toString());
        assertTrue(seen.stream().noneMatch(s -> s.startsWith("PUT")), seen.toString());
    }
}
