package dev.berth.proxy.tls;

import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.SSLException;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The interception CA and the leaf certificates it issues for intercepted hosts.
 *
 * <p>Thread-safe. Owns the CA key (in memory, optionally persisted 0600) and one shared RSA leaf
 * key. Leaves are cached per host and reissued a day before they expire.
 *
 * <p>Implementation notes: RSA 2048 + SHA-256 everywhere, because it is the one combination
 * every TLS client we care about accepts (OpenSSL/curl, the JDK, Node, Go, busybox wget's
 * built-in TLS). The CA has pathLen 0 and keyCertSign only: it can sign leaves and nothing else.
 * Leaves are short-lived (7 days) so a leaked leaf key is worth little; the CA key is what must
 * stay on the host.
 */
public final class InterceptionCa {
    public static final Duration LEAF_LIFETIME = Duration.ofDays(7);
    static final Duration LEAF_RENEW_BEFORE = Duration.ofDays(1);
    private static final Duration CA_LIFETIME = Duration.ofDays(3650);
    private static final Duration BACKDATE = Duration.ofHours(1);
    private static final int MAX_CACHED_LEAVES = 4096;
    public static final String KEY_FILE = "ca.key";
    public static final String CERT_FILE = "ca.crt";

    private record Leaf(SslContext context, X509Certificate certificate) {}

    private final PrivateKey caKey;
    private final X509Certificate caCert;
    private final SecureRandom random = new SecureRandom();
    private final ConcurrentHashMap<String, Leaf> leaves = new ConcurrentHashMap<>();
    private volatile KeyPair leafKeys;

    private InterceptionCa(PrivateKey caKey, X509Certificate caCert) {
        this.caKey = caKey;
        this.caCert = caCert;
    }

    /** A fresh in-memory CA. */
    public static InterceptionCa generate(String instance) {
        KeyPair kp = rsaKeyPair();
        Instant now = Instant.now();
        X500Name name = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, "Berth egress interception CA " + instance)
                .addRDN(BCStyle.O, "Berth").build();
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(name, serial(new SecureRandom()), Date.from(now.minus(BACKDATE)),
                    Date.from(now.plus(CA_LIFETIME)), name, kp.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(kp.getPublic()));
            return new InterceptionCa(kp.getPrivate(), sign(b, kp.getPrivate()));
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot create the interception CA", e);
        }
    }

    /**
     * Loads {@code dir/ca.key} + {@code dir/ca.crt}, or creates both (key 0600, directory 0700)
     * if neither exists. One without the other, a key readable by others, a key that does not
     * match the certificate, or an expired certificate are errors naming the file.
     */
    public static InterceptionCa loadOrCreate(Path dir, String instance) throws IOException {
        Path key = dir.resolve(KEY_FILE);
        Path cert = dir.resolve(CERT_FILE);
        boolean hasKey = Files.exists(key);
        boolean hasCert = Files.exists(cert);
        if (hasKey != hasCert) {
            throw new IOException("CA directory " + dir + " has " + (hasKey ? key : cert) + " but not " + (hasKey ? cert : key)
                    + "; restore the missing file or remove both to create a new CA");
        }
        if (hasKey) {
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(key);
            if (perms.stream().anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
                throw new IOException("CA key " + key + " is accessible by group/others (" + PosixFilePermissions.toString(perms)
                        + "); it must be 0600");
            }
            PrivateKey k = Pem.readRsaPrivateKey(key);
            X509Certificate c = Pem.readCertificates(cert).getFirst();
            if (!matches(k, c.getPublicKey())) throw new IOException("CA key " + key + " does not match certificate " + cert);
            if (c.getNotAfter().toInstant().isBefore(Instant.now())) {
                throw new IOException("CA certificate " + cert + " expired at " + c.getNotAfter().toInstant() + "; remove both files to create a new CA");
            }
            return new InterceptionCa(k, c);
        }
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        InterceptionCa ca = generate(instance);
        writeAtomically(key, Pem.privateKey(ca.caKey), "rw-------");
        writeAtomically(cert, Pem.certificate(ca.caCert), "rw-r--r--");
        return ca;
    }

    private static void writeAtomically(Path target, String text, String mode) throws IOException {
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        Files.deleteIfExists(tmp);
        // Created with its final mode: the key is never on disk with wider permissions.
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(mode)));
        Files.writeString(tmp, text, StandardCharsets.US_ASCII);
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    }

    private static boolean matches(PrivateKey k, PublicKey pub) {
        return k instanceof java.security.interfaces.RSAPrivateKey rk && pub instanceof java.security.interfaces.RSAPublicKey rp
                && rk.getModulus().equals(rp.getModulus());
    }

    public X509Certificate certificate() {
        return caCert;
    }

    public String certificatePem() {
        return Pem.certificate(caCert);
    }

    /** Server-side TLS context presenting a leaf for {@code host}: TLS 1.2/1.3, ALPN offers only http/1.1. */
    public SslContext serverContext(String host) {
        Leaf l = leaves.get(host);
        if (l == null || l.certificate().getNotAfter().toInstant().isBefore(Instant.now().plus(LEAF_RENEW_BEFORE))) {
            if (leaves.size() >= MAX_CACHED_LEAVES) leaves.clear();
            KeyPair keys = leafKeys();
            X509Certificate cert = issue(host, keys.getPublic());
            try {
                SslContext ctx = SslContextBuilder.forServer(keys.getPrivate(), cert, caCert)
                        .sslProvider(SslProvider.JDK)
                        .protocols("TLSv1.3", "TLSv1.2")
                        .applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                                ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                                ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                                List.of(ApplicationProtocolNames.HTTP_1_1)))
                        .build();
                l = new Leaf(ctx, cert);
            } catch (SSLException e) {
                throw new IllegalStateException("cannot build the TLS server context for " + host, e);
            }
            leaves.put(host, l);
        }
        return l.context();
    }

    private KeyPair leafKeys() {
        KeyPair k = leafKeys;
        if (k == null) {
            synchronized (this) {
                if (leafKeys == null) leafKeys = rsaKeyPair();
                k = leafKeys;
            }
        }
        return k;
    }

    /** Issues a leaf for one DNS name (SAN = host), valid from now-1h to now+7d. Package-private for tests. */
    X509Certificate issue(String host, PublicKey key) {
        return issue(key, List.of(host));
    }

    /** A leaf whose SAN lists every name in {@code hosts}; CN is the first. */
    public X509Certificate issue(PublicKey key, List<String> hosts) {
        String host = hosts.getFirst();
        Instant now = Instant.now();
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X500Name subject = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, host).build();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(caCert, serial(random), Date.from(now.minus(BACKDATE)),
                    Date.from(now.plus(LEAF_LIFETIME)), subject, key)
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment))
                    .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth))
                    .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(
                            hosts.stream().map(n -> new GeneralName(GeneralName.dNSName, n)).toArray(GeneralName[]::new)))
                    .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(key))
                    .addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(caCert));
            return sign(b, caKey);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot issue a leaf certificate for " + host, e);
        }
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey signer) throws GeneralSecurityException {
        try {
            return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withRSA").build(signer)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException(e);
        }
    }

    private static BigInteger serial(SecureRandom r) {
        return new BigInteger(127, r).add(BigInteger.ONE); // positive, at most 16 bytes (RFC 5280)
    }

    public static KeyPair rsaKeyPair() {
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
            g.initialize(2048);
            return g.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    PrivateKey key() {
        return caKey;
    }
}
