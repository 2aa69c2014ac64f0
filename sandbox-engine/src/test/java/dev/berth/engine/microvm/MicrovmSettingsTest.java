package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** The microVM settings: defaults, each property read, and out-of-range values refused with the range. */
class MicrovmSettingsTest {

    @Test
    void from_noProperties_isTheDefaults() {
        MicrovmSettings s = MicrovmSettings.from(name -> null);
        assertEquals(MicrovmSettings.defaults(), s);
        assertEquals("qemu-system-x86_64", s.qemu());
        assertEquals(Duration.ofSeconds(90), s.agentTimeout());
        assertEquals(16, s.maxChainDepth());
        assertEquals(true, s.warmBase() && s.initOnFree());
        assertEquals(false, s.console() || s.unsafeNoJail() || s.unsafeUnconfinedRuns());
    }

    @Test
    void from_everyProperty_isRead() {
        Map<String, String> p = Map.of("berth.microvm.qemu", "/opt/qemu", "berth.microvm.accel", "tcg",
                "berth.microvm.warmBase", "false", "berth.microvm.agentTimeoutSeconds", "30",
                "berth.microvm.maxChainDepth", "2", "berth.microvm.console", "true", "berth.microvm.initOnFree", "false",
                "berth.microvm.unsafeNoJail", "TRUE", "berth.microvm.unsafeUnconfinedRuns", "true");
        assertEquals(new MicrovmSettings("/opt/qemu", "tcg", false, Duration.ofSeconds(30), 2, true, false, true, true),
                MicrovmSettings.from(p::get));
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
            "berth.microvm.maxChainDepth|0|berth.microvm.maxChainDepth must be 1..1024, not 0",
            "berth.microvm.maxChainDepth|1025|berth.microvm.maxChainDepth must be 1..1024, not 1025",
            "berth.microvm.maxChainDepth|deep|berth.microvm.maxChainDepth must be a whole number, not 'deep'",
            "berth.microvm.agentTimeoutSeconds|0|berth.microvm.agentTimeoutSeconds must be 1..3600, not 0",
            "berth.microvm.agentTimeoutSeconds|3601|berth.microvm.agentTimeoutSeconds must be 1..3600, not 3601",
            "berth.microvm.accel|hvf|berth.microvm.accel must be one of auto, kvm, tcg, not 'hvf'",
            "berth.microvm.warmBase|yes|berth.microvm.warmBase must be true or false, not 'yes'",
            "berth.microvm.unsafeNoJail|1|berth.microvm.unsafeNoJail must be true or false, not '1'",
            "berth.microvm.qemu|' '|berth.microvm.qemu must name a QEMU binary, not be empty",
    })
    void from_outOfRange_isRefusedWithTheRange(String property, String value, String message) {
        var e = assertThrows(IllegalArgumentException.class, () -> MicrovmSettings.from(n -> n.equals(property) ? value : null));
        assertEquals(message, e.getMessage());
    }
}
