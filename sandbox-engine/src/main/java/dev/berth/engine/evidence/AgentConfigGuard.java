package dev.berth.engine.evidence;

import dev.berth.engine.api.AgentConfigChange;
import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.AgentException;
import dev.berth.engine.agent.FileEntry;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Watches the files that steer coding agents ({@code .claude/}, {@code .mcp.json}, {@code .cursor/},
 * {@code .vscode/settings.json}, {@code .git/hooks/}, {@code .npmrc}, {@code .pypirc}, ...) around each run: a
 * post-install hook that rewrites them is a known way to hijack the agent that later reads them. Before a run the
 * guard fingerprints them through the guest agent (contents hashed), after the run it reports what changed and, in
 * {@link GuardMode#REVERT} mode, puts the old contents back, so runs cannot change them at all as far as anyone reading
 * after the run can tell.
 *
 * <p>Scope: the roots {@code /workspace} and {@code /root}, and the first-level directories of {@code /workspace}
 * (cloned repositories). Thread-safe (stateless); a fingerprint is a value.
 *
 * <p>Limits: changes made and undone within one run are not seen; two concurrent runs in one workspace may each
 * report the other's change. Files over {@link #MAX_HASHED} bytes are compared by size and mtime only.
 */
public final class AgentConfigGuard {

    static final List<String> GUARDED = List.of(".claude", ".claude.json", ".mcp.json", ".cursor", ".vscode/settings.json",
            ".git/hooks", ".npmrc", ".pypirc", "CLAUDE.md", "AGENTS.md");
    static final List<String> ROOTS = List.of("/workspace", "/root");
    static final int MAX_SUBDIRS = 16;
    static final int MAX_FILES = 300;
    static final int MAX_HASHED = 1 << 20;
    static final int MAX_KEPT = 256 << 10;
    /** Requests one fingerprint keeps in flight to its agent at most (each waits on a virtual thread). */
    static final int IN_FLIGHT = 16;
    private static final java.util.concurrent.ExecutorService ASYNC = Executors.newVirtualThreadPerTaskExecutor();

    /** One guarded file as it was: {@code content} kept (for revert) when small. */
    public record Entry(char kind, long size, int mode, long mtime, String sha256, byte[] content) {
        boolean sameAs(Entry o) {
            if (kind != o.kind || mode != o.mode || size != o.size) return false;
            if (sha256 != null && o.sha256 != null) return sha256.equals(o.sha256);
            return mtime == o.mtime;
        }
    }


    private AgentConfigGuard() {}

    /**
     * The guarded files as they are now. The directories it will look at are listed level by level, each level's
     * listings (and at the end every file's read) sent to the agent together, so the fingerprint costs a few round
     * trips instead of one per directory and file; a directory whose name its parent's listing lacks is not asked for
     * (its answer would be "no such file"). The result is the same as looking one path after another.
     */
    public static Map<String, Entry> fingerprint(AgentClient agent) throws IOException {
        Map<String, List<FileEntry>> listings = new ConcurrentHashMap<>();
        prefetch(agent, listings, ROOTS);
        List<String> bases = new ArrayList<>();
        for (String root : ROOTS) {
            bases.add(root);
            if (root.equals("/workspace")) {
                listings.get(root).stream().filter(e -> e.kind() == 'd' && !e.name().startsWith("."))
                        .limit(MAX_SUBDIRS).forEach(e -> bases.add(root + "/" + e.name()));
            }
        }
        prefetch(agent, listings, bases);
        // the parents of guarded paths (.vscode, .git) and the guarded paths, where their parents' listings name them
        List<String> level = new ArrayList<>();
        List<String> parents = new ArrayList<>();
        for (String base : bases) {
            for (String g : GUARDED) {
                String path = base + "/" + g;
                if (!parentOf(path).equals(base) && present(listings, parentOf(path))) parents.add(parentOf(path));
                level.add(path);
            }
        }
        prefetch(agent, listings, parents);
        level = level.stream().filter(p -> listed(listings, p, 'd')).toList();
        // then the trees under them, a level at a time, as deep as the walk goes; the walk itself fetches the rest
        for (int depth = 0, listed = 0; depth <= 4 && !level.isEmpty() && listed < MAX_FILES; depth++) {
            prefetch(agent, listings, level);
            List<String> next = new ArrayList<>();
            for (String dir : level) {
                for (FileEntry e : listings.getOrDefault(dir, List.of())) {
                    listed++;
                    if (e.kind() == 'd') next.add(dir + "/" + e.name());
                }
            }
            level = next;
        }
        Map<String, FileEntry> found = new LinkedHashMap<>();
        walkAll(agent, listings, bases, found);
        return read(agent, found);
    }

    /** The guarded files in the order the walk meets them, at most {@link #MAX_FILES}. */
    private static void walkAll(AgentClient agent, Map<String, List<FileEntry>> listings, List<String> bases,
                                Map<String, FileEntry> found) throws IOException {
        for (String base : bases) {
            for (String g : GUARDED) {
                String path = base + "/" + g;
                FileEntry e = lookup(agent, listings, path);
                if (e == null) continue;
                if (e.kind() == 'd') walk(agent, listings, path, 0, found);
                else found.put(path, e);
                if (found.size() >= MAX_FILES) return;
            }
        }
    }

    /**
     * Whether {@code path} may be a directory worth listing: its parent's listing (when fetched) names it as anything
     * but a regular file. A name the listing lacks needs no round trip (the answer would be "no such file").
     */
    private static boolean present(Map<String, List<FileEntry>> listings, String path) {
        List<FileEntry> parent = listings.get(parentOf(path));
        String name = path.substring(path.lastIndexOf('/') + 1);
        return parent == null || parent.stream().anyMatch(e -> e.name().equals(name) && e.kind() != 'f');
    }

    /** Whether the fetched listing of {@code path}'s parent names it as a {@code kind}. */
    private static boolean listed(Map<String, List<FileEntry>> listings, String path, char kind) {
        String name = path.substring(path.lastIndexOf('/') + 1);
        return listings.getOrDefault(parentOf(path), List.of()).stream().anyMatch(e -> e.name().equals(name) && e.kind() == kind);
    }

    private static String parentOf(String path) { return path.substring(0, path.lastIndexOf('/')); }

    public static List<AgentConfigChange> diff(Map<String, Entry> before, Map<String, Entry> after) {
        List<AgentConfigChange> changes = new ArrayList<>();
        after.forEach((p, e) -> {
            Entry b = before.get(p);
            if (b == null) changes.add(new AgentConfigChange(p, "created", false));
            else if (!b.sameAs(e)) changes.add(new AgentConfigChange(p, "modified", false));
        });
        before.keySet().stream().filter(p -> !after.containsKey(p)).forEach(p -> changes.add(new AgentConfigChange(p, "deleted", false)));
        return changes;
    }

    /**
     * Undoes changes: created files are removed, modified and deleted ones get their old content and mode back.
     * A change that cannot be undone (content too large to have been kept) is returned with reverted = false.
     */
    public static List<AgentConfigChange> revert(AgentClient agent, Map<String, Entry> before, List<AgentConfigChange> changes) {
        List<AgentConfigChange> done = new ArrayList<>();
        for (AgentConfigChange c : changes) {
            boolean ok;
            try {
                Entry b = before.get(c.path());
                if (c.change().equals("created")) {
                    ok = remove(agent, c.path());
                } else if (b != null && b.kind() == 'f' && b.content() != null) {
                    if (c.change().equals("modified")) remove(agent, c.path()); // a symlink planted in its place goes too
                    agent.writeWholeFile(c.path(), b.mode() & 07777, b.content());
                    ok = true;
                } else {
                    ok = false;
                }
            } catch (IOException e) {
                ok = false;
            }
            done.add(new AgentConfigChange(c.path(), c.change(), ok));
        }
        return done;
    }

    private static boolean remove(AgentClient agent, String path) throws IOException {
        var h = agent.exec(new dev.berth.engine.agent.ExecRequest(List.of("/bin/rm", "-rf", "--", path),
                List.of("PATH=/usr/bin:/bin"), "/", 10_000, false), new dev.berth.engine.agent.ExecListener() {
            @Override public void onStdout(byte[] d) { }
            @Override public void onStderr(byte[] d) { }
        });
        try {
            return h.exit().get().exitCode() == 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (java.util.concurrent.ExecutionException e) {
            return false;
        }
    }

    private static void walk(AgentClient agent, Map<String, List<FileEntry>> listings, String dir, int depth,
                             Map<String, FileEntry> found) throws IOException {
        if (depth > 4) return;
        for (FileEntry e : list(agent, listings, dir)) {
            if (found.size() >= MAX_FILES) return;
            String p = dir + "/" + e.name();
            if (e.kind() == 'd') walk(agent, listings, p, depth + 1, found);
            else found.put(p, e);
        }
    }

    /** Reads and hashes every regular file found ({@link #IN_FLIGHT} reads in flight together), keeping the walk's order. */
    private static Map<String, Entry> read(AgentClient agent, Map<String, FileEntry> found) throws IOException {
        Map<String, Entry> out = new LinkedHashMap<>();
        List<Map.Entry<String, FileEntry>> all = new ArrayList<>(found.entrySet());
        for (int i = 0; i < all.size(); i += IN_FLIGHT) read(agent, all.subList(i, Math.min(all.size(), i + IN_FLIGHT)), out);
        return out;
    }

    private static void read(AgentClient agent, List<Map.Entry<String, FileEntry>> batch, Map<String, Entry> out) throws IOException {
        Map<String, Future<byte[]>> reads = new LinkedHashMap<>();
        for (var f : batch) {
            FileEntry e = f.getValue();
            if (e.kind() == 'f' && e.size() <= MAX_HASHED) reads.put(f.getKey(), submit(() -> agent.readWholeFile(f.getKey(), MAX_HASHED)));
        }
        for (var f : batch) {
            FileEntry e = f.getValue();
            String sha = null;
            byte[] kept = null;
            Future<byte[]> read = reads.get(f.getKey());
            if (read != null) {
                try {
                    byte[] data = join(read);
                    sha = sha256(data);
                    if (data.length <= MAX_KEPT) kept = data;
                } catch (AgentException ex) {
                    // unreadable or vanished between list and read: compare by metadata
                }
            }
            out.put(f.getKey(), new Entry(e.kind(), e.size(), e.mode(), e.mtimeSeconds(), sha, kept));
        }
    }

    /** Lists those of {@code dirs} not listed yet, {@link #IN_FLIGHT} requests in flight together. */
    private static void prefetch(AgentClient agent, Map<String, List<FileEntry>> listings, List<String> dirs) throws IOException {
        List<String> todo = dirs.stream().filter(d -> !listings.containsKey(d)).distinct().toList();
        if (todo.size() == 1) {
            list(agent, listings, todo.getFirst());
            return;
        }
        for (int i = 0; i < todo.size(); i += IN_FLIGHT) {
            List<Future<List<FileEntry>>> answers = new ArrayList<>();
            for (String d : todo.subList(i, Math.min(todo.size(), i + IN_FLIGHT))) answers.add(ASYNC.submit(() -> list(agent, listings, d)));
            for (var a : answers) join(a);
        }
    }

    private static <T> Future<T> submit(java.util.concurrent.Callable<T> c) { return ASYNC.submit(c); }

    private static <T> T join(Future<T> f) throws IOException {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AgentException("interrupted while fingerprinting agent configuration", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) throw io;
            if (e.getCause() instanceof RuntimeException re) throw re;
            throw new IllegalStateException(e.getCause());
        }
    }

    private static FileEntry lookup(AgentClient agent, Map<String, List<FileEntry>> listings, String path) throws IOException {
        int slash = path.lastIndexOf('/');
        String name = path.substring(slash + 1);
        if (!present(listings, path.substring(0, slash))) return null; // its directory is not there: nothing to ask
        for (FileEntry e : list(agent, listings, path.substring(0, slash))) if (e.name().equals(name)) return e;
        return null;
    }

    private static List<FileEntry> list(AgentClient agent, Map<String, List<FileEntry>> listings, String dir) throws IOException {
        List<FileEntry> l = listings.get(dir);
        if (l != null) return l;
        try {
            l = agent.listFiles(dir);
        } catch (AgentException e) {
            if (e.errno() == 0) throw e;
            l = List.of(); // missing, not a directory, or unreadable: nothing guarded there
        }
        listings.put(dir, l);
        return l;
    }

    private static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
