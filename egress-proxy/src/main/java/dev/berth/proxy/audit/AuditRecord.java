package dev.berth.proxy.audit;

import java.time.Instant;

/**
 * The canonical audit line: one per CONNECT tunnel and one per plain-HTTP request, written
 * when it ends (denials immediately). Field names are part of the log format; do not rename.
 *
 * @param event "decision" for connection/request records, "unsafe-setting" / "proxy-start" for
 *     proxy lifecycle notes
 * @param closeReason how an allowed exchange ended ("complete", "idle timeout", "upstream connect
 *     failed: ...", "tls sni mismatch" ...), or null
 */
public record AuditRecord(String event, Instant time, String workspace, String run, String connection, String kind,
                          String method, String host, int port, String resolvedAddress, String decision,
                          String reason, long bytesUp, long bytesDown, long durationMs, String closeReason) {

    public static AuditRecord note(String event, String reason) {
        return new AuditRecord(event, Instant.now(), null, null, null, null, null, null, 0, null, null, reason, 0, 0, 0, null);
    }
}
