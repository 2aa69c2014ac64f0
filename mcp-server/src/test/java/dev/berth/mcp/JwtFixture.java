package dev.berth.mcp;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.time.Instant;
import java.util.Date;

/** A locally generated issuer key pair: tests publish its public half as a JWKS file and sign tokens with it. */
record JwtFixture(RSAKey key) {
    static JwtFixture create() throws JOSEException {
        return new JwtFixture(new RSAKeyGenerator(2048).keyID("k-" + System.nanoTime()).generate());
    }

    String publicJwks() {
        return new JWKSet(key.toPublicJWK()).toString();
    }

    /** A signed access token; {@code expiresIn} may be negative for an expired one. */
    String token(String issuer, String audience, String subject, long expiresInSeconds) throws JOSEException {
        Instant now = Instant.now();
        JWTClaimsSet claims = new JWTClaimsSet.Builder().issuer(issuer).audience(audience).subject(subject)
                .issueTime(Date.from(now.minusSeconds(600))).notBeforeTime(Date.from(now.minusSeconds(600)))
                .expirationTime(Date.from(now.plusSeconds(expiresInSeconds))).build();
        SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(JWSAlgorithm.RS256).keyID(key.getKeyID()).build(), claims);
        jwt.sign(new RSASSASigner(key));
        return jwt.serialize();
    }
}
