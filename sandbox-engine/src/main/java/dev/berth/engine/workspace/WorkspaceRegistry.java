package dev.berth.engine.workspace;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.spi.Resources;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The live workspaces of every tenant, by id, and the rules that span them: tenant visibility (another tenant's
 * workspace is "not found", exactly like a missing one), unique names per tenant, the server-wide limit and the
 * tenant quotas. Thread-safe; decisions that must not race (a name taken twice, a quota overrun by two opens) are
 * made under {@link #namesLock}.
 */
public final class WorkspaceRegistry {
    static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
    /** The shape of the ids Berth hands out: a name of this shape could be mistaken for another workspace's id. */
    static final Pattern ID_SHAPE = Pattern.compile("(?i)(ws|snap|run|p)-[0-9a-f]+");

    private final Map<String, Workspace> byId = new ConcurrentHashMap<>();
    /** Held while a name is checked and claimed, or a snapshot name checked, or dependents of a snapshot counted. */
    public final Object namesLock = new Object();

    private volatile java.util.function.Consumer<Workspace> onAdd = ws -> { };

    /** Called with every workspace added (opened or recovered), before anyone else can see it. */
    public void onAdd(java.util.function.Consumer<Workspace> listener) { this.onAdd = listener; }

    public void add(Workspace ws) {
        onAdd.accept(ws);
        byId.put(ws.id, ws);
    }

    /** Removes a workspace for good (closed, deleted, or its open failed) and tells the admission. */
    public void remove(Workspace ws) {
        if (byId.remove(ws.id, ws)) admission.released(ws.id);
    }

    private volatile dev.berth.engine.api.Admission admission = dev.berth.engine.api.Admission.NONE;

    /** The decision outside the engine on new workspaces (a fleet's names and quotas); none by default. */
    public void setAdmission(dev.berth.engine.api.Admission a) { this.admission = a; }

    public dev.berth.engine.api.Admission admission() { return admission; }

    public Collection<Workspace> all() { return List.copyOf(byId.values()); }

    /** The workspace {@code ref} (id or name) names for {@code tenant}, or NOT_FOUND. */
    public Workspace resolve(Tenant tenant, String ref) throws EngineException {
        if (ref == null || ref.isBlank()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "workspace is required: give the id or the name that open_workspace returned");
        }
        Workspace ws = byId.get(ref);
        if (ws != null && ws.tenant.equals(tenant.id())) return ws;
        return byName(tenant, ref).orElseThrow(() -> new EngineException(Kind.NOT_FOUND, "no workspace '" + ref
                + "'; list_workspaces shows the open ones, open_workspace creates one"));
    }

    public Optional<Workspace> byName(Tenant tenant, String name) {
        return byId.values().stream()
                .filter(w -> name.equals(w.name) && w.tenant.equals(tenant.id()) && w.state() != WorkspaceState.CLOSED).findFirst();
    }

    public List<Workspace> of(Tenant tenant) {
        return byId.values().stream().filter(w -> w.tenant.equals(tenant.id())).toList();
    }

    public long live() {
        return byId.values().stream().filter(w -> w.state() != WorkspaceState.CLOSED).count();
    }

    /** Refuses a name that is not allowed, or that could be mistaken for an id. */
    public static void checkName(String what, String name) throws EngineException {
        if (name == null) return;
        if (!NAME.matcher(name).matches()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, what + " name '" + name
                    + "' is not allowed: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit");
        }
        if (ID_SHAPE.matcher(name).matches()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, what + " name '" + name + "' has the shape of a Berth id ("
                    + "ws-, snap-, run-, p- followed by hex digits), so it could name another " + what + "; pick another name");
        }
    }

    /** Refuses a new workspace that would take the tenant over one of its quotas, naming the quota and the numbers. */
    public void checkQuota(Tenant tenant, Resources r, boolean newWorkspace) throws EngineException {
        checkQuota(tenant, r, newWorkspace, 1);
    }

    /** As {@link #checkQuota(Tenant, Resources, boolean)} for {@code n} workspaces of resources {@code r} at once. */
    public void checkQuota(Tenant tenant, Resources one, boolean newWorkspace, int n) throws EngineException {
        Resources r = new Resources(one.vcpus() * n, one.memoryMiB() * n, (int) Math.min(Integer.MAX_VALUE, (long) one.diskMiB() * n), one.maxPids());
        Tenant.Quota q = tenant.quota();
        List<Workspace> mine = of(tenant).stream().filter(w -> w.state() != WorkspaceState.CLOSED).toList();
        List<Workspace> running = mine.stream()
                .filter(w -> w.state() != WorkspaceState.PARKED && w.state() != WorkspaceState.DAMAGED).toList();
        int vcpus = running.stream().mapToInt(w -> w.resources.vcpus()).sum();
        int mem = running.stream().mapToInt(w -> w.resources.memoryMiB()).sum();
        long disk = mine.stream().mapToLong(w -> w.resources.diskMiB()).sum();
        String over = null;
        if (newWorkspace && mine.size() + n > q.workspaces()) over = "workspaces: " + mine.size() + " open" + (n > 1 ? " + " + n + " asked" : "") + ", limit " + q.workspaces();
        else if (vcpus + r.vcpus() > q.vcpus()) over = "vcpus: " + vcpus + " in use + " + r.vcpus() + " asked, limit " + q.vcpus();
        else if (mem + r.memoryMiB() > q.memoryMiB()) over = "memory: " + mem + " MiB in use + " + r.memoryMiB() + " asked, limit " + q.memoryMiB() + " MiB";
        else if (newWorkspace && disk + r.diskMiB() > q.diskMiB()) over = "disk: " + disk + " MiB allotted + " + r.diskMiB() + " asked, limit " + q.diskMiB() + " MiB";
        if (over != null) {
            throw new EngineException(Kind.LIMIT, "quota of tenant '" + tenant.id() + "' exceeded (" + over
                    + "); park or close a workspace, or ask for smaller resources");
        }
    }
}
