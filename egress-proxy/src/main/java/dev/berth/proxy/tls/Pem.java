package dev.berth.proxy.tls;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/** PEM encoding of certificates and PKCS#8 private keys (the JDK reads X.509 PEM itself; keys are base64 DER). */
public final class Pem {
    private Pem() {}

    static String certificate(X509Certificate c) {
        try {
            return block("CERTIFICATE", c.getEncoded());
        } catch (CertificateException e) {
            throw new IllegalStateException("cannot encode certificate " + c.getSubjectX500Principal(), e);
        }
    }

    static String privateKey(PrivateKey k) {
        return block("PRIVATE KEY", k.getEncoded());
    }

    private static String block(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    /** All certificates in a PEM file; at least one, else an IOException naming the file. */
    public static List<X509Certificate> readCertificates(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        try {
            List<X509Certificate> out = new ArrayList<>();
            for (var c : CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(bytes))) {
                out.add((X509Certificate) c);
            }
            if (out.isEmpty()) throw new IOException(file + " contains no PEM certificate");
            return out;
        } catch (CertificateException e) {
            throw new IOException(file + " is not a PEM certificate file: " + e.getMessage(), e);
        }
    }

    /** An unencrypted PKCS#8 RSA key ("BEGIN PRIVATE KEY"). Error messages never include key material. */
    static PrivateKey readRsaPrivateKey(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.US_ASCII);
        int begin = text.indexOf("-----BEGIN PRIVATE KEY-----");
        int end = text.indexOf("-----END PRIVATE KEY-----");
        if (begin < 0 || end < begin) throw new IOException(file + " is not a PKCS#8 PEM private key (BEGIN PRIVATE KEY)");
        String b64 = text.substring(begin + "-----BEGIN PRIVATE KEY-----".length(), end).replaceAll("\\s", "");
        try {
            return KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(b64)));
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IOException(file + " does not hold a valid RSA private key (" + e.getClass().getSimpleName() + ")");
        }
    }
}
