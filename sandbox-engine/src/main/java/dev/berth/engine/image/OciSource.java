package dev.berth.engine.image;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads what an import needs from an OCI image layout directory ({@code PATH} or {@code PATH:TAG}) or a
 * {@code docker save} / {@code podman save} archive: the image's digest, its config, and its layer blobs in order.
 * Every blob read is checked against its digest first (a digest names the file, so a malformed digest is refused
 * before it becomes a path); the platform is chosen for this host, and an image for another architecture is
 * refused with what it offers.
 */
final class OciSource {
    static final Pattern DIGEST = Pattern.compile("sha256:[0-9a-f]{64}");
    static final String MT_INDEX = "application/vnd.oci.image.index.v1+json";
    static final String MT_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
    static final String REF_NAME = "org.opencontainers.image.ref.name";
    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final int MAX_JSON = 4 << 20;

    /** One layer to apply: its blob on disk, its digest (null when the source names none) and its diff id. */
    record Layer(Path blob, String digest, long size, String diffId) {}

    /** A resolved image. {@code digest}: the manifest's (OCI) or the config's (docker archive, which has no manifest digest). */
    record Resolved(String digest, String configDigest, JsonNode config, List<Layer> layers, String architecture, String os) {}

    private OciSource() {}

    /** The host's architecture in OCI words ({@code amd64}, {@code arm64}). */
    static String hostArchitecture() {
        String a = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        return switch (a) {
            case "x86_64", "amd64" -> "amd64";
            case "aarch64", "arm64" -> "arm64";
            default -> a;
        };
    }

    /** {@code PATH[:TAG]} where PATH is an OCI layout directory; or an archive file. */
    static Resolved open(String spec, Path scratch, long maxArchiveBytes) throws IOException, ImageException {
        Path path = Path.of(spec);
        String tag = null;
        if (!Files.exists(path)) {
            int colon = spec.lastIndexOf(':');
            if (colon > 0) {
                path = Path.of(spec.substring(0, colon));
                tag = spec.substring(colon + 1);
            }
        }
        if (Files.isDirectory(path)) return layout(path, tag);
        if (Files.isRegularFile(path)) return archive(path, tag, scratch, maxArchiveBytes);
        throw new ImageException("no OCI image layout directory or image archive at '" + spec + "'");
    }

    // ---------------------------------------------------------------- OCI image layout

    static Resolved layout(Path dir, String tag) throws IOException, ImageException {
        if (!Files.isRegularFile(dir.resolve("oci-layout")) || !Files.isRegularFile(dir.resolve("index.json"))) {
            throw new ImageException(dir + " is not an OCI image layout (it needs oci-layout and index.json)");
        }
        JsonNode index = json(dir.resolve("index.json"), "index.json");
        JsonNode desc = pick(index, tag, dir + "/index.json");
        return fromDescriptor(dir, desc, 0);
    }

    private static Resolved fromDescriptor(Path dir, JsonNode desc, int depth) throws IOException, ImageException {
        String mt = desc.path("mediaType").asString("");
        String digest = digest(desc, "manifest");
        if (depth > 2) throw new ImageException("image indexes nested deeper than 2 are refused");
        Path blob = verifiedBlob(dir, digest, "manifest " + digest);
        JsonNode m = json(blob, "manifest " + digest);
        String inner = m.path("mediaType").asString(mt);
        if (inner.equals(MT_INDEX) || inner.equals(MT_DOCKER_LIST) || (m.has("manifests") && !m.has("layers"))) {
            return fromDescriptor(dir, platform(m, "index " + digest), depth + 1);
        }
        JsonNode cfgDesc = m.path("config");
        String cfgDigest = digest(cfgDesc, "config");
        JsonNode config = json(verifiedBlob(dir, cfgDigest, "config " + cfgDigest), "config " + cfgDigest);
        List<String> diffIds = diffIds(config);
        JsonNode ls = m.path("layers");
        if (!ls.isArray()) throw new ImageException("manifest " + digest + " lists no layers");
        if (ls.size() != diffIds.size()) {
            throw new ImageException("manifest " + digest + " has " + ls.size() + " layers but its config names " + diffIds.size() + " diff_ids");
        }
        List<Layer> layers = new ArrayList<>();
        for (int i = 0; i < ls.size(); i++) {
            String d = digest(ls.get(i), "layer " + i);
            Path b = blobPath(dir, d);
            if (!Files.isRegularFile(b, LinkOption.NOFOLLOW_LINKS)) throw new ImageException("layer " + d + " is missing from " + dir);
            layers.add(new Layer(b, d, ls.get(i).path("size").asLong(-1), diffIds.get(i)));
        }
        return resolved(digest, cfgDigest, config, layers);
    }

    private static Resolved resolved(String digest, String cfgDigest, JsonNode config, List<Layer> layers) throws ImageException {
        String arch = config.path("architecture").asString("");
        String os = config.path("os").asString("linux");
        if (!arch.equals(hostArchitecture()) || !os.equals("linux")) {
            throw new ImageException("the image is for " + os + "/" + arch + ", this host runs linux/" + hostArchitecture()
                    + "; pull or save the " + hostArchitecture() + " variant");
        }
        return new Resolved(digest, cfgDigest, config, layers, arch, os);
    }

    /** The manifest for {@code tag} in a layout's index (the only one when no tag is given). */
    private static JsonNode pick(JsonNode index, String tag, String where) throws ImageException {
        JsonNode ms = index.path("manifests");
        if (!ms.isArray() || ms.isEmpty()) throw new ImageException(where + " lists no manifests");
        List<String> tags = new ArrayList<>();
        for (JsonNode m : ms) {
            String t = m.path("annotations").path(REF_NAME).asString(null);
            if (t != null) tags.add(t);
            if (tag != null && tag.equals(t)) return m;
        }
        if (tag != null) throw new ImageException(where + " has no image tagged '" + tag + "' (tags: " + tags + ")");
        if (ms.size() == 1) return ms.get(0);
        throw new ImageException(where + " holds " + ms.size() + " images; name one as PATH:TAG (tags: " + tags + ")");
    }

    /** The entry of an index for this host's platform; refused with what the index offers. */
    static JsonNode platform(JsonNode index, String where) throws ImageException {
        List<String> offered = new ArrayList<>();
        for (JsonNode m : index.path("manifests")) {
            String arch = m.path("platform").path("architecture").asString("");
            String os = m.path("platform").path("os").asString("");
            offered.add(os + "/" + arch);
            if (arch.equals(hostArchitecture()) && os.equals("linux")) return m;
        }
        throw new ImageException(where + " has no manifest for linux/" + hostArchitecture() + " (it offers " + offered + ")");
    }

    static List<String> diffIds(JsonNode config) throws ImageException {
        List<String> out = new ArrayList<>();
        for (JsonNode d : config.path("rootfs").path("diff_ids")) {
            String s = d.asString("");
            if (!DIGEST.matcher(s).matches()) throw new ImageException("config names a diff_id that is not a sha256 digest: '" + s + "'");
            out.add(s);
        }
        return out;
    }

    static String digest(JsonNode desc, String what) throws ImageException {
        String d = desc.path("digest").asString("");
        if (!DIGEST.matcher(d).matches()) throw new ImageException(what + " digest '" + d + "' is not sha256:<64 hex digits>");
        return d;
    }

    static Path blobPath(Path dir, String digest) {
        return dir.resolve("blobs").resolve("sha256").resolve(digest.substring(7));
    }

    /** The blob, after checking that its content has the digest that names it. */
    static Path verifiedBlob(Path dir, String digest, String what) throws IOException, ImageException {
        Path b = blobPath(dir, digest);
        if (!Files.isRegularFile(b, LinkOption.NOFOLLOW_LINKS)) throw new ImageException(what + " is missing from " + dir);
        checkDigest(b, digest, what);
        return b;
    }

    static void checkDigest(Path file, String digest, String what) throws IOException, ImageException {
        String actual = LayerApplier.digestOf(file);
        if (!actual.equals(digest)) {
            throw new ImageException(what + ": digest mismatch, content is " + actual + " (" + Files.size(file)
                    + " bytes): the blob is corrupt or truncated");
        }
    }

    static JsonNode json(Path file, String what) throws IOException, ImageException {
        if (Files.size(file) > MAX_JSON) throw new ImageException(what + " is larger than " + (MAX_JSON >> 20) + " MiB");
        try {
            return JSON.readTree(Files.readAllBytes(file));
        } catch (RuntimeException e) {
            throw new ImageException(what + " is not JSON: " + e.getMessage(), e);
        }
    }

    // ---------------------------------------------------------------- docker save / podman save archives

    /**
     * A {@code docker save} / {@code podman save} archive: unpacked into {@code scratch} (regular files only, names
     * checked; symbolic links inside the archive resolved only within it), then read as an OCI layout when it holds
     * one (docker 25 and later) or by its {@code manifest.json}.
     */
    static Resolved archive(Path file, String tag, Path scratch, long maxBytes) throws IOException, ImageException {
        long size = Files.size(file);
        if (size > maxBytes) {
            throw new ImageException(file + " is " + (size >> 20) + " MiB, above the limit of " + (maxBytes >> 20) + " MiB for an image archive");
        }
        Path dir = scratch.resolve("archive");
        Files.createDirectories(dir);
        Map<String, String> links = new HashMap<>();
        try (InputStream in = new java.io.BufferedInputStream(Files.newInputStream(file), 1 << 16);
             TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
            TarArchiveEntry e;
            while ((e = tar.getNextEntry()) != null) {
                Path rel = LayerApplier.relative(e.getName(), file.getFileName().toString());
                if (rel == null) continue;
                Path to = dir.resolve(rel);
                if (e.isDirectory()) {
                    Files.createDirectories(to);
                } else if (e.isSymbolicLink()) {
                    links.put(rel.toString(), rel.resolveSibling(e.getLinkName()).normalize().toString());
                } else if (e.isFile()) {
                    Files.createDirectories(to.getParent());
                    Files.copy(tar, to);
                }
            }
        } catch (IOException | IllegalArgumentException e) {
            throw new ImageException(file + " is not a readable image archive (tar): " + e.getMessage(), e);
        }
        for (var l : links.entrySet()) {
            if (l.getValue().startsWith("..") || l.getValue().startsWith("/")) continue;
            Path target = dir.resolve(l.getValue());
            Path at = dir.resolve(l.getKey());
            if (Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) && !Files.exists(at, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectories(at.getParent());
                Files.createLink(at, target);
            }
        }
        if (Files.isRegularFile(dir.resolve("index.json")) && Files.isRegularFile(dir.resolve("oci-layout"))) {
            return layout(dir, tag == null ? null : tagFor(dir, tag));
        }
        if (!Files.isRegularFile(dir.resolve("manifest.json"))) {
            throw new ImageException(file + " holds neither an OCI layout (index.json) nor a docker manifest.json");
        }
        JsonNode all = json(dir.resolve("manifest.json"), "manifest.json");
        JsonNode entry = null;
        List<String> tags = new ArrayList<>();
        for (JsonNode m : all) {
            for (JsonNode t : m.path("RepoTags")) {
                tags.add(t.asString(""));
                if (tag != null && (t.asString("").equals(tag) || t.asString("").endsWith(":" + tag))) entry = m;
            }
        }
        if (entry == null) {
            if (tag != null) throw new ImageException(file + " has no image tagged '" + tag + "' (tags: " + tags + ")");
            if (all.size() != 1) throw new ImageException(file + " holds " + all.size() + " images; name one as PATH:TAG (tags: " + tags + ")");
            entry = all.get(0);
        }
        Path cfgFile = inside(dir, entry.path("Config").asString(""), "Config");
        String cfgDigest = LayerApplier.digestOf(cfgFile);
        String named = cfgFile.getFileName().toString().replace(".json", "");
        if (named.matches("[0-9a-f]{64}") && !cfgDigest.equals("sha256:" + named)) {
            throw new ImageException("config " + entry.path("Config").asString() + ": digest mismatch, content is " + cfgDigest);
        }
        JsonNode config = json(cfgFile, "config");
        List<String> diffIds = diffIds(config);
        JsonNode ls = entry.path("Layers");
        if (ls.size() != diffIds.size()) {
            throw new ImageException("manifest.json lists " + ls.size() + " layers but the config names " + diffIds.size() + " diff_ids");
        }
        List<Layer> layers = new ArrayList<>();
        for (int i = 0; i < ls.size(); i++) {
            Path b = inside(dir, ls.get(i).asString(""), "layer " + i);
            layers.add(new Layer(b, null, Files.size(b), diffIds.get(i)));
        }
        return resolved(cfgDigest, cfgDigest, config, layers);
    }

    private static String tagFor(Path dir, String tag) {
        return tag.contains(":") ? tag.substring(tag.lastIndexOf(':') + 1) : tag;
    }

    private static Path inside(Path dir, String name, String what) throws ImageException {
        Path rel = LayerApplier.relative(name, "manifest.json " + what);
        if (rel == null) throw new ImageException("manifest.json names no file for " + what);
        Path p = dir.resolve(rel);
        if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) throw new ImageException("manifest.json " + what + " '" + name + "' is missing from the archive");
        return p;
    }
}
