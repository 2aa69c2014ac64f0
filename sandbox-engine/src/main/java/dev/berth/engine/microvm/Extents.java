package dev.berth.engine.microvm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The data extents of a sparse file ({@code lseek} with {@code SEEK_DATA} / {@code SEEK_HOLE}, through the JDK's
 * foreign function API): a parked RAM file of 256 MiB holds some tens of MiB of data, and only those need hashing.
 * Where the calls are unavailable the whole file is one extent (correct, only slower).
 */
final class Extents {
    private static final int O_RDONLY = 0;
    private static final int SEEK_DATA = 3;
    private static final int SEEK_HOLE = 4;
    private static final MethodHandle OPEN;
    private static final MethodHandle LSEEK;
    private static final MethodHandle CLOSE;

    static {
        MethodHandle open = null, lseek = null, close = null;
        try {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            open = linker.downcallHandle(libc.find("open").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            lseek = linker.downcallHandle(libc.find("lseek").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
            close = linker.downcallHandle(libc.find("close").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        } catch (RuntimeException | Error e) {
            // no native access: every file is one extent
        }
        OPEN = open;
        LSEEK = lseek;
        CLOSE = close;
    }

    private Extents() {}

    /** One run of data: {@code [offset, offset + length)}. */
    record Extent(long offset, long length) {}

    /** The data extents of {@code file}, in order; the whole file when holes cannot be found. */
    static List<Extent> data(Path file) throws IOException {
        long size = Files.size(file);
        if (OPEN == null || size == 0) return size == 0 ? List.of() : List.of(new Extent(0, size));
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(arena.allocateFrom(file.toString()), O_RDONLY);
            if (fd < 0) return List.of(new Extent(0, size));
            try {
                List<Extent> out = new ArrayList<>();
                long pos = 0;
                while (pos < size) {
                    long data = (long) LSEEK.invokeExact(fd, pos, SEEK_DATA);
                    if (data < 0 || data >= size) break; // ENXIO: no data after pos
                    long hole = (long) LSEEK.invokeExact(fd, data, SEEK_HOLE);
                    if (hole < 0 || hole > size) hole = size;
                    out.add(new Extent(data, hole - data));
                    pos = hole;
                }
                return out;
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            return List.of(new Extent(0, size));
        }
    }
}
