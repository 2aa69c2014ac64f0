package dev.berth.engine.transfer;

import dev.berth.engine.api.EngineException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What an import of one directory carries, decided on the server's machine before anything is copied: regular files,
 * directories and links that stay inside the directory. Special files (devices, pipes, sockets) and links that lead
 * out are skipped and listed; a git repository's {@code .gitignore}d files stay out unless asked for; its hooks are
 * not carried; a {@code .git} that is a file ({@code gitdir:}) or a link is never followed. Nothing is ever read
 * through a link. Immutable once scanned.
 */
public final class SourceTree {
    /** Skipped entries named in a result; the rest are counted. */
    static final int SKIPPED_LISTED = 100;
    static final int MAX_ENTRIES = dev.berth.schemas.Limits.intValue("open_workspace.from_directory_entries_max");

    enum Type { FILE, DIR, LINK }

    /** One thing to carry: {@code path} relative to the root, '/'-separated; {@code size} only for files. */
    record Entry(String path, Type type, long size, int mode, long mtimeSeconds, String linkTarget) {}

    final Path root;
    final List<Entry> entries = new ArrayList<>();
    final List<String> skipped = new ArrayList<>();
    long skippedCount;
    final List<String> notes = new ArrayList<>();
    long ignored;
    long bytes;
    /** The repository's git directory ({@code root/.git}), or null when the directory is not carried as a repository. */
    Path gitDir;
    String branch;
    String commit;

    private SourceTree(Path root) { this.root = root; }

    /**
     * The real directory {@code dir} names, if it lies inside one of {@code roots}; otherwise a refusal that says why.
     * A root that is itself a symbolic link is not used (it would let a link decide where imports come from).
     */
    public static Path checkInside(Path dir, List<Path> roots) throws EngineException {
        if (!dir.isAbsolute()) throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "from_directory '" + dir + "' is not an absolute path");
        Path real;
        try {
            real = dir.toRealPath();
        } catch (IOException e) {
            throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "from_directory '" + dir + "' does not exist or cannot be read: " + e.getMessage());
        }
        if (!Files.isDirectory(real, LinkOption.NOFOLLOW_LINKS)) {
            throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "from_directory '" + dir + "' is not a directory");
        }
        if (roots.isEmpty()) {
            throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "from_directory '" + dir + "' refused: no roots allow imports (the client declared "
                    + "no roots and the operator config names no project_roots)");
        }
        List<String> seen = new ArrayList<>();
        for (Path r : roots) {
            if (!r.isAbsolute()) { seen.add(r + " (not absolute)"); continue; }
            if (Files.isSymbolicLink(r)) { seen.add(r + " (a symbolic link: not used as a root)"); continue; }
            Path rr;
            try {
                rr = r.toRealPath();
            } catch (IOException e) {
                seen.add(r + " (missing)");
                continue;
            }
            if (real.startsWith(rr)) return real;
            seen.add(rr.toString());
        }
        String how = real.equals(dir.normalize()) ? "" : " (really " + real + ")";
        throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "from_directory '" + dir + "'" + how + " refused: it is outside every allowed root: "
                + String.join(", ", seen));
    }

    /** Decides what to carry from the real directory {@code root} ({@link #checkInside}). */
    public static SourceTree scan(Path root, boolean includeIgnored) throws EngineException {
        SourceTree t = new SourceTree(root);
        try {
            t.scanRepository(includeIgnored);
        } catch (IOException e) {
            throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "cannot read '" + root + "': " + e.getMessage(), e);
        }
        return t;
    }

    private void scanRepository(boolean includeIgnored) throws IOException, EngineException {
        Path dotGit = root.resolve(".git");
        Map<String, Entry> chosen = new TreeMap<>();
        if (Files.isSymbolicLink(dotGit)) {
            notes.add(".git is a symbolic link: not followed; the directory arrives without its history");
            skip(".git", "a symbolic link (not followed)");
        } else if (Files.isRegularFile(dotGit, LinkOption.NOFOLLOW_LINKS)) {
            String s = new String(Files.readAllBytes(dotGit), StandardCharsets.UTF_8).trim();
            notes.add(".git is a file (" + (s.length() > 200 ? s.substring(0, 200) : s) + "): the git directory it points to is not followed;"
                    + " the directory arrives without its history");
            skip(".git", "a gitdir file (not followed)");
        } else if (Files.isDirectory(dotGit, LinkOption.NOFOLLOW_LINKS)) {
            gitDir = dotGit;
        }
        if (gitDir != null) repositoryState();
        if (gitDir != null && !includeIgnored) {
            HostGit.Result r = HostGit.check(root, gitDir, List.of("ls-files", "-z", "--cached", "--others", "--exclude-standard"));
            for (String rel : HostGit.nulSeparated(r.stdout())) {
                consider(rel, chosen, true);
            }
            HostGit.Result ign = HostGit.run(root, gitDir, List.of("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"));
            if (ign.exit() == 0) ignored = HostGit.nulSeparated(ign.stdout()).size();
            walk(gitDir, chosen);
        } else {
            walk(root, chosen);
        }
        entries.addAll(chosen.values());
        for (Entry e : entries) bytes += e.size();
    }

    /** Branch, commit, and whether the repository is in the middle of something (said in the result, imported as is). */
    private void repositoryState() throws IOException {
        HostGit.Result head = HostGit.run(root, gitDir, List.of("rev-parse", "-q", "--verify", "HEAD^{commit}"));
        commit = head.exit() == 0 ? head.out() : null;
        HostGit.Result b = HostGit.run(root, gitDir, List.of("symbolic-ref", "-q", "--short", "HEAD"));
        branch = b.exit() == 0 ? b.out() : null;
        if (commit == null) notes.add("the repository has no commit yet");
        if (branch == null && commit != null) notes.add("HEAD is detached at " + commit);
        if (Files.exists(gitDir.resolve("rebase-merge")) || Files.exists(gitDir.resolve("rebase-apply"))) {
            notes.add("the repository is in the middle of a rebase: imported as it is");
        }
        if (Files.exists(gitDir.resolve("MERGE_HEAD"))) notes.add("the repository is in the middle of a merge: imported as it is");
        if (Files.exists(gitDir.resolve("CHERRY_PICK_HEAD"))) notes.add("the repository is in the middle of a cherry-pick: imported as it is");
        HostGit.Result u = HostGit.run(root, gitDir, List.of("ls-files", "-z", "--unmerged"));
        if (u.exit() == 0 && u.stdout().length > 0) notes.add("the repository has unresolved conflicts: imported with them");
        if (Files.exists(gitDir.resolve("objects/info/alternates"))) {
            notes.add("the repository borrows objects from elsewhere (objects/info/alternates): those are not copied, so parts of its history may be missing");
        }
    }

    /** Adds {@code rel} (and its parent directories) if it is something to carry. */
    private void consider(String rel, Map<String, Entry> chosen, boolean listedByGit) throws IOException, EngineException {
        if (rel.isEmpty() || rel.startsWith("/") || rel.contains("\0")) return;
        Path p = root.resolve(rel).normalize();
        if (!p.startsWith(root) || p.equals(root)) return;
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (java.nio.file.NoSuchFileException e) {
            return; // tracked but deleted in the working tree: arrives deleted
        }
        if (a.isDirectory()) {
            if (listedByGit) skip(rel, "a nested repository or submodule (not copied)");
            return;
        }
        Entry e = entry(p, rel, a);
        if (e == null) return;
        String parent = rel.contains("/") ? rel.substring(0, rel.lastIndexOf('/')) : null;
        while (parent != null && !chosen.containsKey(parent)) {
            Path pp = root.resolve(parent);
            var pa = Files.readAttributes(pp, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            chosen.put(parent, new Entry(parent, Type.DIR, 0, mode(pp), seconds(pa.lastModifiedTime()), null));
            parent = parent.contains("/") ? parent.substring(0, parent.lastIndexOf('/')) : null;
        }
        put(chosen, e);
    }

    private void put(Map<String, Entry> chosen, Entry e) throws EngineException {
        if (chosen.size() >= MAX_ENTRIES) {
            throw new EngineException(EngineException.Kind.LIMIT, "'" + root + "' has more than " + MAX_ENTRIES
                    + " entries to copy; import a smaller directory");
        }
        chosen.put(e.path(), e);
    }

    /** Walks {@code from} without following links; a repository's hooks are not carried. */
    private void walk(Path from, Map<String, Entry> chosen) throws IOException, EngineException {
        final EngineException[] limit = new EngineException[1];
        Files.walkFileTree(from, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes a) throws IOException {
                String rel = root.relativize(dir).toString();
                if (dir.getFileName() != null && dir.getFileName().toString().equals("hooks") && dir.getParent() != null
                        && dir.getParent().getFileName() != null && dir.getParent().getFileName().toString().equals(".git")) {
                    // the repository's hooks and any nested repository's (include_ignored, or a directory of repositories)
                    skip(rel, "git hooks are not carried");
                    return FileVisitResult.SKIP_SUBTREE;
                }
                if (rel.isEmpty()) return FileVisitResult.CONTINUE;
                try {
                    put(chosen, new Entry(rel, Type.DIR, 0, mode(dir), seconds(a.lastModifiedTime()), null));
                } catch (EngineException e) {
                    limit[0] = e;
                    return FileVisitResult.TERMINATE;
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes a) throws IOException {
                if (gitDir == null && file.equals(root.resolve(".git"))) return FileVisitResult.CONTINUE; // skipped above: not followed, not carried
                Entry e = entry(file, root.relativize(file).toString(), a);
                if (e != null) {
                    try {
                        put(chosen, e);
                    } catch (EngineException x) {
                        limit[0] = x;
                        return FileVisitResult.TERMINATE;
                    }
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
                skip(root.relativize(file).toString(), "unreadable (" + e.getClass().getSimpleName() + ")");
                return FileVisitResult.CONTINUE;
            }
        });
        if (limit[0] != null) throw limit[0];
    }

    /** The entry for one non-directory, or null (skipped and listed) when it is special or a link leading out. */
    private Entry entry(Path p, String rel, BasicFileAttributes a) throws IOException {
        if (a.isRegularFile()) {
            if (!Files.isReadable(p)) {
                skip(rel, "not readable");
                return null;
            }
            return new Entry(rel, Type.FILE, a.size(), mode(p), seconds(a.lastModifiedTime()), null);
        }
        if (a.isSymbolicLink()) {
            String target = Files.readSymbolicLink(p).toString();
            Path resolved = p.getParent().resolve(target).normalize();
            if (target.startsWith("/") || !resolved.startsWith(root)) {
                skip(rel, "a symbolic link leading out of the directory (" + target + ")");
                return null;
            }
            return new Entry(rel, Type.LINK, 0, 0777, seconds(a.lastModifiedTime()), target);
        }
        skip(rel, "a special file (device, pipe or socket)");
        return null;
    }

    private void skip(String rel, String why) {
        skippedCount++;
        if (skipped.size() < SKIPPED_LISTED) skipped.add(rel + ": " + why);
    }

    private static int mode(Path p) throws IOException {
        Object m = Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        return ((Integer) m) & 0777;
    }

    private static long seconds(FileTime t) { return Math.max(0, t.toMillis() / 1000); }
}
