/*
 * Berth guest agent: main loop, host stream and session handling.
 * Protocol: tool-schemas/agent-protocol.md (BAP/3). Design notes: README.md next to this file.
 *
 * One thread, one poll() loop. Nothing blocks for long except local file I/O and the fork/chdir handshake.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef BERTH_BUILD
#define BERTH_BUILD "berth-agent/1"
#endif

#define MAX_POLL 8192
#define RECONNECT_MIN_MS 10
#define RECONNECT_MAX_MS 2000
#define DEVICE_IDLE_MS 100

enum mode { MODE_NONE, MODE_CONNECT, MODE_DEVICE };

int g_session_active;
char g_session_tag[16];
struct buf g_outq;

static enum mode g_mode;
static const char *g_target;          /* socket path or device path */
static int g_hfd = -1;                /* host stream */
static unsigned char *g_in;           /* frame reassembly: one max frame plus read slack */
static size_t g_in_len;
static const size_t g_in_cap = HDR_LEN + MAX_PAYLOAD + 65536;
static int g_proto_err;               /* set while dispatching; the session ends after the current frame */
static int64_t g_next_connect;        /* connect mode: earliest next attempt */
static int g_backoff = RECONNECT_MIN_MS;
static int64_t g_dev_idle_until;      /* device mode: host side gone, do not poll (POLLHUP would spin) */
static int g_dev_discard;             /* device mode: after a protocol error, drop input until the host disconnects */
static size_t g_cur_left;             /* bytes of the frame at the head of g_outq not yet written (0: at a boundary) */

int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void logmsg(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* stderr is the console in a VM and a log pipe elsewhere; one write per line keeps lines whole */
    dprintf(2, "berth-agent: %s\n", line);
}

/* ---------------------------------------------------------------- outbound frames */

void send_frame2(uint8_t type, uint32_t chan, const void *a, size_t an, const void *b, size_t bn) {
    if (!g_session_active || g_hfd < 0) return;
    unsigned char hdr[HDR_LEN];
    put_u32(hdr, (uint32_t)(5 + an + bn));
    hdr[4] = type;
    put_u32(hdr + 5, chan);
    if (buf_append(&g_outq, hdr, HDR_LEN) < 0 || buf_append(&g_outq, a, an) < 0 || buf_append(&g_outq, b, bn) < 0) {
        /* a half-queued frame would corrupt the stream: the only safe reaction is to end the session */
        logmsg("out of memory queueing a %zu byte frame; ending session", an + bn);
        g_proto_err = 1;
    }
}

void send_frame(uint8_t type, uint32_t chan, const void *payload, size_t n) { send_frame2(type, chan, payload, n, NULL, 0); }

void send_ok(uint32_t chan, const void *payload, size_t n) { send_frame(T_OK, chan, payload, n); }

void send_error(uint32_t chan, int code, const char *fmt, ...) {
    unsigned char p[8 + 1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf((char *)p + 8, 1024, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > 1023) n = 1023;
    put_u32(p, (uint32_t)code);
    put_u32(p + 4, (uint32_t)n);
    send_frame(T_ERROR, chan, p, 8 + (size_t)n);
}

void protocol_error(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    logmsg("protocol error from host, ending session: %s", msg);
    g_proto_err = 1;
}

/* ---------------------------------------------------------------- session lifecycle */

static void new_session_tag(void) {
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = (uint32_t)now_ms() ^ ((uint32_t)getpid() << 16);
    static uint32_t counter;
    counter++;
    /* random part: a marker of a previous agent incarnation or session never matches a new run */
    snprintf(g_session_tag, sizeof g_session_tag, "%08x", r ^ (counter * 0x9e3779b9u));
}

/*
 * Ends the session: channels are forgotten, runs keep going. Queued frames of the old session are dropped, except
 * the rest of a frame already partly written: cutting it would leave the peer with a torn frame.
 * Input is left alone: this also runs from inside dispatch() for a HELLO, while g_in is being parsed.
 */
static void end_session(void) {
    if (g_session_active) logmsg("session %s ended", g_session_tag);
    g_session_active = 0;
    /* run output queued and never sent (e.g. a restored microVM wrote before the host's new HELLO) is not lost: it
     * goes back to its run, kept for an ATTACH, before the runs are detached */
    size_t off = g_outq.head + g_cur_left, end = g_outq.head + g_outq.len;
    while (end - off >= HDR_LEN) {
        const unsigned char *h = g_outq.data + off;
        size_t len = ((size_t)h[0] << 24) | ((size_t)h[1] << 16) | ((size_t)h[2] << 8) | h[3];
        if (len < 5 || end - off < 4 + len) break;
        uint32_t chan = ((uint32_t)h[5] << 24) | ((uint32_t)h[6] << 16) | ((uint32_t)h[7] << 8) | h[8];
        if ((h[4] == T_STDOUT || h[4] == T_STDERR) && !(chan & 0x80000000u)) exec_salvage(h[4], chan, h + HDR_LEN, len - 5);
        off += 4 + len;
    }
    exec_detach_all();
    tunnel_reset_all();
    ports_reset_all();
    if (g_outq.len > g_cur_left) g_outq.len = g_cur_left;
}

/* The stream itself is gone: nothing queued or half-read belongs to the next one. */
static void drop_stream_state(void) {
    buf_consume(&g_outq, g_outq.len);
    g_cur_left = 0;
    g_in_len = 0;
}

static void host_down(const char *why) {
    end_session();
    drop_stream_state();
    if (g_hfd >= 0) {
        if (g_mode == MODE_CONNECT) {
            logmsg("host stream closed (%s); reconnecting", why);
            close(g_hfd);
            g_hfd = -1;
            g_next_connect = now_ms() + g_backoff;
        } else {
            /* virtio-serial: keep the port open; the host reconnects (e.g. after a restore) and sends HELLO */
            g_dev_idle_until = now_ms() + DEVICE_IDLE_MS;
        }
    }
}

static void try_connect(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        logmsg("socket: %s", strerror(errno));
        g_next_connect = now_ms() + RECONNECT_MAX_MS;
        return;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strncpy(sa.sun_path, g_target, sizeof sa.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        g_next_connect = now_ms() + g_backoff;
        g_backoff = g_backoff * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : g_backoff * 2;
        return;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    g_hfd = fd;
    g_in_len = 0;
    logmsg("connected to %s", g_target);
}

static int open_device(void) {
    int fd = open(g_target, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        logmsg("open %s: %s (retrying)", g_target, strerror(errno));
        return -1;
    }
    if (isatty(fd)) {
        /* a console (hvc, or a pty in tests) must not cook the binary stream: no echo, no CR/LF mapping, no ^C */
        struct termios t;
        if (tcgetattr(fd, &t) == 0) {
            cfmakeraw(&t);
            if (tcsetattr(fd, TCSANOW, &t) < 0) logmsg("tcsetattr %s: %s", g_target, strerror(errno));
        }
    }
    g_hfd = fd;
    return 0;
}

static void handle_hello(uint32_t chan, struct rd *r) {
    uint16_t version;
    uint32_t caps;
    char *name = NULL;
    if (rd_u16(r, &version) < 0 || rd_u32(r, &caps) < 0 || rd_cstr(r, &name) < 0) {
        protocol_error("malformed HELLO payload (%zu bytes)", r->len);
        return;
    }
    /* a HELLO always starts a new session: the host reconnected or restored a VM; old channels are void */
    if (g_session_active) end_session();
    new_session_tag();
    g_session_active = 1;
    g_backoff = RECONNECT_MIN_MS;
    logmsg("session %s: host '%s' version %u caps 0x%x", g_session_tag, name, version, caps);
    free(name);
    /* tunnel flow control only when the host offers it: an older host never sends WINDOW on a tunnel */
    g_tunnel_windows = tunnel_enabled() && (caps & CAP_TUNNEL_WINDOW) != 0;
    /* EXIT's list of processes a run left behind, only to a host that reads it */
    g_exit_left = g_isolate_runs && (caps & CAP_EXIT_LEFT) != 0;
    uint32_t mine = CAP_EXEC | CAP_FILES | CAP_GUEST_OPS | (tunnel_enabled() ? CAP_TUNNEL : 0) |
                    (g_isolate_runs ? CAP_CONFINED_RUNS : 0) | CAP_PORTS | CAP_ATTACH | (g_tunnel_windows ? CAP_TUNNEL_WINDOW : 0) |
                    (g_exit_left ? CAP_EXIT_LEFT : 0) | CAP_TTY;
    const char *build = BERTH_BUILD;
    size_t bl = strlen(build), tl = strlen(g_session_tag);
    /* u16 version, u32 caps, str name, str session (version 3) */
    unsigned char p[10 + 128 + 4 + sizeof g_session_tag];
    if (bl > 128) bl = 128;
    put_u16(p, PROTO_VERSION);
    put_u32(p + 2, mine);
    put_u32(p + 6, (uint32_t)bl);
    memcpy(p + 10, build, bl);
    put_u32(p + 10 + bl, (uint32_t)tl);
    memcpy(p + 14 + bl, g_session_tag, tl);
    send_frame(T_HELLO, chan, p, 14 + bl + tl);
}

static void dispatch(uint8_t type, uint32_t chan, const unsigned char *payload, size_t n) {
    struct rd r = {payload, n, 0};
    if (type == T_HELLO) {
        handle_hello(chan, &r);
        return;
    }
    if (!g_session_active) {
        protocol_error("frame type 0x%02x on channel %u before HELLO", type, chan);
        return;
    }
    switch (type) {
    case T_PING: {
        uint64_t nonce;
        if (rd_u64(&r, &nonce) < 0 || rd_left(&r) != 0) {
            protocol_error("PING payload must be 8 bytes, got %zu", n);
            return;
        }
        send_frame(T_PONG, chan, payload, 8);
        return;
    }
    case T_EXEC: case T_STDIN: case T_SIGNAL: case T_ATTACH: case T_RESIZE:
    case T_FILE_READ: case T_FILE_WRITE: case T_FILE_LIST:
    case T_SYNC: case T_CLOCK_SET: case T_RNG_SEED:
        if (chan == 0 || (chan & 0x80000000u)) {
            protocol_error("frame type 0x%02x on channel 0x%x, which the host may not use for requests", type, chan);
            return;
        }
        if (type != T_STDIN && type != T_SIGNAL && type != T_RESIZE && (exec_chan_busy(chan) || ports_chan_busy(chan))) {
            protocol_error("frame type 0x%02x on channel %u, which is still in use by a run", type, chan);
            return;
        }
        if (type == T_EXEC || type == T_STDIN || type == T_SIGNAL || type == T_ATTACH || type == T_RESIZE) exec_handle(type, chan, &r);
        else if (type >= T_FILE_READ && type <= T_FILE_LIST) files_handle(type, chan, &r);
        else guest_handle(type, chan, &r);
        return;
    case T_PORT_OPEN:
        if (chan == 0 || (chan & 0x80000000u)) {
            protocol_error("PORT_OPEN on channel 0x%x, which the host may not use for requests", chan);
            return;
        }
        if (exec_chan_busy(chan) || ports_chan_busy(chan)) {
            protocol_error("PORT_OPEN on channel %u, which is still in use", chan);
            return;
        }
        ports_handle(type, chan, &r);
        return;
    case T_WINDOW:
        if (chan & 0x80000000u) {
            tunnel_handle(type, chan, &r); /* a tunnel of this session, flow controlled (CAP_TUNNEL_WINDOW) */
            return;
        }
        if (chan == 0) {
            protocol_error("WINDOW on channel 0x%x, which is not a port stream or tunnel", chan);
            return;
        }
        ports_handle(type, chan, &r);
        return;
    case T_DATA: case T_CLOSE: case T_RESET: case T_ERROR:
        if (!(chan & 0x80000000u)) {
            if (chan != 0 && ports_chan_busy(chan)) {
                ports_handle(type, chan, &r);
                return;
            }
            if (type == T_ERROR || type == T_RESET || type == T_DATA || type == T_CLOSE) {
                /* a port stream we already closed or reset (the frames crossed on the wire), or ERROR: ignore */
                return;
            }
        }
        tunnel_handle(type, chan, &r);
        return;
    default:
        protocol_error("unknown or agent-only frame type 0x%02x on channel %u", type, chan);
    }
}

/* Parses every complete frame in g_in. Lengths are validated before anything depends on them. */
static void process_input(void) {
    size_t off = 0;
    while (!g_proto_err && g_in_len - off >= HDR_LEN) {
        const unsigned char *h = g_in + off;
        uint32_t len = ((uint32_t)h[0] << 24) | ((uint32_t)h[1] << 16) | ((uint32_t)h[2] << 8) | h[3];
        if (len < 5 || len - 5 > MAX_PAYLOAD) {
            protocol_error("frame len %u outside 5..%u", len, MAX_PAYLOAD + 5);
            break;
        }
        if (g_in_len - off < 4 + (size_t)len) break;
        uint32_t chan = ((uint32_t)h[5] << 24) | ((uint32_t)h[6] << 16) | ((uint32_t)h[7] << 8) | h[8];
        dispatch(h[4], chan, h + HDR_LEN, len - 5);
        off += 4 + (size_t)len;
    }
    if (g_proto_err) return;
    memmove(g_in, g_in + off, g_in_len - off);
    g_in_len -= off;
}

static void host_read(void) {
    for (int rounds = 0; rounds < 16 && g_hfd >= 0; rounds++) {
        ssize_t n = read(g_hfd, g_in + g_in_len, g_in_cap - g_in_len);
        if (n > 0) {
            if (g_dev_discard) continue;
            g_in_len += (size_t)n;
            process_input();
            if (g_proto_err) {
                g_proto_err = 0;
                if (g_mode == MODE_DEVICE) {
                    end_session();
                    g_in_len = 0;
                    g_dev_discard = 1; /* the byte stream is out of sync until the host side reconnects */
                } else {
                    host_down("protocol error");
                }
                return;
            }
            if (g_outq.len >= OUTQ_HOST_STOP || exec_stdin_blocking(now_ms())) return;
            continue;
        }
        if (n == 0) {
            g_dev_discard = 0;
            host_down("EOF");
            return;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        g_dev_discard = 0;
        host_down(strerror(errno));
        return;
    }
}

static void host_flush(void) {
    while (g_hfd >= 0 && g_outq.len > 0) {
        ssize_t n = write(g_hfd, g_outq.data + g_outq.head, g_outq.len);
        if (n > 0) {
            /* consume frame by frame so g_cur_left always knows where the next frame boundary is */
            size_t left = (size_t)n;
            while (left > 0) {
                if (g_cur_left == 0) {
                    const unsigned char *h = g_outq.data + g_outq.head;
                    g_cur_left = 4 + (((size_t)h[0] << 24) | ((size_t)h[1] << 16) | ((size_t)h[2] << 8) | h[3]);
                }
                size_t take = left < g_cur_left ? left : g_cur_left;
                buf_consume(&g_outq, take);
                g_cur_left -= take;
                left -= take;
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        host_down(n < 0 ? strerror(errno) : "short write");
        return;
    }
}

/* ---------------------------------------------------------------- --describe */

static void describe(void) {
    static const struct { const char *name; unsigned v; } types[] = {
        {"HELLO", T_HELLO}, {"PING", T_PING}, {"PONG", T_PONG}, {"ERROR", T_ERROR}, {"OK", T_OK},
        {"EXEC", T_EXEC}, {"STARTED", T_STARTED}, {"STDIN", T_STDIN}, {"STDOUT", T_STDOUT},
        {"STDERR", T_STDERR}, {"SIGNAL", T_SIGNAL}, {"EXIT", T_EXIT}, {"ATTACH", T_ATTACH}, {"ATTACHED", T_ATTACHED}, {"RESIZE", T_RESIZE}, {"FILE_READ", T_FILE_READ},
        {"FILE_WRITE", T_FILE_WRITE}, {"FILE_LIST", T_FILE_LIST}, {"SYNC", T_SYNC},
        {"CLOCK_SET", T_CLOCK_SET}, {"RNG_SEED", T_RNG_SEED}, {"TUNNEL_OPEN", T_TUNNEL_OPEN},
        {"DATA", T_DATA}, {"CLOSE", T_CLOSE}, {"RESET", T_RESET},
        {"PORT_OPEN", T_PORT_OPEN}, {"PORT_OPENED", T_PORT_OPENED}, {"WINDOW", T_WINDOW},
    };
    static const struct { const char *name; unsigned v; } flags[] = {
        {"CAP_EXEC", CAP_EXEC}, {"CAP_FILES", CAP_FILES}, {"CAP_TUNNEL", CAP_TUNNEL},
        {"CAP_GUEST_OPS", CAP_GUEST_OPS}, {"CAP_CONFINED_RUNS", CAP_CONFINED_RUNS}, {"CAP_PORTS", CAP_PORTS}, {"CAP_ATTACH", CAP_ATTACH}, {"CAP_TUNNEL_WINDOW", CAP_TUNNEL_WINDOW}, {"CAP_EXIT_LEFT", CAP_EXIT_LEFT}, {"CAP_TTY", CAP_TTY}, {"EXEC_STDIN", EXEC_STDIN}, {"EXEC_TTY", EXEC_TTY}, {"WRITE_TRUNCATE", WRITE_TRUNCATE},
        {"WRITE_APPEND", WRITE_APPEND}, {"WRITE_MKDIRS", WRITE_MKDIRS}, {"KIND_FILE", KIND_FILE},
        {"KIND_DIR", KIND_DIR}, {"KIND_LINK", KIND_LINK}, {"KIND_OTHER", KIND_OTHER},
    };
    /* same notation as the spec tables: message types as 0xNN, flags as 0xN, the two numbers in decimal */
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) printf("%s 0x%02x\n", types[i].name, types[i].v);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) printf("%s 0x%x\n", flags[i].name, flags[i].v);
    printf("VERSION %d\n", PROTO_VERSION);
    printf("MAX_PAYLOAD %u\n", MAX_PAYLOAD);
    printf("PORT_WINDOW %u\n", PORT_WINDOW);
    printf("TUNNEL_WINDOW %u\n", TUNNEL_WINDOW);
    printf("DETACHED_KEEP %u\n", DETACHED_KEEP);
    printf("TTY_MAX %u\n", TTY_MAX);
    printf("LEFT_LISTED %u\n", LEFT_LISTED);
    printf("LEFT_COMMAND %u\n", LEFT_COMMAND);
}

/* ---------------------------------------------------------------- main loop */

static void usage(void) {
    fprintf(stderr,
            "usage: berth-agent --connect unix:PATH [--proxy-port P] [--isolate-runs [--run-cgroup DIR]] [--run-as UID:GID]\n"
            "       berth-agent --device PATH [--proxy-port P] [--isolate-runs [--run-cgroup DIR]] [--run-as UID:GID]\n"
            "       berth-agent --describe\n");
    exit(2);
}

int main(int argc, char **argv) {
    int proxy_port = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--describe")) {
            describe();
            return 0;
        } else if (!strcmp(argv[i], "--connect") && i + 1 < argc) {
            const char *t = argv[++i];
            if (strncmp(t, "unix:", 5) != 0 || strlen(t + 5) == 0 || strlen(t + 5) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
                fprintf(stderr, "berth-agent: --connect wants unix:PATH (path shorter than 108 bytes), got '%s'\n", t);
                return 2;
            }
            g_mode = MODE_CONNECT;
            g_target = t + 5;
        } else if (!strcmp(argv[i], "--run-as") && i + 1 < argc) {
            unsigned long u, g;
            char *end;
            const char *v = argv[++i];
            u = strtoul(v, &end, 10);
            if (end == v || *end != ':' || u > 0xFFFFFFFEul) {
                fprintf(stderr, "berth-agent: --run-as wants UID:GID, got '%s'\n", v);
                return 2;
            }
            const char *gs = end + 1;
            g = strtoul(gs, &end, 10);
            if (end == gs || *end || g > 0xFFFFFFFEul) {
                fprintf(stderr, "berth-agent: --run-as wants UID:GID, got '%s'\n", v);
                return 2;
            }
            g_run_as = u != 0 || g != 0; /* 0:0 is what runs are anyway */
            g_run_uid = (unsigned)u;
            g_run_gid = (unsigned)g;
        } else if (!strcmp(argv[i], "--isolate-runs")) {
            g_isolate_runs = 1;
        } else if (!strcmp(argv[i], "--run-cgroup") && i + 1 < argc) {
            g_run_cgroup = strdup(argv[++i]); /* a copy: a run init overwrites argv to retitle itself */
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            g_mode = MODE_DEVICE;
            g_target = argv[++i];
        } else if (!strcmp(argv[i], "--proxy-port") && i + 1 < argc) {
            char *end;
            long p = strtol(argv[++i], &end, 10);
            if (*end || p < 1 || p > 65535) {
                fprintf(stderr, "berth-agent: --proxy-port wants 1..65535, got '%s'\n", argv[i]);
                return 2;
            }
            proxy_port = (int)p;
        } else {
            usage();
        }
    }
    if (g_mode == MODE_NONE) usage();
    if (g_run_cgroup && !g_isolate_runs) {
        fprintf(stderr, "berth-agent: --run-cgroup needs --isolate-runs\n");
        return 2;
    }

    /* a dead host socket must surface as EPIPE from write(), not kill the agent */
    signal(SIGPIPE, SIG_IGN);
    /* the agent sets exact modes itself (FILE_WRITE); children get the conventional 022 back before exec */
    umask(0);
    if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        logmsg("PR_SET_CHILD_SUBREAPER: %s (orphans of runs will not be reaped by the agent)", strerror(errno));

    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    /* outside a VM, SIGTERM/SIGINT end the agent cleanly (runs are left to the sandbox teardown). As PID 1 they
     * stay unhandled: the kernel then never delivers them, and an exiting init would panic the VM. */
    if (getpid() != 1) {
        sigaddset(&chld, SIGTERM);
        sigaddset(&chld, SIGINT);
    }
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        logmsg("signalfd: %s", strerror(errno));
        return 1;
    }
    proc_init();
    exec_init();
    /* the image's user owns the workspace and its home from the first start on (they are empty then); runs write
     * there as that user */
    if (g_run_as) {
        struct stat st;
        for (const char *d = "/workspace"; d; d = strcmp(d, "/workspace") ? NULL : "/root") {
            if (lstat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0) run_as_own(d);
        }
    }
    if (g_isolate_runs) confine_agent();
    confine_remember_args(argc, argv);
    if (proxy_port && tunnel_listen(proxy_port) < 0) return 1;

    g_in = malloc(g_in_cap);
    struct pollfd *pfd = calloc(MAX_POLL, sizeof *pfd);
    if (!g_in || !pfd) {
        logmsg("out of memory at start");
        return 1;
    }
    if (g_mode == MODE_DEVICE) open_device();

    for (;;) {
        int64_t now = now_ms();
        int64_t deadline = exec_timers(now);
        if (g_hfd < 0) {
            if (g_mode == MODE_CONNECT) {
                if (now >= g_next_connect) try_connect();
                if (g_hfd < 0 && (deadline < 0 || g_next_connect < deadline)) deadline = g_next_connect;
            } else {
                if (open_device() < 0) {
                    g_next_connect = now + RECONNECT_MAX_MS;
                    if (deadline < 0 || g_next_connect < deadline) deadline = g_next_connect;
                }
            }
        }
        host_flush();

        int n = 0;
        int host_idx = -1;
        if (g_hfd >= 0) {
            int idle = g_mode == MODE_DEVICE && now < g_dev_idle_until;
            short ev = 0;
            if (!idle && g_outq.len < OUTQ_HOST_STOP && !exec_stdin_blocking(now)) ev |= POLLIN;
            if (g_outq.len > 0) ev |= POLLOUT;
            if (idle && (deadline < 0 || g_dev_idle_until < deadline)) deadline = g_dev_idle_until;
            if (ev) {
                pfd[n] = (struct pollfd){.fd = g_hfd, .events = ev};
                host_idx = n++;
            }
        }
        int sig_idx = n;
        pfd[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
        int bp = !g_session_active || g_outq.len >= OUTQ_HIGH;
        int tun_start = n;
        n += tunnel_poll_fill(pfd + n, MAX_POLL - n, bp);
        int port_start = n;
        n += ports_poll_fill(pfd + n, MAX_POLL - n, bp);
        int exec_start = n;
        n += exec_poll_fill(pfd + n, MAX_POLL - n, g_session_active && g_outq.len >= OUTQ_HIGH);

        int timeout = -1;
        if (deadline >= 0) timeout = deadline <= now ? 0 : (int)(deadline - now);
        int rc = poll(pfd, (nfds_t)n, timeout);
        if (rc < 0) {
            if (errno == EINTR) continue;
            logmsg("poll: %s", strerror(errno));
            return 1;
        }
        if (host_idx >= 0 && pfd[host_idx].fd == g_hfd) {
            short re = pfd[host_idx].revents;
            if (re & POLLOUT) host_flush();
            if (re & (POLLIN | POLLERR)) host_read();
            else if ((re & POLLHUP) && g_hfd >= 0) {
                /* device: host side closed (POLLHUP without data); socket: peer gone */
                g_dev_discard = 0;
                host_down("hangup");
            }
        }
        if (pfd[sig_idx].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == sizeof si) {
                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
                    logmsg("signal %u: exiting", si.ssi_signo);
                    free(pfd);
                    free(g_in);
                    return 0;
                }
            }
            /* signals coalesce: exec_on_sigchld reaps in a loop until no child is left to reap */
            exec_on_sigchld();
        }
        tunnel_poll_handle(pfd + tun_start, port_start - tun_start);
        ports_poll_handle(pfd + port_start, exec_start - port_start);
        exec_poll_handle(pfd + exec_start, n - exec_start);
    }
}
