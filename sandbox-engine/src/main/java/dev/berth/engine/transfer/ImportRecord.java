package dev.berth.engine.transfer;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.berth.engine.spi.MetaFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import tools.jackson.databind.json.JsonMapper;

/**
 * Where a workspace's files came from, kept on the server's side ({@code <workspace dir>/import.meta}, MetaFile kind
 * "import", version 1) and copied into each snapshot taken of it, so a fork knows it too. Never read from inside the
 * workspace: what the workspace says about its origin could point an export at another repository.
 *
 * @param source  the imported directory's real path
 * @param gitDir  its git directory, when it arrived as a repository
 * @param branch  its branch at the import (null: detached or no repository)
 * @param commit  its commit at the import: what the user's repository already has, the bundle's base
 */
public record ImportRecord(@JsonProperty("source") String source, @JsonProperty("git_dir") String gitDir,
                           @JsonProperty("branch") String branch, @JsonProperty("commit") String commit,
                           @JsonProperty("sha256") String sha256, @JsonProperty("bytes") long bytes,
                           @JsonProperty("at") String at) {
    public static final String FILE = "import.meta";
    static final int VERSION = 1;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    public void save(Path dir) throws IOException {
        MetaFile.write(dir.resolve(FILE), "import", VERSION, JSON.writeValueAsString(this));
    }

    /** The record in {@code dir}, or null when there is none. */
    public static ImportRecord load(Path dir) throws IOException {
        Path f = dir.resolve(FILE);
        if (!Files.exists(f)) return null;
        try {
            return JSON.readValue(MetaFile.read(f, "import", VERSION), ImportRecord.class);
        } catch (tools.jackson.core.JacksonException e) {
            throw new IOException("unreadable " + f + ": " + e.getOriginalMessage(), e);
        }
    }

    /** Copies the record of a workspace into a snapshot being assembled (no record: nothing to copy). */
    public static void copyInto(Path workspaceDir, Path snapshotDir) throws IOException {
        Path f = workspaceDir.resolve(FILE);
        if (Files.exists(f)) Files.copy(f, snapshotDir.resolve(FILE), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
}
