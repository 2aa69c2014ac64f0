package dev.berth.engine.host;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Puts the calling thread at the lowest CPU priority ({@code setpriority(PRIO_PROCESS, gettid(), 19)}: on Linux a
 * thread is a task of its own and has its own nice value). Java's thread priorities do nothing on Linux by default,
 * so a "low priority" background thread that hashes hundreds of MiB (a snapshot's evidence digest) competed with
 * the fork started right after it on equal terms. Best effort: false where the calls are unavailable.
 */
public final class BackgroundPriority {
    private static final int PRIO_PROCESS = 0;
    private static final int NICEST = 19;
    private static final MethodHandle GETTID;
    private static final MethodHandle SETPRIORITY;

    static {
        MethodHandle gettid = null, setpriority = null;
        try {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            gettid = linker.downcallHandle(libc.find("gettid").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT));
            setpriority = linker.downcallHandle(libc.find("setpriority").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        } catch (RuntimeException | Error e) {
            // no native access: threads keep the process's priority
        }
        GETTID = gettid;
        SETPRIORITY = setpriority;
    }

    private BackgroundPriority() {}

    /** Lowers the calling platform thread to nice 19; true when that took effect. */
    public static boolean lowerCurrentThread() {
        if (GETTID == null || SETPRIORITY == null || Thread.currentThread().isVirtual()) return false;
        try {
            int tid = (int) GETTID.invokeExact();
            return (int) SETPRIORITY.invokeExact(PRIO_PROCESS, tid, NICEST) == 0;
        } catch (Throwable t) {
            return false;
        }
    }
}
