package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The QEMU command line and the bounded log, without starting QEMU. */
class QemuCommandLineTest {

    static final VmSpec SPEC = new VmSpec("test-x", "/img/vmlinuz", "/img/initramfs.cpio", null, 256, 1, "ram", true, null, 3128);

    @Test
    void commandLine_tcg_hasNoNetworkDeviceAndSharedRamFileAndSeccomp() {
        List<String> a = QemuMachine.commandLine(MicrovmSettings.defaults(), new Accel(false, 2596142, "t"), SPEC,
                Path.of("/st,ate"), Path.of("/st,ate/data.qcow2"), Path.of("/run/ws"), false);
        String all = String.join(" ", a);
        assertFalse(all.contains("-netdev") || all.contains("-nic ") || all.contains("virtio-net"), all);
        assertTrue(a.contains("-nodefaults"));
        assertTrue(all.contains("mem-path=/st,,ate/ram,share=on"), "commas escaped for QEMU options: " + all);
        assertTrue(all.contains("tsc_early_khz=2596142"));
        assertTrue(all.contains("berth.proxy_port=3128"));
        assertTrue(a.contains("-sandbox"));
        assertEquals("null", a.get(a.indexOf("-serial") + 1));
        assertFalse(a.contains("-incoming"));
        assertEquals("tcg,tb-size=256", a.get(a.indexOf("-accel") + 1));
        VmSpec two = new VmSpec("t", "/k", "/i", null, 256, 2, "ram", true, null, 0);
        List<String> b = QemuMachine.commandLine(MicrovmSettings.defaults().withQemu("q"), new Accel(false, 1, "t"), two, Path.of("/s"), Path.of("/s/d"), Path.of("/r"), false);
        assertEquals("tcg,tb-size=256,thread=single", b.get(b.indexOf("-accel") + 1));
        assertFalse(a.contains("-S"), "an unjailed cold boot runs at once");
        // a jailed cold boot starts paused: the guest runs once QEMU is in its cgroups
        List<String> paused = QemuMachine.commandLine(MicrovmSettings.defaults().withQemu("q"), new Accel(false, 1, "t"), SPEC, Path.of("/s"), Path.of("/s/d"), Path.of("/r"), false, true);
        assertTrue(paused.contains("-S") && !paused.contains("-incoming"), paused.toString());
    }

    @Test
    void commandLine_kvmRestore_usesHostCpuAndPausedDeferredIncoming() {
        List<String> a = QemuMachine.commandLine(MicrovmSettings.defaults(), new Accel(true, 2596142, "t"),
                SPEC.withMemory("/snap/ram", false), Path.of("/st"), Path.of("/st/data.qcow2"), Path.of("/run/ws"), true);
        String all = String.join(" ", a);
        assertEquals("kvm", a.get(a.indexOf("-accel") + 1));
        assertEquals("host", a.get(a.indexOf("-cpu") + 1));
        assertFalse(all.contains("tsc_early_khz"));
        assertTrue(all.contains("mem-path=/snap/ram,share=off"));
        assertTrue(a.contains("-S"));
        assertEquals("defer", a.get(a.indexOf("-incoming") + 1));
    }

    @Test
    void boundedLog_moreThanCapacity_keepsOnlyTheTail() {
        QemuMachine.BoundedLog log = new QemuMachine.BoundedLog();
        byte[] junk = "x".repeat(100_000).getBytes(StandardCharsets.UTF_8);
        log.append(junk, junk.length);
        byte[] end = "the end".getBytes(StandardCharsets.UTF_8);
        log.append(end, end.length);
        String t = log.tail();
        assertTrue(t.endsWith("the end]"), t.substring(t.length() - 20));
        assertTrue(t.length() < 2100, "bounded: " + t.length());
        assertEquals("", new QemuMachine.BoundedLog().tail());
    }
}
