package dev.berth.engine.api;

import java.time.Instant;

/**
 * Result of run. {@code stdout}/{@code stderr} hold the head and the tail of each stream when it was longer than the
 * limit; {@code *Bytes} always count everything the command wrote.
 *
 * @param exitCode   the process's exit status, or 128+signal when it was killed by a signal
 * @param signal     the terminating signal, 0 if it exited by itself
 * @param resumed    the workspace had been parked (or its sandbox had stopped) and was started for this run
 * @param agentConfigChanges agent configuration files the run created, modified or deleted (and whether undone)
 * @param egressDenied outbound connections refused while the run was active, with the reason
 * @param secretsUsed  secret bindings whose real value the egress proxy injected into this run's requests
 * @param recovered    what a fault took from the workspace before this run (a server crash, a lost sandbox, a cold
 *                     boot, runs in flight that were lost), or null
 * @param idleParkAt   when the idle policy will park the workspace if nothing happens, or null
 * @param expiresAt    when the policy will close and delete the (ephemeral) workspace, or null
 * @param stdoutSha256 SHA-256 of everything the command wrote to stdout (kept or not); likewise stderrSha256
 * @param runId        the run's id, as its audit records and receipt name it (null until the engine assigns it)
 * @param receipt      the signed receipt (see {@code dev.berth.engine.audit.Receipts}), null until issued
 * @param egressFiltered registry metadata the egress proxy filtered while the run was active (versions hidden by the
 *                     release age or the advisory feed), with the reason
 * @param stoppedProcesses processes the (foreground) command started that were still alive when it ended, and were
 *                     stopped with it (the first ones by pid; {@code note} gives the count); empty when none
 */
public record RunResult(String workspace, int exitCode, int signal, String stdout, String stderr, long stdoutBytes,
                        long stderrBytes, boolean stdoutTruncated, boolean stderrTruncated, long durationMs,
                        boolean timedOut, boolean resumed, String note, java.util.List<AgentConfigChange> agentConfigChanges,
                        java.util.List<EgressDenial> egressDenied, java.util.List<SecretUse> secretsUsed,
                        String recovered, Instant idleParkAt, Instant expiresAt, String stdoutSha256, String stderrSha256,
                        String runId, java.util.Map<String, Object> receipt, java.util.List<EgressFiltered> egressFiltered,
                        java.util.List<StoppedProcess> stoppedProcesses) {

    /** A result without stopped processes (the shape before foreground runs said what they stopped). */
    public RunResult(String workspace, int exitCode, int signal, String stdout, String stderr, long stdoutBytes,
                     long stderrBytes, boolean stdoutTruncated, boolean stderrTruncated, long durationMs,
                     boolean timedOut, boolean resumed, String note, java.util.List<AgentConfigChange> agentConfigChanges,
                     java.util.List<EgressDenial> egressDenied, java.util.List<SecretUse> secretsUsed,
                     String recovered, Instant idleParkAt, Instant expiresAt, String stdoutSha256, String stderrSha256,
                     String runId, java.util.Map<String, Object> receipt, java.util.List<EgressFiltered> egressFiltered) {
        this(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated, stderrTruncated, durationMs,
                timedOut, resumed, note, agentConfigChanges, egressDenied, secretsUsed, recovered, idleParkAt, expiresAt,
                stdoutSha256, stderrSha256, runId, receipt, egressFiltered, java.util.List.of());
    }

    /** A result without filtered registry metadata (the shape before registry filtering existed). */
    public RunResult(String workspace, int exitCode, int signal, String stdout, String stderr, long stdoutBytes,
                     long stderrBytes, boolean stdoutTruncated, boolean stderrTruncated, long durationMs,
                     boolean timedOut, boolean resumed, String note, java.util.List<AgentConfigChange> agentConfigChanges,
                     java.util.List<EgressDenial> egressDenied, java.util.List<SecretUse> secretsUsed,
                     String recovered, Instant idleParkAt, Instant expiresAt, String stdoutSha256, String stderrSha256,
                     String runId, java.util.Map<String, Object> receipt) {
        this(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated, stderrTruncated, durationMs,
                timedOut, resumed, note, agentConfigChanges, egressDenied, secretsUsed, recovered, idleParkAt, expiresAt,
                stdoutSha256, stderrSha256, runId, receipt, java.util.List.of());
    }

    public RunResult withEgressFiltered(java.util.List<EgressFiltered> filtered) {
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, resumed, note, agentConfigChanges, egressDenied, secretsUsed, recovered,
                idleParkAt, expiresAt, stdoutSha256, stderrSha256, runId, receipt, filtered, stoppedProcesses);
    }

    public RunResult withAgentConfigChanges(java.util.List<AgentConfigChange> changes, String said) {
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, resumed, note == null ? said : note + "; " + said, changes,
                egressDenied, secretsUsed, recovered, idleParkAt, expiresAt, stdoutSha256, stderrSha256, runId, receipt, egressFiltered, stoppedProcesses);
    }

    public RunResult withResumed(String why) {
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, true, note == null ? why : why + "; " + note, agentConfigChanges,
                egressDenied, secretsUsed, recovered, idleParkAt, expiresAt, stdoutSha256, stderrSha256, runId, receipt, egressFiltered, stoppedProcesses);
    }

    public RunResult withEgressDenied(java.util.List<EgressDenial> denied) {
        String n = note;
        if (!denied.isEmpty()) {
            String said = denied.size() + " outbound connection(s) refused by the egress policy (see egress_denied)";
            n = n == null ? said : n + "; " + said;
        }
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, resumed, n, agentConfigChanges, denied, secretsUsed, recovered, idleParkAt, expiresAt, stdoutSha256, stderrSha256, runId, receipt, egressFiltered, stoppedProcesses);
    }

    public RunResult withSecrets(java.util.List<SecretUse> used, String said) {
        String n = said == null ? note : note == null ? said : note + "; " + said;
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, resumed, n, agentConfigChanges, egressDenied, used, recovered, idleParkAt, expiresAt, stdoutSha256, stderrSha256, runId, receipt, egressFiltered, stoppedProcesses);
    }

    public RunResult withRecovered(String what) {
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, resumed, note, agentConfigChanges, egressDenied, secretsUsed, what, idleParkAt, expiresAt, stdoutSha256, stderrSha256, runId, receipt, egressFiltered, stoppedProcesses);
    }

    public RunResult withLifecycle(Instant idlePark, Instant expires) {
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, resumed, note, agentConfigChanges, egressDenied, secretsUsed, recovered,
                idlePark, expires, stdoutSha256, stderrSha256, runId, receipt, egressFiltered, stoppedProcesses);
    }

    public RunResult withReceipt(String id, java.util.Map<String, Object> signed) {
        return new RunResult(workspace, exitCode, signal, stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated,
                stderrTruncated, durationMs, timedOut, resumed, note, agentConfigChanges, egressDenied, secretsUsed, recovered,
                idleParkAt, expiresAt, stdoutSha256, stderrSha256, id, signed, egressFiltered, stoppedProcesses);
    }

    /** A process a foreground run started that was still alive when its command ended (pid in the run's namespace). */
    public record StoppedProcess(int pid, String command) {}
}
