package dev.berth.engine;

import dev.berth.engine.api.EgressDenial;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;

import dev.berth.engine.host.HostCommand;
import dev.berth.engine.host.Layout;
import dev.berth.engine.image.ImageException;
import dev.berth.engine.image.ImageRecord;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.Recipe;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Builds an image from a {@link Recipe} ({@code berth image build}): the base image's root tree is copied into a
 * scratch directory, a new namespace workspace enters that copy writable ({@link Engine#openToBuild}) with the
 * recipe's egress allowlist (narrowed by the operator's policy, like any open: a build is held to the same
 * supply-chain rules as a run), each step runs in it as an ordinary run through the egress proxy, and the tree
 * becomes a new image through the store's import ({@link ImageStore#importTree}: root tree and ext4 base). A step
 * that fails stops the build and names the step; the scratch copy is deleted whatever happens, so nothing is kept
 * half-built. Progress is one line per step and one per output line; the whole log is kept as the image's
 * {@code build.log}. Not thread-safe: one build per instance.
 *
 * <p>What the image gets: every file the steps left outside {@code /workspace}, {@code /tmp} and {@code /run}
 * (those are the build workspace's own), all owned by root: the build sandbox has one uid, so the base's other owners
 * are not kept. Env is the base's with the recipe's added; WorkingDir and User the recipe's, else the base's.
 */
public final class RecipeBuild {
    private final Engine engine;
    private final Tenant tenant;
    private final Resources resources;
    private final int stepTimeoutSeconds;
    private final StringBuilder log = new StringBuilder();

    public RecipeBuild(Engine engine, Tenant tenant, Resources resources, int stepTimeoutSeconds) {
        this.engine = engine;
        this.tenant = tenant;
        this.resources = resources;
        this.stepTimeoutSeconds = stepTimeoutSeconds;
    }

    /** The build's log so far (kept after a failure too, for the caller to show). */
    public String log() { return log.toString(); }

    /**
     * @param origin what the image record says it came from (e.g. {@code recipe:/path/recipe.json})
     */
    public ImageRecord build(Recipe recipe, String name, String origin, ImportLimits limits, Consumer<String> progress)
            throws ImageException, EngineException, IOException {
        ImageStore.checkName(name);
        ImageStore images = engine.images();
        ImageRecord base = images.resolve(recipe.base());
        Consumer<String> say = line -> {
            log.append(line).append('\n');
            progress.accept(line);
        };
        Files.createDirectories(images.dir());
        Path scratch = Files.createTempDirectory(images.dir(), ".build-" + ProcessHandle.current().pid() + "-");
        // the build sandbox's uid enters the copy below it: traverse only, like the store's own directories
        Files.setPosixFilePermissions(scratch, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        String ws = null;
        try {
            Path tree = scratch.resolve("rootfs");
            say.accept("build " + name + " from " + recipe.base() + " (" + base.digest() + "), " + recipe.steps().size()
                    + " step(s), egress " + recipe.allow());
            Layout.copyTree(images.rootImage(recipe.base(), base.digest()).rootTree(), tree);
            OpenResult o = engine.openToBuild(tenant, new OpenRequest(null, "ephemeral", null, "namespace", resources,
                    recipe.allow(), null, recipe.base()), tree);
            ws = o.workspace().id();
            int i = 0;
            for (Recipe.Step step : recipe.steps()) {
                i++;
                String label = "step " + i + "/" + recipe.steps().size() + " '" + step.name() + "'";
                say.accept("[" + label + "] " + step.run());
                Lines out = new Lines(label, say);
                RunResult r = engine.run(tenant, new RunRequest(ws, step.run(), "/", Map.of(), stepTimeoutSeconds, null, null), out);
                out.flush();
                // the build is held to the recipe's allowlist: what the proxy refused is said with its reason
                List<String> denied = new ArrayList<>();
                for (EgressDenial d : r.egressDenied()) denied.add(d.host() + ":" + d.port() + " (" + d.reason() + ")");
                for (String d : denied) say.accept("[" + label + "] egress denied: " + d);
                if (r.exitCode() != 0) {
                    String why = (r.timedOut() ? "timed out after " + stepTimeoutSeconds + " s" : "failed with exit code " + r.exitCode())
                            + (denied.isEmpty() ? "" : " (egress denied: " + String.join(", ", denied) + ")");
                    say.accept("[" + label + "] " + why);
                    throw new ImageException("build of '" + name + "' stopped: " + label + " " + why + "; nothing was kept."
                            + " Last output: " + tail(r.stderr().isBlank() ? r.stdout() : r.stderr()));
                }
            }
            engine.closeWorkspace(tenant, ws, true);
            ws = null;
            // the sandbox's single uid owned the copy; the image's files are root's
            HostCommand.exec("chown", "-R", "--no-dereference", "0:0", tree.toString());
            say.accept("snapshotting the root into image " + name);
            return images.importTree(tree, name, base.architecture(), defaults(base, recipe), origin, log.toString(), limits, say);
        } finally {
            if (ws != null) {
                try {
                    engine.closeWorkspace(tenant, ws, true);
                } catch (EngineException e) {
                    progress.accept("closing the build workspace " + ws + " failed: " + e.getMessage());
                }
            }
            Trees.delete(scratch);
        }
    }

    static Map<String, Object> defaults(ImageRecord base, Recipe recipe) {
        Map<String, String> env = new LinkedHashMap<>();
        for (String kv : base.env()) {
            int eq = kv.indexOf('=');
            if (eq > 0) env.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        env.putAll(recipe.env());
        List<String> list = new ArrayList<>();
        env.forEach((k, v) -> list.add(k + "=" + v));
        Map<String, Object> cfg = new LinkedHashMap<>();
        cfg.put("Env", list);
        String wd = recipe.workdir() != null ? recipe.workdir() : base.workingDir();
        if (wd != null) cfg.put("WorkingDir", wd);
        String user = recipe.user() != null ? recipe.user() : base.user();
        if (user != null) cfg.put("User", user);
        return cfg;
    }

    private static String tail(String s) {
        String t = s.strip();
        return t.length() > 500 ? "..." + t.substring(t.length() - 500) : t.isEmpty() ? "(none)" : t;
    }

    /** Splits a run's output into lines for progress, each prefixed with its step. */
    private static final class Lines implements OutputListener {
        private final String label;
        private final Consumer<String> sink;
        private final StringBuilder partial = new StringBuilder();

        Lines(String label, Consumer<String> sink) {
            this.label = label;
            this.sink = sink;
        }

        @Override
        public synchronized void onOutput(String stream, byte[] data) {
            partial.append(new String(data, StandardCharsets.UTF_8));
            int nl;
            while ((nl = partial.indexOf("\n")) >= 0) {
                sink.accept("[" + label + "] " + partial.substring(0, nl));
                partial.delete(0, nl + 1);
            }
        }

        synchronized void flush() {
            if (!partial.isEmpty()) sink.accept("[" + label + "] " + partial);
            partial.setLength(0);
        }
    }
}
