package dev.berth.proxy;

import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.policy.InternalHosts;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.Presets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/** Two sections of the egress configuration that {@link ConfigLoader} reads: {@code limits} and {@code internal_hosts}. Stateless. */
final class ConfigSections {
    private ConfigSections() {}

    static final Set<String> LIMITS = Set.of("quota_window_ms", "max_connects_per_second", "placeholder_ttl_ms", "max_header_bytes",
            "max_header_count", "max_metadata_bytes", "header_timeout_ms", "idle_timeout_ms", "max_tunnels_per_workspace",
            "max_bytes_per_workspace", "dns_timeout_ms", "connect_timeout_ms", "connect_burst", "max_shaping_delay_ms",
            "max_connects_per_second_per_tenant", "connect_burst_per_tenant", "max_bytes_per_tenant");
    static final Set<String> INTERNAL_HOST = Set.of("host", "preset", "ranges");

        static void limits(ConfigKeys.Section limits, ProxyConfig.Builder b) throws ConfigException {
            for (String k : limits.keys()) {
                JsonNode v = limits.get(k);
                String key = limits.path(k);
                if (!v.isIntegralNumber() || v.longValue() <= 0) {
                    throw new ConfigException(key + " must be a positive integer, got " + v);
                }
                long n = v.longValue();
                switch (k) {
                    case "max_header_bytes" -> b.maxHeaderBytes(ConfigLoader.toInt(n, key));
                    case "max_header_count" -> b.maxHeaderCount(ConfigLoader.toInt(n, key));
                    case "max_metadata_bytes" -> b.maxMetadataBytes(ConfigLoader.toInt(n, key));
                    case "header_timeout_ms" -> b.headerTimeout(Duration.ofMillis(n));
                    case "idle_timeout_ms" -> b.idleTimeout(Duration.ofMillis(n));
                    case "max_tunnels_per_workspace" -> b.maxTunnelsPerWorkspace(ConfigLoader.toInt(n, key));
                    case "max_bytes_per_workspace" -> b.maxBytesPerWorkspace(n);
                    case "dns_timeout_ms" -> b.dnsTimeout(Duration.ofMillis(n));
                    case "connect_timeout_ms" -> b.connectTimeout(Duration.ofMillis(n));
                    case "quota_window_ms" -> b.quotaWindow(Duration.ofMillis(n));
                    case "max_connects_per_second" -> b.maxConnectsPerSecond(ConfigLoader.toInt(n, key));
                    case "placeholder_ttl_ms" -> b.placeholderTtl(Duration.ofMillis(n));
                    case "connect_burst" -> b.connectBurst(ConfigLoader.toInt(n, key));
                    case "max_shaping_delay_ms" -> b.maxShapingDelay(Duration.ofMillis(n));
                    case "max_connects_per_second_per_tenant" -> b.maxConnectsPerSecondPerTenant(ConfigLoader.toInt(n, key));
                    case "connect_burst_per_tenant" -> b.connectBurstPerTenant(ConfigLoader.toInt(n, key));
                    case "max_bytes_per_tenant" -> b.maxBytesPerTenant(n);
                    default -> throw new AssertionError(k);
                }
            }
        }

    /**
     * {@code internal_hosts: [{"host": "mirror.corp.example", "ranges": ["10.1.0.0/16"]}, {"preset": "npm", "ranges": [...]}]}:
     * a preset entry stands for the preset's hosts (the operator's mirrors when {@code preset_mirrors} names them).
     */
    static void internalHosts(JsonNode node, String key, Map<String, ConfigKeys.Section> entries, Map<String, List<Policy.Entry>> mirrors,
                              ProxyConfig.Builder b) throws ConfigException {
        if (!node.isArray()) throw new ConfigException("\"" + key + "\" must be an array of {\"host\" or \"preset\", \"ranges\"} objects");
        List<InternalHosts.Entry> out = new ArrayList<>();
        for (Map.Entry<String, ConfigKeys.Section> e : entries.entrySet()) {
            String at = e.getKey();
            ConfigKeys.Section s = e.getValue();
            JsonNode host = s.get("host");
            JsonNode preset = s.get("preset");
            if ((host == null) == (preset == null)) throw new ConfigException(at + " needs exactly one of \"host\" and \"preset\"");
            List<String> texts = ConfigLoader.strings(s.get("ranges"), s.path("ranges"));
            if (texts == null || texts.isEmpty()) throw new ConfigException(s.path("ranges") + " must name at least one CIDR block, e.g. [\"10.1.0.0/16\"]");
            List<InternalHosts.Range> ranges = new ArrayList<>();
            for (String t : texts) {
                try {
                    ranges.add(InternalHosts.Range.parse(t));
                } catch (IllegalArgumentException ex) {
                    throw new ConfigException(s.path("ranges") + ": " + ex.getMessage());
                }
            }
            if (host != null) {
                if (!host.isString()) throw new ConfigException(s.path("host") + " must be a host name, got " + host);
                out.add(new InternalHosts.Entry(host.stringValue(), ranges, at));
                continue;
            }
            if (!preset.isString()) throw new ConfigException(s.path("preset") + " must be a preset name, got " + preset);
            String name = preset.stringValue();
            List<Policy.Entry> hosts = mirrors.containsKey(name) ? mirrors.get(name) : Presets.get(name);
            if (hosts == null) throw new ConfigException(s.path("preset") + ": unknown preset '" + HostNames.printable(name) + "' (known: " + Presets.names() + ")");
            for (Policy.Entry h : hosts) out.add(new InternalHosts.Entry(h.host().toString(), ranges, at + " (preset " + name + ")"));
        }
        try {
            b.internalHosts(InternalHosts.of(out));
        } catch (IllegalArgumentException ex) {
            throw new ConfigException(ex.getMessage());
        }
    }
}
