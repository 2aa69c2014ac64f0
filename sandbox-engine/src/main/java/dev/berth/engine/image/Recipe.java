package dev.berth.engine.image;

import dev.berth.proxy.policy.Policy;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A declarative image recipe ({@code berth image build FILE --name NAME}): a base image, Debian packages, setup
 * commands, and the new image's run defaults, built inside a workspace whose egress is held to {@code allow}.
 * Immutable; {@link #parse} checks everything and refuses an unknown field, so a typo never builds something else.
 *
 * <pre>{@code
 * {
 *   "berth_recipe": 1,
 *   "base": "debian-base",                       // an image in the store
 *   "packages": ["hello-berth", "jq=1.6-2.1"],   // Debian packages, installed first with apt-get
 *   "allow": ["preset:debian", "preset:npm"],    // the build's egress allowlist (same syntax as open_workspace egress)
 *   "steps": ["npm install -g left-pad", {"name": "config", "run": "echo x > /etc/x"}],
 *   "env": {"NODE_ENV": "production"},           // the new image's Env (added to the base's)
 *   "workdir": "/srv/app",                       // the new image's WorkingDir
 *   "user": "app"                                // the new image's User (resolved in the built image)
 * }
 * }</pre>
 *
 * @param base     name of the base image
 * @param packages Debian package names, each optionally {@code =VERSION}
 * @param allow    egress allowlist entries of the build (narrowed again by the operator's policy)
 * @param steps    the build's steps in order: the package install (when there are packages), then the setup commands
 * @param env      variables added to the base image's Env
 * @param workdir  the new image's WorkingDir, or null for the base's
 * @param user     the new image's User, or null for the base's
 */
public record Recipe(String base, List<String> packages, List<String> allow, List<Step> steps, Map<String, String> env,
                     String workdir, String user) {
    public static final int VERSION = 1;
    static final int MAX_BYTES = 64 * 1024;
    private static final Set<String> FIELDS = Set.of("berth_recipe", "base", "packages", "allow", "steps", "env", "workdir", "user");
    private static final Pattern PACKAGE = Pattern.compile("[a-z0-9][a-z0-9+.-]{1,127}(=[A-Za-z0-9.+~:-]{1,127})?");
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final Pattern STEP_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9 ._:/-]{0,79}");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** One build step: a shell command line run in the build workspace; {@code name} is how progress and errors say it. */
    public record Step(String name, String run) {}

    public Recipe {
        packages = List.copyOf(packages);
        allow = List.copyOf(allow);
        steps = List.copyOf(steps);
        env = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(env));
    }

    /** Reads and checks a recipe file (at most {@value #MAX_BYTES} bytes of JSON). */
    public static Recipe read(Path file) throws ImageException, IOException {
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(MAX_BYTES + 1);
        }
        if (bytes.length > MAX_BYTES) throw new ImageException("recipe " + file + " is larger than " + MAX_BYTES + " bytes");
        return parse(new String(bytes, StandardCharsets.UTF_8), file.toString());
    }

    /** Checks a recipe's JSON; {@code source} names it in errors. */
    public static Recipe parse(String json, String source) throws ImageException {
        JsonNode n;
        try {
            n = JSON.readTree(json);
        } catch (JacksonException e) {
            throw new ImageException("recipe " + source + " is not valid JSON: " + e.getOriginalMessage());
        }
        if (n == null || !n.isObject()) throw new ImageException("recipe " + source + " must be a JSON object");
        String where = "recipe " + source + ": ";
        for (String f : n.propertyNames()) {
            if (!FIELDS.contains(f)) throw new ImageException(where + "unknown field '" + f + "' (fields: " + new java.util.TreeSet<>(FIELDS) + ")");
        }
        JsonNode v = n.path("berth_recipe");
        if (!v.isIntegralNumber() || v.asInt() != VERSION) {
            throw new ImageException(where + "berth_recipe must be " + VERSION + " (the recipe format version), not " + v);
        }
        String base = text(n, "base", where, true);
        ImageStore.checkName(base);
        List<String> packages = strings(n, "packages", where);
        for (String p : packages) {
            if (!PACKAGE.matcher(p).matches()) throw new ImageException(where + "package '" + p + "' is not a Debian package name (NAME or NAME=VERSION)");
        }
        List<String> allow = strings(n, "allow", where);
        try {
            Policy.of(allow);
        } catch (IllegalArgumentException e) {
            throw new ImageException(where + "allow: " + e.getMessage());
        }
        List<Step> steps = new ArrayList<>();
        if (!packages.isEmpty()) {
            // apt's download sandbox user (_apt) does not exist as a separate uid in a workspace: it runs as root there
            steps.add(new Step("packages", "export DEBIAN_FRONTEND=noninteractive; apt-get -o APT::Sandbox::User=root update"
                    + " && apt-get -o APT::Sandbox::User=root install -y --no-install-recommends " + String.join(" ", packages)
                    + " && apt-get clean"));
        }
        JsonNode s = n.path("steps");
        if (!s.isMissingNode() && !s.isArray()) throw new ImageException(where + "steps must be an array");
        int i = 0;
        for (JsonNode step : s) {
            i++;
            String name;
            String run;
            if (step.isString()) {
                name = "step " + i;
                run = step.asString();
            } else if (step.isObject()) {
                for (String f : step.propertyNames()) {
                    if (!f.equals("name") && !f.equals("run")) throw new ImageException(where + "step " + i + ": unknown field '" + f + "' (name, run)");
                }
                run = step.path("run").isString() ? step.path("run").asString() : null;
                name = step.path("name").isString() ? step.path("name").asString() : "step " + i;
                if (!STEP_NAME.matcher(name).matches()) {
                    throw new ImageException(where + "step " + i + ": name '" + name + "' must be 1-80 letters, digits, spaces and ._:/-");
                }
            } else {
                throw new ImageException(where + "step " + i + " must be a command string or {\"name\": ..., \"run\": ...}");
            }
            if (run == null || run.isBlank()) throw new ImageException(where + "step " + i + " has no command (run)");
            if (run.indexOf('\0') >= 0) throw new ImageException(where + "step " + i + " contains a NUL character");
            steps.add(new Step(name, run));
        }
        if (steps.isEmpty()) throw new ImageException(where + "nothing to build: no packages and no steps");
        Map<String, String> env = new LinkedHashMap<>();
        JsonNode e = n.path("env");
        if (!e.isMissingNode()) {
            if (!e.isObject()) throw new ImageException(where + "env must be an object of NAME: value");
            for (var p : e.properties()) {
                if (!ENV_NAME.matcher(p.getKey()).matches() || p.getKey().startsWith("BERTH_")) {
                    throw new ImageException(where + "env name '" + p.getKey() + "' is not allowed (A-Z, a-z, 0-9, _; not BERTH_*)");
                }
                if (!p.getValue().isString() || p.getValue().asString().indexOf('\0') >= 0) {
                    throw new ImageException(where + "env " + p.getKey() + " must be a string without NUL");
                }
                env.put(p.getKey(), p.getValue().asString());
            }
        }
        String workdir = text(n, "workdir", where, false);
        if (workdir != null && (!workdir.startsWith("/") || workdir.contains("/../") || workdir.endsWith("/.."))) {
            throw new ImageException(where + "workdir '" + workdir + "' must be an absolute path without '..'");
        }
        String user = text(n, "user", where, false);
        return new Recipe(base, packages, allow, steps, env, workdir, user);
    }

    private static String text(JsonNode n, String field, String where, boolean required) throws ImageException {
        JsonNode v = n.path(field);
        if (v.isMissingNode() || v.isNull()) {
            if (required) throw new ImageException(where + field + " is required");
            return null;
        }
        if (!v.isString() || v.asString().isBlank()) throw new ImageException(where + field + " must be a non-empty string");
        return v.asString();
    }

    private static List<String> strings(JsonNode n, String field, String where) throws ImageException {
        JsonNode v = n.path(field);
        if (v.isMissingNode()) return List.of();
        if (!v.isArray()) throw new ImageException(where + field + " must be an array of strings");
        List<String> out = new ArrayList<>();
        for (JsonNode x : v) {
            if (!x.isString()) throw new ImageException(where + field + " must be an array of strings, not " + x);
            out.add(x.asString());
        }
        return out;
    }
}
