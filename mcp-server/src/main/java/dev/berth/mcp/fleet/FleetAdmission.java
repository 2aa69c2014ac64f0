package dev.berth.mcp.fleet;

import dev.berth.engine.api.Admission;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.Resources;
import dev.berth.fleet.FleetStoreException;
import dev.berth.fleet.TenantLedger;

/**
 * The engine's {@link Admission} on a fleet node: every new workspace reserves its name and its share of the tenant's
 * quota fleet-wide ({@link TenantLedger}, one etcd transaction) and is recorded as owned by this node at epoch 1; every
 * workspace gone for good gives them back. The tenant's quota is the operator config's (the same on every node).
 * Thread-safe.
 */
final class FleetAdmission implements Admission {
    private static final System.Logger LOG = System.getLogger("berth.fleet");
    private final TenantLedger ledger;
    private final String nodeId;

    FleetAdmission(TenantLedger ledger, String nodeId) {
        this.ledger = ledger;
        this.nodeId = nodeId;
    }

    @Override
    public void admit(Tenant tenant, String id, String name, String isolation, Resources r) throws EngineException {
        Tenant.Quota q = tenant.quota();
        var limit = new TenantLedger.Usage(q.workspaces(), q.vcpus(), q.memoryMiB(), q.diskMiB());
        try {
            ledger.reserve(tenant.id(), id, name, nodeId, isolation, r.vcpus(), r.memoryMiB(), r.diskMiB(), limit);
        } catch (TenantLedger.Refused e) {
            boolean nameTaken = e.getMessage().startsWith("workspace name");
            throw new EngineException(nameTaken ? EngineException.Kind.CONFLICT : EngineException.Kind.LIMIT,
                    e.getMessage() + (nameTaken ? "" : "; park or close a workspace on any node, or ask for smaller resources"));
        } catch (FleetStoreException e) {
            throw new EngineException(EngineException.Kind.UNAVAILABLE, "the fleet store cannot record this workspace, so it was not"
                    + " opened: " + e.getMessage());
        }
    }

    @Override
    public void released(String id) {
        try {
            ledger.release(id);
        } catch (RuntimeException e) {
            // the close stands; the tenant's fleet usage keeps this workspace until an operator (or the next release) clears it
            LOG.log(System.Logger.Level.ERROR, "could not release workspace " + id + " in the fleet store: " + e.getMessage());
        }
    }
}
