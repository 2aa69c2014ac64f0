package dev.berth.proxy.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AddressClassifierTest {
    @ParameterizedTest(name = "{0} is {1}")
    @CsvSource(delimiter = '|', value = {
            // CGNAT edges
            "100.63.255.255|PUBLIC|is public",
            "100.64.0.0|CGNAT|carrier-grade NAT",
            "100.127.255.255|CGNAT|carrier-grade NAT",
            "100.128.0.0|PUBLIC|is public",
            // RFC 1918 edges
            "9.255.255.255|PUBLIC|is public",
            "10.0.0.0|PRIVATE|10.0.0.0/8",
            "10.255.255.255|PRIVATE|10.0.0.0/8",
            "11.0.0.0|PUBLIC|is public",
            "172.15.255.255|PUBLIC|is public",
            "172.16.0.0|PRIVATE|172.16.0.0/12",
            "172.31.255.255|PRIVATE|172.16.0.0/12",
            "172.32.0.0|PUBLIC|is public",
            "192.167.255.255|PUBLIC|is public",
            "192.168.0.1|PRIVATE|192.168.0.0/16",
            "192.169.0.0|PUBLIC|is public",
            // loopback / link-local / metadata
            "127.0.0.1|LOOPBACK|loopback",
            "127.255.255.254|LOOPBACK|loopback",
            "169.254.169.254|CLOUD_METADATA|cloud metadata",
            "169.254.0.1|LINK_LOCAL|link-local",
            "169.253.255.255|PUBLIC|is public",
            "169.255.0.0|PUBLIC|is public",
            // special
            "0.0.0.0|UNSPECIFIED|unspecified",
            "0.1.2.3|RESERVED|this network",
            "255.255.255.255|BROADCAST|broadcast",
            "224.0.0.1|MULTICAST|multicast",
            "239.255.255.255|MULTICAST|multicast",
            "240.0.0.1|RESERVED|240.0.0.0/4",
            "192.0.0.8|RESERVED|192.0.0.0/24",
            "192.0.2.1|DOCUMENTATION|192.0.2.0/24",
            "198.51.100.7|DOCUMENTATION|198.51.100.0/24",
            "203.0.113.9|DOCUMENTATION|203.0.113.0/24",
            "198.18.0.1|RESERVED|benchmarking",
            "198.19.255.255|RESERVED|benchmarking",
            "198.20.0.0|PUBLIC|is public",
            "192.88.99.1|RESERVED|6to4 relay",
            "8.8.8.8|PUBLIC|is public",
            // IPv6
            "::|UNSPECIFIED|unspecified",
            "::1|LOOPBACK|loopback",
            "::ffff:10.0.0.1|PRIVATE|10.0.0.0/8",
            "::ffff:8.8.8.8|PUBLIC|is public",
            "::10.0.0.1|PRIVATE|IPv4-compatible",
            "::8.8.8.8|RESERVED|IPv4-compatible",
            "64:ff9b::a00:1|PRIVATE|NAT64 64:ff9b::/96 embedding 10.0.0.1",
            "64:ff9b::a9fe:a9fe|CLOUD_METADATA|NAT64 64:ff9b::/96 embedding 169.254.169.254",
            "64:ff9b::808:808|PUBLIC|NAT64 64:ff9b::/96 embedding 8.8.8.8 is public",
            "64:ff9b:1::a00:1|PRIVATE|local-use NAT64",
            "64:ff9b:1::808:808|RESERVED|local-use NAT64",
            "2002:a9fe:a9fe::|CLOUD_METADATA|6to4 2002::/16 embedding 169.254.169.254",
            "2002:7f00:1::|LOOPBACK|6to4 2002::/16 embedding 127.0.0.1",
            "2002:808:808::|PUBLIC|6to4 2002::/16 embedding 8.8.8.8",
            "2001:0:4136:e378:8000:63bf:f5ff:fffe|PRIVATE|Teredo 2001::/32 embedding 10.0.0.1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7|RESERVED|Teredo",
            "2001:db8::1|DOCUMENTATION|2001:db8::/32",
            "2001:10::1|RESERVED|2001::/23",
            "3fff::1|DOCUMENTATION|3fff::/20",
            "fc00::1|ULA|unique-local",
            "fdff:ffff::1|ULA|unique-local",
            "fe80::1|LINK_LOCAL|link-local",
            "febf::1|LINK_LOCAL|link-local",
            "fec0::1|PRIVATE|site-local",
            "ff02::1|MULTICAST|multicast",
            "100::1|RESERVED|discard-only",
            "4000::1|RESERVED|outside global unicast",
            "2606:4700::1111|PUBLIC|is public",
    })
    void classify_boundaryAddress_matchesTable(String addr, AddressClassifier.Kind kind, String descr) throws Exception {
        // Build from raw bytes: getByName folds ::ffff:a.b.c.d to IPv4, which the proxy also does.
        byte[] bytes = InetAddress.getByName(addr).getAddress();
        AddressClassifier.Result r = bytes.length == 4 && addr.contains(":")
                ? AddressClassifier.classifyV6(mapped(bytes)) : AddressClassifier.classify(InetAddress.getByAddress(bytes));
        assertEquals(kind, r.kind(), r.description());
        assertTrue(r.description().contains(descr), r.description());
    }

    private static byte[] mapped(byte[] v4) {
        byte[] b = new byte[16];
        b[10] = (byte) 0xff;
        b[11] = (byte) 0xff;
        System.arraycopy(v4, 0, b, 12, 4);
        return b;
    }
}
