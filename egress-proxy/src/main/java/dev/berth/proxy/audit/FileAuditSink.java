package dev.berth.proxy.audit;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.json.JsonMapper;

/**
 * Appends one JSON object per line and flushes after each record. Writes happen on a single
 * dedicated thread so event loops never wait on the disk; ordering is preserved. {@link #close}
 * drains pending records.
 */
public final class FileAuditSink implements AuditSink {
    private static final System.Logger LOG = System.getLogger(FileAuditSink.class.getName());
    private final OutputStream out;
    private final ExecutorService writer;
    private final JsonMapper mapper = JsonMapper.builder().build();

    public FileAuditSink(Path file) throws IOException {
        this.out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
        this.writer = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "egress-audit-writer");
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public void record(AuditRecord record) {
        try {
            writer.execute(() -> write(record));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.log(System.Logger.Level.ERROR, "audit record after close, dropped: " + record);
        }
    }

    private void write(AuditRecord r) {
        try {
            byte[] line = mapper.writeValueAsBytes(r);
            out.write(line);
            out.write('\n');
            out.flush();
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "audit write failed for " + r, e);
        }
    }

    @Override
    public void close() {
        writer.shutdown();
        try {
            writer.awaitTermination(10, TimeUnit.SECONDS);
            out.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.ERROR, "closing audit log failed", e);
        }
    }
}
