package dev.berth.engine.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** What this machine has, as the kernel reports it. Stateless. */
public final class Machine {
    private Machine() {}

    /** MemTotal of this machine in MiB, or 0 if unknown. */
    public static long memoryMiB() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (l.startsWith("MemTotal:")) return Long.parseLong(l.replaceAll("\\D", "")) >> 10;
            }
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
        return 0;
    }
}
