package dev.berth.engine.api;

/**
 * Which image a workspace runs on, as results show it.
 *
 * @param name   the imported image's name, or {@code "built-in"} for the driver's own image
 * @param digest the imported image's digest ({@code sha256:...}), or the built-in image's content-derived id
 */
public record ImageRef(String name, String digest) {
    public static final String BUILT_IN = "built-in";
}
