package dev.berth.engine.spi;

import java.util.List;

/**
 * One resource limit of a sandbox and whether the host really enforces it. Reported in tool results and by
 * {@code berth doctor}; a limit the driver could not set is reported with {@code enforced = false} and the reason,
 * never claimed.
 *
 * @param name     {@code cpu}, {@code memory}, {@code pids}, {@code disk}, or one I/O direction:
 *                 {@code io_read_bps}, {@code io_write_bps}, {@code io_read_iops}, {@code io_write_iops}
 * @param value    the limit asked for, in {@code unit}; 0 when nothing was asked (io: no limit)
 * @param unit     {@code vcpus}, {@code MiB}, {@code processes}, {@code bytes/s} or {@code ops/s}
 * @param enforced whether exceeding it is actually stopped (by a cgroup, a size-limited filesystem, the VM)
 * @param how      the mechanism, or why it is not enforced
 */
public record Limit(String name, long value, String unit, boolean enforced, String how) {

    public static final List<String> NAMES = List.of("cpu", "memory", "pids", "disk", "io_read_bps", "io_write_bps",
            "io_read_iops", "io_write_iops");

    /** Why an I/O limit of 0 is not enforced: nothing was asked. */
    public static final String IO_NOT_ASKED = "no limit asked (0: unlimited)";

    public static Limit enforced(String name, long value, String unit, String how) {
        return new Limit(name, value, unit, true, how);
    }

    public static Limit notEnforced(String name, long value, String unit, String why) {
        return new Limit(name, value, unit, false, why);
    }

    /** The limits of {@code r} with none of them enforced, each with the same reason. */
    public static List<Limit> noneEnforced(Resources r, String why) {
        List<Limit> out = new java.util.ArrayList<>(List.of(notEnforced("cpu", r.vcpus(), "vcpus", why),
                notEnforced("memory", r.memoryMiB(), "MiB", why), notEnforced("pids", r.maxPids(), "processes", why),
                notEnforced("disk", r.diskMiB(), "MiB", why)));
        out.addAll(ioNotEnforced(r.io(), why));
        return List.copyOf(out);
    }

    /**
     * The four I/O limits of {@code io}, in {@link IoLimits#NAMES} order: a direction with no limit asked is reported
     * as not enforced ({@link #IO_NOT_ASKED}); the others as {@code asked} says for that name.
     */
    public static List<Limit> io(IoLimits io, java.util.function.Function<String, Limit> asked) {
        return IoLimits.NAMES.stream().map(n -> io.value(n) == 0 ? notEnforced(n, 0, IoLimits.unit(n), IO_NOT_ASKED) : asked.apply(n)).toList();
    }

    /** The I/O limits of {@code io}, none enforced, each asked one with {@code why}. */
    public static List<Limit> ioNotEnforced(IoLimits io, String why) {
        return io(io, n -> notEnforced(n, io.value(n), IoLimits.unit(n), why));
    }
}
