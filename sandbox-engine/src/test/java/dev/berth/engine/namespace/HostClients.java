package dev.berth.engine.namespace;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipFile;

/**
 * What this machine's own package clients are configured for, read from their configuration (never written in a
 * test): npm's registry and CA file ({@code npm config get}), and the Maven repository that resolves {@code central}
 * (a mirror in {@code ~/.m2/settings.xml} or the Maven installation's {@code conf/settings.xml}, else the super POM's
 * {@code central} in the installation's model builder). Also runs commands on the bare host, for the baselines the
 * workspace's times are set against. Stateless.
 */
final class HostClients {
    private HostClients() {}

    record Exec(int rc, String out, long ms) { }

    /** Runs {@code cmd} in {@code cwd} with {@code env} added; rc -1 when it could not start or ran past {@code timeoutS}. */
    static Exec exec(Path cwd, int timeoutS, Map<String, String> env, String... cmd) throws InterruptedException {
        long t0 = System.nanoTime();
        Process p;
        try {
            ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(List.of(cmd))).directory(cwd.toFile()).redirectErrorStream(true);
            pb.environment().putAll(env);
            p = pb.start();
            p.getOutputStream().close();
        } catch (IOException e) {
            return new Exec(-1, e.getMessage(), 0);
        }
        byte[][] buf = new byte[1][];
        Thread reader = Thread.ofVirtual().start(() -> {
            try {
                buf[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                buf[0] = e.toString().getBytes(StandardCharsets.UTF_8);
            }
        });
        if (!p.waitFor(timeoutS, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            reader.join();
            return new Exec(-1, "timed out after " + timeoutS + " s", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        }
        reader.join();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        String out = new String(buf[0], StandardCharsets.UTF_8);
        return new Exec(p.exitValue(), out.length() > 6000 ? out.substring(out.length() - 6000) : out, ms);
    }

    /** {@code npm config get KEY} on the host, or null without npm or a value. */
    static String npmConfig(String key) throws InterruptedException {
        Exec e = exec(Path.of("/"), 60, Map.of(), "npm", "config", "get", key);
        String v = e.out().strip();
        return e.rc() == 0 && !v.isEmpty() && !v.equals("null") && !v.equals("undefined") ? v : null;
    }

    /** The Maven installation {@code mvn} on PATH belongs to, or null. */
    static Path mavenHome() throws InterruptedException {
        Exec e = exec(Path.of("/"), 30, Map.of(), "sh", "-c", "readlink -f \"$(command -v mvn)\"");
        String bin = e.out().strip();
        if (e.rc() != 0 || !bin.startsWith("/")) return null;
        return Path.of(bin).getParent().getParent();
    }

    private static final Pattern MIRROR = Pattern.compile("<mirror>(.*?)</mirror>", Pattern.DOTALL);
    private static final Pattern CENTRAL = Pattern.compile("<repository>\\s*<id>central</id>.*?<url>\\s*([^<\\s]+)\\s*</url>", Pattern.DOTALL);

    /** The URL Maven fetches {@code central} from on this machine (its first mirror, else central itself), or null. */
    static String mavenRepository(Path mavenHome) throws IOException {
        for (Path settings : List.of(Path.of(System.getProperty("user.home"), ".m2", "settings.xml"), mavenHome.resolve("conf/settings.xml"))) {
            if (!Files.isRegularFile(settings)) continue;
            Matcher m = MIRROR.matcher(stripComments(Files.readString(settings)));
            while (m.find()) {
                String mirror = m.group(1);
                String of = element(mirror, "mirrorOf");
                String url = element(mirror, "url");
                // the first mirror that serves central (Maven's own http blocker mirrors external:http:* only)
                if (url == null || "true".equals(element(mirror, "blocked")) || of == null) continue;
                if (java.util.Arrays.stream(of.split(",")).map(String::strip).anyMatch(o -> o.equals("*") || o.equals("central")
                        || o.equals("external:*"))) {
                    return slash(url);
                }
            }
        }
        try (var libs = Files.list(mavenHome.resolve("lib"))) {
            for (Path jar : libs.filter(p -> p.getFileName().toString().startsWith("maven-model-builder")).toList()) {
                try (ZipFile z = new ZipFile(jar.toFile())) {
                    var entry = z.getEntry("org/apache/maven/model/pom-4.0.0.xml");
                    if (entry == null) continue;
                    Matcher m = CENTRAL.matcher(stripComments(new String(z.getInputStream(entry).readAllBytes(), StandardCharsets.UTF_8)));
                    if (m.find()) return slash(m.group(1));
                }
            }
        }
        return null;
    }

    private static String element(String xml, String name) {
        Matcher m = Pattern.compile("<" + name + ">\\s*([^<]*?)\\s*</" + name + ">").matcher(xml);
        return m.find() ? m.group(1) : null;
    }

    private static String stripComments(String xml) {
        return xml.replaceAll("(?s)<!--.*?-->", "");
    }

    private static String slash(String url) {
        return url.endsWith("/") ? url : url + "/";
    }

    /** The host part of {@code url}. */
    static String host(String url) {
        return URI.create(url).getHost();
    }
}
