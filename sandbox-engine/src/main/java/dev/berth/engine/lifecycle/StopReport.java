package dev.berth.engine.lifecycle;

import java.util.List;

/**
 * What a server's stop did to its workspaces, for the one line it prints on stderr. Immutable.
 *
 * @param parked    persistent workspaces parked, each as "label memory kept" or "label files only"
 * @param closed    ephemeral workspaces closed (their files deleted)
 * @param commands  commands (runs and background processes) stopped
 * @param left      workspaces the stop could not finish, each with why; the next start recovers them as after a crash
 * @param millis    how long the stop took
 * @param fast      whether this was the fast path of a second stop signal (sandboxes killed, nothing parked)
 */
public record StopReport(List<String> parked, int closed, int commands, List<String> left, long millis, boolean fast) {
    public StopReport {
        parked = List.copyOf(parked);
        left = List.copyOf(left);
    }

    /** Whether every workspace reached the state the stop promises (parked, or closed). */
    public boolean complete() { return left.isEmpty() && !fast; }

    /** The line printed on stderr, e.g. "parked 2 workspaces (ws-a memory kept, b files only), closed 1 ephemeral, stopped 3 commands; done in 1.8 s". */
    public String line() {
        StringBuilder s = new StringBuilder();
        if (fast) {
            s.append("fast stop: killed ").append(closed).append(plural(closed, " sandbox", " sandboxes"))
                    .append(" and released their storage; persistent workspaces are left as after a crash (the next start recovers them)");
        } else {
            s.append("parked ").append(parked.size()).append(plural(parked.size(), " workspace", " workspaces"));
            if (!parked.isEmpty()) s.append(" (").append(String.join(", ", parked)).append(')');
            s.append(", closed ").append(closed).append(" ephemeral, stopped ").append(commands)
                    .append(plural(commands, " command", " commands"));
        }
        if (!left.isEmpty()) s.append("; not finished: ").append(String.join(", ", left));
        return s.append("; done in ").append(String.format(java.util.Locale.ROOT, "%.1f s", millis / 1000.0)).toString();
    }

    private static String plural(int n, String one, String many) { return n == 1 ? one : many; }
}
