package dev.berth.engine.microvm;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where the time of one start or park went: {@link #mark} closes the phase that ran since the previous mark (or
 * since creation) under a name. Read by the benchmark ({@code MicrovmBenchmark} prints a resume's and a park's
 * phases); costs one {@code nanoTime} per mark. Not thread-safe: one lifecycle call on one thread marks it.
 */
final class Phases {
    private final Map<String, Double> millis = new LinkedHashMap<>();
    private long last = System.nanoTime();

    /** Closes the phase that ran since the last mark as {@code name} (added to it if the name was marked before). */
    void mark(String name) {
        long now = System.nanoTime();
        millis.merge(name, (now - last) / 1e6, Double::sum);
        last = now;
    }

    /** Records {@code ms} under {@code name} without closing the running phase (work measured elsewhere). */
    void note(String name, double ms) { millis.merge(name, ms, Double::sum); }

    Map<String, Double> millis() { return Collections.unmodifiableMap(millis); }
}
