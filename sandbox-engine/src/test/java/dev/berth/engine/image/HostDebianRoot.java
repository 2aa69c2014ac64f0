package dev.berth.engine.image;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * A Debian root filesystem for tests, assembled from the host's own installed Debian packages (no registry needed):
 * the dependency closure of the packages asked for ({@code apt-cache depends --recurse --installed}), each package's
 * files as {@code dpkg-query -L} lists them (documentation, manuals and translations left out), dpkg's database of
 * exactly those packages (status and {@code info/} files, so apt and dpkg inside the tree know what is installed),
 * {@code /etc/alternatives}, a minimal {@code /etc/passwd} and {@code /etc/group}, and a linker cache made with
 * {@code ldconfig -r}. The host's usrmerge symlinks ({@code /bin -> usr/bin}, ...) are kept. No apt sources: a test
 * adds its own.
 */
public final class HostDebianRoot {
    private static final List<String> LEFT_OUT = List.of("/usr/share/doc/", "/usr/share/man/", "/usr/share/locale/",
            "/usr/share/info/", "/usr/share/lintian/");
    private static final List<String> USRMERGE = List.of("bin", "sbin", "lib", "lib64");

    private HostDebianRoot() {}

    /** Null when the host can assemble a root (Debian with dpkg and apt), else what is missing. */
    public static String missing() {
        for (String t : List.of("/usr/bin/dpkg-query", "/usr/bin/apt-cache", "/usr/sbin/ldconfig", "/var/lib/dpkg/status")) {
            if (!Files.exists(Path.of(t))) return "not a Debian host with dpkg and apt: " + t + " is missing";
        }
        return null;
    }

    /**
     * Writes the root of {@code packages} and their dependencies (all installed on the host) into {@code tree} (created),
     * plus the host directories {@code extra} whole (what a package's scripts made or a tool changed after install,
     * e.g. {@code /etc/ssl/certs}, or npm upgrading itself in {@code /usr/lib/node_modules/npm}).
     *
     * @return the packages the tree holds
     */
    public static List<String> build(Path tree, List<String> packages, List<String> extra) throws IOException, InterruptedException {
        // the host's installed packages of priority required (what every Debian system has; they also provide the
        // virtual packages others depend on, such as awk), then the packages asked for, with their dependencies
        Set<String> installed = new TreeSet<>();
        List<String> cmd = new ArrayList<>(List.of("apt-cache", "depends", "--recurse", "--installed", "--no-recommends",
                "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"));
        for (String l : run(List.of("dpkg-query", "-W", "-f", "${Package} ${db:Status-Status} ${Priority}\\n")).lines().toList()) {
            String[] f = l.split(" ");
            if (f.length < 2 || !f[1].equals("installed")) continue;
            installed.add(f[0]);
            if (f.length == 3 && f[2].equals("required")) cmd.add(f[0]);
        }
        cmd.addAll(packages);
        Set<String> closure = new TreeSet<>();
        for (String l : run(cmd).lines().toList()) {
            if (!l.startsWith(" ") && !l.startsWith("<") && !l.isBlank()) closure.add(l.strip());
        }
        // apt-cache names alternatives the host does not have too (libelogind0 for libsystemd0's |): installed ones only
        closure.retainAll(installed);
        Files.createDirectories(tree);
        for (String m : USRMERGE) {
            Path host = Path.of("/" + m);
            if (Files.isSymbolicLink(host)) Files.createSymbolicLink(tree.resolve(m), Files.readSymbolicLink(host));
        }
        // every file of every package, under its canonical path (dpkg names /bin/sh; on usrmerge it is /usr/bin/sh)
        List<String> list = new ArrayList<>(List.of("dpkg-query", "-L"));
        list.addAll(closure);
        Set<String> files = new TreeSet<>();
        for (String l : run(list).lines().toList()) {
            if (!l.startsWith("/") || l.equals("/.")) continue;
            if (LEFT_OUT.stream().anyMatch(l::startsWith)) continue;
            Path p = Path.of(l);
            if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS) || p.getParent() == null) continue;
            Path canonical = p.getParent().toRealPath().resolve(p.getFileName());
            if (USRMERGE.contains(canonical.toString().substring(1))) continue;
            files.add(canonical.toString().substring(1));
        }
        for (Path dir : List.of(Path.of("/etc/alternatives"), Path.of("/var/lib/dpkg/alternatives"))) {
            if (Files.isDirectory(dir)) {
                files.add(dir.toString().substring(1));
                try (var s = Files.list(dir)) {
                    s.forEach(f -> files.add(f.toString().substring(1)));
                }
            }
        }
        Path fileList = Files.createTempFile("berth-debian-root-", ".list");
        try {
            Files.writeString(fileList, String.join("\0", files) + "\0");
            run(List.of("sh", "-c", "tar -C / --no-recursion --null -T \"$1\" -cf - | tar -C \"$2\" --numeric-owner -xpf -",
                    "sh", fileList.toString(), tree.toString()));
            for (String e : extra) {
                Path host = Path.of(e).toRealPath();
                run(List.of("sh", "-c", "tar -C / -cf - \"$1\" | tar -C \"$2\" --numeric-owner -xpf -", "sh",
                        host.toString().substring(1), tree.toString()));
            }
        } finally {
            Files.deleteIfExists(fileList);
        }
        // dpkg's database of exactly these packages
        Path dpkg = Files.createDirectories(tree.resolve("var/lib/dpkg/info"));
        for (String d : List.of("updates", "triggers", "parts")) Files.createDirectories(tree.resolve("var/lib/dpkg").resolve(d));
        List<String> status = new ArrayList<>(List.of("dpkg-query", "-s"));
        status.addAll(closure);
        Files.writeString(tree.resolve("var/lib/dpkg/status"), run(status).strip() + "\n");
        for (String f : List.of("available", "diversions", "statoverride")) Files.writeString(tree.resolve("var/lib/dpkg").resolve(f), "");
        try (var s = Files.list(Path.of("/var/lib/dpkg/info"))) {
            for (Path f : s.toList()) {
                String n = f.getFileName().toString();
                if (n.equals("format")) Files.copy(f, dpkg.resolve(n)); // the database's naming (multiarch: NAME:ARCH.list)
                int dot = n.lastIndexOf('.'); // NAME[:ARCH].KIND; names may hold dots (libapt-pkg6.0)
                if (dot <= 0) continue;
                String pkg = n.substring(0, dot).replaceFirst(":.*", "");
                if (closure.contains(pkg) && Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) Files.copy(f, dpkg.resolve(n));
            }
        }
        Files.createDirectories(tree.resolve("var/lib/apt/lists/partial"));
        Files.createDirectories(tree.resolve("var/cache/apt/archives/partial"));
        Files.createDirectories(tree.resolve("etc/apt/sources.list.d"));
        Files.writeString(tree.resolve("etc/passwd"), "root:x:0:0:root:/root:/bin/bash\n_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n"
                + "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
        Files.writeString(tree.resolve("etc/group"), "root:x:0:\nnogroup:x:65534:\n");
        Files.createDirectories(tree.resolve("root"));
        Files.createDirectories(tree.resolve("tmp"));
        run(List.of("ldconfig", "-r", tree.toString()));
        return List.copyOf(closure);
    }

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
        p.getOutputStream().close();
        var err = p.getErrorStream();
        byte[] out = p.getInputStream().readAllBytes();
        String e = new String(err.readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", cmd.subList(0, Math.min(cmd.size(), 4))) + " ... failed: " + e.strip());
        }
        return new String(out, StandardCharsets.UTF_8);
    }
}
