package dev.berth.engine.image;

import dev.berth.engine.host.HostCommand;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The microVM form of an image: its root tree as an ext4 filesystem made by {@code mkfs.ext4 -d} (owners, modes and
 * links copied from the tree, no mount, no loop device), opened read-only by the guest as the lower layer of its
 * root overlay. Stateless.
 */
final class BaseDisk {
    private BaseDisk() {}

    /** Builds {@code out} from {@code tree}; sized from the tree's bytes with room for metadata, grown once if short. */
    static void build(Path tree, Path out, long treeBytes) throws IOException {
        long entries;
        try (var s = Files.walk(tree)) {
            entries = s.count();
        }
        long mib = (treeBytes * 12 / 10 + entries * 4096) / (1 << 20) + 16;
        try {
            mkfs(tree, out, mib, entries);
        } catch (IOException e) {
            Files.deleteIfExists(out);
            mkfs(tree, out, mib * 2, entries); // mkfs -d ran out of space: metadata took more than estimated
        }
    }

    private static void mkfs(Path tree, Path out, long mib, long entries) throws IOException {
        HostCommand.exec("mkfs.ext4", "-q", "-F", "-L", "berth-image", "-m", "0", "-N", String.valueOf(Math.max(1024, entries * 2)),
                "-E", "root_owner=0:0", "-d", tree.toString(), out.toString(), mib + "M");
    }

    /** Bytes the file occupies (its allocated blocks: the filesystem is sparse where it is empty); -1 if unknown. */
    static long allocated(Path f) {
        try {
            dev.berth.engine.host.HostCommand.Result r = dev.berth.engine.host.HostCommand.run(
                    List.of("du", "-B1", f.toString()), java.time.Duration.ofSeconds(30));
            if (r.exit() != 0) return -1;
            return Long.parseLong(r.output().strip().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
