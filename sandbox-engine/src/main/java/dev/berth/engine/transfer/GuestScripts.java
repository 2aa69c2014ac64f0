package dev.berth.engine.transfer;

/**
 * The shell scripts the transfers run inside a workspace (POSIX sh; git where the image has it). Git runs there
 * without hooks, file-system monitor or automatic gc, on a temporary index: the agent's own index, branch and work
 * tree are never changed by an export. Their output is parsed strictly by the callers.
 */
final class GuestScripts {
    private GuestScripts() {}

    /** A defanged git, as a shell function {@code G}. */
    private static final String G = """
            G() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 -c maintenance.auto=false \
            -c safe.directory='*' -c commit.gpgSign=false -c core.autocrlf=false "$@"; }
            """;

    /**
     * Records the state as imported as {@code refs/berth/import}: in a repository a commit of the whole working tree
     * (uncommitted changes included) on top of HEAD, made on a temporary index; elsewhere ({@code BERTH_MODE=init})
     * a new repository whose first commit is the import. Prints "ok COMMIT" or "nogit".
     */
    static final String BASELINE = G + """
            set -e
            cd /workspace
            command -v git >/dev/null 2>&1 || { echo nogit; exit 0; }
            if [ "$BERTH_MODE" = init ]; then
              G init -q .
              G add -A
              G commit -q --no-verify --allow-empty -m "berth: the imported directory"
              G update-ref refs/berth/import HEAD
            else
              gd=$(G rev-parse --absolute-git-dir)
              export GIT_INDEX_FILE="$gd/berth-import.index"
              rm -f "$GIT_INDEX_FILE"
              if [ -f "$gd/index" ]; then cp "$gd/index" "$GIT_INDEX_FILE"; fi
              G add -A
              tree=$(G write-tree)
              if head=$(G rev-parse -q --verify 'HEAD^{commit}'); then
                c=$(G commit-tree "$tree" -p "$head" -m "berth: the working tree as imported")
              else
                c=$(G commit-tree "$tree" -m "berth: the working tree as imported")
              fi
              G update-ref refs/berth/import "$c"
              rm -f "$GIT_INDEX_FILE"
            fi
            echo "ok $(G rev-parse refs/berth/import)"
            """;

    /**
     * The working tree now, as a tree object (temporary index), then: {@code BERTH_EXPORT=patch} writes the patch
     * against the import to {@code $gd/berth-changes.patch} and prints "patch PATH" and the name-status list (NUL
     * separated), "patch COUNT PATH" first; {@code BERTH_EXPORT=bundle} makes HEAD plus the uncommitted work one commit
     * ({@code refs/berth/export}), bundles what the user's repository lacks ({@code BERTH_BASE}: the commit it had at
     * the import) to {@code $gd/berth-export.bundle}, and prints "bundle PATH COMMIT" ("same COMMIT": nothing new).
     */
    static final String EXPORT = G + """
            set -e
            cd /workspace
            command -v git >/dev/null 2>&1 || { echo "git is not installed in this workspace's image" >&2; exit 3; }
            base=$(G rev-parse -q --verify 'refs/berth/import^{commit}') || { echo "this workspace has no import to compare with (open it with from_directory)" >&2; exit 4; }
            gd=$(G rev-parse --absolute-git-dir)
            export GIT_INDEX_FILE="$gd/berth-export.index"
            rm -f "$GIT_INDEX_FILE"
            if [ -f "$gd/index" ]; then cp "$gd/index" "$GIT_INDEX_FILE"; fi
            G add -A
            tree=$(G write-tree)
            rm -f "$GIT_INDEX_FILE"
            unset GIT_INDEX_FILE
            if [ "$BERTH_EXPORT" = patch ]; then
              G diff --binary --full-index -M --no-color --no-ext-diff --no-textconv "$base" "$tree" > "$gd/berth-changes.patch"
              n=$(( $(G diff --name-only -z --no-ext-diff -M "$base" "$tree" | tr -cd '\\000' | wc -c) ))
              printf 'patch %s %s\\n' "$n" "$gd/berth-changes.patch"
              G diff --name-status -z -M --no-ext-diff "$base" "$tree"
            else
              if head=$(G rev-parse -q --verify 'HEAD^{commit}') && [ "$(G rev-parse 'HEAD^{tree}')" = "$tree" ]; then
                c=$head
              elif [ -n "$head" ]; then
                c=$(G commit-tree "$tree" -p "$head" -m "$BERTH_MESSAGE")
              else
                c=$(G commit-tree "$tree" -m "$BERTH_MESSAGE")
              fi
              G update-ref refs/berth/export "$c"
              if [ -n "$BERTH_BASE" ] && [ "$c" = "$BERTH_BASE" ]; then echo "same $c"; exit 0; fi
              rm -f "$gd/berth-export.bundle"
              if [ -n "$BERTH_BASE" ] && G cat-file -e "$BERTH_BASE^{commit}" 2>/dev/null; then
                G bundle create -q "$gd/berth-export.bundle" refs/berth/export "^$BERTH_BASE"
              else
                G bundle create -q "$gd/berth-export.bundle" refs/berth/export
              fi
              printf 'bundle %s %s\\n' "$gd/berth-export.bundle" "$c"
            fi
            """;
}
