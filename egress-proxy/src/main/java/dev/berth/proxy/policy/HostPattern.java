package dev.berth.proxy.policy;

import dev.berth.proxy.net.HostNames;
import java.net.InetAddress;

/**
 * One allowlist host: an exact name, a {@code *.suffix} wildcard, or an exact IP literal.
 *
 * <p>A wildcard matches names with at least one extra label and never the apex: {@code
 * *.github.com} matches {@code api.github.com} but not {@code github.com}, {@code
 * evilgithub.com} or {@code github.com.evil.com}. Matching is label-aligned (suffix preceded by
 * a dot) on canonical names only, which is what makes those tricks fail.
 */
public record HostPattern(String suffixOrName, boolean wildcard, InetAddress ip) {

    public static HostPattern parse(String raw) throws HostNames.InvalidHostException {
        if (raw == null) throw new HostNames.InvalidHostException("missing host");
        if (raw.startsWith("*.")) {
            HostNames.Host h = HostNames.normalize(raw.substring(2));
            if (h.isLiteral()) {
                throw new HostNames.InvalidHostException("wildcard '" + HostNames.printable(raw) + "' cannot cover an IP literal");
            }
            if (!h.name().contains(".")) {
                // '*.com' would allow a whole TLD; that is never an intended allowlist entry.
                throw new HostNames.InvalidHostException("wildcard '" + HostNames.printable(raw) + "' is too broad (needs at least two labels after '*.')");
            }
            return new HostPattern(h.name(), true, null);
        }
        if (raw.contains("*")) {
            throw new HostNames.InvalidHostException("host '" + HostNames.printable(raw) + "' has a '*' that is not a leading '*.' label");
        }
        HostNames.Host h = HostNames.normalize(raw);
        return h.isLiteral() ? new HostPattern(HostNames.canonicalIp(h.literal()), false, h.literal())
                : new HostPattern(h.name(), false, null);
    }

    boolean matches(HostNames.Host host) {
        if (ip != null) return host.isLiteral() && ip.equals(host.literal());
        if (host.isLiteral()) return false;
        String name = host.name();
        return wildcard ? name.endsWith("." + suffixOrName) : name.equals(suffixOrName);
    }

    /** The set of names matched by both patterns, or null if disjoint (patterns are closed under intersection). */
    HostPattern intersect(HostPattern other) {
        if (ip != null || other.ip != null) return equals(other) ? this : null;
        if (!wildcard && !other.wildcard) return suffixOrName.equals(other.suffixOrName) ? this : null;
        if (!wildcard) return other.coversName(suffixOrName) ? this : null;
        if (!other.wildcard) return coversName(other.suffixOrName) ? other : null;
        if (suffixOrName.equals(other.suffixOrName) || suffixOrName.endsWith("." + other.suffixOrName)) return this;
        if (other.suffixOrName.endsWith("." + suffixOrName)) return other;
        return null;
    }

    private boolean coversName(String name) {
        return wildcard ? name.endsWith("." + suffixOrName) : name.equals(suffixOrName);
    }

    @Override
    public String toString() {
        return wildcard ? "*." + suffixOrName : suffixOrName;
    }
}
