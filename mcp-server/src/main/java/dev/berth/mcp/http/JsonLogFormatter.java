package dev.berth.mcp.http;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Formatter;
import java.util.logging.LogRecord;
import tools.jackson.databind.json.JsonMapper;

/**
 * The server's own log lines as JSON objects, one per line on stderr, with constant field names: {@code time},
 * {@code level}, {@code logger}, {@code message}, {@code thread}, and {@code error} when there is an exception. This
 * is the operator's log of the server (start, stop, warnings, failures); what agents did is in the audit logs.
 * Thread-safe.
 */
public final class JsonLogFormatter extends Formatter {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Override
    public String format(LogRecord r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("time", Instant.ofEpochMilli(r.getMillis()).toString());
        m.put("level", r.getLevel().getName());
        m.put("logger", r.getLoggerName());
        m.put("message", formatMessage(r));
        m.put("thread", Thread.currentThread().getName());
        if (r.getThrown() != null) {
            StringWriter sw = new StringWriter();
            r.getThrown().printStackTrace(new PrintWriter(sw));
            m.put("error", sw.toString());
        }
        return JSON.writeValueAsString(m) + System.lineSeparator();
    }

    /**
     * Replaces the root logger's handlers with one JSON handler on stderr. Not a {@code ConsoleHandler}: Tomcat's
     * logging bridge re-formats every console handler it finds when it starts.
     */
    public static void install() {
        var root = java.util.logging.LogManager.getLogManager().getLogger("");
        for (var h : root.getHandlers()) root.removeHandler(h);
        var json = new java.util.logging.StreamHandler(System.err, new JsonLogFormatter()) {
            @Override
            public synchronized void publish(LogRecord r) {
                super.publish(r);
                flush(); // one line at a time: a crash must not swallow the last ones
            }

            @Override
            public synchronized void close() {
                flush(); // never close System.err: LogManager closes handlers in its own shutdown hook
            }
        };
        json.setLevel(java.util.logging.Level.INFO);
        root.addHandler(json);
    }
}
