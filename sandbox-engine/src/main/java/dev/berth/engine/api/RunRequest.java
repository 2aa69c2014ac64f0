package dev.berth.engine.api;

import java.util.Map;

/**
 * Arguments of run.
 *
 * @param workspace      id or name
 * @param command        shell command line, run with {@code /bin/sh -c}
 * @param cwd            working directory inside the workspace; null = /workspace
 * @param env            extra environment variables; may not set BERTH_* or the proxy variables
 * @param timeoutSeconds null = default; the whole process tree is killed when it expires
 * @param stdin          optional bytes given to the command's stdin (then closed)
 * @param maxOutputBytes null = default; per stream, head and tail kept
 * @param egress         optional allowlist entries narrowing the workspace's egress policy while this run is active
 * @param secrets        optional subset of the workspace's secret bindings this run gets placeholders for; null = all of
 *                       them, empty = none (e.g. for {@code npm install}, whose hooks need no credentials)
 * @param tty            background runs only: run on a pseudo-terminal of this size; null = pipes
 */
public record RunRequest(String workspace, String command, String cwd, Map<String, String> env,
                         Integer timeoutSeconds, String stdin, Integer maxOutputBytes, java.util.List<String> egress,
                         java.util.List<String> secrets, Terminal tty) {
    /** A terminal size, in character cells. */
    public record Terminal(int cols, int rows) {}

    public RunRequest(String workspace, String command, String cwd, Map<String, String> env, Integer timeoutSeconds,
                      String stdin, Integer maxOutputBytes, java.util.List<String> egress, java.util.List<String> secrets) {
        this(workspace, command, cwd, env, timeoutSeconds, stdin, maxOutputBytes, egress, secrets, null);
    }

    /** This request on a terminal of {@code cols} x {@code rows}. */
    public RunRequest withTty(int cols, int rows) {
        return new RunRequest(workspace, command, cwd, env, timeoutSeconds, stdin, maxOutputBytes, egress, secrets, new Terminal(cols, rows));
    }

    public RunRequest(String workspace, String command, String cwd, Map<String, String> env, Integer timeoutSeconds,
                      String stdin, Integer maxOutputBytes) {
        this(workspace, command, cwd, env, timeoutSeconds, stdin, maxOutputBytes, null, null, null);
    }

    public RunRequest(String workspace, String command, String cwd, Map<String, String> env, Integer timeoutSeconds,
                      String stdin, Integer maxOutputBytes, java.util.List<String> egress) {
        this(workspace, command, cwd, env, timeoutSeconds, stdin, maxOutputBytes, egress, null, null);
    }

    public static RunRequest of(String workspace, String command) {
        return new RunRequest(workspace, command, null, Map.of(), null, null, null);
    }
}
