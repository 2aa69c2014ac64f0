package dev.berth.proxy.net;

import java.net.IDN;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;

/**
 * Host normalization and IP-literal recognition.
 *
 * <p>Why this is its own class: every comparison the proxy makes (allowlist match, SNI match,
 * Host-vs-URI match) must be done on the same canonical spelling, otherwise an attacker picks
 * the spelling the matcher and the dialer disagree on. Canonical form: IDNA (punycode) first
 * (so fullwidth digits and ideographic dots are folded before anything else looks at the
 * string), then lowercase, then trailing dot removed.
 *
 * <p>IP literals follow the WHATWG URL / inet_aton rules that real clients (curl, Node, Python's
 * socket layer via libc) use: if the last label "looks numeric" the whole host is an IPv4
 * literal in some spelling (decimal, octal, hex, 1-4 parts). We never let such a string reach
 * the resolver, because libc would happily turn {@code 0x7f.1} into 127.0.0.1.
 */
public final class HostNames {
    private HostNames() {}

    /** Result of normalizing a host: either a DNS name or an IP literal (never both). */
    public record Host(String name, InetAddress literal) {
        public boolean isLiteral() {
            return literal != null;
        }

        /** The string used in policy matching, SNI comparison and audit. */
        public String canonical() {
            return literal != null ? canonicalIp(literal) : name;
        }
    }

    public static final class InvalidHostException extends Exception {
        public InvalidHostException(String message) {
            super(message);
        }
    }

    /**
     * Normalizes a host as it appeared in a request (CONNECT authority, absolute URI, Host
     * header, SNI, config entry). Brackets are accepted for IPv6. Throws with a reason naming the
     * offending value.
     */
    public static Host normalize(String raw) throws InvalidHostException {
        if (raw == null || raw.isEmpty()) {
            throw new InvalidHostException("empty host");
        }
        if (raw.length() > 1024) {
            throw new InvalidHostException("host longer than 1024 characters");
        }
        if (raw.startsWith("[") || raw.indexOf(':') >= 0) {
            return new Host(null, parseIpv6(raw));
        }
        String ascii;
        try {
            // USE_STD3_ASCII_RULES rejects '_', '%', '@', spaces etc.; IDNA maps fullwidth
            // characters and U+3002 dots to ASCII, which is why it runs before the IPv4 check.
            ascii = IDN.toASCII(raw, IDN.USE_STD3_ASCII_RULES);
        } catch (IllegalArgumentException e) {
            throw new InvalidHostException("host '" + printable(raw) + "' is not a valid hostname: " + e.getMessage());
        }
        ascii = ascii.toLowerCase(Locale.ROOT);
        if (ascii.endsWith(".")) {
            ascii = ascii.substring(0, ascii.length() - 1);
        }
        if (ascii.isEmpty() || ascii.startsWith(".") || ascii.contains("..")) {
            throw new InvalidHostException("host '" + printable(raw) + "' has an empty label");
        }
        if (ascii.length() > 253) {
            throw new InvalidHostException("host '" + printable(raw) + "' longer than 253 characters");
        }
        if (endsInNumber(ascii)) {
            return new Host(null, parseIpv4(ascii, raw));
        }
        for (int i = 0; i < ascii.length(); i++) {
            char c = ascii.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.')) {
                throw new InvalidHostException("host '" + printable(raw) + "' contains invalid character");
            }
        }
        return new Host(ascii, null);
    }

    /** WHATWG "ends in a number": last label all digits, or 0x followed by hex digits. */
    private static boolean endsInNumber(String host) {
        String last = host.substring(host.lastIndexOf('.') + 1);
        if (last.isEmpty()) {
            return false;
        }
        if (last.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return true;
        }
        if (last.startsWith("0x")) {
            return last.substring(2).chars().allMatch(c -> Character.digit(c, 16) >= 0);
        }
        return false;
    }

    /** inet_aton: 1-4 parts, each decimal / 0-prefixed octal / 0x hex; last part fills the rest. */
    private static InetAddress parseIpv4(String host, String raw) throws InvalidHostException {
        String[] parts = host.split("\\.", -1);
        if (parts.length > 4) {
            throw new InvalidHostException("malformed IPv4 literal '" + printable(raw) + "' (more than 4 parts)");
        }
        long[] values = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            values[i] = parseIpv4Part(parts[i], raw);
        }
        long addr = 0;
        for (int i = 0; i < parts.length - 1; i++) {
            if (values[i] > 255) {
                throw new InvalidHostException("malformed IPv4 literal '" + printable(raw) + "' (part out of range)");
            }
            addr |= values[i] << (8 * (3 - i));
        }
        long last = values[parts.length - 1];
        int remainingBytes = 5 - parts.length;
        if (last >= (1L << (8 * remainingBytes))) {
            throw new InvalidHostException("malformed IPv4 literal '" + printable(raw) + "' (value out of range)");
        }
        addr |= last;
        byte[] b = {(byte) (addr >>> 24), (byte) (addr >>> 16), (byte) (addr >>> 8), (byte) addr};
        try {
            return InetAddress.getByAddress(b);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private static long parseIpv4Part(String part, String raw) throws InvalidHostException {
        try {
            if (part.isEmpty()) {
                throw new NumberFormatException("empty");
            }
            long v;
            if (part.startsWith("0x")) {
                v = part.length() == 2 ? 0 : Long.parseLong(part.substring(2), 16);
            } else if (part.length() > 1 && part.startsWith("0")) {
                v = Long.parseLong(part.substring(1), 8);
            } else {
                v = Long.parseLong(part, 10);
            }
            if (v < 0 || v > 0xFFFFFFFFL) {
                throw new NumberFormatException("range");
            }
            return v;
        } catch (NumberFormatException e) {
            throw new InvalidHostException("malformed IPv4 literal '" + printable(raw) + "' (bad part '" + printable(part) + "')");
        }
    }

    private static InetAddress parseIpv6(String raw) throws InvalidHostException {
        String s = raw;
        if (s.startsWith("[")) {
            if (!s.endsWith("]")) {
                throw new InvalidHostException("malformed IPv6 literal '" + printable(raw) + "' (unbalanced bracket)");
            }
            s = s.substring(1, s.length() - 1);
        }
        if (s.indexOf('%') >= 0) {
            // A zone id selects an interface (fe80::1%eth0); there is no legitimate upstream use.
            throw new InvalidHostException("IPv6 literal '" + printable(raw) + "' carries a zone id, which is never allowed");
        }
        if (s.isEmpty() || !s.chars().allMatch(c -> Character.digit(c, 16) >= 0 || c == ':' || c == '.')) {
            throw new InvalidHostException("malformed IPv6 literal '" + printable(raw) + "'");
        }
        try {
            // Only hex digits, ':' and '.' reach here, so getByName cannot trigger a DNS lookup.
            byte[] bytes = InetAddress.getByName("[" + s + "]").getAddress();
            if (bytes.length == 4) {
                // Java folds ::ffff:a.b.c.d into an Inet4Address; keep it as the v4 address it is.
                return InetAddress.getByAddress(bytes);
            }
            return InetAddress.getByAddress(null, bytes);
        } catch (UnknownHostException e) {
            throw new InvalidHostException("malformed IPv6 literal '" + printable(raw) + "'");
        }
    }

    /** Compact, stable text for an address (IPv6 zero-compressed, lowercase). */
    public static String canonicalIp(InetAddress a) {
        byte[] b = a.getAddress();
        if (b.length == 4) {
            return a.getHostAddress();
        }
        int[] words = new int[8];
        for (int i = 0; i < 8; i++) {
            words[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
        }
        int bestStart = -1, bestLen = 0;
        for (int i = 0; i < 8; ) {
            if (words[i] == 0) {
                int j = i;
                while (j < 8 && words[j] == 0) j++;
                if (j - i > bestLen && j - i > 1) {
                    bestStart = i;
                    bestLen = j - i;
                }
                i = j;
            } else {
                i++;
            }
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') sb.append(':');
            sb.append(Integer.toHexString(words[i]));
        }
        return sb.toString();
    }

    /** Makes attacker-supplied text safe to put in a reason/log line. */
    public static String printable(String s) {
        StringBuilder sb = new StringBuilder(Math.min(s.length(), 200));
        for (int i = 0; i < s.length() && i < 200; i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
                sb.append(String.format("\\x%02x", (int) c));
            } else {
                sb.append(c);
            }
        }
        if (s.length() > 200) sb.append("...");
        return sb.toString();
    }
}
