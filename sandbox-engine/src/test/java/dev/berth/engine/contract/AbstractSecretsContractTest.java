package dev.berth.engine.contract;

import dev.berth.engine.TestPki;
import dev.berth.engine.EgressFixture;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsServer;
import dev.berth.engine.Await;
import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SecretUse;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.Trees;
import dev.berth.proxy.policy.SecretBinding;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The secrets contract, from inside a real workspace of every level (real egress proxy, real HTTPS upstream on
 * loopback): the workspace holds only a placeholder, the proxy swaps it for the real secret on the bound host only,
 * and the placeholder is worthless once its run has returned. The test's "public" CA stands in for the system roots:
 * the proxy trusts it for upstreams, the workspace trusts only what the engine installs. Cases that need curl are
 * skipped, saying so, on the microVM test image (busybox only); the busybox wget case runs everywhere.
 *
 * <p>Cost: one engine; the cases that need a workspace bound to {@code gh} share one (each uses its own files), plus
 * one without secrets and one persistent workspace that is parked.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractSecretsContractTest {
    static final String REAL = "ghp_REALsecretVALUE0123456789abcdef";
    static final String PLACEHOLDER = "berth-secret-gh-[0-9a-f]{32}";

    private Path home;
    private TestPki pki;
    private HttpsServer upstream;
    private int port;
    private Engine engine;
    /** The shared workspace bound to {@code gh}. */
    private String ws;

    /** The level under test. */
    protected abstract Level level();

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-secrets-contract-");
        pki = TestPki.create();
        upstream = pki.https(ex -> ex.getRequestURI().getPath() + " " + TestPki.describeAuth(ex, REAL),
                "api.cred.test", "other.cred.test");
        port = upstream.getAddress().getPort();
        Path testCa = pki.writeCaPem(home.resolve("test-root.pem"));
        EgressSettings egress = EgressFixture.secretProxy(List.of("api.cred.test:" + port, "other.cred.test:" + port), port, testCa,
                SecretBinding.of("gh", "GH_TOKEN", List.of("api.cred.test"), REAL), home.resolve("ca"));
        engine = level().start(home, c -> c.withEgress(egress));
        ws = open(List.of("gh"));
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (upstream != null) upstream.stop(0);
        if (home != null) Trees.delete(home);
    }

    private String open(List<String> secrets) throws EngineException {
        return engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null, null, null, secrets)).workspace().id();
    }

    private RunResult sh(String workspace, String cmd) throws EngineException {
        return sh(workspace, cmd, null);
    }

    private RunResult sh(String workspace, String cmd, List<String> secrets) throws EngineException {
        return engine.run(Tenant.LOCAL, new RunRequest(workspace, cmd, null, Map.of(), 60, null, null, null, secrets), OutputListener.NONE);
    }

    private String url(String host, String path) {
        return "https://" + host + ":" + port + path;
    }

    // ---------------------------------------------------------------- the placeholder

    @Test
    void workspaceHoldsOnlyAPlaceholder_realValueNowhereInside() throws Exception {
        RunResult env = sh(ws, "printf %s \"$GH_TOKEN\"");
        assertTrue(env.stdout().matches(PLACEHOLDER), env.stdout());
        RunResult again = sh(ws, "printf %s \"$GH_TOKEN\"");
        assertNotEquals(env.stdout(), again.stdout(), "each run gets its own placeholder");
        RunResult hunt = sh(ws, "grep -rl -s '" + REAL + "' /workspace /root /var /tmp /etc; "
                + "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c -s '" + REAL + "'; true");
        assertEquals("0\n", hunt.stdout(), hunt.toString());
        assertEquals(List.of("gh"), engine.list(Tenant.LOCAL).stream().filter(w -> w.id().equals(ws)).findFirst().orElseThrow().secrets());
    }

    @Test
    void runWithSecretsNarrowedToNone_hasNoPlaceholder() throws Exception {
        RunResult r = sh(ws, "printf %s \"${GH_TOKEN:-unset}\"", List.of());
        assertEquals("unset", r.stdout());
        EngineException e = assertThrows(EngineException.class, () -> sh(ws, "true", List.of("npm")));
        assertTrue(e.getMessage().contains("secret 'npm' is not bound to workspace"), e.getMessage());
        EngineException env = assertThrows(EngineException.class, () -> engine.run(Tenant.LOCAL,
                new RunRequest(ws, "true", null, Map.of("GH_TOKEN", "mine"), null, null, null), OutputListener.NONE));
        assertTrue(env.getMessage().contains("placeholder of secret binding 'gh'"), env.getMessage());
    }

    @Test
    void secretsMustBeConfiguredAndGranted() {
        EngineException unknown = assertThrows(EngineException.class, () -> open(List.of("aws")));
        assertTrue(unknown.getMessage().contains("no secret binding 'aws' is available to you; available: gh"), unknown.getMessage());
        Tenant bob = new Tenant("bob", Tenant.Quota.UNLIMITED);
        EngineException denied = assertThrows(EngineException.class, () -> engine.open(bob,
                new OpenRequest(null, "ephemeral", null, null, null, null, List.of("gh"))));
        assertTrue(denied.getMessage().contains("no secret binding 'gh' is available to you; the operator has bound none"),
                denied.getMessage());
    }

    // ---------------------------------------------------------------- the swap, on the bound host only

    @Test
    void boundHost_getsTheRealSecret_bearerAndBasic() throws Exception {
        level().assumeHostUserland("curl -H and -u");
        RunResult bearer = sh(ws, "curl -sS --max-time 20 -H \"Authorization: Bearer $GH_TOKEN\" " + url("api.cred.test", "/user"));
        assertEquals("/user auth=bearer-real", bearer.stdout(), bearer.toString());
        assertEquals(List.of(new SecretUse("gh", "api.cred.test", 1)), bearer.secretsUsed());
        assertTrue(bearer.note().contains("injected secret 'gh'"), bearer.note());
        // git and many tools send the token as the password of HTTP basic auth
        RunResult basic = sh(ws, "curl -sS --max-time 20 -u \"x-access-token:$GH_TOKEN\" " + url("api.cred.test", "/repo"));
        assertEquals("/repo auth=basic-real", basic.stdout(), basic.toString());
        assertFalse(bearer.stdout().contains(REAL) || basic.stdout().contains(REAL));
    }

    /**
     * busybox wget sends its run's placeholder as an absolute-form https:// request (it does not CONNECT; the proxy
     * speaks verified TLS to the upstream itself), and the upstream receives the real value. The proxy's CA lands in
     * the sandbox at every start, for clients that do CONNECT.
     */
    @Test
    void busyboxWget_sendsThePlaceholder_upstreamGetsTheSecret() throws Exception {
        RunResult r = sh(ws, "busybox wget -q -O - --header \"Authorization: Bearer $GH_TOKEN\" " + url("api.cred.test", "/-/whoami")
                + "; echo; head -c 27 /var/lib/berth/egress-ca.pem");
        assertEquals("/-/whoami auth=bearer-real\n-----BEGIN CERTIFICATE-----", r.stdout(), r.toString());
        assertEquals(List.of(new SecretUse("gh", "api.cred.test", 1)), r.secretsUsed());
        RunResult env = sh(ws, "cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -c " + REAL + "; printf %s \"$GH_TOKEN\"");
        assertTrue(env.stdout().matches("0\n" + PLACEHOLDER), env.toString());
    }

    @Test
    void placeholderInUrl_refusedWithReason_realValueNeverEchoedIntoTheWorkspace() throws Exception {
        level().assumeHostUserland("curl -w '%{http_code}'");
        // the upstream echoes the request path: before issue 16 the proxy swapped the placeholder there too
        RunResult r = sh(ws, "curl -sS --max-time 20 -w ' %{http_code}' " + url("api.cred.test", "/echo/$GH_TOKEN"));
        assertFalse(r.stdout().contains(REAL) || r.stderr().contains(REAL), r.toString());
        assertTrue(r.stdout().endsWith(" 403"), r.toString());
        assertEquals(1, r.egressDenied().size(), r.toString());
        assertTrue(r.egressDenied().get(0).reason().startsWith("credential placeholder in the request target is refused, never swapped"),
                r.egressDenied().toString());
        assertEquals(List.of(), r.secretsUsed());
    }

    @Test
    void unboundHost_isNotIntercepted_andGetsOnlyThePlaceholder() throws Exception {
        level().assumeHostUserland("curl --cacert (TLS end to end through CONNECT)");
        engine.writeFile(Tenant.LOCAL, ws, "/workspace/test-root.pem", pki.caPem().getBytes(), false, null);
        // trusting only the test root: this succeeds only if the TLS session is end to end with the real upstream
        RunResult r = sh(ws, "curl -sS --max-time 20 --cacert /workspace/test-root.pem -H \"Authorization: Bearer $GH_TOKEN\" "
                + url("other.cred.test", "/user"));
        assertTrue(r.stdout().matches("/user auth=Bearer " + PLACEHOLDER), r.toString());
        assertEquals(List.of(), r.secretsUsed());
        // the bound host, by contrast, is intercepted: the test root alone does not verify the proxy's certificate
        RunResult bound = sh(ws, "curl -sS --max-time 20 --cacert /workspace/test-root.pem " + url("api.cred.test", "/"));
        assertEquals(60, bound.exitCode(), bound.toString()); // CURLE_PEER_FAILED_VERIFICATION
    }

    @Test
    void workspaceWithoutSecrets_isNeverIntercepted() throws Exception {
        String plain = open(null);
        try {
            RunResult vars = sh(plain, "printf %s \"${SSL_CERT_FILE:-none} ${GH_TOKEN:-none}\"");
            assertEquals("none none", vars.stdout());
            level().assumeHostUserland("curl --cacert (TLS end to end through CONNECT)");
            engine.writeFile(Tenant.LOCAL, plain, "/workspace/test-root.pem", pki.caPem().getBytes(), false, null);
            RunResult r = sh(plain, "curl -sS --max-time 20 --cacert /workspace/test-root.pem " + url("api.cred.test", "/x"));
            assertEquals("/x auth=none", r.stdout(), r.toString());
        } finally {
            engine.closeWorkspace(Tenant.LOCAL, plain, true);
        }
    }

    // ---------------------------------------------------------------- revocation

    @Test
    void placeholderIsRevokedWhenItsRunReturns() throws Exception {
        level().assumeHostUserland("curl -w '%{http_code}'");
        sh(ws, "printf %s \"$GH_TOKEN\" > /workspace/stolen");
        RunResult later = sh(ws, "curl -sS --max-time 20 -o /dev/stderr -w '%{http_code}' -H \"Authorization: Bearer $(cat /workspace/stolen)\" "
                + url("api.cred.test", "/user"), List.of());
        assertEquals("403", later.stdout(), later.toString());
        assertTrue(later.stderr().contains("revoked"), later.stderr());
        assertEquals(1, later.egressDenied().size(), later.toString());
        assertTrue(later.egressDenied().get(0).reason().contains("revoked"), later.egressDenied().toString());
        assertEquals(List.of(), later.secretsUsed());
    }

    @Test
    void backgroundRun_placeholderLivesUntilTheProcessEnds() throws Exception {
        level().assumeHostUserland("curl -H and -w '%{http_code}'");
        ProcessStatus p = engine.startBackground(Tenant.LOCAL, new RunRequest(ws,
                "printf %s \"$GH_TOKEN\" > /workspace/bg-token; sleep 1; curl -sS --max-time 20 -H \"Authorization: Bearer $GH_TOKEN\" "
                        + url("api.cred.test", "/bg"), null, Map.of(), null, null, null));
        ProcessStatus done = engine.process(Tenant.LOCAL, ws, p.process(), 0L, 0L, 30, null, 65536);
        StringBuilder out = new StringBuilder(done.stdout());
        for (int i = 0; i < 10 && done.running(); i++) {
            done = engine.process(Tenant.LOCAL, ws, p.process(), null, null, 30, null, 65536);
            out.append(done.stdout());
        }
        assertTrue(out.toString().contains("/bg auth=bearer-real"), out + " " + done);
        // the exit callback revokes on the agent's thread, a moment after the process was seen to end
        RunResult[] after = new RunResult[1];
        try {
            Await.until("the background run's placeholder is refused", Duration.ofSeconds(10), () -> {
                after[0] = sh(ws, "curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -H \"Authorization: Bearer $(cat /workspace/bg-token)\" "
                        + url("api.cred.test", "/after"), List.of());
                return after[0].stdout().equals("403");
            });
        } catch (AssertionError timedOut) {
            // the assertion below says what was seen instead
        }
        assertEquals("403", after[0].stdout(), after[0].toString());
    }

    @Test
    void anotherRunsPlaceholder_leakedToIt_refusedWithReason_noSecretUsed() throws Exception {
        level().assumeHostUserland("curl -w '%{http_code}'");
        // run A (background) holds a placeholder; hostile code in it leaks the placeholder through the workspace's
        // files, since confined runs cannot read each other's /proc/PID/environ any more; it waits until B has tried
        ProcessStatus a = engine.startBackground(Tenant.LOCAL, new RunRequest(ws,
                "printf %s \"$GH_TOKEN\" > /workspace/leaked; while [ ! -e /workspace/b-done ]; do sleep 0.05; done",
                null, Map.of(), null, null, null));
        // run B has no credentials of its own: /proc shows it none of A's, so it takes the leaked one and sends it
        RunResult b = sh(ws, "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null | grep -q '^GH_TOKEN=' && echo seen-in-proc; done;"
                + " while [ ! -s /workspace/leaked ]; do sleep 0.05; done;"
                + " curl -sS --max-time 20 -o /dev/stderr -w '%{http_code}' -H \"Authorization: Bearer $(cat /workspace/leaked)\" "
                + url("api.cred.test", "/steal") + "; touch /workspace/b-done", List.of());
        assertEquals("403", b.stdout(), b.toString());
        assertEquals(1, b.egressDenied().size(), b.toString());
        String why = b.egressDenied().get(0).reason();
        assertTrue(why.startsWith("credential placeholder was minted for run '" + a.process() + "'; this connection belongs to run 'run-"), why);
        assertEquals(List.of(), b.secretsUsed());
        ProcessStatus done = engine.process(Tenant.LOCAL, ws, a.process(), 0L, 0L, 30, null, 65536);
        assertTrue(!done.running(), done.toString());
    }

    // ---------------------------------------------------------------- park and resume

    @Test
    void parkedPersistentWorkspace_keepsItsBindingsOnResume() throws Exception {
        engine.open(Tenant.LOCAL, new OpenRequest("keeper", "persistent", null, null, null, null, List.of("gh")));
        try {
            engine.park(Tenant.LOCAL, "keeper");
            // curl where the level has it (CONNECT, intercepted TLS); busybox wget (absolute-form https) on the test image
            String client = level().hostUserland() ? "curl -sS --max-time 20 -H" : "busybox wget -q -O - --header";
            RunResult r = sh("keeper", client + " \"Authorization: Bearer $GH_TOKEN\" " + url("api.cred.test", "/resumed"));
            assertTrue(r.resumed(), r.toString());
            assertEquals("/resumed auth=bearer-real", r.stdout(), r.toString());
            EngineException other = assertThrows(EngineException.class, () -> engine.open(Tenant.LOCAL,
                    new OpenRequest("keeper", null, null, null, null, null, List.of())));
            assertTrue(other.getMessage().contains("exists with secrets [gh]"), other.getMessage());
        } finally {
            engine.closeWorkspace(Tenant.LOCAL, "keeper", true);
        }
    }
}
