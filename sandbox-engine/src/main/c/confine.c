/*
 * Confined runs (--isolate-runs): every EXEC gets its own pid and mount namespace below the agent, a fresh /proc,
 * root's ordinary capabilities and nothing more (RUN_CAPS below: what would let a run reach the agent or its channel
 * is withheld), the container-default seccomp filter and a lower priority than the agent. Code in a run then cannot
 * name the agent (or the sandbox's pid 1) to signal or trace it, cannot see host paths in the agent's mounts, cannot
 * open the agent's channel device, and everything it spawned dies with its run: the run's init is the namespace's
 * pid 1.
 *
 *   agent --clone(NEWPID|NEWNS)--> run init (pid 1 inside) --fork--> the command (pid 2, setsid, exec)
 *
 * The run init reaps orphans, and when the command ends it sends its raw wait status to the agent on a pipe and
 * exits: the kernel then kills whatever is left in the namespace. It ignores every signal it has no handler for
 * (the rule for a pid namespace's init), so the agent's tree signals reach the command and its descendants only.
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/btrfs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int g_isolate_runs;
int g_run_as;
unsigned g_run_uid, g_run_gid;

/* The image's user (--run-as): the run's groups, gid and uid, all three ids of each. Needs CAP_SETGID and
 * CAP_SETUID, so a confined run calls it before its capabilities go. */
int run_as_switch(void) {
    if (!g_run_as) return 0;
    gid_t g = (gid_t)g_run_gid;
    if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 || setresuid((uid_t)g_run_uid, (uid_t)g_run_uid, (uid_t)g_run_uid) < 0)
        return -1;
    return 0;
}

/* What the agent writes for the host (FILE_WRITE and its parents) is the run user's, as if a run had written it. */
void run_as_own(const char *path) {
    if (g_run_as && lchown(path, (uid_t)g_run_uid, (gid_t)g_run_gid) < 0)
        logmsg("giving %s to %u:%u: %s", path, g_run_uid, g_run_gid, strerror(errno));
}
const char *g_run_cgroup; /* --run-cgroup DIR: the cgroup (v2) every run init joins before it forks the command */
static const char *g_channel_device; /* --device PATH: the agent's channel (a virtio-serial port in a microVM) */
static char *g_args;      /* the agent's argument strings (contiguous), so a run init can retitle itself */
static size_t g_args_len;

void confine_remember_args(int argc, char **argv) {
    if (argc < 1) return;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--device")) g_channel_device = argv[i + 1];
    }
    g_args = argv[0];
    g_args_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
}

/*
 * System calls a run may not make: those Docker's default seccomp profile refuses to an unprivileged container
 * (kernel modules, kexec, mounts and namespaces, keyrings, bpf, perf, userfaultfd, clock setting, swap, reboot,
 * handle-based opens, io_uring, NUMA policy, accounting). Refused with EPERM; clone3 with ENOSYS so that libc falls
 * back to clone, whose flags the filter can inspect. Other architectures' entry points (i386 int 0x80, x32) are
 * refused as a whole, so a syscall number cannot be smuggled through them.
 */
static const int DENIED[] = {
    SYS_acct, SYS_add_key, SYS_bpf, SYS_clock_adjtime, SYS_clock_settime, SYS_create_module, SYS_delete_module,
    SYS_finit_module, SYS_get_kernel_syms, SYS_get_mempolicy, SYS_init_module, SYS_ioperm, SYS_iopl, SYS_kcmp,
    SYS_kexec_file_load, SYS_kexec_load, SYS_keyctl, SYS_lookup_dcookie, SYS_mbind, SYS_mount, SYS_move_pages,
    SYS_name_to_handle_at, SYS_nfsservctl, SYS_open_by_handle_at, SYS_perf_event_open, SYS_pivot_root,
    SYS_query_module, SYS_quotactl, SYS_reboot, SYS_request_key, SYS_set_mempolicy, SYS_setns, SYS_settimeofday,
    SYS_swapon, SYS_swapoff, SYS_sysfs, SYS__sysctl, SYS_umount2, SYS_unshare, SYS_uselib, SYS_userfaultfd,
    SYS_ustat, SYS_vhangup, SYS_syslog, SYS_adjtimex,
#ifdef SYS_io_uring_setup
    SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
#endif
#ifdef SYS_fsopen
    SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_move_mount, SYS_open_tree,
#endif
#ifdef SYS_mount_setattr
    SYS_mount_setattr,
#endif
#ifdef SYS_quotactl_fd
    SYS_quotactl_fd,
#endif
};

#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)
#define NDENIED (sizeof DENIED / sizeof DENIED[0])

static int install_seccomp(void) {
    struct sock_filter f[NDENIED + 32];
    size_t n = 0;
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    /* x32 system calls have bit 30 set */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
#ifdef SYS_clone3
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
#endif
    /* clone: no new namespaces (flags are the low word of the first argument on x86-64) */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    /* ioctl: no btrfs subvolume or snapshot creation. The namespace level's disk limit is a qgroup limit on the
     * workspace's one subvolume in the layer pool; a nested subvolume would be counted in a qgroup of its own,
     * outside that limit. The command is the low word of the second argument. */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 7);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)BTRFS_IOC_SUBVOL_CREATE, 3, 0);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)BTRFS_IOC_SUBVOL_CREATE_V2, 2, 0);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)BTRFS_IOC_SNAP_CREATE, 1, 0);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)BTRFS_IOC_SNAP_CREATE_V2, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    /* the refused list: a match jumps to the EPERM return after the list */
    for (size_t i = 0; i < NDENIED; i++) {
        size_t to_deny = NDENIED - i; /* instructions between this one and the EPERM return, minus the ALLOW */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)DENIED[i], (uint8_t)to_deny, 0);
    }
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/*
 * The capabilities a run keeps (where the agent holds them): root's ordinary ones, the set container runtimes give
 * root in a container (Docker's default) less CAP_MKNOD and CAP_NET_RAW. The boundary is the guest kernel, the
 * Sentry or the workspace's user namespace; what is withheld is what would let a run reach the agent or its channel:
 *   CAP_SYS_ADMIN      mounts (unmasking /run/berth, remounting /sys or /proc/sys writable), namespaces, setns
 *   CAP_MKNOD          a device node for the agent's virtio-serial port (its /dev has none: run_dev)
 *   CAP_NET_RAW        packet sockets on loopback: reading or injecting other runs' connections to the agent's proxy
 *   CAP_NET_ADMIN      reconfiguring loopback, where the agent's proxy listens
 *   CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_BOOT, CAP_SYS_TIME, CAP_SYSLOG, CAP_BPF, CAP_PERFMON
 *                      the guest kernel itself: modules, /dev/mem and port I/O, reboot (ends the agent), the clock
 *                      (set by the agent after a restore), the kernel log, kernel programs and counters
 *   CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE
 *                      tracing across the pid namespace, handle-based opens past the run's mount view
 *   CAP_SYS_NICE, CAP_SYS_RESOURCE, CAP_IPC_LOCK
 *                      outranking the agent: a priority above it, an oom_score_adj below it, raised hard limits,
 *                      unbounded locked memory
 *   CAP_LINUX_IMMUTABLE, CAP_LEASE, CAP_AUDIT_CONTROL, CAP_AUDIT_READ, CAP_MAC_*, CAP_WAKE_ALARM,
 *   CAP_BLOCK_SUSPEND, CAP_SYS_PACCT, CAP_SYS_TTY_CONFIG, CAP_IPC_OWNER
 *                      nothing a workload needs; withheld as containers withhold them
 * The seccomp filter (install_seccomp) refuses the system calls behind the withheld ones as well, whatever a run holds.
 */
static const int RUN_CAPS[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID, CAP_SETUID,
                               CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_SETFCAP, CAP_AUDIT_WRITE};

static uint64_t run_caps_mask(void) {
    uint64_t m = 0;
    for (size_t i = 0; i < sizeof RUN_CAPS / sizeof RUN_CAPS[0]; i++) m |= 1ull << RUN_CAPS[i];
    return m;
}

/*
 * Leaves the run root's ordinary capabilities for good: the bounding set is cut to RUN_CAPS (so neither an exec as
 * root, nor a setuid-root or file-capability binary, can gain anything else), ambient cleared, and the
 * effective/permitted sets kept to RUN_CAPS (of what the agent held). The securebits stay as on a normal machine:
 * root's exec keeps its set, a switch to another uid drops it, and a setuid-root binary (su) gets it back.
 */
static int confine_caps(void) {
    uint64_t keep = run_caps_mask();
    for (int cap = 0; cap <= 63; cap++) {
        if (!(keep & (1ull << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) return -1;
    }
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    /* the image's user: taking a non-zero uid clears the permitted and effective sets (the kernel's rule) */
    if (run_as_switch() < 0) return -1;
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) < 0) return -1;
    for (int i = 0; i < 2; i++) {
        uint32_t k = (uint32_t)(keep >> (32 * i));
        d[i].effective &= k;
        d[i].permitted &= k;
        d[i].inheritable = 0;
    }
    return (int)syscall(SYS_capset, &h, d);
}

/*
 * In the command's process, right before exec: nothing of the agent's privilege survives into the run beyond
 * RUN_CAPS. The filter goes in first, while CAP_SYS_ADMIN still allows it without no_new_privs: no_new_privs
 * would stop setuid binaries (su, sudo) from working as on a normal machine, and the bounding set already caps
 * what they can gain.
 */
int confine_command(void) {
    if (!g_isolate_runs) return run_as_switch();
    if (install_seccomp() < 0) {
        /* an agent without CAP_SYS_ADMIN (not possible with --isolate-runs, which needs it to clone): fall back */
        if (errno != EACCES || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || install_seccomp() < 0) return -1;
    }
    return confine_caps();
}

/* Moves the calling process into g_run_cgroup ("0": the writer itself, whatever its pid namespace). */
static int join_run_cgroup(void) {
    if (!g_run_cgroup) return 0;
    char path[512];
    if ((size_t)snprintf(path, sizeof path, "%s/cgroup.procs", g_run_cgroup) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : write(fd, "0", 1);
    int e = n == 1 ? 0 : n < 0 ? errno : EIO;
    if (fd >= 0) close(fd);
    if (e) {
        logmsg("a run cannot join %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    return 0;
}

/*
 * A run's /dev where the agent's channel is a device (microVM): a tmpfs with the ordinary nodes bound from the
 * agent's /dev (devtmpfs: every device of the guest), so the run finds no node of the agent's port, nor the disks,
 * the console or /dev/mem, and cannot make one (no CAP_MKNOD, nodev). The agent prepares it once, before its first
 * run (stage_run_dev, in its own mount namespace at RUN_DEV); each run binds it over /dev and detaches the staging
 * place (run_dev): two mounts per run instead of a dozen. Elsewhere the sandbox's /dev is already minimal
 * (bubblewrap's --dev, gVisor's own) and holds no channel: it is left as it is.
 */
#define RUN_DEV "/run/berth-run-dev"
static int g_run_dev_staged; /* 1: RUN_DEV holds a run's /dev; -1: staging failed (runs fail to start, with the reason) */

static void stage_run_dev(void) {
    if (!g_channel_device || g_run_dev_staged) return;
    g_run_dev_staged = -1;
    mkdir(RUN_DEV, 0755);
    if (mount("tmpfs", RUN_DEV, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0) {
        logmsg("a run's /dev: %s", strerror(errno));
        return;
    }
    static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        char from[64], to[64];
        snprintf(from, sizeof from, "/dev/%s", nodes[i]);
        snprintf(to, sizeof to, RUN_DEV "/%s", nodes[i]);
        int made = open(to, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
        if (made >= 0) close(made);
        if (mount(from, to, NULL, MS_BIND, NULL) < 0) {
            logmsg("a run's /dev: binding %s: %s", from, strerror(errno));
            return;
        }
    }
    struct stat st;
    if (stat("/dev/pts", &st) == 0 && S_ISDIR(st.st_mode)) {
        mkdir(RUN_DEV "/pts", 0755);
        if (mount("/dev/pts", RUN_DEV "/pts", NULL, MS_BIND | MS_REC, NULL) == 0) (void)!symlink("pts/ptmx", RUN_DEV "/ptmx");
    }
    mkdir(RUN_DEV "/shm", 01777);
    if (mount("shm", RUN_DEV "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0) {
        logmsg("a run's /dev/shm: %s", strerror(errno));
        return;
    }
    (void)!symlink("/proc/self/fd", RUN_DEV "/fd");
    (void)!symlink("/proc/self/fd/0", RUN_DEV "/stdin");
    (void)!symlink("/proc/self/fd/1", RUN_DEV "/stdout");
    (void)!symlink("/proc/self/fd/2", RUN_DEV "/stderr");
    g_run_dev_staged = 1;
}

static int run_dev(void) {
    if (!g_channel_device) return 0;
    if (g_run_dev_staged != 1) {
        errno = ENODEV;
        return -1;
    }
    if (mount(RUN_DEV, "/dev", NULL, MS_BIND | MS_REC, NULL) < 0) return -1;
    umount2(RUN_DEV, MNT_DETACH); /* the staging place is none of the run's business */
    return 0;
}

/* The run's own view of the system: a private copy of the agent's mounts without the agent's, and a fresh /proc. */
static int run_mounts(void) {
    /* gVisor (runsc 20221219) cannot change propagation (EINVAL), and has no mount namespaces either: clone's
     * CLONE_NEWNS is accepted and ignored, so what follows lands in the sandbox's one mount table (proc.c) */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 && errno != EINVAL) {
        logmsg("a run's mounts: making / private: %s", strerror(errno));
        return -1;
    }
    /* the agent's binary and host socket are none of the run's business (and their sources name host paths) */
    umount2("/run/berth", MNT_DETACH);
    umount2("/run/berth-agent", MNT_DETACH);
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        logmsg("a run's mounts: a fresh /proc: %s", strerror(errno));
        return -1;
    }
    if (run_dev() < 0) return -1;
    /* /sys and the cgroup tree read-only: in a microVM a run is the guest's uid 0 (without capabilities), which
     * still owns root's 0644 knobs, among them cgroup.procs: it could leave its group and with it the limits */
    static const char *const ro_sys[] = {"/sys", "/sys/fs/cgroup"};
    for (size_t i = 0; i < sizeof ro_sys / sizeof ro_sys[0]; i++) {
        if (mount(ro_sys[i], ro_sys[i], NULL, MS_BIND | MS_REC, NULL) == 0)
            mount(NULL, ro_sys[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    }
    /* the kernel knobs stay read-only, as in the sandbox's own /proc */
    static const char *const ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"};
    for (size_t i = 0; i < sizeof ro / sizeof ro[0]; i++) {
        if (mount(ro[i], ro[i], NULL, MS_BIND | MS_REC, NULL) == 0)
            mount(NULL, ro[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    }
    return 0;
}

/* Closes every descriptor from `low` on. close_range where the kernel has it; gVisor (runsc 2022) does not, and a
 * descriptor left open there (a run's stdin pipe held by its init) means a reader never sees EOF. */
void close_from(int low) {
    if (syscall(SYS_close_range, (unsigned)low, ~0u, 0u) == 0) return;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return;
    int dfd = dirfd(d);
    struct dirent *de;
    int fds[4096];
    size_t n = 0;
    while ((de = readdir(d)) && n < sizeof fds / sizeof fds[0]) {
        int fd = atoi(de->d_name);
        if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && fd >= low && fd != dfd) fds[n++] = fd;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) close(fds[i]);
}

/*
 * What the command left behind, seen by the run init when the command ended: every other live process of the run's
 * namespace (its own /proc), pid and command line (NULs as spaces, cut to LEFT_COMMAND bytes; "[comm]" when the
 * command line is empty), the first LEFT_LISTED by pid and the total. Zombies are not counted: they have ended.
 * Appended to the 4-byte wait status in `b` (LEFT_REPORT bytes); returns the report's length.
 */
static size_t left_behind(unsigned char *b) {
    uint32_t total = 0, listed = 0;
    size_t off = 12;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 1) continue;
        char path[64], stat[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t n = read(fd, stat, sizeof stat - 1);
        close(fd);
        if (n <= 0) continue;
        stat[n] = 0;
        char *rp = strrchr(stat, ')'); /* "pid (comm) S ...": comm may hold anything, the state follows the last ')' */
        if (!rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X') continue;
        total++;
        if (listed >= LEFT_LISTED) continue;
        char cmd[LEFT_COMMAND];
        size_t len = 0;
        snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t c = read(fd, cmd, sizeof cmd);
            close(fd);
            if (c > 0) len = (size_t)c;
        }
        while (len > 0 && cmd[len - 1] == 0) len--;
        for (size_t i = 0; i < len; i++)
            if (cmd[i] == 0) cmd[i] = ' ';
        if (len == 0) {
            char *lp = strchr(stat, '(');
            size_t cl = lp && rp > lp ? (size_t)(rp - lp - 1) : 0;
            if (cl > sizeof cmd - 2) cl = sizeof cmd - 2;
            cmd[0] = '[';
            if (cl) memcpy(cmd + 1, lp + 1, cl);
            cmd[cl + 1] = ']';
            len = cl + 2;
        }
        put_u32(b + off, (uint32_t)pid);
        put_u32(b + off + 4, (uint32_t)len);
        memcpy(b + off + 8, cmd, len);
        off += 8 + len;
        listed++;
    }
    if (d) closedir(d);
    put_u32(b + 4, total);
    put_u32(b + 8, listed);
    return off;
}

/*
 * Body of the run init (pid 1 of the run's namespace). `command` is called in the forked command process and does
 * not return. Writes the command's raw wait status (4 bytes, big-endian) and what it left behind (left_behind) to
 * `status_fd` and exits.
 */
void confine_init(int status_fd, int ready_fd, void (*command)(void *), void *arg) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the agent is gone: so is the run */
    /* the run sees its init as its pid 1: call it what it is rather than showing the agent's command line */
    prctl(PR_SET_NAME, "berth-run-init");
    if (g_args && g_args_len > 0) {
        memset(g_args, 0, g_args_len);
        strncpy(g_args, "berth-run-init", g_args_len);
    }
    /* join the runs' group first (its pids and memory limits; the agent stays outside it, so a run that exhausts
     * them cannot starve the agent), then lose the means to leave it (run_mounts: /sys/fs/cgroup read-only) */
    if (join_run_cgroup() < 0 || run_mounts() < 0) {
        unsigned char msg[5] = {'R'};
        put_u32(msg + 1, (uint32_t)errno);
        (void)!write(ready_fd, msg, sizeof msg);
        _exit(126);
    }
    /* the agent answers the host first: a busy run must not slow it down (the command inherits this) */
    setpriority(PRIO_PROCESS, 0, 5);
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)!write(fd, "500", 3); /* under memory pressure the run goes before the agent */
        close(fd);
    }
    pid_t pid = fork();
    if (pid < 0) _exit(127);
    if (pid == 0) {
        close(status_fd);
        command(arg);
        _exit(127);
    }
    /* the init needs no privilege any more: if the run could attach to it anyway (gVisor does not check
     * dumpability), it would find nothing to take */
    prctl(PR_SET_DUMPABLE, 0);
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    syscall(SYS_capset, &h, d);
    /* keep only the status pipe: the run's pipes must reach EOF when its processes are gone */
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    if (status_fd != 3) {
        dup2(status_fd, 3);
        status_fd = 3;
    }
    close_from(4);
    for (;;) {
        int st;
        pid_t w = wait(&st);
        if (w < 0 && errno == EINTR) continue;
        if (w == pid || w < 0) {
            unsigned char b[LEFT_REPORT];
            put_u32(b, (uint32_t)(w == pid ? st : (127 << 8)));
            size_t n = left_behind(b);
            (void)!write(status_fd, b, n); /* at most PIPE_BUF: one atomic write, read whole at reap time */
            /* leaving kills everything still in the namespace, the backgrounded and the double-forked alike */
            _exit(0);
        }
    }
}

/* Creates the run init in new pid + mount namespaces; like fork(), returns 0 in the child. */
pid_t confine_clone(void) {
    stage_run_dev();
    return (pid_t)syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* The agent itself: not dumpable, so nothing running as its uid can attach to it or read its memory. */
void confine_agent(void) {
    if (prctl(PR_SET_DUMPABLE, 0) < 0) logmsg("PR_SET_DUMPABLE: %s", strerror(errno));
}
