package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.mcp.http.AuthResult;
import dev.berth.mcp.http.BearerAuthenticator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BearerAuthenticatorTest {
    static final String ISS = "https://idp.test";
    static final String AUD = "http://127.0.0.1:8080";
    JwtFixture issuer;
    BearerAuthenticator auth;

    static String sha256(String s) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    }

    @BeforeEach
    void setUp(@TempDir Path dir) throws Exception {
        issuer = JwtFixture.create();
        Files.writeString(dir.resolve("jwks.json"), issuer.publicJwks());
        Files.writeString(dir.resolve("c.json"), """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}, {"tenant": "bob", "sha256": "%s"}],
                          "jwt": {"issuer": "%s", "jwks_file": "jwks.json"}},
                 "tenants": {"alice": {"quota": {"workspaces": 3}}, "bob": {}, "carol": {}}}
                """.formatted(sha256("alice-token"), sha256("bob-token"), ISS));
        auth = ServeHttp.authenticator(OperatorConfig.load(dir.resolve("c.json")));
    }

    String tenant(String header) {
        return assertInstanceOf(AuthResult.Granted.class, auth.authenticate(header)).tenant().id();
    }

    AuthResult.Denied denied(String header) {
        return assertInstanceOf(AuthResult.Denied.class, auth.authenticate(header));
    }

    @Test
    void staticTokens_mapToTheirTenantWithItsQuota() {
        assertEquals("alice", tenant("Bearer alice-token"));
        assertEquals("bob", tenant("bearer bob-token"));
        var g = (AuthResult.Granted) auth.authenticate("Bearer alice-token");
        assertEquals(3, g.tenant().quota().workspaces());
    }

    @Test
    void missingOrWrongCredentials_areRefusedWithAReason() {
        AuthResult.Denied none = denied(null);
        assertEquals(401, none.status());
        assertEquals(null, none.error(), "RFC 6750: no error code when no credentials were sent");
        assertEquals("invalid_token", denied("Bearer alice-token-x").error());
        assertEquals("invalid_request", denied("Basic YWxpY2U6eA==").error());
        assertTrue(denied("Basic YWxpY2U6eA==").description().contains("'Basic'"));
    }

    @Test
    void validJwt_mapsSubToTenant() throws Exception {
        assertEquals("carol", tenant("Bearer " + issuer.token(ISS, AUD, "carol", 300)));
    }

    @Test
    void jwt_wrongAudienceIssuerExpiryOrKey_isRefused() throws Exception {
        assertTrue(denied("Bearer " + issuer.token(ISS, "https://other.example", "carol", 300)).description().contains("aud"));
        assertTrue(denied("Bearer " + issuer.token("https://evil.test", AUD, "carol", 300)).description().contains("iss"));
        assertTrue(denied("Bearer " + issuer.token(ISS, AUD, "carol", -300)).description().contains("xpired"));
        String forged = JwtFixture.create().token(ISS, AUD, "carol", 300);
        AuthResult.Denied d = denied("Bearer " + forged);
        assertEquals(401, d.status());
        assertEquals("invalid_token", d.error());
        // a token signed by one of our keys but tampered with in transit
        String good = issuer.token(ISS, AUD, "carol", 300);
        String[] parts = good.split("\\.");
        String tampered = parts[0] + "." + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(
                ("{\"iss\":\"" + ISS + "\",\"aud\":\"" + AUD + "\",\"sub\":\"alice\",\"exp\":9999999999}").getBytes()) + "." + parts[2];
        assertTrue(denied("Bearer " + tampered).description().toLowerCase().contains("signature"), denied("Bearer " + tampered).description());
    }

    @Test
    void jwtForUnknownTenant_isForbidden() throws Exception {
        AuthResult.Denied d = denied("Bearer " + issuer.token(ISS, AUD, "mallory", 300));
        assertEquals(403, d.status());
        assertTrue(d.description().contains("'mallory'"), d.description());
    }
}
