package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.proxy.policy.InternalHosts;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.session.Owner;
import dev.berth.proxy.session.Settings;
import dev.berth.proxy.session.Shaping;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The two seams between the API and the machinery: ProxyConfig -> Settings, EgressContext -> Owner. */
class SettingsTest {
    @Test
    void settings_everyLimitSet_carriedOver() {
        Policy ceiling = Policy.of(List.of("api.github.com", "npm.test"));
        RegistryRule npm = RegistryRule.of(RegistryRule.Kind.NPM, List.of("npm.test"), null);
        InternalHosts internal = InternalHosts.of(List.of(new InternalHosts.Entry("npm.test", List.of(InternalHosts.Range.parse("10.1.0.0/16")), "t")));
        ProxyConfig cfg = ProxyConfig.builder().ceiling(ceiling).maxHeaderBytes(1001).maxHeaderCount(11)
                .headerTimeout(Duration.ofMillis(1002)).idleTimeout(Duration.ofMillis(1003)).connectTimeout(Duration.ofMillis(1004))
                .dnsTimeout(Duration.ofMillis(1005)).maxTunnelsPerWorkspace(12).maxBytesPerWorkspace(1006)
                .quotaWindow(Duration.ofMillis(1007)).maxConnectsPerSecond(13).maxMetadataBytes(1008).tlsPorts(Set.of(443, 8443))
                .registryRule(npm).unsafeAllowLoopbackUpstreams(true).connectBurst(14).maxShapingDelay(Duration.ofMillis(1009))
                .maxConnectsPerSecondPerTenant(15).connectBurstPerTenant(16).maxBytesPerTenant(1010).internalHosts(internal).build();

        Settings s = cfg.settings();

        assertEquals(new Settings(ceiling, 1001, 11, Duration.ofMillis(1002), Duration.ofMillis(1003), Duration.ofMillis(1004),
                Duration.ofMillis(1005), 12, 1006, Duration.ofMillis(1007), 13, 1008, Set.of(443, 8443), List.of(npm), true,
                new Shaping(14, Duration.ofMillis(1009), 15, 16, 1010), internal), s);
        assertSame(npm, s.registryRule("npm.test"));
        assertNull(s.registryRule("other.test"));
    }

    @Test
    void owner_decisionReported_reachesListenerAsDecision() {
        List<Decision> seen = new ArrayList<>();
        Policy p = Policy.of(List.of("api.github.com"));
        EgressContext ctx = new EgressContext("ws-1", "run-1", p, seen::add, Set.of("github"));

        Owner o = ctx.owner();
        Instant at = Instant.parse("2026-01-02T03:04:05Z");
        o.decisions().decided("conn-1", "connect", "api.github.com", 443, "192.0.2.1", true, "allowed", at);

        assertEquals(List.of(new Decision("ws-1", "run-1", "conn-1", "connect", "api.github.com", 443, "192.0.2.1", true, "allowed", at)), seen);
        assertEquals(Set.of("github"), o.secrets());
        assertSame(p, o.policy());
        assertTrue(o.runId().equals("run-1") && o.workspaceId().equals("ws-1"));
    }
}
