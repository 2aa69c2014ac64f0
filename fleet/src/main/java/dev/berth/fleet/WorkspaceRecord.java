package dev.berth.fleet;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * A workspace as the fleet knows it, at {@code <prefix>workspaces/<id>}: its tenant and name, the node that owns it and
 * the ownership epoch, its state, and what it holds of the tenant's quota. Written only by compare-and-swap on the
 * key's revision, so every change is made against the record it read: a node whose epoch has moved on cannot write.
 * Not attached to any lease: a workspace outlives its node's lease (node loss marks it {@code recovered}); issue 28
 * (state mobility) moves it by a claim that raises the epoch and names the new owner.
 *
 * @param state     "open", "parked", "closing", "recovered" (owner lost; see {@code recovered})
 * @param recovered what is known when the owner was lost ("node lost at 2026-12-06T06:00:00Z"), else null
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record WorkspaceRecord(int format, String id, String tenant, String name, String owner, long epoch, String state,
                              String recovered, String level, int vcpus, @JsonProperty("memory_mib") long memoryMiB,
                              @JsonProperty("disk_mib") long diskMiB, @JsonProperty("updated_at_ms") long updatedAtMs) {
    /** The version of this record's JSON; a reader refuses a newer one rather than guess at it. */
    public static final int FORMAT = 1;

    public byte[] json() { return EtcdStore.JSON.writeValueAsBytes(this); }

    public static WorkspaceRecord parse(byte[] json) {
        WorkspaceRecord r = EtcdStore.JSON.readValue(json, WorkspaceRecord.class);
        if (r.format() > FORMAT) throw new IllegalStateException("workspace record " + r.id() + " has format " + r.format() + "; this node reads up to " + FORMAT);
        return r;
    }

    public WorkspaceRecord with(String owner, long epoch, String state, String recovered, long at) {
        return new WorkspaceRecord(format, id, tenant, name, owner, epoch, state, recovered, level, vcpus, memoryMiB, diskMiB, at);
    }
}
