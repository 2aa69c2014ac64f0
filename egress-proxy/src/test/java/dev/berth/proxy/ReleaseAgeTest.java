package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.Advisories;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.tls.InterceptionCa;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.zip.GZIPOutputStream;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * Issue 16, "Then" 1: minimum release age and the OSV advisory feed. A real HTTPS registry on loopback (JDK
 * HttpsServer, test CA) serves npm, PyPI and Maven metadata with an old, a fresh and a malicious version; the proxy
 * (7-day minimum age, one exempt package, an OSV file with a MAL- advisory) must hide the fresh and malicious versions
 * from every metadata format, fix up dist-tags / latest / release, refuse their files with the reason (also when the
 * client never fetched the metadata), report what it hid as a "filter" decision, and decode gzip and br bodies.
 */
class ReleaseAgeTest {
    @TempDir
    static Path tmp;
    static HttpsServer registry;
    static EgressProxy proxy;
    static EgressProxy.Listener listener;
    static int port;
    static final List<Decision> decisions = new CopyOnWriteArrayList<>();
    static final List<AuditRecord> audit = new CopyOnWriteArrayList<>();
    static final Map<String, Integer> hits = new ConcurrentHashMap<>();
    static final ObjectMapper JSON = new ObjectMapper();

    static final Instant OLD = Instant.parse("2020-01-02T03:04:05Z");
    static final Instant FRESH = Instant.now().minus(2, ChronoUnit.HOURS).truncatedTo(ChronoUnit.SECONDS);
    /** Served bodies by path: content type, body, optional Content-Encoding, optional Last-Modified. */
    record Served(String type, byte[] body, String encoding, Instant lastModified) {}
    static final Map<String, Served> served = new ConcurrentHashMap<>();

    static String packument(String name, String fresh) {
        return """
                {"name":"%1$s","dist-tags":{"latest":"%2$s","next":"%2$s"},
                 "versions":{"0.9.0":{"name":"%1$s","version":"0.9.0"},"1.0.0":{"name":"%1$s","version":"1.0.0"},
                             "%2$s":{"name":"%1$s","version":"%2$s"}},
                 "time":{"created":"2019-01-01T00:00:00.000Z","modified":"%3$s","0.9.0":"2019-06-01T00:00:00.000Z",
                         "1.0.0":"%4$s","%2$s":"%3$s"}}""".formatted(name, fresh, FRESH, OLD);
    }

    @BeforeAll
    static void start() throws Exception {
        InterceptionCa ca = InterceptionCa.generate("registry-test");
        KeyPair kp = InterceptionCa.rsaKeyPair();
        X509Certificate cert = ca.issue(kp.getPublic(), List.of("npm.age.test", "pypi.age.test", "maven.age.test"));
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("leaf", kp.getPrivate(), new char[0], new X509Certificate[] {cert, ca.certificate()});
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, new char[0]);
        SSLContext ssl = SSLContext.getInstance("TLS");
        ssl.init(kmf.getKeyManagers(), null, null);
        registry = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        registry.setHttpsConfigurator(new HttpsConfigurator(ssl));
        registry.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        registry.createContext("/", ex -> {
            String key = ex.getRequestHeaders().getFirst("Host").replaceFirst(":.*", "") + ex.getRequestURI().getRawPath();
            hits.merge(key, 1, Integer::sum);
            Served s = served.get(key);
            ex.getRequestBody().readAllBytes();
            if (s == null) {
                ex.sendResponseHeaders(404, -1);
                ex.close();
                return;
            }
            ex.getResponseHeaders().add("Content-Type", s.type());
            ex.getResponseHeaders().add("ETag", "\"upstream-etag\"");
            if (s.encoding() != null) ex.getResponseHeaders().add("Content-Encoding", s.encoding());
            if (s.lastModified() != null) {
                ex.getResponseHeaders().add("Last-Modified", DateTimeFormatter.RFC_1123_DATE_TIME.format(s.lastModified().atZone(ZoneOffset.UTC)));
            }
            boolean head = ex.getRequestMethod().equals("HEAD");
            ex.sendResponseHeaders(200, head ? -1 : s.body().length);
            if (!head) ex.getResponseBody().write(s.body());
            ex.close();
        });
        registry.start();
        port = registry.getAddress().getPort();

        // npm: "leftish" gzipped (1.1.0 fresh), "brotlied" br-encoded, "fresh-ok" exempt; 0.9.0 of leftish is malicious.
        served.put("npm.age.test/leftish", new Served("application/json", gzip(packument("leftish", "1.1.0")), "gzip", null));
        served.put("npm.age.test/brotlied", new Served("application/json", brotli(packument("brotlied", "2.0.0")), "br", null));
        served.put("npm.age.test/fresh-ok", new Served("application/json", packument("fresh-ok", "3.0.0").getBytes(StandardCharsets.UTF_8), null, null));
        for (String f : List.of("leftish/-/leftish-1.0.0.tgz", "leftish/-/leftish-1.1.0.tgz", "leftish/-/leftish-0.9.0.tgz",
                "fresh-ok/-/fresh-ok-3.0.0.tgz")) {
            served.put("npm.age.test/" + f, new Served("application/octet-stream", "tarball".getBytes(StandardCharsets.UTF_8), null, null));
        }
        // PyPI: JSON API, PEP 503 HTML (times come from the JSON API), PEP 691 JSON with upload-time.
        String pypiJson = """
                {"info":{"name":"Req-Lib","version":"2.1.0"},
                 "releases":{"1.0.0":[{"filename":"req_lib-1.0.0-py3-none-any.whl","upload_time_iso_8601":"%s"}],
                             "2.1.0":[{"filename":"req_lib-2.1.0-py3-none-any.whl","upload_time_iso_8601":"%s"}]},
                 "urls":[{"filename":"req_lib-2.1.0-py3-none-any.whl"}]}""".formatted(OLD, FRESH);
        served.put("pypi.age.test/pypi/req-lib/json", new Served("application/json", pypiJson.getBytes(StandardCharsets.UTF_8), null, null));
        served.put("pypi.age.test/simple/req-lib/", new Served("text/html", """
                <!DOCTYPE html><html><body>
                <a href="../../files/req_lib-1.0.0-py3-none-any.whl#sha256=aa">req_lib-1.0.0-py3-none-any.whl</a><br/>
                <a href="../../files/req_lib-2.1.0-py3-none-any.whl#sha256=bb">req_lib-2.1.0-py3-none-any.whl</a><br/>
                </body></html>""".getBytes(StandardCharsets.UTF_8), null, null));
        served.put("pypi.age.test/simple/other-lib/", new Served("application/vnd.pypi.simple.v1+json", """
                {"meta":{"api-version":"1.1"},"name":"other-lib","versions":["0.1","0.2"],
                 "files":[{"filename":"other-lib-0.1.tar.gz","url":"x","hashes":{},"upload-time":"%s"},
                          {"filename":"other-lib-0.2.tar.gz","url":"y","hashes":{},"upload-time":"%s"}]}"""
                .formatted(OLD, FRESH).getBytes(StandardCharsets.UTF_8), null, null));
        served.put("pypi.age.test/files/req_lib-2.1.0-py3-none-any.whl", new Served("application/octet-stream", new byte[] {1}, null, null));
        served.put("pypi.age.test/files/req_lib-1.0.0-py3-none-any.whl", new Served("application/octet-stream", new byte[] {1}, null, null));
        // Maven: metadata lists 1.0 (old) and 1.1 (fresh); POM Last-Modified says when each was deployed.
        served.put("maven.age.test/maven2/org/example/lib/maven-metadata.xml", new Served("application/xml", """
                <?xml version="1.0" encoding="UTF-8"?>
                <metadata>
                  <groupId>org.example</groupId>
                  <artifactId>lib</artifactId>
                  <versioning>
                    <latest>1.1</latest>
                    <release>1.1</release>
                    <versions>
                      <version>1.0</version>
                      <version>1.1</version>
                    </versions>
                    <lastUpdated>20261130000000</lastUpdated>
                  </versioning>
                </metadata>
                """.getBytes(StandardCharsets.UTF_8), null, null));
        for (String v : List.of("1.0", "1.1")) {
            Instant t = v.equals("1.0") ? OLD : FRESH;
            served.put("maven.age.test/maven2/org/example/lib/" + v + "/lib-" + v + ".pom", new Served("application/xml", "<project/>".getBytes(), null, t));
            served.put("maven.age.test/maven2/org/example/lib/" + v + "/lib-" + v + ".jar", new Served("application/java-archive", new byte[] {1}, null, t));
        }

        Path osv = tmp.resolve("osv");
        Files.createDirectories(osv);
        Files.writeString(osv.resolve("MAL-2026-0001.json"), """
                {"id":"MAL-2026-0001","summary":"Malicious code in leftish (npm)",
                 "affected":[{"package":{"ecosystem":"npm","name":"leftish"},"versions":["0.9.0"]}]}""");
        Files.writeString(osv.resolve("GHSA-not-malicious.json"), """
                {"id":"GHSA-xxxx-yyyy-zzzz","affected":[{"package":{"ecosystem":"npm","name":"leftish"},
                 "ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}""");
        Path trust = tmp.resolve("registry-ca.pem");
        Files.writeString(trust, ca.certificatePem());
        TestResolver resolver = new TestResolver();
        for (String n : List.of("npm.age.test", "pypi.age.test", "maven.age.test")) resolver.map(n, "127.0.0.1");
        Policy ceiling = Policy.of(List.of("npm.age.test:" + port, "pypi.age.test:" + port, "maven.age.test:" + port));
        Duration week = Duration.ofDays(7);
        ProxyConfig cfg = ProxyConfig.builder()
                .ceiling(ceiling)
                .tlsPorts(Set.of(443, port))
                .unsafeAllowLoopbackUpstreams(true)
                .upstreamTrustFiles(List.of(trust))
                .advisories(Advisories.load(osv))
                .maxMetadataBytes(1 << 20)
                .registryRule(RegistryRule.of(RegistryRule.Kind.NPM, List.of("npm.age.test"), null).withMinReleaseAge(week, List.of("fresh-ok")))
                .registryRule(RegistryRule.of(RegistryRule.Kind.PYPI, List.of("pypi.age.test"), null).withMinReleaseAge(week, null))
                .registryRule(RegistryRule.of(RegistryRule.Kind.MAVEN, List.of("maven.age.test"), null).withMinReleaseAge(week, null))
                .build();
        proxy = EgressProxy.builder(cfg).resolver(resolver).auditSink(audit::add).threads(2).start();
        listener = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                new EgressContext("ws-age", "run-age", ceiling, decisions::add, Set.of()));
    }

    @AfterAll
    static void stop() {
        listener.close();
        proxy.close();
        registry.stop(0);
    }

    static byte[] gzip(String s) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(out)) {
            z.write(s.getBytes(StandardCharsets.UTF_8));
        }
        return out.toByteArray();
    }

    /** br bytes from Debian's brotli command (the JDK has no Brotli encoder). */
    static byte[] brotli(String s) throws Exception {
        Process p = new ProcessBuilder("brotli", "-c").start();
        try (var in = p.getOutputStream()) {
            in.write(s.getBytes(StandardCharsets.UTF_8));
        }
        byte[] b = p.getInputStream().readAllBytes();
        assertEquals(0, p.waitFor(), "brotli -c failed (Debian package brotli, installed by scripts/install-deps.sh)");
        return b;
    }

    static HttpResponse<String> get(String host, String path, String... headers) throws Exception {
        try (HttpClient c = HttpClient.newBuilder().proxy(java.net.ProxySelector.of(listener.address()))
                .sslContext(CredentialFixture.trusting(proxy.caCertificatePem())).version(HttpClient.Version.HTTP_1_1).build()) {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("https://" + host + ":" + port + path));
            for (int i = 0; i < headers.length; i += 2) b.header(headers[i], headers[i + 1]);
            return c.send(b.build(), HttpResponse.BodyHandlers.ofString());
        }
    }

    static Decision filterDecision(String pkg) throws InterruptedException {
        return Await.result("a filter decision for " + pkg, () -> Harness.first(decisions,
                d -> d.kind().equals("filter") && d.reason().contains(" of " + pkg + " ")), () -> decisions);
    }

    @Test
    void interceptedHttps_nonCanonicalOrTrailingSlashSpellingOfAFreshTarball_refused_neverReachesTheRegistry() throws Exception {
        HttpResponse<String> dot = get("npm.age.test", "/leftish/%2e/-/leftish-1.1.0.tgz");
        assertEquals(403, dot.statusCode(), dot.body());
        assertTrue(dot.headers().firstValue("X-Berth-Denial").orElseThrow().contains("refuse a non-canonical request target: the path has a dot segment '.'"),
                dot.headers().toString());
        HttpResponse<String> slash = get("npm.age.test", "/leftish/-/leftish-1.1.0.tgz/");
        assertEquals(403, slash.statusCode(), slash.body());
        assertTrue(slash.body().contains("leftish@1.1.0 was published"), slash.body());
        assertTrue(hits.keySet().stream().noneMatch(k -> k.contains("leftish-1.1.0.tgz")), "a fresh tarball reached the registry: " + hits);
    }

    @Test
    void npmPackument_gzipped_freshAndMaliciousHidden_distTagsMoved() throws Exception {
        HttpResponse<String> r = get("npm.age.test", "/leftish", "Accept", "application/vnd.npm.install-v1+json", "Accept-Encoding", "gzip");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("Content-Encoding").isEmpty(), "the filtered body is sent decoded");
        assertTrue(r.headers().firstValue("ETag").isEmpty(), "a changed body keeps no upstream ETag");
        JsonNode doc = JSON.readTree(r.body());
        assertEquals(List.of("1.0.0"), List.copyOf(doc.get("versions").propertyNames()));
        assertEquals("1.0.0", doc.get("dist-tags").get("latest").asString());
        assertFalse(doc.get("dist-tags").has("next"), "a tag pointing at a hidden version is dropped");
        assertFalse(doc.get("time").has("1.1.0"));
        Decision d = filterDecision("leftish");
        assertTrue(d.allowed());
        assertTrue(d.reason().contains("leftish@1.1.0 was published " + FRESH + ", less than 7 days ago (registryRules.npm.minReleaseAgeDays"),
                d.reason());
        assertTrue(d.reason().contains("leftish@0.9.0 is listed as malicious by advisory MAL-2026-0001"), d.reason());
        assertTrue(audit.stream().anyMatch(a -> "filter".equals(a.kind()) && a.reason().equals(d.reason())), "the audit has the filter record");
    }

    @Test
    void npmPackument_brotli_decodedAndFiltered() throws Exception {
        HttpResponse<String> r = get("npm.age.test", "/brotlied", "Accept-Encoding", "br");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode doc = JSON.readTree(r.body());
        assertEquals(Set.of("0.9.0", "1.0.0"), Set.copyOf(doc.get("versions").propertyNames()));
        assertEquals("1.0.0", doc.get("dist-tags").get("latest").asString());
    }

    @Test
    void npmExemptPackage_freshVersionKept() throws Exception {
        HttpResponse<String> r = get("npm.age.test", "/fresh-ok");
        JsonNode doc = JSON.readTree(r.body());
        assertEquals(Set.of("0.9.0", "1.0.0", "3.0.0"), Set.copyOf(doc.get("versions").propertyNames()));
        assertEquals(200, get("npm.age.test", "/fresh-ok/-/fresh-ok-3.0.0.tgz").statusCode());
    }

    @Test
    void npmTarball_freshOrMalicious_refusedEvenWithoutMetadataFirst() throws Exception {
        served.put("npm.age.test/cold", new Served("application/json", packument("cold", "5.0.0").getBytes(StandardCharsets.UTF_8), null, null));
        served.put("npm.age.test/cold/-/cold-5.0.0.tgz", new Served("application/octet-stream", new byte[] {1}, null, null));
        HttpResponse<String> fresh = get("npm.age.test", "/cold/-/cold-5.0.0.tgz");
        assertEquals(403, fresh.statusCode());
        assertEquals("cold@5.0.0 was published " + FRESH + ", less than 7 days ago (registryRules.npm.minReleaseAgeDays; "
                + "exempt packages with registryRules.npm.exempt)", fresh.headers().firstValue("X-Berth-Denial").orElseThrow());
        assertEquals(null, hits.get("npm.age.test/cold/-/cold-5.0.0.tgz"), "the refused tarball never reached the registry");
        assertEquals(1, hits.get("npm.age.test/cold"), "the proxy read the packument itself");
        HttpResponse<String> mal = get("npm.age.test", "/leftish/-/leftish-0.9.0.tgz");
        assertEquals(403, mal.statusCode());
        assertEquals("leftish@0.9.0 is listed as malicious by advisory MAL-2026-0001 (advisory feed)",
                mal.headers().firstValue("X-Berth-Denial").orElseThrow());
        assertEquals(200, get("npm.age.test", "/leftish/-/leftish-1.0.0.tgz").statusCode());
    }

    @Test
    void pypiJsonApi_freshReleaseHidden_latestMoved() throws Exception {
        HttpResponse<String> r = get("pypi.age.test", "/pypi/req-lib/json");
        JsonNode doc = JSON.readTree(r.body());
        assertEquals(List.of("1.0.0"), List.copyOf(doc.get("releases").propertyNames()));
        assertEquals("1.0.0", doc.get("info").get("version").asString());
        assertEquals("req_lib-1.0.0-py3-none-any.whl", doc.get("urls").get(0).get("filename").asString());
    }

    @Test
    void pypiSimpleHtml_freshFileLinkRemoved_fileRefused() throws Exception {
        HttpResponse<String> r = get("pypi.age.test", "/simple/Req_Lib/".replace("Req_Lib", "req-lib"));
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.body().contains("req_lib-1.0.0-py3-none-any.whl"), r.body());
        assertFalse(r.body().contains("req_lib-2.1.0"), r.body());
        assertTrue(filterDecision("req-lib").reason().contains("req-lib 2.1.0 was published"));
        HttpResponse<String> file = get("pypi.age.test", "/files/req_lib-2.1.0-py3-none-any.whl");
        assertEquals(403, file.statusCode());
        assertTrue(file.headers().firstValue("X-Berth-Denial").orElseThrow().startsWith("req-lib 2.1.0 was published " + FRESH));
        assertEquals(200, get("pypi.age.test", "/files/req_lib-1.0.0-py3-none-any.whl").statusCode());
    }

    @Test
    void pypiSimpleJson_pep691UploadTime_freshFileAndVersionHidden() throws Exception {
        HttpResponse<String> r = get("pypi.age.test", "/simple/other-lib/", "Accept", "application/vnd.pypi.simple.v1+json");
        JsonNode doc = JSON.readTree(r.body());
        assertEquals(1, doc.get("files").size(), r.body());
        assertEquals("other-lib-0.1.tar.gz", doc.get("files").get(0).get("filename").asString());
        assertEquals(1, doc.get("versions").size());
    }

    @Test
    void mavenMetadata_freshVersionHidden_latestAndReleaseMoved_artifactRefused() throws Exception {
        HttpResponse<String> r = get("maven.age.test", "/maven2/org/example/lib/maven-metadata.xml");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.body().contains("<version>1.0</version>"), r.body());
        assertFalse(r.body().contains("<version>1.1</version>"), r.body());
        assertTrue(r.body().contains("<latest>1.0</latest>") && r.body().contains("<release>1.0</release>"), r.body());
        assertTrue(filterDecision("org.example:lib").reason().contains("org.example:lib 1.1 was published"));
        HttpResponse<String> jar = get("maven.age.test", "/maven2/org/example/lib/1.1/lib-1.1.jar");
        assertEquals(403, jar.statusCode());
        assertTrue(jar.headers().firstValue("X-Berth-Denial").orElseThrow().startsWith("org.example:lib 1.1 was published " + FRESH));
        assertEquals(200, get("maven.age.test", "/maven2/org/example/lib/1.0/lib-1.0.jar").statusCode());
        HttpResponse<String> sha = get("maven.age.test", "/maven2/org/example/lib/maven-metadata.xml.sha1");
        assertEquals(404, sha.statusCode());
    }

    @Test
    void metadataLargerThanTheBound_refusedNotPassedUnfiltered() throws Exception {
        StringBuilder big = new StringBuilder("{\"name\":\"huge\",\"versions\":{},\"pad\":\"");
        big.append("x".repeat(2 << 20)).append("\"}");
        served.put("npm.age.test/huge", new Served("application/json", big.toString().getBytes(StandardCharsets.UTF_8), null, null));
        HttpResponse<String> r = get("npm.age.test", "/huge");
        assertEquals(502, r.statusCode());
        assertTrue(r.headers().firstValue("X-Berth-Denial").orElseThrow().contains("larger than 1048576 bytes (maxMetadataBytes)"));
        served.remove("npm.age.test/huge");
    }

    @Test
    void advisoryFeed_onlyMaliciousRecordsCount() {
        Advisories a = Advisories.load(tmp.resolve("osv"));
        assertEquals(1, a.size());
        assertEquals("MAL-2026-0001", a.malicious(RegistryRule.Kind.NPM, "leftish", "0.9.0"));
        assertEquals(null, a.malicious(RegistryRule.Kind.NPM, "leftish", "1.0.0"), "the GHSA range is not a malicious-package record");
    }
}
