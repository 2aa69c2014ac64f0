package dev.berth.engine.api;

/**
 * State and new output of a background process started with run {background: true}.
 *
 * @param exitCode    null while it runs
 * @param stdout      output from {@code stdoutFrom} to {@code stdoutNext} (pass {@code stdoutNext} to read on)
 * @param stdoutDropped bytes between the requested offset and the oldest byte still kept (the log keeps the last MiB)
 * @param screen      a terminal process's current screen (rows of text, as a terminal emulator renders its output);
 *                    null for a process on pipes
 */
public record ProcessStatus(String process, String workspace, int pid, String command, boolean running, Integer exitCode,
                            int signal, boolean timedOut, String stdout, String stderr, long stdoutFrom, long stdoutNext,
                            long stderrFrom, long stderrNext, long stdoutDropped, long stderrDropped, long durationMs,
                            String note, String screen) {
    public ProcessStatus(String process, String workspace, int pid, String command, boolean running, Integer exitCode,
                         int signal, boolean timedOut, String stdout, String stderr, long stdoutFrom, long stdoutNext,
                         long stderrFrom, long stderrNext, long stdoutDropped, long stderrDropped, long durationMs, String note) {
        this(process, workspace, pid, command, running, exitCode, signal, timedOut, stdout, stderr, stdoutFrom, stdoutNext,
                stderrFrom, stderrNext, stdoutDropped, stderrDropped, durationMs, note, null);
    }
}
