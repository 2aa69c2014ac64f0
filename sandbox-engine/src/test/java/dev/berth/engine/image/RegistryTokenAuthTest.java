package dev.berth.engine.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pull with token authentication against Debian's docker-registry configured for bearer tokens (auth.token), the way
 * Docker Hub, GHCR and GitLab work: the registry answers 401 with a Bearer challenge, Berth asks the named token
 * service (a JDK HttpServer on loopback that checks basic credentials and signs RS256 JWTs with a certificate the
 * registry trusts, made by openssl), and retries with the token. Wrong or missing credentials are refused with the
 * reason.
 */
class RegistryTokenAuthTest {
    static final String SERVICE = "berth-test-registry";
    static final String ISSUER = "berth-test-issuer";
    @TempDir Path tmp;
    private final List<String> tokenRequests = new CopyOnWriteArrayList<>();

    @Test
    void pull_followsTheBearerChallenge_withCredentials_andIsRefusedWithout() throws Exception {
        assumeTrue(OciFixture.missingTools() == null, OciFixture::missingTools);
        OciFixture.run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", tmp.resolve("key.pem").toString(),
                "-out", tmp.resolve("cert.pem").toString(), "-subj", "/CN=" + ISSUER, "-days", "1");
        PrivateKey key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(pem(tmp.resolve("key.pem"))));
        byte[] certDer = CertificateFactory.getInstance("X.509").generateCertificate(Files.newInputStream(tmp.resolve("cert.pem"))).getEncoded();
        Map<String, String> users = Map.of("pusher", "push-secret", "puller", "pull-secret");

        HttpServer tokens = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        tokens.createContext("/token", ex -> {
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            String user = null;
            if (auth != null && auth.startsWith("Basic ")) {
                String[] up = new String(Base64.getDecoder().decode(auth.substring(6)), StandardCharsets.UTF_8).split(":", 2);
                if (up.length == 2 && up[1].equals(users.get(up[0]))) user = up[0];
            }
            String query = ex.getRequestURI().getRawQuery() == null ? "" : ex.getRequestURI().getRawQuery();
            tokenRequests.add((user == null ? "anonymous" : user) + " " + URLDecoder.decode(query, StandardCharsets.UTF_8));
            byte[] body;
            int status;
            if (user == null) {
                status = 401;
                body = "{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}".getBytes(StandardCharsets.UTF_8);
            } else {
                String scope = "";
                for (String kv : query.split("&")) if (kv.startsWith("scope=")) scope = URLDecoder.decode(kv.substring(6), StandardCharsets.UTF_8);
                String[] s = scope.split(":");
                String actions = user.equals("pusher") ? "\"pull\",\"push\"" : "\"pull\"";
                body = ("{\"token\":\"" + jwt(key, certDer, user, s.length == 3 ? s[1] : "", actions) + "\"}").getBytes(StandardCharsets.UTF_8);
                status = 200;
            }
            ex.getResponseHeaders().add("Content-Type", "application/json");
            ex.sendResponseHeaders(status, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        tokens.start();
        try (OciFixture oci = new OciFixture(tmp.resolve("oci"))) {
            String realm = "http://127.0.0.1:" + tokens.getAddress().getPort() + "/token";
            String registry = oci.startRegistry("auth:\n  token:\n    realm: " + realm + "\n    service: " + SERVICE + "\n    issuer: "
                    + ISSUER + "\n    rootcertbundle: " + tmp.resolve("cert.pem") + "\n");
            String ref = oci.push(oci.busyboxLayout(), registry, "berth/tiny", "pusher:push-secret");
            ImageStore store = new ImageStore(tmp.resolve("home"));
            List<String> progress = new ArrayList<>();

            ImageRecord r = store.pull(ref, "tiny", ImportLimits.DEFAULT, new RegistryClient.Credentials("puller", "pull-secret"), true, progress::add);
            assertTrue(r.digest().startsWith("sha256:"));
            assertTrue(tokenRequests.stream().anyMatch(t -> t.equals("puller service=" + SERVICE + "&scope=repository:berth/tiny:pull")),
                    tokenRequests.toString());

            ImageException anonymous = assertThrows(ImageException.class,
                    () -> store.pull(ref, "anon", ImportLimits.DEFAULT, RegistryClient.Credentials.NONE, true, progress::add));
            assertTrue(anonymous.getMessage().contains("the token service " + realm + " answered HTTP 401"), anonymous.getMessage());
            ImageException wrong = assertThrows(ImageException.class,
                    () -> store.pull(ref, "wrong", ImportLimits.DEFAULT, new RegistryClient.Credentials("puller", "nope"), true, progress::add));
            assertTrue(wrong.getMessage().contains("answered HTTP 401"), wrong.getMessage());
            assertEquals(List.of("tiny"), store.list().stream().map(ImageInfo::name).toList());
        } finally {
            tokens.stop(0);
        }
    }

    private static byte[] pem(Path f) throws Exception {
        String s = Files.readString(f).replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        return Base64.getDecoder().decode(s);
    }

    private static String jwt(PrivateKey key, byte[] certDer, String user, String repo, String actions) {
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        long now = System.currentTimeMillis() / 1000;
        String header = "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"x5c\":[\"" + Base64.getEncoder().encodeToString(certDer) + "\"]}";
        String claims = "{\"iss\":\"" + ISSUER + "\",\"sub\":\"" + user + "\",\"aud\":\"" + SERVICE + "\",\"exp\":" + (now + 300)
                + ",\"nbf\":" + (now - 10) + ",\"iat\":" + now + ",\"jti\":\"" + java.util.UUID.randomUUID()
                + "\",\"access\":[{\"type\":\"repository\",\"name\":\"" + repo + "\",\"actions\":[" + actions + "]}]}";
        String signing = b64.encodeToString(header.getBytes(StandardCharsets.UTF_8)) + "." + b64.encodeToString(claims.getBytes(StandardCharsets.UTF_8));
        try {
            Signature sig = Signature.getInstance("SHA256withRSA");
            sig.initSign(key);
            sig.update(signing.getBytes(StandardCharsets.US_ASCII));
            return signing + "." + b64.encodeToString(sig.sign());
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }
}
