package dev.berth.proxy.policy;

import dev.berth.proxy.net.HostNames;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * An operator-configured secret: its real value and the hosts it may be sent to. Workspaces never
 * see the value; they get a per-run placeholder ({@link EgressProxy#mint}) that the proxy swaps for
 * the value in requests to the bound hosts only.
 *
 * <p>Immutable and thread-safe. The value is held only in memory; {@link #toString()} never shows
 * it, and neither does any exception message thrown here.
 */
public final class SecretBinding {
    public static final Pattern NAME = Pattern.compile("[a-z0-9_]{1,32}");
    public static final Pattern ENV = Pattern.compile("[A-Z_][A-Z0-9_]{0,63}");

    private final String name;
    private final String env;
    private final List<String> hosts;
    private final List<HostPattern> patterns;
    private final String value;
    private final boolean unsafeAllowPlainHttp;
    /** Request headers the placeholder is substituted in, as configured (default {@code Authorization}). */
    private final List<String> headers;

    /** Header names a credential may never be put in: framing, routing and hop-by-hop fields. */
    private static final java.util.Set<String> NEVER = java.util.Set.of("host", "content-length", "transfer-encoding", "connection",
            "keep-alive", "te", "trailer", "upgrade", "forwarded");
    static final Pattern HEADER = Pattern.compile("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}");

    private SecretBinding(String name, String env, List<String> hosts, List<HostPattern> patterns, String value, boolean plain,
                          List<String> headers) {
        this.name = name;
        this.env = env;
        this.hosts = hosts;
        this.patterns = patterns;
        this.value = value;
        this.unsafeAllowPlainHttp = plain;
        this.headers = headers;
    }

    /**
     * Validates and builds a binding.
     *
     * @param name {@code [a-z0-9_]{1,32}} (no '-': it separates the parts of a placeholder)
     * @param env environment variable the placeholder is put in, {@code [A-Z_][A-Z0-9_]{0,63}}
     * @param hostPatterns exact hosts or {@code *.suffix} wildcards, as in allow-list entries; IP
     *     literals are refused (a certificate for an IP literal is not what clients check)
     * @param value the real secret: non-empty, printable ASCII (it is sent in header values)
     * @throws IllegalArgumentException naming the bad field (never quoting the value)
     */
    public static SecretBinding of(String name, String env, List<String> hostPatterns, String value) {
        Objects.requireNonNull(name, "name");
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("secret name '" + HostNames.printable(name) + "' is invalid: must match [a-z0-9_]{1,32}");
        }
        Objects.requireNonNull(env, "env");
        if (!ENV.matcher(env).matches()) {
            throw new IllegalArgumentException("secret '" + name + "': env '" + HostNames.printable(env)
                    + "' is invalid: must match [A-Z_][A-Z0-9_]{0,63}");
        }
        if (hostPatterns == null || hostPatterns.isEmpty()) {
            throw new IllegalArgumentException("secret '" + name + "': hosts must name at least one host");
        }
        List<HostPattern> patterns = new ArrayList<>();
        for (String h : hostPatterns) {
            HostPattern p;
            try {
                p = HostPattern.parse(h);
            } catch (HostNames.InvalidHostException e) {
                throw new IllegalArgumentException("secret '" + name + "': host: " + e.getMessage());
            }
            if (p.ip() != null) {
                throw new IllegalArgumentException("secret '" + name + "': host '" + HostNames.printable(h)
                        + "' is an IP literal; secrets are bound to host names only");
            }
            patterns.add(p);
        }
        if (value == null || value.isEmpty()) throw new IllegalArgumentException("secret '" + name + "': value is empty");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c >= 0x7f) {
                throw new IllegalArgumentException("secret '" + name + "': value contains a control or non-ASCII character at index " + i
                        + " (it is sent in HTTP header values)");
            }
        }
        return new SecretBinding(name, env, List.copyOf(hostPatterns), List.copyOf(patterns), value, false, List.of("Authorization"));
    }

    /** A copy that may also be injected into plain-HTTP requests (the value then crosses the network in clear). */
    public SecretBinding withUnsafeAllowPlainHttp(boolean allow) {
        return new SecretBinding(name, env, hosts, patterns, value, allow, headers);
    }

    /**
     * A copy whose placeholder is substituted in these request headers (replacing the default {@code Authorization};
     * list it again to keep it). A placeholder anywhere else (request target, other headers) refuses the request.
     *
     * @throws IllegalArgumentException for an empty list, a malformed header name, or a framing/routing header
     */
    public SecretBinding withHeaders(List<String> names) {
        if (names == null || names.isEmpty()) throw new IllegalArgumentException("secret '" + name + "': headers must name at least one header");
        List<String> out = new ArrayList<>();
        for (String h : names) {
            if (h == null || !HEADER.matcher(h).matches()) {
                throw new IllegalArgumentException("secret '" + name + "': header name '" + HostNames.printable(String.valueOf(h)) + "' is invalid");
            }
            String lower = h.toLowerCase(java.util.Locale.ROOT);
            if (NEVER.contains(lower) || lower.startsWith("proxy-") || lower.startsWith("x-forwarded-")) {
                throw new IllegalArgumentException("secret '" + name + "': header '" + h + "' cannot carry a credential (framing, routing or hop-by-hop field)");
            }
            out.add(h);
        }
        return new SecretBinding(name, env, hosts, patterns, value, unsafeAllowPlainHttp, List.copyOf(out));
    }

    /** Request headers the placeholder is substituted in (default {@code [Authorization]}, including Basic). */
    public List<String> headers() { return headers; }

    /** Is {@code headerName} (any case) one this binding's placeholder is substituted in? */
    public boolean injectsInto(String headerName) {
        for (String h : headers) if (h.equalsIgnoreCase(headerName)) return true;
        return false;
    }

    public String name() { return name; }
    public String env() { return env; }
    /** Host patterns as configured. */
    public List<String> hosts() { return hosts; }
    /** Default false: the value is injected only into intercepted HTTPS requests. */
    public boolean unsafeAllowPlainHttp() { return unsafeAllowPlainHttp; }

    /** True if the canonical host name (lowercase punycode, no trailing dot) is one this secret may be sent to. */
    public boolean matchesHost(String canonicalHost) {
        HostNames.Host h;
        try {
            h = HostNames.normalize(canonicalHost);
        } catch (HostNames.InvalidHostException e) {
            return false;
        }
        for (HostPattern p : patterns) if (p.matches(h)) return true;
        return false;
    }

    public List<HostPattern> patterns() { return patterns; }

    /** The real value. Package-private: only the substitution and response redaction read it. */
    public String value() { return value; }

    @Override
    public String toString() {
        return "SecretBinding[name=" + name + ", env=" + env + ", hosts=" + hosts
                + (headers.equals(List.of("Authorization")) ? "" : ", headers=" + headers)
                + (unsafeAllowPlainHttp ? ", unsafeAllowPlainHttp" : "") + ", value=<redacted>]";
    }
}
