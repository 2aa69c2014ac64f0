package dev.berth.engine.run;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.agent.AgentClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The certificates a workspace with secret bindings must trust: the egress proxy intercepts TLS to the bindings'
 * hosts (to swap placeholders for real credentials), presenting certificates signed by its own CA. The engine writes
 * that CA, and a bundle of the host's public roots plus it, into the sandbox whenever the sandbox starts, and points
 * the usual variables of curl, OpenSSL, git, Python and Node at them for every run. Only workspaces with bindings
 * get this; the CA signs nothing but the bound hosts' certificates and its key never leaves the server.
 */
public final class TrustBundle {
    static final String DIR = "/var/lib/berth";
    static final String CA_FILE = DIR + "/egress-ca.pem";
    static final String BUNDLE_FILE = DIR + "/ca-certificates.crt";
    /** Debian's bundle of public roots on the host; the developer image is built from the same package. */
    private static final List<Path> HOST_BUNDLES = List.of(Path.of("/etc/ssl/certs/ca-certificates.crt"),
            Path.of("/etc/pki/tls/certs/ca-bundle.crt"));

    private TrustBundle() {}

    /** Writes the CA and the bundle into the sandbox (idempotent: every start writes them again). */
    public static void install(AgentClient agent, String caPem) throws EngineException {
        byte[] ca = caPem.getBytes(StandardCharsets.US_ASCII);
        FileOps.write(agent, CA_FILE, ca, false, 0644);
        FileOps.write(agent, BUNDLE_FILE, bundle(caPem), false, 0644);
    }

    /** The last bundle built, by CA: the host's roots are read once, not at every sandbox start. */
    private static volatile Map.Entry<String, byte[]> cached;

    private static byte[] bundle(String caPem) {
        Map.Entry<String, byte[]> c = cached;
        if (c != null && c.getKey().equals(caPem)) return c.getValue();
        byte[] b = build(caPem);
        cached = Map.entry(caPem, b);
        return b;
    }

    private static byte[] build(String caPem) {
        StringBuilder sb = new StringBuilder();
        for (Path p : HOST_BUNDLES) {
            try {
                if (Files.isRegularFile(p)) {
                    sb.append(Files.readString(p, StandardCharsets.US_ASCII));
                    break;
                }
            } catch (IOException ignored) {
                // no public roots: the bundle then holds only the proxy's CA (bound hosts still work)
            }
        }
        if (sb.length() > 0 && sb.charAt(sb.length() - 1) != '\n') sb.append('\n');
        sb.append("# Berth egress proxy (TLS interception for secret-bound and registry-rule hosts only)\n").append(caPem);
        if (!caPem.endsWith("\n")) sb.append('\n');
        return sb.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** The variables every run in such a workspace gets (a run's own env may override them). */
    static Map<String, String> environment() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("SSL_CERT_FILE", BUNDLE_FILE);
        env.put("CURL_CA_BUNDLE", BUNDLE_FILE);
        env.put("REQUESTS_CA_BUNDLE", BUNDLE_FILE);
        env.put("GIT_SSL_CAINFO", BUNDLE_FILE);
        env.put("PIP_CERT", BUNDLE_FILE);
        env.put("NODE_EXTRA_CA_CERTS", CA_FILE);
        // npm's proxy agent hands its own `ca` to TLS and so ignores NODE_EXTRA_CA_CERTS through a proxy (seen with npm
        // 11 / node 20: SELF_SIGNED_CERT_IN_CHAIN); its cafile is the whole bundle, so public registries still verify
        env.put("NPM_CONFIG_CAFILE", BUNDLE_FILE);
        return env;
    }
}
