package dev.berth.engine.microvm;

import dev.berth.engine.spi.FileMutex;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;

/**
 * Builds and caches microVM guest images from Debian packages only.
 *
 * <p>The cache ({@code ~/.cache/berth/images}, or {@code -Dberth.images.cache} / {@code BERTH_IMAGE_CACHE}) holds one
 * directory per image version, named after a hash of every input (build scripts, /init, busybox binary, agent
 * binary, kernel package and version, package list). A directory is complete only when its {@code stamp} file
 * exists; it is built in a temporary directory and renamed, so a crash never leaves a half image in use. A rebuild
 * happens only when an input changes.
 *
 * <p>Test image: {@link #testImage()}, seconds, used by tests. Developer image (Debian bookworm rootfs via
 * debootstrap): {@link #buildDeveloperImage()}, minutes, run from the setup entry point {@link #main}, never from
 * unit tests.
 */
public final class ImageBuilder {

    static final String AGENT_RESOURCE = "berth/agent/berth-agent";

    private final Path cache;
    private final Path scripts;

    public ImageBuilder(Path cache, Path scripts) {
        this.cache = cache;
        this.scripts = scripts;
    }

    /** The default cache and the scripts directory found next to the sources (see {@link #defaultScriptsDir()}). */
    public static ImageBuilder defaults() { return new ImageBuilder(defaultCacheDir(), defaultScriptsDir()); }

    public static Path defaultCacheDir() {
        String p = System.getProperty("berth.images.cache", System.getenv("BERTH_IMAGE_CACHE"));
        if (p != null && !p.isBlank()) return Path.of(p);
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("berth").resolve("images");
    }

    /**
     * {@code -Dberth.images.scripts}, else the scripts shipped in the jar (classpath {@code berth/images/}), written
     * once to a content-addressed folder of the cache. Never the working directory: a stray {@code images/} folder
     * where berth happens to be started must not decide what runs as root.
     */
    public static Path defaultScriptsDir() {
        String p = System.getProperty("berth.images.scripts", System.getenv("BERTH_IMAGE_SCRIPTS"));
        if (p != null && !p.isBlank()) return Path.of(p);
        try {
            return ImageScripts.extract(defaultCacheDir());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException("cannot unpack the guest image scripts: " + e.getMessage(), e);
        }
    }

    public Path cacheDir() { return cache; }

    /** The test image (kernel + initramfs with the agent from the classpath), built if its inputs changed. */
    public GuestImage testImage() throws IOException {
        byte[] agent = agentBinary();
        return testImage(agent);
    }

    /** The test image with a given guest agent binary (tests may substitute a diagnostic agent). */
    public GuestImage testImage(byte[] agent) throws IOException {
        // one builder at a time per cache, threads of this process and other processes alike
        try (FileMutex.Held ignored = FileMutex.of(cache.resolve(".lock")).lock()) {
            Path kernelDir = fetchKernel();
            Path busybox = findBusybox();
            Path agentFile = cache.resolve("agents").resolve(sha256(agent).substring(0, 16));
            if (!Files.isRegularFile(agentFile)) {
                Files.createDirectories(agentFile.getParent());
                Path tmp = Files.createTempFile(agentFile.getParent(), ".agent", ".tmp");
                Files.write(tmp, agent);
                Files.move(tmp, agentFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            }
            String hash = hashInputs("test-image-v1",
                    Files.readAllBytes(scripts.resolve("build-test-image.sh")),
                    Files.readAllBytes(scripts.resolve("init")),
                    Files.readAllBytes(scripts.resolve("berth-reseed.c")),
                    kernelDir.getFileName().toString().getBytes(StandardCharsets.UTF_8),
                    Files.readAllBytes(busybox), agent);
            String id = "test-" + hash;
            Path dir = cache.resolve(id);
            if (!Files.isRegularFile(dir.resolve("stamp"))) {
                Path tmp = Files.createTempDirectory(cache, "." + id + ".");
                try {
                    run(List.of("sh", scripts.resolve("build-test-image.sh").toString(), tmp.toString(),
                            kernelDir.toString(), busybox.toString(), agentFile.toString()), 120);
                    Files.writeString(tmp.resolve("stamp"), "kernel=" + kernelDir.getFileName() + "\nbusybox=" + busybox
                            + "\nagent=" + sha256(agent) + "\n");
                    deleteTree(dir);
                    Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
                } finally {
                    deleteTree(tmp);
                }
            }
            return new GuestImage(id, dir.resolve("vmlinuz"), dir.resolve("initramfs.cpio"), null);
        }
    }

    /** The developer image if it was built (by {@link #buildDeveloperImage()}), else {@code null}. */
    public GuestImage developerImage() throws IOException {
        GuestImage test = testImage();
        Path dir = cache.resolve(developerId());
        if (!Files.isRegularFile(dir.resolve("stamp"))) return null;
        return new GuestImage(dir.getFileName() + "+" + test.id(), test.kernel(), test.initramfs(), dir.resolve("base.ext4"));
    }

    /** Builds the developer base disk with debootstrap (minutes; needs root and the Debian registry). */
    public GuestImage buildDeveloperImage() throws IOException {
        GuestImage existing = developerImage();
        if (existing != null) return existing;
        String id = developerId();
        Path dir = cache.resolve(id);
        Path tmp = Files.createTempDirectory(cache, "." + id + ".");
        try {
            run(List.of("sh", scripts.resolve("build-dev-image.sh").toString(), tmp.toString()), 3600);
            Files.writeString(tmp.resolve("stamp"), "built by ImageBuilder\n");
            deleteTree(dir);
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            deleteTree(tmp);
        }
        return developerImage();
    }

    private String developerId() throws IOException {
        return "dev-" + hashInputs("dev-image-v1", Files.readAllBytes(scripts.resolve("build-dev-image.sh")));
    }

    /** Setup entry point: {@code java -cp ... dev.berth.engine.microvm.ImageBuilder [test|developer]}. */
    public static void main(String[] args) throws Exception {
        ImageBuilder b = defaults();
        String what = args.length > 0 ? args[0] : "test";
        long t0 = System.nanoTime();
        GuestImage img = "developer".equals(what) ? b.buildDeveloperImage() : b.testImage();
        System.out.println(img + " (" + (System.nanoTime() - t0) / 1_000_000 + " ms)");
    }

    static byte[] agentBinary() throws IOException {
        try (InputStream in = ImageBuilder.class.getClassLoader().getResourceAsStream(AGENT_RESOURCE)) {
            if (in == null) throw new IOException("guest agent binary missing from the classpath (" + AGENT_RESOURCE + "): build sandbox-engine with Maven");
            return in.readAllBytes();
        }
    }

    Path fetchKernel() throws IOException {
        try {
            String out = run(List.of("sh", scripts.resolve("fetch-kernel.sh").toString(), cache.toString()), 600);
            String[] lines = out.strip().split("\n");
            return Path.of(lines[lines.length - 1].strip());
        } catch (IOException e) {
            // Offline: fall back to the newest complete cached kernel.
            try (var s = Files.list(cache)) {
                List<Path> ks = s.filter(p -> p.getFileName().toString().startsWith("kernel-"))
                        .filter(p -> Files.isRegularFile(p.resolve(".complete")))
                        .sorted(Comparator.comparing(Path::toString)).toList();
                if (ks.isEmpty()) throw new IOException("no guest kernel: " + e.getMessage(), e);
                return ks.getLast();
            }
        }
    }

    static Path findBusybox() throws IOException {
        for (String c : List.of("/bin/busybox", "/usr/bin/busybox")) {
            Path p = Path.of(c);
            if (Files.isRegularFile(p)) return p.toRealPath();
        }
        throw new IOException("busybox not found: install the Debian package busybox-static");
    }

    /** Runs a build step within {@code timeoutSeconds} (killed when it passes); a non-zero exit fails with its output. */
    static String run(List<String> cmd, long timeoutSeconds) throws IOException {
        return dev.berth.engine.host.HostCommand.output(cmd, java.time.Duration.ofSeconds(timeoutSeconds));
    }

    static String tail(String s) { return dev.berth.engine.host.HostCommand.tail(s); }

    static String hashInputs(String kind, byte[]... parts) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(kind.getBytes(StandardCharsets.UTF_8));
            for (byte[] p : parts) {
                md.update(java.nio.ByteBuffer.allocate(8).putLong(p.length).array());
                md.update(p);
            }
            return HexFormat.of().formatHex(md.digest()).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) return;
        List<Path> all = new ArrayList<>();
        try (var s = Files.walk(p)) { s.forEach(all::add); }
        all.sort(Comparator.reverseOrder());
        for (Path x : all) Files.deleteIfExists(x);
    }
}
