/*
 * escape-probe: the system-call attempts of AbstractEscapeTest for images without python3 (the microVM test image is
 * busybox only). Built static on the host by the test and copied into the workspace.
 *
 *   escape-probe ptrace PID   PTRACE_ATTACH to PID: prints ATTACHED (then detaches) or the error
 *   escape-probe syscalls     keyctl, bpf, userfaultfd, perf_event_open: prints "name rc error" per call
 *   escape-probe alloc MIB    allocates and touches MIB MiB, prints the count
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 3 && !strcmp(argv[1], "ptrace")) {
        pid_t pid = (pid_t)atoi(argv[2]);
        if (ptrace(PTRACE_ATTACH, pid, 0, 0) == 0) {
            printf("ATTACHED\n");
            waitpid(pid, NULL, __WALL);
            ptrace(PTRACE_DETACH, pid, 0, 0);
        } else {
            printf("%s\n", strerror(errno));
        }
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "syscalls")) {
        static const struct { const char *name; long nr; } calls[] = {
            {"keyctl", SYS_keyctl}, {"bpf", SYS_bpf}, {"userfaultfd", SYS_userfaultfd}, {"perf_event_open", SYS_perf_event_open}};
        for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
            errno = 0;
            long rc = syscall(calls[i].nr, 0, 0, 0, 0, 0);
            printf("%s %ld %s\n", calls[i].name, rc, strerror(errno));
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "alloc")) {
        long mib = atol(argv[2]);
        long long done = 0;
        for (long i = 0; i < mib; i++) {
            char *p = malloc(1 << 20);
            if (!p) {
                printf("malloc failed after %lld MiB\n", done);
                return 1;
            }
            memset(p, 1, 1 << 20);
            done++;
        }
        printf("%lld\n", done << 20);
        return 0;
    }
    fprintf(stderr, "usage: escape-probe ptrace PID | syscalls | alloc MIB\n");
    return 2;
}
