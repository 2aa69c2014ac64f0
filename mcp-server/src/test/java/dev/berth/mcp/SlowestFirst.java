package dev.berth.mcp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.ClassOrdererContext;

/**
 * The order of the end-to-end classes when two run at once (failsafe's JUnit configuration in
 * {@code mcp-server/pom.xml}): the slowest first. JUnit forks the classes in this order into a fork-join pool and its
 * own thread then joins them from the end, so one thread takes the slowest classes first and the other the quickest
 * first (seen in the suite's log): the two meet among the middling ones, and no long class starts last. The weights are the classes' run times from a fresh-clone run of the whole suite
 * ({@code e2e-class-seconds.txt}, written from {@code scripts/test-times.sh}' report); a class missing there (a new
 * one) counts as {@link #UNKNOWN} seconds. Ties keep their names' order, so the order is the same on every run.
 */
public final class SlowestFirst implements ClassOrderer {
    /** What a class without a measured time weighs: in the middle of the field, never last. */
    static final double UNKNOWN = 30;
    private static final Map<String, Double> SECONDS = load();

    @Override
    public void orderClasses(ClassOrdererContext context) {
        context.getClassDescriptors().sort(Comparator
                .comparingDouble((org.junit.jupiter.api.ClassDescriptor d) -> -weight(d.getTestClass().getSimpleName()))
                .thenComparing(d -> d.getTestClass().getName()));
    }

    static double weight(String simpleName) {
        return SECONDS.getOrDefault(simpleName, UNKNOWN);
    }

    /** Lines {@code SECONDS ClassSimpleName}; {@code #} starts a comment. */
    private static Map<String, Double> load() {
        Map<String, Double> out = new HashMap<>();
        try (InputStream in = SlowestFirst.class.getResourceAsStream("/e2e-class-seconds.txt")) {
            if (in == null) return out;
            var reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line; (line = reader.readLine()) != null; ) {
                String l = line.strip();
                if (l.isEmpty() || l.startsWith("#")) continue;
                String[] f = l.split("\\s+");
                out.put(f[1], Double.parseDouble(f[0]));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }
}
