package dev.berth.engine;

/**
 * The operator's settings for templates: how many workspaces one {@code open_workspace {from_snapshot, count}} may
 * fork, and the warm pool. Immutable.
 *
 * @param forkLimit most workspaces one call may open (1 or more; default {@value #DEFAULT_FORK_LIMIT})
 * @param poolSize  fresh sandboxes kept started per available isolation level, with the default resources, for
 *                  fresh opens to claim ({@link WarmPool}); 0 disables the pool (the library's default)
 */
public record TemplateSettings(int forkLimit, int poolSize) {
    public static final int DEFAULT_FORK_LIMIT = 16;
    public static final TemplateSettings DEFAULT = new TemplateSettings(DEFAULT_FORK_LIMIT, 0);

    public TemplateSettings {
        if (forkLimit < 1) throw new IllegalArgumentException("forkLimit must be at least 1, got " + forkLimit);
        if (poolSize < 0) throw new IllegalArgumentException("poolSize must be 0 (off) or more, got " + poolSize);
    }

    public TemplateSettings(int forkLimit) {
        this(forkLimit, 0);
    }
}
