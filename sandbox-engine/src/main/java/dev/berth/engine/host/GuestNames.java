package dev.berth.engine.host;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The names a workspace sees on every level, so that it looks like a normal machine: the hostname
 * {@value #HOSTNAME}, an {@code /etc/hosts} with {@code localhost} (IPv4 and IPv6) and the hostname, an
 * {@code /etc/resolv.conf} under which every other name fails at once, and an {@code /etc/nsswitch.conf} that reads
 * {@code /etc/hosts} first. The microVM guest's init ({@code images/init}, {@code names}) writes the same content by
 * the same rules. Stateless.
 *
 * <p>Implementation notes: there is no DNS inside a workspace (no network device but loopback; names are resolved
 * by the egress proxy at {@code HTTP(S)_PROXY}). The resolver is pointed at {@code 127.0.0.1}, where nothing
 * listens: a lookup is refused by the loopback device at once (glibc, Go and c-ares report it in milliseconds as a
 * temporary failure, {@code EAI_AGAIN}); {@code timeout:1 attempts:1} bounds resolvers that do not see the refusal
 * (musl) to one second. The hostname is one fixed name rather than one per workspace: forks, warm-pool workspaces and
 * microVM workspaces restored from a booted base carry another workspace's memory, where the kernel's name and
 * every process that read it would keep the old one.
 *
 * <p>A workspace's {@code /etc/hosts} is its own and writable, like a normal machine's: on the levels on the host
 * kernel a file in its writable layer ({@link #ensureHosts}) bound over {@code /etc/hosts}, made from the image's
 * own file (if any) with the entries added that it lacks; in a microVM the guest's own file. The entries are
 * re-added at every start when a workload removed them; nothing else in the file is touched.
 */
public final class GuestNames {
    /** The hostname of every workspace: a valid DNS label, the name of its project directory. */
    public static final String HOSTNAME = "workspace";

    /** Where a workspace's own hosts file lives in its writable layer (bound over {@code /etc/hosts}). */
    public static final String LAYER_HOSTS = "etc/hosts";

    /** A hosts file larger than this is a workload's doing: it is left as it is, not read by the host. */
    static final int MAX_HOSTS_BYTES = 1 << 20;

    /** What /etc/hosts holds when the image brings none. */
    public static final String DEFAULT_HOSTS = """
            127.0.0.1\tlocalhost
            127.0.1.1\tworkspace
            ::1\tlocalhost ip6-localhost ip6-loopback
            ff02::1\tip6-allnodes
            ff02::2\tip6-allrouters
            """;

    /** Every workspace's /etc/hostname. */
    public static final String HOSTNAME_FILE = HOSTNAME + "\n";

    /** Every workspace's /etc/resolv.conf: no DNS, and it says why. */
    public static final String RESOLV_CONF = """
            # Berth workspace: there is no DNS server and no network device but loopback here.
            # Programs reach the outside through the egress proxy (HTTP_PROXY / HTTPS_PROXY), which resolves
            # names itself: give it the name, not an address. localhost and the hostname resolve via /etc/hosts;
            # any other lookup fails at once (nothing answers on 127.0.0.1:53) instead of waiting for a timeout.
            nameserver 127.0.0.1
            options timeout:1 attempts:1
            """;

    /** /etc/nsswitch.conf where the image brings none: files first, as Debian's default. */
    public static final String NSSWITCH_CONF = """
            passwd:         files
            group:          files
            shadow:         files
            gshadow:        files
            hosts:          files dns
            networks:       files
            protocols:      db files
            services:       db files
            ethers:         db files
            rpc:            db files
            """;

    /** The files of an image's /etc the levels on the host kernel put their own over (and need mount points for). */
    public static final List<String> ETC_FILES = List.of("hosts", "hostname", "resolv.conf", "nsswitch.conf");

    private GuestNames() {}

    /**
     * {@code existing} (an image's or a workspace's hosts file, or null) with every entry a workspace needs that it
     * lacks appended: {@code 127.0.0.1 localhost}, {@code ::1 localhost ...} and a line naming the hostname.
     * An entry counts when a line (comments aside) starts with its address and names the name anywhere after it;
     * for the hostname any address will do (the image or the workload chose it).
     */
    public static String hosts(String existing) {
        if (existing == null || existing.isBlank()) return DEFAULT_HOSTS;
        StringBuilder out = new StringBuilder(existing);
        if (!existing.endsWith("\n")) out.append('\n');
        List<String[]> lines = new ArrayList<>();
        for (String l : existing.split("\n")) {
            int hash = l.indexOf('#');
            String t = (hash >= 0 ? l.substring(0, hash) : l).strip();
            if (!t.isEmpty()) lines.add(t.split("\\s+"));
        }
        if (!names(lines, "127.0.0.1", "localhost")) out.append("127.0.0.1\tlocalhost\n");
        if (!names(lines, "::1", "localhost")) out.append("::1\tlocalhost ip6-localhost ip6-loopback\n");
        if (!names(lines, null, HOSTNAME)) out.append("127.0.1.1\t").append(HOSTNAME).append('\n');
        return out.toString();
    }

    private static boolean names(List<String[]> lines, String address, String name) {
        for (String[] f : lines) {
            if (address != null && !f[0].equals(address)) continue;
            for (int i = 1; i < f.length; i++) if (f[i].equals(name)) return true;
        }
        return false;
    }

    /**
     * Makes the workspace's own hosts file in its layer ({@link #LAYER_HOSTS}) hold what {@link #hosts} requires:
     * made from {@code imageHosts} (an imported image's file, or null) when missing, the missing entries appended
     * when a workload removed them. The file is the sandbox's to write: it is given to its uid. Hostile content is
     * handled without following links: a link or other non-file in its place is replaced, a file above
     * {@link #MAX_HOSTS_BYTES} is left as it is.
     *
     * @return the file, to be bound over {@code /etc/hosts}
     */
    public static Path ensureHosts(Layout layout, Path imageHosts) throws IOException {
        Path dir = layout.layer().resolve("etc");
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) HostCommand.exec("rm", "-rf", dir.toString());
            Files.createDirectory(dir);
        }
        Path file = dir.resolve("hosts");
        String current = null;
        if (Files.exists(file, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            HostCommand.exec("rm", "-rf", file.toString());
        } else if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            current = readCapped(file);
            if (current == null) return file; // the workload made it huge: its own business
        }
        String base = current != null ? current : imageHosts == null ? null : readCapped(imageHosts);
        String want = hosts(base);
        if (!want.equals(current)) {
            if (current == null) {
                Files.writeString(file, want, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            } else {
                // append only what is missing: the file may be open in the workspace, and its inode is the bind's
                try (var ch = Files.newByteChannel(file, Set.of(StandardOpenOption.WRITE, StandardOpenOption.APPEND, LinkOption.NOFOLLOW_LINKS))) {
                    ch.write(ByteBuffer.wrap(want.substring(current.length()).getBytes(StandardCharsets.UTF_8)));
                }
            }
        }
        layout.chownForSandbox(file);
        Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        return file;
    }

    /** The file's text, or null when it is not a regular file or is larger than {@link #MAX_HOSTS_BYTES}; never follows a link. */
    static String readCapped(Path file) throws IOException {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) return null;
        try (SeekableByteChannel ch = Files.newByteChannel(file, Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS));
             InputStream in = java.nio.channels.Channels.newInputStream(ch)) {
            byte[] b = in.readNBytes(MAX_HOSTS_BYTES + 1);
            return b.length > MAX_HOSTS_BYTES ? null : new String(b, StandardCharsets.UTF_8);
        }
    }

    /**
     * Mount points for the files the levels on the host kernel put over an imported image's {@code /etc}
     * ({@link #ETC_FILES}): empty root-owned files where the image has none, so that nothing has to be made in the
     * read-only tree when a sandbox starts. Never through a link: an entry that is a link (an {@code /etc} that is
     * one, or a {@code resolv.conf} pointing into {@code /run}) is left as it is, and that file is not put over.
     * Idempotent; the image store calls it at import, the drivers again for images imported before it.
     *
     * @return the entries that could not get a mount point, for the import report
     */
    public static List<String> addMountPoints(Path rootTree) throws IOException {
        List<String> skipped = new ArrayList<>();
        Path etc = rootTree.resolve("etc");
        if (!Files.isDirectory(etc, LinkOption.NOFOLLOW_LINKS)) {
            for (String f : ETC_FILES) skipped.add("/etc/" + f);
            return skipped;
        }
        for (String f : ETC_FILES) {
            Path p = etc.resolve(f);
            if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) continue;
            if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                skipped.add("/etc/" + f);
                continue;
            }
            try {
                Files.createFile(p);
                Files.setPosixFilePermissions(p, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            } catch (FileAlreadyExistsException raced) {
                // another start made it
            }
        }
        return skipped;
    }

    /**
     * Before a sandbox on the host kernel starts: the image's mount points (images imported before they were made at
     * import; never in a recipe build's writable root, whose files become the built image) and the workspace's own
     * hosts file, made from the image's.
     */
    public static void prepare(dev.berth.engine.spi.RootImage image, Layout layout) throws IOException {
        if (image != null && !image.writable()) addMountPoints(image.rootTree());
        ensureHosts(layout, image == null ? null : image.rootTree().resolve("etc/hosts"));
    }

    /** A file put over one of {@code /etc}'s in a sandbox: a bind of {@code source} on {@code target}. */
    public record Cover(Path source, String target, boolean writable) {}

    /**
     * What a sandbox on the host kernel puts over its {@code /etc}: the workspace's own hosts file ({@code hosts},
     * from {@link #ensureHosts}), and over an imported image's {@code /etc} also the hostname and resolver files of
     * the built-in one ({@code baseEtc}) and its nsswitch.conf where the image brings none. Only over regular files
     * (mount points, {@link #addMountPoints}); an image whose entry is a link keeps its own.
     *
     * @param rootTree the imported image's root tree, or null for the built-in /etc (which holds the rest already)
     */
    public static List<Cover> covers(Path rootTree, Path baseEtc, Path hosts) throws IOException {
        List<Cover> out = new ArrayList<>();
        if (rootTree == null) {
            out.add(new Cover(hosts, "/etc/hosts", true));
            return out;
        }
        if (canCover(rootTree, "hostname")) out.add(new Cover(baseEtc.resolve("hostname"), "/etc/hostname", false));
        if (canCover(rootTree, "resolv.conf")) out.add(new Cover(baseEtc.resolve("resolv.conf"), "/etc/resolv.conf", false));
        if (canCover(rootTree, "nsswitch.conf") && !imageHasNsswitch(rootTree)) {
            out.add(new Cover(baseEtc.resolve("nsswitch.conf"), "/etc/nsswitch.conf", false));
        }
        if (canCover(rootTree, "hosts")) out.add(new Cover(hosts, "/etc/hosts", true));
        return out;
    }

    /** Whether the image's own {@code /etc/name} is a regular file a sandbox can have another file bound over. */
    public static boolean canCover(Path rootTree, String name) {
        return Files.isRegularFile(rootTree.resolve("etc").resolve(name), LinkOption.NOFOLLOW_LINKS)
                && Files.isDirectory(rootTree.resolve("etc"), LinkOption.NOFOLLOW_LINKS);
    }

    /** Whether the image brings an nsswitch.conf of its own (a mount point made by {@link #addMountPoints} is empty). */
    public static boolean imageHasNsswitch(Path rootTree) throws IOException {
        Path p = rootTree.resolve("etc/nsswitch.conf");
        return Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) && Files.size(p) > 0;
    }
}
