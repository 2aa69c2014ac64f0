package dev.berth.proxy.policy;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a registry request asks for, read from its path: a package's metadata (npm packument, PyPI JSON or Simple
 * page, Maven {@code maven-metadata.xml}), one version of a package (npm tarball or version document, PyPI file or
 * version JSON, a Maven file under a version directory), or something else (search, audit, static pages), which the
 * release-age and advisory checks leave alone. Stateless.
 */
public final class RegistryPaths {
    private RegistryPaths() {}

    public enum Type { METADATA, VERSION }

    /**
     * @param pkg the package name in the ecosystem's own spelling (npm {@code @scope/name}, PyPI normalized per PEP
     *     503, Maven {@code groupId:artifactId})
     * @param version the version for {@link Type#VERSION}, null for metadata
     * @param flavor npm "packument", "tarball", "version document"; pypi "json", "simple", "file", "version json";
     *     maven: the directory of the package ({@code /g/r/o/u/p/artifact/}) for metadata, of the version for files
     */
    public record Request(Type type, RegistryRule.Kind kind, String pkg, String version, String flavor) {}

    private static final Pattern NPM_NAME = Pattern.compile("(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9._~-][a-z0-9._~-]*");

    /** Classifies a GET/HEAD request's path (origin-form, query removed), or null if it is neither metadata nor a version. */
    public static Request classify(RegistryRule.Kind kind, String method, String target) {
        if (!method.equals("GET") && !method.equals("HEAD")) return null;
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        return switch (kind) {
            case NPM -> npm(path);
            case PYPI -> pypi(path);
            case MAVEN -> maven(path);
            case GIT -> null;
        };
    }

    private static String decode(String s) {
        try {
            return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static Request npm(String path) {
        if (path.startsWith("/-/") || path.length() < 2) return null;
        String p = decode(path.substring(1));
        if (p == null) return null;
        String[] parts = p.split("/", -1);
        int nameParts = parts[0].startsWith("@") ? 2 : 1;
        if (parts.length < nameParts) return null;
        String name = nameParts == 2 ? parts[0] + "/" + parts[1] : parts[0];
        if (!NPM_NAME.matcher(name.toLowerCase(Locale.ROOT)).matches()) return null;
        int rest = parts.length - nameParts;
        if (rest == 0 || (rest == 1 && parts[nameParts].isEmpty())) return new Request(Type.METADATA, RegistryRule.Kind.NPM, name, null, "packument");
        if (rest == 2 && parts[nameParts].equals("-") && parts[nameParts + 1].endsWith(".tgz")) {
            String file = parts[nameParts + 1];
            String base = name.contains("/") ? name.substring(name.indexOf('/') + 1) : name;
            if (!file.startsWith(base + "-")) return null;
            String version = file.substring(base.length() + 1, file.length() - ".tgz".length());
            return new Request(Type.VERSION, RegistryRule.Kind.NPM, name, version, "tarball");
        }
        if (rest == 1) return new Request(Type.VERSION, RegistryRule.Kind.NPM, name, parts[nameParts], "version document");
        return null;
    }

    private static final Pattern WHEEL = Pattern.compile("([^/-]+)-([^/-]+)(-[^/-]+){2,3}\\.whl");
    private static final Pattern SDIST = Pattern.compile("(.+)-([0-9][^/-]*)\\.(tar\\.gz|tar\\.bz2|tar\\.xz|zip|tgz|egg)");

    private static Request pypi(String path) {
        String[] parts = path.substring(1).split("/", -1);
        if (parts.length >= 2 && parts[0].equals("simple") && !parts[1].isEmpty()
                && (parts.length == 2 || (parts.length == 3 && parts[2].isEmpty()))) {
            return new Request(Type.METADATA, RegistryRule.Kind.PYPI, normalizeName(RegistryRule.Kind.PYPI, parts[1]), null, "simple");
        }
        if (parts.length >= 3 && parts[0].equals("pypi")) {
            if (parts.length == 3 && parts[2].equals("json")) {
                return new Request(Type.METADATA, RegistryRule.Kind.PYPI, normalizeName(RegistryRule.Kind.PYPI, parts[1]), null, "json");
            }
            if (parts.length == 4 && parts[3].equals("json")) {
                return new Request(Type.VERSION, RegistryRule.Kind.PYPI, normalizeName(RegistryRule.Kind.PYPI, parts[1]), parts[2], "version json");
            }
        }
        String file = parts[parts.length - 1];
        String[] nv = pypiFile(file);
        if (nv != null && (path.startsWith("/packages/") || path.startsWith("/files/") || parts.length >= 2)) {
            return new Request(Type.VERSION, RegistryRule.Kind.PYPI, nv[0], nv[1], "file");
        }
        return null;
    }

    /** Package (normalized) and version of a distribution file name, or null. */
    static String[] pypiFile(String file) {
        String f = decode(file);
        if (f == null) return null;
        f = f.replaceFirst("\\.metadata$", "");
        Matcher m = WHEEL.matcher(f);
        if (m.matches()) return new String[] {normalizeName(RegistryRule.Kind.PYPI, m.group(1)), m.group(2)};
        m = SDIST.matcher(f);
        if (m.matches()) return new String[] {normalizeName(RegistryRule.Kind.PYPI, m.group(1)), m.group(2)};
        return null;
    }

    /**
     * Maven paths are {@code [/maven2]/group/path/artifact/...}: Maven Central's {@code /maven2} prefix is not part of
     * the group. Metadata checksums ({@code maven-metadata.xml.sha1}) are metadata requests with the flavor's
     * directory ending in {@code #checksum}.
     */
    private static Request maven(String path) {
        String prefix = path.startsWith("/maven2/") ? "/maven2" : "";
        String[] parts = path.substring(prefix.length() + 1).split("/", -1);
        if (parts.length < 3) return null;
        String last = parts[parts.length - 1];
        if (last.equals("maven-metadata.xml") || last.startsWith("maven-metadata.xml.")) {
            String group = String.join(".", java.util.Arrays.copyOfRange(parts, 0, parts.length - 2));
            String artifact = parts[parts.length - 2];
            if (group.isEmpty()) return null;
            String dir = prefix + "/" + String.join("/", java.util.Arrays.copyOfRange(parts, 0, parts.length - 1)) + "/";
            return new Request(Type.METADATA, RegistryRule.Kind.MAVEN, group + ":" + artifact, null,
                    last.equals("maven-metadata.xml") ? dir : dir + "#checksum");
        }
        if (parts.length < 4) return null;
        String version = parts[parts.length - 2];
        String artifact = parts[parts.length - 3];
        if (!last.startsWith(artifact + "-" + version)) return null;
        String group = String.join(".", java.util.Arrays.copyOfRange(parts, 0, parts.length - 3));
        String dir = prefix + "/" + String.join("/", java.util.Arrays.copyOfRange(parts, 0, parts.length - 1)) + "/";
        return new Request(Type.VERSION, RegistryRule.Kind.MAVEN, group + ":" + artifact, version, dir);
    }

    /** The name as the ecosystem compares it: npm lowercase, PyPI per PEP 503, Maven as is. */
    public static String normalizeName(RegistryRule.Kind kind, String name) {
        return switch (kind) {
            case NPM -> name.toLowerCase(Locale.ROOT);
            case PYPI -> name.toLowerCase(Locale.ROOT).replaceAll("[-_.]+", "-");
            default -> name;
        };
    }
}
