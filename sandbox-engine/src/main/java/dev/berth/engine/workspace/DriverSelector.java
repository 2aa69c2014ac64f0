package dev.berth.engine.workspace;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.IoLimits;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.schemas.Limits;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Chooses the isolation driver of a new workspace: the one asked for, the snapshot's for a fork, the configured
 * default, or the first that runs here; never a weaker level than the operator requires, never a silent
 * substitute. Validates the resources asked for. Thread-safe (drivers are).
 */
public final class DriverSelector {
    private final Map<String, IsolationDriver> drivers = new LinkedHashMap<>();
    private final String defaultIsolation;
    private final String requiredIsolation;

    public DriverSelector(EngineConfig config) {
        for (IsolationDriver d : config.drivers()) drivers.put(d.name(), d);
        this.defaultIsolation = config.defaultIsolation();
        this.requiredIsolation = config.requiredIsolation();
    }

    /** The driver named {@code name}, or null when this server has none by that name. */
    public IsolationDriver byName(String name) { return drivers.get(name); }

    public Iterable<IsolationDriver> all() { return drivers.values(); }

    /**
     * @param wanted       the isolation asked for, or null
     * @param snapIsolation the isolation of the snapshot a fork starts from, or null
     * @param snapName     that snapshot's name (for messages)
     */
    public IsolationDriver choose(String wanted, String snapIsolation, String snapName) throws EngineException {
        if (snapIsolation != null && wanted != null && !wanted.equals(snapIsolation)) {
            throw new EngineException(Kind.CONFLICT, "snapshot '" + snapName + "' was taken with isolation '"
                    + snapIsolation + "'; a fork uses the same isolation, so omit isolation or pass '" + snapIsolation + "'");
        }
        if (snapIsolation != null) wanted = snapIsolation;
        if (wanted == null) wanted = defaultIsolation;
        IsolationDriver d;
        if (wanted == null) {
            d = drivers.values().stream().filter(x -> x.probe().available()).findFirst().orElseThrow(() ->
                    new EngineException(Kind.UNAVAILABLE, "no isolation driver can run on this machine; `berth doctor` says why"));
        } else {
            d = drivers.get(wanted);
            if (d == null) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "isolation '" + wanted + "' is not one of " + drivers.keySet());
            }
            Availability a = d.probe();
            if (!a.available()) {
                throw new EngineException(Kind.UNAVAILABLE, "isolation '" + wanted + "' cannot run here: " + a.reason());
            }
        }
        if (requiredIsolation != null && !requiredIsolation.equals(d.name())) {
            throw new EngineException(Kind.UNAVAILABLE, "policy requires isolation '" + requiredIsolation
                    + "' and refuses '" + d.name() + "'; a weaker level is never substituted");
        }
        return d;
    }

    /** The configured drivers' names, without probing them (a probe can take seconds: QEMU, the guest image). */
    public java.util.Set<String> names() {
        return java.util.Collections.unmodifiableSet(drivers.keySet());
    }

    /** Drivers with their availability, for {@code berth doctor}. */
    public Map<String, Availability> report() {
        Map<String, Availability> m = new LinkedHashMap<>();
        for (IsolationDriver d : drivers.values()) m.put(d.name(), d.probe());
        return m;
    }

    /**
     * The resources a new workspace of {@code tenant} gets: its default when none were asked for, else what was asked,
     * refused with the numbers when outside Berth's ranges, above the operator's ceiling for the tenant, or larger
     * than this machine.
     */
    public static Resources validate(Tenant tenant, Resources r) throws EngineException {
        return validate(tenant, r, Runtime.getRuntime().availableProcessors(), machineMemoryMiB());
    }

    public static Resources validate(Tenant tenant, Resources r, int cpus, long memoryMiB) throws EngineException {
        if (r == null) r = tenant.sizes().defaults();
        // an I/O direction not asked for (0) gets the tenant's default for it
        r = r.withIo(r.io().orElse(tenant.sizes().defaults().io()));
        validate(r);
        Resources max = tenant.sizes().max();
        if (max != null) {
            String over = r.vcpus() > max.vcpus() ? "vcpus " + r.vcpus() + " is above the ceiling of " + max.vcpus()
                    : r.memoryMiB() > max.memoryMiB() ? "memory_mib " + r.memoryMiB() + " is above the ceiling of " + max.memoryMiB()
                    : r.diskMiB() > max.diskMiB() ? "disk_mib " + r.diskMiB() + " is above the ceiling of " + max.diskMiB()
                    : r.maxPids() > max.maxPids() ? "max_pids " + r.maxPids() + " is above the ceiling of " + max.maxPids()
                    : ioOver(r.io(), max.io());
            if (over != null) {
                throw new EngineException(Kind.LIMIT, over + " that the operator set for tenant '" + tenant.id()
                        + "'; ask for less (the ceiling is vcpus " + max.vcpus() + ", memory_mib " + max.memoryMiB()
                        + ", disk_mib " + max.diskMiB() + ", max_pids " + max.maxPids() + ioCeiling(max.io()) + ")");
            }
        }
        if (r.vcpus() > cpus) {
            throw new EngineException(Kind.LIMIT, "vcpus " + r.vcpus() + " is more than this machine has (" + cpus + " CPUs)");
        }
        if (memoryMiB > 0 && r.memoryMiB() > memoryMiB) {
            throw new EngineException(Kind.LIMIT, "memory_mib " + r.memoryMiB() + " is more than this machine has ("
                    + memoryMiB + " MiB)");
        }
        return r;
    }

    /** The first I/O limit above its ceiling (a ceiling of 0 is none; asking for 0, no limit, is above any ceiling). */
    private static String ioOver(IoLimits r, IoLimits max) {
        for (String n : IoLimits.NAMES) {
            long c = max.value(n), v = r.value(n);
            if (c > 0 && (v == 0 || v > c)) {
                return n + " " + (v == 0 ? "0 (no limit)" : v) + " is above the ceiling of " + c + " " + IoLimits.unit(n);
            }
        }
        return null;
    }

    private static String ioCeiling(IoLimits max) {
        StringBuilder s = new StringBuilder();
        for (String n : IoLimits.NAMES) if (max.value(n) > 0) s.append(", ").append(n).append(' ').append(max.value(n));
        return s.toString();
    }

    /** MemTotal of this machine in MiB, or 0 if unknown. */
    public static long machineMemoryMiB() {
        return dev.berth.engine.host.Machine.memoryMiB();
    }

    public static Resources validate(Resources r) throws EngineException {
        if (r == null) return Resources.DEFAULT;
        inRange("vcpus", r.vcpus(), "resources.vcpus_min", "resources.vcpus_max");
        inRange("memory_mib", r.memoryMiB(), "resources.memory_mib_min", "resources.memory_mib_max");
        inRange("disk_mib", r.diskMiB(), "resources.disk_mib_min", "resources.disk_mib_max");
        inRange("max_pids", r.maxPids(), "resources.max_pids_min", "resources.max_pids_max");
        long ioMax = Limits.value("resources.io_max");
        for (String n : IoLimits.NAMES) {
            long v = r.io().value(n), min = Limits.value(n.endsWith("_bps") ? "resources.io_bps_min" : "resources.io_iops_min");
            // a tiny limit would leave the workspace unusable (its agent reads and writes the same disk); 0 is no limit
            if (v != 0 && (v < min || v > ioMax)) {
                throw new EngineException(Kind.INVALID_ARGUMENT, n + " " + v + " is outside " + min + ".." + ioMax + " " + IoLimits.unit(n) + " (0: no limit)");
            }
        }
        return r;
    }

    /** Refuses {@code value} outside the catalogue's {@code min..max}, naming the field, the value and the range. */
    private static void inRange(String field, long value, String min, String max) throws EngineException {
        long lo = Limits.value(min), hi = Limits.value(max);
        if (value < lo || value > hi) throw new EngineException(Kind.INVALID_ARGUMENT, field + " " + value + " is outside " + lo + ".." + hi);
    }
}
