package dev.berth.engine.spi;

/**
 * Resource limits for one sandbox. Drivers enforce what the host allows and report the rest as not enforced.
 *
 * @param vcpus     virtual CPUs (microVM) or CPU quota in cores (namespace, where cgroups allow)
 * @param memoryMiB memory limit
 * @param diskMiB   writable disk size
 * @param maxPids   process limit (namespace driver, where cgroups allow)
 * @param io        disk I/O limits ({@link IoLimits#NONE}: none; a record written before I/O limits reads as none)
 */
public record Resources(int vcpus, int memoryMiB, int diskMiB, int maxPids, IoLimits io) {
    public static final Resources DEFAULT = new Resources(1, 512, 4096, 1024);

    public Resources {
        if (io == null) io = IoLimits.NONE;
    }

    /** Without I/O limits. */
    public Resources(int vcpus, int memoryMiB, int diskMiB, int maxPids) {
        this(vcpus, memoryMiB, diskMiB, maxPids, IoLimits.NONE);
    }

    public Resources withIo(IoLimits limits) { return new Resources(vcpus, memoryMiB, diskMiB, maxPids, limits); }
}
