package dev.berth.engine.transfer;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ExportResult;
import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.AgentException;
import dev.berth.engine.agent.FileChunk;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The work out of a workspace: what changed since its import as a git patch, or its commits plus uncommitted work
 * as a new branch of the user's repository. Everything the workspace produces is hostile data: the patch is returned
 * as text (bounded), the bundle is size-capped, fetched with every object checked ({@code transfer.fsckObjects}),
 * without hooks, into a hidden ref, and only then made a branch that must not exist yet ({@code update-ref} with a
 * zero old value, so a branch created meanwhile is not overwritten either). The user's working tree, index, HEAD and
 * current branch are never touched: nothing checks out. Stateless.
 */
public final class ChangeExport {
    static final int PATCH_INLINE = dev.berth.schemas.Limits.intValue("export_changes.patch_inline_bytes_max");
    static final long BUNDLE_MAX = dev.berth.schemas.Limits.value("export_changes.bundle_bytes_max");
    private static final int CHANGES_LISTED = 1000;
    private static final long TIMEOUT_MS = 1_800_000;
    private static final Pattern COMMIT = Pattern.compile("[0-9a-f]{40}([0-9a-f]{24})?");
    private static final String ZERO = "0000000000000000000000000000000000000000";

    private ChangeExport() {}

    /** The patch of everything changed since the import. */
    public static ExportResult patch(AgentClient agent) throws EngineException {
        long t0 = System.nanoTime();
        GuestShell.Done d = run(agent, List.of("BERTH_EXPORT=patch"));
        byte[] out = d.stdout();
        int nl = indexOf(out, (byte) '\n');
        String first = nl < 0 ? "" : new String(out, 0, nl, StandardCharsets.UTF_8);
        String[] w = first.split(" ", 3);
        if (w.length != 3 || !w[0].equals("patch") || !w[1].matches("[0-9]{1,10}") || !w[2].startsWith("/")) {
            throw new EngineException(Kind.INTERNAL, "the workspace answered the export unexpectedly: " + clip(first));
        }
        int count = Integer.parseInt(w[1]);
        String file = w[2];
        // the listing is cut at the output bound (1 MiB); the count is the whole
        List<String> changes = nameStatus(java.util.Arrays.copyOfRange(out, nl + 1, out.length));
        try {
            FileChunk head = agent.readFile(file, 0, 0);
            long size = head.fileSize();
            boolean inline = size <= PATCH_INLINE;
            byte[] data = inline ? agent.readWholeFile(file, PATCH_INLINE) : null;
            if (data != null && data.length != size) inline = false;
            String sha = inline ? sha256(data) : null;
            String text = inline ? new String(data, StandardCharsets.UTF_8) : null;
            return new ExportResult("patch", changes.subList(0, Math.min(changes.size(), CHANGES_LISTED)), count, text, size, file,
                    !inline, null, null, null, sha, size, (System.nanoTime() - t0) / 1_000_000);
        } catch (AgentException e) {
            throw new EngineException(Kind.INTERNAL, "reading the patch inside the workspace failed: " + e.getMessage(), e);
        } catch (IOException e) {
            throw lost(e);
        }
    }

    /**
     * Puts the workspace's work on the new branch {@code branch} of the repository {@code rec} names: its commits
     * since the import plus its uncommitted work as one commit.
     */
    public static ExportResult branch(AgentClient agent, ImportRecord rec, String branch, String workspace) throws EngineException {
        long t0 = System.nanoTime();
        if (rec == null || rec.gitDir() == null) {
            throw new EngineException(Kind.ILLEGAL_STATE, "workspace '" + workspace + "' was not opened from a git repository, so there is no "
                    + "repository to put a branch in; export_changes without to gives the patch");
        }
        Path work = Path.of(rec.source());
        Path gitDir = Path.of(rec.gitDir());
        checkBranchName(work, gitDir, branch);
        String ref = "refs/heads/" + branch;
        try {
            if (HostGit.run(work, gitDir, List.of("rev-parse", "-q", "--verify", ref)).exit() == 0) {
                throw new EngineException(Kind.CONFLICT, "branch '" + branch + "' already exists in " + work + "; it is never overwritten: name another branch");
            }
        } catch (IOException e) {
            throw hostGit(e);
        }
        String message = "berth: work from workspace " + workspace;
        List<String> env = new ArrayList<>(List.of("BERTH_EXPORT=bundle", "BERTH_MESSAGE=" + message));
        if (rec.commit() != null) env.add("BERTH_BASE=" + rec.commit());
        GuestShell.Done d = run(agent, env);
        String[] words = d.out().split(" ");
        String commit;
        long bytes = 0;
        String sha = null;
        Path bundle = null;
        try {
            if (words.length == 2 && words[0].equals("same") && COMMIT.matcher(words[1]).matches()) {
                commit = words[1];
            } else if (words.length == 3 && words[0].equals("bundle") && words[1].startsWith("/") && COMMIT.matcher(words[2]).matches()) {
                commit = words[2];
                bundle = Files.createTempFile("berth-export", ".bundle");
                sha = fetchFile(agent, words[1], bundle);
                bytes = Files.size(bundle);
                quarantineCheck(work, gitDir, bundle);
                String tmpRef = "refs/berth-incoming/" + Long.toHexString(System.nanoTime());
                HostGit.check(work, gitDir, List.of("-c", "transfer.fsckObjects=true", "-c", "fetch.fsckObjects=true",
                        "fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-gc", "--quiet",
                        bundle.toString(), "refs/berth/export:" + tmpRef));
                try {
                    String got = HostGit.check(work, gitDir, List.of("rev-parse", "--verify", tmpRef + "^{commit}")).out();
                    if (!got.equals(commit)) throw new EngineException(Kind.INTERNAL, "the bundle carried " + got + ", not the announced " + commit);
                    create(work, gitDir, ref, commit, branch);
                } finally {
                    HostGit.run(work, gitDir, List.of("update-ref", "-d", tmpRef));
                }
            } else {
                throw new EngineException(Kind.INTERNAL, "the workspace answered the export unexpectedly: " + clip(d.out()));
            }
            if (bundle == null) create(work, gitDir, ref, commit, branch);
        } catch (IOException e) {
            throw hostGit(e);
        } finally {
            if (bundle != null) try { Files.deleteIfExists(bundle); } catch (IOException ignored) { /* a temp file */ }
        }
        List<String> changes = List.of();
        try {
            if (rec.commit() != null) {
                changes = nameStatus(HostGit.check(work, gitDir, List.of("diff", "--name-status", "-z", "-M", "--no-ext-diff", rec.commit(), commit)).stdout());
            }
        } catch (IOException e) {
            changes = List.of();
        }
        return new ExportResult("branch", changes.subList(0, Math.min(changes.size(), CHANGES_LISTED)), changes.size(), null, 0, null, false,
                branch, commit, work.toString(), sha, bytes, (System.nanoTime() - t0) / 1_000_000);
    }

    /**
     * Checks every object of the bundle strictly (index-pack --strict: a tree holding a .git entry, a malformed
     * commit, a broken link) in a quarantine object directory that borrows the repository's objects, before anything
     * reaches the repository. git 2.39's fetch from a bundle does not fsck, whatever transfer.fsckObjects says.
     */
    static void quarantineCheck(Path work, Path gitDir, Path bundle) throws IOException, EngineException {
        Path q = Files.createTempDirectory("berth-quarantine");
        Path pack = q.resolve("incoming.pack");
        try {
            long packStart = packOffset(bundle);
            try (var in = Files.newInputStream(bundle); var out = Files.newOutputStream(pack)) {
                in.skipNBytes(packStart);
                in.transferTo(out);
            }
            Files.createDirectories(q.resolve("objects/pack"));
            HostGit.Result r = HostGit.run(work, gitDir, List.of("index-pack", "--strict", "--fix-thin", "--stdin"),
                    java.util.Map.of("GIT_OBJECT_DIRECTORY", q.resolve("objects").toString(),
                            "GIT_ALTERNATE_OBJECT_DIRECTORIES", gitDir.resolve("objects").toAbsolutePath().toString()), pack);
            if (r.exit() != 0) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "the workspace's history failed the object check (git index-pack --strict), so nothing "
                        + "was put into " + work + ": " + clip(r.stderr()));
            }
        } finally {
            dev.berth.engine.spi.Trees.delete(q);
        }
    }

    /** Where the pack starts in a v2/v3 bundle: after the header lines and the blank line that ends them. */
    static long packOffset(Path bundle) throws IOException, EngineException {
        try (var in = new java.io.BufferedInputStream(Files.newInputStream(bundle))) {
            long at = 0;
            StringBuilder line = new StringBuilder();
            boolean first = true;
            for (int lines = 0; lines < 100_000; ) {
                int b = in.read();
                if (b < 0) break;
                at++;
                if (b != '\n') {
                    if (line.length() < 4096) line.append((char) b);
                    continue;
                }
                String l = line.toString();
                line.setLength(0);
                lines++;
                if (first && !l.equals("# v2 git bundle") && !l.startsWith("# v3 git bundle")) break;
                first = false;
                if (l.isEmpty()) return at;
            }
        }
        throw new EngineException(Kind.INVALID_ARGUMENT, "the workspace's changes bundle is not a git bundle; nothing was fetched");
    }

    private static void create(Path work, Path gitDir, String ref, String commit, String branch) throws IOException, EngineException {
        HostGit.Result r = HostGit.run(work, gitDir, List.of("update-ref", "-m", "berth export", ref, commit, ZERO));
        if (r.exit() != 0) {
            throw new EngineException(Kind.CONFLICT, "branch '" + branch + "' could not be created in " + work + " (it may have been created meanwhile; "
                    + "it is never overwritten): " + r.stderr());
        }
    }

    /** Refuses a branch name git would not accept (git check-ref-format --branch), and option-like names. */
    static void checkBranchName(Path work, Path gitDir, String branch) throws EngineException {
        if (branch.isEmpty() || branch.startsWith("-") || branch.length() > 200 || branch.startsWith("@")) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "branch '" + branch + "' is not a valid branch name");
        }
        try {
            HostGit.Result r = HostGit.run(work, gitDir, List.of("check-ref-format", "refs/heads/" + branch));
            if (r.exit() != 0) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "branch '" + branch + "' is not a valid branch name (git check-ref-format refused it)");
            }
        } catch (IOException e) {
            throw hostGit(e);
        }
    }

    private static GuestShell.Done run(AgentClient agent, List<String> env) throws EngineException {
        try {
            GuestShell.Done d = GuestShell.run(agent, GuestScripts.EXPORT, env, TIMEOUT_MS);
            if (d.exit() == 3 || d.exit() == 4) throw new EngineException(Kind.ILLEGAL_STATE, d.stderr());
            if (d.exit() != 0) throw new EngineException(Kind.INTERNAL, "collecting the changes inside the workspace failed (exit " + d.exit() + "): " + d.stderr());
            return d;
        } catch (IOException e) {
            throw lost(e);
        }
    }

    /** Copies a file out of the workspace through FILE_READ, refusing it past the bundle bound; returns its SHA-256. */
    private static String fetchFile(AgentClient agent, String path, Path to) throws IOException, EngineException {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        long at = 0;
        try (OutputStream out = Files.newOutputStream(to)) {
            while (true) {
                FileChunk c = agent.readFile(path, at, 512 * 1024);
                if (c.fileSize() > BUNDLE_MAX) {
                    throw new EngineException(Kind.LIMIT, "the workspace's changes bundle is " + c.fileSize() + " bytes; at most " + BUNDLE_MAX
                            + " are carried out (export_changes without to gives the patch)");
                }
                if (c.data().length == 0) break;
                out.write(c.data());
                sha.update(c.data());
                at += c.data().length;
                if (at >= c.fileSize()) break;
            }
        } catch (AgentException e) {
            throw new EngineException(Kind.INTERNAL, "reading the bundle inside the workspace failed: " + e.getMessage(), e);
        }
        return HexFormat.of().formatHex(sha.digest());
    }

    /** "STATUS path" or "R090 old -> new" per change, from {@code git diff --name-status -z} output. */
    static List<String> nameStatus(byte[] z) {
        List<String> f = HostGit.nulSeparated(z);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < f.size(); ) {
            String st = f.get(i++);
            if (st.startsWith("R") || st.startsWith("C")) {
                if (i + 2 > f.size()) break;
                out.add(st + " " + f.get(i) + " -> " + f.get(i + 1));
                i += 2;
            } else {
                if (i >= f.size()) break;
                out.add(st + " " + f.get(i++));
            }
        }
        return out;
    }

    private static int indexOf(byte[] b, byte x) {
        for (int i = 0; i < b.length; i++) if (b[i] == x) return i;
        return -1;
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String clip(String s) { return s.length() > 200 ? s.substring(0, 200) + "..." : s; }

    private static EngineException lost(IOException e) {
        return new EngineException(Kind.UNAVAILABLE, "lost contact with the workspace's agent: " + e.getMessage(), e);
    }

    private static EngineException hostGit(IOException e) {
        return new EngineException(Kind.INTERNAL, "git on the server's machine failed: " + e.getMessage(), e);
    }
}
