/*
 * EXEC runs: fork/exec, output pumping, stdin buffering, reaping, timeouts and process-tree signalling.
 * Every fd here is non-blocking and polled by the main loop; a child that never reads stdin or a host that
 * reads slowly costs memory up to fixed bounds, never a blocked agent.
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RUNS 1024

extern char **environ;

struct proc {
    struct proc *next;
    uint32_t chan;
    int attached;          /* belongs to the current session; detached runs keep running, their output kept */
    pid_t pid;
    int reaped, status;
    int fd_out, fd_err, fd_in;
    int tty;               /* EXEC_TTY: fd_out is the terminal's master side, fd_in a second descriptor of it */
    int fd_status;         /* confined runs: the run init reports the command's wait status here */
    unsigned char *left;   /* confined runs: what the command left behind (u32 total, u32 listed, entries), or NULL */
    size_t left_len;
    struct buf in;         /* STDIN bytes the child has not read yet */
    int in_close_pending;  /* empty STDIN seen: close the pipe once `in` is written */
    int64_t in_progress_at; /* last time the child took stdin bytes (or the buffer crossed STDIN_HIGH) */
    int64_t timeout_at;    /* 0 = none */
    int timed_out;
    int64_t grace_at;      /* set when reaped: EXIT at the latest then, even if a pipe is still held */
    int idx_out, idx_err, idx_in;
    char marker[48];       /* value of BERTH_RUN; also the run's name for ATTACH */
    struct buf kept;       /* detached: output records (u8 type, u32 len, data), oldest first, for a later ATTACH */
    uint64_t dropped;      /* detached: output bytes dropped (oldest first) to stay within the bounds */
    int done;              /* ended while detached: pipes closed, status kept until ATTACH collects it */
};

static struct proc *g_procs;
static int g_nprocs;
static size_t g_kept_total; /* bytes in every run's `kept` together (bounded by DETACHED_TOTAL) */
static char g_rbuf[OUT_CHUNK];

static struct rlimit g_nofile; /* the limit we were started with; runs get it back */

/* 1024 runs use up to 3 pipes each: raise our own descriptor limit, but not the runs' */
void exec_init(void) {
    if (getrlimit(RLIMIT_NOFILE, &g_nofile) < 0) return;
    struct rlimit raised = g_nofile;
    raised.rlim_cur = raised.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) < 0) logmsg("raising RLIMIT_NOFILE: %s", strerror(errno));
}

int exec_count(void) { return g_nprocs; }

/*
 * BAP/3 has no window for STDIN, so the agent's only flow control is to stop reading the host stream: the host's
 * writes then block, which is the back-pressure a slow consumer needs. A child that stops reading altogether must
 * not wedge the session, so after STDIN_STALL_MS without progress its bytes are buffered instead (up to
 * STDIN_BUF_MAX) and the host is read again.
 */
int exec_stdin_blocking(int64_t now) {
    for (struct proc *p = g_procs; p; p = p->next)
        if (p->attached && p->fd_in >= 0 && p->in.len >= STDIN_HIGH && now - p->in_progress_at < STDIN_STALL_MS) return 1;
    return 0;
}

static struct proc *find_chan(uint32_t chan) {
    for (struct proc *p = g_procs; p; p = p->next)
        if (p->attached && p->chan == chan) return p;
    return NULL;
}

int exec_chan_busy(uint32_t chan) { return find_chan(chan) != NULL; }

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static void close_stdin(struct proc *p) {
    close_fd(&p->fd_in);
    buf_free(&p->in);
    p->in_close_pending = 0;
}

static void send_exit(struct proc *p) {
    unsigned char e[9];
    int code = WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1;
    int sig = WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0;
    put_u32(e, (uint32_t)code);
    put_u32(e + 4, (uint32_t)sig);
    e[8] = (unsigned char)(p->timed_out ? 1 : 0);
    if (!g_exit_left) {
        send_frame(T_EXIT, p->chan, e, sizeof e);
        return;
    }
    /* CAP_EXIT_LEFT: u32 total, u32 listed, listed x (u32 pid, str command) follow */
    unsigned char x[9 + LEFT_REPORT];
    memcpy(x, e, sizeof e);
    size_t n = sizeof e;
    if (p->left && p->left_len >= 8) {
        memcpy(x + n, p->left, p->left_len);
        n += p->left_len;
    } else {
        memset(x + n, 0, 8);
        n += 8;
    }
    send_frame(T_EXIT, p->chan, x, n);
}

/* Checks the run init's report (it is ours, but runs in the run's namespace: trust its shape no further than needed)
 * and keeps it for EXIT. */
static void keep_left(struct proc *p, const unsigned char *b, size_t n) {
    struct rd r = {b, n, 0};
    uint32_t total, listed;
    if (rd_u32(&r, &total) < 0 || rd_u32(&r, &listed) < 0 || listed > LEFT_LISTED || listed > total) return;
    for (uint32_t i = 0; i < listed; i++) {
        uint32_t pid, len;
        if (rd_u32(&r, &pid) < 0 || pid == 0 || rd_u32(&r, &len) < 0 || len > LEFT_COMMAND || len > r.len - r.off) return;
        r.off += len;
    }
    if (r.off != n || !(p->left = malloc(n))) return;
    memcpy(p->left, b, n);
    p->left_len = n;
}

static void free_kept(struct proc *p) {
    g_kept_total -= p->kept.len;
    buf_free(&p->kept);
    p->dropped = 0;
}

static void free_proc(struct proc *p) {
    free_kept(p);
    free(p->left);
    for (struct proc **pp = &g_procs; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    g_nprocs--;
    free(p);
}

/*
 * The run is over: sends EXIT and frees it if a host knows its channel; a detached run keeps its status (and the
 * output kept for it) until a host ATTACHes to collect them, or until the runs table is full (evict_done).
 */
static void finish(struct proc *p) {
    /* closing the read ends makes a background process that still holds them get EPIPE/SIGPIPE (spec) */
    close_fd(&p->fd_out);
    close_fd(&p->fd_err);
    close_fd(&p->fd_status);
    close_stdin(p);
    if (!p->attached) {
        p->done = 1;
        return;
    }
    send_exit(p);
    free_proc(p);
}

static void maybe_finish(struct proc *p) {
    if (!p->done && p->reaped && p->fd_out < 0 && p->fd_err < 0) finish(p);
}

/* Frees the run that ended detached longest ago (the list is newest first); returns whether there was one. */
static int evict_done(void) {
    struct proc *last = NULL;
    for (struct proc *p = g_procs; p; p = p->next)
        if (p->done) last = p;
    if (!last) return 0;
    logmsg("run %s ended detached and was never attached; forgetting it (runs table full)", last->marker);
    free_proc(last);
    return 1;
}

/*
 * Output of a detached run, kept for a later ATTACH: the newest DETACHED_KEEP bytes per run, DETACHED_TOTAL for all
 * runs together. Older records are dropped first and counted in `dropped`, which ATTACHED reports.
 */
static void keep_output(struct proc *p, uint8_t type, const void *data, size_t n) {
    size_t rec = 5 + n;
    while (p->kept.len > 0 && (p->kept.len + rec > DETACHED_KEEP || g_kept_total + rec > DETACHED_TOTAL)) {
        const unsigned char *h = p->kept.data + p->kept.head;
        size_t len = ((size_t)h[1] << 24) | ((size_t)h[2] << 16) | ((size_t)h[3] << 8) | h[4];
        buf_consume(&p->kept, 5 + len);
        g_kept_total -= 5 + len;
        p->dropped += len;
    }
    unsigned char hdr[5];
    hdr[0] = type;
    put_u32(hdr + 1, (uint32_t)n);
    if (p->kept.len + rec > DETACHED_KEEP || g_kept_total + rec > DETACHED_TOTAL) {
        p->dropped += n;
        return;
    }
    size_t before = p->kept.len;
    if (buf_append(&p->kept, hdr, 5) < 0 || buf_append(&p->kept, data, n) < 0) {
        p->kept.len = before; /* no half record */
        p->dropped += n;
        return;
    }
    g_kept_total += rec;
}

static void output(struct proc *p, uint8_t type, const void *data, size_t n) {
    if (p->attached) send_frame(type, p->chan, data, n);
    else keep_output(p, type, data, n);
}

/* ---------------------------------------------------------------- process tree */

struct pidset {
    pid_t *v;
    size_t n, cap;
};

static int pidset_has(const struct pidset *s, pid_t pid) {
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == pid) return 1;
    return 0;
}

static void pidset_add(struct pidset *s, pid_t pid) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        pid_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) return; /* out of memory: the member is missed; nothing better to do without failing the signal */
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = pid;
}

/* ppid and session of a process from /proc/PID/stat; comm may contain ')' so parse after the last one */
static int read_stat(pid_t pid, pid_t *ppid, pid_t *sid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "%d/stat", pid);
    int fd = proc_open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *r = strrchr(buf, ')');
    if (!r) return -1;
    char state;
    int pp, pg, s;
    if (sscanf(r + 1, " %c %d %d %d", &state, &pp, &pg, &s) != 4) return -1;
    *ppid = pp;
    *sid = s;
    return 0;
}

/*
 * Which run a process belongs to, for attributing an egress connection to it (spec: TUNNEL_OPEN exec). Only what a
 * process cannot forge counts: its parent chain (a run's started process, unreaped so its pid cannot be reused, is an
 * ancestor or the process itself) or its session id (the started process is a session leader; setsid() can leave a
 * session but never join another). The BERTH_RUN marker is not used here: any process can put any string in its
 * environment. A daemon that left both is attributed to no run.
 */
static struct proc *live_run(pid_t pid) {
    for (struct proc *p = g_procs; p; p = p->next)
        if (p->attached && !p->reaped && p->pid == pid) return p;
    return NULL;
}

uint32_t exec_owner(pid_t pid) {
    pid_t cur = pid, first_sid = 0;
    for (int depth = 0; depth < 128 && cur > 1; depth++) {
        struct proc *p = live_run(cur);
        if (p) return p->chan;
        pid_t ppid, sid;
        if (read_stat(cur, &ppid, &sid) < 0) return 0;
        if (depth == 0) first_sid = sid;
        cur = ppid;
    }
    struct proc *p = first_sid > 1 ? live_run(first_sid) : NULL;
    return p ? p->chan : 0;
}

/* Whether the process's initial environment holds exactly the entry `needle` ("BERTH_RUN=..."). */
static int environ_has(pid_t pid, const char *needle) {
    static char env[256 * 1024];
    char path[64];
    snprintf(path, sizeof path, "%d/environ", pid);
    int fd = proc_open(path, O_RDONLY);
    if (fd < 0) return 0;
    size_t len = 0;
    ssize_t n;
    while (len < sizeof env - 1 && (n = read(fd, env + len, sizeof env - 1 - len)) > 0) len += (size_t)n;
    close(fd);
    env[len] = 0;
    size_t nl = strlen(needle);
    for (size_t i = 0; i < len;) {
        size_t el = strnlen(env + i, len - i);
        if (el == nl && memcmp(env + i, needle, nl) == 0) return 1;
        i += el + 1;
    }
    return 0;
}

/*
 * Collects the run's tree and freezes every member with SIGSTOP, repeating the scan until it finds nothing new
 * (a member may have forked between scan and stop; a stopped process cannot fork any more).
 */
static void collect_and_stop(struct proc *p, struct pidset *m) {
    char needle[64];
    snprintf(needle, sizeof needle, "BERTH_RUN=%s", p->marker);
    pid_t self = getpid();
    if (!p->reaped) {
        /* the pid cannot be reused before we reap it, so pid and session id identify this run only */
        pidset_add(m, p->pid);
        kill(p->pid, SIGSTOP);
    }
    for (int round = 0; round < 16; round++) {
        size_t before = m->n;
        DIR *d = proc_opendir(".");
        if (!d) return;
        struct dirent *de;
        while ((de = readdir(d))) {
            char *end;
            long v = strtol(de->d_name, &end, 10);
            if (*end || v <= 1 || v == self) continue;
            pid_t pid = (pid_t)v, ppid, sid;
            if (pidset_has(m, pid) || read_stat(pid, &ppid, &sid) < 0) continue;
            int member = pidset_has(m, ppid) || (!p->reaped && sid == p->pid) || environ_has(pid, needle);
            if (member) {
                kill(pid, SIGSTOP);
                pidset_add(m, pid);
            }
        }
        closedir(d);
        if (m->n == before) break;
    }
}

static void signal_tree(struct proc *p, int sig) {
    struct pidset m = {0};
    collect_and_stop(p, &m);
    for (size_t i = 0; i < m.n; i++) kill(m.v[i], sig);
    if (sig != SIGSTOP)
        for (size_t i = 0; i < m.n; i++) kill(m.v[i], SIGCONT);
    free(m.v);
}

/* ---------------------------------------------------------------- EXEC */

static void free_strv(char **v) {
    if (!v) return;
    for (char **s = v; *s; s++) free(*s);
    free(v);
}

/* strlist into a NULL-terminated vector with `extra` free slots before the NULL */
static int rd_strv(struct rd *r, char ***out, size_t extra) {
    uint32_t count;
    *out = NULL;
    if (rd_u32(r, &count) < 0) return -1;
    if (count > rd_left(r) / 4) return -1; /* each str needs at least its u32 length: bounds the allocation */
    char **v = calloc((size_t)count + extra + 1, sizeof *v);
    if (!v) return -1;
    for (uint32_t i = 0; i < count; i++) {
        if (rd_cstr(r, &v[i]) < 0) {
            free_strv(v);
            return -1;
        }
    }
    *out = v;
    return 0;
}

static void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* In the child between fork and exec. Only async-signal-safe calls plus what execvp needs. */
struct child_args {
    const char *cwd;
    char **argv, **envp;
    int in_r, out_w, err_w, st_w;
};

static void child(const char *cwd, char **argv, char **envp, int in_r, int out_w, int err_w, int st_w);

static void child_trampoline(void *a) {
    struct child_args *c = a;
    child(c->cwd, c->argv, c->envp, c->in_r, c->out_w, c->err_w, c->st_w);
}

static void child(const char *cwd, char **argv, char **envp, int in_r, int out_w, int err_w, int st_w) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    if (chdir(cwd) < 0) {
        unsigned char msg[5] = {'C'};
        put_u32(msg + 1, (uint32_t)errno);
        (void)!write(st_w, msg, sizeof msg);
        _exit(126);
    }
    (void)!write(st_w, "K", 1);
    if (in_r < 0) in_r = open("/dev/null", O_RDONLY);
    if (in_r < 0 || dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) _exit(127);
    /* EXEC_TTY: the terminal is stdin, stdout and stderr; it becomes the new session's controlling terminal, so the
     * command is its foreground process group (^C is SIGINT, a resize is SIGWINCH, /dev/tty opens) */
    if (isatty(0) && ioctl(0, TIOCSCTTY, 0) < 0) _exit(127);
    /* nothing of the agent's may leak into the run, even an fd someone forgot to open with O_CLOEXEC */
    close_from(3);
    umask(022);
    setrlimit(RLIMIT_NOFILE, &g_nofile);
    environ = envp; /* execvp searches the run's own PATH, as the spec says */
    if (confine_command() < 0) {
        dprintf(2, "berth-agent: confining the run: %s\n", strerror(errno));
        _exit(126);
    }
    execvp(argv[0], argv);
    dprintf(2, "berth-agent: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/*
 * EXEC_TTY: a pseudo-terminal of cols x rows. The child gets the terminal side as stdin, stdout and stderr (in[0],
 * out[1], err[1] are three descriptors of it; the child makes it its controlling terminal); the agent reads the master
 * as stdout (out[0]) and writes input to a second descriptor of it (in[1]). There is no stderr stream: a terminal
 * has one. Returns -1 with errno set.
 */
static int open_tty(uint16_t cols, uint16_t rows, int in[2], int out[2], int err[2]) {
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0) return -1;
    char name[64];
    struct winsize ws = {.ws_row = rows, .ws_col = cols};
    if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof name) != 0 || ioctl(m, TIOCSWINSZ, &ws) < 0) {
        int e = errno;
        close(m);
        errno = e;
        return -1;
    }
    int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) {
        int e = errno;
        close(m);
        errno = e;
        return -1;
    }
    in[1] = fcntl(m, F_DUPFD_CLOEXEC, 3);
    in[0] = s;
    out[0] = m;
    out[1] = fcntl(s, F_DUPFD_CLOEXEC, 3);
    err[1] = fcntl(s, F_DUPFD_CLOEXEC, 3);
    if (in[1] < 0 || out[1] < 0 || err[1] < 0) return -1; /* the caller closes what is open */
    return 0;
}

static void do_exec(uint32_t chan, struct rd *r) {
    uint32_t flags, timeout_ms;
    char *cwd = NULL, **argv = NULL, **envp = NULL;
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1}, pst[2] = {-1, -1}, pex[2] = {-1, -1};
    uint16_t cols = 0, rows = 0;
    if (rd_u32(r, &flags) < 0 || rd_u32(r, &timeout_ms) < 0 || rd_cstr(r, &cwd) < 0 || rd_strv(r, &argv, 0) < 0 ||
        rd_strv(r, &envp, 1) < 0 || ((flags & EXEC_TTY) && (rd_u16(r, &cols) < 0 || rd_u16(r, &rows) < 0)) ||
        rd_left(r) != 0) {
        protocol_error("malformed EXEC payload on channel %u (%zu bytes)", chan, r->len);
        goto out;
    }
    if (!argv[0]) {
        send_error(chan, EINVAL, "argv is empty");
        goto out;
    }
    if (flags & ~(EXEC_STDIN | EXEC_TTY)) {
        send_error(chan, EINVAL, "unknown EXEC flags 0x%x", flags);
        goto out;
    }
    if ((flags & EXEC_TTY) && (cols < 1 || rows < 1 || cols > TTY_MAX || rows > TTY_MAX)) {
        send_error(chan, EINVAL, "terminal size %ux%u is outside 1..%u", cols, rows, TTY_MAX);
        goto out;
    }
    if (g_nprocs >= MAX_RUNS && !evict_done()) {
        send_error(chan, EAGAIN, "too many runs (%d)", g_nprocs);
        goto out;
    }
    struct proc *p = calloc(1, sizeof *p);
    if (!p) {
        send_error(chan, ENOMEM, "out of memory");
        goto out;
    }
    snprintf(p->marker, sizeof p->marker, "%s-%u", g_session_tag, chan);
    size_t ne = 0;
    while (envp[ne]) ne++;
    if (asprintf(&envp[ne], "BERTH_RUN=%s", p->marker) < 0) envp[ne] = NULL;
    if ((flags & EXEC_TTY) && open_tty(cols, rows, pin, pout, perr) < 0) {
        send_error(chan, errno ? errno : EIO, "opening a terminal: %s", strerror(errno));
        free(p);
        goto out;
    }
    if (!envp[ne] || (!(flags & EXEC_TTY) && (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0)) || pipe2(pst, O_CLOEXEC) < 0 ||
        ((flags & EXEC_STDIN) && !(flags & EXEC_TTY) && pipe2(pin, O_CLOEXEC) < 0)) {
        send_error(chan, errno ? errno : ENOMEM, "creating pipes: %s", strerror(errno));
        free(p);
        goto out;
    }
    if (g_isolate_runs && pipe2(pex, O_CLOEXEC) < 0) {
        send_error(chan, errno, "creating pipes: %s", strerror(errno));
        free(p);
        goto out;
    }
    pid_t pid = g_isolate_runs ? confine_clone() : fork();
    if (pid < 0) {
        send_error(chan, errno, "fork: %s", strerror(errno));
        free(p);
        goto out;
    }
    if (pid == 0) {
        if (!g_isolate_runs) child(cwd, argv, envp, pin[0], pout[1], perr[1], pst[1]);
        struct child_args ca = {cwd, argv, envp, pin[0], pout[1], perr[1], pst[1]};
        close(pex[0]);
        confine_init(pex[1], pst[1], child_trampoline, &ca);
    }
    close_fd(&pex[1]);
    close_fd(&pin[0]);
    close_fd(&pout[1]);
    close_fd(&perr[1]);
    close_fd(&pst[1]);
    /* the child only does setsid+chdir before answering, so this blocking read is short */
    unsigned char st[5];
    size_t got = 0;
    while (got < 1) {
        ssize_t n = read(pst[0], st, sizeof st);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got = (size_t)n;
        while ((st[0] == 'C' || st[0] == 'R') && got < 5) {
            n = read(pst[0], st + got, 5 - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += (size_t)n;
        }
    }
    if (got == 0 || st[0] != 'K') {
        int e = EIO;
        if (got == 5 && (st[0] == 'C' || st[0] == 'R'))
            e = (int)(((uint32_t)st[1] << 24) | ((uint32_t)st[2] << 16) | ((uint32_t)st[3] << 8) | st[4]);
        /* reap it here: it never became a run, so the SIGCHLD loop must not see it */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        if (got == 0) send_error(chan, EIO, "child for %s died before exec", argv[0]);
        else if (st[0] == 'R') send_error(chan, e, "confining the run (its cgroup, mounts): %s", strerror(e));
        else send_error(chan, e, "cwd %s: %s", cwd, strerror(e));
        close_fd(&pin[1]);
        close_fd(&pout[0]);
        close_fd(&perr[0]);
        free(p);
        goto out;
    }
    p->chan = chan;
    p->attached = 1;
    p->pid = pid;
    p->fd_out = pout[0];
    p->fd_err = perr[0];
    p->fd_in = pin[1];
    p->fd_status = pex[0];
    p->tty = (flags & EXEC_TTY) != 0;
    pin[1] = pout[0] = perr[0] = pex[0] = -1;
    set_nonblock(p->fd_out);
    if (p->fd_err >= 0) set_nonblock(p->fd_err);
    if (p->fd_in >= 0) set_nonblock(p->fd_in);
    p->idx_out = p->idx_err = p->idx_in = -1;
    if (timeout_ms) p->timeout_at = now_ms() + timeout_ms;
    p->next = g_procs;
    g_procs = p;
    g_nprocs++;
    unsigned char sp[4];
    put_u32(sp, (uint32_t)pid);
    send_frame(T_STARTED, chan, sp, sizeof sp);
out:
    close_fd(&pex[0]);
    close_fd(&pex[1]);
    close_fd(&pst[0]);
    close_fd(&pin[0]);
    close_fd(&pin[1]);
    close_fd(&pout[0]);
    close_fd(&pout[1]);
    close_fd(&perr[0]);
    close_fd(&perr[1]);
    free(cwd);
    free_strv(argv);
    free_strv(envp);
}

static void pump_stdin(struct proc *p) {
    while (p->fd_in >= 0 && p->in.len > 0) {
        ssize_t n = write(p->fd_in, p->in.data + p->in.head, p->in.len);
        if (n > 0) {
            buf_consume(&p->in, (size_t)n);
            p->in_progress_at = now_ms();
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        close_stdin(p); /* EPIPE: the child closed its stdin; the rest is of no use */
        return;
    }
    if (p->fd_in >= 0 && p->in.len == 0 && p->in_close_pending) close_stdin(p);
}

/*
 * ATTACH: a host of a later session takes over a run of an earlier one by its BERTH_RUN marker. ATTACHED carries the
 * pid and how many output bytes were dropped while detached; the kept output follows in order, then EXIT if the run
 * already ended, else the run streams on this channel like a fresh EXEC (stdin stays closed).
 */
static void do_attach(uint32_t chan, struct rd *r) {
    char *run = NULL;
    if (rd_cstr(r, &run) < 0 || rd_left(r) != 0) {
        protocol_error("malformed ATTACH payload on channel %u (%zu bytes)", chan, r->len);
        free(run);
        return;
    }
    struct proc *p = NULL;
    for (struct proc *q = g_procs; q; q = q->next)
        if (strcmp(q->marker, run) == 0) p = q;
    if (!p) {
        send_error(chan, ENOENT, "no run %s in this agent (it ended and was forgotten, or the agent restarted)", run);
    } else if (p->attached) {
        send_error(chan, EBUSY, "run %s is attached to channel %u of this session", run, p->chan);
    } else {
        p->chan = chan;
        p->attached = 1;
        /* a terminal run takes input again on its new channel: the terminal stayed open, only the host changed */
        if (p->tty && !p->done && p->fd_out >= 0 && p->fd_in < 0) {
            p->fd_in = fcntl(p->fd_out, F_DUPFD_CLOEXEC, 3);
            if (p->fd_in >= 0) set_nonblock(p->fd_in);
        }
        unsigned char a[12];
        put_u32(a, (uint32_t)p->pid);
        put_u64(a + 4, p->dropped);
        send_frame(T_ATTACHED, chan, a, sizeof a);
        while (p->kept.len > 0) {
            const unsigned char *h = p->kept.data + p->kept.head;
            size_t len = ((size_t)h[1] << 24) | ((size_t)h[2] << 16) | ((size_t)h[3] << 8) | h[4];
            send_frame(h[0], chan, h + 5, len);
            buf_consume(&p->kept, 5 + len);
            g_kept_total -= 5 + len;
        }
        free_kept(p);
        if (p->done) {
            send_exit(p);
            free_proc(p);
        }
    }
    free(run);
}

int exec_handle(uint8_t type, uint32_t chan, struct rd *r) {
    if (type == T_EXEC) {
        do_exec(chan, r);
        return 0;
    }
    if (type == T_ATTACH) {
        do_attach(chan, r);
        return 0;
    }
    struct proc *p = find_chan(chan);
    if (type == T_STDIN) {
        /* a run that already ended (EXIT crossing STDIN on the wire) or has no stdin pipe: drop the bytes */
        if (!p || p->fd_in < 0) return 0;
        size_t n = rd_left(r);
        if (n == 0 && p->tty) {
            /* end of input on a terminal is its EOF character (^D), as typed: the terminal stays */
            struct termios t;
            unsigned char eof = tcgetattr(p->fd_in, &t) == 0 && t.c_cc[VEOF] ? t.c_cc[VEOF] : 4;
            if (buf_append(&p->in, &eof, 1) < 0) return 0;
        } else if (n == 0) {
            p->in_close_pending = 1;
        } else if (p->in.len + n > STDIN_BUF_MAX) {
            logmsg("run %s: child does not read stdin, %zu bytes buffered; closing its stdin", p->marker, p->in.len);
            close_stdin(p);
            return 0;
        } else {
            int was_below = p->in.len < STDIN_HIGH;
            if (buf_append(&p->in, r->p + r->off, n) < 0) {
                logmsg("run %s: out of memory buffering stdin; closing its stdin", p->marker);
                close_stdin(p);
                return 0;
            }
            if (was_below && p->in.len >= STDIN_HIGH) p->in_progress_at = now_ms(); /* the stall clock starts now */
        }
        pump_stdin(p);
        return 0;
    }
    if (type == T_RESIZE) {
        uint16_t cols, rows;
        if (rd_u16(r, &cols) < 0 || rd_u16(r, &rows) < 0 || rd_left(r) != 0) {
            protocol_error("malformed RESIZE on channel %u (%zu bytes)", chan, r->len);
            return -1;
        }
        /* a run that ended, has no terminal, or a size out of range: nothing to do (the host checks sizes first) */
        struct winsize ws = {.ws_row = rows, .ws_col = cols};
        if (p && p->tty && p->fd_out >= 0 && cols >= 1 && rows >= 1 && cols <= TTY_MAX && rows <= TTY_MAX)
            ioctl(p->fd_out, TIOCSWINSZ, &ws); /* the kernel sends SIGWINCH to the terminal's foreground group */
        return 0;
    }
    /* T_SIGNAL */
    uint32_t signo;
    if (rd_u32(r, &signo) < 0 || rd_left(r) != 0 || signo < 1 || signo > 64) {
        protocol_error("malformed SIGNAL on channel %u (%zu bytes, signo %u)", chan, r->len, rd_left(r) == 0 ? signo : 0);
        return -1;
    }
    if (p) signal_tree(p, (int)signo);
    return 0;
}

void exec_salvage(uint8_t type, uint32_t chan, const unsigned char *data, size_t n) {
    struct proc *p = find_chan(chan);
    if (p) keep_output(p, type, data, n);
}

void exec_detach_all(void) {
    for (struct proc *p = g_procs; p; p = p->next) {
        p->attached = 0;
        close_stdin(p); /* no host can feed it any more */
    }
}

int exec_poll_fill(struct pollfd *pfd, int max, int backpressure) {
    int n = 0;
    for (struct proc *p = g_procs; p; p = p->next) {
        p->idx_out = p->idx_err = p->idx_in = -1;
        if (n + 3 > max) continue;
        /* detached runs are always drained (into their bounded `kept` output) so they never block on a full pipe */
        int rd = !backpressure || !p->attached;
        if (p->fd_out >= 0 && rd) {
            p->idx_out = n;
            pfd[n++] = (struct pollfd){.fd = p->fd_out, .events = POLLIN};
        }
        if (p->fd_err >= 0 && rd) {
            p->idx_err = n;
            pfd[n++] = (struct pollfd){.fd = p->fd_err, .events = POLLIN};
        }
        if (p->fd_in >= 0 && p->in.len > 0) {
            p->idx_in = n;
            pfd[n++] = (struct pollfd){.fd = p->fd_in, .events = POLLOUT};
        }
    }
    return n;
}

static void pump_out(struct proc *p, int *fd, uint8_t type) {
    ssize_t n = read(*fd, g_rbuf, sizeof g_rbuf);
    if (n > 0) {
        output(p, type, g_rbuf, (size_t)n);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    close_fd(fd); /* EOF (or a read error, which ends the stream the same way) */
}

/*
 * The grace is over but what the started process wrote before it ended may still sit in a pipe (the loop may not
 * have polled it since, e.g. right after a slow host caught up). Read what is there now, without waiting; a bound
 * keeps a background process that writes continuously from holding us here.
 */
static void drain_final(struct proc *p) {
    for (int i = 0; i < 16 && p->fd_out >= 0; i++) {
        ssize_t n = read(p->fd_out, g_rbuf, sizeof g_rbuf);
        if (n <= 0) break;
        output(p, T_STDOUT, g_rbuf, (size_t)n);
    }
    for (int i = 0; i < 16 && p->fd_err >= 0; i++) {
        ssize_t n = read(p->fd_err, g_rbuf, sizeof g_rbuf);
        if (n <= 0) break;
        output(p, T_STDERR, g_rbuf, (size_t)n);
    }
}

void exec_poll_handle(struct pollfd *pfd, int n) {
    struct proc *next;
    for (struct proc *p = g_procs; p; p = next) {
        next = p->next;
        if (p->idx_out >= 0 && p->idx_out < n && pfd[p->idx_out].revents) pump_out(p, &p->fd_out, T_STDOUT);
        if (p->idx_err >= 0 && p->idx_err < n && pfd[p->idx_err].revents) pump_out(p, &p->fd_err, T_STDERR);
        if (p->idx_in >= 0 && p->idx_in < n && pfd[p->idx_in].revents) pump_stdin(p);
        p->idx_out = p->idx_err = p->idx_in = -1;
        maybe_finish(p);
    }
}

void exec_on_sigchld(void) {
    int status;
    pid_t pid;
    /* reaps everything: our runs, and orphans reparented to us as PID 1 or subreaper */
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (struct proc *p = g_procs; p; p = p->next) {
            if (p->pid == pid && !p->reaped) {
                p->reaped = 1;
                p->status = status;
                if (p->fd_status >= 0) {
                    /* a confined run: the init exited 0; the command's own status came first on the pipe */
                    unsigned char b[LEFT_REPORT + 1];
                    ssize_t n = read(p->fd_status, b, sizeof b);
                    if (n >= 4) p->status = (int)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3]);
                    if (n > 4 && (size_t)n <= LEFT_REPORT) keep_left(p, b + 4, (size_t)n - 4);
                    close_fd(&p->fd_status);
                }
                p->grace_at = now_ms() + DRAIN_GRACE_MS;
                maybe_finish(p);
                break;
            }
        }
    }
}

int64_t exec_timers(int64_t now) {
    int64_t next = -1;
    struct proc *nx;
    for (struct proc *p = g_procs; p; p = nx) {
        nx = p->next;
        if (p->timeout_at && !p->reaped) {
            if (now >= p->timeout_at) {
                p->timed_out = 1;
                p->timeout_at = 0;
                signal_tree(p, SIGKILL);
            } else if (next < 0 || p->timeout_at < next) {
                next = p->timeout_at;
            }
        }
        if (p->attached && p->fd_in >= 0 && p->in.len >= STDIN_HIGH && now - p->in_progress_at < STDIN_STALL_MS) {
            /* wake up when the stall window ends, to read the host again */
            int64_t t = p->in_progress_at + STDIN_STALL_MS;
            if (next < 0 || t < next) next = t;
        }
        if (p->reaped && !p->done) {
            if (now >= p->grace_at) {
                if (p->attached && g_outq.len >= OUTQ_HIGH) {
                    /* the pipes were not read while the host was slow: the grace only runs while we drain */
                    p->grace_at = now + DRAIN_GRACE_MS;
                } else {
                    drain_final(p);
                    finish(p);
                    continue;
                }
            }
            if (next < 0 || p->grace_at < next) next = p->grace_at;
        }
    }
    return next;
}
