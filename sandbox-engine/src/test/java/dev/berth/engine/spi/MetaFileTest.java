package dev.berth.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MetaFileTest {
    @TempDir Path dir;

    @Test
    void write_thenRead_returnsBody() throws IOException {
        Path f = dir.resolve("w.meta");
        MetaFile.write(f, "workspace", 1, "{\"a\":\"ü\"}");
        assertEquals("{\"a\":\"ü\"}", MetaFile.read(f, "workspace", 1));
        assertTrue(Files.list(dir).noneMatch(p -> p.getFileName().toString().endsWith(".tmp")), "temporary file left behind");
    }

    @Test
    void read_flippedByte_refusedAsCorrupt() throws IOException {
        Path f = dir.resolve("w.meta");
        MetaFile.write(f, "workspace", 1, "{\"name\":\"abc\"}");
        byte[] b = Files.readAllBytes(f);
        b[b.length - 3] ^= 1;
        Files.write(f, b);
        var e = assertThrows(IOException.class, () -> MetaFile.read(f, "workspace", 1));
        assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
    }

    @Test
    void read_truncated_refusedWithLengths() throws IOException {
        Path f = dir.resolve("w.meta");
        MetaFile.write(f, "workspace", 1, "{\"name\":\"abcdef\"}");
        byte[] b = Files.readAllBytes(f);
        Files.write(f, java.util.Arrays.copyOf(b, b.length - 4));
        var e = assertThrows(IOException.class, () -> MetaFile.read(f, "workspace", 1));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    }

    @Test
    void read_otherVersion_refusedNamingBoth() throws IOException {
        Path f = dir.resolve("w.meta");
        MetaFile.write(f, "workspace", 2, "{}");
        var e = assertThrows(IOException.class, () -> MetaFile.read(f, "workspace", 1));
        assertTrue(e.getMessage().contains("version 2") && e.getMessage().contains("reads 1"), e.getMessage());
    }

    @Test
    void read_versionRange_acceptsOlderRefusesNewer() throws IOException {
        Path f = dir.resolve("w.meta");
        MetaFile.write(f, "workspace", 1, "{}");
        assertEquals("{}", MetaFile.read(f, "workspace", 1, 2));
        MetaFile.write(f, "workspace", 3, "{}");
        var e = assertThrows(IOException.class, () -> MetaFile.read(f, "workspace", 1, 2));
        assertTrue(e.getMessage().contains("version 3") && e.getMessage().contains("reads 1 to 2"), e.getMessage());
    }

    @Test
    void read_otherKind_refused() throws IOException {
        Path f = dir.resolve("s.meta");
        MetaFile.write(f, "snapshot", 1, "{}");
        var e = assertThrows(IOException.class, () -> MetaFile.read(f, "workspace", 1));
        assertTrue(e.getMessage().contains("'snapshot'"), e.getMessage());
    }

    @Test
    void read_notOurs_refused() throws IOException {
        Path f = dir.resolve("x.meta");
        Files.writeString(f, "{\"hello\":1}\n", StandardCharsets.UTF_8);
        var e = assertThrows(IOException.class, () -> MetaFile.read(f, "workspace", 1));
        assertTrue(e.getMessage().contains("not a Berth metadata file"), e.getMessage());
    }

    @Test
    void read_oversized_refusedBeforeReading() throws IOException {
        Path f = dir.resolve("big.meta");
        Files.write(f, new byte[MetaFile.MAX_BYTES + 1]);
        var e = assertThrows(IOException.class, () -> MetaFile.read(f, "workspace", 1));
        assertTrue(e.getMessage().contains("larger than the limit"), e.getMessage());
    }
}
