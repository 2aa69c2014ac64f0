package dev.berth.engine;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.Date;
import java.util.function.Function;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A test certificate authority standing in for the public PKI, and real HTTPS upstreams on loopback whose
 * certificates it signs. The egress proxy is told to trust it (upstreamTrust), exactly as it trusts the system
 * roots in production; workspaces are not, unless a test hands it to curl explicitly.
 */
public final class TestPki {
    private final KeyPair caKeys;
    private final X509Certificate ca;

    private TestPki(KeyPair caKeys, X509Certificate ca) {
        this.caKeys = caKeys;
        this.ca = ca;
    }

    public static TestPki create() throws Exception {
        KeyPair keys = rsa();
        X500Name name = new X500Name("CN=Berth test public root");
        Date from = new Date(System.currentTimeMillis() - 3_600_000L);
        Date to = new Date(System.currentTimeMillis() + 86_400_000L);
        var b = new JcaX509v3CertificateBuilder(name, BigInteger.valueOf(new SecureRandom().nextLong() & Long.MAX_VALUE),
                from, to, name, keys.getPublic());
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        X509Certificate cert = new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withRSA").build(keys.getPrivate())));
        return new TestPki(keys, cert);
    }

    private static KeyPair rsa() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        return g.generateKeyPair();
    }

    /** This CA's certificate, PEM. */
    public String caPem() throws Exception {
        return pem(ca);
    }

    public Path writeCaPem(Path file) throws Exception {
        Files.writeString(file, caPem());
        return file;
    }

    static String pem(X509Certificate c) throws Exception {
        return "-----BEGIN CERTIFICATE-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(c.getEncoded()) + "\n-----END CERTIFICATE-----\n";
    }

    /** A loopback server's TLS files in a test directory: its certificate and key, and the root that signed it. */
    public record LocalhostFiles(Path cert, Path key, Path root) {}

    /**
     * A new authority and, in {@code dir}, {@code server.crt}/{@code server.key} for the name {@code localhost} and
     * {@code test-root.pem} (what a real server on loopback and the proxy's upstream trust need).
     */
    public static LocalhostFiles localhost(Path dir) throws Exception {
        TestPki pki = create();
        Path cert = dir.resolve("server.crt");
        Path key = dir.resolve("server.key");
        pki.writeServerPem(cert, key, "localhost");
        return new LocalhostFiles(cert, key, pki.writeCaPem(dir.resolve("test-root.pem")));
    }

    /**
     * A leaf certificate for {@code dnsNames} signed by this CA, written as PEM (certificate chain, then the PKCS#8
     * private key) for servers configured with files, such as nginx.
     */
    public void writeServerPem(Path certFile, Path keyFile, String... dnsNames) throws Exception {
        KeyPair keys = rsa();
        Files.writeString(certFile, pem(leaf(keys, dnsNames)) + caPem());
        Files.writeString(keyFile, "-----BEGIN PRIVATE KEY-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(keys.getPrivate().getEncoded()) + "\n-----END PRIVATE KEY-----\n");
    }

    private X509Certificate leaf(KeyPair keys, String... dnsNames) throws Exception {
        Date from = new Date(System.currentTimeMillis() - 3_600_000L);
        Date to = new Date(System.currentTimeMillis() + 86_400_000L);
        var b = new JcaX509v3CertificateBuilder(new X500Name(ca.getSubjectX500Principal().getName()),
                BigInteger.valueOf(new SecureRandom().nextLong() & Long.MAX_VALUE), from, to,
                new X500Name("CN=" + dnsNames[0]), keys.getPublic());
        GeneralName[] names = new GeneralName[dnsNames.length];
        for (int i = 0; i < dnsNames.length; i++) names[i] = new GeneralName(GeneralName.dNSName, dnsNames[i]);
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names));
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withRSA").build(caKeys.getPrivate())));
    }

    /** A server TLS context presenting a certificate for {@code dnsNames}, signed by this CA. */
    public SSLContext serverContext(String... dnsNames) throws Exception {
        KeyPair keys = rsa();
        Date from = new Date(System.currentTimeMillis() - 3_600_000L);
        Date to = new Date(System.currentTimeMillis() + 86_400_000L);
        var b = new JcaX509v3CertificateBuilder(new X500Name(ca.getSubjectX500Principal().getName()),
                BigInteger.valueOf(new SecureRandom().nextLong() & Long.MAX_VALUE), from, to,
                new X500Name("CN=" + dnsNames[0]), keys.getPublic());
        GeneralName[] names = new GeneralName[dnsNames.length];
        for (int i = 0; i < dnsNames.length; i++) names[i] = new GeneralName(GeneralName.dNSName, dnsNames[i]);
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names));
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        X509Certificate leaf = new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withRSA").build(caKeys.getPrivate())));
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("leaf", keys.getPrivate(), new char[0], new Certificate[] {leaf, ca});
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, new char[0]);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), null, null);
        return ctx;
    }

    /**
     * A started HTTPS server on loopback, certified for {@code dnsNames}, answering every request with
     * {@code body.apply(exchange)} (status 200).
     */
    public HttpsServer https(Function<HttpExchange, String> body, String... dnsNames) throws Exception {
        HttpsServer s = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        s.setHttpsConfigurator(new HttpsConfigurator(serverContext(dnsNames)));
        s.createContext("/", ex -> {
            byte[] b;
            try {
                b = body.apply(ex).getBytes(StandardCharsets.UTF_8);
            } catch (RuntimeException e) {
                b = ("error: " + e).getBytes(StandardCharsets.UTF_8);
            }
            ex.sendResponseHeaders(200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        });
        s.start();
        return s;
    }

    /** What an upstream saw in Authorization, in words that never repeat {@code secret} itself. */
    public static String describeAuth(HttpExchange ex, String secret) {
        String a = ex.getRequestHeaders().getFirst("Authorization");
        if (a == null) return "auth=none";
        if (a.equals("Bearer " + secret)) return "auth=bearer-real";
        if (a.startsWith("Basic ")) {
            String dec = new String(Base64.getDecoder().decode(a.substring(6)), StandardCharsets.UTF_8);
            if (dec.endsWith(":" + secret)) return "auth=basic-real";
            return "auth=basic:" + dec;
        }
        if (a.contains(secret)) return "auth=contains-real";
        return "auth=" + a;
    }

    public static void close(HttpsServer s) throws IOException {
        if (s != null) s.stop(0);
    }
}
