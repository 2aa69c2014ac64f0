package dev.berth.engine.host;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The drivers give the agent {@link AgentBinary#RUN_CAPS} to hand on to its runs; the agent keeps for runs what
 * {@code RUN_CAPS} in {@code confine.c} names. The two lists must be the same, or runs would silently lack (or a
 * driver grant) a capability.
 */
class AgentRunCapsTest {
    @Test
    void driversList_isTheAgentsList() throws Exception {
        String c = Files.readString(Path.of("src", "main", "c", "confine.c"));
        Matcher m = Pattern.compile("static const int RUN_CAPS\\[\\] = \\{([^}]*)\\};").matcher(c);
        org.junit.jupiter.api.Assertions.assertTrue(m.find(), "no RUN_CAPS array in confine.c");
        List<String> agent = Arrays.stream(m.group(1).split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
        assertEquals(agent, AgentBinary.RUN_CAPS);
    }
}
