package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The project's size rule for main code (STYLE.md: split a class by responsibility instead of growing it): no Java
 * source under any module's {@code src/main/java} is longer than {@value #MAX_LINES} lines. It lives in the last
 * module of the build, so its failure stops no other module's tests, and reads the whole checkout from the module's
 * parent.
 */
class SourceSizeTest {
    static final int MAX_LINES = 500;

    @Test
    void mainSources_everyFile_atMost500Lines() throws IOException {
        Path root = Path.of("").toAbsolutePath().getParent();
        List<String> tooLong;
        try (Stream<Path> files = Files.walk(root)) {
            tooLong = files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> p.toString().contains("/src/main/java/"))
                    .filter(p -> !p.toString().contains("/node_modules/") && !p.toString().contains("/target/"))
                    .map(p -> {
                        try (Stream<String> lines = Files.lines(p)) {
                            long n = lines.count();
                            return n > MAX_LINES ? root.relativize(p) + " (" + n + " lines)" : null;
                        } catch (IOException e) {
                            return root.relativize(p) + " (unreadable: " + e.getMessage() + ")";
                        }
                    })
                    .filter(s -> s != null).sorted().toList();
        }
        assertEquals(List.of(), tooLong, "main classes over " + MAX_LINES + " lines: split them by job");
    }
}
