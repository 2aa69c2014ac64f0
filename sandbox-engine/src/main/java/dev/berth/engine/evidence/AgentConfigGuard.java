package dev.berth.engine.evidence;

import dev.berth.engine.api.AgentConfigChange;
import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.AgentException;
import dev.berth.engine.agent.FileEntry;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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

    /** One guarded file as it was: {@code content} kept (for revert) when small. */
    public record Entry(char kind, long size, int mode, long mtime, String sha256, byte[] content) {
        boolean sameAs(Entry o) {
            if (kind != o.kind || mode != o.mode || size != o.size) return false;
            if (sha256 != null && o.sha256 != null) return sha256.equals(o.sha256);
            return mtime == o.mtime;
        }
    }


    private AgentConfigGuard() {}

    public static Map<String, Entry> fingerprint(AgentClient agent) throws IOException {
        Map<String, List<FileEntry>> listings = new HashMap<>();
        Map<String, Entry> out = new LinkedHashMap<>();
        for (String root : ROOTS) {
            List<String> bases = new ArrayList<>(List.of(root));
            if (root.equals("/workspace")) {
                list(agent, listings, root).stream().filter(e -> e.kind() == 'd' && !e.name().startsWith("."))
                        .limit(MAX_SUBDIRS).forEach(e -> bases.add(root + "/" + e.name()));
            }
            for (String base : bases) {
                for (String g : GUARDED) {
                    String path = base + "/" + g;
                    FileEntry e = lookup(agent, listings, path);
                    if (e == null) continue;
                    if (e.kind() == 'd') walk(agent, listings, path, 0, out);
                    else add(agent, path, e, out);
                    if (out.size() >= MAX_FILES) return out;
                }
            }
        }
        return out;
    }

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
                             Map<String, Entry> out) throws IOException {
        if (depth > 4) return;
        for (FileEntry e : list(agent, listings, dir)) {
            if (out.size() >= MAX_FILES) return;
            String p = dir + "/" + e.name();
            if (e.kind() == 'd') walk(agent, listings, p, depth + 1, out);
            else add(agent, p, e, out);
        }
    }

    private static void add(AgentClient agent, String path, FileEntry e, Map<String, Entry> out) throws IOException {
        String sha = null;
        byte[] kept = null;
        if (e.kind() == 'f' && e.size() <= MAX_HASHED) {
            try {
                byte[] data = agent.readWholeFile(path, MAX_HASHED);
                sha = sha256(data);
                if (data.length <= MAX_KEPT) kept = data;
            } catch (AgentException ex) {
                // unreadable or vanished between list and read: compare by metadata
            }
        }
        out.put(path, new Entry(e.kind(), e.size(), e.mode(), e.mtimeSeconds(), sha, kept));
    }

    private static FileEntry lookup(AgentClient agent, Map<String, List<FileEntry>> listings, String path) throws IOException {
        int slash = path.lastIndexOf('/');
        String name = path.substring(slash + 1);
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
