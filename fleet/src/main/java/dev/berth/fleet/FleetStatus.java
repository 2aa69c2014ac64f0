package dev.berth.fleet;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@code berth fleet status} prints: the live nodes with their offers and load, and the workspaces per owner
 * node by state (owners that are not live show as lost). Reads etcd only; changes nothing. Plain text, one line per
 * node, for people (and grep).
 */
public final class FleetStatus {
    private FleetStatus() {}

    public static String render(FleetStore store, FleetKeys keys, Clock clock) {
        List<NodeOffer> nodes = new ArrayList<>();
        for (var kv : store.range(keys.nodes())) {
            try {
                nodes.add(NodeOffer.parse(kv.value()));
            } catch (RuntimeException e) {
                nodes.add(null);
            }
        }
        java.util.Set<String> cordoned = new java.util.HashSet<>();
        for (var kv : store.range(keys.cordons())) cordoned.add(kv.key().substring(keys.cordons().length()));
        Map<String, Map<String, Integer>> byOwner = new TreeMap<>();
        for (WorkspaceRecord r : new Ownership(store, keys, clock).all()) {
            byOwner.computeIfAbsent(r.owner(), k -> new TreeMap<>()).merge(r.state(), 1, Integer::sum);
        }
        StringBuilder b = new StringBuilder();
        b.append("fleet ").append(keys.prefix()).append(" on ").append(store.describe()).append(": ").append(nodes.size())
                .append(" live node(s), ").append(byOwner.values().stream().mapToInt(m -> m.values().stream().mapToInt(i -> i).sum()).sum())
                .append(" workspace(s)\n");
        b.append(String.format("%-20s %-28s %-24s %9s %5s %5s %-16s %-8s %s%n", "NODE", "ADDRESS", "LEVELS", "FREE_MiB", "CPUS",
                "LIVE", "WARM", "CORDON", "UPDATED_S_AGO"));
        for (NodeOffer n : nodes) {
            if (n == null) {
                b.append("(a registration that is not a node offer)\n");
                continue;
            }
            b.append(String.format("%-20s %-28s %-24s %9d %5d %5d %-16s %-8s %d%n", n.id(), n.address(), String.join(",", n.levels()),
                    n.freeMemoryMiB(), n.freeVcpus(), n.liveWorkspaces(), n.warmPool().toString().replace(" ", ""), n.cordoned() || cordoned.contains(n.id()) ? "yes" : "no",
                    Math.max(0, (clock.millis() - n.updatedAtMs()) / 1000)));
        }
        List<String> live = nodes.stream().filter(n -> n != null).map(NodeOffer::id).toList();
        b.append("workspaces per owner:");
        if (byOwner.isEmpty()) b.append(" none");
        for (var e : byOwner.entrySet()) {
            b.append("\n  ").append(e.getKey()).append(live.contains(e.getKey()) ? "" : " (not live)").append(": ").append(e.getValue());
        }
        return b.append('\n').toString();
    }
}
