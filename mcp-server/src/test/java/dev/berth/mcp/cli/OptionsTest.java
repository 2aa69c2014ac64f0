package dev.berth.mcp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class OptionsTest {
    @Test
    void httpOptions_parse() throws Exception {
        Options o = Options.parse(List.of("--port", "9000", "--bind", "127.0.0.2", "--config", "/etc/berth.json", "--home", "/tmp/h"));
        assertEquals(9000, o.port());
        assertEquals("127.0.0.2", o.bind());
        assertEquals(Path.of("/etc/berth.json"), o.config());
    }

    @Test
    void badPort_namesTheValue() {
        var e = assertThrows(Options.UsageException.class, () -> Options.parse(List.of("--port", "80a")));
        assertEquals("--port must be a number 1-65535, got '80a'", e.getMessage());
        assertThrows(Options.UsageException.class, () -> Options.parse(List.of("--port", "65536")));
    }

    @Test
    void httpOptions_areRefusedOnOtherCommands() throws Exception {
        Options o = Options.parse(List.of("--port", "9000"));
        var e = assertThrows(Options.UsageException.class, () -> o.onlyCommonOptions("stdio"));
        assertEquals("--port and --bind apply to 'berth http' only, not 'stdio'", e.getMessage());
        Options c = Options.parse(List.of("--config", "berth.json"));
        c.onlyCommonOptions("stdio"); // stdio uses the egress and guard sections
        var d = assertThrows(Options.UsageException.class, () -> c.onlyCommonOptions("doctor"));
        assertEquals("--config applies to 'berth http' and 'berth stdio' only, not 'doctor'", d.getMessage());
    }
}
