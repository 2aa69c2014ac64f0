package dev.berth.mcp;

import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.IsolationDriver;
import java.io.PrintStream;

/** {@code berth doctor}: one line per isolation driver, available or not and why. Exit 0 if any driver can run. */
final class DoctorCommand {
    private DoctorCommand() {}

    static int run(Options opts, PrintStream out) {
        boolean any = false;
        String chosen = null;
        out.println("Berth home: " + opts.home());
        for (IsolationDriver d : Drivers.all(opts)) {
            Availability a = d.probe();
            any |= a.available();
            if (a.available() && chosen == null) chosen = d.name();
            out.printf("%-10s %-13s %s%n", d.name(), a.available() ? "available" : "unavailable", a.reason());
            out.printf("%-10s %-13s boundary: %s; park keeps memory: %s%n", "", "", d.capabilities().boundary(),
                    d.capabilities().parkKeepsMemory() ? "yes" : "no");
        }
        out.println(any ? "default isolation: " + (opts.isolation() != null ? opts.isolation() : chosen)
                : "no isolation driver can run here; run `berth setup` (as root) to install what is missing");
        return any ? 0 : 1;
    }
}
