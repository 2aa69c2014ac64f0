package dev.berth.engine.microvm;

import dev.berth.engine.host.BlockIoLimits;
import dev.berth.engine.spi.IoLimits;
import dev.berth.engine.spi.Limit;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * A microVM's disk I/O limits: QEMU's own block throttling ({@code block_set_io_throttle}) on the guest's disks, the
 * writable data disk and the read-only base disk in one throttle group, so they share one budget. Set over QMP after
 * every start (fresh, warm base, resume, fork, adoption: throttling is not part of a saved state), then read back
 * with {@code query-block} for the report. It holds whatever the host's cgroups allow, since QEMU itself delays the
 * requests. Every guest read and write is held to it when it reaches the virtual disk: the guest's page cache
 * absorbs a burst of buffered writes up to its dirty limit, then they drain at the limit.
 */
final class DiskThrottle {
    static final String GROUP = "berth-io";

    private DiskThrottle() {}

    /**
     * Sets {@code io} on the machine's disks (all zero: no throttling) and returns the four limits as QEMU holds them.
     * A jailed QEMU is also put in a cgroup of its own that throttles its own I/O to the host disk holding
     * the workspace's state directory {@code stateDir} (see {@link #hostGroup}).
     */
    static List<Limit> apply(QemuMachine m, Path stateDir, IoLimits io) {
        try {
            set(m, "data", io);
        } catch (IOException e) {
            return Limit.ioNotEnforced(io, "QEMU refused block throttling on the guest's data disk: " + e.getMessage());
        }
        String base;
        try {
            set(m, "base", io);
            base = "; the read-only base disk shares the budget (throttle group " + GROUP + ")";
        } catch (IOException e) {
            // a machine booted from its initramfs alone has no base disk: nothing else to throttle
            base = e.getMessage() != null && e.getMessage().contains("DeviceNotFound") ? ""
                    : "; the read-only base disk is not throttled: " + e.getMessage();
        }
        return readBack(m, io, base + hostGroup(m, stateDir, io));
    }

    /**
     * Defence in depth for a guest that escaped into QEMU, which QEMU's own throttling would then no longer bind: the
     * jailed QEMU process joins a cgroup v1 blkio group (blkio/berth-vmm/KEY) with the same limits on the host device
     * holding its state directory (its data disk and RAM file). That holds its reads and its direct or fsync'ed writes; the host page cache's writeback
     * is charged to the root cgroup under v1 and escapes it. Returns the clause for the limits' "how", or "" when
     * nothing is asked or QEMU runs unjailed.
     */
    static String hostGroup(QemuMachine m, Path stateDir, IoLimits io) {
        if (!io.any() || !m.jailed) return "";
        Path blkio = VmmJail.CGROUP.resolve("blkio");
        if (!Files.isDirectory(blkio)) return "; its QEMU process is in no host I/O cgroup (no cgroup v1 blkio controller here)";
        String device = BlockIoLimits.deviceOfFile(stateDir);
        if (device == null) return "; its QEMU process is in no host I/O cgroup (the disk's host filesystem has no block device of its own)";
        try {
            Path group = blkio.resolve("berth-vmm").resolve(VmmJail.key(m.runtimeDir));
            Files.createDirectories(group);
            List<Limit> held = BlockIoLimits.apply(group, true, device, io);
            Files.writeString(group.resolve("cgroup.procs"), Long.toString(m.process.pid()));
            boolean all = held.stream().allMatch(l -> l.enforced() || l.value() == 0);
            return all ? "; and its QEMU process is in a cgroup v1 blkio group with the same limits on host device " + device
                    + " (holds its reads and direct or fsync'ed writes there, should a guest escape into QEMU)"
                    : "; its QEMU's host blkio group did not take every limit: " + held;
        } catch (IOException | RuntimeException e) {
            return "; its QEMU process could not be put in a host blkio group: " + e.getMessage();
        }
    }

    private static void set(QemuMachine m, String drive, IoLimits io) throws IOException {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("device", drive);
        a.put("bps", 0);
        a.put("bps_rd", io.readBps());
        a.put("bps_wr", io.writeBps());
        a.put("iops", 0);
        a.put("iops_rd", io.readIops());
        a.put("iops_wr", io.writeIops());
        if (io.any()) a.put("group", GROUP);
        m.qmp.execute("block_set_io_throttle", a, Duration.ofSeconds(10));
    }

    private static List<Limit> readBack(QemuMachine m, IoLimits io, String base) {
        JsonNode inserted = null;
        try {
            JsonNode blocks = m.qmp.execute("query-block");
            for (JsonNode b : blocks) if (b.path("device").asString("").equals("data")) inserted = b.path("inserted");
        } catch (IOException e) {
            return Limit.ioNotEnforced(io, "could not read QEMU's block throttling back: " + e.getMessage());
        }
        JsonNode in = inserted;
        return Limit.io(io, n -> {
            String key = switch (n) {
                case "io_read_bps" -> "bps_rd";
                case "io_write_bps" -> "bps_wr";
                case "io_read_iops" -> "iops_rd";
                default -> "iops_wr";
            };
            long v = io.value(n);
            return in != null && in.path(key).asLong(-1) == v
                    ? Limit.enforced(n, v, IoLimits.unit(n), "QEMU block throttling (" + key + ") on the guest's data disk; guest I/O,"
                            + " buffered or direct, is held to it when it reaches the virtual disk" + base)
                    : Limit.notEnforced(n, v, IoLimits.unit(n), "QEMU did not take block throttling " + key + "=" + v + " on the guest's data disk");
        });
    }
}
