package dev.berth.engine.image;

import dev.berth.engine.host.HostCommand;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes a finished root tree (a recipe build's result) as a one-layer OCI image layout, so that it becomes an image
 * through the same import as any other (the same checks, the same root tree and ext4 base). The layer is an
 * uncompressed tar of the tree in name order with numeric owners as they are on disk. Stateless.
 */
final class TreeLayout {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private TreeLayout() {}

    /**
     * @param defaults the image config's {@code config} object ({@code Env}, {@code WorkingDir}, {@code User})
     */
    static Path write(Path tree, Path layout, String architecture, Map<String, Object> defaults) throws IOException {
        Path blobs = Files.createDirectories(layout.resolve("blobs/sha256"));
        Path layerTmp = layout.resolve("layer.tar");
        HostCommand.exec("tar", "--numeric-owner", "--sort=name", "-C", tree.toString(), "-cf", layerTmp.toString(), ".");
        String layer = sha256(layerTmp);
        long layerSize = Files.size(layerTmp);
        Files.move(layerTmp, blobs.resolve(layer.substring(7)));
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("architecture", architecture);
        config.put("os", "linux");
        config.put("config", defaults);
        config.put("rootfs", Map.of("type", "layers", "diff_ids", List.of(layer)));
        String cfg = blob(blobs, JSON.writeValueAsBytes(config));
        Map<String, Object> manifest = new LinkedHashMap<>();
        manifest.put("schemaVersion", 2);
        manifest.put("mediaType", "application/vnd.oci.image.manifest.v1+json");
        manifest.put("config", Map.of("mediaType", "application/vnd.oci.image.config.v1+json", "digest", cfg,
                "size", Files.size(blobs.resolve(cfg.substring(7)))));
        manifest.put("layers", List.of(Map.of("mediaType", "application/vnd.oci.image.layer.v1.tar", "digest", layer, "size", layerSize)));
        byte[] m = JSON.writeValueAsBytes(manifest);
        String man = blob(blobs, m);
        Files.writeString(layout.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
        Files.write(layout.resolve("index.json"), JSON.writeValueAsBytes(Map.of("schemaVersion", 2, "manifests",
                List.of(Map.of("mediaType", "application/vnd.oci.image.manifest.v1+json", "digest", man, "size", m.length)))));
        return layout;
    }

    private static String blob(Path blobs, byte[] content) throws IOException {
        String d = "sha256:" + HexFormat.of().formatHex(digest().digest(content));
        Files.write(blobs.resolve(d.substring(7)), content);
        return d;
    }

    private static String sha256(Path f) throws IOException {
        MessageDigest md = digest();
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(f)) {
            for (int n; (n = in.read(buf)) > 0; ) md.update(buf, 0, n);
        }
        return "sha256:" + HexFormat.of().formatHex(md.digest());
    }

    private static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
