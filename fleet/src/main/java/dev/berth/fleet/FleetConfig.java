package dev.berth.fleet;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The operator config's {@code fleet} section (docs/operator-config.md): where etcd is and how to log in, who this node
 * is and how the other nodes reach it. Read through the one config binding (mcp-server's OperatorConfig, snake_case,
 * unknown keys refused); {@link #resolved} makes relative files absolute, {@link #validate} refuses a section that
 * cannot work with the key and the value. Absent section: Berth is a single node, exactly as without a fleet.
 *
 * @param endpoints              etcd client URLs, {@code http(s)://host:port}
 * @param tls                    the CA of https endpoints
 * @param auth                   etcd user and a file holding its password, when etcd's auth is on
 * @param nodeId                 this node's name in the fleet, unique among live nodes
 * @param advertise              the URL other nodes reach this node's MCP endpoint at; default http.public_url
 * @param labels                 free-form labels placement may ask for
 * @param internalCredentialFile a file holding the secret every node of the fleet shares for node-to-node calls
 * @param leaseTtlS              the node lease's time to live in seconds; a node that cannot renew for this long is lost
 * @param prefix                 the key prefix of this fleet in etcd
 */
public record FleetConfig(List<String> endpoints, TlsConfig tls, AuthConfig auth, @JsonProperty("node_id") String nodeId,
                          String advertise, Map<String, String> labels,
                          @JsonProperty("internal_credential_file") String internalCredentialFile,
                          @JsonProperty("lease_ttl_s") Integer leaseTtlS, String prefix) {

    public static final int DEFAULT_LEASE_TTL_S = 10;
    public static final String DEFAULT_PREFIX = "/berth/";
    /** Shortest internal credential accepted, in bytes: 32 random bytes, hex or base64, are more. */
    public static final int MIN_CREDENTIAL_BYTES = 32;
    private static final Pattern NODE_ID = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
    private static final Pattern LABEL = Pattern.compile("[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?");

    /** @param caFile PEM file of the CA that signed etcd's certificate */
    public record TlsConfig(@JsonProperty("ca_file") String caFile) {}

    /** @param passwordFile a file whose first line is the password (so the config file holds no secret) */
    public record AuthConfig(String username, @JsonProperty("password_file") String passwordFile) {}

    /** Relative file names made absolute against {@code dir} (the config file's folder); defaults filled. */
    public FleetConfig resolved(Path dir, String publicUrl) {
        return new FleetConfig(endpoints, tls == null || tls.caFile() == null ? tls : new TlsConfig(dir.resolve(tls.caFile()).normalize().toString()),
                auth == null || auth.passwordFile() == null ? auth : new AuthConfig(auth.username(), dir.resolve(auth.passwordFile()).normalize().toString()),
                nodeId, advertise == null ? publicUrl : advertise, labels == null ? Map.of() : Map.copyOf(labels),
                internalCredentialFile == null ? null : dir.resolve(internalCredentialFile).normalize().toString(),
                leaseTtlS == null ? DEFAULT_LEASE_TTL_S : leaseTtlS, prefix == null ? DEFAULT_PREFIX : prefix);
    }

    /** Refuses a section that cannot work; the message starts with the key ("fleet.node_id must ..."). */
    public void validate() {
        if (endpoints == null || endpoints.isEmpty()) throw new IllegalArgumentException("fleet.endpoints is required (etcd client URLs)");
        for (String e : endpoints) {
            URI u = uri(e, "fleet.endpoints entries");
            if (!("http".equals(u.getScheme()) || "https".equals(u.getScheme())) || u.getHost() == null || u.getPort() < 1
                    || (u.getPath() != null && !u.getPath().isEmpty() && !u.getPath().equals("/"))) {
                throw new IllegalArgumentException("fleet.endpoints entries must be http(s)://host:port, got \"" + e + "\"");
            }
            if ("https".equals(u.getScheme()) && (tls == null || tls.caFile() == null)) {
                throw new IllegalArgumentException("fleet.endpoints has https endpoint " + e + " but no fleet.tls.ca_file");
            }
        }
        if (tls != null && tls.caFile() != null && !Files.isReadable(Path.of(tls.caFile()))) {
            throw new IllegalArgumentException("fleet.tls.ca_file " + tls.caFile() + " cannot be read");
        }
        if (auth != null && (auth.username() == null || auth.passwordFile() == null)) {
            throw new IllegalArgumentException("fleet.auth needs both username and password_file");
        }
        if (auth != null && !Files.isReadable(Path.of(auth.passwordFile()))) {
            throw new IllegalArgumentException("fleet.auth.password_file " + auth.passwordFile() + " cannot be read");
        }
        if (nodeId == null || !NODE_ID.matcher(nodeId).matches()) {
            throw new IllegalArgumentException("fleet.node_id must be 1-63 lower-case letters, digits and '-' (not first or last), got "
                    + (nodeId == null ? "nothing" : "\"" + nodeId + "\""));
        }
        URI a = uri(advertise, "fleet.advertise");
        if (!("http".equals(a.getScheme()) || "https".equals(a.getScheme())) || a.getHost() == null) {
            throw new IllegalArgumentException("fleet.advertise must be http(s)://host[:port], got \"" + advertise + "\"");
        }
        for (var l : labels.entrySet()) {
            if (!LABEL.matcher(l.getKey()).matches() || l.getValue() == null || l.getValue().length() > 63) {
                throw new IllegalArgumentException("fleet.labels: label '" + l.getKey() + "' must be a lower-case name of up to 63 characters"
                        + " with a value of up to 63");
            }
        }
        if (internalCredentialFile == null) {
            throw new IllegalArgumentException("fleet.internal_credential_file is required (the secret the fleet's nodes share for"
                    + " node-to-node calls; at least " + MIN_CREDENTIAL_BYTES + " bytes, e.g. `openssl rand -hex 32`)");
        }
        credential();
        if (leaseTtlS < 2 || leaseTtlS > 300) throw new IllegalArgumentException("fleet.lease_ttl_s must be 2-300 seconds, got " + leaseTtlS);
        if (!prefix.startsWith("/") || !prefix.endsWith("/")) {
            throw new IllegalArgumentException("fleet.prefix must start and end with '/', got \"" + prefix + "\"");
        }
    }

    /** The shared node-to-node secret (the file's first line, trimmed). */
    public byte[] credential() {
        String s;
        try {
            s = Files.readAllLines(Path.of(internalCredentialFile), StandardCharsets.UTF_8).stream().findFirst().orElse("").trim();
        } catch (IOException e) {
            throw new IllegalArgumentException("fleet.internal_credential_file " + internalCredentialFile + " cannot be read: " + e.getMessage());
        }
        if (s.length() < MIN_CREDENTIAL_BYTES) {
            throw new IllegalArgumentException("fleet.internal_credential_file " + internalCredentialFile + " holds " + s.length()
                    + " characters; at least " + MIN_CREDENTIAL_BYTES + " are needed (e.g. `openssl rand -hex 32`)");
        }
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** How to reach etcd, as the store wants it. */
    public EtcdSettings etcd() {
        List<URI> eps = new ArrayList<>();
        for (String e : endpoints) eps.add(uri(e, "fleet.endpoints entries"));
        String password = null;
        if (auth != null) {
            try {
                password = Files.readAllLines(Path.of(auth.passwordFile()), StandardCharsets.UTF_8).stream().findFirst().orElse("");
            } catch (IOException e) {
                throw new IllegalArgumentException("fleet.auth.password_file " + auth.passwordFile() + " cannot be read: " + e.getMessage());
            }
        }
        return new EtcdSettings(eps, tls == null || tls.caFile() == null ? null : Path.of(tls.caFile()),
                auth == null ? null : auth.username(), password, EtcdSettings.DEFAULT_TIMEOUT);
    }

    public Duration leaseTtl() { return Duration.ofSeconds(leaseTtlS); }

    private static URI uri(String s, String key) {
        try {
            return URI.create(String.valueOf(s));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + " must be http(s)://host:port, got \"" + s + "\"");
        }
    }
}
