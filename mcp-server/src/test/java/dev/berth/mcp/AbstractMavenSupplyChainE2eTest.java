package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Issue 16, "Then" 1 for Maven with real parts: a Maven repository layout written by the test (pom, jar, their SHA-1
 * checksums, {@code maven-metadata.xml}) and served by a real nginx over TLS on loopback holds
 * {@code org.example:greeting} 1.0.0 (deployed in 2020: the files' modification time, which nginx sends as
 * {@code Last-Modified}) and 1.1.0 (deployed two hours ago). With a maven registry rule of 7 days, the real
 * {@code mvn} (Debian's Maven 3.8.7, its packaged m2.conf copied in since a namespace workspace's
 * /etc has no /etc/maven, inside a workspace, one subclass per isolation level, through the egress
 * proxy with interception, an empty local repository and a settings.xml naming the workspace proxy) resolves the range
 * {@code [1.0,2.0)} to 1.0.0 (the range makes Maven read the metadata, which the proxy filtered), the run result says
 * 1.1.0 was hidden and why, and the fresh jar asked for directly is refused with the reason.
 *
 * <p>Maven needs its own plugins (resources, compiler) for {@code mvn compile}: the same nginx serves the local
 * repository of the build running this test under {@code /plugins/}, as the workspace's mirror of central. Those files
 * are as fresh as the build's downloads, so the rule exempts them ({@code "exempt": ["plugins.*"]}: the path prefix is
 * part of the group name for a repository not at the root); that exemption is the only difference from a plain rule.
 */
abstract class AbstractMavenSupplyChainE2eTest extends AbstractRealClientE2eTest {
    static final Instant OLD = Instant.parse("2020-03-04T05:06:07Z");
    static final Instant FRESH = Instant.now().minus(2, ChronoUnit.HOURS).truncatedTo(ChronoUnit.SECONDS);
    /** The JDK Maven runs on inside the workspace. */
    abstract String javaHome();

    /** JVM options for Maven besides the trust store. */
    abstract String javaOpts();

    NginxServer repo;

    @BeforeAll
    void start() throws Exception {
        prepare("mvn");
        Path www = Files.createDirectories(dir.resolve("www"));
        Path ga = Files.createDirectories(www.resolve("maven2/org/example/greeting"));
        for (String v : List.of("1.0.0", "1.1.0")) {
            Path vd = Files.createDirectories(ga.resolve(v));
            FileTime when = FileTime.from(v.equals("1.0.0") ? OLD : FRESH);
            write(vd.resolve("greeting-" + v + ".pom"), ("""
                    <?xml version="1.0" encoding="UTF-8"?>
                    <project xmlns="http://maven.apache.org/POM/4.0.0">
                      <modelVersion>4.0.0</modelVersion>
                      <groupId>org.example</groupId><artifactId>greeting</artifactId><version>%s</version>
                    </project>
                    """.formatted(v)).getBytes(StandardCharsets.UTF_8), when);
            write(vd.resolve("greeting-" + v + ".jar"), jar("greeting.txt", "greeting " + v + "\n"), when);
        }
        write(ga.resolve("maven-metadata.xml"), """
                <?xml version="1.0" encoding="UTF-8"?>
                <metadata>
                  <groupId>org.example</groupId>
                  <artifactId>greeting</artifactId>
                  <versioning>
                    <latest>1.1.0</latest>
                    <release>1.1.0</release>
                    <versions><version>1.0.0</version><version>1.1.0</version></versions>
                    <lastUpdated>20261130100000</lastUpdated>
                  </versioning>
                </metadata>
                """.getBytes(StandardCharsets.UTF_8), FileTime.from(FRESH));
        Path plugins = Path.of(System.getProperty("maven.repo.local", System.getProperty("user.home") + "/.m2/repository"));
        repo = serve(NginxServer.start(dir.resolve("nginx"), tls.cert(), tls.key(), """
                    root %s;
                    location /plugins/ { alias %s/; }
                """.formatted(www, plugins), false));
        startBerth(repo.port, """
                "registryRules": {"maven": {"hosts": ["localhost"], "minReleaseAgeDays": 7, "exempt": ["plugins.*"]}}""");
    }

    /** Writes {@code file} and its {@code .sha1}, both with modification time {@code when}. */
    private static void write(Path file, byte[] content, FileTime when) throws Exception {
        Files.write(file, content);
        Path sha1 = file.resolveSibling(file.getFileName() + ".sha1");
        Files.writeString(sha1, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(content)));
        Files.setLastModifiedTime(file, when);
        Files.setLastModifiedTime(sha1, when);
    }

    private static byte[] jar(String name, String content) throws IOException {
        var bytes = new java.io.ByteArrayOutputStream();
        try (OutputStream out = bytes; ZipOutputStream zip = new ZipOutputStream(out)) {
            zip.putNextEntry(new ZipEntry("META-INF/MANIFEST.MF"));
            zip.write("Manifest-Version: 1.0\n".getBytes(StandardCharsets.UTF_8));
            zip.closeEntry();
            zip.putNextEntry(new ZipEntry(name));
            zip.write(content.getBytes(StandardCharsets.UTF_8));
            zip.closeEntry();
        }
        return bytes.toByteArray();
    }

    String accessLog() {
        try {
            return repo.accessLog();
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** The egress records about the repository (their reasons say why a request failed). */
    String audit() {
        try {
            return String.join("\n", Files.readAllLines(dir.resolve("home/audit/tenant.local.log")).stream()
                    .filter(l -> l.contains("\"type\":\"egress") && !l.contains("\"close_reason\":\"complete\"")).toList());
        } catch (IOException e) {
            return e.toString();
        }
    }

    @Test
    void mvn_resolvesTheRangeToTheOldEnoughVersion_freshJarRefused() throws Exception {
        String ws = ok("open_workspace", level().open(Map.of())).path("workspace").asString();
        String base = "https://localhost:" + repo.port;
        String proxy = ok("run", Map.of("workspace", ws, "command", "printf %s \"$HTTPS_PROXY\"")).path("stdout").asString();
        java.net.URI p = java.net.URI.create(proxy);
        ok("write_file", Map.of("workspace", ws, "path", "settings.xml", "content", """
                <settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
                  <localRepository>/workspace/m2</localRepository>
                  <proxies><proxy><id>berth</id><active>true</active><protocol>https</protocol>
                    <host>%s</host><port>%d</port></proxy></proxies>
                  <mirrors><mirror><id>build-plugins</id><mirrorOf>central</mirrorOf><url>%s/plugins/</url></mirror></mirrors>
                </settings>
                """.formatted(p.getHost(), p.getPort(), base)));
        ok("write_file", Map.of("workspace", ws, "path", "app/pom.xml", "content", """
                <project xmlns="http://maven.apache.org/POM/4.0.0">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>org.example</groupId><artifactId>app</artifactId><version>1</version>
                  <properties><maven.compiler.release>17</maven.compiler.release>
                    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
                  <repositories><repository><id>test</id><url>%s/maven2/</url></repository></repositories>
                  <dependencies><dependency><groupId>org.example</groupId><artifactId>greeting</artifactId>
                    <version>[1.0,2.0)</version></dependency></dependencies>
                  <build><plugins>
                    <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
                    <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.14.0</version></plugin>
                  </plugins></build>
                </project>
                """.formatted(base)));
        // Debian's Maven keeps bin/m2.conf and conf/ as links into /etc/maven, which the workspace's curated /etc does
        // not have: a MAVEN_HOME in the workspace with the same binaries (links to /usr/share/maven/{boot,lib}, the
        // packaged mvn script) and the packaged m2.conf and logging config, copied from the host
        ok("write_file", Map.of("workspace", ws, "path", "maven/bin/m2.conf", "content", Files.readString(Path.of("/etc/maven/m2.conf"))));
        ok("write_file", Map.of("workspace", ws, "path", "maven/conf/logging/simplelogger.properties", "content",
                Files.readString(Path.of("/etc/maven/logging/simplelogger.properties"))));
        String env = "env -u NO_PROXY -u no_proxy JAVA_HOME=" + javaHome() + " HOME=/workspace"
                + " MAVEN_OPTS='-Djavax.net.ssl.trustStore=/workspace/trust.p12 -Djavax.net.ssl.trustStorePassword=changeit"
                + " -Djavax.net.ssl.trustStoreType=PKCS12 " + javaOpts() + "' ";
        JsonNode r = ok("run", Map.of("workspace", ws, "timeout_s", 600, "command",
                javaHome() + "/bin/keytool -importcert -noprompt -alias berth -file /var/lib/berth/egress-ca.pem"
                        + " -keystore /workspace/trust.p12 -storetype PKCS12 -storepass changeit >/dev/null 2>&1;"
                        + " cp /usr/share/maven/bin/mvn /workspace/maven/bin/ && ln -s /usr/share/maven/boot /usr/share/maven/lib /workspace/maven/ &&"
                        + " cd app && " + env + "/workspace/maven/bin/mvn -B -ntp -s /workspace/settings.xml compile 2>&1 | tail -40;"
                        + " echo; echo versions: $(ls /workspace/m2/org/example/greeting/ | grep '^[0-9]')"));
        String out = r.path("stdout").asString();
        assertTrue(out.contains("BUILD SUCCESS"), () -> r + "\nnginx access log:\n" + accessLog() + "\naudit:\n" + audit());
        assertTrue(out.trim().endsWith("versions: 1.0.0"), "only 1.0.0 may be in the local repository: " + r);
        String filtered = r.path("egress_filtered").toString();
        assertTrue(filtered.contains("hid 1 version(s) of org.example:greeting from the maven metadata: org.example:greeting 1.1.0 was published "
                + FRESH + ", less than 7 days ago (registryRules.maven.minReleaseAgeDays"), r.toString());
        assertFalse(repo.accessLog().contains("greeting-1.1.0.jar"), "mvn never fetched the fresh jar");

        JsonNode direct = ok("run", Map.of("workspace", ws, "command", "env -u NO_PROXY -u no_proxy curl -sS -o /dev/null -w '%{http_code}' "
                + base + "/maven2/org/example/greeting/1.1.0/greeting-1.1.0.jar"));
        assertEquals("403", direct.path("stdout").asString(), direct.toString());
        assertTrue(direct.path("egress_denied").get(0).path("reason").asString().contains("1.1.0 was published " + FRESH), direct.toString());
    }
}
