package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;

import dev.berth.engine.image.ImageRecord;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.OciFixture;
import dev.berth.engine.image.RegistryClient;
import dev.berth.engine.microvm.ImageBuilder;
import dev.berth.engine.microvm.MicrovmDriver;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Bring-your-own-image costs, side by side in one run: import of the same image from an OCI layout, a docker
 * archive and a registry pull (each into a home of its own), next to the bare tool ({@code umoci unpack} of the same
 * layout); the sizes of the OCI layers, the unpacked tree and the ext4 base; and open -> first exec on the imported
 * image next to the level's built-in image and an image built from a recipe on it ({@link RecipeBuild}, whose build
 * time and sizes are printed too), per level (medians of {@code n} opens after one warm-up open each, which
 * for a microVM builds the warm base). The image is the busybox test image plus a payload directory copied from the
 * host (default {@code /usr/lib/python3.11}), so that the sizes mean something. Needs root, umoci, skopeo and
 * docker-registry.
 *
 * <pre>
 * mvn -q -pl sandbox-engine -am test-compile
 * CP=$(mvn -q -pl sandbox-engine dependency:build-classpath -Dmdep.outputFile=/dev/stdout):sandbox-engine/target/classes:sandbox-engine/target/test-classes
 * $JAVA_HOME/bin/java -cp "$CP" dev.berth.engine.ImageBenchmark 3 [namespace,microvm] [PAYLOAD_DIR]
 * </pre>
 */
public final class ImageBenchmark {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        List<String> levels = List.of((args.length > 1 ? args[1] : "namespace,microvm").split(","));
        Path payload = Path.of(args.length > 2 ? args[2] : "/usr/lib/python3.11");
        Path dir = Files.createTempDirectory("berth-image-bench-");
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        try (OciFixture oci = new OciFixture(dir.resolve("oci"))) {
            Path layout = oci.busyboxLayout(payload);
            Path archive = oci.dockerArchive(layout);
            String ref = oci.push(layout, oci.startRegistry(), "bench/image");

            long t0 = System.nanoTime();
            OciFixture.run("umoci", "unpack", "--image", layout + ":" + OciFixture.TAG, dir.resolve("bare-bundle").toString());
            long bareMs = (System.nanoTime() - t0) / 1_000_000;
            List<String> sink = new ArrayList<>();
            ImageRecord fromLayout = timed("import OCI layout", () -> new ImageStore(dir.resolve("h1")).importFrom(layout + ":" + OciFixture.TAG, "b", ImportLimits.DEFAULT, sink::add));
            ImageRecord fromArchive = timed("import docker archive", () -> new ImageStore(dir.resolve("h2")).importFrom(archive.toString(), "b", ImportLimits.DEFAULT, sink::add));
            Path home = dir.resolve("home");
            Files.createDirectories(home);
            ImageRecord pulled = timed("pull from loopback registry", () -> new ImageStore(home).pull(ref, "bench", ImportLimits.DEFAULT, RegistryClient.Credentials.NONE, true, sink::add));
            System.out.printf("%n%-32s %10s%n", "import path", "ms");
            System.out.printf("%-32s %10d%n", "umoci unpack (bare tool, tree only)", bareMs);
            for (ImageRecord r : List.of(fromLayout, fromArchive, pulled)) {
                System.out.printf("%-32s %10d%n", r.origin().substring(0, r.origin().indexOf(':')) + " (tree + ext4 base)", r.importMillis());
            }
            System.out.printf("%nsizes: OCI layers %.1f MiB (gzip), unpacked tree %.1f MiB, ext4 base %.1f MiB allocated, archive %.1f MiB%n",
                    pulled.layerBytes() / 1048576.0, pulled.treeBytes() / 1048576.0, pulled.baseDiskBytes() / 1048576.0,
                    Files.size(archive) / 1048576.0);

            // a recipe build on the pulled image (namespace level): one step that writes 1 MiB of new files and
            // changes /etc; then the tree becomes an image like any import
            long buildMs = -1;
            ImageRecord built = null;
            NamespaceDriver ns = new NamespaceDriver(home);
            if (ns.probe().available()) {
                try (Engine e = Engine.start(EngineConfig.defaults(home, List.of(ns)))) {
                    var recipe = dev.berth.engine.image.Recipe.parse("""
                            {"berth_recipe": 1, "base": "bench", "steps": [
                              "busybox mkdir -p /opt/tool && busybox dd if=/dev/zero of=/opt/tool/data bs=64k count=16 2>/dev/null && echo built > /etc/built"]}
                            """, "bench");
                    long b0 = System.nanoTime();
                    built = new RecipeBuild(e, Tenant.LOCAL, new Resources(1, 256, 256, 256), 600)
                            .build(recipe, "bench-recipe", "recipe:bench", ImportLimits.DEFAULT, sink::add);
                    buildMs = (System.nanoTime() - b0) / 1_000_000;
                }
                System.out.printf("%nrecipe build (copy of the base, 1 step in a workspace, import of the tree): %d ms, of which import %d ms;"
                        + " image: tree %.1f MiB, ext4 base %.1f MiB, one layer %.1f MiB (uncompressed tar)%n", buildMs, built.importMillis(),
                        built.treeBytes() / 1048576.0, built.baseDiskBytes() / 1048576.0, built.layerBytes() / 1048576.0);
            }

            Path cache = Path.of(System.getProperty("berth.images.cache", "sandbox-engine/target/berth-images")).toAbsolutePath();
            System.out.printf("%n%-12s %22s %22s %22s%n", "level", "built-in open->exec ms", "imported open->exec ms", "recipe open->exec ms");
            for (String level : levels) {
                IsolationDriver d = level.equals("microvm")
                        ? new MicrovmDriver(new ImageBuilder(cache, ImageBuilder.defaultScriptsDir()), MicrovmDriver.ImageKind.TEST)
                        : new NamespaceDriver(home);
                if (!d.probe().available()) {
                    System.out.printf("%-12s not available: %s%n", level, d.probe().reason());
                    continue;
                }
                try (Engine e = Engine.start(EngineConfig.defaults(home, List.of(d)))) {
                    long builtIn = openMedian(e, null, n);
                    long imported = openMedian(e, "bench", n);
                    long recipeImage = built == null ? -1 : openMedian(e, "bench-recipe", n);
                    System.out.printf("%-12s %22d %22d %22d%n", level, builtIn, imported, recipeImage);
                }
            }
        } finally {
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }

    interface Step<T> { T run() throws Exception; }

    static <T> T timed(String what, Step<T> s) throws Exception {
        T t = s.run();
        System.out.println(what + " done");
        return t;
    }

    static long openMedian(Engine e, String image, int n) throws Exception {
        List<Long> ms = new ArrayList<>();
        for (int i = 0; i <= n; i++) {
            long t0 = System.nanoTime();
            String ws = e.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null, new Resources(1, 256, 256, 256), null, null, image))
                    .workspace().id();
            RunResult r = e.run(Tenant.LOCAL, new RunRequest(ws, "true", null, Map.of(), 60, null, null), OutputListener.NONE);
            long t = (System.nanoTime() - t0) / 1_000_000;
            if (r.exitCode() != 0) throw new IllegalStateException("run failed: " + r.stderr());
            if (i > 0) ms.add(t); // the first open is a warm-up (a microVM's warm base is made then)
            e.closeWorkspace(Tenant.LOCAL, ws, true);
        }
        ms.sort(null);
        return ms.get(ms.size() / 2);
    }
}
