package dev.berth.engine.transfer;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ImportResult;
import dev.berth.engine.agent.AgentClient;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Copies a scanned {@link SourceTree} into a workspace's {@code /workspace}: one tar stream written on the server's
 * side and unpacked by {@code tar} inside the workspace, carried as STDIN frames of one EXEC over the agent's channel
 * (no JSON, no base64, no per-file round trip), then the state as imported recorded inside the workspace as the git
 * ref {@code refs/berth/import} (what {@code export_changes} compares against). A directory that is not a repository
 * becomes one there, with the import as its first commit. Stateless.
 */
public final class DirectoryImport {
    /** Bytes a file takes on the workspace's disk at least (one block), to decide "too large" before copying. */
    private static final long BLOCK = 4096;
    private static final long UNPACK_TIMEOUT_MS = 3_600_000;

    private DirectoryImport() {}

    /** Bytes the tree needs on a disk of 4 KiB blocks: its content rounded up per file, and one block per entry. */
    public static long diskBytes(SourceTree t) {
        long n = 0;
        for (SourceTree.Entry e : t.entries) n += Math.max(BLOCK, (e.size() + BLOCK - 1) / BLOCK * BLOCK);
        return n;
    }

    /** Refuses, before anything is copied, a tree larger than the workspace's disk, with both sizes. */
    public static void checkFits(SourceTree t, long diskBytes, String workspace) throws EngineException {
        long need = diskBytes(t);
        if (need > diskBytes) {
            throw new EngineException(Kind.LIMIT, "'" + t.root + "' needs about " + mib(need) + " MiB (" + t.entries.size() + " entries, "
                    + t.bytes + " bytes of content) but workspace '" + workspace + "' has a " + mib(diskBytes)
                    + " MiB disk; nothing was copied. Open it with a larger resources.disk_mib, or import a smaller directory");
        }
    }

    private static long mib(long b) { return (b + (1 << 20) - 1) >> 20; }

    /** Streams the tree into the workspace and records the import baseline. */
    public static ImportResult copy(AgentClient agent, SourceTree t) throws EngineException {
        long t0 = System.nanoTime();
        TarWriter tar;
        try {
            GuestShell sh = GuestShell.withInput(agent, "mkdir -p /workspace && cd /workspace && exec tar -x -o -f -", List.of(), UNPACK_TIMEOUT_MS);
            try {
                OutputStream in = sh.stdin();
                tar = new TarWriter(in);
                tar.write(t);
                in.flush();
            } catch (IOException e) {
                sh.kill();
                throw new EngineException(Kind.UNAVAILABLE, "copying '" + t.root + "' into the workspace failed: " + e.getMessage(), e);
            }
            GuestShell.Done d = sh.finish(UNPACK_TIMEOUT_MS);
            if (d.exit() != 0) {
                throw new EngineException(d.stderr().contains("No space") ? Kind.LIMIT : Kind.INTERNAL,
                        "unpacking '" + t.root + "' inside the workspace failed (tar exit " + d.exit() + "): " + d.stderr());
            }
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "lost contact with the workspace's agent while copying: " + e.getMessage(), e);
        }
        List<String> notes = new ArrayList<>(t.notes);
        try {
            GuestShell.Done b = GuestShell.run(agent, GuestScripts.BASELINE, List.of("BERTH_MODE=" + (t.gitDir != null ? "repo" : "init")), UNPACK_TIMEOUT_MS);
            if (b.out().equals("nogit")) {
                notes.add("git is not installed in this workspace's image: the files arrived, but export_changes needs git there");
            } else if (b.exit() != 0 || !b.out().startsWith("ok ")) {
                notes.add("recording the imported state failed (export_changes cannot compare against it): " + b.stderr());
            } else if (t.gitDir == null) {
                notes.add("not a git repository: /workspace is now one, with the import as its first commit");
            }
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "lost contact with the workspace's agent after copying: " + e.getMessage(), e);
        }
        long files = t.entries.size();
        return new ImportResult(t.root.toString(), t.gitDir != null, t.branch, t.commit, files, t.bytes, tar.sha256(),
                t.skipped, t.skippedCount, notes, t.ignored, (System.nanoTime() - t0) / 1_000_000);
    }

    /** The record kept on the server's side for exports (and forks) of this workspace. */
    public static ImportRecord record(SourceTree t, ImportResult r, java.time.Instant at) {
        return new ImportRecord(t.root.toString(), t.gitDir == null ? null : t.gitDir.toString(), t.branch, t.commit,
                r.sha256(), r.bytes(), at.toString());
    }
}
