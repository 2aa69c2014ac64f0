package dev.berth.proxy;

import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.tls.InterceptionCa;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Secret bindings in config (values from env/file, validation) and the persisted interception CA. */
class SecretConfigTest {
    private static final Map<String, String> ENV = Map.of("BERTH_SECRET_GITHUB", "ghp_fromEnvValue", "BERTH_SECRET_NPM", "npm_value");

    private static ProxyConfig parse(String json) throws ConfigException {
        return ConfigLoader.parse(json, ENV::get);
    }

    @Test
    void fromEnv_valueHostsAndEnvLoaded() throws Exception {
        ProxyConfig c = parse("""
                {"presets": ["github"], "secrets": {"github": {"env": "GITHUB_TOKEN", "hosts": ["api.github.com", "github.com"],
                 "fromEnv": "BERTH_SECRET_GITHUB"}}}""");
        SecretBinding b = c.secrets().get("github");
        assertEquals("GITHUB_TOKEN", b.env());
        assertEquals(List.of("api.github.com", "github.com"), b.hosts());
        assertEquals("ghp_fromEnvValue", b.value());
        assertFalse(b.unsafeAllowPlainHttp());
        assertTrue(b.matchesHost("api.github.com") && !b.matchesHost("evil.example"));
        assertFalse(b.toString().contains("ghp_fromEnvValue"), b.toString());
    }

    @Test
    void fromFile_trailingNewlineTrimmed(@TempDir Path tmp) throws Exception {
        Path f = tmp.resolve("gh");
        Files.writeString(f, "ghp_fileValue\n");
        ProxyConfig c = parse("{\"allow\": [{\"host\": \"*.github.com\"}], \"secrets\": {\"gh\": {\"env\": \"GH_TOKEN\", \"hosts\": [\"*.github.com\"],"
                + " \"fromFile\": \"" + f + "\", \"unsafeAllowPlainHttp\": true}}}");
        assertEquals("ghp_fileValue", c.secrets().get("gh").value());
        assertTrue(c.secrets().get("gh").unsafeAllowPlainHttp());
        assertTrue(c.secrets().get("gh").matchesHost("api.github.com"));
    }

    @Test
    void fromFile_empty_errorNamesFile(@TempDir Path tmp) throws Exception {
        Path f = tmp.resolve("gh");
        Files.writeString(f, "\n");
        ConfigException e = assertThrows(ConfigException.class, () -> parse("{\"presets\": [\"github\"], \"secrets\": {\"github\": "
                + "{\"env\": \"GITHUB_TOKEN\", \"hosts\": [\"api.github.com\"], \"fromFile\": \"" + f + "\"}}}"));
        assertEquals("secret 'github': fromFile " + f + " is empty", e.getMessage());
    }

    @Test
    void duplicateEnv_refused() {
        ConfigException e = assertThrows(ConfigException.class, () -> parse("""
                {"presets": ["github", "npm"], "secrets": {
                  "github": {"env": "TOKEN", "hosts": ["api.github.com"], "fromEnv": "BERTH_SECRET_GITHUB"},
                  "npm": {"env": "TOKEN", "hosts": ["registry.npmjs.org"], "fromEnv": "BERTH_SECRET_NPM"}}}"""));
        assertEquals("secrets 'github' and 'npm' both use env TOKEN", e.getMessage());
    }

    @Test
    void hostNotInCeiling_refusedWithoutValue() {
        for (String[] c : new String[][] {{"evil.example", "{\"presets\": [\"github\"]"},
                {"github.com", "{\"allow\": [{\"host\": \"*.github.com\"}]"},        // a wildcard never covers the apex
                {"api.github.com", "{\"allow\": [{\"host\": \"api.github.com\", \"ports\": [80]}]"}}) {  // not on 443
            ConfigException e = assertThrows(ConfigException.class, () -> parse(c[1] + ", \"secrets\": {\"github\": {\"env\": \"GITHUB_TOKEN\","
                    + " \"hosts\": [\"" + c[0] + "\"], \"fromEnv\": \"BERTH_SECRET_GITHUB\"}}}"));
            assertTrue(e.getMessage().startsWith("secret 'github' is bound to host " + c[0] + " which the egress allow-list does not allow"),
                    e.getMessage());
            assertFalse(e.getMessage().contains("ghp_fromEnvValue"));
        }
    }

    @Test
    void secretBindingOf_invalidFields_namedWithoutValue() {
        for (String[] c : new String[][] {
                {"git-hub", "GH", "a.example", "v", "secret name 'git-hub' is invalid"},
                {"gh", "1GH", "a.example", "v", "secret 'gh': env '1GH' is invalid"},
                {"gh", "GH", "10.0.0.1", "v", "secret 'gh': host '10.0.0.1' is an IP literal"},
                {"gh", "GH", "*.com", "v", "is too broad"},
                {"gh", "GH", "a.example", "line\nbreak-secret", "value contains a control or non-ASCII character at index 4"}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SecretBinding.of(c[0], c[1], List.of(c[2]), c[3]));
            assertTrue(e.getMessage().contains(c[4]), e.getMessage());
            assertFalse(e.getMessage().contains("break-secret"));
        }
    }

    @Test
    void caDirectory_sameCertificateAfterRestart_keyMode0600(@TempDir Path tmp) throws Exception {
        Path dir = tmp.resolve("ca");
        ProxyConfig cfg = ProxyConfig.builder().build();
        String first;
        try (EgressProxy p = EgressProxy.builder(cfg).caDirectory(dir).threads(1).start()) {
            first = p.caCertificatePem();
        }
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(InterceptionCa.KEY_FILE))));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        try (EgressProxy p = EgressProxy.builder(cfg).caDirectory(dir).threads(1).start()) {
            assertEquals(first, p.caCertificatePem());
        }
        try (EgressProxy p = EgressProxy.builder(cfg).threads(1).start()) {
            assertFalse(first.equals(p.caCertificatePem()), "without caDirectory a fresh CA per start");
        }
        Files.setPosixFilePermissions(dir.resolve(InterceptionCa.KEY_FILE), PosixFilePermissions.fromString("rw-r--r--"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> EgressProxy.builder(cfg).caDirectory(dir).threads(1).start());
        assertTrue(e.getMessage().contains("it must be 0600"), e.getMessage());
        Files.setPosixFilePermissions(dir.resolve(InterceptionCa.KEY_FILE), PosixFilePermissions.fromString("rw-------"));
        Files.delete(dir.resolve(InterceptionCa.CERT_FILE));
        e = assertThrows(IllegalStateException.class, () -> EgressProxy.builder(cfg).caDirectory(dir).threads(1).start());
        assertTrue(e.getMessage().contains("but not " + dir.resolve(InterceptionCa.CERT_FILE)), e.getMessage());
    }

    @Test
    void ca_isConstrainedToSigningLeaves() throws Exception {
        X509Certificate ca = InterceptionCa.generate("t1").certificate();
        assertEquals(0, ca.getBasicConstraints());
        assertTrue(ca.getKeyUsage()[5], "keyCertSign");
        assertFalse(ca.getKeyUsage()[0], "digitalSignature");
        assertTrue(ca.getSubjectX500Principal().getName().contains("CN=Berth egress interception CA t1"));
        assertTrue(ca.getCriticalExtensionOIDs().contains("2.5.29.19"), "basicConstraints critical");
    }
}
