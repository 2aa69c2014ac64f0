package dev.berth.mcp.tools;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.berth.engine.EgressApprovals;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.Approvals;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.ElicitResult;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Human approval of egress over MCP elicitation: the {@code request_egress} tool, and the question asked after a
 * {@code run} that was refused an approvable host. The human sees "Allow host:port for workspace X for 1 h?" with a
 * choice of the operator's durations; an accept becomes a workspace-scoped grant in the egress proxy
 * ({@link EgressApprovals}, a Caffeine cache with per-grant expiry), every step is in the audit trail, and anything
 * but a well-formed accept (decline, cancel, no answer within {@code egress.approval.timeoutS}, an answer outside the
 * offered choices, an error from the client) grants nothing and says so. A client without the elicitation capability
 * is never asked: the result (or the denial's reason) says approval is possible from a client that supports it.
 * Thread-safe.
 */
final class EgressApprovalTool {
    private static final System.Logger LOG = System.getLogger("berth.mcp.approval");
    /** At most this many questions after one run (one per distinct host:port); the rest say to use request_egress. */
    static final int MAX_ASKS_PER_RUN = 3;

    /** The result of request_egress. */
    record Result(@JsonProperty("workspace") String workspace, @JsonProperty("host") String host, @JsonProperty("port") int port,
                  @JsonProperty("outcome") String outcome, @JsonProperty("granted") boolean granted,
                  @JsonProperty("grant_id") String grantId, @JsonProperty("expires_at") String expiresAt,
                  @JsonProperty("duration_s") Long durationS, @JsonProperty("reason") String reason) {}

    /** What asking the human gave: an outcome of the request_egress enum, the grant when granted, and what to say. */
    record Answer(String outcome, Approvals.Grant grant, String detail) {}

    private final Engine engine;

    EgressApprovalTool(Engine engine) {
        this.engine = engine;
    }

    static boolean canElicit(McpSyncServerExchange ex) {
        McpSchema.ClientCapabilities c = ex.getClientCapabilities();
        return c != null && c.elicitation() != null;
    }

    /** request_egress {workspace, host, port, reason}. */
    Result request(McpSyncServerExchange ex, Tenant tenant, Args a) throws EngineException {
        Integer port = a.integer("port");
        String why = a.requiredString("reason");
        EgressApprovals.Target t = engine.egressApprovals().target(tenant, a.requiredString("workspace"), a.requiredString("host"),
                port == null ? 443 : port);
        String hp = t.check().host() + ":" + t.check().port();
        if (t.allowed()) {
            return result(t, "already_allowed", true, null, "workspace " + t.workspaceLabel() + " may already reach " + hp
                    + " (its egress policy allows it); nothing was asked");
        }
        if (t.active() != null) {
            return result(t, "already_granted", true, t.active(), "a grant for " + hp + " is live until " + t.active().expiresAt()
                    + " (" + t.active().id() + "); nothing was asked");
        }
        if (!canElicit(ex)) {
            engine.egressApprovals().notGranted(t, null, "request_egress from a client without the elicitation capability: nobody was asked");
            return result(t, "no_elicitation", false, null, noElicitation(hp));
        }
        Answer ans = ask(ex, t, null, "The agent says: \"" + quote(why) + "\"");
        return result(t, ans.outcome(), ans.grant() != null, ans.grant(), ans.detail());
    }

    private static String noElicitation(String hp) {
        return hp + " is approvable: a human can grant it to this workspace via the request_egress tool from an MCP client that"
                + " supports elicitation; this client does not declare the elicitation capability, so nobody was asked and nothing"
                + " was granted";
    }

    private static Result result(EgressApprovals.Target t, String outcome, boolean granted, Approvals.Grant g, String reason) {
        Long secs = g == null ? null : Duration.between(g.grantedAt(), g.expiresAt()).toSeconds();
        return new Result(t.workspaceId(), t.check().host(), t.check().port(), outcome, granted, g == null ? null : g.id(),
                g == null ? null : g.expiresAt().toString(), secs, reason);
    }

    /**
     * After a run: each distinct approvable host:port in {@code out}'s egress_denied gets a question (a client with
     * elicitation) or a note that approval is possible (without), appended to the denial's reason.
     */
    void afterRun(McpSyncServerExchange ex, Tenant tenant, String workspace, RunResult r, Map<String, Object> out) {
        if (!engine.egressApprovals().settings().enabled() || r.egressDenied().isEmpty()) return;
        Map<String, String> said = new LinkedHashMap<>();
        int asked = 0;
        boolean elicit = canElicit(ex);
        List<Map<String, Object>> denials = new java.util.ArrayList<>();
        for (Object o : (List<?>) out.get("egress_denied")) {
            @SuppressWarnings("unchecked") Map<String, Object> d = new LinkedHashMap<>((Map<String, Object>) o);
            denials.add(d);
            if (!(d.get("host") instanceof String host) || !(d.get("port") instanceof Integer port) || port == 0) continue;
            // only the policy's refusals of approvable targets (the proxy marks them); not hard-rule or registry-rule ones
            if (!(d.get("reason") instanceof String why) || !why.contains(" is approvable: a human can grant it")) continue;
            Approvals.Check c = engine.egressApprovals().check(host, port);
            if (!c.approvable()) continue;
            String hp = c.host() + ":" + c.port();
            String note = said.get(hp);
            if (note == null) {
                EgressApprovals.Target t = engine.egressApprovals().target(tenant, workspace, c);
                if (t == null) continue;
                if (t.active() != null) {
                    note = "a grant for " + hp + " is live now (until " + t.active().expiresAt() + ", " + t.active().id()
                            + "): later connections succeed, run the command again";
                } else if (t.allowed()) {
                    continue;
                } else if (!elicit) {
                    engine.egressApprovals().notGranted(t, r.runId(), "run refused " + hp + "; the client has no elicitation capability: nobody was asked");
                    note = noElicitation(hp);
                } else if (asked >= MAX_ASKS_PER_RUN) {
                    note = hp + " is approvable, but this run already asked " + MAX_ASKS_PER_RUN + " questions: ask with request_egress";
                } else {
                    asked++;
                    Answer a = ask(ex, t, r.runId(), "Asked because a run was refused " + hp);
                    note = "approval was asked over MCP elicitation: " + a.detail();
                }
                said.put(hp, note);
            }
            d.put("reason", d.get("reason") + "; " + note);
        }
        out.put("egress_denied", denials);
    }

    /** Asks the human (the client must declare elicitation); records and grants per the answer. */
    private Answer ask(McpSyncServerExchange ex, EgressApprovals.Target t, String runId, String context) {
        ApprovalSettings s = engine.egressApprovals().settings();
        List<String> labels = s.durations().stream().map(ApprovalSettings::label).toList();
        String hp = t.check().host() + ":" + t.check().port();
        String message = "Allow " + hp + " for workspace " + t.workspaceLabel() + " for " + labels.getFirst() + "? " + context
                + ". Only this workspace gets it, until the time you choose; private, loopback and cloud-metadata addresses"
                + " stay blocked. Decline to keep it blocked.";
        Map<String, Object> duration = new LinkedHashMap<>();
        duration.put("type", "string");
        duration.put("title", "Allow " + hp + " for");
        duration.put("description", "How long workspace " + t.workspaceLabel() + " may connect to " + hp);
        duration.put("enum", labels);
        duration.put("default", labels.getFirst());
        Map<String, Object> schema = Map.of("type", "object", "properties", Map.of("duration", duration), "required", List.of("duration"));
        engine.egressApprovals().requested(t, runId, "asked the user over MCP elicitation: " + context);
        // the question waits on its own virtual thread, so that a timeout can interrupt the blocked SDK call
        FutureTask<ElicitResult> f = new FutureTask<>(() -> ex.createElicitation(McpSchema.ElicitFormRequest.builder(message, schema).build()));
        Thread.ofVirtual().name("berth-elicit").start(f);
        ElicitResult answer;
        try {
            answer = f.get(s.askTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            return refused(t, runId, "timed_out", "the user did not answer within " + ApprovalSettings.label(s.askTimeout())
                    + " (egress.approval.timeoutS)");
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            return refused(t, runId, "failed", "the question was interrupted (the call was cancelled)");
        } catch (ExecutionException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            LOG.log(System.Logger.Level.DEBUG, "elicitation failed", c);
            return refused(t, runId, "failed", "the client answered the question with an error: " + quote(String.valueOf(c.getMessage())));
        }
        if (answer == null || answer.action() == null) return refused(t, runId, "invalid_answer", "the client's answer had no action");
        return switch (answer.action()) {
            case DECLINE -> refused(t, runId, "declined", "the user declined");
            case CANCEL -> refused(t, runId, "cancelled", "the user dismissed the question");
            case ACCEPT -> {
                Object chosen = answer.content() == null ? null : answer.content().get("duration");
                int i = chosen instanceof String str ? labels.indexOf(str) : -1;
                if (i < 0) {
                    yield refused(t, runId, "invalid_answer", "the answer's duration " + (chosen == null ? "is missing" : "'"
                            + quote(String.valueOf(chosen)) + "' is not one of " + labels));
                }
                Duration ttl = s.durations().get(i);
                try {
                    Approvals.Grant g = engine.egressApprovals().grant(t, runId, ttl,
                            "the user accepted over MCP elicitation (" + context + ")");
                    yield new Answer("granted", g, "the user granted " + hp + " to workspace " + t.workspaceLabel() + " for "
                            + labels.get(i) + " (until " + g.expiresAt() + ", " + g.id() + "): later connections succeed; "
                            + "connections refused before are not retried, run the command again");
                } catch (EngineException e) {
                    yield refused(t, runId, "failed", e.getMessage());
                }
            }
        };
    }

    private Answer refused(EgressApprovals.Target t, String runId, String outcome, String why) {
        engine.egressApprovals().notGranted(t, runId, outcome.replace('_', ' ') + ": " + why);
        return new Answer(outcome, null, why + "; nothing was granted");
    }

    /** Agent- or client-supplied text for a question or a reason: printable, one line, bounded. */
    static String quote(String s) {
        String one = s.replaceAll("[\\p{Cntrl}\\p{Cf}]", " ").strip();
        return one.length() > 300 ? one.substring(0, 300) + "..." : one;
    }
}
