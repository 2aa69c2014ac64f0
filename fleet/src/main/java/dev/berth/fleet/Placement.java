package dev.berth.fleet;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Chooses the node for a fresh workspace from the registered offers: among the nodes that can hold it (not cordoned,
 * offering the level and the image, enough free memory and vCPUs, every label asked for), a warm-pool hit for the
 * level first, then the least loaded (most free memory per live workspace, then fewest live workspaces, then the id,
 * so the choice is deterministic). A fleet that cannot hold it is refused with the numbers of the best candidates.
 * Pure: reads only the offers it is given. Not wired yet: a node opens on itself until the front door forwards an
 * open to the chosen node (docs/fleet.md, "What is not built yet").
 */
public final class Placement {
    private Placement() {}

    /** What a fresh workspace needs of a node. */
    public record Ask(String level, String image, int vcpus, long memoryMiB, Map<String, String> labels) {}

    /** The chosen node, and whether it has a warm sandbox for the level. */
    public record Choice(NodeOffer node, boolean warmHit) {}

    /** A fleet with no node that can hold the workspace; the message names why for each node (up to 5). */
    public static final class NoRoom extends RuntimeException {
        public NoRoom(String message) { super(message); }
    }

    public static Choice choose(List<NodeOffer> nodes, Ask ask) {
        List<NodeOffer> fit = new ArrayList<>();
        List<String> why = new ArrayList<>();
        for (NodeOffer n : nodes) {
            String no = refusal(n, ask);
            if (no == null) fit.add(n);
            else why.add(n.id() + ": " + no);
        }
        if (fit.isEmpty()) {
            throw new NoRoom("no node of the fleet can hold a " + ask.level() + " workspace of " + ask.vcpus() + " vCPU(s) and "
                    + ask.memoryMiB() + " MiB" + (ask.labels().isEmpty() ? "" : " labelled " + ask.labels()) + " (" + nodes.size() + " node(s)"
                    + (why.isEmpty() ? "" : ": " + String.join("; ", why.subList(0, Math.min(5, why.size())))
                    + (why.size() > 5 ? "; and " + (why.size() - 5) + " more" : "")) + ")");
        }
        Comparator<NodeOffer> order = Comparator.<NodeOffer>comparingInt(n -> warm(n, ask.level()) > 0 ? 0 : 1)
                .thenComparing(Comparator.<NodeOffer>comparingLong(n -> n.freeMemoryMiB() / (n.liveWorkspaces() + 1)).reversed())
                .thenComparingInt(NodeOffer::liveWorkspaces)
                .thenComparing(NodeOffer::id);
        NodeOffer best = fit.stream().min(order).orElseThrow();
        return new Choice(best, warm(best, ask.level()) > 0);
    }

    private static int warm(NodeOffer n, String level) {
        return n.warmPool() == null ? 0 : n.warmPool().getOrDefault(level, 0);
    }

    private static String refusal(NodeOffer n, Ask ask) {
        if (n.cordoned()) return "cordoned";
        if (!n.levels().contains(ask.level())) return "no " + ask.level() + " level (has " + n.levels() + ")";
        if (ask.image() != null && !n.images().contains(ask.image())) return "no image " + ask.image();
        if (n.freeMemoryMiB() < ask.memoryMiB()) return n.freeMemoryMiB() + " MiB free, " + ask.memoryMiB() + " asked";
        if (n.freeVcpus() < ask.vcpus()) return n.freeVcpus() + " vCPU(s) free, " + ask.vcpus() + " asked";
        for (var l : ask.labels().entrySet()) {
            if (!l.getValue().equals(n.labels().get(l.getKey()))) return "label " + l.getKey() + "=" + n.labels().get(l.getKey());
        }
        return null;
    }
}
