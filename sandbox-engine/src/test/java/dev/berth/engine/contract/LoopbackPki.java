package dev.berth.engine.contract;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
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
 * A test certificate authority standing in for the public PKI, and HTTPS upstreams on loopback whose certificates it
 * signs: the egress proxy is told to trust it, as it trusts the system roots in production; workspaces are not,
 * unless a case hands it to a client explicitly. Immutable.
 */
public final class LoopbackPki {
    private final KeyPair caKeys;
    private final X509Certificate ca;

    private LoopbackPki(KeyPair caKeys, X509Certificate ca) {
        this.caKeys = caKeys;
        this.ca = ca;
    }

    /** A new authority with a one-day root. */
    public static LoopbackPki create() throws Exception {
        KeyPair keys = rsa();
        X500Name name = new X500Name("CN=Berth test public root");
        var b = new JcaX509v3CertificateBuilder(name, serial(), from(), to(), name, keys.getPublic());
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        return new LoopbackPki(keys, new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withRSA").build(keys.getPrivate()))));
    }

    /** This authority's certificate, PEM. */
    public String caPem() throws Exception {
        return "-----BEGIN CERTIFICATE-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(ca.getEncoded()) + "\n-----END CERTIFICATE-----\n";
    }

    /** Writes {@link #caPem()} to {@code file} and returns it. */
    public Path writeCaPem(Path file) throws Exception {
        Files.writeString(file, caPem());
        return file;
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

    private SSLContext serverContext(String... dnsNames) throws Exception {
        KeyPair keys = rsa();
        var b = new JcaX509v3CertificateBuilder(new X500Name(ca.getSubjectX500Principal().getName()), serial(), from(), to(),
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

    private static KeyPair rsa() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        return g.generateKeyPair();
    }

    private static BigInteger serial() {
        return BigInteger.valueOf(new SecureRandom().nextLong() & Long.MAX_VALUE);
    }

    private static Date from() {
        return new Date(System.currentTimeMillis() - 3_600_000L);
    }

    private static Date to() {
        return new Date(System.currentTimeMillis() + 86_400_000L);
    }
}
