package dev.berth.engine.microvm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The accelerator QEMU runs guests with. KVM when {@code /dev/kvm} is present <em>and</em> a microvm vCPU really
 * runs on it (a nested /dev/kvm can exist and still abort QEMU when the vCPU starts: seen on these machines with
 * "failed to set MSR 0x10a"), TCG otherwise. {@link MicrovmSettings#accel()} ({@code -Dberth.microvm.accel=kvm|tcg}) forces one.
 *
 * @param tscKhz host TSC frequency for the guest's {@code tsc_early_khz=} (TCG guests hang without it)
 */
record Accel(boolean kvm, long tscKhz, String why) {

    String name() { return kvm ? "kvm" : "tcg"; }

    static Accel detect(MicrovmSettings settings) {
        long khz = hostTscKhz();
        String qemu = settings.qemu();
        String forced = settings.accel();
        if (forced.equals("tcg")) return new Accel(false, khz, "TCG forced by berth.microvm.accel");
        if (forced.equals("kvm")) return new Accel(true, khz, "KVM forced by berth.microvm.accel");
        Path kvm = Path.of("/dev/kvm");
        if (!Files.exists(kvm)) return new Accel(false, khz, "no /dev/kvm: TCG (software emulation, slower)");
        if (!Files.isReadable(kvm) || !Files.isWritable(kvm))
            return new Accel(false, khz, "/dev/kvm not accessible to this user: TCG");
        // A vCPU that cannot be set up makes QEMU abort within milliseconds; a working one keeps running the
        // (empty) firmware until killed.
        try {
            Process p = new ProcessBuilder(List.of(qemu, "-accel", "kvm", "-machine", "microvm", "-cpu", "host",
                    "-m", "32M", "-nodefaults", "-no-user-config", "-display", "none", "-serial", "null"))
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (p.waitFor(1500, TimeUnit.MILLISECONDS)) {
                return new Accel(false, khz, "/dev/kvm present but QEMU cannot run a vCPU on it (exit " + p.exitValue() + "): TCG");
            }
            p.destroyForcibly();
            p.waitFor(5, TimeUnit.SECONDS);
            return new Accel(true, khz, "KVM");
        } catch (IOException e) {
            return new Accel(false, khz, "KVM probe failed (" + e.getMessage() + "): TCG");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Accel(false, khz, "interrupted: TCG");
        }
    }

    static long hostTscKhz() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("cpu MHz")) {
                    double mhz = Double.parseDouble(line.substring(line.indexOf(':') + 1).strip());
                    return Math.round(mhz * 1000);
                }
            }
        } catch (IOException | RuntimeException ignored) { }
        return 0;
    }
}
