package dev.berth.proxy.credentials;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import com.github.benmanes.caffeine.cache.Scheduler;
import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.session.Owner;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Live placeholders (placeholder -> grant and binding) and the two rewrites that use them:
 * placeholder -> value in outgoing request heads, value -> placeholder in response heads.
 *
 * <p>Thread-safe: minting and revocation come from engine threads, lookups from event loops.
 *
 * <p>Implementation notes: a request is scanned for anything shaped like a placeholder, not only
 * for live ones, so that a stale or foreign placeholder is refused with a reason instead of
 * leaving as a meaningless string the agent then debugs as "401 from GitHub". The real value
 * exists only in the rewritten header list handed to the upstream encoder; reasons name bindings
 * and hosts, never values.
 */
public final class CredentialRegistry {
    public static final Pattern PLACEHOLDER = Pattern.compile("berth-secret-[a-z0-9_]{1,32}-[0-9a-f]{32}");
    public static final String UNKNOWN = "credential placeholder is unknown or revoked: placeholders are valid only during the run they were minted for";
    public static final String OTHER_WORKSPACE = "credential placeholder was minted for another workspace";

    private record Live(RunGrant grant, SecretBinding binding) {}

    /** Called with each grant when it is revoked or expires, and why: the proxy closes the connections opened under it. */
    public interface RevocationListener {
        void revoked(RunGrant grant, String reason);
    }

    /** One binding injected into one request. */
    public record Injection(RunGrant grant, SecretBinding binding, String placeholder) {}

    /** A request head after substitution, or a refusal (then the other fields are null). */
    public record Rewrite(String target, List<String[]> headers, List<Injection> injected, List<String[]> encoded, String refusal) {
        public static final Rewrite NONE = new Rewrite(null, null, List.of(), List.of(), null);

        static Rewrite refused(String reason) {
            return new Rewrite(null, null, List.of(), List.of(), reason);
        }

        /** Suffix for the allow decision's reason, e.g. {@code "; injected credential 'github'"}. */
        public String reasonSuffix() {
            StringBuilder sb = new StringBuilder();
            Set<String> names = new LinkedHashSet<>();
            for (Injection i : injected) names.add(i.binding().name());
            for (String n : names) sb.append("; injected credential '").append(n).append('\'');
            return sb.toString();
        }
    }

    private final Map<String, SecretBinding> bindings;
    /**
     * Live placeholders. Entries expire {@code placeholderTtl} after minting (a background run's grant otherwise
     * lives as long as its process); Caffeine's scheduler evicts them on time, and the removal listener expires the
     * whole grant, which closes its connections.
     */
    private final Cache<String, Live> live;
    /** Placeholders that expired (not closed by their run), for a day: a refusal then says why. */
    private final Cache<String, String> expiredReasons;
    private final SecureRandom random = new SecureRandom();
    private final Duration ttl;
    private volatile RevocationListener onRevoke = (g, why) -> {};

    public CredentialRegistry(Map<String, SecretBinding> bindings, Duration ttl, LongSupplier nanos) {
        this.bindings = bindings;
        this.ttl = ttl;
        this.live = Caffeine.newBuilder()
                .expireAfterWrite(ttl)
                .ticker(nanos::getAsLong)
                .scheduler(Scheduler.systemScheduler())
                .executor(Runnable::run)
                .removalListener((String ph, Live l, RemovalCause cause) -> {
                    if (cause == RemovalCause.EXPIRED && l != null) l.grant().expire();
                })
                .build();
        this.expiredReasons = Caffeine.newBuilder().expireAfterWrite(Duration.ofDays(1)).maximumSize(100_000)
                .ticker(nanos::getAsLong).executor(Runnable::run).build();
    }

    public void onRevoke(RevocationListener l) {
        this.onRevoke = l;
    }

    /** Runs pending expirations now (tests with a fake clock; the scheduler does it otherwise). */
    public void cleanUp() {
        live.cleanUp();
    }

    public Duration ttl() {
        return ttl;
    }

    public boolean isEmpty() {
        return bindings.isEmpty();
    }

    public RunGrant mint(String workspaceId, String runId, Collection<String> names) {
        List<String> unknown = new ArrayList<>();
        Map<SecretBinding, String> minted = new LinkedHashMap<>();
        for (String n : names) {
            SecretBinding b = bindings.get(n);
            if (b == null) {
                unknown.add(HostNames.printable(String.valueOf(n)));
            } else if (!minted.containsKey(b)) {
                byte[] r = new byte[16];
                random.nextBytes(r);
                minted.put(b, "berth-secret-" + b.name() + "-" + HexFormat.of().formatHex(r));
            }
        }
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException("unknown secret binding(s) " + unknown + "; configured: " + bindings.keySet());
        }
        RunGrant g = new RunGrant(this, workspaceId, runId, minted);
        minted.forEach((b, ph) -> live.put(ph, new Live(g, b)));
        return g;
    }

    void revoke(RunGrant g, Collection<String> placeholders, String reason) {
        if (g.expired()) for (String p : placeholders) expiredReasons.put(p, reason);
        live.invalidateAll(placeholders);
        onRevoke.revoked(g, reason);
    }

    /** Bindings named by the context that may be sent to this host: the CONNECT is then intercepted. */
    public List<SecretBinding> bindingsFor(Owner ctx, String canonicalHost) {
        List<SecretBinding> out = new ArrayList<>();
        for (String n : ctx.secrets()) {
            SecretBinding b = bindings.get(n);
            if (b != null && b.matchesHost(canonicalHost)) out.add(b);
        }
        return out;
    }

    /**
     * Replaces each placeholder in the headers its binding names (default {@code Authorization}, including inside the
     * base64 of {@code Authorization: Basic}) with its value, or refuses the whole request: a placeholder anywhere
     * else (the request target, any other header) is refused, never swapped, because an origin that echoes the URL
     * or a header would hand the real value back to the workspace. {@code headers} is not modified.
     */
    public Rewrite rewrite(Owner ctx, String host, boolean https, String target, List<String[]> headers) {
        if (target.indexOf("berth-secret-") >= 0 && PLACEHOLDER.matcher(target).find()) {
            return Rewrite.refused(misplaced(target, "the request target"));
        }
        List<Injection> injected = new ArrayList<>();
        List<String[]> encoded = new ArrayList<>();
        String[] refusal = new String[1];
        List<String[]> out = new ArrayList<>(headers.size());
        for (String[] h : headers) {
            if (refusal[0] != null) break;
            String v = h[1];
            if (h[0].equalsIgnoreCase("Authorization") && v.regionMatches(true, 0, "Basic ", 0, 6)) {
                v = basic(h[0], v, ctx, host, https, injected, encoded, refusal);
            } else {
                v = substitute(h[0], v, ctx, host, https, injected, refusal);
            }
            out.add(v == h[1] ? h : new String[] {h[0], v});
        }
        if (refusal[0] != null) return Rewrite.refused(refusal[0]);
        return new Rewrite(target, out, List.copyOf(injected), List.copyOf(encoded), null);
    }

    /** Reason for a placeholder found where no binding lets it be substituted. */
    private String misplaced(String s, String where) {
        Matcher m = PLACEHOLDER.matcher(s);
        m.find();
        Live l = live.getIfPresent(m.group());
        String names = l == null ? null : String.join(", ", l.binding().headers());
        return "credential placeholder in " + where + " is refused, never swapped: "
                + (l == null ? "placeholders are substituted only in the headers their binding names (default Authorization)"
                : "credential '" + l.binding().name() + "' is substituted only in header(s) " + names);
    }

    private String basic(String name, String v, Owner ctx, String host, boolean https, List<Injection> injected, List<String[]> encoded,
                         String[] refusal) {
        String token = v.substring(6).strip();
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(token);
        } catch (IllegalArgumentException notBase64) {
            return substitute(name, v, ctx, host, https, injected, refusal);
        }
        // userinfo is ISO-8859-1 or UTF-8 in practice; placeholders and values are ASCII either way.
        String plain = new String(decoded, StandardCharsets.ISO_8859_1);
        String replaced = substitute(name, plain, ctx, host, https, injected, refusal);
        if (replaced == plain) return substitute(name, v, ctx, host, https, injected, refusal);
        String newToken = Base64.getEncoder().encodeToString(replaced.getBytes(StandardCharsets.ISO_8859_1));
        // Remember the pair: an upstream echoing the Authorization header back must not hand the
        // workspace the base64 that decodes to the value.
        encoded.add(new String[] {newToken, token});
        return v.substring(0, 6) + newToken;
    }

    /** Returns {@code s} itself when it holds no placeholder; sets refusal[0] on the first bad one. */
    private String substitute(String header, String s, Owner ctx, String host, boolean https, List<Injection> injected, String[] refusal) {
        if (refusal[0] != null || s.indexOf("berth-secret-") < 0) return s;
        Matcher m = PLACEHOLDER.matcher(s);
        StringBuilder sb = null;
        int last = 0;
        while (m.find()) {
            String ph = m.group();
            Live l = live.getIfPresent(ph);
            String why = l == null ? java.util.Objects.requireNonNullElse(expiredReasons.getIfPresent(ph), UNKNOWN) : check(l, ctx, host, https);
            if (why == null && !l.binding().injectsInto(header)) {
                why = "credential placeholder in header '" + HostNames.printable(header) + "' is refused, never swapped: credential '"
                        + l.binding().name() + "' is substituted only in header(s) " + String.join(", ", l.binding().headers());
            }
            if (why != null) {
                refusal[0] = why;
                return s;
            }
            if (sb == null) sb = new StringBuilder(s.length() + 64);
            sb.append(s, last, m.start()).append(l.binding().value());
            last = m.end();
            injected.add(new Injection(l.grant(), l.binding(), ph));
        }
        if (sb == null) return s;
        return sb.append(s, last, s.length()).toString();
    }

    static String expired(RunGrant g) {
        return "credential placeholder expired: grant of run '" + g.runId() + "' outlived the operator's placeholder lifetime (placeholderTtlMs)";
    }

    private static String check(Live l, Owner ctx, String host, boolean https) {
        if (l == null) return UNKNOWN;
        if (l.grant().isClosed()) return l.grant().expired() ? expired(l.grant()) : UNKNOWN;
        if (!l.grant().workspaceId().equals(ctx.workspaceId())) return OTHER_WORKSPACE;
        if (ctx.runId() == null) {
            return "credential placeholder of run '" + l.grant().runId() + "' is refused on a connection that belongs to no run"
                    + " (it was opened by a process outside every run's process tree)";
        }
        if (!l.grant().runId().equals(ctx.runId())) {
            return "credential placeholder was minted for run '" + l.grant().runId() + "'; this connection belongs to run '"
                    + ctx.runId() + "'";
        }
        SecretBinding b = l.binding();
        if (!ctx.secrets().contains(b.name())) {
            return "credential '" + b.name() + "' is not enabled for this connection (not in the workspace's secrets)";
        }
        if (!b.matchesHost(host)) {
            return "credential '" + b.name() + "' may only be sent to " + String.join(", ", b.hosts()) + "; this request goes to " + host;
        }
        if (!https && !b.unsafeAllowPlainHttp()) return "credential '" + b.name() + "' is injected only over HTTPS";
        return null;
    }

    /**
     * Replaces any configured secret value in a response header value: with the placeholder this
     * request used for it, or with a non-placeholder marker when the request did not carry it.
     */
    public String redact(String value, Rewrite rewrite) {
        if (value == null || value.isEmpty()) return value;
        String out = value;
        for (String[] e : rewrite.encoded()) {
            if (out.contains(e[0])) out = out.replace(e[0], e[1]);
        }
        List<Injection> injected = rewrite.injected();
        for (SecretBinding b : bindings.values()) {
            if (!out.contains(b.value())) continue;
            String replacement = "berth-secret-" + b.name() + "-redacted";
            for (Injection i : injected) {
                if (i.binding() == b) {
                    replacement = i.placeholder();
                    break;
                }
            }
            out = out.replace(b.value(), replacement);
        }
        return out;
    }
}
