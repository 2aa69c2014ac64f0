package dev.berth.engine.spi;

import java.util.List;

/**
 * Disk I/O limits of one sandbox, per direction; 0 means no limit. Enforced on the block device behind the
 * workspace's writable layer: QEMU's block throttling on the guest's data disk (microVM), the blkio / io cgroup on
 * the device backing the layer (namespace, gVisor). What a host cannot throttle (buffered writes under cgroup v1)
 * is reported as not enforced, per direction ({@link Limit}).
 *
 * @param readBps   bytes read per second
 * @param writeBps  bytes written per second
 * @param readIops  read operations per second
 * @param writeIops write operations per second
 */
public record IoLimits(long readBps, long writeBps, long readIops, long writeIops) {
    public static final IoLimits NONE = new IoLimits(0, 0, 0, 0);
    /** The {@link Limit} names, in the order of the components. */
    public static final List<String> NAMES = List.of("io_read_bps", "io_write_bps", "io_read_iops", "io_write_iops");

    /** Each direction not limited here (0) takes {@code other}'s value. */
    public IoLimits orElse(IoLimits other) {
        return new IoLimits(readBps > 0 ? readBps : other.readBps, writeBps > 0 ? writeBps : other.writeBps,
                readIops > 0 ? readIops : other.readIops, writeIops > 0 ? writeIops : other.writeIops);
    }

    public boolean any() { return readBps > 0 || writeBps > 0 || readIops > 0 || writeIops > 0; }

    /** The value of the limit called {@code name} (one of {@link #NAMES}). */
    public long value(String name) {
        return switch (name) {
            case "io_read_bps" -> readBps;
            case "io_write_bps" -> writeBps;
            case "io_read_iops" -> readIops;
            case "io_write_iops" -> writeIops;
            default -> throw new IllegalArgumentException(name);
        };
    }

    public static String unit(String name) { return name.endsWith("_bps") ? "bytes/s" : "ops/s"; }

    public static boolean read(String name) { return name.startsWith("io_read"); }
}
