package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.session.Gatekeeper;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 26, item 3: named internal hosts. An operator may let a named host resolve into stated non-public ranges;
 * never an IP literal, never loopback, link-local or metadata, never wider than stated. Broken entries are refused at
 * load with the reason (both entries named when two disagree); at run time the gatekeeper's DNS seam is fed by a
 * resolver stub, and a name answering outside its ranges is refused with the reason.
 */
class InternalHostsTest {
    static final String ALLOW = "\"allow\": [{\"host\": \"mirror.corp.example\"}, {\"host\": \"other.corp.example\"}, {\"host\": \"10.1.2.3\"}]";

    static ProxyConfig load(String internal) throws ConfigException {
        return ConfigLoader.parse("{" + ALLOW + ", \"internal_hosts\": " + internal + "}");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"169.254.0.0/16\"]}]   | internal_hosts[0]: range 169.254.0.0/16 covers link-local and cloud metadata (169.254.169.254) (169.254.0.0/16), which no host may reach",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"169.254.169.254/32\"]}]| internal_hosts[0]: range 169.254.169.254/32 covers link-local and cloud metadata",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"127.0.0.0/8\"]}]      | internal_hosts[0]: range 127.0.0.0/8 covers loopback",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"0.0.0.0/0\"]}]        | internal_hosts[0]: range 0.0.0.0/0 covers loopback",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"::/0\"]}]             | internal_hosts[0]: range ::/0 covers unspecified, loopback and IPv4-compatible IPv6",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"fe80::/64\"]}]        | internal_hosts[0]: range fe80::/64 covers IPv6 link-local",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"fd00::/8\"]}]         | internal_hosts[0]: range fd00::/8 covers the cloud metadata endpoint (IPv6)",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"::ffff:10.0.0.0/104\"]}] | internal_hosts[0]: range ::ffff:10.0.0.0/104 covers IPv4-mapped IPv6",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"64:ff9b::/96\"]}]     | internal_hosts[0]: range 64:ff9b::/96 covers NAT64",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.2.3/16\"]}]      | internal_hosts[0].ranges: range '10.1.2.3/16' has host bits set; write the block it means exactly (10.1.0.0/16), never wider than stated",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0\"]}]         | internal_hosts[0].ranges: range '10.1.0.0' must be a CIDR block",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": []}]                     | internal_hosts[0].ranges must name at least one CIDR block",
            "[{\"host\": \"10.1.2.3\", \"ranges\": [\"10.1.0.0/16\"]}]                 | internal_hosts[0].host: '10.1.2.3' is an IP literal; internal_hosts names hosts, never addresses",
            "[{\"host\": \"*.corp.example\", \"ranges\": [\"10.1.0.0/16\"]}]           | internal_hosts[0].host: '*.corp.example' is a wildcard; name one host",
            "[{\"host\": \"nothere.example\", \"ranges\": [\"10.1.0.0/16\"]}]          | internal_hosts names host nothere.example which the egress allow-list does not allow; allow it too",
            "[{\"host\": \"mirror.corp.example\", \"preset\": \"npm\", \"ranges\": [\"10.1.0.0/16\"]}] | internal_hosts[0] needs exactly one of \"host\" and \"preset\"",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\"]}, {\"host\": \"MIRROR.corp.example.\", \"ranges\": [\"10.1.128.0/17\"]}] | internal_hosts[0] and internal_hosts[1] both name host mirror.corp.example ([10.1.0.0/16] and [10.1.128.0/17]): overlapping entries; give the host one entry",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\"]}, {\"host\": \"mirror.corp.example\", \"ranges\": [\"10.2.0.0/16\"]}] | internal_hosts[0] and internal_hosts[1] both name host mirror.corp.example ([10.1.0.0/16] and [10.2.0.0/16]): contradictory entries; give the host one entry",
            "[{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\", \"10.1.4.0/24\"]}] | internal_hosts[0]: ranges 10.1.0.0/16 and 10.1.4.0/24 overlap",
            "[{\"hots\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\"]}]      | unknown key 'hots' in internal_hosts[0]; did you mean 'host'?",
    })
    void brokenEntry_refusedAtLoad_withTheReason(String internal, String error) {
        ConfigException e = assertThrows(ConfigException.class, () -> load(internal));
        assertTrue(e.getMessage().startsWith(error), "expected '" + error + "', got '" + e.getMessage() + "'");
    }

    @Test
    void validEntries_loaded_namesMayShareARange_presetExpandsToItsHosts() throws Exception {
        ProxyConfig cfg = ConfigLoader.parse("{\"presets\": [\"npm\"], " + ALLOW + ", \"internal_hosts\": ["
                + "{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\", \"2001:db8::/32\"]},"
                + "{\"host\": \"other.corp.example\", \"ranges\": [\"10.1.0.0/16\"]},"
                + "{\"preset\": \"npm\", \"ranges\": [\"192.0.2.0/24\"]}]}");
        assertEquals(2 + dev.berth.proxy.policy.Presets.get("npm").size(), cfg.internalHosts().entries().size());
        assertEquals("internal_hosts[2] (preset npm)", cfg.internalHosts().entries().get(2).source());
        assertEquals("internal_hosts allows mirror.corp.example in 10.1.0.0/16",
                cfg.internalHosts().allowance("mirror.corp.example", InetAddress.ofLiteral("10.1.9.9")));
    }

    static Gatekeeper.Vetted decide(TestResolver resolver, String host) throws Exception {
        ProxyConfig cfg = load("[{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\", \"192.0.2.0/24\"]}]");
        ExecutorService dns = Executors.newSingleThreadExecutor();
        try {
            return new Gatekeeper(cfg.settings(), resolver, dns).decide(cfg.ceiling(), host, 443).get();
        } finally {
            dns.shutdownNow();
        }
    }

    @Test
    void namedHost_resolvingIntoItsRange_allowedAndTheDecisionSaysWhy() throws Exception {
        Gatekeeper.Vetted v = decide(new TestResolver().map("mirror.corp.example", "10.1.0.5"), "mirror.corp.example");
        assertTrue(v.allowed(), v.reason());
        assertEquals("10.1.0.5", v.addressText());
        assertTrue(v.reason().endsWith("; dialing 10.1.0.5 (internal_hosts allows mirror.corp.example in 10.1.0.0/16)"), v.reason());
        Gatekeeper.Vetted doc = decide(new TestResolver().map("mirror.corp.example", "192.0.2.7"), "mirror.corp.example");
        assertTrue(doc.allowed(), "a documentation range, as package registries resolve on these machines: " + doc.reason());
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', value = {
            "mirror.corp.example | 10.2.0.5         | host 'mirror.corp.example' resolved to 10.2.0.5, refused: 10.2.0.5 is private (RFC 1918 10.0.0.0/8) (internal_hosts allows mirror.corp.example only in [10.1.0.0/16, 192.0.2.0/24])",
            "mirror.corp.example | 169.254.169.254  | host 'mirror.corp.example' resolved to 169.254.169.254, refused: 169.254.169.254 is the cloud metadata endpoint (link-local) (internal_hosts allows mirror.corp.example only in [10.1.0.0/16, 192.0.2.0/24])",
            "mirror.corp.example | 127.0.0.1        | host 'mirror.corp.example' resolved to 127.0.0.1, refused: 127.0.0.1 is loopback 127.0.0.0/8 (internal_hosts allows mirror.corp.example only in [10.1.0.0/16, 192.0.2.0/24])",
            "other.corp.example  | 10.1.0.5         | host 'other.corp.example' resolved to 10.1.0.5, refused: 10.1.0.5 is private (RFC 1918 10.0.0.0/8)",
            "10.1.2.3            | -                | IP literal '10.1.2.3' refused: 10.1.2.3 is private (RFC 1918 10.0.0.0/8)",
    })
    void outsideItsRange_otherNames_literals_refusedWithTheReason(String host, String answer, String reason) throws Exception {
        TestResolver r = new TestResolver();
        if (!answer.equals("-")) r.map(host, answer);
        Gatekeeper.Vetted v = decide(r, host);
        assertFalse(v.allowed());
        assertEquals(reason, v.reason());
    }

    @Test
    void oneAnswerOutsideTheRange_refusesTheName() throws Exception {
        Gatekeeper.Vetted v = decide(new TestResolver().map("mirror.corp.example", "10.1.0.5", "10.9.0.1"), "mirror.corp.example");
        assertFalse(v.allowed());
        assertTrue(v.reason().startsWith("host 'mirror.corp.example' resolved to 10.9.0.1, refused"), v.reason());
    }

    @Test
    void proxy_refusesOutsideTheRange_overTheWire_andAuditsTheEntries() throws Exception {
        List<AuditRecord> audit = new CopyOnWriteArrayList<>();
        List<Decision> decisions = new CopyOnWriteArrayList<>();
        ProxyConfig cfg = load("[{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\"]}]");
        TestResolver resolver = new TestResolver().map("mirror.corp.example", "10.7.0.1");
        EgressProxy proxy = EgressProxy.builder(cfg).resolver(resolver).auditSink(audit::add).threads(1).start();
        try (EgressProxy.Listener l = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                new EgressContext("ws-i", "run-i", cfg.ceiling(), decisions::add, Set.of()));
             Socket s = new Socket()) {
            s.connect(l.address(), 2000);
            s.setSoTimeout(5000);
            Harness.write(s, "CONNECT mirror.corp.example:443 HTTP/1.1\r\nHost: mirror.corp.example:443\r\n\r\n");
            Harness.Response r = Harness.Response.read(s.getInputStream());
            assertEquals(403, r.status());
            assertTrue(r.header("X-Berth-Denial").endsWith("(internal_hosts allows mirror.corp.example only in [10.1.0.0/16])"), r.header("X-Berth-Denial"));
            assertTrue(audit.stream().anyMatch(a -> "internal-hosts".equals(a.event()) && a.reason().contains("mirror.corp.example in [10.1.0.0/16]")),
                    "the start notes list the entries: " + audit);
        } finally {
            proxy.close();
        }
    }
}
