package dev.berth.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.ExportResult;
import dev.berth.engine.api.ImportRequest;
import dev.berth.engine.api.ImportResult;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A directory in and the work out (issue 29) on a real sandbox of each level: a git repository with history,
 * uncommitted and ignored files, hooks, links and a pipe arrives as a repository; the patch and the branch come back
 * without touching the user's working tree; the hostile cases of the issue are refused with their reason.
 */
public abstract class AbstractTransferTest {
    protected static final Tenant T = Tenant.LOCAL;
    protected Path home;
    protected Path roots;
    protected Path repo;
    protected Engine engine;

    protected abstract IsolationDriver driver(Path home) throws Exception;

    /** Whether the level's workspace has git (the export needs it there). */
    protected boolean guestHasGit() { return true; }

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-transfer-");
        roots = Files.createTempDirectory("berth-roots-").toRealPath();
        repo = Files.createDirectory(roots.resolve("proj"));
        IsolationDriver d = driver(home);
        org.junit.jupiter.api.Assumptions.assumeTrue(d.probe().available(), () -> d.name() + " cannot run here: " + d.probe().reason());
        engine = Engine.start(EngineConfig.defaults(home, List.of(d)));
    }

    @AfterEach
    void stop() throws Exception {
        engine.close();
        dev.berth.engine.spi.Trees.delete(home);
        dev.berth.engine.spi.Trees.delete(roots);
    }

    protected static String git(Path dir, String... args) throws IOException, InterruptedException {
        List<String> c = new ArrayList<>(List.of("git", "-C", dir.toString(), "-c", "user.name=T", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"));
        c.addAll(List.of(args));
        Process p = new ProcessBuilder(c).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "git " + String.join(" ", args) + ": " + out);
        return out.trim();
    }

    /** A repository: two commits on branch 'feature', one uncommitted edit, an untracked file, an ignored .env, a hook, links, a pipe. */
    protected void makeRepo() throws Exception {
        git(repo, "init", "-q");
        Files.writeString(repo.resolve("README.md"), "hello\n");
        Files.writeString(repo.resolve(".gitignore"), ".env\nbuild/\n");
        Files.createDirectories(repo.resolve("src"));
        Files.writeString(repo.resolve("src/a.txt"), "line 1\nline 2\nline 3\nline 4\nline 5\n");
        Files.write(repo.resolve("src/blob.bin"), new byte[] {0, 1, 2, 3, (byte) 255, 0, 7});
        git(repo, "add", "-A");
        git(repo, "commit", "-q", "-m", "first");
        git(repo, "checkout", "-q", "-b", "feature");
        Files.writeString(repo.resolve("src/b.txt"), "bee\n");
        git(repo, "add", "-A");
        git(repo, "commit", "-q", "-m", "second");
        Files.writeString(repo.resolve("README.md"), "hello, edited but not committed\n");
        Files.writeString(repo.resolve("notes.txt"), "untracked\n");
        Files.writeString(repo.resolve(".env"), "SECRET=1\n");
        Files.createDirectories(repo.resolve("build"));
        Files.writeString(repo.resolve("build/out.o"), "object\n");
        Files.writeString(repo.resolve(".git/hooks/post-checkout"), "#!/bin/sh\ntouch /tmp/hook-ran\n");
        repo.resolve(".git/hooks/post-checkout").toFile().setExecutable(true);
        Files.createSymbolicLink(repo.resolve("inside-link"), Path.of("src/a.txt"));
        Files.createSymbolicLink(repo.resolve("outside-link"), Path.of("../../../etc/passwd"));
        new ProcessBuilder("mkfifo", repo.resolve("a-pipe").toString()).start().waitFor();
    }

    protected String sh(String ws, String cmd) throws EngineException {
        RunResult r = engine.run(T, RunRequest.of(ws, cmd), OutputListener.NONE);
        assertEquals(0, r.exitCode(), cmd + ": " + r.stdout() + r.stderr());
        return r.stdout().trim();
    }

    protected ImportResult importRepo(String name) throws EngineException {
        var prepared = engine.transfers().prepare(new ImportRequest(repo, List.of(roots), false));
        engine.open(T, OpenRequest.persistent(name));
        return engine.transfers().importInto(T, name, prepared);
    }

    @Test
    void open_gitRepository_arrivesAsRepositoryWithoutIgnoredHooksOrOutsideLinks() throws Exception {
        makeRepo();
        String head = git(repo, "rev-parse", "HEAD");
        ImportResult r = importRepo("p");

        assertTrue(r.git());
        assertEquals("feature", r.branch());
        assertEquals(head, r.commit());
        assertTrue(r.skipped().stream().anyMatch(s -> s.startsWith("outside-link: a symbolic link leading out")), r.skipped().toString());
        assertTrue(r.skipped().stream().anyMatch(s -> s.contains("hooks are not carried")), r.skipped().toString());
        assertTrue(r.ignored() >= 2, "ignored .env and build/: " + r.ignored());
        assertEquals(64, r.sha256().length());
        assertEquals("hello, edited but not committed", sh("p", "cat README.md"));
        assertEquals("untracked", sh("p", "cat notes.txt"));
        assertEquals("line 1", sh("p", "head -1 inside-link"));
        assertEquals("absent", sh("p", "test -e .env || test -e build || test -e outside-link || test -e a-pipe || echo absent"));
        assertEquals("no hook", sh("p", "test -e .git/hooks/post-checkout || echo no hook"));
        if (!guestHasGit()) return;
        assertEquals(head, sh("p", "git -c safe.directory='*' rev-parse HEAD"));
        assertEquals("feature", sh("p", "git -c safe.directory='*' branch --show-current"));
        String status = sh("p", "git -c safe.directory='*' status --porcelain");
        assertTrue(status.contains("M README.md") && status.contains("?? notes.txt"), status);
        assertTrue(Files.readString(AuditTrail.tenantLog(home.resolve("audit"), T.id())).contains("\"transfer\""), "the import is in the audit chain");
    }

    @Test
    void export_patchAndBranch_carryEveryKindOfChange_userTreeUntouched() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(guestHasGit(), "this level's image has no git");
        makeRepo();
        importRepo("p");
        sh("p", "echo more >> src/a.txt && git -c safe.directory='*' mv src/b.txt src/renamed.txt && rm src/blob.bin"
                + " && printf '\\000\\001new' > new.bin && echo fresh > added.txt");
        ExportResult patch = engine.transfers().export(T, "p", null, null, List.of(roots));
        String text = patch.patch();
        assertNotNull(text);
        assertTrue(text.contains("rename from src/b.txt") && text.contains("rename to src/renamed.txt"), text);
        assertTrue(text.contains("deleted file mode") && text.contains("new file mode") && text.contains("GIT binary patch"), text);
        assertTrue(patch.changes().contains("A added.txt") && patch.changes().contains("D src/blob.bin"), patch.changes().toString());
        // the patch applies to the user's tree as it was imported
        Path check = Files.createTempDirectory(roots, "apply-");
        git(roots, "clone", "-q", repo.toString(), check.toString());
        git(check, "checkout", "-q", "feature");
        Files.copy(repo.resolve("README.md"), check.resolve("README.md"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.copy(repo.resolve("notes.txt"), check.resolve("notes.txt"));
        Path pf = Files.createTempFile("berth", ".patch");
        Files.writeString(pf, text);
        git(check, "apply", "--check", pf.toString());

        String statusBefore = git(repo, "status", "--porcelain");
        String headBefore = git(repo, "rev-parse", "HEAD");
        sh("p", "git -c safe.directory='*' -c user.name=A -c user.email=a@a commit -q -m 'agent commit' -- src/a.txt");
        ExportResult br = engine.transfers().export(T, "p", "branch", null, List.of(roots));
        assertEquals("berth/p", br.branch());
        assertEquals(br.commit(), git(repo, "rev-parse", "refs/heads/berth/p"));
        assertEquals("agent commit", git(repo, "log", "-1", "--format=%s", "berth/p~1"));
        assertEquals(headBefore, git(repo, "rev-parse", "berth/p~2"));
        assertEquals("hello, edited but not committed\n", git(repo, "show", "berth/p:README.md") + "\n");
        assertEquals(statusBefore, git(repo, "status", "--porcelain"), "the user's working tree and index are untouched");
        assertEquals("feature", git(repo, "branch", "--show-current"));
        assertEquals(headBefore, git(repo, "rev-parse", "HEAD"));
        assertFalse(Files.exists(Path.of("/tmp/hook-ran")), "no hook of the user's repository ran");

        var again = assertThrows(EngineException.class, () -> engine.transfers().export(T, "p", "branch", null, List.of(roots)));
        assertTrue(again.getMessage().contains("already exists") && again.getMessage().contains("never overwritten"), again.getMessage());
        for (String bad : List.of("a..b", "x.lock", "-rf", "has space", "ends/", "@")) {
            var e = assertThrows(EngineException.class, () -> engine.transfers().export(T, "p", "branch", bad, List.of(roots)), bad);
            assertTrue(e.getMessage().contains("not a valid branch name"), bad + ": " + e.getMessage());
        }
        var outside = assertThrows(EngineException.class, () -> engine.transfers().export(T, "p", "branch", "ok", List.of(home)));
        assertTrue(outside.getMessage().contains("outside every allowed root"), outside.getMessage());
        assertTrue(Files.readString(AuditTrail.tenantLog(home.resolve("audit"), T.id())).contains("\"export\""), "the export is in the audit chain");
    }

    @Test
    void export_hostileWorkspaceHistory_refusedByFsck_hostConfigCommandsNeverRun() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(guestHasGit(), "this level's image has no git");
        makeRepo();
        // the user's repository configures commands git would run on the host: none of them may run
        Path marker = roots.resolve("host-command-ran");
        git(repo, "config", "core.fsmonitor", "touch " + marker);
        git(repo, "config", "core.hooksPath", repo.resolve("evil-hooks").toString());
        Files.createDirectories(repo.resolve("evil-hooks"));
        for (String hook : List.of("reference-transaction", "post-checkout", "post-merge")) {
            Path h = repo.resolve("evil-hooks").resolve(hook);
            Files.writeString(h, "#!/bin/sh\ntouch " + marker + "\n");
            h.toFile().setExecutable(true);
        }
        importRepo("evil");
        // the workspace commits a tree holding a .git directory (a planted hook): fsck must refuse the bundle
        sh("evil", "cd /workspace && G='git -c safe.directory=* -c user.name=x -c user.email=x@x'"
                + " && hook=$(printf '#!/bin/sh\\ntouch /tmp/pwned\\n' | $G hash-object -w --stdin)"
                + " && hooks=$(printf '100755 blob %s\\tpost-checkout\\n' $hook | $G mktree)"
                + " && dotgit=$(printf '040000 tree %s\\thooks\\n' $hooks | $G mktree)"
                + " && top=$(printf '040000 tree %s\\t.git\\n' $dotgit | $G mktree)"
                + " && c=$($G commit-tree $top -p HEAD -m planted) && $G update-ref HEAD $c");
        var e = assertThrows(EngineException.class, () -> engine.transfers().export(T, "evil", "branch", "planted", List.of(roots)));
        assertTrue(e.getMessage().contains("dotgit") || e.getMessage().contains("fsck") || e.getMessage().contains(".git"), e.getMessage());
        assertEquals("", git(repo, "branch", "--list", "planted"), "no branch was created");
        assertEquals("", git(repo, "for-each-ref", "refs/berth-incoming"), "the hidden ref is gone");
        assertFalse(Files.exists(marker), "no command of the user's repository configuration ran on the host");
    }

    @Test
    void fork_ofImportedSnapshot_exportsItsOwnBranch() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(guestHasGit(), "this level's image has no git");
        makeRepo();
        importRepo("base");
        engine.snapshot(T, "base", "imported");
        engine.open(T, new OpenRequest("f1", "persistent", "imported", null, null));
        sh("f1", "echo from-fork > fork.txt");
        ExportResult r = engine.transfers().export(T, "f1", "branch", "agents/f1", List.of(roots));
        assertEquals("from-fork", git(repo, "show", "agents/f1:fork.txt"));
        assertTrue(r.changes().contains("A fork.txt") || r.changes().stream().anyMatch(c -> c.endsWith("fork.txt")), r.changes().toString());
    }

    @Test
    void open_includeIgnored_carriesIgnoredFilesButNeverHooks() throws Exception {
        makeRepo();
        Path nested = Files.createDirectories(repo.resolve("build/nested"));
        git(nested, "init", "-q");
        Files.writeString(nested.resolve(".git/hooks/pre-commit"), "#!/bin/sh\n");
        var prepared = engine.transfers().prepare(new ImportRequest(repo, List.of(roots), true));
        engine.open(T, OpenRequest.persistent("all"));
        ImportResult r = engine.transfers().importInto(T, "all", prepared);
        assertEquals(0, r.ignored());
        assertEquals("SECRET=1", sh("all", "cat .env"));
        assertEquals("object", sh("all", "cat build/out.o"));
        assertEquals("none", sh("all", "test -e .git/hooks/post-checkout || test -e build/nested/.git/hooks/pre-commit || echo none"));
        assertTrue(r.skipped().contains("build/nested/.git/hooks: git hooks are not carried"), r.skipped().toString());
    }

    @Test
    void open_repositoryMidMergeWithConflicts_importedAsItIsAndSaidSo() throws Exception {
        git(repo, "init", "-q");
        Files.writeString(repo.resolve("f.txt"), "base\n");
        git(repo, "add", "-A");
        git(repo, "commit", "-q", "-m", "base");
        git(repo, "checkout", "-q", "-b", "other");
        Files.writeString(repo.resolve("f.txt"), "theirs\n");
        git(repo, "commit", "-q", "-am", "theirs");
        git(repo, "checkout", "-q", "main");
        Files.writeString(repo.resolve("f.txt"), "ours\n");
        git(repo, "commit", "-q", "-am", "ours");
        Process merge = new ProcessBuilder("git", "-C", repo.toString(), "-c", "user.name=T", "-c", "user.email=t@t", "merge", "-q", "other")
                .redirectErrorStream(true).start();
        merge.getInputStream().readAllBytes();
        assertEquals(1, merge.waitFor(), "the merge conflicts");

        ImportResult r = importRepo("m");
        assertTrue(r.notes().stream().anyMatch(n -> n.contains("middle of a merge")), r.notes().toString());
        assertTrue(r.notes().stream().anyMatch(n -> n.contains("unresolved conflicts")), r.notes().toString());
        assertTrue(sh("m", "cat f.txt").contains("<<<<<<<"), "the conflict markers arrive as they are");
        if (guestHasGit()) assertTrue(sh("m", "git -c safe.directory='*' status --porcelain").contains("UU f.txt"), "still conflicted inside");
    }

    @Test
    void open_hostileInput_refusedWithReason() throws Exception {
        Files.writeString(repo.resolve("x.txt"), "x\n");
        // outside every root
        var e1 = assertThrows(EngineException.class, () -> engine.transfers().prepare(new ImportRequest(repo, List.of(home), false)));
        assertTrue(e1.getMessage().contains("outside every allowed root"), e1.getMessage());
        // no roots at all
        var e2 = assertThrows(EngineException.class, () -> engine.transfers().prepare(new ImportRequest(repo, List.of(), false)));
        assertTrue(e2.getMessage().contains("no roots allow imports"), e2.getMessage());
        // a link inside the root that leads elsewhere
        Path elsewhere = Files.createTempDirectory("berth-elsewhere-");
        try {
            Path link = Files.createSymbolicLink(roots.resolve("link"), elsewhere);
            var e3 = assertThrows(EngineException.class, () -> engine.transfers().prepare(new ImportRequest(link, List.of(roots), false)));
            assertTrue(e3.getMessage().contains("really " + elsewhere.toRealPath()), e3.getMessage());
            // a root that is itself a link is not used
            var e4 = assertThrows(EngineException.class, () -> engine.transfers().prepare(new ImportRequest(link, List.of(link), false)));
            assertTrue(e4.getMessage().contains("a symbolic link: not used as a root"), e4.getMessage());
        } finally {
            dev.berth.engine.spi.Trees.delete(elsewhere);
        }
        // a .git file pointing elsewhere is not followed; a pipe is skipped and listed
        Files.writeString(repo.resolve(".git"), "gitdir: /etc\n");
        new ProcessBuilder("mkfifo", repo.resolve("a-pipe").toString()).start().waitFor();
        var prepared = engine.transfers().prepare(new ImportRequest(repo, List.of(roots), false));
        engine.open(T, OpenRequest.persistent("g"));
        ImportResult r = engine.transfers().importInto(T, "g", prepared);
        assertFalse(r.git());
        assertTrue(r.notes().stream().anyMatch(n -> n.contains("not followed")), r.notes().toString());
        assertTrue(r.skipped().contains("a-pipe: a special file (device, pipe or socket)"), r.skipped().toString());
        assertEquals("x", sh("g", "cat x.txt"));
        Files.delete(repo.resolve("a-pipe"));
        // larger than the workspace's disk: refused before copying, with both sizes
        Files.delete(repo.resolve(".git"));
        try (var f = new RandomAccessFile(repo.resolve("huge.bin").toFile(), "rw")) {
            f.setLength(200L << 20);
        }
        var big = engine.transfers().prepare(new ImportRequest(repo, List.of(roots), false));
        engine.open(T, new OpenRequest("small", "persistent", null, null, new Resources(1, 512, 64, 1024)));
        var e5 = assertThrows(EngineException.class, () -> engine.transfers().importInto(T, "small", big));
        assertTrue(e5.getMessage().contains("needs about 201 MiB") && e5.getMessage().contains("64 MiB disk"), e5.getMessage());
        assertEquals("empty", sh("small", "test -e huge.bin || echo empty"));
        // a second import into the same workspace
        var e6 = assertThrows(EngineException.class, () -> engine.transfers().importInto(T, "g", prepared));
        assertTrue(e6.getMessage().contains("already has an imported directory"), e6.getMessage());
    }
}
