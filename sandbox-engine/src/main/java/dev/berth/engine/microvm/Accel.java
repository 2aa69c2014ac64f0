package dev.berth.engine.microvm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The accelerator QEMU runs guests with. KVM when {@code /dev/kvm} is present, a jailed QEMU may open it, <em>and</em>
 * the guest kernel really boots on it; TCG otherwise. A {@code /dev/kvm} can exist and still not run a guest: seen on
 * these machines as "failed to set MSR 0x10a" (QEMU aborts), and as a PVM host ({@code kvm-pvm}: KVM without
 * virtualisation extensions), where QEMU runs the firmware's and the kernel's real-mode code and then spins forever
 * in the host kernel. So the probe boots the guest's own kernel without an initramfs to its "cannot mount root"
 * panic ({@code panic=-1 -no-reboot}: QEMU then exits), which a working KVM does in well under a second.
 * {@link MicrovmSettings#accel()} ({@code -Dberth.microvm.accel=kvm|tcg}) forces one.
 *
 * <p>The verdict is kept beside the kernel ({@value #VERDICT_FILE}), keyed by the host's boot id and the QEMU
 * binary, so a host where KVM hangs pays the probe's time-out once per boot and kernel, not once per driver.
 *
 * @param tscKhz host TSC frequency for the guest's {@code tsc_early_khz=} (TCG guests hang without it)
 */
record Accel(boolean kvm, long tscKhz, String why) {

    /** How long the KVM probe waits for the kernel's panic; a working KVM needs well under a second. */
    static final java.time.Duration PROBE_LIMIT = java.time.Duration.ofSeconds(10);
    static final String VERDICT_FILE = "accel-kvm.verdict";

    String name() { return kvm ? "kvm" : "tcg"; }

    static Accel detect(MicrovmSettings settings, Path kernel) {
        long khz = hostTscKhz();
        String forced = settings.accel();
        if (forced.equals("tcg")) return new Accel(false, khz, "TCG forced by berth.microvm.accel");
        if (forced.equals("kvm")) return new Accel(true, khz, "KVM forced by berth.microvm.accel");
        Path kvm = Path.of("/dev/kvm");
        if (!Files.exists(kvm)) return new Accel(false, khz, "no /dev/kvm: TCG (software emulation, slower)");
        if (!Files.isReadable(kvm) || !Files.isWritable(kvm))
            return new Accel(false, khz, "/dev/kvm not accessible to this user: TCG");
        if (settings.jailed()) {
            String why = jailedAccess(kvm);
            if (why != null) return new Accel(false, khz, why + ": TCG");
        }
        String key = verdictKey(settings.qemu());
        Path cache = kernel.toAbsolutePath().getParent().resolve(VERDICT_FILE);
        try {
            List<String> kept = Files.readAllLines(cache);
            if (kept.size() == 3 && kept.get(0).equals(key)) return new Accel(kept.get(1).equals("kvm"), khz, kept.get(2));
        } catch (IOException e) {
            // no verdict yet
        }
        Accel a = bootProbe(settings.qemu(), kernel, khz, PROBE_LIMIT);
        try {
            Path tmp = cache.resolveSibling(VERDICT_FILE + "." + ProcessHandle.current().pid());
            Files.write(tmp, List.of(key, a.name(), a.why()));
            Files.move(tmp, cache, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            // a read-only image cache: the probe runs again next time
        }
        return a;
    }

    /**
     * Null when a jailed QEMU (its own uid, {@link VmmJail}) can open {@code /dev/kvm} through the device's group
     * ({@link #kvmGroup}), else why not. The group must not be root's: root's group opens far more than KVM.
     */
    static String jailedAccess(Path kvm) {
        try {
            int mode = (Integer) Files.getAttribute(kvm, "unix:mode");
            int gid = (Integer) Files.getAttribute(kvm, "unix:gid");
            if ((mode & 0006) == 0006) return null;
            if ((mode & 0060) == 0060 && gid != 0) return null;
            return String.format("/dev/kvm (mode %04o, group %d) cannot be opened by a jailed QEMU, which runs as its own uid;"
                    + " give the device a group of its own with read-write (Debian: group kvm, mode 0660)", mode & 07777, gid);
        } catch (IOException | RuntimeException e) {
            return "/dev/kvm's mode cannot be read (" + e.getMessage() + ")";
        }
    }

    /** The group a jailed QEMU joins to open {@code /dev/kvm}, or -1 when the device is open to all. */
    static int kvmGroup() {
        try {
            int mode = (Integer) Files.getAttribute(Path.of("/dev/kvm"), "unix:mode");
            return (mode & 0006) == 0006 ? -1 : (Integer) Files.getAttribute(Path.of("/dev/kvm"), "unix:gid");
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** What a kept verdict is valid for: this boot of the host and this QEMU binary. */
    static String verdictKey(String qemu) {
        String boot;
        try {
            boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
        } catch (IOException e) {
            boot = "unknown-boot";
        }
        String bin;
        try {
            Path q = qemu.contains("/") ? Path.of(qemu) : java.util.stream.Stream.of(System.getenv().getOrDefault("PATH", "/usr/bin").split(":"))
                    .map(d -> Path.of(d, qemu)).filter(Files::isExecutable).findFirst().orElse(Path.of(qemu));
            var at = Files.readAttributes(q, java.nio.file.attribute.BasicFileAttributes.class);
            bin = q + ":" + at.size() + ":" + at.lastModifiedTime().toMillis();
        } catch (IOException | RuntimeException e) {
            bin = qemu;
        }
        return "v1 " + boot + " " + bin;
    }

    /** Boots {@code kernel} under KVM without an initramfs and waits for its panic (QEMU exits on the reboot). */
    static Accel bootProbe(String qemu, Path kernel, long khz, java.time.Duration limit) {
        Process p = null;
        try {
            p = new ProcessBuilder(List.of(qemu, "-accel", "kvm", "-machine", "microvm", "-cpu", "host", "-m", "128M",
                    "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
                    "-kernel", kernel.toString(), "-append", "console=ttyS0 panic=-1 loglevel=1"))
                    .redirectErrorStream(true).start();
            Process proc = p;
            var out = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try (var in = proc.getInputStream()) {
                    return new String(in.readNBytes(1 << 20), java.nio.charset.StandardCharsets.UTF_8);
                } catch (IOException e) {
                    return "";
                }
            }, r -> Thread.ofVirtual().start(r));
            if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                return new Accel(false, khz, "/dev/kvm present but the guest kernel does not boot on it within "
                        + limit.toMillis() + " ms (a KVM without virtualisation extensions?): TCG");
            }
            String text = out.get(5, TimeUnit.SECONDS);
            if (text.contains("Kernel panic")) return new Accel(true, khz, "KVM");
            return new Accel(false, khz, "/dev/kvm present but QEMU cannot run the guest kernel on it (exit " + p.exitValue() + ": "
                    + text.strip().lines().reduce((a, b) -> b).orElse("no output") + "): TCG");
        } catch (IOException | java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            return new Accel(false, khz, "KVM probe failed (" + e.getMessage() + "): TCG");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Accel(false, khz, "interrupted: TCG");
        } finally {
            if (p != null && p.isAlive()) {
                p.destroyForcibly();
                try { p.waitFor(5, TimeUnit.SECONDS); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
            }
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
