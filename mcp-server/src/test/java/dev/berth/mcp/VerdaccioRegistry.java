package dev.berth.mcp;

import dev.berth.engine.Await;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.node.ObjectNode;

/**
 * A real npm registry on 127.0.0.1: Verdaccio from npm (installed by scripts/install-deps.sh into
 * src/test/verdaccio, pinned by its lock file), over TLS with a certificate from the test CA. Packages are laid into
 * its storage before it starts, with the publish times the test chooses (a registry only ever stamps "now", and the
 * release-age rule is about the past), as Verdaccio's local storage keeps them: {@code storage/<name>/package.json}
 * and the tarballs beside it. Anyone may publish (so a publish the proxy let through would land).
 */
final class VerdaccioRegistry implements AutoCloseable {
    static final Path DIR = Path.of(System.getProperty("berth.verdaccio.dir", "src/test/verdaccio")).toAbsolutePath();
    static final Path BIN = DIR.resolve("node_modules/verdaccio/bin/verdaccio");

    /**
     * One version to lay into storage: its publish time, extra package.json fields (scripts, dependencies, bin;
     * %PORT% is the registry's port) and extra files of the package (path -> content; index.js is written otherwise).
     */
    record Version(String name, String version, Instant published, Map<String, Object> extra, Map<String, String> files) {
        Version(String name, String version, Instant published, Map<String, Object> extra) {
            this(name, version, published, extra, Map.of());
        }
    }

    final Path dir;
    final int port;
    private final Process process;

    private VerdaccioRegistry(Path dir, int port, Process process) {
        this.dir = dir;
        this.port = port;
        this.process = process;
    }

    static void requireInstalled() {
        if (!Files.isRegularFile(BIN)) {
            throw new IllegalStateException("Verdaccio is not installed in " + DIR + ": run scripts/install-deps.sh");
        }
    }

    static VerdaccioRegistry start(Path dir, Path cert, Path key, List<Version> versions) throws Exception {
        return start(dir, cert, key, "localhost", versions);
    }

    /**
     * Like {@link #start(Path, Path, Path, List)}; {@code cert} null: plain HTTP. {@code host} is the name clients
     * reach it by (tarball URLs name it).
     */
    static VerdaccioRegistry start(Path dir, Path cert, Path key, String host, List<Version> versions) throws Exception {
        requireInstalled();
        Path storage = Files.createDirectories(dir.resolve("storage"));
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Map<String, List<Version>> byName = new LinkedHashMap<>();
        for (Version v : versions) byName.computeIfAbsent(v.name(), k -> new java.util.ArrayList<>()).add(v);
        String base = (cert == null ? "http://" : "https://") + host + ":" + port;
        for (var e : byName.entrySet()) lay(dir, storage, port, base, e.getKey(), e.getValue());
        Files.writeString(dir.resolve("config.yaml"), """
                storage: %s
                auth:
                  htpasswd:
                    file: %s
                    max_users: -1
                uplinks: {}
                packages:
                  '**':
                    access: $all
                    publish: $all
                    unpublish: $all
                %s
                log: { type: stdout, format: pretty, level: warn }
                """.formatted(storage, dir.resolve("htpasswd"), cert == null ? ""
                        : "https:\n  key: " + key + "\n  cert: " + cert));
        ProcessBuilder pb = new ProcessBuilder("node", BIN.toString(), "--config", dir.resolve("config.yaml").toString(),
                "--listen", (cert == null ? "http" : "https") + "://127.0.0.1:" + port).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("verdaccio.log").toFile());
        pb.environment().put("HOME", dir.toString());
        Process p = pb.start();
        if (!Await.within(Duration.ofSeconds(60), () -> NginxServer.listening(port) || !p.isAlive()) || !p.isAlive()) {
            p.destroyForcibly();
            throw new IOException("Verdaccio did not start: " + Files.readString(dir.resolve("verdaccio.log")));
        }
        return new VerdaccioRegistry(dir, port, p);
    }

    /** Writes one package (all its versions) into Verdaccio's local storage. */
    private static void lay(Path dir, Path storage, int port, String base, String name, List<Version> versions) throws Exception {
        Path pkgDir = Files.createDirectories(storage.resolve(name));
        ObjectNode doc = McpBridge.JSON.createObjectNode();
        doc.put("name", name);
        doc.put("_id", name);
        ObjectNode vs = doc.putObject("versions");
        ObjectNode time = doc.putObject("time");
        ObjectNode attachments = McpBridge.JSON.createObjectNode();
        Instant first = versions.stream().map(Version::published).min(Instant::compareTo).orElseThrow();
        Instant last = versions.stream().map(Version::published).max(Instant::compareTo).orElseThrow();
        time.put("created", first.toString());
        time.put("modified", last.toString());
        String latest = null;
        for (Version v : versions) {
            Map<String, Object> pj = new LinkedHashMap<>();
            pj.put("name", name);
            pj.put("version", v.version());
            pj.put("description", "test package " + name + " " + v.version());
            pj.put("main", "index.js");
            pj.putAll(v.extra());
            Path src = Files.createDirectories(dir.resolve("src/" + name + "-" + v.version() + "/package"));
            // %PORT% in a field (an install hook naming the registry) becomes the registry's port
            pj = McpBridge.JSON.readValue(McpBridge.JSON.writeValueAsString(pj).replace("%PORT%", String.valueOf(port)), LinkedHashMap.class);
            Files.writeString(src.resolve("package.json"), McpBridge.JSON.writeValueAsString(pj));
            Files.writeString(src.resolve("index.js"), "module.exports = " + McpBridge.JSON.writeValueAsString(name + "@" + v.version()) + ";\n");
            for (var f : v.files().entrySet()) Files.writeString(Files.createDirectories(src.resolve(f.getKey()).getParent()).resolve(src.resolve(f.getKey()).getFileName()), f.getValue());
            String file = name + "-" + v.version() + ".tgz";
            Path tgz = pkgDir.resolve(file);
            Process tar = new ProcessBuilder("tar", "czf", tgz.toString(), "-C", src.getParent().toString(), "package")
                    .redirectErrorStream(true).start();
            String out = new String(tar.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (tar.waitFor() != 0) throw new IOException("tar failed: " + out);
            byte[] bytes = Files.readAllBytes(tgz);
            String shasum = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(bytes));
            String integrity = "sha512-" + Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512").digest(bytes));
            ObjectNode manifest = McpBridge.JSON.valueToTree(pj);
            manifest.put("_id", name + "@" + v.version());
            ObjectNode dist = manifest.putObject("dist");
            dist.put("tarball", base + "/" + name + "/-/" + file);
            dist.put("shasum", shasum);
            dist.put("integrity", integrity);
            vs.set(v.version(), manifest);
            time.put(v.version(), v.published().toString());
            attachments.putObject(file).put("shasum", shasum).put("version", v.version());
            latest = v.version();
        }
        doc.putObject("dist-tags").put("latest", latest);
        doc.putObject("users");
        doc.putObject("_uplinks");
        doc.putObject("_distfiles");
        doc.set("_attachments", attachments);
        doc.put("_rev", versions.size() + "-0000000000000000");
        doc.put("readme", "");
        Files.writeString(pkgDir.resolve("package.json"), McpBridge.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(doc));
    }

    /** Whether Verdaccio's storage holds a package of this name (a publish that got through would create it). */
    boolean holds(String name) {
        return Files.exists(dir.resolve("storage").resolve(name));
    }

    @Override
    public void close() {
        process.descendants().forEach(ProcessHandle::destroy);
        process.destroy();
        try {
            process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
