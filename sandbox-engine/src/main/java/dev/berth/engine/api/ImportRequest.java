package dev.berth.engine.api;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * A directory of the server's machine to copy into a workspace's {@code /workspace} (open_workspace
 * {@code from_directory}, issue 29).
 *
 * @param directory      the directory as the caller named it (absolute)
 * @param roots          where imports are allowed: the MCP client's declared roots and the operator's project roots;
 *                       a directory outside every one is refused
 * @param includeIgnored also copy what the repository's {@code .gitignore} excludes (default: left out)
 */
public record ImportRequest(Path directory, List<Path> roots, boolean includeIgnored) {
    public ImportRequest {
        Objects.requireNonNull(directory, "directory");
        roots = List.copyOf(roots);
    }
}
