package dev.berth.engine.namespace;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * A PEP 503 simple index with PyPI's JSON API as static files, of wheels built here by the real {@code pip wheel} from
 * tiny source packages: {@code berth-util} 1.0.0, and {@code berth-greet} 1.0.0 (uploaded {@code old}) and 2.0.0
 * (uploaded {@code fresh}), which require {@code berth-util}. Stateless.
 */
final class PypiIndex {
    private PypiIndex() {}

    record Dist(String name, String version, Instant uploaded, String requires, String code) { }

    static void build(Path src, Path www, Instant old, Instant fresh) throws Exception {
        List<Dist> dists = List.of(
                new Dist("berth-util", "1.0.0", old, null, "VERSION = '1.0.0'\n"),
                new Dist("berth-greet", "1.0.0", old, "berth-util>=1.0", greet("1.0.0")),
                new Dist("berth-greet", "2.0.0", fresh, "berth-util>=1.0", greet("2.0.0")));
        Path files = Files.createDirectories(www.resolve("files"));
        Map<String, StringBuilder> links = new java.util.TreeMap<>();
        Map<String, StringBuilder> releases = new java.util.TreeMap<>();
        for (Dist d : dists) {
            String module = d.name().replace('-', '_');
            Path pkg = Files.createDirectories(src.resolve(d.name() + "-" + d.version()));
            Files.writeString(pkg.resolve(module + ".py"), d.code());
            Files.writeString(pkg.resolve("setup.py"), "from setuptools import setup\nsetup(name='" + d.name() + "', version='" + d.version()
                    + "', py_modules=['" + module + "']" + (d.requires() == null ? "" : ", install_requires=['" + d.requires() + "']") + ")\n");
            HostClients.Exec e = HostClients.exec(pkg, 300, Map.of("PIP_BREAK_SYSTEM_PACKAGES", "1"), "/usr/bin/python3", "-m", "pip", "wheel",
                    "-q", "--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check", "-w", files.toString(), ".");
            if (e.rc() != 0) throw new IllegalStateException("pip wheel of " + d.name() + " " + d.version() + " failed: " + e.out());
            String wheel = module + "-" + d.version() + "-py3-none-any.whl";
            if (!Files.isRegularFile(files.resolve(wheel))) throw new IllegalStateException("pip wheel wrote no " + wheel);
            String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(files.resolve(wheel))));
            links.computeIfAbsent(d.name(), k -> new StringBuilder()).append("<a href=\"../../files/").append(wheel).append("#sha256=")
                    .append(sha).append("\">").append(wheel).append("</a><br/>\n");
            StringBuilder rel = releases.computeIfAbsent(d.name(), k -> new StringBuilder());
            if (rel.length() > 0) rel.append(',');
            rel.append("\"").append(d.version()).append("\":[{\"filename\":\"").append(wheel).append("\",\"upload_time_iso_8601\":\"")
                    .append(d.uploaded()).append("\"}]");
        }
        for (String name : links.keySet()) {
            Files.createDirectories(www.resolve("simple/" + name));
            Files.writeString(www.resolve("simple/" + name + "/index.html"),
                    "<!DOCTYPE html><html><body><h1>Links for " + name + "</h1>\n" + links.get(name) + "</body></html>\n");
            Files.createDirectories(www.resolve("pypi/" + name));
            Files.writeString(www.resolve("pypi/" + name + "/json"), "{\"info\":{\"name\":\"" + name + "\"},\"releases\":{"
                    + releases.get(name) + "},\"urls\":[]}");
        }
    }

    private static String greet(String version) {
        return "import berth_util\n\ndef greet():\n    return 'hello from berth-greet " + version + " with berth-util ' + berth_util.VERSION\n";
    }
}
