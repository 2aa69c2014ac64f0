package dev.berth.engine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * The engine's durable audit trail: one JSON line per event, appended and forced to disk before the call returns,
 * with constant field names. {@code home/audit/agent-config.jsonl} records every change a run made to agent
 * configuration. Thread-safe.
 */
final class EngineAudit {
    private static final System.Logger LOG = System.getLogger("berth.audit");
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final Path dir;

    EngineAudit(Path dir) { this.dir = dir; }

    synchronized void agentConfig(Workspace ws, List<AgentConfigChange> changes) {
        StringBuilder lines = new StringBuilder();
        String now = Instant.now().toString();
        for (AgentConfigChange c : changes) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("time", now);
            m.put("event", "agent_config_change");
            m.put("tenant", ws.tenant);
            m.put("workspace", ws.id);
            m.put("path", c.path());
            m.put("change", c.change());
            m.put("reverted", c.reverted());
            lines.append(JSON.writeValueAsString(m)).append('\n');
        }
        try {
            Files.createDirectories(dir);
            try (FileChannel ch = FileChannel.open(dir.resolve("agent-config.jsonl"), StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                ch.write(ByteBuffer.wrap(lines.toString().getBytes(StandardCharsets.UTF_8)));
                ch.force(false);
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.ERROR, "could not record agent-config changes of " + ws.id + ": " + e.getMessage());
        }
    }
}
