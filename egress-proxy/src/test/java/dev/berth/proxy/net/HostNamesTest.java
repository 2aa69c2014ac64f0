package dev.berth.proxy.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HostNamesTest {
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', value = {
            "2130706433|127.0.0.1",
            "0177.0.0.1|127.0.0.1",
            "0x7f.1|127.0.0.1",
            "0x7F.0x0.0x0.0x1|127.0.0.1",
            "127.1|127.0.0.1",
            "127.0.1|127.0.0.1",
            "017700000001|127.0.0.1",
            "0x7f000001|127.0.0.1",
            "[::1]|::1",
            "::1|::1",
            "[::ffff:127.0.0.1]|127.0.0.1",
            "[::ffff:7f00:1]|127.0.0.1",
            "[0:0:0:0:0:0:0:1]|::1",
            "[64:ff9b::10.0.0.1]|64:ff9b::a00:1",
            "\uff11\uff12\uff17.\uff10.\uff10.\uff11|127.0.0.1",
            "127\u30020\u30020\u30021|127.0.0.1",
            "1.2.3.4.|1.2.3.4",
            "ALLOWED.Test.|allowed.test",
            "b\u00fccher.test|xn--bcher-kva.test",
            "xn--bcher-kva.test|xn--bcher-kva.test",
    })
    void normalize_anySpelling_yieldsCanonicalForm(String raw, String canonical) throws Exception {
        assertEquals(canonical, HostNames.normalize(raw).canonical());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "256.0.0.1|malformed IPv4 literal",
            "1.2.3.4.5|more than 4 parts",
            "09.1.1.1|malformed IPv4 literal",
            "[fe80::1%eth0]|zone id",
            "[::1|unbalanced bracket",
            "a..b|Empty label",
            "bad_host.test|not a valid hostname",
            "evil.test@good|not a valid hostname",
            "%31%32%37.0.0.1|not a valid hostname",
    })
    void normalize_malformedHost_throwsWithReason(String raw, String reason) {
        var e = assertThrows(HostNames.InvalidHostException.class, () -> HostNames.normalize(raw));
        assertTrue(e.getMessage().contains(reason), e.getMessage());
    }
}
