package dev.berth.engine.run;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import java.nio.file.Path;

/**
 * Turns a path given by an agent into the absolute path inside the sandbox the agent meant: relative paths are under
 * /workspace, "." segments and ".." are folded (never above "/"). Everything a path can name is inside the sandbox,
 * whose boundary is the confinement; this only makes the meaning exact and refuses malformed input.
 */
public final class WorkspacePaths {
    static final int MAX_PATH = 4096;

    private WorkspacePaths() {}

    public static String resolve(String path) throws EngineException {
        if (path == null || path.isEmpty()) return Runner.DEFAULT_CWD;
        if (path.indexOf('\0') >= 0) throw new EngineException(Kind.INVALID_ARGUMENT, "path contains a NUL character");
        if (path.length() > MAX_PATH) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "path is " + path.length() + " characters; the limit is " + MAX_PATH);
        }
        Path p = path.startsWith("/") ? Path.of(path) : Path.of(Runner.DEFAULT_CWD, path);
        Path n = Path.of("/").resolve(p).normalize();
        String s = n.toString();
        // normalize keeps leading ".." of an absolute path ("/../x"); they mean "/" in a file system
        while (s.startsWith("/..")) s = s.length() == 3 ? "/" : s.substring(3);
        return s.isEmpty() ? "/" : s;
    }
}
