package dev.berth.engine.api;

import dev.berth.engine.spi.Resources;

/**
 * A decision outside this engine on every new workspace, and word when one is gone for good: the seam through which a
 * fleet (issue 27, mcp-server's fleet wiring on the fleet module) keeps a tenant's names and quotas across nodes. The
 * engine's own checks (names, quotas, the server-wide limit) run first; then {@link #admit}, whose refusal undoes the
 * open and reaches the caller as is. {@link #NONE} (a single node) admits everything.
 *
 * <p>Implementations are called from many threads and must be thread-safe; {@link #released} must not throw (a close
 * never fails for the fleet's sake: what cannot be released is logged by the implementation).
 */
public interface Admission {
    Admission NONE = new Admission() {
        @Override
        public void admit(Tenant tenant, String id, String name, String isolation, Resources resources) { }

        @Override
        public void released(String id) { }
    };

    /** Admits workspace {@code id} (named {@code name}, or null) or throws LIMIT/CONFLICT/UNAVAILABLE with the reason. */
    void admit(Tenant tenant, String id, String name, String isolation, Resources resources) throws EngineException;

    /** Workspace {@code id} is closed, deleted, or its open failed; called once per workspace this engine removes. */
    void released(String id);
}
