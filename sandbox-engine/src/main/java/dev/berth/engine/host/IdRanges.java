package dev.berth.engine.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The host ids namespace workspaces are mapped onto when Berth is root: an operator-set subordinate range, cut into
 * one slot of {@code perWorkspace} ids (65,536 by default, as rootless containers get) for each workspace. Inside,
 * ids 0..perWorkspace-1 are the slot's ids on the host, so a workspace's root can chown, add users and drop to them,
 * while the host sees every file it made owned by an id of its own slot, never by a host user's.
 *
 * <p>Slots are claimed with a file per slot in {@code dir} (created atomically, naming the claiming workspace's
 * state directory) and recorded in that state directory ({@value #RECORD}), so a workspace keeps its ids across
 * park, resume and server restarts. The claim goes when the workspace is deleted ({@link #release}); one whose state
 * directory is gone anyway, or whose record names another slot, is stale (a crash) and is taken over. Thread-safe within one server (one owner per home): claims are
 * made under this object's lock.
 *
 * @param start        the first host id of the range
 * @param length       how many ids the range holds
 * @param perWorkspace ids per workspace
 */
public record IdRanges(long start, long length, int perWorkspace) {
    /** The record of a workspace's slot in its state directory: its first host id. */
    public static final String RECORD = "ids";
    /** The default: 4,096 slots of 65,536 ids from 1,000,000,000, below the microVM jails' ids ({@link HostIdentity#UID_BASE}). */
    public static final IdRanges DEFAULT = new IdRanges(1_000_000_000L, 4096L * 65536, 65536);
    /** The largest id a range may reach (ids are Java ints in the layout code; uid_t itself goes to 4,294,967,293). */
    static final long MAX_ID = Integer.MAX_VALUE;

    public IdRanges {
        if (perWorkspace < 1024 || perWorkspace > 1 << 24) {
            throw new IllegalArgumentException("ids per workspace must be within 1024..16777216, got " + perWorkspace);
        }
        if (start < 1 || length < perWorkspace || start + length - 1 > MAX_ID) {
            throw new IllegalArgumentException("the workspace id range " + start + "+" + length + " must start above 0, hold at least "
                    + perWorkspace + " ids (one workspace's) and end at or below " + MAX_ID);
        }
    }

    /** How many workspaces the range holds at once. */
    public long slots() { return length / perWorkspace; }

    /** The range, as written in the setting: {@code START+LENGTH}. */
    @Override
    public String toString() { return start + "+" + length; }

    /**
     * Refuses a range that overlaps a host user or group ({@code passwd}, {@code group}), another user's subordinate
     * ids ({@code subuid}, {@code subgid}), the microVM jails' ids, or that holds fewer slots than {@code workspaces},
     * naming the numbers.
     *
     * @param etc the host's /etc (a test's copy elsewhere)
     */
    public void check(Path etc, int workspaces) {
        if (slots() < workspaces) {
            throw new IllegalArgumentException("the workspace id range " + this + " holds " + slots() + " workspaces of " + perWorkspace
                    + " ids, fewer than the " + workspaces + " live workspaces configured; give it at least "
                    + (long) workspaces * perWorkspace + " ids or lower the workspace count");
        }
        long end = start + length; // exclusive
        if (start < HostIdentity.UID_BASE + (long) HostIdentity.UID_SPAN && HostIdentity.UID_BASE < end) {
            throw new IllegalArgumentException("the workspace id range " + this + " overlaps the ids of the microVM jails ("
                    + HostIdentity.UID_BASE + "+" + HostIdentity.UID_SPAN + ")");
        }
        for (String db : List.of("passwd", "group")) {
            for (String[] f : entries(etc.resolve(db))) {
                if (f.length < 3) continue;
                long id = parse(f[2]);
                if (id >= start && id < end) {
                    throw new IllegalArgumentException("the workspace id range " + this + " overlaps the host's " + ("passwd".equals(db) ? "user" : "group")
                            + " '" + f[0] + "' (id " + id + " in " + etc.resolve(db) + ")");
                }
            }
        }
        for (String db : List.of("subuid", "subgid")) {
            for (String[] f : entries(etc.resolve(db))) {
                if (f.length < 3) continue;
                long s = parse(f[1]), n = parse(f[2]);
                if (s >= 0 && n > 0 && s < end && start < s + n) {
                    throw new IllegalArgumentException("the workspace id range " + this + " overlaps the subordinate ids of '" + f[0]
                            + "' (" + s + "+" + n + " in " + etc.resolve(db) + ")");
                }
            }
        }
    }

    /**
     * The first host id of the workspace whose state is {@code state}: the slot it recorded, or a free slot claimed
     * now (the first free one from a place derived from its id, so claims spread) and recorded.
     *
     * @param dir where the claims live (one per home)
     * @throws IOException when every slot is taken, naming how many there are
     */
    public synchronized long claim(Path dir, Path state, String workspaceId) throws IOException {
        long recorded = recorded(state);
        if (recorded >= 0 && recorded >= start && recorded + perWorkspace <= start + length && (recorded - start) % perWorkspace == 0) {
            Path mine = dir.resolve(slotName((recorded - start) / perWorkspace));
            if (!Files.exists(mine, LinkOption.NOFOLLOW_LINKS)) write(mine, state); // claims lost with the home's ids/ directory
            return recorded;
        }
        Files.createDirectories(dir);
        CRC32C c = new CRC32C();
        c.update(workspaceId.getBytes(StandardCharsets.US_ASCII));
        long n = slots();
        long from = c.getValue() % n;
        for (long i = 0; i < n; i++) {
            long slot = (from + i) % n;
            Path claim = dir.resolve(slotName(slot));
            if (Files.exists(claim, LinkOption.NOFOLLOW_LINKS) && !stale(claim)) continue;
            Files.deleteIfExists(claim);
            try {
                Files.writeString(claim, state.toAbsolutePath() + "\n", StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE_NEW,
                        java.nio.file.StandardOpenOption.WRITE);
            } catch (FileAlreadyExistsException e) {
                continue;
            }
            long first = start + slot * perWorkspace;
            Files.createDirectories(state);
            Path tmp = state.resolve(RECORD + ".tmp");
            Files.writeString(tmp, first + "\n");
            Files.move(tmp, state.resolve(RECORD), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return first;
        }
        throw new IOException("every one of the " + n + " workspace id ranges of " + this + " is in use (" + perWorkspace
                + " ids each); close workspaces or widen berth.namespace.idRange");
    }

    /** Frees the slot of the workspace whose state is {@code state} (it is being deleted): its claim goes. */
    public synchronized void release(Path dir, Path state) {
        try {
            long first = recorded(state);
            if (first < start || first >= start + length) return;
            Path claim = dir.resolve(slotName((first - start) / perWorkspace));
            if (Files.isRegularFile(claim, LinkOption.NOFOLLOW_LINKS) && Files.readString(claim).strip().equals(state.toAbsolutePath().toString())) {
                Files.delete(claim);
            }
        } catch (IOException e) {
            // a claim left behind is stale once the state directory is gone: the next claim takes it over
        }
    }

    /** The first host id recorded in a workspace's (or snapshot's) state, or -1 when it has none. */
    public static long recorded(Path state) throws IOException {
        Path f = state.resolve(RECORD);
        if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) return -1;
        String v = Files.readString(f).strip();
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IOException(f + " does not hold a host id: '" + v + "'");
        }
    }

    /** Whether a claim belongs to no workspace any more: its state directory is gone or records another slot. */
    private boolean stale(Path claim) throws IOException {
        String owner;
        try {
            owner = Files.readString(claim).strip();
        } catch (NoSuchFileException e) {
            return true;
        }
        if (owner.isEmpty()) return true;
        long slot = Long.parseLong(claim.getFileName().toString().substring("slot-".length()));
        return recorded(Path.of(owner)) != start + slot * perWorkspace;
    }

    private static void write(Path claim, Path state) throws IOException {
        Files.createDirectories(claim.getParent());
        Files.writeString(claim, state.toAbsolutePath() + "\n");
    }

    private static String slotName(long slot) { return "slot-" + slot; }

    private static List<String[]> entries(Path file) {
        List<String[]> out = new ArrayList<>();
        try {
            for (String l : Files.readAllLines(file)) {
                if (l.isBlank() || l.startsWith("#")) continue;
                out.add(l.split(":", -1));
            }
        } catch (IOException e) {
            // a host without the file has no entries in it
        }
        return out;
    }

    private static long parse(String v) {
        try {
            return Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Parses the setting {@code START+LENGTH} (for example {@code 1000000000+268435456}).
     *
     * @throws IllegalArgumentException naming the setting and the expected form
     */
    public static IdRanges parse(String value, int perWorkspace) {
        String v = value.strip();
        int plus = v.indexOf('+');
        try {
            if (plus <= 0) throw new NumberFormatException();
            return new IdRanges(Long.parseLong(v.substring(0, plus).strip()), Long.parseLong(v.substring(plus + 1).strip()), perWorkspace);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("berth.namespace.idRange must be START+LENGTH in host ids (for example "
                    + DEFAULT + "), not '" + value + "'");
        }
    }
}
