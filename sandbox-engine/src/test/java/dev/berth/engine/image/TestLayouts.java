package dev.berth.engine.image;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Consumer;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * Writes small OCI image layouts byte by byte for tests: layers as tar (gzip), a config with diff_ids, a manifest
 * and an index, exactly as the OCI image spec lays them out, so that hostile entries (which real tools refuse to
 * write) can be fed to the import. Real-tool layouts come from skopeo/umoci in {@code OciToolsImageTest}.
 */
final class TestLayouts {
    private TestLayouts() {}

    /** Builds one layer's tar. */
    static final class Layer {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final TarArchiveOutputStream tar;

        Layer() {
            tar = new TarArchiveOutputStream(bytes);
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
        }

        Layer dir(String name, int mode) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name.endsWith("/") ? name : name + "/");
            e.setMode(040000 | mode);
            return put(e, null);
        }

        Layer file(String name, String content, int mode, int uid, int gid) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name, true);
            e.setMode(0100000 | mode);
            e.setIds(uid, gid);
            return put(e, content.getBytes(StandardCharsets.UTF_8));
        }

        Layer file(String name, String content) throws IOException { return file(name, content, 0644, 0, 0); }

        Layer symlink(String name, String target) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_SYMLINK, true);
            e.setLinkName(target);
            return put(e, null);
        }

        Layer hardlink(String name, String target) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_LINK, true);
            e.setLinkName(target);
            return put(e, null);
        }

        Layer device(String name, int major, int minor) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_CHR, true);
            e.setDevMajor(major);
            e.setDevMinor(minor);
            e.setMode(020666);
            return put(e, null);
        }

        Layer fifo(String name) throws IOException {
            return put(new TarArchiveEntry(name, TarConstants.LF_FIFO, true), null);
        }

        private Layer put(TarArchiveEntry e, byte[] content) throws IOException {
            if (content != null) e.setSize(content.length);
            tar.putArchiveEntry(e);
            if (content != null) tar.write(content);
            tar.closeArchiveEntry();
            return this;
        }

        byte[] tarBytes() throws IOException {
            tar.finish();
            return bytes.toByteArray();
        }
    }

    static String sha(byte[] b) {
        return "sha256:" + HexFormat.of().formatHex(LayerApplier.sha256().digest(b));
    }

    static byte[] gzip(byte[] b) throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        try (GZIPOutputStream g = new GZIPOutputStream(o)) {
            g.write(b);
        }
        return o.toByteArray();
    }

    static byte[] zstd(byte[] b) throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        try (var z = new com.github.luben.zstd.ZstdOutputStream(o)) {
            z.write(b);
        }
        return o.toByteArray();
    }

    /** Options for {@link #write}: tampering hooks and config fields. */
    static final class Spec {
        boolean zstd;
        String architecture = OciSource.hostArchitecture();
        String configExtra = "\"Env\":[\"PATH=/usr/local/bin:/usr/bin:/bin\",\"GREETING=hello from the image\"],\"WorkingDir\":\"/srv/app\",\"User\":\"1000\"";
        String tag = "v1";
        /** Changes a layer blob after its digest was taken (index, compressed bytes). */
        java.util.function.BiFunction<Integer, byte[], byte[]> tamper = (i, b) -> b;
        Consumer<Path> after = p -> { };
    }

    static Path write(Path dir, Spec spec, Layer... layers) throws IOException {
        Path blobs = dir.resolve("blobs/sha256");
        Files.createDirectories(blobs);
        List<String> diffIds = new ArrayList<>();
        StringBuilder layerDescs = new StringBuilder();
        for (int i = 0; i < layers.length; i++) {
            byte[] tar = layers[i].tarBytes();
            diffIds.add("\"" + sha(tar) + "\"");
            byte[] gz = spec.zstd ? zstd(tar) : gzip(tar);
            String d = sha(gz);
            Files.write(blobs.resolve(d.substring(7)), spec.tamper.apply(i, gz));
            if (i > 0) layerDescs.append(',');
            layerDescs.append("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+").append(spec.zstd ? "zstd" : "gzip")
                    .append("\",\"digest\":\"").append(d)
                    .append("\",\"size\":").append(gz.length).append('}');
        }
        byte[] config = ("{\"architecture\":\"" + spec.architecture + "\",\"os\":\"linux\",\"config\":{" + spec.configExtra
                + "},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[" + String.join(",", diffIds) + "]}}").getBytes(StandardCharsets.UTF_8);
        String cd = sha(config);
        Files.write(blobs.resolve(cd.substring(7)), config);
        byte[] manifest = ("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{"
                + "\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" + cd + "\",\"size\":" + config.length
                + "},\"layers\":[" + layerDescs + "]}").getBytes(StandardCharsets.UTF_8);
        String md = sha(manifest);
        Files.write(blobs.resolve(md.substring(7)), manifest);
        Files.writeString(dir.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
        Files.writeString(dir.resolve("index.json"), "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
                + "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" + md + "\",\"size\":" + manifest.length
                + ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"" + spec.tag + "\"}}]}");
        spec.after.accept(dir);
        return dir;
    }
}
