package dev.berth.proxy.forward;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.MetadataFilter;
import dev.berth.proxy.policy.RegistryPaths;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.session.Gatekeeper;
import dev.berth.proxy.session.Owner;
import dev.berth.proxy.session.Session;
import java.util.List;

/** A metadata request whose response is filtered (release age, advisories) before the client sees it. Immutable. */
record Filtering(RegistryRule rule, RegistryPaths.Request request, Gatekeeper.Vetted vetted) {
    /** One "filter" decision per response: the run result and the audit say which versions were hidden and why. */
    void report(Session session, Session.Exchange ex, String method, List<MetadataFilter.Hidden> hidden) {
        StringBuilder why = new StringBuilder("hid " + hidden.size() + " version(s) of " + request.pkg() + " from the "
                + rule.kind().label() + " metadata: ");
        int shown = 0;
        for (MetadataFilter.Hidden h : hidden) {
            if (shown++ == 8) {
                why.append("; and ").append(hidden.size() - 8).append(" more");
                break;
            }
            if (shown > 1) why.append("; ");
            why.append(h.reason());
        }
        String reason = why.toString();
        Owner c = session.context();
        session.decided("filter", ex.host(), ex.port(), ex.address(), true, reason);
        session.shared().audit().record(new AuditRecord("decision", java.time.Instant.now(), c.workspaceId(), c.runId(), session.id(), "filter",
                method, ex.host(), ex.port(), ex.address(), "allow", reason, 0, 0, 0, "metadata filtered"));
    }
}
