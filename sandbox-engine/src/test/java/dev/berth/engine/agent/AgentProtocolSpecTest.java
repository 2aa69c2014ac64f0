package dev.berth.engine.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The spec's constant tables are the contract: Java and the C agent must match them exactly, both ways. */
class AgentProtocolSpecTest {
    private static final Path SPEC = Path.of("../tool-schemas/agent-protocol.md");
    /** Protocol fields derived from the tables rather than rows of them. */
    private static final Set<String> DERIVED = Set.of("HEADER", "AGENT_CHANNEL_BIT", "FILE_READ_MAX");

    static Map<String, String> specConstants() throws IOException {
        String md = Files.readString(SPEC);
        Map<String, String> out = new LinkedHashMap<>();
        for (String section : List.of("constants", "flags")) {
            int begin = md.indexOf("<!-- " + section + ":begin");
            int end = md.indexOf("<!-- " + section + ":end -->");
            assertTrue(begin >= 0 && end > begin, "markers for " + section + " not found in " + SPEC);
            for (String line : md.substring(md.indexOf('\n', begin) + 1, end).split("\n")) {
                String[] cells = line.split("\\|");
                if (cells.length < 3) continue;
                String name = cells[1].trim(), value = cells[2].trim();
                if (name.equals("name") || name.startsWith("---")) continue;
                assertTrue(name.matches("[A-Z_]+"), "bad constant name in spec: '" + name + "'");
                assertTrue(out.put(name, value) == null, "constant " + name + " appears twice in spec");
            }
        }
        assertTrue(out.size() > 30, "too few constants parsed from spec: " + out.keySet());
        return out;
    }

    @Test
    void javaConstants_comparedWithSpec_matchBothWays() throws Exception {
        Map<String, String> spec = specConstants();
        Map<String, Integer> java = new TreeMap<>();
        for (Field f : Protocol.class.getDeclaredFields()) {
            int m = f.getModifiers();
            if (Modifier.isStatic(m) && Modifier.isFinal(m) && f.getType() == int.class && !DERIVED.contains(f.getName())) {
                f.setAccessible(true);
                java.put(f.getName(), f.getInt(null));
            }
        }
        List<String> problems = new ArrayList<>();
        spec.forEach((name, value) -> {
            Integer v = java.get(name);
            if (v == null) problems.add(name + " is in the spec but missing in Protocol");
            else if (v.intValue() != Integer.decode(value)) problems.add(name + ": spec " + value + ", Protocol " + v);
        });
        java.keySet().stream().filter(n -> !spec.containsKey(n)).forEach(n -> problems.add(n + " is in Protocol but not in the spec"));
        assertEquals(List.of(), problems);
    }

    @Test
    void agentDescribe_comparedWithSpec_matchesBothWaysInSpecNotation() throws Exception {
        Map<String, String> spec = specConstants();
        Process p = new ProcessBuilder(AgentHarness.BINARY.toAbsolutePath().toString(), "--describe").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(10, TimeUnit.SECONDS), "--describe did not finish");
        assertEquals(0, p.exitValue(), "--describe exit code; output:\n" + out);
        Map<String, String> agent = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            if (line.isBlank()) continue;
            String[] kv = line.trim().split(" ");
            assertEquals(2, kv.length, "--describe line is not 'NAME value': '" + line + "'");
            assertFalse(agent.containsKey(kv[0]), "--describe prints " + kv[0] + " twice");
            agent.put(kv[0], kv[1]);
        }
        List<String> problems = new ArrayList<>();
        spec.forEach((name, value) -> {
            String v = agent.get(name);
            if (v == null) problems.add(name + " is in the spec but not printed by the agent");
            else if (!v.equals(value)) problems.add(name + ": spec " + value + ", agent " + v);
        });
        agent.keySet().stream().filter(n -> !spec.containsKey(n)).forEach(n -> problems.add(n + " is printed by the agent but not in the spec"));
        assertEquals(List.of(), problems);
    }
}
