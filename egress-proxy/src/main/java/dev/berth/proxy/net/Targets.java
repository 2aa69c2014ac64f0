package dev.berth.proxy.net;

import java.util.Locale;

/** Parsing of request targets (authority-form for CONNECT, absolute-form for HTTP) and Host headers. */
public final class Targets {
    private Targets() {}

    /** host is raw (not yet normalized); port resolved with the default. */
    public record Target(String host, int port, String originForm) {}

    public static final class BadTarget extends Exception {
        public BadTarget(String m) {
            super(m);
        }
    }

    /** {@code host:port}, {@code [v6]:port}; port mandatory unless defaultPort > 0. */
    public static Target authority(String a, int defaultPort, String what) throws BadTarget {
        if (a.isEmpty()) throw new BadTarget(what + " is empty");
        if (a.indexOf('@') >= 0) throw new BadTarget(what + " '" + HostNames.printable(a) + "' contains userinfo ('@')");
        String host;
        String portText = null;
        if (a.startsWith("[")) {
            int close = a.indexOf(']');
            if (close < 0) throw new BadTarget(what + " '" + HostNames.printable(a) + "' has an unterminated '['");
            host = a.substring(0, close + 1);
            String rest = a.substring(close + 1);
            if (!rest.isEmpty()) {
                if (!rest.startsWith(":")) throw new BadTarget(what + " '" + HostNames.printable(a) + "' is malformed");
                portText = rest.substring(1);
            }
        } else {
            int colon = a.lastIndexOf(':');
            if (colon >= 0 && a.indexOf(':') != colon) {
                throw new BadTarget(what + " '" + HostNames.printable(a) + "' has an unbracketed IPv6 literal");
            }
            host = colon >= 0 ? a.substring(0, colon) : a;
            portText = colon >= 0 ? a.substring(colon + 1) : null;
        }
        int port;
        if (portText == null) {
            if (defaultPort <= 0) throw new BadTarget(what + " '" + HostNames.printable(a) + "' has no port");
            port = defaultPort;
        } else {
            if (portText.isEmpty() || portText.length() > 5 || !portText.chars().allMatch(c -> c >= '0' && c <= '9')) {
                throw new BadTarget(what + " '" + HostNames.printable(a) + "' has an invalid port");
            }
            if (portText.length() > 1 && portText.charAt(0) == '0') {
                // "0443" is 443 to us and maybe 0443 (octal 291) or an error to the next parser: refuse the ambiguity
                throw new BadTarget(what + " '" + HostNames.printable(a) + "' has an invalid port (leading zero)");
            }
            port = Integer.parseInt(portText);
            if (port < 1 || port > 65535) throw new BadTarget(what + " '" + HostNames.printable(a) + "' port out of range");
        }
        return new Target(host, port, null);
    }

    /** Is {@code uri} an absolute-form https:// target? */
    public static boolean isHttps(String uri) {
        return uri.regionMatches(true, 0, "https://", 0, 8);
    }

    /** {@code http(s)://authority[/path][?query]}; other schemes are refused. */
    public static Target absolute(String uri) throws BadTarget {
        int sep = uri.indexOf("://");
        if (sep <= 0) {
            throw new BadTarget("request target '" + HostNames.printable(uri) + "' is not absolute-form (a proxy needs http://host/...)");
        }
        String scheme = uri.substring(0, sep).toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            throw new BadTarget("scheme '" + HostNames.printable(scheme) + "' not supported for forwarding (http and https are)");
        }
        String rest = uri.substring(sep + 3);
        int end = rest.length();
        for (int i = 0; i < rest.length(); i++) {
            char c = rest.charAt(i);
            if (c == '/' || c == '?' || c == '#') {
                end = i;
                break;
            }
        }
        String authority = rest.substring(0, end);
        String path = rest.substring(end);
        int hash = path.indexOf('#');
        if (hash >= 0) path = path.substring(0, hash);
        if (path.isEmpty() || path.charAt(0) == '?') path = "/" + path;
        Target t = authority(authority, scheme.equals("https") ? 443 : 80, "request URI authority");
        return new Target(t.host(), t.port(), path);
    }
}
