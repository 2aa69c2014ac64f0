package dev.berth.proxy;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.tls.InterceptionCa;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * Credential-injection fixture: real HTTPS upstreams on 127.0.0.1 with certificates from a test CA
 * (trusted via upstreamTrustFiles) and one from a rogue CA (not trusted), a plain-HTTP upstream,
 * and a proxy with secret bindings listening for two workspaces. Names resolve via TestResolver.
 */
final class CredentialFixture implements AutoCloseable {
    static final String GITHUB_SECRET = "ghp_REALsecretValue0123456789abcdef";
    static final String NPM_SECRET = "npm_REALsecretValue9876543210";
    static final String PLAIN_SECRET = "plain-REALsecret-42";
    static final String APIKEY_SECRET = "key_REALsecretValue_5550123";

    final Path dir;
    final InterceptionCa upstreamCa = InterceptionCa.generate("upstream-test");
    final InterceptionCa rogueCa = InterceptionCa.generate("rogue-test");
    final HttpsServer https;
    final HttpsServer rogue;
    final Upstreams.Http http;
    final TestResolver resolver = new TestResolver();
    final List<Decision> decisions = new CopyOnWriteArrayList<>();
    final List<Decision> decisionsB = new CopyOnWriteArrayList<>();
    final List<AuditRecord> audit = new CopyOnWriteArrayList<>();
    /** Authorization headers the HTTPS upstream received, in order. */
    final List<String> seenAuth = new CopyOnWriteArrayList<>();
    /** Everything the HTTPS upstream received per request (raw URI and every header), in order. */
    final List<String> seenRaw = new CopyOnWriteArrayList<>();
    final EgressProxy proxy;
    final EgressProxy.Listener listenerA;
    final EgressProxy.Listener listenerB;
    final int pA;
    final int pB;
    final int pH;
    final Policy ceiling;
    /** Added to System.nanoTime() for the proxy's clock: tests jump over placeholder lifetimes. */
    final java.util.concurrent.atomic.AtomicLong clockOffset = new java.util.concurrent.atomic.AtomicLong();
    /** Released when the fixture closes: /stream responses hang until then (or until the proxy cuts them). */
    final java.util.concurrent.CountDownLatch streamsEnd = new java.util.concurrent.CountDownLatch(1);

    CredentialFixture(Path dir) throws Exception {
        this.dir = dir;
        KeyPair kp = InterceptionCa.rsaKeyPair();
        X509Certificate cert = upstreamCa.issue(kp.getPublic(), List.of("api.cred.test", "registry.cred.test", "plain.cred.test",
                "npmreg.cred.test", "pypi.cred.test", "maven.cred.test", "git.cred.test"));
        https = httpsServer(kp, cert, upstreamCa.certificate());
        KeyPair rk = InterceptionCa.rsaKeyPair();
        rogue = httpsServer(rk, rogueCa.issue(rk.getPublic(), List.of("untrusted.cred.test")), rogueCa.certificate());
        http = new Upstreams.Http();
        pA = https.getAddress().getPort();
        pB = rogue.getAddress().getPort();
        pH = http.port();
        for (String n : List.of("api.cred.test", "registry.cred.test", "plain.cred.test", "wrongname.cred.test", "untrusted.cred.test",
                "allowed.test", "npmreg.cred.test", "pypi.cred.test", "maven.cred.test", "git.cred.test")) {
            resolver.map(n, "127.0.0.1");
        }
        Path trust = dir.resolve("upstream-ca.pem");
        Files.writeString(trust, upstreamCa.certificatePem());
        ceiling = Policy.of(List.of("api.cred.test:" + pA + "," + pH, "registry.cred.test:" + pA, "plain.cred.test:" + pA,
                "wrongname.cred.test:" + pA, "untrusted.cred.test:" + pB, "allowed.test:" + pH,
                "npmreg.cred.test:" + pA, "pypi.cred.test:" + pA, "maven.cred.test:" + pA, "git.cred.test:" + pA));
        ProxyConfig cfg = ProxyConfig.builder()
                .ceiling(ceiling)
                .tlsPorts(Set.of(443, pA, pB))
                .headerTimeout(Duration.ofSeconds(5))
                .unsafeAllowLoopbackUpstreams(true)
                .upstreamTrustFiles(List.of(trust))
                .secret(SecretBinding.of("github", "GITHUB_TOKEN", List.of("api.cred.test"), GITHUB_SECRET))
                .secret(SecretBinding.of("npm", "NPM_TOKEN", List.of("registry.cred.test"), NPM_SECRET))
                .secret(SecretBinding.of("untrusted", "UNTRUSTED_TOKEN", List.of("untrusted.cred.test"), "u-secret"))
                .secret(SecretBinding.of("wrongname", "WRONGNAME_TOKEN", List.of("wrongname.cred.test"), "w-secret"))
                .secret(SecretBinding.of("plainok", "PLAINOK_TOKEN", List.of("allowed.test"), PLAIN_SECRET).withUnsafeAllowPlainHttp(true))
                .secret(SecretBinding.of("apikey", "APIKEY_TOKEN", List.of("registry.cred.test"), APIKEY_SECRET).withHeaders(List.of("X-Api-Key")))
                .registryRule(RegistryRule.of(RegistryRule.Kind.NPM, List.of("npmreg.cred.test"), null))
                .registryRule(RegistryRule.of(RegistryRule.Kind.PYPI, List.of("pypi.cred.test"), null))
                .registryRule(RegistryRule.of(RegistryRule.Kind.MAVEN, List.of("maven.cred.test"), null))
                .registryRule(RegistryRule.of(RegistryRule.Kind.GIT, List.of("git.cred.test"), List.of("org/allowed")))
                .build();
        proxy = EgressProxy.builder(cfg).resolver(resolver).auditSink(audit::add).threads(2)
                .clock(() -> System.nanoTime() + clockOffset.get()).start();
        Set<String> all = Set.of("github", "npm", "untrusted", "wrongname", "plainok", "apikey");
        listenerA = proxy.listen(loopback(), new EgressContext("ws-a", "run-a", ceiling, decisions::add, all));
        listenerB = proxy.listen(loopback(), new EgressContext("ws-b", "run-b", ceiling, decisionsB::add, all));
    }

    private static InetSocketAddress loopback() {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    }

    private HttpsServer httpsServer(KeyPair kp, X509Certificate leaf, X509Certificate ca) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("leaf", kp.getPrivate(), new char[0], new X509Certificate[] {leaf, ca});
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, new char[0]);
        SSLContext ssl = SSLContext.getInstance("TLS");
        ssl.init(kmf.getKeyManagers(), null, null);
        HttpsServer s = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        s.setHttpsConfigurator(new HttpsConfigurator(ssl));
        s.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        s.createContext("/stream", ex -> {
            // a streamed response that does not end by itself: one chunk, then nothing until the fixture closes
            ex.sendResponseHeaders(200, 0);
            ex.getResponseBody().write("first-chunk\n".getBytes(StandardCharsets.UTF_8));
            ex.getResponseBody().flush();
            try {
                streamsEnd.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            ex.close();
        });
        s.createContext("/", ex -> {
            // Echo: what arrived, as facts the test can check without the server knowing the placeholder.
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            seenAuth.add(String.valueOf(auth));
            seenRaw.add(ex.getRequestURI() + " " + ex.getRequestHeaders().entrySet());
            String key = ex.getRequestHeaders().getFirst("X-Api-Key");
            if (key != null) ex.getResponseHeaders().add("X-Echo-Api-Key", key.equals(APIKEY_SECRET) ? "real" : "other");
            ex.getRequestBody().readAllBytes();
            String expected = expectedAuth(ex.getRequestURI().getQuery());
            String body = "auth=" + (auth == null ? "none" : auth.equals(expected) ? "real" : "other") + " sha=" + sha256(auth)
                    + " path=" + ex.getRequestURI().getRawPath();
            if (auth != null) ex.getResponseHeaders().add("X-Echo-Authorization", auth);
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        });
        s.start();
        return s;
    }

    /** The Authorization value the upstream should see after injection: ?expect=bearer|basic. */
    static String expectedAuth(String query) {
        if (query == null) return null;
        if (query.contains("expect=bearer")) return "Bearer " + GITHUB_SECRET;
        if (query.contains("expect=basic")) return basic("x-access-token:" + GITHUB_SECRET);
        return null;
    }

    static String basic(String userinfo) {
        return "Basic " + java.util.Base64.getEncoder().encodeToString(userinfo.getBytes(StandardCharsets.ISO_8859_1));
    }

    static String sha256(String s) {
        if (s == null) return "-";
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A JDK HttpClient through the proxy (workspace A or B) that trusts only the proxy's CA. */
    HttpClient client(EgressProxy.Listener via, HttpClient.Version version) throws Exception {
        return HttpClient.newBuilder()
                .proxy(ProxySelector.of(via.address()))
                .sslContext(trusting(proxy.caCertificatePem()))
                .version(version)
                .connectTimeout(Duration.ofSeconds(5))
                .build();
    }

    static SSLContext trusting(String... pems) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        int i = 0;
        for (String pem : pems) {
            for (var c : java.security.cert.CertificateFactory.getInstance("X.509")
                    .generateCertificates(new java.io.ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)))) {
                ks.setCertificateEntry("ca" + i++, c);
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    /** Raw CONNECT on workspace A; returns the socket after the 200. */
    Socket connect(String host, int port) throws IOException {
        Socket s = new Socket();
        s.connect(listenerA.address(), 2000);
        s.setSoTimeout(5000);
        Harness.write(s, "CONNECT " + host + ":" + port + " HTTP/1.1\r\nHost: " + host + ":" + port + "\r\n\r\n");
        Harness.Response r = Harness.Response.read(s.getInputStream());
        if (r.status() != 200) throw new IOException("CONNECT " + host + " -> " + r);
        return s;
    }

    /** TLS over an established tunnel with the given SNI, trusting the given CAs. */
    static SSLSocket tls(Socket tunnel, String sni, int port, String... trustedPems) throws Exception {
        SSLSocket ssl = (SSLSocket) trusting(trustedPems).getSocketFactory().createSocket(tunnel, sni, port, true);
        SSLParameters p = ssl.getSSLParameters();
        p.setServerNames(List.of(new SNIHostName(sni)));
        p.setEndpointIdentificationAlgorithm("HTTPS");
        ssl.setSSLParameters(p);
        ssl.startHandshake();
        return ssl;
    }

    Decision await(List<Decision> list, java.util.function.Predicate<Decision> p) throws InterruptedException {
        return Await.result("a matching decision", () -> Harness.first(list, p), () -> list);
    }

    AuditRecord awaitAudit(java.util.function.Predicate<AuditRecord> p) throws InterruptedException {
        return Await.result("a matching audit record", () -> Harness.first(audit, p), () -> audit);
    }

    Map<String, String> env(CredentialGrant g) {
        return g.environment();
    }

    @Override
    public void close() {
        streamsEnd.countDown();
        listenerA.close();
        listenerB.close();
        proxy.close();
        https.stop(0);
        rogue.stop(0);
        http.close();
    }
}
