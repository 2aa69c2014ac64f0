package dev.berth.proxy.policy;

import java.util.Locale;

/**
 * The registry rule's verdict on one request, in order: the target made canonical ({@link RegistryTargets}; a
 * non-canonical one is refused), the rule's refusal of writes (publish, upload, deploy, push), and what the request
 * asks for ({@link RegistryPaths}), which the release-age and advisory checks act on. A version path is recognized with
 * and without a trailing {@code /}, so neither spelling reaches the upstream unchecked. Stateless.
 */
public final class RegistryGate {
    private RegistryGate() {}

    /**
     * @param status 0 when the request may go on; otherwise the status to refuse it with
     * @param reason why it is refused (null when it may go on)
     * @param target the canonical target: what is sent upstream
     * @param request what the request asks for (null: neither metadata nor a version, or not classified)
     */
    public record Verdict(int status, String reason, String target, RegistryPaths.Request request) {
        public boolean refused() { return status != 0; }
    }

    /** @param classify classify the path (the rule has release-age or advisory checks to make) */
    public static Verdict check(RegistryRule rule, String host, String method, String target, boolean classify) {
        String canonical;
        try {
            canonical = RegistryTargets.canonical(rule.kind(), target);
        } catch (RegistryTargets.NonCanonical e) {
            return new Verdict(403, rule.kind().label() + " registry rules on '" + host + "' refuse a non-canonical request target: "
                    + e.getMessage() + " (the rules check exactly what the upstream serves)", null, null);
        }
        String ruled = rule.refusal(host, method, canonical);
        if (ruled != null) return new Verdict(403, ruled, canonical, null);
        if (!classify) return new Verdict(0, null, canonical, null);
        String m = method.toUpperCase(Locale.ROOT);
        RegistryPaths.Request rq = RegistryPaths.classify(rule.kind(), m, canonical);
        if (rq == null || rq.type() != RegistryPaths.Type.VERSION) {
            int q = canonical.indexOf('?');
            String path = q < 0 ? canonical : canonical.substring(0, q);
            if (path.length() > 1 && path.endsWith("/")) {
                RegistryPaths.Request bare = RegistryPaths.classify(rule.kind(), m, path.substring(0, path.length() - 1));
                if (bare != null && bare.type() == RegistryPaths.Type.VERSION) rq = bare;
            }
        }
        if (rq != null && rq.type() == RegistryPaths.Type.METADATA && rq.flavor().endsWith("#checksum")) {
            return new Verdict(404, "the checksum of " + rq.pkg() + "'s maven-metadata.xml is not served: the proxy filters that file "
                    + "(release age, advisories), so the registry's checksum would not match it", canonical, rq);
        }
        return new Verdict(0, null, canonical, rq);
    }
}
