package dev.berth.mcp.tools;

import dev.berth.engine.Engine;
import dev.berth.engine.Transfers;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ExportResult;
import dev.berth.engine.api.ImportRequest;
import dev.berth.engine.api.ImportResult;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.Tenant;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * open_workspace {from_directory} and export_changes (issue 29). Where a directory may come from and a branch may go
 * to: the roots the client declares (roots/list, asked on every call, so a client that changes its roots is heard)
 * plus the operator's {@code project_roots}. Both read or write the server's own disk, so they are offered only to a
 * local client (stdio, or a stdio client served through the home's owner); over HTTP they are refused with the
 * reason. Thread-safe.
 */
public final class TransferTools {
    private static final System.Logger LOG = System.getLogger("berth.mcp");
    private static final int MAX_ROOT_PAGES = 16;
    private final Engine engine;
    private final List<Path> projectRoots;
    private final boolean local;

    /** @param transport how calls arrive: only "stdio" and "home-socket" reach the server's disk */
    public TransferTools(Engine engine, List<Path> projectRoots, String transport) {
        this.engine = engine;
        this.projectRoots = List.copyOf(projectRoots);
        this.local = transport.equals("stdio") || transport.equals("home-socket");
    }

    /** The client's declared roots (file: URIs only) and the operator's, in that order. */
    List<Path> roots(McpSyncServerExchange ex) {
        List<Path> out = new ArrayList<>();
        McpSchema.ClientCapabilities caps = ex.getClientCapabilities();
        if (caps != null && caps.roots() != null) {
            try {
                String cursor = null;
                for (int page = 0; page < MAX_ROOT_PAGES; page++) {
                    McpSchema.ListRootsResult r = cursor == null ? ex.listRoots() : ex.listRoots(cursor);
                    for (McpSchema.Root root : r.roots()) {
                        try {
                            URI u = URI.create(root.uri());
                            if ("file".equals(u.getScheme())) out.add(Path.of(u));
                        } catch (IllegalArgumentException | java.nio.file.FileSystemNotFoundException bad) {
                            LOG.log(System.Logger.Level.WARNING, "ignoring the client's root '" + root.uri() + "': " + bad.getMessage());
                        }
                    }
                    cursor = r.nextCursor();
                    if (cursor == null) break;
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "the client declared roots but roots/list failed: " + e.getMessage());
            }
        }
        out.addAll(projectRoots);
        return out;
    }

    private void requireLocal(String what) throws EngineException {
        if (!local) {
            throw new EngineException(Kind.INVALID_ARGUMENT, what + " works with the server's own disk, so only over stdio (where the server runs beside "
                    + "you); over HTTP bring files in with write_file and take them out with export_changes (patch) or read_file");
        }
    }

    /** open_workspace with from_directory: check and scan first, then open a new workspace and copy into it. */
    Map<String, Object> open(McpSyncServerExchange ex, Tenant tenant, Args a, OpenRequest open) throws EngineException {
        requireLocal("from_directory");
        if (a.integer("count") != null || open.fromSnapshot() != null) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "from_directory opens one new workspace: give it without from_snapshot and count");
        }
        if (open.name() != null && exists(tenant, open.name())) {
            throw new EngineException(Kind.CONFLICT, "workspace '" + open.name() + "' already exists; from_directory needs a new workspace: "
                    + "give another name (or none, for an ephemeral one)");
        }
        Transfers.Prepared prepared = engine.transfers().prepare(new ImportRequest(Path.of(a.requiredString("from_directory")), roots(ex),
                a.bool("include_ignored", false)));
        OpenResult r = engine.open(tenant, open);
        String id = r.workspace().id();
        if (!r.created()) {
            throw new EngineException(Kind.CONFLICT, "workspace '" + open.name() + "' already exists; from_directory needs a new workspace: "
                    + "give another name (or none, for an ephemeral one)");
        }
        ImportResult imported;
        try {
            imported = engine.transfers().importInto(tenant, id, prepared);
        } catch (EngineException | RuntimeException e) {
            try {
                engine.closeWorkspace(tenant, id, true);
            } catch (EngineException closeFailed) {
                e.addSuppressed(closeFailed);
            }
            throw e;
        }
        Map<String, Object> m = Results.open(r);
        m.put("import", importMap(imported));
        m.put("note", r.note() + "; copied " + imported.files() + " entries (" + imported.bytes() + " bytes) from " + imported.source()
                + (imported.git() ? " as a git repository" : "") + " into /workspace");
        return m;
    }

    private boolean exists(Tenant tenant, String name) throws EngineException {
        try {
            engine.info(tenant, name);
            return true;
        } catch (EngineException e) {
            if (e.kind() == Kind.NOT_FOUND) return false;
            throw e;
        }
    }

    static Map<String, Object> importMap(ImportResult i) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("source", i.source());
        m.put("git", i.git());
        m.put("branch", i.branch());
        m.put("commit", i.commit());
        m.put("entries", i.files());
        m.put("bytes", i.bytes());
        m.put("sha256", i.sha256());
        m.put("skipped", i.skipped());
        m.put("skipped_count", i.skippedCount());
        m.put("notes", i.notes());
        m.put("ignored", i.ignored());
        m.put("millis", i.millis());
        return m;
    }

    Map<String, Object> export(McpSyncServerExchange ex, Tenant tenant, Args a) throws EngineException {
        String to = a.string("to");
        String ws = a.requiredString("workspace");
        List<Path> roots = List.of();
        if ("branch".equals(to)) {
            requireLocal("export_changes to: \"branch\"");
            roots = roots(ex);
        }
        ExportResult r = engine.transfers().export(tenant, ws, to, a.string("branch"), roots);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", ws);
        m.put("to", r.mode());
        m.put("changes", r.changes());
        m.put("change_count", r.changeCount());
        if (r.mode().equals("patch")) {
            m.put("patch", r.patch());
            m.put("patch_bytes", r.patchBytes());
            m.put("patch_file", r.patchFile());
            m.put("truncated", r.truncated());
        } else {
            m.put("branch", r.branch());
            m.put("commit", r.commit());
            m.put("repository", r.repository());
        }
        m.put("sha256", r.sha256());
        m.put("bytes", r.bytes());
        m.put("millis", r.millis());
        return m;
    }
}
