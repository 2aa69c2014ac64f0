package dev.berth.engine.spi;

/**
 * What an isolation driver promises. Reported in tool results, never overstated.
 *
 * @param isolation      the level name, e.g. {@code "namespace"} or {@code "microvm"}
 * @param boundary       one sentence on what separates guest code from the host
 * @param ownKernel      guest code runs on its own kernel (a kernel exploit does not reach the host kernel directly)
 * @param parkKeepsMemory park preserves running processes and memory, not only files
 * @param snapshotKeepsMemory snapshots (and forks from them) include memory
 * @param accelerator    e.g. {@code "kvm"}, {@code "tcg"}, or {@code "none"} for drivers without a VMM
 */
public record DriverCapabilities(
        String isolation,
        String boundary,
        boolean ownKernel,
        boolean parkKeepsMemory,
        boolean snapshotKeepsMemory,
        String accelerator) {
}
