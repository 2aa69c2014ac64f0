package dev.berth.engine.api;


/**
 * The operator's settings for templates: how many workspaces one {@code open_workspace {from_snapshot, count}} may
 * fork, and the warm pool. Immutable.
 *
 * @param forkLimit     most workspaces one call may open (1 or more; default {@link #DEFAULT_FORK_LIMIT})
 * @param poolSize      fresh sandboxes kept started per available isolation level, with the default resources, for
 *                      fresh opens to claim (the warm pool); 0 disables the pool (the library's default; the
 *                      server's is {@link #serverDefault})
 * @param poolMemoryMiB the most memory the pool may hold, counted as its members' memory limits (the default
 *                      resources'): members beyond it are not started, the default isolation level's first;
 *                      {@link Long#MAX_VALUE} = only the size bounds it. Either way the pool must fit the machine's
 *                      memory, or the engine refuses to start with the numbers
 * @param poolEmulated  whether microVM levels without hardware acceleration (TCG: a member costs seconds of both
 *                      cores to boot and about 1% of the host CPU while it waits) get members too
 */
public record TemplateSettings(int forkLimit, int poolSize, long poolMemoryMiB, boolean poolEmulated) {
    /** Most forks one call may open when the operator sets none (catalogue: {@code open_workspace.count_default_max}). */
    public static final int DEFAULT_FORK_LIMIT = dev.berth.schemas.Limits.intValue("open_workspace.count_default_max");
    public static final TemplateSettings DEFAULT = new TemplateSettings(DEFAULT_FORK_LIMIT, 0);
    /** The server's default pool: this many members per level... */
    public static final int SERVER_POOL_SIZE = 1;
    /** ...within at most this much memory (less on a small machine: an eighth of it). */
    public static final long SERVER_POOL_MEMORY_MIB = 2048;

    public TemplateSettings {
        if (forkLimit < 1) throw new IllegalArgumentException("forkLimit must be at least 1, got " + forkLimit);
        if (poolSize < 0) throw new IllegalArgumentException("poolSize must be 0 (off) or more, got " + poolSize);
        if (poolMemoryMiB < 0) throw new IllegalArgumentException("poolMemoryMiB must be 0 (off) or more, got " + poolMemoryMiB);
    }

    /** A pool of {@code poolSize} per available level (emulated microVMs included), bounded by its size only. */
    public TemplateSettings(int forkLimit, int poolSize) {
        this(forkLimit, poolSize, Long.MAX_VALUE, true);
    }

    public TemplateSettings(int forkLimit) {
        this(forkLimit, 0);
    }

    /**
     * What the server runs with when the operator configures no pool: {@value #SERVER_POOL_SIZE} member per
     * available level (not emulated microVMs), within {@value #SERVER_POOL_MEMORY_MIB} MiB or an eighth of the
     * machine's memory, whichever is less; so a new user's first {@code open_workspace} is a pool hit.
     */
    public static TemplateSettings serverDefault(int forkLimit) {
        long machine = dev.berth.engine.host.Machine.memoryMiB();
        long budget = machine > 0 ? Math.min(SERVER_POOL_MEMORY_MIB, machine / 8) : SERVER_POOL_MEMORY_MIB;
        return new TemplateSettings(forkLimit, SERVER_POOL_SIZE, budget, false);
    }

    /** The same without a warm pool (an engine that serves no opens: an image build). */
    public TemplateSettings withoutPool() {
        return new TemplateSettings(forkLimit, 0, poolMemoryMiB, poolEmulated);
    }

    /** How many members the pool may hold at once, over all levels, at {@code memberMiB} each. */
    public long poolBudgetMembers(long memberMiB) {
        return poolMemoryMiB == Long.MAX_VALUE ? Long.MAX_VALUE : poolMemoryMiB / Math.max(1, memberMiB);
    }
}
