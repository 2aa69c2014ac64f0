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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsServer;
import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.audit.AuditVerifier;
import dev.berth.engine.audit.Receipts;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.proxy.policy.SecretBinding;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The audit chain and receipts from a real engine (namespace driver, real egress proxy with a real secret binding,
 * real HTTPS upstream on loopback): what a run leaves in its tenant's chain, that no secret value lands in any audit
 * file, that receipts verify against the chain, that the chain continues across park, resume and an engine restart,
 * and that a run is refused, not run unrecorded, when its log cannot be written.
 */
class EvidenceTest {
    static final String REAL = "ghp_AUDITsecretVALUE0123456789abcdef";
    static final Tenant ALICE = new Tenant("alice", Tenant.Quota.UNLIMITED, null);
    static final Tenant BOB = new Tenant("bob", Tenant.Quota.UNLIMITED, null);

    Path home;
    TestPki pki;
    HttpsServer upstream;
    int port;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-evidence-");
        pki = TestPki.create();
        upstream = pki.https(ex -> ex.getRequestURI().getPath() + " " + TestPki.describeAuth(ex, REAL), "api.cred.test");
        port = upstream.getAddress().getPort();
        engine = startEngine();
    }

    Engine startEngine() throws Exception {
        AuditTrail trail = AuditTrail.open(home, AuditTrail.OnFailure.REFUSE);
        EgressSettings egress = EgressFixture.secretProxy(List.of("api.cred.test:" + port), port, pki.writeCaPem(home.resolve("test-root.pem")),
                SecretBinding.of("gh", "GH_TOKEN", List.of("api.cred.test"), REAL), home.resolve("ca"), trail.egressSink());
        return Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withEgress(egress).withAudit(trail));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        TestPki.close(upstream);
        dev.berth.engine.spi.Trees.delete(home);
    }

    RunResult sh(Tenant t, String ws, String cmd) throws EngineException {
        return engine.run(t, new RunRequest(ws, cmd, null, Map.of("NOT_A_SECRET_NAME", "value-" + REAL), 60, "stdin " + REAL, null, null, null),
                OutputListener.NONE);
    }

    Path log(String tenant) { return AuditTrail.tenantLog(home.resolve("audit"), tenant); }

    @Test
    void run_withSecretBinding_recordsEverything_butNoSecretValueInAnyAuditFile() throws Exception {
        String ws = engine.open(ALICE, new OpenRequest("proj", "persistent", null, null, null, null, List.of("gh"))).workspace().id();
        RunResult r = sh(ALICE, ws, "curl -sS --max-time 20 -H \"Authorization: Bearer $GH_TOKEN\" https://api.cred.test:" + port + "/user;"
                + " curl -sS --max-time 5 https://denied.example:443/ 2>/dev/null; echo");
        assertTrue(r.stdout().startsWith("/user auth=bearer-real"), r.toString());
        engine.writeFile(ALICE, ws, "notes.txt", ("token " + REAL).getBytes(StandardCharsets.UTF_8), false, null);
        engine.park(ALICE, ws);
        sh(ALICE, ws, "true"); // resumes
        engine.close();
        engine = null;

        String alice = Files.readString(log("alice"));
        for (String type : List.of("\"type\":\"workspace\"", "\"event\":\"open\"", "\"type\":\"run_start\"", "\"type\":\"credential\"",
                "\"event\":\"minted\"", "\"event\":\"revoked\"", "\"type\":\"egress\"", "\"type\":\"run\"", "\"type\":\"file_written\"",
                "\"event\":\"park\"", "\"event\":\"resume\"", "\"host\":\"api.cred.test\"", "\"env_names\":[\"NOT_A_SECRET_NAME\"]")) {
            assertTrue(alice.contains(type), type + " missing in " + alice);
        }
        // the run's own records in chain order (some are written on other threads; the order is still the run's)
        List<String> ofRun = alice.lines().filter(l -> l.contains("\"run\":\"" + r.runId() + "\""))
                .map(l -> l.contains("\"type\":\"credential\"") ? (l.contains("\"event\":\"minted\"") ? "minted" : "revoked")
                        : l.replaceAll(".*\"type\":\"([a-z_]+)\".*", "$1"))
                .filter(t -> !t.equals("egress")).toList();
        assertEquals(List.of("run_start", "minted", "revoked", "run"), ofRun, alice);
        String basic = Base64.getEncoder().encodeToString(("x:" + REAL).getBytes(StandardCharsets.UTF_8));
        try (Stream<Path> files = Files.walk(home.resolve("audit"))) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                String text = Files.readString(f);
                assertFalse(text.contains(REAL) || text.contains(basic) || text.contains("berth-secret-gh-"),
                        f + " holds a secret value or a placeholder");
            }
        }
        var report = AuditVerifier.verify(log("alice"), dev.berth.engine.audit.ServerKey.loadOrCreate(home.resolve("keys")));
        assertEquals(AuditVerifier.Status.OK, report.status(), report.message());

        Map<String, Object> receipt = r.receipt();
        assertNotNull(receipt);
        var key = dev.berth.engine.audit.ServerKey.loadOrCreate(home.resolve("keys"));
        assertTrue(Receipts.verify(receipt, key).ok());
        var chain = Receipts.verifyAgainstLog(receipt, home.resolve("audit"), key);
        assertTrue(chain.ok(), chain.message());
        assertEquals(List.of(Map.of("name", "gh", "host", "api.cred.test", "count", 1)), receipt.get("secrets_used"));
        @SuppressWarnings("unchecked") Map<String, Object> egress = (Map<String, Object>) receipt.get("egress");
        // two allowed decisions: the CONNECT (intercepted for the binding) and the request inside it
        assertEquals(List.of(Map.of("host", "api.cred.test:" + port, "count", 2L)), egress.get("allowed"), egress.toString());
        assertTrue(egress.get("denied").toString().contains("denied.example:443"), egress.toString());
        @SuppressWarnings("unchecked") Map<String, Object> out = (Map<String, Object>) receipt.get("stdout");
        assertEquals(dev.berth.engine.audit.Canonical.sha256(r.stdout().getBytes(StandardCharsets.UTF_8)), out.get("sha256"));
    }

    @Test
    void chain_continuesAcrossEngineRestart() throws Exception {
        String ws = engine.open(ALICE, OpenRequest.persistent("keep")).workspace().id();
        sh(ALICE, ws, "true");
        engine.close();
        engine = startEngine();
        sh(ALICE, ws, "echo after restart");
        engine.close();
        engine = null;
        var key = dev.berth.engine.audit.ServerKey.loadOrCreate(home.resolve("keys"));
        var r = AuditVerifier.verify(log("alice"), key);
        assertEquals(AuditVerifier.Status.OK, r.status(), r.message());
        assertTrue(Files.readString(log("alice")).contains("after restart"));
        assertEquals(1, Files.readAllLines(log("alice")).stream().filter(l -> l.contains("\"format\":\"berth-audit\"")).count(),
                "one header: the restarted server appended to the same chain");
    }

    @Test
    void tenants_recordsStayInTheirOwnLog() throws Exception {
        String a = engine.open(ALICE, OpenRequest.ephemeral()).workspace().id();
        String b = engine.open(BOB, OpenRequest.ephemeral()).workspace().id();
        sh(ALICE, a, "echo alice-was-here");
        sh(BOB, b, "echo bob-was-here");
        engine.close();
        engine = null;
        String alice = Files.readString(log("alice"));
        String bob = Files.readString(log("bob"));
        assertTrue(alice.contains("alice-was-here") && !alice.contains("bob-was-here") && !alice.contains(b));
        assertTrue(bob.contains("bob-was-here") && !bob.contains("alice-was-here") && !bob.contains(a));
    }

    @Test
    void run_whenTheLogCannotBeWritten_isRefusedAndNothingRuns() throws Exception {
        String ws = engine.open(ALICE, OpenRequest.ephemeral()).workspace().id();
        engine.close();
        // the disk is full: every write to bob's log fails with ENOSPC
        Files.createSymbolicLink(log("bob"), Path.of("/dev/full"));
        engine = startEngine();
        EngineException e = assertThrows(EngineException.class, () -> engine.open(BOB, OpenRequest.ephemeral()));
        assertTrue(e.getMessage().contains("No space left on device") && e.getMessage().contains("refuses to act unrecorded"), e.getMessage());
        assertEquals(List.of(), engine.list(BOB), "the workspace that could not be recorded was not left behind");
        assertTrue(engine.list(ALICE).isEmpty() || !engine.list(ALICE).getFirst().id().equals(ws));
    }
}
