/* Shared declarations of the Berth guest agent (protocol: tool-schemas/agent-protocol.md, BAP/3). */
#ifndef BERTH_AGENT_H
#define BERTH_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- protocol constants: must match the spec tables (checked by AgentProtocolSpecTest via --describe) ---- */
#define T_HELLO 0x01
#define T_PING 0x02
#define T_PONG 0x03
#define T_ERROR 0x04
#define T_OK 0x05
#define T_EXEC 0x10
#define T_STARTED 0x11
#define T_STDIN 0x12
#define T_STDOUT 0x13
#define T_STDERR 0x14
#define T_SIGNAL 0x15
#define T_EXIT 0x16
#define T_ATTACH 0x17
#define T_ATTACHED 0x18
#define T_RESIZE 0x19
#define T_FILE_READ 0x20
#define T_FILE_WRITE 0x21
#define T_FILE_LIST 0x22
#define T_SYNC 0x30
#define T_CLOCK_SET 0x31
#define T_RNG_SEED 0x32
#define T_TUNNEL_OPEN 0x40
#define T_DATA 0x41
#define T_CLOSE 0x42
#define T_RESET 0x43
#define T_PORT_OPEN 0x44
#define T_PORT_OPENED 0x45
#define T_WINDOW 0x46

#define CAP_EXEC 0x1u
#define CAP_FILES 0x2u
#define CAP_TUNNEL 0x4u
#define CAP_GUEST_OPS 0x8u
#define CAP_CONFINED_RUNS 0x10u
#define CAP_PORTS 0x20u
#define CAP_ATTACH 0x40u
#define CAP_TUNNEL_WINDOW 0x80u
#define CAP_EXIT_LEFT 0x100u
#define CAP_TTY 0x200u
#define EXEC_STDIN 0x1u
#define EXEC_TTY 0x2u
#define WRITE_TRUNCATE 0x1u
#define WRITE_APPEND 0x2u
#define WRITE_MKDIRS 0x4u
#define KIND_FILE 0x66
#define KIND_DIR 0x64
#define KIND_LINK 0x6c
#define KIND_OTHER 0x6f
#define PROTO_VERSION 3
#define MAX_PAYLOAD 1048576u
#define PORT_WINDOW 262144u
#define TUNNEL_WINDOW 1048576u
#define DETACHED_KEEP 262144u
#define TTY_MAX 1000u
#define LEFT_LISTED 16u
#define LEFT_COMMAND 200u
/* a run init's report: u32 wait status, u32 total, u32 listed, listed x (u32 pid, str command); fits PIPE_BUF */
#define LEFT_REPORT (12u + LEFT_LISTED * (8u + LEFT_COMMAND))

#define HDR_LEN 9u               /* u32 len + u8 type + u32 chan */
#define DRAIN_GRACE_MS 100       /* spec: EXIT at most this long after the process ended */
#define OUT_CHUNK (64 * 1024)    /* spec: STDOUT/STDERR chunks of at most 64 KiB */

/* ---- local limits (not part of the wire contract; see README.md) ---- */
#define OUTQ_HIGH (1u << 20)          /* stop reading child pipes / tunnel clients above this many queued bytes */
#define OUTQ_HOST_STOP (16u << 20)    /* stop reading host frames above this (host is not reading its answers) */
#define STDIN_HIGH (1u << 20)         /* per run: above this many unread stdin bytes, stop reading the host ... */
#define STDIN_STALL_MS 1000           /* ... unless the child has not read any of it for this long (then buffer) */
#define STDIN_BUF_MAX (64u << 20)     /* per run: hard cap; a child this far behind gets its stdin closed */
#define TUNNEL_BUF_MAX (8u << 20)     /* per tunnel without flow control (old host): host bytes buffered for a client that does not read */
#define MAX_PORT_STREAMS 1024         /* inbound port streams open at once; PORT_OPEN past it answers EAGAIN */
#define DETACHED_TOTAL (8u << 20)     /* all detached runs together: output kept for a later ATTACH */

/* ---- growable byte buffer with a consumed prefix (used for the outbound queue and per-fd write buffers) ---- */
struct buf {
    unsigned char *data;
    size_t head, len, cap; /* valid bytes are data[head .. head+len) */
};
int buf_append(struct buf *b, const void *p, size_t n);
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

/* ---- payload parsing with bounds checks; every getter fails (returns -1) rather than read past the end ---- */
struct rd {
    const unsigned char *p;
    size_t len, off;
};
int rd_u8(struct rd *r, uint8_t *v);
int rd_u16(struct rd *r, uint16_t *v);
int rd_u32(struct rd *r, uint32_t *v);
int rd_u64(struct rd *r, uint64_t *v);
/* a str as a freshly malloc'ed NUL-terminated C string; fails on embedded NUL (cannot be passed to the kernel) */
int rd_cstr(struct rd *r, char **out);
size_t rd_left(const struct rd *r);

/* ---- payload building ---- */
void put_u16(unsigned char *p, uint16_t v);
void put_u32(unsigned char *p, uint32_t v);
void put_u64(unsigned char *p, uint64_t v);

/* ---- session / host stream (berth-agent.c) ---- */
extern int g_session_active;        /* a HELLO was answered and the stream is up */
extern int g_exit_left;             /* the host's HELLO carried CAP_EXIT_LEFT: EXIT lists what a confined run left behind */
extern int g_tunnel_windows;        /* both HELLOs carried CAP_TUNNEL_WINDOW: this session's tunnels are flow controlled */
extern char g_session_tag[16];      /* random per session; part of every BERTH_RUN marker */
extern struct buf g_outq;           /* frames waiting to be written to the host */
int64_t now_ms(void);
void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* queue one frame to the host; no-op without a session (output of detached runs is discarded) */
void send_frame(uint8_t type, uint32_t chan, const void *payload, size_t n);
void send_frame2(uint8_t type, uint32_t chan, const void *a, size_t an, const void *b, size_t bn);
void send_error(uint32_t chan, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void send_ok(uint32_t chan, const void *payload, size_t n);
/* a frame from the host broke the protocol: log it and end the session */
void protocol_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- processes (exec.c) ---- */
struct pollfd;
void exec_init(void);
int exec_handle(uint8_t type, uint32_t chan, struct rd *r); /* 0 ok, -1 protocol error (already reported) */
int exec_chan_busy(uint32_t chan);
/* a queued STDOUT/STDERR frame the ending session never sent: back into its run's kept output */
void exec_salvage(uint8_t type, uint32_t chan, const unsigned char *data, size_t n);
void exec_detach_all(void);                      /* session ended: forget channels, keep processes and their output */
int exec_poll_fill(struct pollfd *pfd, int max, int backpressure); /* returns number of pollfds used */
void exec_poll_handle(struct pollfd *pfd, int n);
void exec_on_sigchld(void);
int64_t exec_timers(int64_t now);                /* runs expired timers; returns next deadline or -1 */
int exec_count(void);
uint32_t exec_owner(pid_t pid);                 /* EXEC channel whose process tree holds pid (current session), 0 if none */
/* a run's stdin buffer is above STDIN_HIGH and its child still reads: pause reading host frames (flow control) */
int exec_stdin_blocking(int64_t now);

/* ---- confined runs (confine.c) ---- */
#include <sys/types.h>
extern int g_isolate_runs;                       /* --isolate-runs */
extern const char *g_run_cgroup;                 /* --run-cgroup DIR */
extern int g_run_as;                             /* --run-as UID:GID given: runs take that uid and gid */
extern unsigned g_run_uid, g_run_gid;
int run_as_switch(void);                         /* in a run's process: setgroups/setgid/setuid to --run-as */
void run_as_own(const char *path);               /* agent-made files belong to the --run-as user (no-op without it) */
pid_t confine_clone(void);
void confine_init(int status_fd, int ready_fd, void (*command)(void *), void *arg) __attribute__((noreturn));
int confine_command(void);
void confine_agent(void);
void confine_remember_args(int argc, char **argv);
void close_from(int low);                       /* close every fd >= low (close_range, or /proc/self/fd) */

/* ---- files and guest operations (files.c) ---- */
int files_handle(uint8_t type, uint32_t chan, struct rd *r);
int guest_handle(uint8_t type, uint32_t chan, struct rd *r);

/* ---- the agent's own /proc (proc.c): lookups that a run's /proc mount cannot redirect ---- */
#include <dirent.h>
void proc_init(void);                            /* before the first run: pins the agent's procfs */
int proc_open(const char *rel, int flags);       /* rel is below /proc ("42/stat"); O_CLOEXEC is added */
DIR *proc_opendir(const char *rel);              /* "." for /proc itself */
ssize_t proc_readlink(const char *rel, char *buf, size_t n);

/* ---- egress tunnels (tunnel.c) ---- */
int tunnel_listen(int port);
int tunnel_handle(uint8_t type, uint32_t chan, struct rd *r);
int tunnel_chan_busy(uint32_t chan);
void tunnel_reset_all(void);
int tunnel_poll_fill(struct pollfd *pfd, int max, int backpressure);
void tunnel_poll_handle(struct pollfd *pfd, int n);
int tunnel_enabled(void);

/* ---- inbound port streams (ports.c) ---- */
int ports_handle(uint8_t type, uint32_t chan, struct rd *r);
int ports_chan_busy(uint32_t chan);
void ports_reset_all(void);
int ports_poll_fill(struct pollfd *pfd, int max, int backpressure);
void ports_poll_handle(struct pollfd *pfd, int n);

#endif
