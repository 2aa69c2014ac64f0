package dev.berth.engine.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.host.DiskImage;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.host.HostCommand;
import dev.berth.engine.spi.Trees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a killed server leaves mounted under {@code <home>/run} is unmounted by the next start, and a busy unmount
 * names the process holding it. Needs root (mount); tmpfs stands in for a workspace's disk.
 */
class LeftoverMountsTest {
    @Test
    void unmountLeftovers_nestedMountsUnderARuntimeDir_allUnmounted() throws Exception {
        assumeTrue(HostIdentity.isRoot(), "mounting needs root");
        Path rt = Files.createTempDirectory("berth-leftover-").resolve("ws-test");
        Path disk = Files.createDirectories(rt.resolve("disk"));
        try {
            HostCommand.exec("mount", "-t", "tmpfs", "tmpfs", disk.toString());
            Path inner = Files.createDirectories(disk.resolve("inner"));
            HostCommand.exec("mount", "-t", "tmpfs", "tmpfs", inner.toString());
            assertEquals(List.of(inner, disk), DiskImage.mountsUnder(rt));
            assertTrue(Recovery.unmountLeftovers(rt));
            assertEquals(List.of(), DiskImage.mountsUnder(rt));
        } finally {
            for (Path m : DiskImage.mountsUnder(rt)) HostCommand.exec("umount", "-l", m.toString());
            Trees.delete(rt.getParent());
        }
    }

    @Test
    void unmount_busyFilesystem_namesTheHolderAndDetaches() throws Exception {
        assumeTrue(HostIdentity.isRoot(), "mounting needs root");
        Path dir = Files.createTempDirectory("berth-busy-");
        Path disk = Files.createDirectories(dir.resolve("disk"));
        Process holder = null;
        try {
            HostCommand.exec("mount", "-t", "tmpfs", "tmpfs", disk.toString());
            holder = new ProcessBuilder("sleep", "60").directory(disk.toFile()).start();
            String held = DiskImage.holders(disk);
            assertTrue(held.contains(holder.pid() + " (sleep, cwd)"), held);
            DiskImage.unmount(disk); // retried, then detached lazily and reported
            assertFalse(DiskImage.isMounted(disk));
        } finally {
            if (holder != null) {
                holder.destroyForcibly();
                holder.waitFor(10, TimeUnit.SECONDS);
            }
            if (DiskImage.isMounted(disk)) HostCommand.exec("umount", "-l", disk.toString());
            Trees.delete(dir);
        }
    }
}
