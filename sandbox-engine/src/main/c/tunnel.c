/*
 * Egress tunnels: every connection accepted on 127.0.0.1:P becomes an agent-opened channel (high bit set).
 * The agent copies bytes only; the host speaks the HTTP proxy protocol on them. When both HELLOs carried
 * CAP_TUNNEL_WINDOW, each direction is flow controlled with WINDOW credit like a port stream (TUNNEL_WINDOW).
 */
#include "agent.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_TUNNELS 1024

struct tun {
    struct tun *next;
    uint32_t chan;
    int fd;
    struct buf out;    /* host DATA not yet written to the client */
    int host_closed;   /* CLOSE from host: shut the client's write side once `out` is flushed */
    int wr_shut;
    int client_eof;    /* client sent EOF; we sent CLOSE */
    int windowed;      /* flow controlled (the session's g_tunnel_windows when it was accepted) */
    uint32_t credit;   /* windowed: bytes we may still send to the host as DATA (host grants more with WINDOW) */
    int idx;
};

int g_tunnel_windows;
int g_exit_left;
static int g_lfd = -1;
static uint16_t g_port;
static struct tun *g_tuns;
static int g_ntuns;
static uint32_t g_next_id = 1;
static char g_tbuf[64 * 1024];

int tunnel_enabled(void) { return g_lfd >= 0; }

int tunnel_listen(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        logmsg("proxy socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0) {
        logmsg("proxy listen on 127.0.0.1:%d: %s", port, strerror(errno));
        close(fd);
        return -1;
    }
    g_lfd = fd;
    g_port = (uint16_t)port;
    return 0;
}

static struct tun *find(uint32_t chan) {
    for (struct tun *t = g_tuns; t; t = t->next)
        if (t->chan == chan) return t;
    return NULL;
}

int tunnel_chan_busy(uint32_t chan) { return find(chan) != NULL; }

static void tun_free(struct tun *t) {
    for (struct tun **pp = &g_tuns; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    close(t->fd);
    buf_free(&t->out);
    g_ntuns--;
    free(t);
}

static void send_reset(struct tun *t, const char *reason) {
    size_t n = strlen(reason);
    unsigned char l[4];
    put_u32(l, (uint32_t)n);
    send_frame2(T_RESET, t->chan, l, 4, reason, n);
    tun_free(t);
}

/* both directions closed: the channel id is free (spec: "both CLOSE frames") */
static int maybe_done(struct tun *t) {
    if (!(t->client_eof && t->wr_shut)) return 0;
    tun_free(t);
    return 1;
}

/* windowed: the host may send `n` more DATA bytes (they reached the client's socket) */
static void grant(struct tun *t, size_t n) {
    if (n == 0 || !t->windowed) return;
    unsigned char w[4];
    put_u32(w, (uint32_t)n);
    send_frame(T_WINDOW, t->chan, w, 4);
}

/* returns 1 when `t` was freed (reset, or both directions done) */
static int flush(struct tun *t) {
    size_t written = 0;
    while (t->out.len > 0) {
        ssize_t n = send(t->fd, t->out.data + t->out.head, t->out.len, MSG_NOSIGNAL);
        if (n > 0) {
            buf_consume(&t->out, (size_t)n);
            written += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            grant(t, written);
            return 0;
        }
        send_reset(t, n < 0 ? strerror(errno) : "short write to client");
        return 1;
    }
    grant(t, written);
    if (t->host_closed && !t->wr_shut) {
        shutdown(t->fd, SHUT_WR);
        t->wr_shut = 1;
        return maybe_done(t);
    }
    return 0;
}

void tunnel_reset_all(void) {
    /* tunnels belong to a session: without a host there is nobody to carry the bytes */
    while (g_tuns) tun_free(g_tuns);
}

int tunnel_handle(uint8_t type, uint32_t chan, struct rd *r) {
    struct tun *t = find(chan);
    if (!t) return 0; /* crossed a RESET or final CLOSE on the wire */
    switch (type) {
    case T_DATA:
        if (t->host_closed) {
            protocol_error("DATA after CLOSE on tunnel 0x%x", chan);
            return -1;
        }
        if (t->windowed && t->out.len + rd_left(r) > TUNNEL_WINDOW) {
            send_reset(t, "host sent more DATA than its WINDOW allowed");
            return 0;
        }
        if (!t->windowed && t->out.len + rd_left(r) > TUNNEL_BUF_MAX) {
            send_reset(t, "tunnel client is not reading");
            return 0;
        }
        if (buf_append(&t->out, r->p + r->off, rd_left(r)) < 0) {
            send_reset(t, "agent out of memory");
            return 0;
        }
        flush(t);
        return 0;
    case T_CLOSE:
        if (rd_left(r) != 0) {
            protocol_error("CLOSE with a %zu byte payload on tunnel 0x%x", r->len, chan);
            return -1;
        }
        t->host_closed = 1;
        flush(t);
        return 0;
    case T_WINDOW: {
        uint32_t n;
        if (!t->windowed || rd_u32(r, &n) < 0 || rd_left(r) != 0 || n == 0 || n > TUNNEL_WINDOW - t->credit) {
            protocol_error("bad WINDOW on tunnel 0x%x (credit %u)", chan, t->credit);
            return -1;
        }
        t->credit += n;
        return 0;
    }
    default: { /* RESET or ERROR from host: abort at once, no answer */
        /* linger 0 makes close() send RST, so the client sees an abort rather than a clean EOF */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        tun_free(t);
        return 0;
    }
    }
}

int tunnel_poll_fill(struct pollfd *pfd, int max, int backpressure) {
    int n = 0;
    if (g_lfd >= 0 && g_session_active && g_ntuns < MAX_TUNNELS && n < max)
        pfd[n++] = (struct pollfd){.fd = g_lfd, .events = POLLIN};
    for (struct tun *t = g_tuns; t; t = t->next) {
        t->idx = -1;
        short ev = 0;
        if (!t->client_eof && !backpressure && (!t->windowed || t->credit > 0)) ev |= POLLIN;
        if (t->out.len > 0) ev |= POLLOUT;
        if (ev && n < max) {
            t->idx = n;
            pfd[n++] = (struct pollfd){.fd = t->fd, .events = ev};
        }
    }
    return n;
}

static uint32_t next_chan(void) {
    for (;;) {
        uint32_t c = 0x80000000u | g_next_id;
        g_next_id = g_next_id >= 0x7fffffffu ? 1 : g_next_id + 1;
        if (!find(c)) return c;
    }
}

/* inode of the client's socket 127.0.0.1:peer_port -> 127.0.0.1:g_port, from /proc/net/tcp or tcp6; 0 if not found */
static unsigned long client_inode(const char *table, unsigned peer_port) {
    int fd = proc_open(table, O_RDONLY);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
    if (!f) {
        if (fd >= 0) close(fd);
        return 0;
    }
    char line[512];
    unsigned long found = 0;
    if (!fgets(line, sizeof line, f)) goto out; /* header */
    while (fgets(line, sizeof line, f)) {
        char laddr[64], raddr[64];
        unsigned lport, rport, st;
        unsigned long inode;
        if (sscanf(line, " %*u: %63[0-9A-Fa-f]:%x %63[0-9A-Fa-f]:%x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", laddr, &lport, raddr, &rport,
                   &st, &inode) != 6)
            continue;
        if (lport == peer_port && rport == g_port && inode != 0) {
            found = inode;
            break;
        }
    }
out:
    fclose(f);
    return found;
}

/*
 * The run (EXEC channel) whose process tree opened the connection from 127.0.0.1:peer_port, or 0: the socket's
 * inode, every process holding it (/proc/PID/fd), and each holder's run; holders of different runs give 0.
 */
static uint32_t connection_owner(unsigned peer_port) {
    unsigned long inode = client_inode("net/tcp", peer_port);
    if (!inode) inode = client_inode("net/tcp6", peer_port);
    if (!inode) return 0;
    char want[48];
    int wn = snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *d = proc_opendir(".");
    if (!d) return 0;
    pid_t self = getpid();
    uint32_t owner = 0;
    int holders = 0, mixed = 0;
    struct dirent *de;
    while (!mixed && (de = readdir(d))) {
        char *end;
        long v = strtol(de->d_name, &end, 10);
        if (*end || v <= 1 || v == self) continue;
        char path[64];
        snprintf(path, sizeof path, "%ld/fd", v);
        DIR *fds = proc_opendir(path);
        if (!fds) continue;
        struct dirent *fe;
        while ((fe = readdir(fds))) {
            if (fe->d_name[0] == '.') continue;
            char lp[320], target[64];
            snprintf(lp, sizeof lp, "%ld/fd/%s", v, fe->d_name);
            ssize_t n = proc_readlink(lp, target, sizeof target - 1);
            if (n != wn || memcmp(target, want, (size_t)wn) != 0) continue;
            uint32_t o = exec_owner((pid_t)v);
            if (holders++ == 0) owner = o;
            else if (o != owner) mixed = 1;
            break;
        }
        closedir(fds);
    }
    closedir(d);
    return mixed ? 0 : owner;
}

static void accept_all(void) {
    for (int i = 0; i < 16 && g_ntuns < MAX_TUNNELS; i++) {
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        int fd = accept4(g_lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        struct tun *t = calloc(1, sizeof *t);
        if (!t) {
            close(fd);
            return;
        }
        t->fd = fd;
        t->chan = next_chan();
        t->windowed = g_tunnel_windows;
        t->credit = TUNNEL_WINDOW;
        t->idx = -1;
        t->next = g_tuns;
        g_tuns = t;
        g_ntuns++;
        unsigned char p[6];
        put_u16(p, g_port);
        put_u32(p + 2, plen >= sizeof peer ? connection_owner(ntohs(peer.sin_port)) : 0);
        send_frame(T_TUNNEL_OPEN, t->chan, p, sizeof p);
    }
}

void tunnel_poll_handle(struct pollfd *pfd, int n) {
    if (n > 0 && pfd[0].fd == g_lfd && (pfd[0].revents & POLLIN)) accept_all();
    struct tun *next;
    for (struct tun *t = g_tuns; t; t = next) {
        next = t->next;
        if (t->idx < 0 || t->idx >= n) continue;
        short re = pfd[t->idx].revents;
        t->idx = -1;
        if (!re) continue;
        /* new tunnels from accept_all are at the list head with idx -1, so `next` never points at them */
        if ((re & POLLOUT) && flush(t)) continue;
        if (re & (POLLIN | POLLHUP | POLLERR)) {
            if (t->client_eof || (t->windowed && t->credit == 0)) continue;
            size_t want = t->windowed && t->credit < sizeof g_tbuf ? t->credit : sizeof g_tbuf;
            ssize_t r = recv(t->fd, g_tbuf, want, 0);
            if (r > 0) {
                if (t->windowed) t->credit -= (uint32_t)r;
                send_frame(T_DATA, t->chan, g_tbuf, (size_t)r);
            } else if (r == 0) {
                t->client_eof = 1;
                send_frame(T_CLOSE, t->chan, NULL, 0);
                maybe_done(t);
            } else if (errno != EAGAIN && errno != EINTR) {
                send_reset(t, strerror(errno));
            }
        }
    }
}
