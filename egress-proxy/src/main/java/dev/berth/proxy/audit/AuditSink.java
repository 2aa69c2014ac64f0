package dev.berth.proxy.audit;

/** Where audit records go. Called from event-loop threads; must not block for long. */
public interface AuditSink extends AutoCloseable {
    void record(AuditRecord record);

    @Override
    default void close() {}

    static AuditSink discard() {
        return r -> {};
    }
}
