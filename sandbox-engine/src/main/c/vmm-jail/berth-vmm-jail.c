/*
 * berth-vmm-jail: puts one QEMU in its jail and execs it, in one process (the host side of the microVM driver; the
 * Java side, VmmJail.java, says what goes in). It replaces a shell prologue of some twenty processes (unshare, sh,
 * one mount(8) per bind, chroot, setpriv) that made a jailed QEMU start 90-130 ms later than a bare one.
 *
 *   berth-vmm-jail --root DIR [--mkdir PATH]... [--link NAME]... [--usr] [--dev NAME]...
 *                  [--proc] [--rw PATH]... [--ro PATH]... --uid N --gid N [--groups G,G...] -- PROGRAM ARG...
 *
 * In this order, whatever the order of the options:
 *   1. (cgroups are the caller's: it moves this process into them while QEMU starts, since every move under cgroup
 *      v1 waits for an RCU grace period; see VmmJail.join)
 *   2. a private mount namespace; a 1 MiB tmpfs (mode 0755) on --root becomes the jail's root;
 *   3. --mkdir makes a directory in it, --link NAME a symlink NAME -> usr/NAME (merged /usr);
 *   4. --usr binds /usr recursively, read-only, nosuid, nodev; --dev NAME binds /dev/NAME (nosuid, noexec);
 *      --proc mounts a proc with hidepid=2 (nosuid, nodev, noexec);
 *   5. --rw PATH / --ro PATH binds PATH (a directory or a file) at the same path inside, nosuid, nodev, noexec, --ro
 *      also read-only; missing parents and the mount point are made in the tmpfs;
 *   6. chroot to the root; no new privileges; the capability bounding set and ambient set emptied; groups, gid, uid
 *      set (all three ids); effective, permitted and inheritable capabilities cleared and checked to be empty;
 *   7. execvp(PROGRAM) (found on PATH inside the jail), so the pid the caller started is QEMU's.
 * Any failure prints "berth-vmm-jail: WHAT: ERROR" and exits 125 before PROGRAM runs.
 *
 * Paths are absolute and contain no "..": they come from Berth, not from a workspace; the check only keeps a typo
 * from escaping the tmpfs. Bind sources are followed like mount(8) does: they are Berth's own files and directories.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_ITEMS 256

static void die(const char *what, ...) {
    int e = errno;
    va_list ap;
    va_start(ap, what);
    fputs("berth-vmm-jail: ", stderr);
    vfprintf(stderr, what, ap);
    va_end(ap);
    if (e) fprintf(stderr, ": %s", strerror(e));
    fputc('\n', stderr);
    exit(125);
}

static void usage(const char *msg) {
    errno = 0;
    die("%s (usage: berth-vmm-jail --root DIR [--mkdir PATH]... [--link NAME]... [--usr] "
        "[--dev NAME]... [--proc] [--rw PATH]... [--ro PATH]... --uid N --gid N [--groups G,G...] -- PROGRAM ARG...)",
        msg);
}

struct list {
    const char *v[MAX_ITEMS];
    int n;
};

static void add(struct list *l, const char *v) {
    if (l->n >= MAX_ITEMS) usage("too many items");
    l->v[l->n++] = v;
}

static void check_path(const char *p) {
    if (p[0] != '/') {
        errno = 0;
        die("%s: not an absolute path", p);
    }
    if (strstr(p, "/../") || (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0)) {
        errno = 0;
        die("%s: contains ..", p);
    }
    if (strlen(p) >= PATH_MAX - 256) {
        errno = 0;
        die("%s: path too long", p);
    }
}

static void check_name(const char *n) {
    if (!n[0] || strchr(n, '/') || strcmp(n, ".") == 0 || strcmp(n, "..") == 0) {
        errno = 0;
        die("%s: not a plain name", n);
    }
}

static long number(const char *s, const char *what) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 0 || v > 0x7fffffffL) {
        errno = 0;
        die("%s: %s is not a number", what, s);
    }
    return v;
}

static char g_root[PATH_MAX];

/* root + inside (inside is absolute) */
static void in_root(char *out, const char *inside) {
    if (snprintf(out, PATH_MAX, "%s%s", g_root, inside) >= PATH_MAX) {
        errno = ENAMETOOLONG;
        die("%s", inside);
    }
}

/* mkdir -p of an absolute path inside the root */
static void mkdirs(const char *inside) {
    char p[PATH_MAX];
    in_root(p, inside);
    size_t base = strlen(g_root);
    for (char *s = p + base + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) < 0 && errno != EEXIST) die("mkdir %s", p);
            *s = c;
            if (c == '\0') break;
        }
    }
}

/* the mount point for `inside`: a directory for a directory source, an empty file otherwise */
static void mount_point(const char *src, const char *inside, char *dst) {
    struct stat st;
    if (stat(src, &st) < 0) die("%s", src);
    in_root(dst, inside);
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", inside);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        mkdirs(parent);
    }
    if (S_ISDIR(st.st_mode)) {
        if (mkdir(dst, 0755) < 0 && errno != EEXIST) die("mkdir %s", dst);
    } else {
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) die("create %s", dst);
        close(fd);
    }
}

/* binds src at the same path inside; extra = MS_NOSUID etc.; read-only when ro. Flags the source mount already has
 * (nodev, noexec, ...) are kept: a bind remount must not drop them. */
static void bind(const char *src, const char *inside, int recursive, int ro, unsigned long extra) {
    char dst[PATH_MAX];
    mount_point(src, inside, dst);
    if (mount(src, dst, NULL, MS_BIND | (recursive ? MS_REC : 0), NULL) < 0) die("bind %s", src);
    struct statvfs sv;
    if (statvfs(dst, &sv) < 0) die("statvfs %s", dst);
    unsigned long keep = 0;
    if (sv.f_flag & ST_NOSUID) keep |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV) keep |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC) keep |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME) keep |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME) keep |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME) keep |= MS_RELATIME;
    if (sv.f_flag & ST_RDONLY) keep |= MS_RDONLY;
    if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | keep | extra | (ro ? MS_RDONLY : 0), NULL) < 0)
        die("remount %s", dst);
}

static void drop_privileges(uid_t uid, gid_t gid, const gid_t *groups, int ngroups) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) die("drop capability %d from the bounding set", cap);
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) die("clear ambient capabilities");
    if (setgroups((size_t)ngroups, groups) < 0) die("setgroups");
    if (setresgid(gid, gid, gid) < 0) die("setresgid %u", (unsigned)gid);
    if (setresuid(uid, uid, uid) < 0) die("setresuid %u", (unsigned)uid);
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) < 0) die("capset");
    memset(d, 0xff, sizeof d);
    if (syscall(SYS_capget, &h, d) < 0) die("capget");
    for (int i = 0; i < 2; i++) {
        if (d[i].effective || d[i].permitted || d[i].inheritable) {
            errno = 0;
            die("capabilities left after the drop");
        }
    }
    if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid) {
        errno = 0;
        die("ids did not change");
    }
}

int main(int argc, char **argv) {
    struct list dirs = {0}, links = {0}, devs = {0}, rw = {0}, ro = {0};
    const char *root = NULL;
    int usr = 0, proc = 0;
    long uid = -1, gid = -1;
    gid_t groups[64];
    int ngroups = 0;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--usr") == 0) { usr = 1; continue; }
        if (strcmp(a, "--proc") == 0) { proc = 1; continue; }
        if (i + 1 >= argc) usage("an option lacks its value");
        const char *v = argv[++i];
        if (strcmp(a, "--root") == 0) { check_path(v); root = v; }
        else if (strcmp(a, "--mkdir") == 0) { check_path(v); add(&dirs, v); }
        else if (strcmp(a, "--link") == 0) { check_name(v); add(&links, v); }
        else if (strcmp(a, "--dev") == 0) { check_name(v); add(&devs, v); }
        else if (strcmp(a, "--rw") == 0) { check_path(v); add(&rw, v); }
        else if (strcmp(a, "--ro") == 0) { check_path(v); add(&ro, v); }
        else if (strcmp(a, "--uid") == 0) uid = number(v, "--uid");
        else if (strcmp(a, "--gid") == 0) gid = number(v, "--gid");
        else if (strcmp(a, "--groups") == 0) {
            char *copy = strdup(v);
            if (!copy) die("strdup");
            for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (ngroups >= 64) usage("too many groups");
                groups[ngroups++] = (gid_t)number(t, "--groups");
            }
            free(copy);
        } else usage(a);
    }
    if (i >= argc) usage("no program after --");
    if (!root) usage("--root is required");
    if (uid <= 0 || gid <= 0) usage("--uid and --gid are required and not 0");
    if (strlen(root) >= sizeof g_root) usage("--root too long");
    strcpy(g_root, root);

    if (unshare(CLONE_NEWNS) < 0) die("unshare mount namespace");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make mounts private");
    if (mount("berth-jail", g_root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0) die("tmpfs on %s", g_root);

    for (int k = 0; k < dirs.n; k++) mkdirs(dirs.v[k]);
    for (int k = 0; k < links.n; k++) {
        char target[PATH_MAX], link[PATH_MAX], inside[PATH_MAX];
        snprintf(target, sizeof target, "usr/%s", links.v[k]);
        snprintf(inside, sizeof inside, "/%s", links.v[k]);
        in_root(link, inside);
        if (symlink(target, link) < 0) die("symlink %s", link);
    }
    if (usr) bind("/usr", "/usr", 1, 1, MS_NOSUID | MS_NODEV);
    for (int k = 0; k < devs.n; k++) {
        char src[PATH_MAX];
        snprintf(src, sizeof src, "/dev/%s", devs.v[k]);
        bind(src, src, 0, 0, MS_NOSUID | MS_NOEXEC);
    }
    if (proc) {
        char dst[PATH_MAX];
        mkdirs("/proc");
        in_root(dst, "/proc");
        if (mount("proc", dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") < 0) die("mount proc");
    }
    for (int k = 0; k < rw.n; k++) bind(rw.v[k], rw.v[k], 0, 0, MS_NOSUID | MS_NODEV | MS_NOEXEC);
    for (int k = 0; k < ro.n; k++) bind(ro.v[k], ro.v[k], 0, 1, MS_NOSUID | MS_NODEV | MS_NOEXEC);

    if (chdir(g_root) < 0) die("chdir %s", g_root);
    if (chroot(".") < 0) die("chroot %s", g_root);
    if (chdir("/") < 0) die("chdir /");
    drop_privileges((uid_t)uid, (gid_t)gid, groups, ngroups);

    execvp(argv[i], argv + i);
    die("exec %s", argv[i]);
}
