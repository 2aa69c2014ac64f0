package dev.berth.engine.api;

import java.util.List;

/**
 * What an import copied into a workspace.
 *
 * @param source   the directory's real path on the server's machine
 * @param git      whether it arrived as a git repository (history, branch, commit, uncommitted changes)
 * @param branch   the repository's current branch (null: detached, or not a repository)
 * @param commit   the repository's current commit (null: none yet, or not a repository)
 * @param files    regular files, links and directories copied
 * @param bytes    bytes of file content copied
 * @param sha256   digest of the stream that carried the copy (the tree as sent)
 * @param skipped  what was left out and why ("path: reason"), bounded; ignored files are counted, not listed
 * @param notes    what the caller should know (mid-rebase, conflicts, a .git file not followed, no git in the image)
 * @param ignored  files left out because .gitignore excludes them
 * @param millis   time the copy took
 */
public record ImportResult(String source, boolean git, String branch, String commit, long files, long bytes, String sha256,
                           List<String> skipped, long skippedCount, List<String> notes, long ignored, long millis) {
    public ImportResult {
        skipped = List.copyOf(skipped);
        notes = List.copyOf(notes);
    }
}
