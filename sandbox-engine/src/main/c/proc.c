/*
 * The agent's own /proc, pinned at start. Every /proc lookup the agent makes about other processes (a run's tree,
 * a tunnel's owner) goes through it, so it always sees the agent's pid namespace and network stack, whatever has
 * been mounted on /proc since.
 *
 * Why: a confined run mounts a fresh /proc for its pid namespace (confine.c, run_mounts). On Linux that mount is in
 * the run's own mount namespace. runsc 20221219 accepts CLONE_NEWNS (clone and unshare) but gives the run no mount
 * namespace of its own: the run's /proc lands on the sandbox's /proc, the agent's included. Looked up by path, the
 * agent's /proc then shows the last run's pid namespace, /proc/self (and with it /proc/net, a link to self/net)
 * does not resolve, and no proxy connection could be attributed to its run.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int g_proc = -1; /* directory fd of the agent's procfs; -1: look up by path (no /proc at start) */

void proc_init(void) {
    g_proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_proc < 0) logmsg("opening /proc: %s (process lookups go by path)", strerror(errno));
}

int proc_open(const char *rel, int flags) {
    if (g_proc >= 0) return openat(g_proc, rel, flags | O_CLOEXEC);
    char path[256];
    if ((size_t)snprintf(path, sizeof path, "/proc/%s", rel) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, flags | O_CLOEXEC);
}

DIR *proc_opendir(const char *rel) {
    int fd = proc_open(rel, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return NULL;
    DIR *d = fdopendir(fd);
    if (!d) close(fd);
    return d;
}

ssize_t proc_readlink(const char *rel, char *buf, size_t n) {
    if (g_proc >= 0) return readlinkat(g_proc, rel, buf, n);
    char path[256];
    if ((size_t)snprintf(path, sizeof path, "/proc/%s", rel) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return readlink(path, buf, n);
}
