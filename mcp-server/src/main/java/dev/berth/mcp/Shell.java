package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.HomeOwnedException;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.mcp.cli.Options;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import org.jline.terminal.Attributes;
import org.jline.terminal.Size;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;

/**
 * {@code berth shell}'s wiring: an engine on the home (as {@code berth image build} has), one terminal process in the
 * workspace (run {background, tty}, which resumes a parked workspace first), and this process's own terminal in raw
 * mode (JLine, the exec provider: {@code stty}, no native code) pumped both ways: keystrokes typed into the process,
 * its output written out as it comes (a read returns on new output at once), SIGWINCH forwarded as a resize.
 * Ends with the process; exit status: its own, 1 refused or failed.
 */
final class Shell {
    private Shell() {}

    static int run(Options opts, String workspace, String command, PrintStream err) {
        OperatorConfig operator;
        try {
            operator = opts.config() == null ? null : OperatorConfig.loadForStdio(opts.config());
        } catch (OperatorConfig.ConfigException e) {
            err.println("berth shell: " + e.getMessage());
            return 1;
        }
        try (Engine engine = Drivers.engine(opts, operator, null, false);
             Terminal term = TerminalBuilder.builder().system(true).provider("exec").build()) {
            Size size = term.getSize();
            int cols = size.getColumns() > 0 ? Math.min(size.getColumns(), 1000) : 80;
            int rows = size.getRows() > 0 ? Math.min(size.getRows(), 1000) : 24;
            ProcessStatus started = engine.startBackground(Tenant.LOCAL,
                    new RunRequest(workspace, command, null, Map.of(), null, null, null).withTty(cols, rows));
            String id = started.process();
            Attributes saved = term.enterRawMode();
            try {
                term.handle(Terminal.Signal.WINCH, s -> resize(engine, workspace, id, term.getSize()));
                Thread keys = Thread.ofPlatform().daemon().name("berth-shell-input").start(() -> pumpKeys(engine, workspace, id, term));
                int code = pumpOutput(engine, workspace, id, started, term.output());
                keys.interrupt();
                return code;
            } finally {
                term.setAttributes(saved);
            }
        } catch (HomeOwnedException owned) {
            err.println("berth shell: a running Berth serves this home; stop it first, or use the run tool with tty through it");
            return 1;
        } catch (EngineException | java.io.IOException e) {
            err.println("berth shell: " + e.getMessage());
            return 1;
        }
    }

    private static void resize(Engine engine, String workspace, String id, Size size) {
        if (size.getColumns() < 1 || size.getRows() < 1) return;
        try {
            engine.terminal(Tenant.LOCAL, workspace, id, new byte[0], false,
                    new RunRequest.Terminal(Math.min(size.getColumns(), 1000), Math.min(size.getRows(), 1000)));
        } catch (EngineException ignored) {
            // it ended meanwhile: the output pump sees that and returns
        }
    }

    /** Keystrokes as they come, a read at a time; EOF of this terminal (stdin closed) types ^D once. */
    private static void pumpKeys(Engine engine, String workspace, String id, Terminal term) {
        InputStream in = term.input();
        byte[] buf = new byte[4096];
        try {
            for (int n; (n = in.read(buf)) >= 0; ) {
                if (n > 0) engine.terminal(Tenant.LOCAL, workspace, id, Arrays.copyOf(buf, n), false, null);
            }
            engine.terminal(Tenant.LOCAL, workspace, id, new byte[0], true, null);
        } catch (java.io.IOException | EngineException e) {
            // the process ended (input refused) or this terminal closed: the output pump ends the shell
        }
    }

    private static int pumpOutput(Engine engine, String workspace, String id, ProcessStatus first, OutputStream out)
            throws EngineException, java.io.IOException {
        ProcessStatus s = first;
        for (;;) {
            if (!s.stdout().isEmpty()) {
                out.write(s.stdout().getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
            if (!s.running()) return s.exitCode() == null ? 1 : s.exitCode();
            s = engine.process(Tenant.LOCAL, workspace, id, null, null, 5, null, 65536);
        }
    }
}
