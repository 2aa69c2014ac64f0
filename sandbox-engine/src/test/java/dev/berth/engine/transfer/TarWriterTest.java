package dev.berth.engine.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The tar stream an import sends, read back by the real GNU tar on the host: long names and link targets (pax
 * records), modes, links, an empty file, and a file that grew after the scan (cut to the scanned size).
 */
class TarWriterTest {
    @Test
    void stream_gnuTarExtractsItExactly() throws Exception {
        Path src = Files.createTempDirectory("berth-tar-src-").toRealPath();
        Path dst = Files.createTempDirectory("berth-tar-dst-");
        try {
            String longDir = "d".repeat(120) + "/" + "e".repeat(120);
            Files.createDirectories(src.resolve(longDir));
            Files.writeString(src.resolve(longDir + "/" + "f".repeat(90) + ".txt"), "deep\n");
            Files.writeString(src.resolve("run.sh"), "#!/bin/sh\n");
            src.resolve("run.sh").toFile().setExecutable(true);
            Files.write(src.resolve("empty"), new byte[0]);
            Files.createSymbolicLink(src.resolve("link"), Path.of(longDir + "/" + "f".repeat(90) + ".txt"));
            SourceTree t = SourceTree.scan(src, false);
            Files.writeString(src.resolve("run.sh"), "#!/bin/sh\necho grown after the scan\n");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            TarWriter w = new TarWriter(out);
            w.write(t);
            assertEquals(out.size(), w.bytesWritten());
            assertEquals(0, out.size() % 512);
            Path tar = dst.resolve("x.tar");
            Files.write(tar, out.toByteArray());
            Process p = new ProcessBuilder("tar", "-x", "-f", tar.toString(), "-C", dst.toString()).redirectErrorStream(true).start();
            String msg = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), msg);
            assertEquals("deep\n", Files.readString(dst.resolve(longDir + "/" + "f".repeat(90) + ".txt")));
            assertEquals("deep\n", Files.readString(dst.resolve("link")), "the link (long target) resolves inside");
            assertEquals("#!/bin/sh\n", Files.readString(dst.resolve("run.sh")), "cut to the scanned size");
            assertTrue(Files.isExecutable(dst.resolve("run.sh")));
            assertEquals(0, Files.size(dst.resolve("empty")));
        } finally {
            dev.berth.engine.spi.Trees.delete(src);
            dev.berth.engine.spi.Trees.delete(dst);
        }
    }

    @Test
    void paxRecord_lengthCountsItself() {
        for (String v : List.of("a", "x".repeat(5), "y".repeat(93), "z".repeat(994), "w".repeat(99_990))) {
            String r = TarWriter.record("path", v);
            int len = Integer.parseInt(r.substring(0, r.indexOf(' ')));
            assertEquals(r.getBytes(StandardCharsets.UTF_8).length, len, v.length() + " chars");
        }
    }

    @Test
    void nameStatus_parsesRenamesAndPlainChanges() {
        byte[] z = "M\0a.txt\0R093\0old name\0new name\0D\0gone\0".getBytes(StandardCharsets.UTF_8);
        assertEquals(List.of("M a.txt", "R093 old name -> new name", "D gone"), ChangeExport.nameStatus(z));
        assertEquals(List.of("M a"), ChangeExport.nameStatus("M\0a\0R100\0cut".getBytes(StandardCharsets.UTF_8)), "a cut listing ends cleanly");
    }
}
