package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The namespace settings: defaults, the properties read, and values out of range refused with the allowed ones. */
class NamespaceSettingsTest {

    @Test
    void from_noProperties_isTheDefaults() {
        assertEquals(NamespaceSettings.defaults(), NamespaceSettings.from(n -> null));
        assertEquals(null, NamespaceSettings.defaults().poolRefused());
    }

    @Test
    void from_ext4AndUnconfined_areRead() {
        var s = NamespaceSettings.from(Map.of("berth.namespace.layers", "ext4", "berth.namespace.unsafeUnconfinedRuns", "true")::get);
        assertEquals(new NamespaceSettings("ext4", true), s);
        assertEquals("berth.namespace.layers=ext4 chooses per-workspace ext4 images", s.poolRefused());
    }

    @Test
    void from_outOfRange_isRefusedWithTheAllowedValues() {
        assertEquals("berth.namespace.layers must be one of auto, ext4, not 'xfs'", assertThrows(IllegalArgumentException.class,
                () -> NamespaceSettings.from(Map.of("berth.namespace.layers", "xfs")::get)).getMessage());
        assertEquals("berth.namespace.unsafeUnconfinedRuns must be true or false, not 'yes'", assertThrows(IllegalArgumentException.class,
                () -> NamespaceSettings.from(Map.of("berth.namespace.unsafeUnconfinedRuns", "yes")::get)).getMessage());
    }
}
