package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.net.Resolver;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.session.Gatekeeper;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PolicyTest {
    static boolean allows(Policy p, String host, int port) throws Exception {
        return p.check(HostNames.normalize(host), port).allowed();
    }

    @ParameterizedTest(name = "{0}:{1} -> {2}")
    @CsvSource({
            "api.github.com,443,true",
            "a.b.github.com,443,true",
            "github.com,443,false",
            "evilgithub.com,443,false",
            "github.com.evil.com,443,false",
            "API.GITHUB.COM.,443,true",
            "api.github.com,80,false",
            "registry.npmjs.org,443,true",
            "registry.npmjs.org,80,false",
            "deb.debian.org,80,true",
            "203.0.113.7,443,true",
            "0xcb.0.113.7,443,true",
            "203.0.113.8,443,false",
    })
    void check_wildcardsPresetsAndLiterals_matchOnLabelBoundaries(String host, int port, boolean allowed) throws Exception {
        Policy p = Policy.of(List.of("*.github.com", "preset:npm", "preset:debian", "203.0.113.7"));
        assertEquals(allowed, allows(p, host, port));
    }

    @Test
    void denyAll_anyHost_deniedWithReason() throws Exception {
        var v = Policy.denyAll().check(HostNames.normalize("example.com"), 443);
        assertFalse(v.allowed());
        assertEquals("host 'example.com' matches no allowlist entry", v.reason());
    }

    @Test
    void narrow_runRequestsWiderThanWorkspace_cannotWiden() throws Exception {
        Policy ceiling = Policy.of(List.of("*.github.com", "registry.npmjs.org", "deb.debian.org:80,443"));
        Policy workspace = ceiling.narrow(Policy.of(List.of("api.github.com", "registry.npmjs.org:443,8080", "deb.debian.org:443")));
        Policy run = workspace.narrow(Policy.of(List.of("*.github.com", "evil.com", "deb.debian.org:80,443", "*.npmjs.org")));
        // workspace: api.github.com:443, registry.npmjs.org:443, deb.debian.org:443
        assertTrue(allows(run, "api.github.com", 443));
        assertFalse(allows(run, "raw.github.com", 443), "run asked *.github.com but workspace only has api.github.com");
        assertFalse(allows(run, "evil.com", 443));
        assertFalse(allows(run, "deb.debian.org", 80), "port 80 dropped by workspace stays dropped");
        assertTrue(allows(run, "deb.debian.org", 443));
        assertTrue(allows(run, "registry.npmjs.org", 443), "*.npmjs.org narrows to the exact host");
        assertFalse(allows(run, "registry.npmjs.org", 8080));
        assertFalse(allows(run, "other.npmjs.org", 443));
    }

    @Test
    void narrow_wildcardAgainstWildcard_takesDeeperSuffix() throws Exception {
        Policy p = Policy.of(List.of("*.example.com")).narrow(Policy.of(List.of("*.api.example.com", "*.other.test")));
        assertTrue(allows(p, "x.api.example.com", 443));
        assertFalse(allows(p, "api.example.com", 443));
        assertFalse(allows(p, "www.example.com", 443));
    }

    @Test
    void narrow_emptyRequest_deniesAll() throws Exception {
        assertTrue(Policy.of(List.of("preset:github")).narrow(Policy.denyAll()).isEmpty());
    }

    @Test
    void narrow_twoPolicies_equalsPointwiseIntersectionBothWays() throws Exception {
        Policy a = Policy.of(List.of("*.github.com:443,80", "a.x.test:22"));
        Policy b = Policy.of(List.of("api.github.com:80", "*.x.test:22,443"));
        for (String host : List.of("api.github.com", "github.com", "a.x.test", "b.x.test", "x.test")) {
            for (int port : List.of(22, 80, 443)) {
                boolean expected = allows(a, host, port) && allows(b, host, port);
                assertEquals(expected, allows(a.narrow(b), host, port), host + ":" + port);
                assertEquals(expected, allows(b.narrow(a), host, port), host + ":" + port);
            }
        }
    }

    @Test
    void of_badEntry_namesTheEntry() {
        var e = assertThrows(IllegalArgumentException.class, () -> Policy.of(List.of("ok.example", "bad host")));
        assertTrue(e.getMessage().contains("'bad host'"), e.getMessage());
        var e2 = assertThrows(IllegalArgumentException.class, () -> Policy.of(List.of("preset:nope")));
        assertTrue(e2.getMessage().contains("unknown preset 'nope'"));
    }

    @Test
    void check_portNotListed_reasonListsAllowedPorts() throws Exception {
        var v = Policy.of(List.of("deb.debian.org:80,443")).check(HostNames.normalize("deb.debian.org"), 22);
        assertEquals("port 22 not allowed for host 'deb.debian.org' (allowed ports: [80, 443])", v.reason());
    }

    @Test
    void proxy_contextPolicyWiderThanCeiling_isClampedToCeiling() throws Exception {
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(List.of("api.github.com"))).build();
        Gatekeeper gk = new Gatekeeper(cfg.settings(), Resolver.system(), null);
        Policy effective = gk.effective(new EgressContext("ws", null, Policy.of(List.of("*.github.com", "evil.com")), null).owner());
        assertTrue(allows(effective, "api.github.com", 443));
        assertFalse(allows(effective, "evil.com", 443));
        assertFalse(allows(effective, "raw.github.com", 443));
    }
}
