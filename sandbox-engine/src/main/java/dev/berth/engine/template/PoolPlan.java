package dev.berth.engine.template;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.TemplateSettings;
import dev.berth.engine.workspace.DriverSelector;
import java.util.List;

/** The warm pool's plan for a configuration: which levels it fills, whether it fits the machine. Stateless. */
public final class PoolPlan {
    private PoolPlan() {}

    /**
     * The levels the warm pool fills: the available ones (emulated microVMs only when asked for), the default
     * isolation level first.
     */
    public static List<dev.berth.engine.spi.IsolationDriver> levels(EngineConfig config) {
        List<dev.berth.engine.spi.IsolationDriver> out = new java.util.ArrayList<>();
        for (var d : config.drivers()) {
            if (!d.probe().available()) continue;
            if (!config.templates().poolEmulated() && "tcg".equals(d.capabilities().accelerator())) continue;
            if (d.name().equals(config.defaultIsolation())) out.addFirst(d);
            else out.add(d);
        }
        return out;
    }

    /** A warm pool whose members could not all be in memory at once is refused before anything starts. */
    public static void checkFits(EngineConfig config) throws EngineException {
        TemplateSettings t = config.templates();
        int size = t.poolSize();
        if (size == 0) return;
        long have = DriverSelector.machineMemoryMiB();
        if (have <= 0) return;
        if (t.poolMemoryMiB() != Long.MAX_VALUE && t.poolMemoryMiB() > have) {
            throw new EngineException(Kind.LIMIT, "the warm pool's memory budget (" + t.poolMemoryMiB() + " MiB) is more than"
                    + " this machine's memory (" + have + " MiB); lower it (pool.memory_mib) or turn the pool off (pool.size 0)");
        }
        long levels = levels(config).size();
        int member = dev.berth.engine.spi.Resources.DEFAULT.memoryMiB();
        long need = size * levels * member;
        if (Math.min(need, t.poolMemoryMiB()) > have) { // a budget caps the pool below the machine (checked above)
            throw new EngineException(Kind.LIMIT, "the warm pool does not fit this machine's memory: " + size + " per level x "
                    + levels + " levels x " + member + " MiB = " + need
                    + " MiB, but the machine has " + have + " MiB; make the pool smaller (0 turns it off)");
        }
    }

    /**
     * What the warm pool of an engine started with {@code config} would hold here, without starting it (doctor): the
     * levels it fills, in order, how many members the memory budget allows, and the levels left out and why.
     */
    public static String describe(EngineConfig config) {
        TemplateSettings t = config.templates();
        if (t.poolSize() == 0) return "off (pool.size 0)";
        int member = dev.berth.engine.spi.Resources.DEFAULT.memoryMiB();
        List<String> levels = levels(config).stream().map(dev.berth.engine.spi.IsolationDriver::name).toList();
        long members = Math.min((long) t.poolSize() * levels.size(), t.poolBudgetMembers(member));
        StringBuilder b = new StringBuilder(t.poolSize() + " per level, " + (t.poolMemoryMiB() == Long.MAX_VALUE ? "no memory budget"
                : "memory budget " + t.poolMemoryMiB() + " MiB") + " at " + member + " MiB per member: " + members
                + " member(s) over " + (levels.isEmpty() ? "no level" : String.join(", ", levels)));
        for (var d : config.drivers()) {
            if (d.probe().available() && !levels.contains(d.name())) {
                b.append("; not ").append(d.name()).append(" (no hardware acceleration: a member would cost seconds of CPU to"
                        + " boot and CPU while it waits; give pool.size to include it)");
            }
        }
        return b.toString();
    }
}
