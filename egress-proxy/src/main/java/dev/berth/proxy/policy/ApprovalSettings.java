package dev.berth.proxy.policy;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Which hosts a human may open to one workspace for a while, and for how long (config {@code "approval"}).
 *
 * <p>An approvable host is not reachable by default: a workspace reaches it only while a grant for it is live
 * ({@link Approvals}). What a grant can open is bounded by the operator: only (host, port) pairs this list names, and
 * the hard rules apply to a granted host exactly as to an allowed one (its addresses are resolved and classified:
 * private, loopback and metadata addresses stay refused). So the operator's ceiling for a workspace is the allow list
 * plus, while granted, the approvable list; nothing outside both is ever reachable.
 *
 * @param hosts      the approvable (host pattern, ports) entries; empty = approval is off
 * @param durations  the grant lifetimes a human may choose from, first = the one proposed
 * @param askTimeout how long Berth waits for the human's answer before it reports "no answer" and grants nothing
 */
public record ApprovalSettings(Policy hosts, List<Duration> durations, Duration askTimeout) {
    /** Approval off. */
    public static final ApprovalSettings NONE = new ApprovalSettings(Policy.denyAll(),
            List.of(Duration.ofHours(1), Duration.ofMinutes(15), Duration.ofHours(8)), Duration.ofMinutes(2));

    public ApprovalSettings {
        Objects.requireNonNull(hosts, "hosts");
        durations = List.copyOf(durations);
        if (durations.isEmpty()) throw new IllegalArgumentException("approval.durationsS must name at least one duration");
        for (Duration d : durations) {
            if (d.isNegative() || d.isZero() || d.compareTo(Duration.ofDays(30)) > 0) {
                throw new IllegalArgumentException("approval durations must be between 1 s and 30 days, got " + d.toSeconds() + " s");
            }
        }
        if (durations.stream().distinct().count() != durations.size()) {
            throw new IllegalArgumentException("approval.durationsS lists a duration twice");
        }
        Objects.requireNonNull(askTimeout, "askTimeout");
        if (askTimeout.isNegative() || askTimeout.isZero()) throw new IllegalArgumentException("approval.timeoutS must be positive");
    }

    /** True when the operator marked any host approvable. */
    public boolean enabled() {
        return !hosts.isEmpty();
    }

    /** A duration as a person reads it: "1 h", "15 min", "90 s", "2 d". */
    public static String label(Duration d) {
        long s = d.toSeconds();
        if (s % 86400 == 0) return s / 86400 + " d";
        if (s % 3600 == 0) return s / 3600 + " h";
        if (s % 60 == 0) return s / 60 + " min";
        return s + " s";
    }
}
