package dev.berth.mcp.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code berth doctor --egress FILE} shows how the file shapes egress and which named hosts may resolve into private ranges. */
class DoctorEgressTest {
    static String report(String json) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DoctorCommand.egress(dev.berth.proxy.ConfigLoader.parse(json), "egress.json", new PrintStream(bytes, true, StandardCharsets.UTF_8));
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void internalHosts_listedWithTheirRangesAndWhereTheyWereStated() throws Exception {
        String out = report("{\"allow\": [{\"host\": \"mirror.corp.example\"}], \"limits\": {\"connect_burst\": 50},"
                + " \"internal_hosts\": [{\"host\": \"mirror.corp.example\", \"ranges\": [\"10.1.0.0/16\"]}]}");
        assertTrue(out.contains("egress (egress.json): connection setups 100/s per workspace (burst 50)"), out);
        assertTrue(out.contains("internal hosts (may resolve into these non-public ranges"), out);
        assertTrue(out.matches("(?s).*\\n  mirror\\.corp\\.example +\\[10\\.1\\.0\\.0/16\\]  \\(internal_hosts\\[0\\]\\)\\n.*"), out);
    }

    @Test
    void noInternalHosts_saysSoAndHowToName_one() throws Exception {
        String out = report("{\"allow\": [{\"host\": \"example.com\"}]}");
        assertTrue(out.contains("internal hosts: none (egress internal_hosts: a named host that may resolve into a stated private range)"), out);
    }
}
