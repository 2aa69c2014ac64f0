package dev.berth.engine.host;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * An idmapped bind mount (Linux 5.12+: {@code open_tree}, {@code mount_setattr(MOUNT_ATTR_IDMAP)}, {@code move_mount},
 * through the JDK's foreign function API): the tree at {@code from} appears at {@code to} with files owned on disk by
 * uid/gid {@code diskId} shown as, and written as, {@code hostId}; root stays root and other ids show as the overflow
 * id. A fork's disk image keeps the ownership of the workspace that made it and is mapped onto the fork's own uid in
 * constant time, instead of a {@code chown -R} of every file. Needs root. Stateless.
 *
 * <p>Implementation notes: the mapping is a user namespace's; one is made by an {@code unshare --user} child whose maps
 * root writes, held only until the mount has it (the kernel keeps a reference), then the child is killed.
 */
public final class IdmappedMount {
    private static final int AT_FDCWD = -100;
    private static final int AT_EMPTY_PATH = 0x1000;
    private static final int OPEN_TREE_CLONE = 1;
    private static final int O_CLOEXEC = 0x80000;
    private static final long MOUNT_ATTR_IDMAP = 0x00100000L;
    private static final int MOVE_MOUNT_F_EMPTY_PATH = 0x4;

    private static final StructLayout MOUNT_ATTR = MemoryLayout.structLayout(ValueLayout.JAVA_LONG.withName("attr_set"),
            ValueLayout.JAVA_LONG.withName("attr_clr"), ValueLayout.JAVA_LONG.withName("propagation"),
            ValueLayout.JAVA_LONG.withName("userns_fd"));
    private static final StructLayout ERRNO = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO_VALUE = ERRNO.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle OPEN_TREE;
    private static final MethodHandle MOUNT_SETATTR;
    private static final MethodHandle MOVE_MOUNT;
    private static final String UNAVAILABLE;

    static {
        MethodHandle open = null, close = null, openTree = null, setattr = null, move = null;
        String why = null;
        try {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            var errno = Linker.Option.captureCallState("errno");
            open = linker.downcallHandle(libc.find("open").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), errno);
            close = linker.downcallHandle(libc.find("close").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            openTree = linker.downcallHandle(libc.find("open_tree").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), errno);
            setattr = linker.downcallHandle(libc.find("mount_setattr").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG), errno);
            move = linker.downcallHandle(libc.find("move_mount").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                            ValueLayout.ADDRESS, ValueLayout.JAVA_INT), errno);
        } catch (RuntimeException | Error e) {
            why = "the C library has no open_tree/mount_setattr/move_mount (glibc 2.36+) or native access is denied: " + e;
        }
        OPEN = open;
        CLOSE = close;
        OPEN_TREE = openTree;
        MOUNT_SETATTR = setattr;
        MOVE_MOUNT = move;
        UNAVAILABLE = why;
    }

    private IdmappedMount() {}

    /** Null when idmapped mounts can be made here, else why not. */
    public static String unavailable() { return UNAVAILABLE; }

    /**
     * Mounts the tree at {@code from} (a mount's root) again at {@code to}, ids {@code diskId} -> {@code hostId} and
     * 0 -> 0 mapped. {@code from} stays mounted; the caller detaches it when only {@code to} should remain.
     */
    public static void bind(Path from, Path to, int diskId, int hostId) throws IOException { bind(from, to, diskId, hostId, 1); }

    /**
     * As {@link #bind(Path, Path, int, int)} for {@code count} ids: {@code diskId + i} -> {@code hostId + i} (a
     * namespace workspace's whole id range, so the owners its users gave their files carry over to a fork).
     */
    public static void bind(Path from, Path to, int diskId, int hostId, int count) throws IOException {
        if (diskId <= 0 || hostId <= 0 || count < 1) {
            throw new IllegalArgumentException("ids to map must be unprivileged, got " + diskId + " -> " + hostId + " (" + count + ")");
        }
        bindMap(from, to, "0 0 1\n" + diskId + " " + hostId + " " + count + "\n");
    }

    /**
     * An image's tree seen with its ids 0..count-1 as the host ids {@code hostId}..: a namespace workspace whose
     * ids are that slot sees the image's files with their own owners (root's as its root), instead of unmapped.
     * Host root is not mapped: nothing through this mount belongs to it.
     */
    public static void bindShifted(Path from, Path to, int hostId, int count) throws IOException {
        if (hostId <= 0 || count < 1) throw new IllegalArgumentException("ids to map must be unprivileged, got 0 -> " + hostId + " (" + count + ")");
        bindMap(from, to, "0 " + hostId + " " + count + "\n");
    }

    private static void bindMap(Path from, Path to, String map) throws IOException {
        if (UNAVAILABLE != null) throw new IOException(UNAVAILABLE);
        Process holder = new ProcessBuilder("unshare", "--user", "sleep", "60").redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try (Arena arena = Arena.ofConfined()) {
            Path proc = Path.of("/proc", String.valueOf(holder.pid()));
            awaitOwnUserNamespace(holder, proc);
            Files.writeString(proc.resolve("uid_map"), map);
            Files.writeString(proc.resolve("setgroups"), "deny");
            Files.writeString(proc.resolve("gid_map"), map);
            MemorySegment errno = arena.allocate(ERRNO);
            int ns = (int) OPEN.invokeExact(errno, arena.allocateFrom(proc.resolve("ns/user").toString()), O_CLOEXEC);
            check(ns, errno, "open " + proc.resolve("ns/user"));
            try {
                int tree = (int) OPEN_TREE.invokeExact(errno, AT_FDCWD, arena.allocateFrom(from.toString()), OPEN_TREE_CLONE | O_CLOEXEC);
                check(tree, errno, "open_tree " + from);
                try {
                    MemorySegment attr = arena.allocate(MOUNT_ATTR);
                    attr.set(ValueLayout.JAVA_LONG, 0, MOUNT_ATTR_IDMAP);
                    attr.set(ValueLayout.JAVA_LONG, 24, ns);
                    int r = (int) MOUNT_SETATTR.invokeExact(errno, tree, arena.allocateFrom(""), AT_EMPTY_PATH, attr, MOUNT_ATTR.byteSize());
                    check(r, errno, "mount_setattr(MOUNT_ATTR_IDMAP) on " + from);
                    Files.createDirectories(to);
                    r = (int) MOVE_MOUNT.invokeExact(errno, tree, arena.allocateFrom(""), AT_FDCWD, arena.allocateFrom(to.toString()),
                            MOVE_MOUNT_F_EMPTY_PATH);
                    check(r, errno, "move_mount to " + to);
                } finally {
                    int ignored = (int) CLOSE.invokeExact(tree);
                }
            } finally {
                int ignored = (int) CLOSE.invokeExact(ns);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("idmapped mount of " + from + " failed: " + t, t);
        } finally {
            holder.destroyForcibly();
            try {
                holder.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static void check(int r, MemorySegment errno, String what) throws IOException {
        if (r < 0) throw new IOException(what + " failed: errno " + (int) ERRNO_VALUE.get(errno, 0L));
    }

    /** Waits (by condition, not time) until the child has entered its new user namespace, so its maps are writable. */
    private static void awaitOwnUserNamespace(Process holder, Path proc) throws IOException {
        String mine = Files.readSymbolicLink(Path.of("/proc/self/ns/user")).toString();
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            if (!holder.isAlive()) throw new IOException("unshare --user exited with " + holder.exitValue() + " before mapping ids");
            try {
                if (!Files.readSymbolicLink(proc.resolve("ns/user")).toString().equals(mine)) return;
            } catch (IOException e) {
                // not there yet
            }
            Thread.onSpinWait();
            Thread.yield();
        }
        throw new IOException("unshare --user did not enter a new user namespace within 10 s");
    }
}
