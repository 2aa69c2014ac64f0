package dev.berth.engine.spi;

import java.util.List;

/**
 * One resource limit of a sandbox and whether the host really enforces it. Reported in tool results and by
 * {@code berth doctor}; a limit the driver could not set is reported with {@code enforced = false} and the reason,
 * never claimed.
 *
 * @param name     {@code cpu}, {@code memory}, {@code pids}, {@code disk} or {@code io}
 * @param value    the limit asked for, in {@code unit}; 0 when nothing was asked (io)
 * @param unit     {@code vcpus}, {@code MiB} or {@code processes}
 * @param enforced whether exceeding it is actually stopped (by a cgroup, a size-limited filesystem, the VM)
 * @param how      the mechanism, or why it is not enforced
 */
public record Limit(String name, long value, String unit, boolean enforced, String how) {

    public static final List<String> NAMES = List.of("cpu", "memory", "pids", "disk", "io");

    public static Limit enforced(String name, long value, String unit, String how) {
        return new Limit(name, value, unit, true, how);
    }

    public static Limit notEnforced(String name, long value, String unit, String why) {
        return new Limit(name, value, unit, false, why);
    }

    /** The limits of {@code r} with none of them enforced, each with the same reason. */
    public static List<Limit> noneEnforced(Resources r, String why) {
        return List.of(notEnforced("cpu", r.vcpus(), "vcpus", why), notEnforced("memory", r.memoryMiB(), "MiB", why),
                notEnforced("pids", r.maxPids(), "processes", why), notEnforced("disk", r.diskMiB(), "MiB", why),
                notEnforced("io", 0, "MiB/s", why));
    }
}
