package dev.berth.engine;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ExportResult;
import dev.berth.engine.api.ImportRequest;
import dev.berth.engine.api.ImportResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.evidence.EngineEvidence;
import dev.berth.engine.transfer.ChangeExport;
import dev.berth.engine.transfer.DirectoryImport;
import dev.berth.engine.transfer.ImportRecord;
import dev.berth.engine.transfer.SourceTree;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceAction;
import dev.berth.engine.workspace.WorkspaceRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The user's project in and the agent's work out (issue 29), usable without MCP: a directory of the server's machine
 * copied into a new workspace ({@link #prepare} then {@link #importInto}), and what changed since as a patch or a new
 * branch of the user's repository ({@link #export}). Both are recorded in the tenant's audit chain with size and
 * digest. Where imports may come from is the caller's to say (the MCP client's roots, the operator's project roots);
 * a branch goes only into the repository the workspace (or the snapshot it was forked from) was imported from, as the
 * server recorded it, and only while that repository is still inside the roots. Thread-safe.
 */
public final class Transfers {
    private final Engine engine;
    private final WorkspaceRegistry registry;
    private final EngineEvidence evidence;
    private final Store store;

    Transfers(Engine engine, WorkspaceRegistry registry, EngineEvidence evidence, Store store) {
        this.engine = engine;
        this.registry = registry;
        this.evidence = evidence;
        this.store = store;
    }

    /** A directory checked against the roots and scanned, ready to copy; nothing is opened or copied yet. */
    public static final class Prepared {
        final SourceTree tree;

        private Prepared(SourceTree tree) { this.tree = tree; }

        /** Bytes the copy needs on the workspace's disk (about). */
        public long diskBytes() { return DirectoryImport.diskBytes(tree); }
    }

    /** Checks {@code req} against its roots and decides what to carry: refusals come before any workspace is opened. */
    public Prepared prepare(ImportRequest req) throws EngineException {
        Path real = SourceTree.checkInside(req.directory(), req.roots());
        return new Prepared(SourceTree.scan(real, req.includeIgnored()));
    }

    /**
     * Copies a prepared directory into the workspace {@code ref}, which must not have had an import yet; refused
     * before copying when it is larger than the workspace's disk.
     */
    public ImportResult importInto(Tenant tenant, String ref, Prepared p) throws EngineException {
        Workspace target = registry.resolve(tenant, ref);
        if (Files.exists(target.dir.resolve(ImportRecord.FILE))) {
            throw new EngineException(Kind.ILLEGAL_STATE, "workspace '" + target.label() + "' already has an imported directory; open a new workspace to import another");
        }
        DirectoryImport.checkFits(p.tree, (long) target.resources.diskMiB() << 20, target.label());
        return engine.withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> {
            ImportResult r = DirectoryImport.copy(sandbox.agent(), p.tree);
            try {
                DirectoryImport.record(p.tree, r, Instant.now()).save(ws.dir);
            } catch (IOException e) {
                throw new EngineException(Kind.INTERNAL, "the files arrived but the import record could not be written: " + e.getMessage(), e);
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("source", r.source());
            m.put("git", r.git());
            if (r.commit() != null) m.put("commit", r.commit());
            m.put("entries", r.files());
            m.put("bytes", r.bytes());
            m.put("sha256", r.sha256());
            m.put("skipped", r.skippedCount());
            evidence.transfer(ws, "import", m);
            return r;
        });
    }

    /**
     * What changed in workspace {@code ref} since its import: {@code to} null or "patch" gives a patch; "branch" puts
     * the work on the new branch {@code branch} (default {@code berth/<workspace name>}) of the repository it was
     * imported from, which must still lie inside {@code roots}.
     */
    public ExportResult export(Tenant tenant, String ref, String to, String branch, List<Path> roots) throws EngineException {
        if (to == null || to.equals("patch")) {
            if (branch != null) throw new EngineException(Kind.INVALID_ARGUMENT, "branch goes with to: \"branch\"");
            return engine.withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> {
                ExportResult r = ChangeExport.patch(sandbox.agent());
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("to", "patch");
                m.put("changes", r.changeCount());
                m.put("bytes", r.patchBytes());
                if (r.sha256() != null) m.put("sha256", r.sha256());
                evidence.transfer(ws, "export", m);
                return r;
            });
        }
        if (!to.equals("branch")) throw new EngineException(Kind.INVALID_ARGUMENT, "to '" + to + "' is not one of patch, branch");
        Workspace w = registry.resolve(tenant, ref);
        ImportRecord rec = importRecord(w);
        if (rec == null) {
            throw new EngineException(Kind.ILLEGAL_STATE, "workspace '" + w.label() + "' (and the snapshot it came from) was not opened from a directory, "
                    + "so there is no repository to put a branch in");
        }
        SourceTree.checkInside(Path.of(rec.source()), roots); // still allowed now, not only at the import
        String name = branch != null ? branch : "berth/" + w.label();
        return engine.withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> {
            ExportResult r = ChangeExport.branch(sandbox.agent(), rec, name, ws.label());
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("to", "branch");
            m.put("repository", r.repository());
            m.put("branch", r.branch());
            m.put("commit", r.commit());
            m.put("changes", r.changeCount());
            m.put("bytes", r.bytes());
            if (r.sha256() != null) m.put("sha256", r.sha256());
            evidence.transfer(ws, "export", m);
            return r;
        });
    }

    /** The workspace's import record, or the one of the snapshot it was forked from (recursively through its record). */
    private ImportRecord importRecord(Workspace w) throws EngineException {
        try {
            ImportRecord r = ImportRecord.load(w.dir);
            if (r == null && w.fromSnapshot != null) r = ImportRecord.load(store.snapshotDir(w.fromSnapshot));
            return r;
        } catch (IOException e) {
            throw new EngineException(Kind.INTERNAL, "reading where workspace '" + w.label() + "' came from failed: " + e.getMessage(), e);
        }
    }
}
