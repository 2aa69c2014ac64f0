package dev.berth.engine.microvm;

import dev.berth.engine.host.HostIdentity;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;

/**
 * Every tunable of the microVM driver, read once when the driver is made ({@link #fromSystem}) and handed down by
 * constructor; nothing below the driver reads a system property. Each is documented in {@code docs/settings.md}; a
 * value out of range is refused here, naming the property and the range. Immutable.
 *
 * @param qemu                 {@code berth.microvm.qemu}: the QEMU binary, a name on PATH or a path
 * @param accel                {@code berth.microvm.accel}: {@code auto}, {@code kvm} or {@code tcg}
 * @param warmBase             {@code berth.microvm.warmBase}: fresh workspaces fork a pristine base snapshot
 * @param agentTimeout         {@code berth.microvm.agentTimeoutSeconds}: how long a start waits for the agent's HELLO
 * @param maxChainDepth        {@code berth.microvm.maxChainDepth}: disk layers a running machine keeps before flattening
 * @param console              {@code berth.microvm.console}: the guest's serial console into {@code console.log}
 * @param initOnFree           {@code berth.microvm.initOnFree}: the guest zeroes freed pages (small parked RAM files)
 * @param unsafeNoJail         {@code berth.microvm.unsafeNoJail}: QEMU runs unjailed even as root (benchmarks)
 * @param unsafeUnconfinedRuns {@code berth.microvm.unsafeUnconfinedRuns}: guests run commands unconfined (benchmarks)
 */
public record MicrovmSettings(String qemu, String accel, boolean warmBase, Duration agentTimeout, int maxChainDepth,
                              boolean console, boolean initOnFree, boolean unsafeNoJail, boolean unsafeUnconfinedRuns) {

    static final List<String> ACCELS = List.of("auto", "kvm", "tcg");
    static final long MAX_AGENT_TIMEOUT_SECONDS = 3600;
    static final int MAX_CHAIN_DEPTH = 1024;

    public MicrovmSettings {
        if (qemu == null || qemu.isBlank()) throw new IllegalArgumentException("berth.microvm.qemu must name a QEMU binary, not be empty");
        if (!ACCELS.contains(accel)) {
            throw new IllegalArgumentException("berth.microvm.accel must be one of " + String.join(", ", ACCELS) + ", not '" + accel + "'");
        }
        long s = agentTimeout.toSeconds();
        if (s < 1 || s > MAX_AGENT_TIMEOUT_SECONDS) {
            throw new IllegalArgumentException("berth.microvm.agentTimeoutSeconds must be 1.." + MAX_AGENT_TIMEOUT_SECONDS + ", not " + s);
        }
        if (maxChainDepth < 1 || maxChainDepth > MAX_CHAIN_DEPTH) {
            throw new IllegalArgumentException("berth.microvm.maxChainDepth must be 1.." + MAX_CHAIN_DEPTH + ", not " + maxChainDepth);
        }
    }

    /** The defaults, as when no property is set. */
    public static MicrovmSettings defaults() {
        return new MicrovmSettings("qemu-system-x86_64", "auto", true, Duration.ofSeconds(90), 16, false, true, false, false);
    }

    /**
     * The settings from the {@code berth.microvm.*} system properties, the defaults where one is unset.
     *
     * @throws IllegalArgumentException naming the property and its allowed values when one is out of range
     */
    public static MicrovmSettings fromSystem() { return from(System::getProperty); }

    /** As {@link #fromSystem}, from {@code property} (name to value, null when unset): the seam tests use. */
    static MicrovmSettings from(UnaryOperator<String> property) {
        MicrovmSettings d = defaults();
        return new MicrovmSettings(
                text(property, "berth.microvm.qemu", d.qemu()),
                text(property, "berth.microvm.accel", d.accel()),
                bool(property, "berth.microvm.warmBase", d.warmBase()),
                Duration.ofSeconds(number(property, "berth.microvm.agentTimeoutSeconds", d.agentTimeout().toSeconds())),
                (int) number(property, "berth.microvm.maxChainDepth", d.maxChainDepth()),
                bool(property, "berth.microvm.console", d.console()),
                bool(property, "berth.microvm.initOnFree", d.initOnFree()),
                bool(property, "berth.microvm.unsafeNoJail", d.unsafeNoJail()),
                bool(property, "berth.microvm.unsafeUnconfinedRuns", d.unsafeUnconfinedRuns()));
    }

    /** QEMU runs in its jail ({@link VmmJail}): Berth is root and the jail was not turned off. */
    boolean jailed() { return HostIdentity.isRoot() && !unsafeNoJail; }

    MicrovmSettings withQemu(String q) {
        return new MicrovmSettings(q, accel, warmBase, agentTimeout, maxChainDepth, console, initOnFree, unsafeNoJail, unsafeUnconfinedRuns);
    }

    MicrovmSettings withMaxChainDepth(int depth) {
        return new MicrovmSettings(qemu, accel, warmBase, agentTimeout, depth, console, initOnFree, unsafeNoJail, unsafeUnconfinedRuns);
    }

    MicrovmSettings withInitOnFree(boolean on) {
        return new MicrovmSettings(qemu, accel, warmBase, agentTimeout, maxChainDepth, console, on, unsafeNoJail, unsafeUnconfinedRuns);
    }

    MicrovmSettings withUnsafeUnconfinedRuns(boolean on) {
        return new MicrovmSettings(qemu, accel, warmBase, agentTimeout, maxChainDepth, console, initOnFree, unsafeNoJail, on);
    }

    private static String text(UnaryOperator<String> property, String name, String fallback) {
        String v = property.apply(name);
        return v == null ? fallback : v.strip();
    }

    private static boolean bool(UnaryOperator<String> property, String name, boolean fallback) {
        String v = property.apply(name);
        if (v == null) return fallback;
        return switch (v.strip().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(name + " must be true or false, not '" + v + "'");
        };
    }

    private static long number(UnaryOperator<String> property, String name, long fallback) {
        String v = property.apply(name);
        if (v == null) return fallback;
        try {
            return Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, not '" + v + "'");
        }
    }
}
