package dev.berth.proxy.policy;

import java.util.Locale;

/**
 * The one spelling of a request target on a registry-rule host, made before anything classifies it, so that what the
 * rules check is what the upstream receives. Registries and the servers in front of them resolve dot segments, merge
 * slashes and decode escapes of unreserved characters; a check that reads the raw path sees another file than the one
 * served ({@code /pkg/./-/pkg-1.1.0.tgz}, {@code //pkg/-/...}, {@code /pkg/%2e/-/...}, {@code /x/../pkg/-/...}). So:
 *
 * <ul>
 *   <li>escapes of unreserved characters ({@code A-Z a-z 0-9 - . _ ~}) are decoded (RFC 3986 section 6.2.2.2: the same
 *       URI), in the path and in the query, and every other escape is written in upper case;</li>
 *   <li>refused, with the reason: dot segments ({@code .}, {@code ..}, also escaped), empty segments ({@code //}; a
 *       trailing {@code /} is kept, and the rules check a version path with and without it), escaped separators
 *       ({@code %2F}, {@code %5C}; except npm's {@code @scope%2Fname}), backslashes, escaped control characters
 *       ({@code %0D%0A}, {@code %00}), double-encoded escapes in the path ({@code %25} before two hex digits:
 *       {@code git%252Dreceive%252Dpack} is a push to a server in front that decodes once more), malformed escapes,
 *       fragments, and targets not starting with {@code /}.</li>
 * </ul>
 * Stateless.
 */
public final class RegistryTargets {
    private RegistryTargets() {}

    /** A target a registry rule refuses to interpret; the message says what was wrong. */
    public static final class NonCanonical extends Exception {
        NonCanonical(String why) {
            super(why);
        }
    }

    /** The canonical origin-form of {@code target} on a host of a {@code kind} rule. */
    public static String canonical(RegistryRule.Kind kind, String target) throws NonCanonical {
        if (!target.startsWith("/")) throw new NonCanonical("the request target does not start with '/'");
        if (target.indexOf('#') >= 0) throw new NonCanonical("the request target has a fragment");
        int q = target.indexOf('?');
        String path = decodeUnreserved(kind, q < 0 ? target : target.substring(0, q), true);
        String query = q < 0 ? null : decodeUnreserved(kind, target.substring(q + 1), false);
        String[] segs = path.split("/", -1);
        for (int i = 1; i < segs.length; i++) {
            String s = segs[i];
            if (s.equals(".") || s.equals("..")) throw new NonCanonical("the path has a dot segment '" + s + "'");
            if (s.isEmpty() && i < segs.length - 1) throw new NonCanonical("the path has an empty segment ('//')");
        }
        return query == null ? path : path + "?" + query;
    }

    private static String decodeUnreserved(RegistryRule.Kind kind, String s, boolean path) throws NonCanonical {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\') throw new NonCanonical("the " + (path ? "path" : "query") + " has a backslash");
            if (c != '%') {
                out.append(c);
                continue;
            }
            if (i + 2 >= s.length() || hex(s.charAt(i + 1)) < 0 || hex(s.charAt(i + 2)) < 0) {
                throw new NonCanonical("the " + (path ? "path" : "query") + " has a malformed escape at offset " + i);
            }
            int b = hex(s.charAt(i + 1)) * 16 + hex(s.charAt(i + 2));
            String escape = s.substring(i, i + 3).toUpperCase(Locale.ROOT);
            i += 2;
            if (b < 0x20 || b == 0x7f) {
                throw new NonCanonical("the " + (path ? "path" : "query") + " has an escaped control character " + escape);
            }
            if (path && b == '%' && i + 2 < s.length() && hex(s.charAt(i + 1)) >= 0 && hex(s.charAt(i + 2)) >= 0) {
                throw new NonCanonical("the path has a double-encoded escape " + escape + s.substring(i + 1, i + 3).toUpperCase(Locale.ROOT));
            }
            if (unreserved(b)) {
                out.append((char) b);
            } else if (path && (b == '/' || b == '\\')) {
                // npm's scoped package names: /@scope%2Fname (the first segment, right after the scope)
                boolean scoped = kind == RegistryRule.Kind.NPM && b == '/' && out.length() > 2 && out.charAt(1) == '@' && out.indexOf("/", 1) < 0;
                if (!scoped) throw new NonCanonical("the path has an escaped separator " + escape);
                out.append(escape);
            } else {
                out.append(escape);
            }
        }
        return out.toString();
    }

    private static boolean unreserved(int b) {
        return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '-' || b == '.' || b == '_' || b == '~';
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
}
