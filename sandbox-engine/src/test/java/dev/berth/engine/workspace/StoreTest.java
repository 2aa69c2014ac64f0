package dev.berth.engine.workspace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.berth.engine.spi.MetaFile;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The engine's persisted records, read across format versions. */
class StoreTest {
    @TempDir
    Path dir;

    /** A workspace record written before secret bindings existed (version 1) still loads, with no secrets. */
    @Test
    void workspaceRecordVersion1_loadsWithoutSecrets() throws IOException {
        Store store = new Store(dir.resolve("home"));
        Path ws = store.workspaceDir("ws-old");
        MetaFile.write(ws.resolve("workspace.meta"), "workspace", 1, "{\"id\":\"ws-old\",\"tenant\":\"local\",\"name\":\"old\","
                + "\"lifecycle\":\"persistent\",\"isolation\":\"namespace\",\"state\":\"parked\",\"createdAt\":\"2026-01-01T00:00:00Z\","
                + "\"lastUsedAt\":\"2026-01-01T00:00:00Z\",\"fromSnapshot\":null,\"resources\":null,\"egress\":null}");
        Store.WorkspaceRecord rec = store.loadWorkspace(ws);
        assertEquals("old", rec.name());
        assertEquals(null, rec.secrets());
    }
}
