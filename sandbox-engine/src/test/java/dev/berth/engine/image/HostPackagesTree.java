package dev.berth.engine.image;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A root tree made of Debian packages installed on this machine: the files of the named packages and of everything
 * they depend on (the first installed alternative of each dependency), documentation, manuals, headers and
 * translations left out, laid out merged-/usr like Debian 12. What tests use to run the real clients (git, npm, pip)
 * inside workspaces on drivers that cannot see the host's /usr (microVM, gVisor), without a registry or a mirror:
 * every file comes from a Debian package that {@code scripts/install-deps.sh} installed.
 */
public final class HostPackagesTree {
    /** The real clients of issue 16, and a shell and the tools their tests' commands use. */
    public static final List<String> CLIENTS = List.of("git", "nodejs", "python3-minimal", "python3-pip", "curl",
            "ca-certificates", "dash", "coreutils", "grep", "sed", "findutils");
    /** Dependencies never needed to run the clients (maintainer-script machinery, manuals). */
    private static final Set<String> SKIP = Set.of("debconf", "dpkg", "install-info", "git-man", "perl", "perl-modules-5.36",
            "libperl5.36", "python3-wheel");
    /**
     * Trees taken whole, as they are on this machine rather than as the package listed them: npm updates itself in
     * place (its files no longer match the nodejs package's list), and Debian compiles Python's bytecode at install
     * time into {@code __pycache__} folders no package lists (without them every run compiles pip anew).
     */
    private static final List<String> WHOLE = List.of("usr/lib/node_modules");
    private static final List<String> BYTECODE = List.of("usr/lib/python3.11", "usr/lib/python3/dist-packages");
    private static final List<String> LEFT_OUT = List.of("usr/share/doc/", "usr/share/man/", "usr/include/",
            "usr/share/locale/", "usr/share/info/", "usr/share/lintian/");

    private HostPackagesTree() {}

    /** Why this machine cannot build the tree (a package is not installed), or null. */
    public static String missing(List<String> packages) throws IOException {
        List<String> absent = new ArrayList<>();
        for (String p : packages) if (!installed(p)) absent.add(p);
        return absent.isEmpty() ? null : "Debian packages not installed: " + absent + " (scripts/install-deps.sh installs them)";
    }

    /** Writes the tree of {@code packages} and their dependencies to {@code root} (created; must not exist). */
    public static Path write(Path root, List<String> packages) throws IOException {
        Set<String> closure = closure(packages);
        Set<String> files = new TreeSet<>();
        for (String pkg : closure) {
            for (String line : run("dpkg-query", "-L", pkg).split("\n")) {
                if (line.isEmpty() || !line.startsWith("/")) continue;
                Path f = Path.of(line);
                if (!Files.isSymbolicLink(f) && !Files.isRegularFile(f)) continue;
                String rel = line.substring(1);
                if (LEFT_OUT.stream().noneMatch(rel::startsWith)) files.add(rel);
            }
        }
        for (String tree : WHOLE) addAll(files, tree, false);
        for (String tree : BYTECODE) addAll(files, tree, true);
        Files.createDirectories(root);
        for (String d : List.of("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "etc", "tmp", "root", "workspace")) {
            Files.createDirectories(root.resolve(d));
        }
        for (String top : List.of("bin", "sbin", "lib", "lib64")) {
            Files.createSymbolicLink(root.resolve(top), Path.of("usr", top));
        }
        Path list = Files.createTempFile("berth-host-packages-", ".list");
        try {
            Files.write(list, files, StandardCharsets.UTF_8);
            // tar keeps modes, owners and symlinks; --keep-directory-symlink puts /bin/x through the merged-/usr links
            run("sh", "-c", "tar -C / -cf - --no-recursion -T '" + list + "' | tar -C '" + root + "' --keep-directory-symlink -xf -");
        } finally {
            Files.deleteIfExists(list);
        }
        Files.writeString(root.resolve("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
        Files.writeString(root.resolve("etc/group"), "root:x:0:\n");
        Files.writeString(root.resolve("etc/os-release"), "ID=berth-host-packages\nPACKAGES=\"" + String.join(" ", packages) + "\"\n");
        return root;
    }

    private static void addAll(Set<String> files, String tree, boolean bytecodeOnly) throws IOException {
        Path dir = Path.of("/").resolve(tree);
        if (!Files.isDirectory(dir)) return;
        try (var walk = Files.walk(dir)) {
            walk.filter(f -> Files.isSymbolicLink(f) || Files.isRegularFile(f))
                    .filter(f -> !bytecodeOnly || f.getParent().getFileName().toString().equals("__pycache__"))
                    .forEach(f -> files.add(f.toString().substring(1)));
        }
    }

    /** The image config's defaults for such a tree. */
    public static Map<String, Object> defaults() {
        return Map.of("Env", List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"), "WorkingDir", "/workspace");
    }

    /** The installed packages {@code roots} need, themselves included. */
    static Set<String> closure(List<String> roots) throws IOException {
        Set<String> seen = new LinkedHashSet<>();
        Deque<String> todo = new ArrayDeque<>(roots);
        while (!todo.isEmpty()) {
            String p = todo.pop();
            if (seen.contains(p) || SKIP.contains(p) || !installed(p)) continue;
            seen.add(p);
            String deps = run("dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", p);
            for (String alternatives : deps.split(",")) {
                for (String alt : alternatives.split("\\|")) {
                    String name = alt.replaceAll("\\(.*?\\)", "").trim().split(":")[0];
                    if (!name.isEmpty() && installed(name)) {
                        todo.push(name);
                        break;
                    }
                }
            }
        }
        return seen;
    }

    private static boolean installed(String pkg) throws IOException {
        Process p = new ProcessBuilder("dpkg-query", "-W", "-f=${Status}", pkg).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            return p.waitFor() == 0 && out.contains("install ok installed");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    private static String run(String... cmd) throws IOException {
        return OciFixture.run(cmd);
    }
}
