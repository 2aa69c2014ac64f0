package dev.berth.fleet;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/**
 * What a node offers the fleet, as registered under its lease at {@code <prefix>nodes/<id>} and refreshed while it
 * lives: where it is, its labels, the isolation levels it can run, KVM or not, its QEMU version, CPU model, free memory
 * and vCPUs, the images it has and how many warm sandboxes wait per level. Placement reads these.
 *
 * @param updatedAtMs the node's wall clock at the write, for people; leases, not clocks, decide liveness
 */
public record NodeOffer(String id, String address, Map<String, String> labels, List<String> levels, boolean kvm,
                        @JsonProperty("qemu_version") String qemuVersion, @JsonProperty("cpu_model") String cpuModel,
                        @JsonProperty("free_memory_mib") long freeMemoryMiB, @JsonProperty("free_vcpus") int freeVcpus,
                        List<String> images, @JsonProperty("warm_pool") Map<String, Integer> warmPool,
                        @JsonProperty("live_workspaces") int liveWorkspaces, boolean cordoned,
                        @JsonProperty("updated_at_ms") long updatedAtMs) {

    public byte[] json() {
        return EtcdStore.JSON.writeValueAsBytes(this);
    }

    public static NodeOffer parse(byte[] json) {
        return EtcdStore.JSON.readValue(json, NodeOffer.class);
    }

    public NodeOffer withCordoned(boolean c) {
        return new NodeOffer(id, address, labels, levels, kvm, qemuVersion, cpuModel, freeMemoryMiB, freeVcpus, images, warmPool,
                liveWorkspaces, c, updatedAtMs);
    }
}
