package dev.berth.engine.image;

import dev.berth.engine.host.HostCommand;
import dev.berth.engine.spi.FileMutex;
import dev.berth.engine.spi.MetaFile;
import dev.berth.engine.spi.RootImage;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Named, content-addressed workspace images in the Berth home: OCI images imported into a read-only root tree
 * (namespace driver) and a read-only ext4 base of the same tree (microVM driver).
 *
 * <pre>
 * home/images/oci/names.meta          name -> digest, and the operator's default name (MetaFile kind "image-names", version 1)
 * home/images/oci/store/HEX/image.meta ImageRecord (MetaFile kind "image", version 1)
 * home/images/oci/store/HEX/rootfs/   the root tree, never written after the import
 * home/images/oci/store/HEX/base.ext4 the same tree as a read-only ext4 filesystem
 * home/images/oci/store/HEX/build.log what the recipe build printed (images built from a recipe only)
 * home/images/oci/.import-PID-*       an import in progress (renamed into store/ when complete; gc removes a dead one)
 * </pre>
 *
 * <p>Thread-safe and safe between processes ({@code berth image import} next to a running server): every change of
 * the names or the store holds {@code .lock} ({@link FileMutex}: an OS file lock and a lock for the threads of this process). An import is assembled in a hidden
 * directory and renamed into place, so a half-imported image is never seen; a failed import keeps nothing.
 * Whether an image is in use (by a workspace or a snapshot) is the caller's knowledge, passed to {@link #remove} and
 * {@link #gc}: the store does not read the engine's records.
 */
public final class ImageStore {
    static final String KIND = "image";
    static final int VERSION = 1;
    static final String NAMES_KIND = "image-names";
    static final int NAMES_VERSION = 1;
    /** The levels that can open an imported image. */
    public static final List<String> DRIVERS = List.of("namespace", "gvisor", "microvm");
    /**
     * The name {@code berth setup} imports the microVM developer image under ({@link #importBaseDisk}): the root the
     * levels that otherwise share the host's {@code /usr} (namespace, gVisor) run on when no image is named.
     */
    public static final String DEVELOPER = "developer";
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final Path dir;
    private final Path store;

    public ImageStore(Path home) {
        this.dir = home.toAbsolutePath().resolve("images").resolve("oci");
        this.store = dir.resolve("store");
    }

    public Path dir() { return dir; }

    /** Refuses a name that is not 1-63 of a-z, 0-9, '.', '_', '-' (starting with a letter or digit). */
    public static void checkName(String name) throws ImageException {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new ImageException("image name '" + name + "' must be 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit");
        }
    }

    // ---------------------------------------------------------------- reading

    /** Every named image, by name. */
    public List<ImageInfo> list() throws IOException {
        List<ImageInfo> out = new ArrayList<>();
        for (var e : names().entrySet()) {
            Optional<ImageRecord> r = byDigest(e.getValue());
            if (r.isPresent()) out.add(ImageInfo.of(e.getKey(), r.get()));
        }
        return out;
    }

    /** The digest a name points at, or empty. */
    public Optional<String> digestOf(String name) throws IOException {
        return Optional.ofNullable(names().get(name));
    }

    /** The record of an imported digest, or empty when no complete import of it exists. */
    public Optional<ImageRecord> byDigest(String digest) throws IOException {
        if (digest == null || !OciSource.DIGEST.matcher(digest).matches()) return Optional.empty();
        Path meta = contentDir(digest).resolve("image.meta");
        if (!Files.isRegularFile(meta)) return Optional.empty();
        return Optional.of(JSON.readValue(MetaFile.read(meta, KIND, VERSION), ImageRecord.class));
    }

    /** The image a name points at now; refused with the names there are. */
    public ImageRecord resolve(String name) throws ImageException, IOException {
        Map<String, String> names = names();
        String digest = names.get(name);
        if (digest == null) {
            throw new ImageException("no image named '" + name + "' (images: " + names.keySet()
                    + "); import one with `berth image import PATH --name " + (name == null ? "NAME" : name) + "`");
        }
        return byDigest(digest).orElseThrow(() -> new ImageException("image '" + name + "' points at " + digest
                + ", which is not in the store (removed by hand?); import it again"));
    }

    /** What a driver is handed for an image already resolved to {@code digest} (a workspace keeps its digest). */
    public RootImage rootImage(String name, String digest) throws ImageException, IOException {
        ImageRecord r = byDigest(digest).orElseThrow(() -> new ImageException("image " + (name == null ? "" : "'" + name + "' ")
                + digest + " is no longer in the store; the workspace cannot start without it"));
        Path c = contentDir(r.digest());
        Path rootfs = c.resolve("rootfs");
        RootImage.RunAs runAs;
        try {
            runAs = ImageUser.resolve(rootfs, r.user()).orElse(null);
        } catch (ImageException e) {
            throw new ImageException("image " + (name == null ? "" : "'" + name + "' ") + r.digest() + ": " + e.getMessage(), e);
        }
        return new RootImage(name, r.digest(), rootfs, c.resolve("base.ext4"), runAs, false);
    }

    Path contentDir(String digest) { return store.resolve(digest.substring("sha256:".length())); }

    private Map<String, String> names() throws IOException {
        Path f = dir.resolve("names.meta");
        if (!Files.isRegularFile(f)) return new TreeMap<>();
        JsonNode n = JSON.readTree(MetaFile.read(f, NAMES_KIND, NAMES_VERSION)).path("names");
        Map<String, String> out = new TreeMap<>();
        n.properties().forEach(e -> out.put(e.getKey(), e.getValue().asString()));
        return out;
    }

    private void writeNames(Map<String, String> names) throws IOException {
        writeNames(names, defaultName().orElse(null));
    }

    private void writeNames(Map<String, String> names, String dflt) throws IOException {
        Map<String, Object> body = new TreeMap<>();
        body.put("names", new TreeMap<>(names));
        if (dflt != null && names.containsKey(dflt)) body.put("default", dflt); // a removed name stops being the default
        MetaFile.write(dir.resolve("names.meta"), NAMES_KIND, NAMES_VERSION, JSON.writeValueAsString(body));
    }

    /**
     * The operator's default image: what {@code open_workspace} runs on when it names no image (on the levels that
     * open images; every tenant may open it). Empty: the levels' built-in images.
     */
    public Optional<String> defaultName() throws IOException {
        Path f = dir.resolve("names.meta");
        if (!Files.isRegularFile(f)) return Optional.empty();
        JsonNode d = JSON.readTree(MetaFile.read(f, NAMES_KIND, NAMES_VERSION)).path("default");
        return d.isString() ? Optional.of(d.asString()) : Optional.empty();
    }

    /** Makes {@code name} the default image ({@link #defaultName}); null goes back to the built-in images. */
    public void setDefault(String name) throws ImageException, IOException {
        try (var lock = lock()) {
            Map<String, String> names = names();
            if (name != null && !names.containsKey(name)) {
                throw new ImageException("no image named '" + name + "' (images: " + names.keySet() + ")");
            }
            writeNames(names, name);
        }
    }

    // ---------------------------------------------------------------- import

    /**
     * Imports an OCI image layout ({@code PATH} or {@code PATH:TAG}) or a docker/podman save archive under
     * {@code name} (which then points at it, replacing what it pointed at). {@code progress} gets one line per step.
     */
    public ImageRecord importFrom(String source, String name, ImportLimits limits, Consumer<String> progress)
            throws ImageException, IOException {
        Path abs = Path.of(source.contains(":") && !Files.exists(Path.of(source)) ? source.substring(0, source.lastIndexOf(':')) : source)
                .toAbsolutePath();
        String origin = (Files.isDirectory(abs) ? "oci-layout:" : "archive:") + Path.of(source).toAbsolutePath();
        // an archive holds the layers (uncompressed in docker's format) and a little metadata
        long maxArchive = limits.maxLayerBytes() + limits.maxTreeBytes() + (64L << 20);
        return importWith(name, limits, progress, scratch -> OciSource.open(source, scratch, maxArchive), origin);
    }

    /** Pulls {@code ref} from a registry (distribution API v2, token or basic auth) and imports it under {@code name}. */
    public ImageRecord pull(String ref, String name, ImportLimits limits, RegistryClient.Credentials credentials,
                            boolean plainHttp, Consumer<String> progress) throws ImageException, IOException {
        RegistryClient.Reference r = RegistryClient.Reference.parse(ref);
        return importWith(name, limits, progress, scratch -> {
            Path layout = scratch.resolve("layout");
            new RegistryClient(credentials, plainHttp, progress).pull(r, layout, limits);
            return OciSource.layout(layout, null);
        }, "registry:" + r);
    }

    @FunctionalInterface
    interface SourceOpener {
        OciSource.Resolved open(Path scratch) throws IOException, ImageException;
    }

    ImageRecord importWith(String name, ImportLimits limits, Consumer<String> progress, SourceOpener opener, String origin)
            throws ImageException, IOException {
        return importWith(name, limits, progress, opener, origin, Map.of());
    }

    /**
     * Makes a finished root tree (a recipe build's result) an image under {@code name}: one layer holding the tree
     * as it is on disk (numeric owners kept), imported like any other, with {@code defaults} as the config's
     * {@code config} ({@code Env}, {@code WorkingDir}, {@code User}) and {@code buildLog} kept as its {@code build.log}.
     */
    public ImageRecord importTree(Path tree, String name, String architecture, Map<String, Object> defaults, String origin,
                                  String buildLog, ImportLimits limits, Consumer<String> progress) throws ImageException, IOException {
        return importWith(name, limits, progress, scratch -> OciSource.layout(TreeLayout.write(tree, scratch.resolve("layout"),
                architecture, defaults), null), origin, buildLog == null ? Map.of() : Map.of(BUILD_LOG, buildLog));
    }

    /**
     * Makes an ext4 root filesystem (the microVM developer image's {@code base.ext4}) an image under {@code name}: its
     * files are read with {@code debugfs rdump} (owners, modes and links kept; no mount, no loop device; device nodes
     * and FIFOs are not copied) into a scratch tree, which is then imported like a recipe's result
     * ({@link #importTree}). When {@code name} already points at an image of the same {@code origin} (which names the
     * disk's content, e.g. the developer image's content-derived id), that image is returned and nothing is read.
     */
    public ImageRecord importBaseDisk(Path ext4, String name, Map<String, Object> defaults, String origin,
                                      ImportLimits limits, Consumer<String> progress) throws ImageException, IOException {
        checkName(name);
        Optional<String> have = digestOf(name);
        Optional<ImageRecord> rec = have.isPresent() ? byDigest(have.get()) : Optional.empty();
        if (rec.isPresent() && origin.equals(rec.get().origin())) {
            progress.accept("image " + name + " = " + rec.get().digest() + " is " + origin + " already");
            return rec.get();
        }
        if (!Files.isRegularFile(ext4)) throw new ImageException(ext4 + " is not a file (an ext4 filesystem image)");
        Files.createDirectories(dir);
        traverseOnly(dir);
        Path scratch = Files.createTempDirectory(dir, ".import-" + ProcessHandle.current().pid() + "-disk-");
        try {
            Path tree = scratch.resolve("rootfs");
            Files.createDirectory(tree);
            if (tree.toString().contains("\"") || tree.toString().contains("\n")) throw new ImageException("unusable path " + tree);
            progress.accept("reading the files of " + ext4 + " (debugfs rdump)");
            HostCommand.exec("debugfs", "-R", "rdump / \"" + tree + "\"", ext4.toString());
            Trees.delete(tree.resolve("lost+found"));
            try (var s = Files.list(tree)) {
                if (s.findAny().isEmpty()) throw new ImageException("no files could be read from " + ext4 + " (not an ext4 filesystem?)");
            }
            return importTree(tree, name, OciSource.hostArchitecture(), defaults, origin, null, limits, progress);
        } finally {
            Trees.delete(scratch);
        }
    }

    /** The build log kept with an image built from a recipe, or empty. */
    public Optional<Path> buildLog(String digest) throws IOException {
        if (digest == null || !OciSource.DIGEST.matcher(digest).matches()) return Optional.empty();
        Path f = contentDir(digest).resolve(BUILD_LOG);
        return Files.isRegularFile(f) ? Optional.of(f) : Optional.empty();
    }

    static final String BUILD_LOG = "build.log";

    private ImageRecord importWith(String name, ImportLimits limits, Consumer<String> progress, SourceOpener opener, String origin,
                                   Map<String, String> extraFiles) throws ImageException, IOException {
        checkName(name);
        long t0 = System.nanoTime();
        Files.createDirectories(store);
        traverseOnly(dir);
        traverseOnly(store);
        Path scratch = Files.createTempDirectory(dir, ".import-" + ProcessHandle.current().pid() + "-");
        try {
            OciSource.Resolved img = opener.open(scratch);
            Optional<ImageRecord> have = byDigest(img.digest());
            if (have.isPresent()) {
                progress.accept("image " + img.digest() + " is in the store already");
                name(name, img.digest());
                return have.get();
            }
            long layerBytes = 0;
            for (OciSource.Layer l : img.layers()) layerBytes += Files.size(l.blob());
            if (layerBytes > limits.maxLayerBytes()) {
                throw new ImageException("the image's layers are " + (layerBytes >> 20) + " MiB, above the limit of "
                        + (limits.maxLayerBytes() >> 20) + " MiB");
            }
            Path rootfs = scratch.resolve("rootfs");
            Files.createDirectory(rootfs);
            Files.setPosixFilePermissions(rootfs, PosixFilePermissions.fromString("rwxr-xr-x"));
            ImportReport.Builder report = new ImportReport.Builder();
            LayerApplier applier = new LayerApplier(rootfs, limits.maxTreeBytes(), report);
            List<ImageRecord.LayerInfo> layers = new ArrayList<>();
            int i = 0;
            for (OciSource.Layer l : img.layers()) {
                i++;
                String label = "layer " + i + "/" + img.layers().size() + (l.digest() == null ? "" : " " + l.digest());
                progress.accept("applying " + label + " (" + Files.size(l.blob()) + " bytes)");
                if (l.digest() != null) OciSource.checkDigest(l.blob(), l.digest(), label);
                String diff = applier.apply(l.blob(), label);
                if (!diff.equals(l.diffId())) {
                    throw new ImageException(label + ": uncompressed content is " + diff + ", the config says " + l.diffId()
                            + ": the layer is corrupt or truncated");
                }
                layers.add(new ImageRecord.LayerInfo(l.digest(), l.diffId(), Files.size(l.blob())));
            }
            addMountPoints(rootfs, report);
            progress.accept("building the read-only ext4 base (" + (applier.treeBytes() >> 20) + " MiB of files)");
            Path ext4 = scratch.resolve("base.ext4");
            BaseDisk.build(rootfs, ext4, applier.treeBytes());
            JsonNode cfg = img.config().path("config");
            List<String> env = new ArrayList<>();
            for (JsonNode e : cfg.path("Env")) env.add(e.asString(""));
            String wd = cfg.path("WorkingDir").asString("");
            String user = cfg.path("User").asString("");
            ImageUser.resolve(rootfs, user); // a User the image cannot run as is refused now, not at every open
            ImageRecord rec = new ImageRecord(img.digest(), img.configDigest(), origin, img.architecture(), layers, layerBytes,
                    applier.treeBytes(), BaseDisk.allocated(ext4), DRIVERS, env, wd.isEmpty() ? null : wd,
                    user.isEmpty() ? null : user, Instant.now().toString(), (System.nanoTime() - t0) / 1_000_000, report.build());
            // only what the image is made of stays: the source's copy (archive, pulled layout) goes
            for (String extra : List.of("archive", "layout")) Trees.delete(scratch.resolve(extra));
            for (var e : extraFiles.entrySet()) Files.writeString(scratch.resolve(e.getKey()), e.getValue());
            MetaFile.write(scratch.resolve("image.meta"), KIND, VERSION, JSON.writeValueAsString(rec));
            traverseOnly(scratch);
            try (var lock = lock()) {
                Path target = contentDir(img.digest());
                if (!Files.isDirectory(target)) Files.move(scratch, target, StandardCopyOption.ATOMIC_MOVE);
                name(name, img.digest());
            }
            progress.accept("imported " + name + " = " + img.digest() + ": " + (rec.treeBytes() >> 20) + " MiB of files, ext4 base "
                    + (rec.baseDiskBytes() >> 20) + " MiB, layers " + (layerBytes >> 20) + " MiB; " + rec.report().summary());
            return rec;
        } finally {
            Trees.delete(scratch); // gone already when it became the image
        }
    }

    /**
     * Where sandboxes mount their own things ({@code /proc}, {@code /dev}, {@code /tmp}, {@code /run}, the workspace's
     * writable layer): created as empty root-owned directories when the image lacks them (and empty files for the
 * {@code /etc} files a sandbox puts its own over, {@code GuestNames.ETC_FILES}), so that nothing has to be
     * made in the read-only tree later. Never through a link: a mount point that is a link is left as it is (and
     * reported), and the namespace driver then refuses to start on the image.
     */
    static final List<String> MOUNT_POINTS = List.of("proc", "dev", "sys", "tmp", "run", "etc", "workspace", "root", "usr",
            "usr/local", "var");

    private static void addMountPoints(Path rootfs, ImportReport.Builder report) throws IOException {
        for (String m : MOUNT_POINTS) {
            Path p = rootfs.resolve(m);
            if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) continue;
            if (Files.exists(p, LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(p.getParent())) {
                report.changed("/" + m + ": not a directory in the image, so no mount point was added there");
                continue;
            }
            Files.createDirectory(p);
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(m.equals("tmp") ? "rwxrwxrwx" : "rwxr-xr-x"));
        }
        // and for the files of /etc that every workspace gets its own of (hosts, hostname, resolver: GuestNames)
        for (String f : dev.berth.engine.host.GuestNames.addMountPoints(rootfs)) {
            report.changed(f + ": a link or not a file in the image, so workspaces keep the image's own");
        }
    }

    private void name(String name, String digest) throws IOException {
        try (var lock = lock()) {
            Map<String, String> names = names();
            names.put(name, digest);
            writeNames(names);
        }
    }

    // ---------------------------------------------------------------- removal

    /** What {@link #remove} and {@link #gc} did. */
    public record Removal(List<String> names, List<String> digests, long bytesFreed) {}

    /**
     * Removes a name; its content goes too when no other name points at it. Refused while the image is in use.
     *
     * @param inUse digest -> what uses it (workspaces, snapshots), as the engine knows
     */
    public Removal remove(String name, Map<String, List<String>> inUse) throws ImageException, IOException {
        try (var lock = lock()) {
            Map<String, String> names = names();
            String digest = names.get(name);
            if (digest == null) throw new ImageException("no image named '" + name + "' (images: " + names.keySet() + ")");
            List<String> users = inUse.getOrDefault(digest, List.of());
            if (!users.isEmpty()) {
                throw new ImageException("image '" + name + "' (" + digest + ") is in use by " + String.join(", ", users)
                        + "; close those workspaces and delete those snapshots first");
            }
            names.remove(name);
            writeNames(names);
            if (names.containsValue(digest)) return new Removal(List.of(name), List.of(), 0);
            long bytes = Trees.bytes(contentDir(digest));
            Trees.delete(contentDir(digest));
            return new Removal(List.of(name), List.of(digest), bytes);
        }
    }

    /** Deletes content no name points at and nothing uses, and imports a dead process left half-done. */
    public Removal gc(Map<String, List<String>> inUse) throws IOException {
        List<String> digests = new ArrayList<>();
        long bytes = 0;
        if (!Files.isDirectory(dir)) return new Removal(List.of(), List.of(), 0);
        try (var lock = lock()) {
            var named = names().values();
            if (Files.isDirectory(store)) {
                try (var s = Files.list(store)) {
                    for (Path c : s.toList()) {
                        String d = "sha256:" + c.getFileName();
                        if (named.contains(d) || inUse.containsKey(d)) continue;
                        bytes += Trees.bytes(c);
                        Trees.delete(c);
                        digests.add(d);
                    }
                }
            }
            try (var s = Files.list(dir)) {
                for (Path c : s.toList()) {
                    String f = c.getFileName().toString();
                    if (!f.startsWith(".import-")) continue;
                    long pid = Long.parseLong(f.split("-")[1]);
                    if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) continue;
                    bytes += Trees.bytes(c);
                    Trees.delete(c);
                }
            }
        }
        return new Removal(List.of(), digests, bytes);
    }

    // ---------------------------------------------------------------- locking

    /** The mutex orders threads (reentrant: an import names its image under the lock it holds) and processes. */
    private FileMutex.Held lock() throws IOException {
        Files.createDirectories(dir);
        return FileMutex.of(dir.resolve(".lock")).lock();
    }

    private static void traverseOnly(Path p) throws IOException {
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx--x--x"));
    }
}
