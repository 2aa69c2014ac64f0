/*
 * escape-probe: the system-call attempts of AbstractEscapeTest for images without python3 (the microVM test image is
 * busybox only). Built static on the host by the test and copied into the workspace.
 *
 *   escape-probe ptrace PID   PTRACE_ATTACH to PID: prints ATTACHED (then detaches) or the error
 *   escape-probe syscalls     keyctl, bpf, userfaultfd, perf_event_open: prints "name rc error" per call
 *   escape-probe alloc MIB    allocates and touches MIB MiB, prints the count
 *   escape-probe raise        capabilities and module loads a run was not given: capset adding CAP_SYS_ADMIN,
 *                             PR_CAP_AMBIENT_RAISE and PR_CAPBSET_READ of it, init_module, finit_module, mknod of a
 *                             character device: prints "name rc error" per attempt
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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
    if (argc == 2 && !strcmp(argv[1], "raise")) {
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2];
        memset(d, 0, sizeof d);
        syscall(SYS_capget, &h, d);
        d[0].effective |= 1u << CAP_SYS_ADMIN;
        d[0].permitted |= 1u << CAP_SYS_ADMIN;
        errno = 0;
        long rc = syscall(SYS_capset, &h, d);
        printf("capset %ld %s\n", rc, strerror(errno));
        errno = 0;
        rc = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0);
        printf("ambient_raise %ld %s\n", rc, strerror(errno));
        printf("bounding_sys_admin %d\n", prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0));
        static const char image[] = "\177ELF not a module";
        errno = 0;
        rc = syscall(SYS_init_module, image, sizeof image, "");
        printf("init_module %ld %s\n", rc, strerror(errno));
        errno = 0;
        rc = syscall(SYS_finit_module, 0, "", 0);
        printf("finit_module %ld %s\n", rc, strerror(errno));
        errno = 0;
        rc = mknod("/tmp/escape-probe-null", S_IFCHR | 0600, makedev(1, 3));
        printf("mknod %ld %s\n", rc, strerror(errno));
        return 0;
    }
    fprintf(stderr, "usage: escape-probe ptrace PID | syscalls | alloc MIB | raise\n");
    return 2;
}
