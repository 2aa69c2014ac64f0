package dev.berth.engine.image;

import dev.berth.engine.spi.RootImage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Resolves an image config's {@code User} ({@code name}, {@code uid}, {@code name:group}, {@code uid:gid} and the
 * mixed forms, as docker and podman accept them) to numeric ids through the image's own {@code /etc/passwd} and
 * {@code /etc/group}. Stateless.
 *
 * <p>The image's files are hostile: {@code /etc}, {@code /etc/passwd} and {@code /etc/group} are read only when
 * they are regular files and directories inside the tree (a link is refused, never followed to the host), and at
 * most {@link #MAX_FILE} bytes of each.
 */
public final class ImageUser {
    static final int MAX_FILE = 1 << 20;
    private static final Pattern NUMBER = Pattern.compile("[0-9]+");

    private ImageUser() {}

    /**
     * The ids runs take for {@code user} in the image at {@code rootTree}; empty when the image says nothing (runs as
     * root). Refused when a name is not in the image's files or an id is out of range.
     */
    public static Optional<RootImage.RunAs> resolve(Path rootTree, String user) throws ImageException, IOException {
        if (user == null || user.isBlank()) return Optional.empty();
        String u = user.strip();
        int colon = u.indexOf(':');
        String userPart = colon < 0 ? u : u.substring(0, colon);
        String groupPart = colon < 0 ? null : u.substring(colon + 1);
        if (userPart.isEmpty() || (groupPart != null && groupPart.isEmpty())) {
            throw new ImageException("the image's User '" + user + "' is not NAME, UID, NAME:GROUP or UID:GID");
        }
        long uid;
        long gid;
        String name;
        String[] pw = NUMBER.matcher(userPart).matches() ? entry(rootTree, "passwd", userPart, 2) : entry(rootTree, "passwd", userPart, 0);
        if (NUMBER.matcher(userPart).matches()) {
            uid = id(userPart, user);
            name = pw == null ? null : pw[0];
            gid = pw == null ? 0 : id(pw[3], user); // as docker: a uid without a passwd entry runs with gid 0
        } else {
            if (pw == null) {
                throw new ImageException("the image's User '" + user + "': no user '" + userPart + "' in the image's /etc/passwd");
            }
            uid = id(pw[2], user);
            gid = id(pw[3], user);
            name = pw[0];
        }
        if (groupPart != null) {
            if (NUMBER.matcher(groupPart).matches()) {
                gid = id(groupPart, user);
            } else {
                String[] gr = entry(rootTree, "group", groupPart, 0);
                if (gr == null) {
                    throw new ImageException("the image's User '" + user + "': no group '" + groupPart + "' in the image's /etc/group");
                }
                gid = id(gr[2], user);
            }
        }
        if (uid == 0 && gid == 0) return Optional.empty();
        return Optional.of(new RootImage.RunAs(name, (int) uid, (int) gid));
    }

    private static long id(String s, String user) throws ImageException {
        if (!NUMBER.matcher(s).matches() || s.length() > 10 || Long.parseLong(s) > 0xFFFF_FFFEL) {
            throw new ImageException("the image's User '" + user + "': '" + s + "' is not a valid user or group id");
        }
        return Long.parseLong(s);
    }

    /** The colon-separated line of {@code etc/FILE} whose field {@code field} is {@code key}, or null. */
    private static String[] entry(Path rootTree, String file, String key, int field) throws ImageException, IOException {
        Path etc = rootTree.resolve("etc");
        Path f = etc.resolve(file);
        if (!Files.exists(f, LinkOption.NOFOLLOW_LINKS)) return null;
        if (!Files.isDirectory(etc, LinkOption.NOFOLLOW_LINKS) || !Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
            throw new ImageException("the image's /etc/" + file + " is not a regular file in a directory (a link?); it is not read");
        }
        byte[] bytes;
        try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
            bytes = in.readNBytes(MAX_FILE);
        }
        for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
            String[] p = line.split(":", -1);
            if (p.length >= 4 && p[field].equals(key)) return p;
        }
        return null;
    }
}
