package dev.berth.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Placement over registered offers: who can hold a workspace, warm hit first, least loaded, a full fleet's numbers. */
class PlacementTest {
    static NodeOffer node(String id, List<String> levels, long freeMiB, int cpus, int live, int warm, Map<String, String> labels, boolean cordoned) {
        return new NodeOffer(id, "http://" + id, labels, levels, false, "7.2.0", "cpu", freeMiB, cpus, List.of("developer"),
                Map.of("namespace", warm), live, cordoned, 0);
    }

    static final Placement.Ask NS = new Placement.Ask("namespace", null, 1, 512, Map.of());

    @Test
    void warmHitFirst_thenLeastLoaded() {
        var a = node("a", List.of("namespace"), 8000, 2, 1, 0, Map.of(), false);
        var b = node("b", List.of("namespace"), 2000, 2, 3, 1, Map.of(), false);
        var c = node("c", List.of("namespace"), 8000, 2, 0, 0, Map.of(), false);
        var choice = Placement.choose(List.of(a, b, c), NS);
        assertEquals("b", choice.node().id(), "the warm-pool hit wins over free memory");
        assertTrue(choice.warmHit());
        var cold = Placement.choose(List.of(a, c), NS);
        assertEquals("c", cold.node().id(), "no hit anywhere: the most free memory per live workspace");
        assertFalse(cold.warmHit());
    }

    @Test
    void levelLabelsCordonAndSize_filter() {
        var vm = node("vm", List.of("namespace", "microvm"), 4000, 2, 0, 0, Map.of("zone", "b"), false);
        var ns = node("ns", List.of("namespace"), 9000, 2, 0, 0, Map.of("zone", "a"), false);
        var off = node("off", List.of("namespace", "microvm"), 9000, 2, 0, 0, Map.of("zone", "a"), true);
        assertEquals("vm", Placement.choose(List.of(vm, ns, off), new Placement.Ask("microvm", null, 1, 512, Map.of())).node().id());
        assertEquals("ns", Placement.choose(List.of(vm, ns, off), new Placement.Ask("namespace", null, 1, 512, Map.of("zone", "a"))).node().id());
        var e = assertThrows(Placement.NoRoom.class, () -> Placement.choose(List.of(vm, ns, off), new Placement.Ask("namespace", null, 4, 512, Map.of())));
        assertEquals("no node of the fleet can hold a namespace workspace of 4 vCPU(s) and 512 MiB (3 node(s): vm: 2 vCPU(s) free, 4 asked;"
                + " ns: 2 vCPU(s) free, 4 asked; off: cordoned)", e.getMessage());
    }
}
