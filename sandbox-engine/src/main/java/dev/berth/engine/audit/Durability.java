package dev.berth.engine.audit;

/** How far {@link AuditLog#append} goes before it returns. */
public enum Durability {
    /** Queued in memory; the trail's flusher writes and fsyncs it shortly, or the next durable append does. */
    QUEUED,
    /**
     * Written to the file (so a full or unwritable disk fails the call now, and a killed server loses nothing: the
     * page cache has it); fsynced by the caller's next durable append or, for a long call, by the flusher a few
     * milliseconds later, whichever comes first.
     */
    WRITTEN,
    /** Written and fsynced, together with everything appended before it (group commit). */
    DURABLE
}
