package dev.berth.engine.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The namespace level's workspace id ranges: operator ranges that overlap host users or are too small are refused
 * with the numbers; slots are disjoint, kept by a workspace, and freed with it.
 */
class IdRangesTest {
    @TempDir
    Path dir;

    private Path etc(String passwd, String group, String subuid) throws IOException {
        Path etc = Files.createDirectories(dir.resolve("etc"));
        Files.writeString(etc.resolve("passwd"), passwd);
        Files.writeString(etc.resolve("group"), group);
        Files.writeString(etc.resolve("subuid"), subuid);
        return etc;
    }

    @Test
    void check_badRanges_refusedWithTheNumbers() throws IOException {
        Path etc = etc("root:x:0:0::/root:/bin/sh\nbig:x:1000070000:100::/home/big:/bin/sh\n", "root:x:0:\nwide:x:1000200000:\n",
                "alice:100000:65536\nbob:1000300000:65536\n");
        record Case(String name, IdRanges range, int workspaces, String error) {}
        for (Case c : new Case[] {
                new Case("too small", new IdRanges(2_000_000L, 3L * 65536, 65536), 4,
                        "the workspace id range 2000000+196608 holds 3 workspaces of 65536 ids, fewer than the 4 live workspaces configured;"
                                + " give it at least 262144 ids or lower the workspace count"),
                new Case("a host user", new IdRanges(1_000_000_000L, 65536L * 8, 65536), 1,
                        "the workspace id range 1000000000+524288 overlaps the host's user 'big' (id 1000070000 in " + etc.resolve("passwd") + ")"),
                new Case("subordinate ids", new IdRanges(1_000_250_000L, 65536L, 65536), 1,
                        "the workspace id range 1000250000+65536 overlaps the subordinate ids of 'bob' (1000300000+65536 in " + etc.resolve("subuid") + ")"),
                new Case("the microVM jails", new IdRanges(1_499_000_000L, 65536L * 100, 65536), 1,
                        "the workspace id range 1499000000+6553600 overlaps the ids of the microVM jails (1500000000+100000000)"),
        }) {
            var e = assertThrows(IllegalArgumentException.class, () -> c.range.check(etc, c.workspaces), c.name);
            assertEquals(c.error, e.getMessage(), c.name);
        }
        var g = assertThrows(IllegalArgumentException.class, () -> new IdRanges(1_000_190_000L, 65536L, 65536).check(etc, 1));
        assertEquals("the workspace id range 1000190000+65536 overlaps the host's group 'wide' (id 1000200000 in " + etc.resolve("group") + ")",
                g.getMessage());
        new IdRanges(1_001_000_000L, 65536L * 64, 65536).check(etc, 64); // clear of all of them: accepted
    }

    @Test
    void parse_andConstruct_outOfRange_refused() {
        assertEquals(new IdRanges(5_000_000L, 131072L, 65536), IdRanges.parse("5000000+131072", 65536));
        assertEquals("berth.namespace.idRange must be START+LENGTH in host ids (for example 1000000000+268435456), not '5000000'",
                assertThrows(IllegalArgumentException.class, () -> IdRanges.parse("5000000", 65536)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> new IdRanges(2_147_000_000L, 65536L * 100, 65536)); // past the largest id
        assertThrows(IllegalArgumentException.class, () -> new IdRanges(0, 65536L, 65536));                    // would map host root
        assertThrows(IllegalArgumentException.class, () -> new IdRanges(100_000L, 65536L, 512));               // too few per workspace
        assertThrows(IllegalArgumentException.class, () -> new IdRanges(100_000L, 1000L, 65536));              // not one workspace's worth
    }

    @Test
    void claim_disjointSlots_keptByTheirWorkspace_freedWithIt() throws IOException {
        IdRanges r = new IdRanges(3_000_000L, 4L * 65536, 65536);
        Path claims = dir.resolve("ids");
        Set<Long> firsts = new HashSet<>();
        Path[] states = new Path[4];
        for (int i = 0; i < 4; i++) {
            states[i] = Files.createDirectories(dir.resolve("ws" + i).resolve("state"));
            long first = r.claim(claims, states[i], "ws" + i);
            assertTrue(first >= 3_000_000L && first + 65536 <= 3_000_000L + 4L * 65536 && (first - 3_000_000L) % 65536 == 0, "" + first);
            assertTrue(firsts.add(first), "slot given twice: " + first);
            assertEquals(first, r.claim(claims, states[i], "ws" + i), "a workspace keeps its slot");
            assertEquals(first, IdRanges.recorded(states[i]));
        }
        Path fifth = Files.createDirectories(dir.resolve("ws4").resolve("state"));
        var full = assertThrows(IOException.class, () -> r.claim(claims, fifth, "ws4"));
        assertEquals("every one of the 4 workspace id ranges of 3000000+262144 is in use (65536 ids each); close workspaces or widen"
                + " berth.namespace.idRange", full.getMessage());
        // closing a workspace (its state directory goes) frees its slot for the next one
        long freed = IdRanges.recorded(states[2]);
        dev.berth.engine.spi.Trees.delete(states[2].getParent());
        assertEquals(freed, r.claim(claims, fifth, "ws4"));
        assertNotEquals(-1, IdRanges.recorded(fifth));
        // a workspace being deleted releases its claim at once
        long before = IdRanges.recorded(states[0]);
        r.release(claims, states[0]);
        assertTrue(Files.notExists(claims.resolve("slot-" + (before - 3_000_000L) / 65536)));
        r.release(claims, states[1].resolveSibling("nothing")); // no record: nothing to release
    }
}
