package dev.berth.mcp;

import dev.berth.engine.image.HostDebianRoot;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.image.ImportLimits;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where a suite of real-client tests runs: the server's isolation arguments, the image its workspaces open on, and
 * what the home needs first. The namespace level sees the host's own git, npm and pip; a microVM (test kernel) opens
 * the host-packages image, imported into the home before the server starts, so the same
 * clients run inside the guest. The image is a {@link HostDebianRoot} of the clients' Debian packages, as installed on
 * this machine.
 */
record ToolsImage(List<String> serverArgs, Map<String, Object> openArgs, List<String> packages) {
    static final String NAME = "clients";
    static final ToolsImage NAMESPACE = new ToolsImage(List.of("--isolation", "namespace"), Map.of(), List.of());
    /** The real clients of issue 16 (and curl, which their tests' commands use). */
    static final List<String> CLIENTS = List.of("git", "nodejs", "python3-minimal", "python3-pip", "curl", "ca-certificates");
    /**
     * Host folders taken whole, as they are rather than as their packages listed them: npm updates itself in place,
     * and Debian compiles Python's bytecode at install time into {@code __pycache__} folders no package lists
     * (without them every run compiles pip anew).
     */
    static final List<String> WHOLE = List.of("/usr/lib/node_modules", "/usr/lib/python3.11", "/usr/lib/python3/dist-packages");
    static final ToolsImage MICROVM = microvm(CLIENTS);
    /** The clients and Debian's Maven with the JDK it runs on (a larger image: only the Maven suite needs it). */
    static final ToolsImage MICROVM_MAVEN = microvm(concat(CLIENTS, List.of("maven", "openjdk-17-jdk-headless")));

    private static ToolsImage microvm(List<String> packages) {
        return new ToolsImage(List.of("--isolation", "microvm", "--microvm-image", "test"), Map.of("image", NAME), packages);
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> all = new ArrayList<>(a);
        all.addAll(b);
        return List.copyOf(all);
    }

    /** Prepares {@code home} (imports the image when this level needs one). */
    void prepare(Path home) throws Exception {
        if (packages.isEmpty()) return;
        String missing = HostDebianRoot.missing();
        if (missing != null) throw new IllegalStateException(missing);
        Path scratch = Files.createTempDirectory("berth-clients-tree-");
        try {
            Path tree = scratch.resolve("root");
            HostDebianRoot.build(tree, packages, WHOLE.stream().filter(d -> Files.isDirectory(Path.of(d))).toList());
            Files.createDirectories(tree.resolve("workspace"));
            Map<String, Object> defaults = Map.of("Env", List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                    "WorkingDir", "/workspace");
            new ImageStore(home).importTree(tree, NAME, "amd64", defaults, "Debian packages of this host",
                    null, ImportLimits.DEFAULT, line -> { });
        } finally {
            dev.berth.engine.spi.Trees.delete(scratch);
        }
    }

    /** The server's arguments: this level's, then {@code more}. */
    String[] args(String... more) {
        List<String> all = new ArrayList<>(serverArgs);
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    /** {@code open_workspace} arguments: {@code args} plus the image this level opens on. */
    Map<String, Object> open(Map<String, Object> args) {
        Map<String, Object> all = new java.util.HashMap<>(args);
        all.putAll(openArgs);
        return all;
    }
}
