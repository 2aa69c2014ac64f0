package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * QEMU mechanics without the guest agent: boot, save device state with RAM in a shared file, restore, fork
 * copy-on-write. The guest runs a busybox shell on the agent port ({@link ShellGuest}).
 */
class QemuMachineTest {

    static final Duration T = Duration.ofSeconds(60);
    static GuestImage image;
    static final MicrovmSettings SETTINGS = MicrovmSettings.fromSystem();
    static Accel accel;
    @TempDir static Path dir;
    static QemuMachine vm;
    static ShellGuest sh;
    static VmSpec spec;
    static Path stateDir;

    @BeforeAll
    static void boot() throws Exception {
        image = TestImages.builder().testImage(ShellGuest.SHELL_AGENT);
        accel = Accel.detect(SETTINGS, image.kernel());
        stateDir = dir.resolve("ws");
        Files.createDirectories(stateDir);
        spec = new VmSpec(image.id(), image.kernel().toString(), image.initramfs().toString(), null, 128, 1,
                "ram", true, null, 0);
        ColdBoot.createDataDisk(stateDir.resolve(QemuMachine.DATA_DISK), 64);
        vm = QemuMachine.launch(SETTINGS, accel, spec, stateDir, stateDir.resolve(QemuMachine.DATA_DISK),
                dir.resolve("rt"), null);
        sh = ShellGuest.connect(dir.resolve("rt").resolve(QemuMachine.AGENT_SOCK), T);
    }

    @AfterAll
    static void down() throws Exception {
        if (sh != null) sh.close();
        if (vm != null) vm.kill();
    }

    @Test
    void boot_withTestImage_mountsWorkspaceDiskAndHasNoNetwork() throws Exception {
        assertEquals("lo", sh.run("ls /sys/class/net", T).strip());
        assertTrue(sh.run("grep ' /workspace ' /proc/mounts", T).contains("ext4"));
    }

    @Test
    void saveAndRestore_withSharedRamFile_keepsTmpfsFileAndBackgroundProcess() throws Exception {
        Path rt2 = dir.resolve("rt-restore");
        sh.run("echo kept > /tmp/kept; (i=0; while true; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.1; done) >/dev/null 2>&1 &", T);
        sh.run("sleep 0.5", T);
        // Park-like cycle on a second machine booted from the same files: stop + save, quit, restore.
        Path state = stateDir.resolve("state");
        sh.close();
        sh = null;
        vm.stopAndSave(state);
        vm.quit();
        vm = null;
        assertTrue(Files.size(state) < 2 << 20, "RAM is not in the stream: " + Files.size(state));
        vm = QemuMachine.launch(SETTINGS, accel, spec, stateDir, stateDir.resolve(QemuMachine.DATA_DISK), rt2, state);
        vm.cont();
        sh = ShellGuest.connect(rt2.resolve(QemuMachine.AGENT_SOCK), T);
        assertEquals("kept", sh.run("cat /tmp/kept", T).strip());
        long a = Long.parseLong(sh.run("cat /tmp/counter", T).strip());
        sh.run("sleep 0.5", T);
        long b = Long.parseLong(sh.run("cat /tmp/counter", T).strip());
        assertTrue(b > a, "background process still counts: " + a + " -> " + b);
    }

    @Test
    void fork_fromSavedState_privateRamDoesNotChangeTheSnapshot() throws Exception {
        Path snap = dir.resolve("snap");
        Files.createDirectories(snap);
        sh.run("echo before > /tmp/marker; echo disk-before > /workspace/marker; sync", T);
        // as MicrovmSandbox.snapshot does: a jailed QEMU can write only its own state directory
        vm.stop();
        String layer = DiskLayers.freezeLive(vm, stateDir, new OverlayTemplates());
        vm.save(stateDir.resolve(".snapshot-state"));
        Files.move(stateDir.resolve(".snapshot-state"), snap.resolve("state"));
        SnapshotWriter.write(spec, stateDir, snap, layer);
        vm.cont();
        sh.run("echo after > /tmp/marker; echo disk-after > /workspace/marker; sync", T);
        VmSpec s = VmSpec.read(snap.resolve(VmSpec.SNAPSHOT_FILE));
        byte[] ramBefore = Files.readAllBytes(snap.resolve(s.memPath()));
        Path fdir = dir.resolve("fork");
        Files.createDirectories(fdir);
        ImageBuilder.run(java.util.List.of("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                snap.resolve(s.disk()).toString(), fdir.resolve(QemuMachine.DATA_DISK).toString()), 30);
        VmSpec fspec = s.withMemory(snap.resolve(s.memPath()).toString(), false).withState(null);
        try (QemuMachine f = QemuMachine.launch(SETTINGS, accel, fspec, fdir, fdir.resolve(QemuMachine.DATA_DISK),
                dir.resolve("rt-fork"), snap.resolve("state"))) {
            f.cont();
            try (ShellGuest fsh = ShellGuest.connect(dir.resolve("rt-fork").resolve(QemuMachine.AGENT_SOCK), T)) {
                assertEquals("before", fsh.run("cat /tmp/marker", T).strip());
                assertEquals("disk-before", fsh.run("cat /workspace/marker", T).strip());
                fsh.run("echo fork > /tmp/marker; echo disk-fork > /workspace/marker; sync", T);
            }
        }
        assertEquals("after", sh.run("cat /tmp/marker", T).strip());
        assertEquals("disk-after", sh.run("cat /workspace/marker", T).strip());
        assertTrue(java.util.Arrays.equals(ramBefore, Files.readAllBytes(snap.resolve(s.memPath()))), "snapshot RAM unchanged");
        assertFalse(Files.exists(dir.resolve("rt-fork").resolve("x")));
        assertNotEquals(0, ramBefore.length);
    }
}
