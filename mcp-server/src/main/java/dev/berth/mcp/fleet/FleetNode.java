package dev.berth.mcp.fleet;

import dev.berth.engine.Engine;
import dev.berth.fleet.EtcdStore;
import dev.berth.fleet.FleetConfig;
import dev.berth.fleet.FleetKeys;
import dev.berth.fleet.FleetStore;
import dev.berth.fleet.NodeMembership;
import dev.berth.fleet.NodeOffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * A {@code berth http} / {@code berth node} process as a member of the fleet its operator config names: the etcd
 * store, the membership under a lease, and the offer this node registers (what its engine can run and has free),
 * refreshed with the lease, and the engine's admission of new workspaces against the tenant's fleet-wide names and
 * quotas ({@link FleetAdmission}). Built only when the config has a {@code fleet} section; without one nothing here runs.
 * Owns the store and the membership; {@link #close} leaves the fleet.
 */
public final class FleetNode implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.fleet");
    private final FleetStore store;
    private final NodeMembership membership;
    private final dev.berth.fleet.NodeLossWatcher losses;

    private FleetNode(FleetStore store, NodeMembership membership, dev.berth.fleet.NodeLossWatcher losses) {
        this.store = store;
        this.membership = membership;
        this.losses = losses;
    }

    /**
     * Joins, or throws with the reason (an unreachable etcd named by its endpoint, a node id that is live elsewhere); a
     * refused join leaves nothing in etcd and nothing running here. {@code holds(tenant, id)}: whether this node's
     * engine has that workspace now (after its recovery), to settle the fleet's records of this node with it.
     */
    public static FleetNode join(FleetConfig config, Engine engine, IntSupplier liveWorkspaces,
                                 java.util.function.BiPredicate<String, String> holds) {
        FleetStore store = new EtcdStore(config.etcd());
        String qemu = qemuVersion();
        String cpu = cpuModel();
        try {
            NodeMembership m = NodeMembership.join(store, new FleetKeys(config.prefix()), config.leaseTtl(),
                    () -> offer(config, engine, liveWorkspaces.getAsInt(), qemu, cpu),
                    FleetNode::fenced, Clock.systemUTC());
            var ledger = new dev.berth.fleet.TenantLedger(store, new FleetKeys(config.prefix()), Clock.systemUTC());
            engine.setAdmission(new FleetAdmission(ledger, config.nodeId()));
            // back after a restart: what its engine recovered (parked) is served here again; what it lost is released
            int[] settled = new dev.berth.fleet.Ownership(store, new FleetKeys(config.prefix()), Clock.systemUTC())
                    .settleReturn(config.nodeId(), r -> holds.test(r.tenant(), r.id()), ledger);
            if (settled[0] + settled[1] > 0) {
                LOG.log(System.Logger.Level.INFO, settled[0] + " workspace(s) of this node served again (parked), " + settled[1]
                        + " gone with its last run released");
            }
            return new FleetNode(store, m, new dev.berth.fleet.NodeLossWatcher(store, new FleetKeys(config.prefix()), Clock.systemUTC()).start());
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    /** Refuses before the engine starts: etcd unreachable, or this node id live elsewhere (see NodeMembership#precheck). */
    public static void precheck(FleetConfig config) {
        try (FleetStore store = new EtcdStore(config.etcd())) {
            NodeMembership.precheck(store, new FleetKeys(config.prefix()), config.nodeId(), config.leaseTtl());
        }
    }

    public String nodeId() { return membership.nodeId(); }

    /**
     * Fencing: this node could not renew its lease in time (or lost it), so another node may soon be told it is lost.
     * It stops serving at once: the process exits (status 3) through its ordinary stop, which closes the listeners and
     * parks every persistent workspace. A supervisor restarts it; it rejoins once its old lease has expired. From a
     * thread of its own: the stop waits for the membership's threads, one of which is calling this.
     */
    private static void fenced(String why) {
        System.err.println("berth node: fenced, stopping: " + why);
        Thread.ofPlatform().name("berth-fenced-exit").start(() -> System.exit(3));
    }

    static NodeOffer offer(FleetConfig config, Engine engine, int live, String qemu, String cpu) {
        List<String> levels = new ArrayList<>();
        Map<String, Integer> warm = new LinkedHashMap<>();
        for (var d : engine.driverReport().entrySet()) {
            if (!d.getValue().available()) continue;
            levels.add(d.getKey());
            warm.put(d.getKey(), engine.poolReady(d.getKey()));
        }
        List<String> images = new ArrayList<>();
        try {
            for (var i : engine.images().list()) images.add(i.name());
        } catch (java.io.IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot list images for the fleet offer: " + e.getMessage());
        }
        Path kvm = Path.of("/dev/kvm");
        return new NodeOffer(config.nodeId(), config.advertise(), config.labels(), levels, Files.isReadable(kvm) && Files.isWritable(kvm),
                qemu, cpu, memAvailableMiB(), Runtime.getRuntime().availableProcessors(), images, warm, live, false, System.currentTimeMillis());
    }

    private static long memAvailableMiB() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (l.startsWith("MemAvailable:")) return Long.parseLong(l.replaceAll("\\D+", "")) / 1024;
            }
        } catch (java.io.IOException | NumberFormatException e) {
            // reported as 0 below: placement then treats the node as full
        }
        return 0;
    }

    private static String cpuModel() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (l.startsWith("model name")) return l.substring(l.indexOf(':') + 1).strip();
            }
        } catch (java.io.IOException e) {
            // unknown
        }
        return "unknown";
    }

    /** The first line of {@code qemu-system-x86_64 --version}, or "none" without QEMU. */
    private static String qemuVersion() {
        try {
            Process p = new ProcessBuilder("qemu-system-x86_64", "--version").redirectErrorStream(true).start();
            String first = new String(p.getInputStream().readNBytes(4096)).lines().findFirst().orElse("");
            if (!p.waitFor(5, TimeUnit.SECONDS)) p.destroyForcibly();
            var m = java.util.regex.Pattern.compile("version (\\S+)").matcher(first);
            return m.find() ? m.group(1) : "none";
        } catch (java.io.IOException e) {
            return "none";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "none";
        }
    }

    /** Leaves the fleet (the lease is revoked: the registration goes at once, not at expiry); the store stays open. */
    public void leave() {
        losses.close();
        membership.close();
    }

    /** Leaves (if not yet) and closes the store: after the engine has stopped and released what it deleted. */
    @Override
    public void close() {
        losses.close();
        membership.close();
        store.close();
    }
}
