package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.berth.proxy.ProxyConfig;
import dev.berth.schemas.Limits;
import org.junit.jupiter.api.Test;

/** The egress proxy's shaping defaults are the ones the limits catalogue (and docs/limits.md) states. */
class EgressLimitsCatalogueTest {
    @Test
    void proxyDefaults_equalTheCatalogue() {
        ProxyConfig d = ProxyConfig.builder().build();
        assertEquals(Limits.value("egress.connects_per_second_default"), d.maxConnectsPerSecond());
        assertEquals(Limits.value("egress.connect_burst_default"), d.shaping().connectBurst());
        assertEquals(Limits.value("egress.tenant_connects_per_second_default"), d.shaping().maxConnectsPerSecondPerTenant());
        assertEquals(Limits.value("egress.tenant_connect_burst_default"), d.shaping().connectBurstPerTenant());
        assertEquals(Limits.value("egress.shaping_delay_ms_default"), d.shaping().maxDelay().toMillis());
    }
}
