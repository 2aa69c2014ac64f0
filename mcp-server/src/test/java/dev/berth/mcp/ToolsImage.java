package dev.berth.mcp;

import dev.berth.engine.image.HostPackagesTree;
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
 * the {@linkplain HostPackagesTree host-packages image}, imported into the home before the server starts, so the same
 * clients run inside the guest.
 */
record ToolsImage(List<String> serverArgs, Map<String, Object> openArgs, List<String> packages) {
    static final String NAME = "clients";
    static final ToolsImage NAMESPACE = new ToolsImage(List.of("--isolation", "namespace"), Map.of(), List.of());
    static final ToolsImage MICROVM = microvm(HostPackagesTree.CLIENTS);
    /** The clients and Debian's Maven with the JDK it runs on (a larger image: only the Maven suite needs it). */
    static final ToolsImage MICROVM_MAVEN = microvm(concat(HostPackagesTree.CLIENTS, List.of("maven", "openjdk-17-jdk-headless")));

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
        String missing = HostPackagesTree.missing(packages);
        if (missing != null) throw new IllegalStateException(missing);
        Path scratch = Files.createTempDirectory("berth-clients-tree-");
        try {
            Path tree = HostPackagesTree.write(scratch.resolve("root"), packages);
            new ImageStore(home).importTree(tree, NAME, "amd64", HostPackagesTree.defaults(), "Debian packages of this host",
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
