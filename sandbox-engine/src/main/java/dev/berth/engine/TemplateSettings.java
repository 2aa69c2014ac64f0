package dev.berth.engine;

/**
 * The operator's settings for templates: how many workspaces one {@code open_workspace {from_snapshot, count}} may
 * fork. Immutable.
 *
 * @param forkLimit most workspaces one call may open (1 or more; default {@value #DEFAULT_FORK_LIMIT})
 */
public record TemplateSettings(int forkLimit) {
    public static final int DEFAULT_FORK_LIMIT = 16;
    public static final TemplateSettings DEFAULT = new TemplateSettings(DEFAULT_FORK_LIMIT);

    public TemplateSettings {
        if (forkLimit < 1) throw new IllegalArgumentException("forkLimit must be at least 1, got " + forkLimit);
    }
}
