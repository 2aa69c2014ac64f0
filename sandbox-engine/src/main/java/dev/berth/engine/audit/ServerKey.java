package dev.berth.engine.audit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.Set;

/**
 * The server's Ed25519 signing key: signs receipts and the audit logs' heads. Kept in {@code home/keys/}
 * ({@code audit-ed25519.key}, PKCS#8 PEM, mode 0600 in a 0700 folder; {@code audit-ed25519.pub}, the public half as
 * X.509 PEM, which {@code berth doctor} prints). A key readable by group or others is refused, not repaired: someone
 * may have copied it. Keys are the JDK's (generated, encoded and verified with its Ed25519 provider); signing uses
 * BouncyCastle's Ed25519, which gives the same (deterministic) signatures about ten times faster than the JDK's
 * (0.2 ms against 2 ms here): a receipt is signed on every run's path. Immutable and thread-safe.
 */
public final class ServerKey {
    public static final String PRIVATE_FILE = "audit-ed25519.key";
    public static final String PUBLIC_FILE = "audit-ed25519.pub";
    private final PrivateKey privateKey; // null: verification only
    private final org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters signingKey;
    private final PublicKey publicKey;
    private final String keyId;

    private ServerKey(PrivateKey privateKey, PublicKey publicKey) throws IOException {
        this.privateKey = privateKey;
        this.publicKey = publicKey;
        this.keyId = keyId(publicKey);
        this.signingKey = privateKey == null ? null
                : (org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters) org.bouncycastle.crypto.util.PrivateKeyFactory.createKey(privateKey.getEncoded());
    }

    /** Loads the key in {@code dir}, creating it on first use. */
    public static ServerKey loadOrCreate(Path dir) throws IOException {
        Path priv = dir.resolve(PRIVATE_FILE);
        if (!Files.exists(priv)) create(dir);
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(priv);
        if (perms.stream().anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
            throw new IOException("the audit signing key " + priv + " is readable by others (mode "
                    + PosixFilePermissions.toString(perms) + "); it may have been copied. Replace it (delete both "
                    + PRIVATE_FILE + " and " + PUBLIC_FILE + "; earlier receipts then verify only with the old public key)"
                    + " or chmod 600 it if you are sure");
        }
        try {
            PrivateKey pk = KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(pem(Files.readString(priv), "PRIVATE KEY", priv)));
            PublicKey pub = readPublic(dir.resolve(PUBLIC_FILE));
            ServerKey k = new ServerKey(pk, pub);
            byte[] probe = k.sign(new byte[] {1});
            if (!verify(pub, new byte[] {1}, probe)) {
                throw new IOException(PUBLIC_FILE + " in " + dir + " is not the public half of " + PRIVATE_FILE);
            }
            return k;
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IOException("cannot read the audit signing key in " + dir + ": " + e.getMessage(), e);
        }
    }

    /** A verification-only key from a public key file (PEM), e.g. one an operator copied from {@code berth doctor}. */
    public static ServerKey publicOnly(Path pubFile) throws IOException {
        try {
            return new ServerKey(null, readPublic(pubFile));
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IOException("cannot read the public key " + pubFile + ": " + e.getMessage(), e);
        }
    }

    private static PublicKey readPublic(Path file) throws IOException, GeneralSecurityException {
        return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(pem(Files.readString(file), "PUBLIC KEY", file)));
    }

    private static void create(Path dir) throws IOException {
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        KeyPair kp;
        try {
            kp = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IOException("the JDK cannot generate Ed25519 keys: " + e.getMessage(), e);
        }
        write(dir, PUBLIC_FILE, pemText("PUBLIC KEY", kp.getPublic().getEncoded()), "rw-r--r--");
        // the private key last: its presence is what says "a key exists"
        write(dir, PRIVATE_FILE, pemText("PRIVATE KEY", kp.getPrivate().getEncoded()), "rw-------");
    }

    private static void write(Path dir, String name, String text, String mode) throws IOException {
        Path tmp = dir.resolve("." + name + ".tmp");
        Files.deleteIfExists(tmp);
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(mode)));
        Files.writeString(tmp, text);
        try (var ch = java.nio.channels.FileChannel.open(tmp, java.nio.file.StandardOpenOption.WRITE)) {
            ch.force(true);
        }
        try {
            Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
        } catch (FileAlreadyExistsException e) {
            Files.delete(tmp);
        }
    }

    private static String pemText(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    private static byte[] pem(String text, String type, Path file) {
        String begin = "-----BEGIN " + type + "-----";
        String end = "-----END " + type + "-----";
        int b = text.indexOf(begin);
        int e = text.indexOf(end);
        if (b < 0 || e < b) throw new IllegalArgumentException(file + " holds no " + type + " PEM block");
        return Base64.getMimeDecoder().decode(text.substring(b + begin.length(), e).getBytes(StandardCharsets.US_ASCII));
    }

    /** Short name of a public key: the first 16 hex digits of the SHA-256 of its X.509 encoding. */
    public static String keyId(PublicKey key) {
        return Canonical.sha256(key.getEncoded()).substring(0, 16);
    }

    public String keyId() { return keyId; }

    public PublicKey publicKey() { return publicKey; }

    public String publicKeyPem() { return pemText("PUBLIC KEY", publicKey.getEncoded()); }

    public boolean canSign() { return privateKey != null; }

    /** Ed25519 signature of {@code data}. */
    public byte[] sign(byte[] data) {
        if (signingKey == null) throw new IllegalStateException("key " + keyId + " is for verification only");
        var signer = new org.bouncycastle.crypto.signers.Ed25519Signer();
        signer.init(true, signingKey);
        signer.update(data, 0, data.length);
        return signer.generateSignature();
    }

    public boolean verify(byte[] data, byte[] signature) {
        return verify(publicKey, data, signature);
    }

    static boolean verify(PublicKey key, byte[] data, byte[] signature) {
        try {
            Signature s = Signature.getInstance("Ed25519");
            s.initVerify(key);
            s.update(data);
            return s.verify(signature);
        } catch (GeneralSecurityException e) {
            return false;
        }
    }
}
