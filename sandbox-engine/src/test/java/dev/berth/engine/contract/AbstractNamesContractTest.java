package dev.berth.engine.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.host.GuestNames;
import dev.berth.engine.spi.Trees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A workspace looks like a normal machine on every level: it has a hostname ({@code hostname}, {@code uname -n} and
 * {@code /etc/hostname} agree), {@code localhost} and the hostname resolve through {@code /etc/hosts} and a server
 * on {@code localhost:PORT} is reached by that name, and a lookup of any other name fails at once with the reason
 * written in {@code /etc/resolv.conf} (there is no DNS inside; the egress proxy resolves names), never after a
 * resolver timeout. The hosts file is the workspace's own: a workload that rewrites it changes no other workspace.
 *
 * <p>Lookups run under a run timeout of {@value #LOOKUP_BOUND_SECONDS} s, below a resolver's default timeout (5 s per
 * try): a lookup that waits for DNS fails the case as timed out. Cost: one engine, one persistent workspace for the
 * class, one more for the hostile case.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractNamesContractTest {
    /** How long a lookup may take before it counts as a hang (a resolver's own timeout is 5 s). */
    static final int LOOKUP_BOUND_SECONDS = 4;
    /** A name that must not resolve inside a workspace (reserved: it exists nowhere else either). */
    static final String EXTERNAL = "registry.example.com";

    private Path home;
    private Engine engine;
    private String ws;

    /** The level under test. */
    protected abstract Level level();

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-names-contract-");
        engine = level().start(home, c -> c);
        ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("names")).workspace().id();
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) Trees.delete(home);
    }

    private RunResult run(String workspace, String cmd, int timeoutSeconds) throws EngineException {
        return engine.run(Tenant.LOCAL, new RunRequest(workspace, cmd, null, Map.of(), timeoutSeconds, null, null), OutputListener.NONE);
    }

    @Test
    void hostname_isTheWorkspacesName_everywhereItIsRead() throws Exception {
        RunResult r = run(ws, "hostname; uname -n; cat /etc/hostname", 60);
        assertEquals(0, r.exitCode(), r.toString());
        String n = GuestNames.HOSTNAME + "\n";
        assertEquals(n + n + n, r.stdout());
    }

    @Test
    void etcFiles_holdTheNamesEveryWorkspaceGets() throws Exception {
        assertEquals(GuestNames.DEFAULT_HOSTS, run(ws, "cat /etc/hosts", 60).stdout());
        assertEquals(GuestNames.RESOLV_CONF, run(ws, "cat /etc/resolv.conf", 60).stdout());
        RunResult ns = run(ws, "grep '^hosts:' /etc/nsswitch.conf", 60);
        assertEquals("hosts:          files dns\n", ns.stdout(), ns.toString());
    }

    @Test
    void localhost_resolvesThroughEtcHosts_andReachesAServerListeningOnIt() throws Exception {
        // busybox wget resolves with getaddrinfo (the image's C library: nsswitch, /etc/hosts) and tries the first
        // address only (::1 where the loopback has IPv6): the server listens on every loopback address; -Y off: no proxy
        RunResult r = run(ws, "mkdir -p /tmp/www && echo served > /tmp/www/index.html"
                + " && { busybox httpd -f -p 18080 -h /tmp/www & }"
                + " && until busybox nc 127.0.0.1 18080 </dev/null; do sleep 0.1; done"
                + " && busybox wget -Y off -q -O- http://localhost:18080/ && busybox wget -Y off -q -O- http://" + GuestNames.HOSTNAME
                + ":18080/ 2>&1; kill %1 2>/dev/null; true", 60);
        assertFalse(r.timedOut(), r.toString());
        assertEquals("served\nserved\n", r.stdout(), r.toString());
    }

    @Test
    void localhost_resolvesForNode_andAnHttpServerOnLocalhostIsReachedByName() throws Exception {
        level().assumeHostUserland("node and getent");
        // (not getent ahostsv4: it asks with AI_ADDRCONFIG, which counts no loopback address, so it finds nothing
        // on any machine whose only interface is lo, Berth or not)
        RunResult g = run(ws, "getent ahosts localhost | grep -c STREAM; getent hosts " + GuestNames.HOSTNAME, LOOKUP_BOUND_SECONDS);
        assertFalse(g.timedOut(), g.toString());
        assertEquals(0, g.exitCode(), g.toString());
        assertTrue(g.stdout().startsWith("2\n"), "localhost has an IPv4 and an IPv6 address: " + g);
        assertTrue(g.stdout().matches("(?s).*\\n127\\.0\\.1\\.1\\s+" + GuestNames.HOSTNAME + "\\n"), g.toString());
        String js = "const dns=require('dns'),http=require('http');"
                + "dns.lookup('localhost',(e,a,f)=>{if(e){console.log('lookup failed',e.code);process.exit(2)}"
                + "console.log('lookup',a);"
                + "const s=http.createServer((q,r)=>r.end('hello')).listen(0,'localhost',()=>{"
                + "http.get('http://localhost:'+s.address().port+'/',r=>{let b='';r.on('data',d=>b+=d);"
                + "r.on('end',()=>{console.log('got',b);s.close()})}).on('error',e=>{console.log('get failed',e.code);process.exit(3)})})})";
        RunResult r = run(ws, "node -e \"" + js + "\"", 60);
        assertEquals(0, r.exitCode(), r.toString());
        assertTrue(r.stdout().matches("lookup (127\\.0\\.0\\.1|::1)\ngot hello\n"), r.toString());
    }

    @Test
    void externalName_failsAtOnce_withTheReasonInResolvConf() throws Exception {
        RunResult b = run(ws, "busybox nslookup " + EXTERNAL + " 2>&1; echo exit=$?", LOOKUP_BOUND_SECONDS);
        assertFalse(b.timedOut(), "busybox nslookup waited for a DNS answer: " + b);
        assertNotEquals("exit=0", b.stdout().strip().lines().reduce((x, y) -> y).orElse(""), b.toString());
        assertTrue(b.stdout().contains("refused"), b.toString());
        // the same lookup through the C library (busybox wget: getaddrinfo, before it would use a proxy)
        RunResult w = run(ws, "busybox wget -Y off -q -O- http://" + EXTERNAL + "/ 2>&1; echo exit=$?", LOOKUP_BOUND_SECONDS);
        assertFalse(w.timedOut(), "getaddrinfo waited for a DNS answer: " + w);
        assertTrue(w.stdout().contains("bad address"), w.toString());
        if (level().hostUserland()) {
            RunResult n = run(ws, "getent hosts " + EXTERNAL + "; echo getent=$?; node -e \"require('dns').lookup('" + EXTERNAL
                    + "',(e,a)=>console.log(e?e.code:a))\"", LOOKUP_BOUND_SECONDS);
            assertFalse(n.timedOut(), "getent or Node waited for a DNS answer: " + n);
            assertEquals("getent=2\nEAI_AGAIN\n", n.stdout(), n.toString());
        }
        assertTrue(run(ws, "cat /etc/resolv.conf", 60).stdout().contains("there is no DNS server"));
    }

    @Test
    void hostile_rewritingEtcHosts_changesOnlyItsOwnWorkspace() throws Exception {
        String other = engine.open(Tenant.LOCAL, OpenRequest.persistent("hostile")).workspace().id();
        try {
            RunResult w = run(other, "echo '10.66.0.1 localhost planted.example' > /etc/hosts && cat /etc/hosts", 60);
            assertEquals(0, w.exitCode(), "a workspace's /etc/hosts is its own to write, as on a normal machine: " + w);
            assertEquals("10.66.0.1 localhost planted.example\n", w.stdout());
            // neither an open workspace nor one opened after it sees the change
            assertEquals(GuestNames.DEFAULT_HOSTS, run(ws, "cat /etc/hosts", 60).stdout());
            String fresh = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
            try {
                assertEquals(GuestNames.DEFAULT_HOSTS, run(fresh, "cat /etc/hosts", 60).stdout());
            } finally {
                engine.closeWorkspace(Tenant.LOCAL, fresh, false);
            }
            // its own change outlives a park (where a start makes the file again, the entries it removed come back)
            engine.park(Tenant.LOCAL, other);
            RunResult after = run(other, "cat /etc/hosts", 60);
            assertTrue(after.stdout().startsWith("10.66.0.1 localhost planted.example\n"), after.toString());
        } finally {
            engine.closeWorkspace(Tenant.LOCAL, other, true);
        }
    }
}
