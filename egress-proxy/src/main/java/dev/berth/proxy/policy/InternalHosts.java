package dev.berth.proxy.policy;

import dev.berth.proxy.net.AddressClassifier;
import dev.berth.proxy.net.HostNames;
import java.math.BigInteger;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The operator's named internal hosts (config {@code internal_hosts}): a named host (a company mirror, artifact
 * repository or git server) may resolve into the stated non-public ranges, which the address rules refuse for every
 * other name. Never for IP literals (an entry names a host; a literal target is classified as always), never wider than
 * stated (each answer must fall in one of the entry's ranges, and every answer of the name must pass), and never for
 * loopback, link-local, cloud metadata, multicast, broadcast or unspecified addresses: a range that covers any of
 * them, or an IPv6 range of the forms that embed IPv4 addresses (mapped, compatible, NAT64, 6to4, Teredo), is refused at
 * load, and so are both entries when two entries (directly or through a preset) name the same host: with overlapping
 * ranges they overlap, with disjoint ones they contradict each other. Different hosts may share a range (mirrors behind
 * one subnet). Immutable.
 */
public final class InternalHosts {
    /** An address range, {@code network/prefix}, with no host bits set: IPv4 (32 bits) or IPv6 (128 bits). */
    public record Range(BigInteger network, int width, int prefix) {
        public static Range parse(String text) {
            int slash = text.indexOf('/');
            if (slash < 0) throw new IllegalArgumentException("range '" + HostNames.printable(text) + "' must be a CIDR block such as 10.1.0.0/16");
            byte[] raw;
            int p;
            try {
                String lit = text.substring(0, slash);
                InetAddress a = InetAddress.ofLiteral(lit);
                raw = a.getAddress();
                if (lit.indexOf(':') >= 0 && raw.length == 4) { // ::ffff:a.b.c.d, which Java turns into an IPv4 address
                    byte[] mapped = new byte[16];
                    mapped[10] = (byte) 0xff;
                    mapped[11] = (byte) 0xff;
                    System.arraycopy(raw, 0, mapped, 12, 4);
                    raw = mapped;
                }
                p = Integer.parseInt(text.substring(slash + 1));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("range '" + HostNames.printable(text) + "' is not a CIDR block: " + e.getMessage());
            }
            int bits = raw.length * 8;
            if (p < 0 || p > bits) throw new IllegalArgumentException("range '" + text + "': prefix length must be 0-" + bits);
            BigInteger n = new BigInteger(1, raw);
            Range r = new Range(n.shiftRight(bits - p).shiftLeft(bits - p), bits, p);
            if (!r.network().equals(n)) {
                throw new IllegalArgumentException("range '" + text + "' has host bits set; write the block it means exactly (" + r
                        + "), never wider than stated");
            }
            return r;
        }

        BigInteger last() { return network.add(BigInteger.ONE.shiftLeft(width - prefix)).subtract(BigInteger.ONE); }

        public boolean contains(InetAddress a) {
            byte[] b = a.getAddress();
            if (b.length * 8 != width) return false;
            BigInteger x = new BigInteger(1, b);
            return x.compareTo(network) >= 0 && x.compareTo(last()) <= 0;
        }

        boolean overlaps(Range o) {
            return width == o.width && network.compareTo(o.last()) <= 0 && o.network.compareTo(last()) <= 0;
        }

        @Override
        public String toString() {
            byte[] raw = network.toByteArray();
            byte[] out = new byte[width / 8];
            int copy = Math.min(raw.length, out.length);
            System.arraycopy(raw, raw.length - copy, out, out.length - copy, copy);
            String text;
            if (out.length == 16 && java.util.Arrays.equals(java.util.Arrays.copyOf(out, 12), new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1})) {
                text = "::ffff:" + (out[12] & 255) + "." + (out[13] & 255) + "." + (out[14] & 255) + "." + (out[15] & 255);
            } else {
                try {
                    text = HostNames.canonicalIp(InetAddress.getByAddress(out));
                } catch (java.net.UnknownHostException e) {
                    throw new IllegalStateException(e);
                }
            }
            return text + "/" + prefix;
        }
    }

    /**
     * One named host and the ranges it may resolve into.
     *
     * @param source where the operator stated it, for errors and audit ({@code internal_hosts[0]},
     *     {@code internal_hosts[1] (preset npm)})
     */
    public record Entry(String host, List<Range> ranges, String source) {
        public Entry {
            ranges = List.copyOf(ranges);
        }

        @Override
        public String toString() {
            return host + " in " + ranges.stream().map(Range::toString).toList();
        }
    }

    /** Ranges no entry may cover, and why. */
    private static final List<Object[]> NEVER = List.of(
            new Object[] {Range.parse("127.0.0.0/8"), "loopback"},
            new Object[] {Range.parse("169.254.0.0/16"), "link-local and cloud metadata (169.254.169.254)"},
            new Object[] {Range.parse("0.0.0.0/8"), "'this network' 0.0.0.0/8"},
            new Object[] {Range.parse("224.0.0.0/4"), "multicast"},
            new Object[] {Range.parse("255.255.255.255/32"), "broadcast"},
            new Object[] {Range.parse("::/96"), "unspecified, loopback and IPv4-compatible IPv6"},
            new Object[] {Range.parse("::ffff:0:0/96"), "IPv4-mapped IPv6 (it embeds IPv4 addresses)"},
            new Object[] {Range.parse("64:ff9b::/96"), "NAT64 (it embeds IPv4 addresses)"},
            new Object[] {Range.parse("64:ff9b:1::/48"), "local-use NAT64 (it embeds IPv4 addresses)"},
            new Object[] {Range.parse("2002::/16"), "6to4 (it embeds IPv4 addresses)"},
            new Object[] {Range.parse("2001::/32"), "Teredo (it embeds IPv4 addresses)"},
            new Object[] {Range.parse("fe80::/10"), "IPv6 link-local"},
            new Object[] {Range.parse("ff00::/8"), "IPv6 multicast"},
            new Object[] {Range.parse("fd00:ec2::254/128"), "the cloud metadata endpoint (IPv6)"});

    public static final InternalHosts NONE = new InternalHosts(List.of());

    private final List<Entry> entries;

    private InternalHosts(List<Entry> entries) {
        this.entries = List.copyOf(entries);
    }

    /**
     * Checks and keeps the entries.
     *
     * @throws IllegalArgumentException naming the entry's source (and, for overlaps and contradictions, both)
     */
    public static InternalHosts of(List<Entry> entries) {
        List<Entry> out = new ArrayList<>();
        for (Entry e : entries) {
            String at = e.source();
            if (e.host().startsWith("*")) throw new IllegalArgumentException(at + ".host: '" + e.host() + "' is a wildcard; name one host");
            HostNames.Host h;
            try {
                h = HostNames.normalize(e.host());
            } catch (HostNames.InvalidHostException ex) {
                throw new IllegalArgumentException(at + ".host: " + ex.getMessage());
            }
            if (h.isLiteral()) {
                throw new IllegalArgumentException(at + ".host: '" + h.canonical() + "' is an IP literal; internal_hosts names hosts, never addresses");
            }
            if (e.ranges().isEmpty()) throw new IllegalArgumentException(at + ".ranges must name at least one CIDR block");
            for (Range r : e.ranges()) {
                for (Object[] never : NEVER) {
                    if (r.overlaps((Range) never[0])) {
                        throw new IllegalArgumentException(at + ": range " + r + " covers " + never[1] + " (" + never[0] + "), which no host may reach");
                    }
                }
            }
            for (int a = 0; a < e.ranges().size(); a++) {
                for (int b = a + 1; b < e.ranges().size(); b++) {
                    if (e.ranges().get(a).overlaps(e.ranges().get(b))) {
                        throw new IllegalArgumentException(at + ": ranges " + e.ranges().get(a) + " and " + e.ranges().get(b) + " overlap");
                    }
                }
            }
            Entry canon = new Entry(h.canonical(), e.ranges(), e.source());
            for (Entry o : out) {
                if (!o.host().equals(canon.host())) continue;
                boolean overlap = o.ranges().stream().anyMatch(r -> canon.ranges().stream().anyMatch(r::overlaps));
                throw new IllegalArgumentException(o.source() + " and " + at + " both name host " + canon.host() + " (" + o.ranges() + " and "
                        + canon.ranges() + "): " + (overlap ? "overlapping entries" : "contradictory entries") + "; give the host one entry");
            }
            out.add(canon);
        }
        return new InternalHosts(out);
    }

    public List<Entry> entries() { return entries; }

    public boolean isEmpty() { return entries.isEmpty(); }

    /** The entry naming {@code canonicalHost}, or null. */
    public Entry entry(String canonicalHost) {
        for (Entry e : entries) if (e.host().equals(canonicalHost.toLowerCase(Locale.ROOT))) return e;
        return null;
    }

    /**
     * Why {@code address} (an answer for the name {@code canonicalHost}) may be dialed although it is not public, or
     * null if it may not: the name has an entry, the address is in one of its ranges, and it is none of the addresses
     * no entry can open (checked again here, whatever the entries say).
     */
    public String allowance(String canonicalHost, InetAddress address) {
        Entry e = entry(canonicalHost);
        if (e == null) return null;
        switch (AddressClassifier.classify(address).kind()) {
            case LOOPBACK, LINK_LOCAL, CLOUD_METADATA, MULTICAST, UNSPECIFIED, BROADCAST -> {
                return null;
            }
            default -> { }
        }
        for (Range r : e.ranges()) {
            if (r.contains(address)) return "internal_hosts allows " + e.host() + " in " + r;
        }
        return null;
    }

    @Override
    public String toString() {
        return entries.toString();
    }
}
