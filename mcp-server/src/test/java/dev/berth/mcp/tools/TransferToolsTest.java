package dev.berth.mcp.tools;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.api.EngineException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * from_directory and branch exports read and write the server's own disk: over HTTP (Streamable or SSE) they are
 * refused with the reason before anything is looked at (no engine, no exchange is touched).
 */
class TransferToolsTest {
    @ParameterizedTest
    @ValueSource(strings = {"streamable-http", "sse"})
    void remoteTransport_fromDirectoryAndBranchExport_refusedWithReason(String transport) {
        TransferTools t = new TransferTools(null, List.of(java.nio.file.Path.of("/")), transport);
        var open = assertThrows(EngineException.class, () -> t.open(null, null, new Args(Map.of("from_directory", "/etc")), null));
        assertTrue(open.getMessage().startsWith("from_directory works with the server's own disk, so only over stdio"), open.getMessage());
        var export = assertThrows(EngineException.class, () -> t.export(null, null, new Args(Map.of("workspace", "w", "to", "branch"))));
        assertTrue(export.getMessage().contains("only over stdio"), export.getMessage());
    }
}
