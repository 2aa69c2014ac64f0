package dev.berth.engine.run;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.FileContent;
import dev.berth.engine.api.FileListing;
import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.AgentException;
import dev.berth.engine.agent.FileEntry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * File access inside a workspace through its guest agent: chunked reads and writes within size limits, listings,
 * and agent errors turned into engine errors that say what to do. Stateless; paths are already resolved by
 * {@link WorkspacePaths}.
 */
public final class FileOps {
    static final int MAX_READ = dev.berth.schemas.Limits.intValue("read_file.max_bytes_max");
    static final int MAX_WRITE = dev.berth.schemas.Limits.intValue("write_file.content_bytes_max");
    static final int MAX_LIST = dev.berth.schemas.Limits.intValue("list_files.entries_max");
    private static final int CHUNK = 512 * 1024;

    private FileOps() {}

    public static void checkRead(long offset, int maxBytes) throws EngineException {
        if (offset < 0) throw new EngineException(Kind.INVALID_ARGUMENT, "offset " + offset + " is negative");
        if (maxBytes < 1 || maxBytes > MAX_READ) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "max_bytes " + maxBytes + " is outside 1.." + MAX_READ);
        }
    }

    /** Validates a write and returns the file mode to use. */
    public static int checkWrite(byte[] data, Integer mode) throws EngineException {
        if (data.length > MAX_WRITE) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "content is " + data.length + " bytes; the limit is " + MAX_WRITE
                    + " per call (append in parts with append: true)");
        }
        int m = mode == null ? 0644 : mode;
        if (m < 0 || m > 07777) throw new EngineException(Kind.INVALID_ARGUMENT, "mode " + Integer.toOctalString(m) + " is not a file mode");
        return m;
    }

    public static FileContent read(AgentClient agent, String p, long offset, int maxBytes) throws EngineException {
        try {
            var out = new ByteArrayOutputStream();
            long size;
            int mode;
            long at = offset;
            do {
                int want = Math.min(CHUNK, maxBytes - out.size());
                var chunk = agent.readFile(p, at, want);
                size = chunk.fileSize();
                mode = chunk.mode();
                out.writeBytes(chunk.data());
                at += chunk.data().length;
                if (chunk.data().length == 0) break;
            } while (out.size() < maxBytes && at < size);
            return new FileContent(p, size, offset, out.toByteArray(), at < size, mode);
        } catch (AgentException e) {
            throw error("read", p, e);
        } catch (IOException e) {
            throw lost(e);
        }
    }

    public static long write(AgentClient agent, String p, byte[] data, boolean append, int mode) throws EngineException {
        try {
            if (!append) return agent.writeWholeFile(p, mode, data);
            long total = 0;
            int off = 0;
            do {
                int n = Math.min(CHUNK, data.length - off);
                total += agent.writeFile(p, mode, AgentClient.WRITE_APPEND | AgentClient.WRITE_MKDIRS, Arrays.copyOfRange(data, off, off + n));
                off += n;
            } while (off < data.length);
            return total;
        } catch (AgentException e) {
            throw error("write", p, e);
        } catch (IOException e) {
            throw lost(e);
        }
    }

    public static FileListing list(AgentClient agent, String p) throws EngineException {
        try {
            var raw = new ArrayList<>(agent.listFiles(p));
            raw.sort(Comparator.comparing(FileEntry::name));
            List<FileListing.Entry> entries = raw.stream().limit(MAX_LIST).map(e -> new FileListing.Entry(e.name(),
                    switch (e.kind()) {
                        case 'f' -> "file";
                        case 'd' -> "dir";
                        case 'l' -> "symlink";
                        default -> "other";
                    }, e.size(), e.mode() & 07777, e.mtimeSeconds())).toList();
            return new FileListing(p, entries, raw.size() > MAX_LIST);
        } catch (AgentException e) {
            throw error("list", p, e);
        } catch (IOException e) {
            throw lost(e);
        }
    }

    private static EngineException lost(IOException e) {
        return new EngineException(Kind.UNAVAILABLE, "lost contact with the workspace's agent: " + e.getMessage(), e);
    }

    private static EngineException error(String verb, String path, AgentException e) {
        Kind k = switch (e.errno()) {
            case 2, 20, 21, 27 -> Kind.INVALID_ARGUMENT; // ENOENT, ENOTDIR, EISDIR, EFBIG
            case 13, 30, 1 -> Kind.ILLEGAL_STATE;        // EACCES, EROFS, EPERM
            case 28 -> Kind.LIMIT;                       // ENOSPC
            default -> e.errno() == 0 ? Kind.UNAVAILABLE : Kind.INTERNAL;
        };
        String hint = switch (e.errno()) {
            case 2 -> "; list_files shows what exists";
            case 30 -> "; this part of the file system is read-only (write under /workspace, /root, /tmp or /usr/local)";
            case 28 -> "; the workspace's disk is full";
            default -> "";
        };
        return new EngineException(k, "cannot " + verb + " '" + path + "': " + e.getMessage() + hint, e);
    }
}
