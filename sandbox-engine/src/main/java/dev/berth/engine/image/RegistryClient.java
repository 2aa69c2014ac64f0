package dev.berth.engine.image;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Pulls one image from an OCI registry (distribution API v2) into an OCI image layout directory, which the import
 * then reads like any other: the manifest (the platform's, from an index), the config and the layers, each checked
 * against its digest as it is written. Authentication: the registry's {@code WWW-Authenticate} challenge decides;
 * {@code Bearer} gets a token from the named realm (with the credentials, if any, as basic auth), {@code Basic}
 * sends the credentials. A redirect of a blob to another host (a CDN) is followed without the credentials.
 *
 * <p>HTTPS by default; plain HTTP only when the caller asks ({@code --unsafe-plain-http}: nothing then protects the
 * manifest in transit, and a tampered manifest names tampered layers whose digests match). One instance per pull.
 */
public final class RegistryClient {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String ACCEPT = String.join(", ", "application/vnd.oci.image.index.v1+json",
            "application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.docker.distribution.manifest.v2+json");
    private static final int MAX_MANIFEST = 4 << 20;

    /** Registry credentials (user and password or token); never written anywhere. */
    public record Credentials(String user, String password) {
        public static final Credentials NONE = new Credentials(null, null);

        String basic() {
            return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
        }

        boolean present() { return user != null && password != null; }

        @Override
        public String toString() { return present() ? "Credentials[" + user + ", password hidden]" : "Credentials[none]"; }
    }

    /** {@code host[:port]/repository[:tag|@sha256:...]}. */
    public record Reference(String host, String repository, String reference) {
        private static final Pattern REPO = Pattern.compile("[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*");

        public static Reference parse(String ref) throws ImageException {
            if (ref == null || ref.isBlank()) throw new ImageException("an image reference is needed: HOST[:PORT]/REPOSITORY[:TAG|@DIGEST]");
            int slash = ref.indexOf('/');
            if (slash < 0) throw new ImageException("image reference '" + ref + "' names no registry host: write HOST[:PORT]/REPOSITORY[:TAG]");
            String host = ref.substring(0, slash);
            String rest = ref.substring(slash + 1);
            String r = "latest";
            int at = rest.indexOf('@');
            if (at >= 0) {
                r = rest.substring(at + 1);
                rest = rest.substring(0, at);
                if (!OciSource.DIGEST.matcher(r).matches()) throw new ImageException("digest '" + r + "' in '" + ref + "' is not sha256:<64 hex digits>");
            } else {
                int colon = rest.lastIndexOf(':');
                if (colon >= 0) {
                    r = rest.substring(colon + 1);
                    rest = rest.substring(0, colon);
                    if (!r.matches("[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")) throw new ImageException("tag '" + r + "' in '" + ref + "' is not a valid tag");
                }
            }
            if (!REPO.matcher(rest).matches()) throw new ImageException("repository '" + rest + "' in '" + ref + "' is not a valid repository name");
            if (!host.matches("[A-Za-z0-9.-]+(:[0-9]{1,5})?|\\[[0-9a-fA-F:]+\\](:[0-9]{1,5})?")) {
                throw new ImageException("registry host '" + host + "' in '" + ref + "' is not a host[:port]");
            }
            return new Reference(host, rest, r);
        }

        @Override
        public String toString() { return host + "/" + repository + (reference.startsWith("sha256:") ? "@" : ":") + reference; }
    }

    private final Credentials credentials;
    private final boolean plainHttp;
    private final Consumer<String> progress;
    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER)
            .connectTimeout(Duration.ofSeconds(20)).build();
    private String authorization;

    RegistryClient(Credentials credentials, boolean plainHttp, Consumer<String> progress) {
        this.credentials = credentials == null ? Credentials.NONE : credentials;
        this.plainHttp = plainHttp;
        this.progress = progress;
    }

    /** Writes the image {@code ref} names (for this host's platform) as an OCI layout in {@code layout}. */
    void pull(Reference ref, Path layout, ImportLimits limits) throws IOException, ImageException {
        Path blobs = layout.resolve("blobs").resolve("sha256");
        Files.createDirectories(blobs);
        progress.accept("pulling " + ref + (plainHttp ? " over plain HTTP" : ""));
        Fetched m = manifest(ref, ref.reference());
        if (ref.reference().startsWith("sha256:") && !m.digest.equals(ref.reference())) {
            throw new ImageException(ref + ": the registry sent a manifest whose digest is " + m.digest);
        }
        JsonNode node = parse(m.body, "manifest of " + ref);
        String mediaType = node.path("mediaType").asString(m.contentType);
        if (node.has("manifests")) {
            JsonNode entry = OciSource.platform(node, "index " + m.digest + " of " + ref);
            String d = OciSource.digest(entry, "manifest");
            Files.write(blobs.resolve(m.digest.substring(7)), m.body);
            m = manifest(ref, d);
            if (!m.digest.equals(d)) throw new ImageException(ref + ": manifest " + d + " arrived with digest " + m.digest);
            node = parse(m.body, "manifest " + d);
            mediaType = node.path("mediaType").asString(m.contentType);
        }
        Files.write(blobs.resolve(m.digest.substring(7)), m.body);
        String cfg = OciSource.digest(node.path("config"), "config");
        blob(ref, cfg, blobs, MAX_MANIFEST);
        long total = 0;
        for (JsonNode l : node.path("layers")) {
            String d = OciSource.digest(l, "layer");
            long size = l.path("size").asLong(-1);
            total += Math.max(size, 0);
            if (total > limits.maxLayerBytes()) {
                throw new ImageException(ref + ": the layers are above the limit of " + (limits.maxLayerBytes() >> 20) + " MiB");
            }
            progress.accept("fetching layer " + d + " (" + size + " bytes)");
            blob(ref, d, blobs, limits.maxLayerBytes());
        }
        Files.writeString(layout.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
        ObjectNode desc = JSON.createObjectNode();
        desc.put("mediaType", mediaType == null || mediaType.isEmpty() ? "application/vnd.oci.image.manifest.v1+json" : mediaType);
        desc.put("digest", m.digest);
        desc.put("size", m.body.length);
        ObjectNode index = JSON.createObjectNode();
        index.put("schemaVersion", 2);
        index.putArray("manifests").add(desc);
        Files.writeString(layout.resolve("index.json"), JSON.writeValueAsString(index));
    }

    private record Fetched(byte[] body, String digest, String contentType) {}

    private Fetched manifest(Reference ref, String reference) throws IOException, ImageException {
        URI uri = uri(ref, "/manifests/" + reference);
        HttpResponse<InputStream> r = send(ref, uri, ACCEPT);
        try (InputStream in = r.body()) {
            if (r.statusCode() != 200) throw new ImageException(ref + ": manifest " + reference + ": HTTP " + r.statusCode() + " " + errorText(in));
            byte[] body = in.readNBytes(MAX_MANIFEST + 1);
            if (body.length > MAX_MANIFEST) throw new ImageException(ref + ": manifest is larger than " + (MAX_MANIFEST >> 20) + " MiB");
            return new Fetched(body, "sha256:" + HexFormat.of().formatHex(LayerApplier.sha256().digest(body)),
                    r.headers().firstValue("Content-Type").orElse(""));
        }
    }

    private void blob(Reference ref, String digest, Path blobs, long max) throws IOException, ImageException {
        Path out = blobs.resolve(digest.substring(7));
        URI uri = uri(ref, "/blobs/" + digest);
        HttpResponse<InputStream> r = send(ref, uri, "*/*");
        for (int hops = 0; r.statusCode() / 100 == 3 && hops < 5; hops++) {
            URI next = uri.resolve(r.headers().firstValue("Location").orElseThrow(() -> new IOException("redirect without Location")));
            r.body().close();
            boolean sameHost = next.getAuthority() != null && next.getAuthority().equals(uri.getAuthority());
            HttpRequest.Builder b = HttpRequest.newBuilder(next).timeout(Duration.ofMinutes(10)).GET();
            if (sameHost && authorization != null) b.header("Authorization", authorization);
            r = exchange(b.build());
            uri = next;
        }
        MessageDigest md = LayerApplier.sha256();
        long n = 0;
        try (InputStream in = r.body(); OutputStream o = Files.newOutputStream(out)) {
            if (r.statusCode() != 200) throw new ImageException(ref + ": blob " + digest + ": HTTP " + r.statusCode() + " " + errorText(in));
            byte[] buf = new byte[1 << 16];
            int k;
            while ((k = in.read(buf)) > 0) {
                n += k;
                if (n > max) throw new ImageException(ref + ": blob " + digest + " is larger than the limit of " + (max >> 20) + " MiB");
                md.update(buf, 0, k);
                o.write(buf, 0, k);
            }
        }
        String actual = "sha256:" + HexFormat.of().formatHex(md.digest());
        if (!actual.equals(digest)) {
            throw new ImageException(ref + ": blob " + digest + ": digest mismatch, received " + actual + " (" + n + " bytes): corrupt or truncated");
        }
    }

    private URI uri(Reference ref, String path) {
        return URI.create((plainHttp ? "http://" : "https://") + ref.host() + "/v2/" + ref.repository() + path);
    }

    /** Sends a GET, answering one authentication challenge. */
    private HttpResponse<InputStream> send(Reference ref, URI uri, String accept) throws IOException, ImageException {
        HttpResponse<InputStream> r = exchange(request(uri, accept));
        if (r.statusCode() != 401) return r;
        String challenge = r.headers().firstValue("WWW-Authenticate").orElse("");
        r.body().close();
        authorization = authenticate(ref, challenge);
        r = exchange(request(uri, accept));
        if (r.statusCode() == 401) {
            r.body().close();
            throw new ImageException(ref + ": the registry refused " + (credentials.present() ? "the credentials given" : "an anonymous pull")
                    + " (HTTP 401)" + (credentials.present() ? "" : "; give --user and BERTH_REGISTRY_PASSWORD"));
        }
        return r;
    }

    private HttpRequest request(URI uri, String accept) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(10)).header("Accept", accept).GET();
        if (authorization != null) b.header("Authorization", authorization);
        return b.build();
    }

    private HttpResponse<InputStream> exchange(HttpRequest req) throws IOException {
        try {
            return http.send(req, HttpResponse.BodyHandlers.ofInputStream());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while talking to " + req.uri().getHost());
        }
    }

    private String authenticate(Reference ref, String challenge) throws IOException, ImageException {
        String scheme = challenge.split(" ", 2)[0];
        if (scheme.equalsIgnoreCase("Basic")) {
            if (!credentials.present()) throw new ImageException(ref + ": the registry wants basic authentication; give --user and BERTH_REGISTRY_PASSWORD");
            return credentials.basic();
        }
        if (!scheme.equalsIgnoreCase("Bearer")) throw new ImageException(ref + ": unsupported authentication challenge '" + challenge + "'");
        Map<String, String> p = params(challenge.substring(scheme.length()));
        String realm = p.get("realm");
        if (realm == null) throw new ImageException(ref + ": bearer challenge without a realm: '" + challenge + "'");
        URI realmUri = URI.create(realm);
        if (!realmUri.getScheme().equals("https") && !plainHttp) {
            throw new ImageException(ref + ": the token realm " + realm + " is not HTTPS (credentials would travel in clear)");
        }
        StringBuilder q = new StringBuilder();
        if (p.containsKey("service")) q.append("service=").append(URLEncoder.encode(p.get("service"), StandardCharsets.UTF_8));
        String scope = p.getOrDefault("scope", "repository:" + ref.repository() + ":pull");
        q.append(q.isEmpty() ? "" : "&").append("scope=").append(URLEncoder.encode(scope, StandardCharsets.UTF_8));
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(realm + (realm.contains("?") ? "&" : "?") + q))
                .timeout(Duration.ofSeconds(30)).GET();
        if (credentials.present()) b.header("Authorization", credentials.basic());
        HttpResponse<InputStream> r = exchange(b.build());
        try (InputStream in = r.body()) {
            byte[] body = in.readNBytes(1 << 20);
            if (r.statusCode() != 200) throw new ImageException(ref + ": the token service " + realm + " answered HTTP " + r.statusCode());
            JsonNode t = parse(body, "token response");
            String token = t.path("token").asString(t.path("access_token").asString(""));
            if (token.isEmpty()) throw new ImageException(ref + ": the token service " + realm + " sent no token");
            return "Bearer " + token;
        }
    }

    /** {@code key="value", key=value} pairs of a challenge. */
    static Map<String, String> params(String s) {
        Map<String, String> out = new LinkedHashMap<>();
        Matcher m = Pattern.compile("([A-Za-z_]+)=(?:\"([^\"]*)\"|([^,\\s]*))").matcher(s);
        while (m.find()) out.put(m.group(1).toLowerCase(java.util.Locale.ROOT), m.group(2) != null ? m.group(2) : m.group(3));
        return out;
    }

    private static JsonNode parse(byte[] body, String what) throws ImageException {
        try {
            return JSON.readTree(body);
        } catch (RuntimeException e) {
            throw new ImageException(what + " is not JSON: " + e.getMessage());
        }
    }

    private static String errorText(InputStream in) throws IOException {
        String s = new String(in.readNBytes(300), StandardCharsets.UTF_8).strip();
        return s.isEmpty() ? "" : "(" + s + ")";
    }

    static List<String> acceptedMediaTypes() { return List.of(ACCEPT.split(", ")); }
}
