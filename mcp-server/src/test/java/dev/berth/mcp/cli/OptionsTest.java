package dev.berth.mcp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.spi.IsolationDriver;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The command line: options reach the backend checked; usage errors say what was wrong, exit 2, and suggest. */
class OptionsTest {
    /** Records what the command line asked of the server wiring. */
    static final class Recording implements Backend {
        Options opts;
        String called;

        @Override
        public int stdio(Options o) { opts = o; called = "stdio"; return 0; }

        @Override
        public int http(Options o) { opts = o; called = "http"; return 0; }

        @Override
        public int node(Options o) { opts = o; called = "node"; return 0; }

        @Override
        public int fleetStatus(Path config, java.io.PrintWriter out, java.io.PrintWriter err) { called = "fleet status " + config; return 0; }

        @Override
        public int cordon(Path config, String id, boolean on, java.io.PrintWriter out, java.io.PrintWriter err) { called = "cordon " + id + " " + on; return 0; }

        @Override
        public int buildImage(Options o, Path recipe, String name, int stepTimeoutSeconds, PrintStream out, PrintStream err) {
            opts = o;
            called = "build " + recipe + " " + name + " " + stepTimeoutSeconds;
            return 0;
        }

        @Override
        public int shell(Options o, String workspace, String command, PrintStream err) {
            opts = o;
            called = "shell " + workspace + " " + command;
            return 0;
        }

        @Override
        public List<IsolationDriver> drivers(Options o) { return List.of(); }

        @Override
        public String versionLine() { return "berth test"; }
    }

    record Run(int code, String out, String err, Recording backend) {}

    static Run berth(String... args) {
        var o = new ByteArrayOutputStream();
        var e = new ByteArrayOutputStream();
        Recording b = new Recording();
        int code = Cli.run(args, b, new PrintStream(o, true, StandardCharsets.UTF_8), new PrintStream(e, true, StandardCharsets.UTF_8));
        return new Run(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8), b);
    }

    @Test
    void http_options_reachTheBackend() {
        Run r = berth("http", "--port", "9000", "--bind", "127.0.0.2", "--config", "/etc/berth.json", "--home", "/tmp/h");
        assertEquals(0, r.code(), r.err());
        assertEquals("http", r.backend().called);
        assertEquals(9000, r.backend().opts.port());
        assertEquals("127.0.0.2", r.backend().opts.bind());
        assertEquals(Path.of("/etc/berth.json"), r.backend().opts.config());
        assertEquals(Path.of("/tmp/h"), r.backend().opts.home());
        assertEquals("auto", r.backend().opts.microvmImage());
    }

    @Test
    void port_notANumber_namesTheValue_exit2() {
        Run r = berth("http", "--port", "80a");
        assertEquals(2, r.code());
        assertTrue(r.err().startsWith("berth: --port must be a number 1-65535, got '80a'\n"), r.err());
        assertEquals(2, berth("http", "--port", "65536").code());
        assertNull(r.backend().called);
    }

    @Test
    void httpOptions_onOtherCommands_areRefusedByName() {
        Run r = berth("stdio", "--port", "9000");
        assertEquals(2, r.code());
        assertTrue(r.err().startsWith("berth: --port and --bind apply to 'berth http' and 'berth node' only, not 'stdio'\n"), r.err());
        Run c = berth("stdio", "--config", "berth.json"); // stdio uses the egress and guard sections
        assertEquals(0, c.code(), c.err());
        assertEquals(Path.of("berth.json").toAbsolutePath(), c.backend().opts.config());
        Run d = berth("doctor", "--config", "berth.json");
        assertEquals(2, d.code());
        assertTrue(d.err().startsWith("berth: --config applies to 'berth http', 'berth node' and 'berth stdio' only, not 'doctor'\n"), d.err());
        Run b = berth("http", "--bin-dir", "/tmp/bin");
        assertTrue(b.err().startsWith("berth: --bin-dir applies to 'berth setup' and 'berth launcher' only, not 'http'\n"), b.err());
    }

    @Test
    void typos_suggestTheClosestCommandOrOption_exit2() {
        Run r = berth("stdoi");
        assertEquals(2, r.code());
        assertTrue(r.err().startsWith("berth: unknown command 'stdoi'; did you mean 'stdio'?\n"), r.err());
        Run o = berth("http", "--prot", "9000");
        assertEquals(2, o.code());
        assertTrue(o.err().startsWith("berth: unknown option '--prot'; did you mean '--port'?\n"), o.err());
        Run s = berth("image", "lst");
        assertEquals(2, s.code());
        assertTrue(s.err().startsWith("berth: unknown image subcommand 'lst'; did you mean 'list'?\n"), s.err());
        Run far = berth("frobnicate");
        assertTrue(far.err().startsWith("berth: unknown command 'frobnicate'; use stdio, http,"), far.err());
    }

    @Test
    void missingValues_andBadChoices_sayWhich() {
        Run r = berth("stdio", "--home");
        assertEquals(2, r.code());
        assertTrue(r.err().startsWith("berth: --home needs a value\n"), r.err());
        Run m = berth("stdio", "--microvm-image", "huge");
        assertTrue(m.err().startsWith("berth: --microvm-image must be auto, test or developer, got 'huge'\n"), m.err());
    }

    @Test
    void help_andNoArguments_printUsage_exit0() {
        Run none = berth();
        assertEquals(0, none.code());
        assertTrue(none.out().contains("stdio") && none.out().contains("image"), none.out());
        Run help = berth("image", "--help");
        assertEquals(0, help.code());
        assertTrue(help.out().contains("build") && help.out().contains("import"), help.out());
        Run version = berth("version");
        assertEquals("berth test\n", version.out());
    }

    @Test
    void imageBuild_needsFileAndName_exit2_elseReachesTheBackend() {
        assertEquals(2, berth("image", "build", "recipe.json").code());
        assertEquals(2, berth("image", "build", "--name", "x").code());
        Run r = berth("image", "build", "recipe.json", "--name", "x", "--home", "/tmp/h", "--step-timeout", "60");
        assertEquals(0, r.code(), r.err());
        assertEquals("build recipe.json x 60", r.backend().called);
        assertEquals("namespace", r.backend().opts.isolation());
    }
}
