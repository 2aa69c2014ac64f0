package dev.berth.engine.run;

import dev.berth.engine.api.AgentConfigChange;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.GuardMode;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.agent.AgentException;
import dev.berth.engine.agent.ExecExit;
import dev.berth.engine.agent.ExecHandle;
import dev.berth.engine.agent.ExecListener;
import dev.berth.engine.agent.ExecRequest;
import dev.berth.engine.egress.WorkspaceEgress;
import dev.berth.engine.evidence.AgentConfigGuard;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.workspace.Workspace;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * Turns a {@link RunRequest} into one EXEC on the guest agent: validates arguments, builds the environment, collects
 * bounded output, and enforces the timeout (the agent kills the process tree; the host adds a grace period and kills
 * it itself if the agent does not answer). Thread-safe, stateless.
 */
public final class Runner {
    /** Port of the agent's egress listener inside every sandbox. */
    public static final int PROXY_PORT = 3128;
    public static final String DEFAULT_CWD = "/workspace";
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final List<String> RESERVED = List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
            "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy");
    private static final int MAX_COMMAND = dev.berth.schemas.Limits.intValue("run.command_chars");
    private static final int MAX_STDIN = dev.berth.schemas.Limits.intValue("run.stdin_bytes");
    private static final int MIN_OUTPUT = dev.berth.schemas.Limits.intValue("run.output_bytes_min");
    private static final int MAX_OUTPUT = dev.berth.schemas.Limits.intValue("run.output_bytes_max");
    static final int MAX_COLS = dev.berth.schemas.Limits.intValue("run.tty_cols_max");
    static final int MAX_ROWS = dev.berth.schemas.Limits.intValue("run.tty_rows_max");

    private final EngineConfig config;

    public Runner(EngineConfig config) { this.config = config; }

    /** A validated request: what to send to the agent and what to keep of the output. */
    private record Prepared(ExecRequest exec, byte[] stdin, int timeout, int maxOut, String cwd) {}

    /**
     * What the engine adds to a run's environment besides the fixed variables: {@code defaults} the run's own env may
     * override (trust-store paths), {@code placeholders} it may not (a secret binding's placeholder, by variable).
     */
    record Injected(Map<String, String> defaults, Map<String, String> placeholders, Map<String, String> bindingByEnv) {
        static final Injected NONE = new Injected(Map.of(), Map.of(), Map.of());
    }

    private Prepared prepare(Workspace ws, RunRequest req, boolean background, Injected injected) throws EngineException {
        if (req.command() == null || req.command().isBlank()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "command is required: a shell command line such as 'ls -la'");
        }
        if (req.command().length() > MAX_COMMAND) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "command is " + req.command().length()
                    + " characters; the limit is " + MAX_COMMAND + ". Write long scripts to a file and run that");
        }
        if (req.command().indexOf('\0') >= 0) throw new EngineException(Kind.INVALID_ARGUMENT, "command contains a NUL character");
        int timeout = req.timeoutSeconds() == null ? (background ? 0 : config.defaultTimeoutSeconds()) : req.timeoutSeconds();
        if ((timeout < 1 && !(background && req.timeoutSeconds() == null)) || timeout > config.maxTimeoutSeconds()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "timeout_s " + timeout + " is outside 1.." + config.maxTimeoutSeconds());
        }
        int maxOut = req.maxOutputBytes() == null ? config.maxOutputBytes() : req.maxOutputBytes();
        if (maxOut < MIN_OUTPUT || maxOut > MAX_OUTPUT) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "max_output_bytes " + maxOut + " is outside " + MIN_OUTPUT + ".." + MAX_OUTPUT);
        }
        var image = ws.imageRecord();
        // an imported image's WorkingDir is the default cwd, as in a container started from it
        String cwd = WorkspacePaths.resolve(req.cwd() == null && image != null && image.workingDir() != null
                ? image.workingDir() : req.cwd());
        byte[] stdin = req.stdin() == null ? null : req.stdin().getBytes(StandardCharsets.UTF_8);
        if (stdin != null && stdin.length > MAX_STDIN) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "stdin is " + stdin.length + " bytes; the limit is " + MAX_STDIN
                    + ". Write large inputs with a file and redirect");
        }
        var tty = req.tty();
        if (tty != null && !background) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "tty needs background: true (a terminal process is driven with"
                    + " run {workspace, process, stdin} and read as it goes)");
        }
        if (tty != null) checkSize(tty.cols(), tty.rows());
        List<String> env = environment(ws, tty == null ? req.env() : withTerm(req.env()), injected);
        var exec = new ExecRequest(List.of("/bin/sh", "-c", req.command()), env, cwd, timeout * 1000L, stdin != null || tty != null,
                tty == null ? 0 : tty.cols(), tty == null ? 0 : tty.rows());
        return new Prepared(exec, stdin, timeout, maxOut, cwd);
    }

    /** A terminal size within the catalogue's bounds, or the refusal naming them. */
    static void checkSize(int cols, int rows) throws EngineException {
        if (cols < 1 || rows < 1 || cols > MAX_COLS || rows > MAX_ROWS) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "terminal size " + cols + "x" + rows + " is outside 1.." + MAX_COLS
                    + " columns and 1.." + MAX_ROWS + " rows");
        }
    }

    /** A terminal process's TERM: what the screen model renders, unless the run names its own. */
    private static Map<String, String> withTerm(Map<String, String> env) {
        Map<String, String> m = new TreeMap<>();
        m.put("TERM", "xterm-256color");
        if (env != null) m.putAll(env);
        return m;
    }

    private static ExecHandle launch(Sandbox sandbox, Prepared p, ExecListener sink) throws EngineException {
        try {
            ExecHandle h = sandbox.agent().exec(p.exec(), sink);
            if (p.stdin() != null) {
                if (p.stdin().length > 0) h.writeStdin(p.stdin());
                if (!p.exec().tty()) h.closeStdin(); // on a terminal, input goes on with run {process, stdin}
            }
            return h;
        } catch (AgentException e) {
            // the agent says "cwd ..." for a directory it could not enter; "confining the run ..." is the sandbox's fault
            if ((e.errno() == 2 || e.errno() == 20 || e.errno() == 13) && !e.getMessage().contains("confining the run")) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "cannot run in cwd '" + p.cwd() + "': " + e.getMessage()
                        + "; use an existing directory (the default is " + DEFAULT_CWD + ")");
            }
            throw new EngineException(Kind.UNAVAILABLE, "the workspace's agent refused the command: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "lost contact with the workspace's agent: " + e.getMessage(), e);
        }
    }

    /** Maps the exec's channel to its run as soon as the agent reports it started, before any of its tunnels arrive. */
    private static ExecListener attributed(Workspace ws, WorkspaceEgress.RunEgress egress, ExecListener sink) {
        if (egress == null) return sink;
        return new ExecListener() {
            @Override public void onStdout(byte[] data) { sink.onStdout(data); }
            @Override public void onStderr(byte[] data) { sink.onStderr(data); }
            @Override public void onStarted(int channel) { ws.egress.bind(egress, channel); }
        };
    }

    /** Starts a background command; its output goes to {@code sink}; its tunnels belong to {@code egress}. */
    ExecHandle start(Workspace ws, Sandbox sandbox, RunRequest req, ExecListener sink, Injected injected, WorkspaceEgress.RunEgress egress)
            throws EngineException {
        return launch(sandbox, prepare(ws, req, true, injected), attributed(ws, egress, sink));
    }

    /** What must hold before a command starts (its start record written); throws to refuse the run. */
    interface Gate {
        void pass() throws EngineException;
    }

    /**
     * A foreground command that has ended: its result as the agent reported it (exit, output, timeout note), and the
     * agent-config fingerprint taken before it ran, for {@link #checked}.
     */
    public record Ended(RunResult result, java.util.Map<String, AgentConfigGuard.Entry> before) {}

    /**
     * Runs a foreground command to its end (or its timeout). The guard's look at what it changed is a separate step
     * ({@link #checked}), so the engine can record the run's end, and start that record's fsync, before the guard's
     * round trip to the agent instead of after it.
     */
    Ended execute(Workspace ws, Sandbox sandbox, RunRequest req, OutputListener listener, Injected injected,
                  WorkspaceEgress.RunEgress egress, Gate beforeLaunch) throws EngineException {
        Prepared prep = prepare(ws, req, false, injected);
        int timeout = prep.timeout();
        int maxOut = prep.maxOut();
        BoundedOutput out = new BoundedOutput(maxOut);
        BoundedOutput err = new BoundedOutput(maxOut);
        ExecListener sink = attributed(ws, egress, new ExecListener() {
            @Override public void onStdout(byte[] data) { out.append(data); listener.onOutput("stdout", data); }
            @Override public void onStderr(byte[] data) { err.append(data); listener.onOutput("stderr", data); }
        });
        dev.berth.engine.metrics.CallPhases.mark("run.prepare");
        var before = fingerprint(ws, sandbox);
        dev.berth.engine.metrics.CallPhases.mark("guard.before");
        beforeLaunch.pass();
        dev.berth.engine.metrics.CallPhases.mark("audit.run_start.wait");
        long t0 = System.nanoTime();
        ExecHandle h = launch(sandbox, prep, sink);
        dev.berth.engine.metrics.CallPhases.mark("agent.exec_to_started");
        ExecExit exit;
        try {
            exit = h.exit().get(timeout + 10L, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            try { h.signal(9); } catch (IOException ignored) { }
            exit = new ExecExit(137, 9, true);
        } catch (InterruptedException e) {
            // the caller was cancelled: the command must not outlive the request
            try { h.signal(9); } catch (IOException ignored) { }
            Thread.currentThread().interrupt();
            throw new EngineException(Kind.INTERNAL, "run was cancelled; its processes were killed");
        } catch (ExecutionException e) {
            throw new EngineException(Kind.UNAVAILABLE, "lost contact with the workspace's agent while the command ran: "
                    + e.getCause().getMessage(), e.getCause());
        }
        dev.berth.engine.metrics.CallPhases.mark("agent.started_to_exit");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        int code = exit.termSignal() != 0 ? 128 + exit.termSignal() : exit.exitCode();
        String note = exit.timedOut() ? "timed out after " + timeout + " s; the whole process tree was killed" : stoppedNote(exit);
        var stopped = exit.left().stream().map(l -> new RunResult.StoppedProcess(l.pid(), l.command())).toList();
        return new Ended(new RunResult(ws.id, code, exit.termSignal(), out.text(), err.text(), out.totalBytes(), err.totalBytes(),
                out.truncated(), err.truncated(), ms, exit.timedOut(), false, note, List.of(), List.of(), List.of(), null, null, null,
                out.sha256(), err.sha256(), null, null, List.of(), stopped), before);
    }

    /** Says what a foreground command left running (the agent stopped it with the run), or null. */
    static String stoppedNote(ExecExit exit) {
        if (exit.leftTotal() == 0) return null;
        String which = exit.left().stream().map(l -> l.pid() + " " + l.command()).reduce((a, b) -> a + ", " + b).orElse("");
        return exit.leftTotal() + " process(es) the command started were still running when it ended and were stopped"
                + " with it (" + which + (exit.leftTotal() > exit.left().size() ? ", ..." : "") + "; see stopped_processes);"
                + " a process meant to outlive its run (a dev server, a watcher) needs background: true";
    }

    /** The ended run's result with the agent-config guard's findings (put back first in {@code revert} mode). */
    RunResult checked(Workspace ws, Sandbox sandbox, Ended ended) {
        List<AgentConfigChange> changes = guard(ws, sandbox, ended.before());
        if (changes.isEmpty()) return ended.result();
        String said = changes.size() + " agent configuration file(s) changed by this run"
                + (config.guard() == GuardMode.REVERT ? " were put back (agent configuration is read-only to runs)" : "")
                + ": " + changes.stream().map(c -> c.change() + " " + c.path()).reduce((a, b) -> a + ", " + b).orElse("");
        return ended.result().withAgentConfigChanges(changes, said);
    }

    /**
     * The guarded files before a run: what the guard saw after the workspace's last run when nothing else has touched
     * the sandbox since ({@link Workspace#recallGuard}), else a fresh look.
     */
    @SuppressWarnings("unchecked")
    private java.util.Map<String, AgentConfigGuard.Entry> fingerprint(Workspace ws, Sandbox sandbox) throws EngineException {
        if (config.guard() == GuardMode.OFF) return null;
        Object last = ws.recallGuard(sandbox);
        if (last != null) return (java.util.Map<String, AgentConfigGuard.Entry>) last;
        try {
            return AgentConfigGuard.fingerprint(sandbox.agent());
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "lost contact with the workspace's agent: " + e.getMessage(), e);
        }
    }

    private List<AgentConfigChange> guard(Workspace ws, Sandbox sandbox, java.util.Map<String, AgentConfigGuard.Entry> before) {
        if (before == null) return List.of();
        try {
            long ticket = ws.guardTicket();
            var after = AgentConfigGuard.fingerprint(sandbox.agent());
            List<AgentConfigChange> changes = AgentConfigGuard.diff(before, after);
            // what the files are now, for the next run's "before" (after a revert they are not what was seen: look again)
            if (changes.isEmpty() || config.guard() != GuardMode.REVERT) ws.rememberGuard(ticket, sandbox, java.util.Collections.unmodifiableMap(after));
            if (changes.isEmpty() || config.guard() != GuardMode.REVERT) return changes;
            return AgentConfigGuard.revert(sandbox.agent(), before, changes);
        } catch (IOException e) {
            return List.of(new AgentConfigChange("(unknown)", "unchecked: " + e.getMessage(), false));
        }
    }

    /** The variables every run starts from (an image's Env, Berth's own and the run's come on top). */
    public static Map<String, String> baseEnvironment() {
        Map<String, String> env = new TreeMap<>();
        env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        env.put("HOME", "/root");
        env.put("LANG", "C.UTF-8");
        env.put("TERM", "dumb");
        return env;
    }

    private static List<String> environment(Workspace ws, Map<String, String> extra, Injected injected) throws EngineException {
        Map<String, String> env = baseEnvironment();
        var image = ws.imageRecord();
        if (image != null) {
            // the image config's Env (its PATH, JAVA_HOME...) over Berth's defaults; the egress and Berth variables
            // below stay Berth's, and the run's own env still wins
            for (String kv : image.env()) {
                int eq = kv.indexOf('=');
                if (eq > 0 && !kv.startsWith("BERTH_")) env.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
        }
        env.put("BERTH_WORKSPACE", ws.id);
        String proxy = "http://127.0.0.1:" + PROXY_PORT;
        for (String k : List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")) env.put(k, proxy);
        env.put("NO_PROXY", "localhost,127.0.0.1,::1");
        env.put("no_proxy", "localhost,127.0.0.1,::1");
        env.putAll(injected.defaults());
        if (extra != null) {
            for (var e : extra.entrySet()) {
                String k = e.getKey();
                if (!ENV_NAME.matcher(k).matches()) {
                    throw new EngineException(Kind.INVALID_ARGUMENT, "environment variable name '" + k + "' is not allowed");
                }
                if (k.startsWith("BERTH_") || RESERVED.contains(k)) {
                    throw new EngineException(Kind.INVALID_ARGUMENT, "environment variable " + k
                            + " is set by Berth and cannot be overridden (egress goes through the workspace proxy)");
                }
                if (injected.placeholders().containsKey(k)) {
                    throw new EngineException(Kind.INVALID_ARGUMENT, "environment variable " + k + " carries the placeholder of"
                            + " secret binding '" + injected.bindingByEnv().get(k) + "' in this run; drop it from env, or run"
                            + " with secrets: [] to go without the binding");
                }
                String v = e.getValue() == null ? "" : e.getValue();
                if (v.indexOf('\0') >= 0) throw new EngineException(Kind.INVALID_ARGUMENT, "value of " + k + " contains a NUL character");
                env.put(k, v);
            }
        }
        env.putAll(injected.placeholders());
        List<String> list = new ArrayList<>(env.size());
        env.forEach((k, v) -> list.add(k + "=" + v));
        return list;
    }
}
