package dev.berth.engine.spi;

/**
 * Resource limits for one sandbox. Drivers enforce what the host allows and report the rest as not enforced.
 *
 * @param vcpus     virtual CPUs (microVM) or CPU quota in cores (namespace, where cgroups allow)
 * @param memoryMiB memory limit
 * @param diskMiB   writable disk size
 * @param maxPids   process limit (namespace driver, where cgroups allow)
 */
public record Resources(int vcpus, int memoryMiB, int diskMiB, int maxPids) {
    public static final Resources DEFAULT = new Resources(1, 512, 4096, 1024);
}
