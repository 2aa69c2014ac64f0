package dev.berth.engine.terminal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Await;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Interactive processes on a pseudo-terminal in a real workspace (run {background, tty}): input typed through the
 * agent's channel, the size seen by the program, the screen as a terminal emulator renders it, and the refusals. One
 * workspace per class; one subclass per isolation level.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractTerminalTest {
    protected Path home;
    protected Engine engine;
    protected String ws;

    protected abstract IsolationDriver driver(Path home) throws Exception;

    /**
     * Whether the level's terminal sends the command the signals a terminal sends (SIGWINCH on a resize, SIGINT for
     * ^C): the terminal is the session's controlling terminal and the command its foreground process group.
     */
    protected boolean terminalSignals() { return true; }

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-terminal-");
        IsolationDriver d = driver(home);
        assumeTrue(d.probe().available(), () -> d.name() + " cannot run here: " + d.probe().reason());
        engine = Engine.start(EngineConfig.defaults(home, List.of(d)));
        ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("term")).workspace().id();
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    protected ProcessStatus startTty(String command, int cols, int rows) throws EngineException {
        ProcessStatus s = engine.startBackground(Tenant.LOCAL, new RunRequest(ws, command, null, Map.of(), 300, null, null).withTty(cols, rows));
        assertTrue(s.running(), s.toString());
        assertNotNull(s.screen(), "a terminal process has a screen");
        return s;
    }

    protected void type(String process, String text) throws EngineException {
        engine.terminal(Tenant.LOCAL, ws, process, text.getBytes(StandardCharsets.UTF_8), false, null);
    }

    /** Reads the process until its screen satisfies {@code ok}; returns the last status. */
    protected ProcessStatus screenUntil(String process, String what, java.util.function.Predicate<String> ok) throws Exception {
        AtomicReference<ProcessStatus> last = new AtomicReference<>();
        boolean held = Await.within(Duration.ofSeconds(90), () -> {
            ProcessStatus s = engine.process(Tenant.LOCAL, ws, process, null, null, 1, null, 65536);
            last.set(s);
            return s.screen() != null && ok.test(s.screen());
        });
        assertTrue(held, "screen never showed " + what + "; last: " + last.get());
        return last.get();
    }

    protected ProcessStatus endOf(String process) throws Exception {
        AtomicReference<ProcessStatus> last = new AtomicReference<>();
        Await.until("process " + process + " ends", Duration.ofSeconds(90), () -> {
            last.set(engine.process(Tenant.LOCAL, ws, process, null, null, 1, null, 65536));
            return !last.get().running();
        });
        return last.get();
    }

    @Test
    void prompt_answeredThroughStdin_sizeAndResizeSeenByStty_inputAfterExitRefusedWithStatus() throws Exception {
        String p = startTty("stty size; printf 'name? '; read n; echo \"hi $n\"; trap 'echo got-winch' WINCH;"
                + " until read go; do :; done; stty size; exit 3", 80, 24).process();
        screenUntil(p, "the size and the prompt", s -> s.startsWith("24 80\nname?"));
        type(p, "Ada\r");
        screenUntil(p, "the answer", s -> s.contains("hi Ada"));
        engine.terminal(Tenant.LOCAL, ws, p, new byte[0], false, new RunRequest.Terminal(100, 30));
        type(p, "\r");
        ProcessStatus end = endOf(p);
        assertEquals(3, end.exitCode());
        ProcessStatus all = engine.process(Tenant.LOCAL, ws, p, 0L, 0L, 0, null, 65536);
        assertTrue(all.stdout().contains("30 100"), "stty after the resize: " + all.stdout());
        // dash runs the trap while read waits, busybox ash once read returns: either way before the second stty
        if (terminalSignals()) assertTrue(all.stdout().contains("got-winch"), "SIGWINCH reached the program: " + all.stdout());
        assertEquals("", all.stderr(), "a terminal has one stream");
        EngineException e = assertThrows(EngineException.class, () -> type(p, "more\r"));
        assertEquals(EngineException.Kind.ILLEGAL_STATE, e.kind());
        assertTrue(e.getMessage().contains("exit status 3"), e.getMessage());
    }

    @Test
    void tui_onTheAlternateScreen_readAsAScreen() throws Exception {
        // what TUIs do: the alternate screen, clear, absolute cursor moves, a scroll region, erase to end of line
        String p = startTty("printf 'main-screen\\n'; printf '\\033[?1049h\\033[2J\\033[1;1Htitle-bar\\033[5;10HTUI-BOX"
                + "\\033[10;1Hxxxxxxxx\\033[10;3H\\033[K\\033[2;4r\\033[4;1Hone\\ntwo'; read x; printf '\\033[?1049l'; read y", 40, 12).process();
        ProcessStatus s = screenUntil(p, "the TUI", t -> t.contains("TUI-BOX") && t.contains("two"));
        String[] rows = s.screen().split("\n", -1);
        assertEquals("title-bar", rows[0], s.screen());
        assertEquals("one", rows[2], "scrolled up inside the region 2..4: " + s.screen());
        assertEquals("two", rows[3].strip(), s.screen());
        assertEquals("         TUI-BOX", rows[4], "column 10 of row 5: " + s.screen());
        assertEquals("xx", rows[9], "erased to the end of the line from column 3: " + s.screen());
        assertFalse(s.screen().contains("main-screen"), "the main screen is hidden: " + s.screen());
        type(p, "\r");
        s = screenUntil(p, "the main screen back", t -> t.contains("main-screen"));
        assertFalse(s.screen().contains("TUI-BOX"), s.screen());
        engine.terminal(Tenant.LOCAL, ws, p, new byte[0], false, null);
        type(p, "\r");
        assertEquals(0, endOf(p).exitCode());
    }

    @Test
    void pythonRepl_drivenThroughStdin_endOfInputEndsIt() throws Exception {
        assumeTrue(engine.run(Tenant.LOCAL, RunRequest.of(ws, "command -v python3"), OutputListener.NONE).exitCode() == 0,
                "no python3 in this level's workspace image");
        String p = startTty("exec python3 -q", 80, 24).process();
        screenUntil(p, "the REPL prompt", s -> s.endsWith(">>>"));
        type(p, "def sq(x):\r    return x * x\r\r");
        type(p, "print(sq(7) + 1)\r");
        screenUntil(p, "the result", s -> s.contains("\n50\n>>>"));
        if (terminalSignals()) {
            // the command must be running when ^C comes: typed ahead of the REPL's read, ^C would flush it unread
            type(p, "import time; print('spin', 6 * 7); time.sleep(600)\r");
            screenUntil(p, "the command running", s -> s.contains("spin 42"));
            type(p, "\u0003"); // ^C: the line discipline sends SIGINT to the terminal's foreground process group
            screenUntil(p, "the interrupt", s -> s.contains("KeyboardInterrupt") && s.endsWith(">>>"));
        }
        engine.terminal(Tenant.LOCAL, ws, p, new byte[0], true, null);
        ProcessStatus end = endOf(p);
        if (terminalSignals()) {
            // CPython's own rule, the same on the host under a pty: a REPL that showed a KeyboardInterrupt ends on
            // ^D by re-raising SIGINT on itself (status 130)
            assertEquals(2, end.signal(), end.toString());
        } else {
            assertEquals(0, end.exitCode(), end.toString());
        }
    }

    @Test
    void badInput_refusedWithTheBound_processUnharmed() throws Exception {
        String p = startTty("read x; echo got-$x", 80, 24).process();
        for (int[] size : new int[][] {{0, 24}, {80, 0}, {1001, 24}, {80, 100000}, {-1, -1}}) {
            EngineException e = assertThrows(EngineException.class,
                    () -> engine.terminal(Tenant.LOCAL, ws, p, new byte[0], false, new RunRequest.Terminal(size[0], size[1])));
            assertEquals(EngineException.Kind.INVALID_ARGUMENT, e.kind());
            assertTrue(e.getMessage().contains("1..1000"), e.getMessage());
        }
        EngineException big = assertThrows(EngineException.class,
                () -> engine.terminal(Tenant.LOCAL, ws, p, new byte[65537], false, null));
        assertTrue(big.getMessage().contains("65536"), big.getMessage());
        EngineException fg = assertThrows(EngineException.class,
                () -> engine.run(Tenant.LOCAL, RunRequest.of(ws, "true").withTty(80, 24), OutputListener.NONE));
        assertTrue(fg.getMessage().contains("background: true"), fg.getMessage());
        EngineException start = assertThrows(EngineException.class, () -> engine.startBackground(Tenant.LOCAL, RunRequest.of(ws, "true").withTty(0, 0)));
        assertEquals(EngineException.Kind.INVALID_ARGUMENT, start.kind());
        String pipes = engine.startBackground(Tenant.LOCAL, RunRequest.of(ws, "sleep 30")).process();
        EngineException noTty = assertThrows(EngineException.class, () -> type(pipes, "x"));
        assertTrue(noTty.getMessage().contains("without tty"), noTty.getMessage());
        engine.process(Tenant.LOCAL, ws, pipes, null, null, 0, "KILL", 1024);
        type(p, "ok\r");
        screenUntil(p, "the process still answering", s -> s.contains("got-ok"));
        assertNull(engine.process(Tenant.LOCAL, ws, pipes, null, null, 0, null, 1024).screen(), "a process on pipes has no screen");
    }
}
