package dev.berth.engine.api;

import dev.berth.engine.spi.Resources;

/**
 * Arguments of open_workspace.
 *
 * @param name         optional; a persistent workspace is found again by its name
 * @param lifecycle    "persistent", "ephemeral" or "auto" (persistent when a name is given, else ephemeral); null = auto
 * @param fromSnapshot optional snapshot id or name to fork from
 * @param isolation    optional driver name; null = the engine's default
 * @param resources    optional limits; null = defaults
 * @param egress       optional allowlist entries ("host", "*.suffix:443,80", "preset:npm") narrowing the operator's
 *                     ceiling for this workspace; null = the whole ceiling
 * @param secrets      optional names of operator secret bindings; each run then gets a placeholder per binding in its
 *                     environment, which the egress proxy swaps for the real value on the binding's hosts only
 * @param image        optional name of an imported image (see {@link dev.berth.engine.image.ImageStore}); null = the
 *                     driver's built-in image
 */
public record OpenRequest(String name, String lifecycle, String fromSnapshot, String isolation, Resources resources,
                          java.util.List<String> egress, java.util.List<String> secrets, String image) {
    public OpenRequest(String name, String lifecycle, String fromSnapshot, String isolation, Resources resources,
                       java.util.List<String> egress, java.util.List<String> secrets) {
        this(name, lifecycle, fromSnapshot, isolation, resources, egress, secrets, null);
    }

    public OpenRequest(String name, String lifecycle, String fromSnapshot, String isolation, Resources resources) {
        this(name, lifecycle, fromSnapshot, isolation, resources, null, null);
    }

    public OpenRequest(String name, String lifecycle, String fromSnapshot, String isolation, Resources resources,
                       java.util.List<String> egress) {
        this(name, lifecycle, fromSnapshot, isolation, resources, egress, null);
    }

    public static OpenRequest ephemeral() { return new OpenRequest(null, "ephemeral", null, null, null); }
    public static OpenRequest persistent(String name) { return new OpenRequest(name, "persistent", null, null, null); }
}
