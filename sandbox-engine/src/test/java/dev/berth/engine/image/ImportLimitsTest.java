package dev.berth.engine.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The import limits' setting: the default, the property read, and values out of range refused with the range. */
class ImportLimitsTest {

    @Test
    void from_noProperty_is4GiBOfLayersAnd8GiBUnpacked() {
        assertEquals(new ImportLimits(4L << 30, 8L << 30), ImportLimits.from(n -> null));
    }

    @Test
    void from_maxTreeMiB_setsTheUnpackedLimit() {
        assertEquals(64L << 20, ImportLimits.from(Map.of("berth.images.maxTreeMiB", "64")::get).maxTreeBytes());
    }

    @Test
    void from_outOfRange_isRefusedWithTheRange() {
        assertEquals("berth.images.maxTreeMiB must be 1..16777216, not 0", assertThrows(IllegalArgumentException.class,
                () -> ImportLimits.from(Map.of("berth.images.maxTreeMiB", "0")::get)).getMessage());
        assertEquals("berth.images.maxTreeMiB must be a whole number of MiB, not 'lots'", assertThrows(IllegalArgumentException.class,
                () -> ImportLimits.from(Map.of("berth.images.maxTreeMiB", "lots")::get)).getMessage());
    }
}
