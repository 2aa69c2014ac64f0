package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The KVM probe's decisions, with stand-in QEMUs (shell scripts) for the three ways a /dev/kvm behaves: it boots the
 * kernel to its panic, QEMU aborts, or the vCPU spins forever (a PVM host: KVM without virtualisation extensions).
 * Whether this machine's KVM really boots a guest is {@code MicrovmDriverTest}'s probe test.
 */
class AccelTest {

    @TempDir Path dir;

    private String qemu(String body) throws Exception {
        Path q = dir.resolve("qemu-" + Math.abs(body.hashCode()));
        Files.writeString(q, "#!/bin/sh\n" + body + "\n");
        Files.setPosixFilePermissions(q, PosixFilePermissions.fromString("rwx------"));
        return q.toString();
    }

    @Test
    void aKernelThatPanics_meansKvmRuns() throws Exception {
        Accel a = Accel.bootProbe(qemu("echo 'Kernel panic - not syncing: VFS: Unable to mount root fs'"), dir.resolve("vmlinuz"), 1, Duration.ofSeconds(10));
        assertTrue(a.kvm(), a.why());
    }

    @Test
    void qemuThatAborts_isTcgWithTheLastLineAsTheReason() throws Exception {
        Accel a = Accel.bootProbe(qemu("echo 'qemu: error: failed to set MSR 0x10a to 0x0' >&2; exit 1"), dir.resolve("vmlinuz"), 1, Duration.ofSeconds(10));
        assertFalse(a.kvm());
        assertTrue(a.why().contains("failed to set MSR 0x10a") && a.why().contains("exit 1"), a.why());
    }

    @Test
    void aGuestThatNeverPanics_isTcgAfterTheLimit_andTheQemuIsKilled() throws Exception {
        Path pid = dir.resolve("pid");
        Accel a = Accel.bootProbe(qemu("echo $$ > " + pid + "; echo 'Probing EDD (edd=off to disable)... ok'; exec sleep 600"),
                dir.resolve("vmlinuz"), 1, Duration.ofMillis(500));
        assertFalse(a.kvm());
        assertTrue(a.why().contains("does not boot"), a.why());
        long p = Long.parseLong(Files.readString(pid).strip());
        assertFalse(ProcessHandle.of(p).map(ProcessHandle::isAlive).orElse(false), "the probe's QEMU is not left running");
    }

    @Test
    void jailedQemus_openKvmThroughItsGroup_neverRootsGroup() throws Exception {
        Path dev = Files.createFile(dir.resolve("kvm"));
        Files.setPosixFilePermissions(dev, PosixFilePermissions.fromString("rw-------"));
        assertTrue(Accel.jailedAccess(dev).contains("mode 0600"), Accel.jailedAccess(dev));
        Files.setPosixFilePermissions(dev, PosixFilePermissions.fromString("rw-rw----"));
        Files.setAttribute(dev, "unix:gid", 0);
        assertTrue(Accel.jailedAccess(dev).contains("group 0"), "root's group would open far more than KVM");
        Files.setAttribute(dev, "unix:gid", 36);
        assertNull(Accel.jailedAccess(dev));
        Files.setPosixFilePermissions(dev, PosixFilePermissions.fromString("rw-rw-rw-"));
        Files.setAttribute(dev, "unix:gid", 0);
        assertNull(Accel.jailedAccess(dev));
    }
}
