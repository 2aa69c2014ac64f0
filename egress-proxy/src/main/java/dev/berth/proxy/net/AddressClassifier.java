package dev.berth.proxy.net;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Classifies a concrete address (what we are about to dial) into public / non-public.
 *
 * <p>Why: the allowlist is about names, but the thing that actually gets hurt is an address.
 * A permitted name can resolve to 169.254.169.254 (cloud metadata) or 127.0.0.1 (host
 * services), and IPv6 has several formats that embed an IPv4 address which a dual-stack host
 * or a NAT64 gateway will route to. Everything that is not plainly global unicast is refused;
 * embedded IPv4 addresses are classified recursively so the reason names the real target.
 * Ranges follow the IANA special-purpose registries (RFC 6890 and successors).
 */
public final class AddressClassifier {
    private AddressClassifier() {}

    public enum Kind { PUBLIC, LOOPBACK, PRIVATE, LINK_LOCAL, CLOUD_METADATA, CGNAT, MULTICAST, UNSPECIFIED, BROADCAST, RESERVED, DOCUMENTATION, ULA }

    /** Classification with a human reason, e.g. "10.0.0.1 is private (RFC 1918 10/8)". */
    public record Result(Kind kind, String description) {
        public boolean isPublic() {
            return kind == Kind.PUBLIC;
        }
    }

    public static Result classify(InetAddress a) {
        byte[] b = a.getAddress();
        return b.length == 4 ? classifyV4(b) : classifyV6(b);
    }

    private static boolean in(long addr, long prefix, int bits) {
        long mask = bits == 0 ? 0 : (0xFFFFFFFFL << (32 - bits)) & 0xFFFFFFFFL;
        return (addr & mask) == (prefix & mask);
    }

    private static long v4(int a, int b, int c, int d) {
        return ((long) a << 24) | (b << 16) | (c << 8) | d;
    }

    static Result classifyV4(byte[] b) {
        long x = ((b[0] & 0xffL) << 24) | ((b[1] & 0xff) << 16) | ((b[2] & 0xff) << 8) | (b[3] & 0xff);
        String s = (b[0] & 0xff) + "." + (b[1] & 0xff) + "." + (b[2] & 0xff) + "." + (b[3] & 0xff);
        if (x == 0) return new Result(Kind.UNSPECIFIED, s + " is the unspecified address");
        if (x == 0xFFFFFFFFL) return new Result(Kind.BROADCAST, s + " is the limited broadcast address");
        if (in(x, v4(0, 0, 0, 0), 8)) return new Result(Kind.RESERVED, s + " is in 'this network' 0.0.0.0/8");
        if (in(x, v4(10, 0, 0, 0), 8)) return new Result(Kind.PRIVATE, s + " is private (RFC 1918 10.0.0.0/8)");
        if (in(x, v4(100, 64, 0, 0), 10)) return new Result(Kind.CGNAT, s + " is carrier-grade NAT space 100.64.0.0/10");
        if (in(x, v4(127, 0, 0, 0), 8)) return new Result(Kind.LOOPBACK, s + " is loopback 127.0.0.0/8");
        if (x == v4(169, 254, 169, 254)) return new Result(Kind.CLOUD_METADATA, s + " is the cloud metadata endpoint (link-local)");
        if (in(x, v4(169, 254, 0, 0), 16)) return new Result(Kind.LINK_LOCAL, s + " is link-local 169.254.0.0/16");
        if (in(x, v4(172, 16, 0, 0), 12)) return new Result(Kind.PRIVATE, s + " is private (RFC 1918 172.16.0.0/12)");
        if (in(x, v4(192, 0, 0, 0), 24)) return new Result(Kind.RESERVED, s + " is IETF protocol assignment space 192.0.0.0/24");
        if (in(x, v4(192, 0, 2, 0), 24)) return new Result(Kind.DOCUMENTATION, s + " is documentation space 192.0.2.0/24");
        if (in(x, v4(192, 88, 99, 0), 24)) return new Result(Kind.RESERVED, s + " is the deprecated 6to4 relay anycast 192.88.99.0/24");
        if (in(x, v4(192, 168, 0, 0), 16)) return new Result(Kind.PRIVATE, s + " is private (RFC 1918 192.168.0.0/16)");
        if (in(x, v4(198, 18, 0, 0), 15)) return new Result(Kind.RESERVED, s + " is benchmarking space 198.18.0.0/15");
        if (in(x, v4(198, 51, 100, 0), 24)) return new Result(Kind.DOCUMENTATION, s + " is documentation space 198.51.100.0/24");
        if (in(x, v4(203, 0, 113, 0), 24)) return new Result(Kind.DOCUMENTATION, s + " is documentation space 203.0.113.0/24");
        if (in(x, v4(224, 0, 0, 0), 4)) return new Result(Kind.MULTICAST, s + " is multicast 224.0.0.0/4");
        if (in(x, v4(240, 0, 0, 0), 4)) return new Result(Kind.RESERVED, s + " is reserved 240.0.0.0/4");
        return new Result(Kind.PUBLIC, s + " is public");
    }

    private static boolean prefix(byte[] b, int bits, int... words) {
        for (int i = 0; i < bits; i++) {
            int word = words.length > i / 16 ? words[i / 16] : 0;
            int want = (word >>> (15 - i % 16)) & 1;
            int have = (b[i / 8] >>> (7 - i % 8)) & 1;
            if (want != have) return false;
        }
        return true;
    }

    private static Result embedded(String what, byte[] b, int offset, boolean invert) {
        byte[] v4 = new byte[4];
        for (int i = 0; i < 4; i++) v4[i] = (byte) (invert ? ~b[offset + i] : b[offset + i]);
        Result inner = classifyV4(v4);
        return new Result(inner.kind(), what + " embedding " + inner.description());
    }

    static Result classifyV6(byte[] b) {
        String s = HostNames.canonicalIp(toV6(b));
        boolean firstTenZero = prefix(b, 80);
        if (prefix(b, 128)) return new Result(Kind.UNSPECIFIED, s + " is the unspecified address");
        if (prefix(b, 128, 0, 0, 0, 0, 0, 0, 0, 1)) return new Result(Kind.LOOPBACK, s + " is IPv6 loopback");
        if (firstTenZero && (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff) {
            return embedded(s + " is IPv4-mapped", b, 12, false);
        }
        if (prefix(b, 96)) {
            // Deprecated IPv4-compatible form: nothing legitimate uses it, and some stacks route it.
            Result inner = embedded(s + " is deprecated IPv4-compatible", b, 12, false);
            return new Result(inner.kind() == Kind.PUBLIC ? Kind.RESERVED : inner.kind(), inner.description());
        }
        if (prefix(b, 96, 0x64, 0xff9b)) return embedded(s + " is NAT64 64:ff9b::/96", b, 12, false);
        if (prefix(b, 48, 0x64, 0xff9b, 0x1)) {
            // RFC 8215 local-use NAT64: the gateway is operator-local, so even a public v4 is not trusted.
            Result inner = embedded(s + " is local-use NAT64 64:ff9b:1::/48", b, 12, false);
            return new Result(inner.kind() == Kind.PUBLIC ? Kind.RESERVED : inner.kind(), inner.description());
        }
        if (prefix(b, 64, 0x100)) return new Result(Kind.RESERVED, s + " is discard-only 100::/64");
        if (prefix(b, 32, 0x2001, 0)) {
            // Teredo: client v4 is the bit-inverted last 32 bits. Tunnels to arbitrary v4 hosts: refuse.
            Result inner = embedded(s + " is Teredo 2001::/32", b, 12, true);
            return new Result(inner.kind() == Kind.PUBLIC ? Kind.RESERVED : inner.kind(), inner.description());
        }
        if (prefix(b, 32, 0x2001, 0x0db8)) return new Result(Kind.DOCUMENTATION, s + " is documentation 2001:db8::/32");
        if (prefix(b, 23, 0x2001, 0)) return new Result(Kind.RESERVED, s + " is IETF protocol assignment 2001::/23");
        if (prefix(b, 16, 0x2002)) return embedded(s + " is 6to4 2002::/16", b, 2, false);
        if (prefix(b, 20, 0x3fff)) return new Result(Kind.DOCUMENTATION, s + " is documentation 3fff::/20");
        if (prefix(b, 16, 0x5f00)) return new Result(Kind.RESERVED, s + " is SRv6 SID space 5f00::/16");
        if (prefix(b, 7, 0xfc00)) return new Result(Kind.ULA, s + " is unique-local fc00::/7");
        if (prefix(b, 10, 0xfe80)) return new Result(Kind.LINK_LOCAL, s + " is link-local fe80::/10");
        if (prefix(b, 10, 0xfec0)) return new Result(Kind.PRIVATE, s + " is deprecated site-local fec0::/10");
        if (prefix(b, 8, 0xff00)) return new Result(Kind.MULTICAST, s + " is multicast ff00::/8");
        if (!prefix(b, 3, 0x2000)) return new Result(Kind.RESERVED, s + " is outside global unicast 2000::/3");
        return new Result(Kind.PUBLIC, s + " is public");
    }

    private static InetAddress toV6(byte[] b) {
        try {
            return java.net.Inet6Address.getByAddress(null, b, -1);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }
}
