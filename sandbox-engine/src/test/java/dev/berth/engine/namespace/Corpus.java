package dev.berth.engine.namespace;

import dev.berth.engine.Engine;
import dev.berth.engine.api.Tenant;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Stream;

/**
 * The acceptance corpus of issue 26 (test resources under {@code corpus/}): small but real projects, each with its
 * own tests: {@code node-app} (Express, {@code node --test}), {@code py-app} (a package on a dependency from the
 * test's index, {@code unittest}), {@code java-app} (a Maven module with a JUnit test), {@code go-app} (a Go module
 * with a vendored dependency). Copies a project onto the host or into a workspace. Stateless.
 */
final class Corpus {
    private Corpus() {}

    static Path dir(String project) throws URISyntaxException {
        return Path.of(Corpus.class.getResource("/corpus/" + project).toURI());
    }

    private static List<Path> files(Path root) throws Exception {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(Files::isRegularFile).sorted().toList();
        }
    }

    /** Copies {@code project} to {@code dest} on the host. */
    static void copy(String project, Path dest) throws Exception {
        Path root = dir(project);
        for (Path f : files(root)) {
            Path to = dest.resolve(root.relativize(f).toString());
            Files.createDirectories(to.getParent());
            Files.copy(f, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** Writes {@code project} into workspace {@code ws} under {@code dest} (an absolute path inside it). */
    static void upload(Engine engine, String ws, String project, String dest) throws Exception {
        Path root = dir(project);
        for (Path f : files(root)) {
            engine.writeFile(Tenant.LOCAL, ws, dest + "/" + root.relativize(f), Files.readAllBytes(f), false, null);
        }
    }
}
