package dev.berth.engine.api;

import java.util.List;

/**
 * What export_changes handed out.
 *
 * @param mode        "patch" or "branch"
 * @param changes     each changed path with its status ("A", "M", "D", "R093 old -> new", ...), bounded
 * @param changeCount every changed path
 * @param patch       the patch (git format, binary included) when it fits the inline bound; null otherwise
 * @param patchBytes  the whole patch's size
 * @param patchFile   where the whole patch is inside the workspace (read it with read_file)
 * @param truncated   the patch did not fit inline ({@code patch} is null; read {@code patchFile})
 * @param branch      the branch created in the user's repository (branch mode)
 * @param commit      the commit that branch points at (branch mode)
 * @param repository  the user's repository (branch mode)
 * @param sha256      digest of the patch or of the bundle carried out
 * @param bytes       bytes carried out of the workspace (the bundle, in branch mode)
 */
public record ExportResult(String mode, List<String> changes, int changeCount, String patch, long patchBytes, String patchFile,
                           boolean truncated, String branch, String commit, String repository, String sha256, long bytes,
                           long millis) {
    public ExportResult {
        changes = List.copyOf(changes);
    }
}
