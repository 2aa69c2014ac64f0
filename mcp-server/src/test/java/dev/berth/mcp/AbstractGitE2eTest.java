package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Git end to end (issue 11 item 4, issue 16's git rule): a private repository on a real HTTPS git server on loopback
 * (nginx + fcgiwrap + {@code git http-backend}, certificate from the test CA, Basic auth with the operator's token);
 * the operator binds the token to that host and lists the one repository workspaces may push to. Through the official
 * TypeScript MCP client and {@code berth.jar stdio}, inside a workspace (one subclass per isolation level), the real {@code git} clones,
 * commits and pushes over the egress proxy with the placeholder swapped in Basic auth; a push is refused when the run
 * narrows {@code secrets: []} and when it goes to a repository not listed; the real token is nowhere in the
 * workspace; then the clone is snapshotted and a fork of it pushes with its own placeholder.
 */
abstract class AbstractGitE2eTest extends AbstractRealClientE2eTest {
    static final String REAL = "glpat-REAL-git-e2e-token-0123456789";
    /** localhost is in the workspace's NO_PROXY; the proxy is the only way out, so git must use it. */
    static final String GIT = "unset NO_PROXY no_proxy; export GIT_TERMINAL_PROMPT=0; git -c credential.helper=/workspace/git-cred.sh ";
    static final String ID = "-c user.name=agent -c user.email=agent@example.invalid ";

    NginxServer git;

    @BeforeAll
    void start() throws Exception {
        prepare("git");
        for (String repo : List.of("private", "other")) seed(repo);
        Files.writeString(dir.resolve("htpasswd"), "x-access-token:{PLAIN}" + REAL + "\n");
        String locations = """
                    location / {
                      auth_basic "private git";
                      auth_basic_user_file %1$s/htpasswd;
                      fastcgi_pass unix:%1$s/git/fcgiwrap.sock;
                      fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
                      fastcgi_param GIT_PROJECT_ROOT %1$s/repos;
                      fastcgi_param GIT_HTTP_EXPORT_ALL "";
                      fastcgi_param PATH_INFO $uri;
                      fastcgi_param REMOTE_USER $remote_user;
                      fastcgi_param QUERY_STRING $query_string;
                      fastcgi_param REQUEST_METHOD $request_method;
                      fastcgi_param CONTENT_TYPE $content_type;
                      fastcgi_param CONTENT_LENGTH $content_length;
                      fastcgi_param GIT_PROTOCOL $http_git_protocol;
                    }
                """.formatted(dir);
        git = serve(NginxServer.start(dir.resolve("git"), tls.cert(), tls.key(), locations, true));
        Path secret = dir.resolve("git-token");
        Files.writeString(secret, REAL + "\n");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        startBerth(git.port, """
                "secrets": {"gitsrv": {"env": "GIT_TOKEN", "hosts": ["localhost"], "fromFile": "%s"}},
                "registryRules": {"git": {"hosts": ["localhost"], "pushRepos": ["org/private"]}}""".formatted(secret));
    }

    /** A bare repository repos/org/NAME.git on branch main with one commit. */
    private void seed(String name) throws Exception {
        Path bare = dir.resolve("repos/org/" + name + ".git");
        Files.createDirectories(bare.getParent());
        sh(dir, "git", "init", "-q", "--bare", "-b", "main", bare.toString());
        sh(dir, "git", "-C", bare.toString(), "config", "http.receivepack", "true");
        Path work = dir.resolve("seed-" + name);
        sh(dir, "git", "init", "-q", "-b", "main", work.toString());
        Files.writeString(work.resolve("README"), "the " + name + " repository\n");
        sh(work, "git", "add", "README");
        sh(work, "git", "-c", "user.name=seed", "-c", "user.email=seed@example.invalid", "commit", "-qm", "initial");
        sh(work, "git", "push", "-q", bare.toString(), "main");
    }

    private static String sh(Path cwd, String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) throw new IOException(String.join(" ", cmd) + " failed: " + out);
        return out.trim();
    }

    private String serverHead(String repo) throws Exception {
        return sh(dir, "git", "--git-dir", dir.resolve("repos/org/" + repo + ".git").toString(), "log", "-1", "--format=%s", "main");
    }

    JsonNode run(String ws, String command, Object... extra) throws IOException {
        Map<String, Object> args = new java.util.HashMap<>(Map.of("workspace", ws, "command", command, "timeout_s", 180));
        for (int i = 0; i < extra.length; i += 2) args.put((String) extra[i], extra[i + 1]);
        return ok("run", args);
    }

    @Test
    void cloneCommitPush_throughTheProxy_pushRefusedWithoutSecretsAndToUnlistedRepos_thenSnapshotAndFork() throws Exception {
        String ws = ok("open_workspace", level().open(Map.of("secrets", List.of("gitsrv")))).path("workspace").asString();
        // git asks the helper for the password: it hands over the run's placeholder, never a real token
        ok("write_file", Map.of("workspace", ws, "path", "git-cred.sh", "mode", "0755",
                "content", "#!/bin/sh\necho username=x-access-token\necho \"password=$GIT_TOKEN\"\n"));

        JsonNode pushed = run(ws, GIT + "clone -q https://localhost:" + git.port + "/org/private.git private && cd private"
                + " && echo change > CHANGE && git add CHANGE && git " + ID + "commit -qm 'from the workspace'"
                + " && " + GIT + "push -q origin HEAD:main && printf %s \"$GIT_TOKEN\" > /workspace/.old-token && echo pushed");
        assertEquals(0, pushed.path("exit_code").asInt(), pushed.toString());
        assertEquals("pushed", pushed.path("stdout").asString().trim(), pushed.toString());
        assertEquals("gitsrv", pushed.path("secrets_used").get(0).path("secret").asString(), pushed.toString());
        assertEquals("from the workspace", serverHead("private"));

        // the same push in a run that narrows secrets to none: the old placeholder is refused by the proxy
        JsonNode noSecrets = run(ws, "cd private && echo more > MORE && git add MORE && git " + ID + "commit -qm second"
                + " && export GIT_TOKEN=$(cat /workspace/.old-token) && " + GIT + "push -q origin HEAD:main", "secrets", List.of());
        assertNotEquals(0, noSecrets.path("exit_code").asInt(), noSecrets.toString());
        assertTrue(noSecrets.path("egress_denied").toString().contains("credential placeholder is unknown or revoked"), noSecrets.toString());
        assertEquals("from the workspace", serverHead("private"), "the refused push changed nothing on the server");

        // a repository the token could write to, but not listed for the binding: fetch works, push is refused
        JsonNode other = run(ws, GIT + "clone -q https://localhost:" + git.port + "/org/other.git other && cd other"
                + " && echo x > X && git add X && git " + ID + "commit -qm 'not allowed' && " + GIT + "push -q origin HEAD:main");
        assertNotEquals(0, other.path("exit_code").asInt(), other.toString());
        assertTrue(other.path("egress_denied").toString().contains(
                "git host 'localhost' accepts pushes from workspaces only to org/private (registryRules.git.pushRepos)"), other.toString());
        assertEquals("initial", serverHead("other"));

        // the real token is in no file, no environment, no result
        JsonNode grep = run(ws, "grep -rlF \"$(printf '%s' 'glpat-REAL-git')\" /workspace /tmp \"$HOME\" 2>/dev/null; env | grep -cF glpat-REAL || true");
        assertEquals("0", grep.path("stdout").asString().trim(), grep.toString());
        for (String r : results) assertFalse(r.contains(REAL), "a result carried the real token: " + r);

        // snapshot the clone as a template; a fork has the repository and pushes with a placeholder of its own
        String snap = ok("snapshot", Map.of("workspace", ws, "name", "git-template")).path("snapshot").asString();
        String fork = ok("open_workspace", Map.of("from_snapshot", snap, "secrets", List.of("gitsrv"))).path("workspace").asString();
        JsonNode fromFork = run(fork, "cd private && git log -1 --format=%s && " + GIT + "push -q origin HEAD:main && echo pushed-from-fork");
        assertEquals(0, fromFork.path("exit_code").asInt(), fromFork.toString());
        assertEquals("second\npushed-from-fork", fromFork.path("stdout").asString().trim(), fromFork.toString());
        assertEquals("second", serverHead("private"));
        assertTrue(git.accessLog().contains("POST /org/private.git/git-receive-pack"), "pushes went to the real server");
    }
}
