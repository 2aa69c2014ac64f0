package dev.berth.mcp.http;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.source.ImmutableJWKSet;
import com.nimbusds.jose.proc.BadJOSEException;
import com.nimbusds.jose.proc.DefaultJOSEObjectTypeVerifier;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.proc.DefaultJWTClaimsVerifier;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import java.io.IOException;
import java.nio.file.Path;
import java.text.ParseException;
import java.util.HashSet;
import java.util.Set;

/**
 * JWT access tokens issued by the operator's authorization server. A token is accepted only if it is signed by one
 * of the issuer's keys (the JWKS file), its {@code iss} is the configured issuer, its {@code aud} contains this
 * server's audience (so a token minted for another resource cannot be replayed here), it is within {@code nbf} and
 * {@code exp} (60 s clock skew), and it names a tenant in the configured claim.
 */
final class JwtTokens {
    private final DefaultJWTProcessor<SecurityContext> processor = new DefaultJWTProcessor<>();
    private final String tenantClaim;

    JwtTokens(BearerAuthenticator.Jwt cfg) throws BearerAuthenticator.KeysException {
        JWKSet keys;
        try {
            keys = JWKSet.load(Path.of(cfg.jwksFile()).toFile());
        } catch (IOException | ParseException e) {
            throw new BearerAuthenticator.KeysException("auth.jwt.jwks_file " + cfg.jwksFile() + " is not a JWKS document: " + e.getMessage());
        }
        if (keys.getKeys().isEmpty()) throw new BearerAuthenticator.KeysException("auth.jwt.jwks_file " + cfg.jwksFile() + " holds no keys");
        Set<JWSAlgorithm> algs = new HashSet<>(JWSAlgorithm.Family.RSA);
        algs.addAll(JWSAlgorithm.Family.EC);
        algs.addAll(JWSAlgorithm.Family.ED);
        processor.setJWSKeySelector(new JWSVerificationKeySelector<>(algs, new ImmutableJWKSet<>(keys)));
        // RFC 9068 access tokens are typed at+jwt; plain JWT and untyped tokens are common in practice
        processor.setJWSTypeVerifier(new DefaultJOSEObjectTypeVerifier<>(JOSEObjectType.JWT, new JOSEObjectType("at+jwt"), null));
        this.tenantClaim = cfg.tenantClaim();
        processor.setJWTClaimsSetVerifier(new DefaultJWTClaimsVerifier<>(cfg.audience(),
                new JWTClaimsSet.Builder().issuer(cfg.issuer()).build(), Set.of("exp", tenantClaim)));
    }

    private static String kid(String token) {
        try {
            return com.nimbusds.jose.JWSObject.parse(token).getHeader().getKeyID();
        } catch (ParseException e) {
            return null;
        }
    }

    /** Whether a bearer value has the shape of a JWS compact serialization (three base64url parts). */
    static boolean looksLikeJwt(String token) {
        return token.chars().filter(c -> c == '.').count() == 2;
    }

    /** The tenant named by a valid token. */
    String tenantOf(String token) throws InvalidTokenException {
        JWTClaimsSet claims;
        try {
            claims = processor.process(token, null);
        } catch (ParseException e) {
            throw new InvalidTokenException("the bearer token is not a well-formed JWT: " + e.getMessage());
        } catch (BadJOSEException e) {
            if (e.getMessage() != null && e.getMessage().contains("no matching key")) {
                throw new InvalidTokenException("JWT rejected: its signature is not from a key of the configured issuer"
                        + " (no key in the JWKS matches its kid '" + kid(token) + "' and algorithm)");
            }
            throw new InvalidTokenException("JWT rejected: " + e.getMessage());
        } catch (com.nimbusds.jose.JOSEException e) {
            throw new InvalidTokenException("JWT could not be verified: " + e.getMessage());
        }
        Object t = claims.getClaim(tenantClaim);
        if (!(t instanceof String s)) throw new InvalidTokenException("JWT claim '" + tenantClaim + "' must be a string, got " + t);
        return s;
    }

    static final class InvalidTokenException extends Exception {
        InvalidTokenException(String m) { super(m); }
    }
}
