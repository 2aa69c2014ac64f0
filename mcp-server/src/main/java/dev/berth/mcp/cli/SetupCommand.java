package dev.berth.mcp.cli;

import dev.berth.engine.host.AgentBinary;
import dev.berth.engine.image.ImageException;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.microvm.ImageBuilder;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code berth setup}: installs the {@code berth} launcher ({@link LauncherCommand}), the Debian packages the drivers need (when root and missing) and prepares the Berth
 * home (agent binary) and the microVM guest images (test, and developer unless {@code --microvm-image test}); the
 * developer image's files are imported into the image store as {@code developer}, the namespace and gVisor levels'
 * root when a workspace names no image (instead of the host's {@code /usr}).
 * Idempotent: a second run only checks.
 */
@Command(name = "setup", mixinStandardHelpOptions = true,
        description = "Install the berth launcher and prepare what the isolation drivers need (packages as root, the guest"
                + " agent, the microVM images; idempotent), then run doctor.")
public final class SetupCommand implements Callable<Integer> {
    /** Debian packages and a file each one provides (to check without asking dpkg). */
    private static final List<List<String>> PACKAGES = List.of(
            List.of("bubblewrap", "/usr/bin/bwrap"),
            List.of("qemu-system-x86", "/usr/bin/qemu-system-x86_64"),
            List.of("qemu-utils", "/usr/bin/qemu-img"),
            List.of("busybox-static", "/bin/busybox"),
            List.of("cpio", "/usr/bin/cpio"),
            List.of("debootstrap", "/usr/sbin/debootstrap"),
            List.of("e2fsprogs", "/sbin/mkfs.ext4"),
            List.of("runsc", "/usr/bin/runsc"));

    /** Run defaults of the developer image in the store: Debian's PATH (its files set nothing else). */
    public static final java.util.Map<String, Object> DEVELOPER_DEFAULTS = java.util.Map.of("Env",
            List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));

    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Option(names = "--bin-dir", paramLabel = "DIR", description = "where to install the berth launcher (default"
            + " /usr/local/bin as root, else ~/.local/bin)")
    Path binDir;

    @Override
    public Integer call() throws Exception {
        return run(common.options(spec, null, null, null, binDir), Cli.of(spec).backend, Cli.of(spec).out);
    }

    static int run(Options opts, Backend backend, PrintStream out) throws IOException, InterruptedException {
        if (LauncherCommand.runningJar() != null && LauncherCommand.run(opts, out) != 0) return 1;
        List<String> missing = new ArrayList<>();
        for (List<String> p : PACKAGES) if (!Files.exists(Path.of(p.get(1)))) missing.add(p.get(0));
        if (!missing.isEmpty()) {
            if (!"root".equals(System.getProperty("user.name"))) {
                out.println("missing packages: " + String.join(" ", missing) + " (run setup as root, or apt-get install them)");
                return 1;
            }
            out.println("installing " + String.join(" ", missing) + " ...");
            if (sh(out, "apt-get", "update", "-qq") != 0) return 1;
            List<String> cmd = new ArrayList<>(List.of("apt-get", "install", "-y", "-qq", "--no-install-recommends"));
            cmd.addAll(missing);
            if (sh(out, cmd.toArray(String[]::new)) != 0) return 1;
        }
        Files.createDirectories(opts.home());
        Path agent = AgentBinary.extract(opts.home().resolve("images"));
        out.println("guest agent: " + agent);
        // microVM guest images: the small test image (seconds), then the developer image (Debian bookworm with
        // bash, git, curl, python3, nodejs/npm, build-essential; minutes the first time, cached by content hash)
        ImageBuilder images = ImageBuilder.defaults();
        long t0 = System.nanoTime();
        out.println("microvm test image: " + images.testImage().id() + " (" + (System.nanoTime() - t0) / 1_000_000 + " ms)");
        if (!opts.microvmImage().equals("test")) {
            t0 = System.nanoTime();
            var dev = images.developerImage();
            if (dev == null) {
                out.println("building the microvm developer image (debootstrap; a few minutes the first time) ...");
                dev = images.buildDeveloperImage();
            }
            out.println("microvm developer image: " + dev.id() + " (" + (System.nanoTime() - t0) / 1_000_000 + " ms)");
            // the same files as the namespace and gVisor levels' root (instead of the host's /usr), in the image store
            t0 = System.nanoTime();
            try {
                var rec = new ImageStore(opts.home()).importBaseDisk(dev.baseDisk(),
                        ImageStore.DEVELOPER, DEVELOPER_DEFAULTS, "microvm-developer-image:" + dev.id(),
                        ImportLimits.DEFAULT, out::println);
                out.println("namespace/gvisor root: image " + ImageStore.DEVELOPER + " " + rec.digest()
                        + " (" + (System.nanoTime() - t0) / 1_000_000 + " ms)");
            } catch (ImageException | IOException e) {
                out.println("importing the developer image as the namespace/gvisor root failed: " + e.getMessage()
                        + " (those levels keep the host's /usr)");
            }
        }
        out.println("home: " + opts.home());
        return DoctorCommand.run(opts, backend.drivers(opts), out);
    }

    private static int sh(PrintStream out, String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).inheritIO().redirectOutput(ProcessBuilder.Redirect.to(new java.io.File("/dev/stderr"))).start();
        if (!p.waitFor(30, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            out.println(String.join(" ", cmd) + " did not finish in 30 minutes");
            return 1;
        }
        if (p.exitValue() != 0) out.println(String.join(" ", cmd) + " failed with exit status " + p.exitValue());
        return p.exitValue();
    }
}
