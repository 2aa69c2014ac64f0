package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsServer;
import dev.berth.engine.EgressFixture;
import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.RunRequest;
import dev.berth.engine.RunResult;
import dev.berth.engine.SecretUse;
import dev.berth.engine.Tenant;
import dev.berth.engine.TestPki;
import dev.berth.proxy.policy.SecretBinding;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Secret bindings on the microVM driver: busybox wget inside the guest sends its run's placeholder through the
 * agent's tunnel (as an absolute-form https:// request, which busybox uses instead of CONNECT; the proxy speaks
 * verified TLS to the upstream itself), and the HTTPS upstream on the host's loopback receives the real value. The
 * proxy's CA lands in the guest at every start, for clients that do CONNECT.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MicrovmSecretTest {
    static final String REAL = "npm_REALtokenVALUE_microvm_42";

    Path home;
    HttpsServer upstream;
    int port;
    Engine engine;

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-vm-secrets-");
        TestPki pki = TestPki.create();
        upstream = pki.https(ex -> ex.getRequestURI().getPath() + " " + TestPki.describeAuth(ex, REAL), "registry.cred.test");
        port = upstream.getAddress().getPort();
        var egress = EgressFixture.secretProxy(List.of("registry.cred.test:" + port), port, pki.writeCaPem(home.resolve("root.pem")),
                SecretBinding.of("npm", "NPM_TOKEN", List.of("registry.cred.test"), REAL), home.resolve("ca"));
        engine = Engine.start(EngineConfig.defaults(home, List.of(new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST)))
                .withEgress(egress));
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        TestPki.close(upstream);
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    @Test
    void guestSendsThePlaceholder_upstreamGetsTheSecret() throws Exception {
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null, null, null, List.of("npm")))
                .workspace().id();
        RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, "wget -q -O - --header \"Authorization: Bearer $NPM_TOKEN\" "
                + "https://registry.cred.test:" + port + "/-/whoami; echo; head -c 27 /var/lib/berth/egress-ca.pem", null, Map.of(),
                60, null, null), OutputListener.NONE);
        assertEquals("/-/whoami auth=bearer-real\n-----BEGIN CERTIFICATE-----", r.stdout(), r.toString());
        assertEquals(List.of(new SecretUse("npm", "registry.cred.test", 1)), r.secretsUsed());
        RunResult env = engine.run(Tenant.LOCAL, RunRequest.of(ws, "cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -c " + REAL
                + "; printf %s \"$NPM_TOKEN\""), OutputListener.NONE);
        assertTrue(env.stdout().matches("0\nberth-secret-npm-[0-9a-f]{32}"), env.toString());
    }
}
