/*
 * Inbound port streams (PORT_OPEN): the host asks the agent to connect to 127.0.0.1:<port> inside the sandbox (then
 * [::1]:<port> when nothing listens there: a server told to listen on "localhost" binds ::1 alone where the name
 * resolves to ::1 first, as Node 17+ does with the workspace's /etc/hosts) and carries the bytes of one connection (a preview of a dev server) on a host channel. Framing as for egress tunnels
 * (DATA, CLOSE, RESET); flow control with WINDOW credits in both directions, so neither side buffers more than
 * PORT_WINDOW bytes per stream when the other end does not read.
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct pstream {
    struct pstream *next;
    uint32_t chan;
    int fd;
    int connecting;    /* non-blocking connect in progress: OPENED or ERROR not sent yet */
    int v6;            /* connecting to [::1] after 127.0.0.1 refused */
    uint16_t port;
    struct buf out;    /* host DATA not yet written to the app */
    uint32_t credit;   /* bytes we may still send to the host as DATA (host grants more with WINDOW) */
    int host_closed;   /* CLOSE from host: shut the app socket's write side once `out` is flushed */
    int wr_shut;
    int app_eof;       /* the app sent EOF; we sent CLOSE */
    int idx;
};

static struct pstream *g_ps;
static int g_nps;
static char g_pbuf[64 * 1024];

static struct pstream *find(uint32_t chan) {
    for (struct pstream *p = g_ps; p; p = p->next)
        if (p->chan == chan) return p;
    return NULL;
}

int ports_chan_busy(uint32_t chan) { return find(chan) != NULL; }

static void ps_free(struct pstream *p) {
    for (struct pstream **pp = &g_ps; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    close(p->fd);
    buf_free(&p->out);
    g_nps--;
    free(p);
}

void ports_reset_all(void) {
    while (g_ps) ps_free(g_ps);
}

static void send_reset(struct pstream *p, const char *reason) {
    size_t n = strlen(reason);
    unsigned char l[4];
    put_u32(l, (uint32_t)n);
    send_frame2(T_RESET, p->chan, l, 4, reason, n);
    ps_free(p);
}

static int maybe_done(struct pstream *p) {
    if (!(p->app_eof && p->wr_shut)) return 0;
    ps_free(p);
    return 1;
}

static void grant(struct pstream *p, size_t n) {
    if (n == 0) return;
    unsigned char w[4];
    put_u32(w, (uint32_t)n);
    send_frame(T_WINDOW, p->chan, w, 4);
}

/* writes buffered host bytes to the app; grants the host what was written. Returns 1 when `p` was freed. */
static int flush(struct pstream *p) {
    size_t written = 0;
    int rc = 0;
    while (p->out.len > 0) {
        ssize_t n = send(p->fd, p->out.data + p->out.head, p->out.len, MSG_NOSIGNAL);
        if (n > 0) {
            buf_consume(&p->out, (size_t)n);
            written += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        grant(p, written);
        send_reset(p, n < 0 ? strerror(errno) : "short write to the app");
        return 1;
    }
    grant(p, written);
    if (p->out.len == 0 && p->host_closed && !p->wr_shut) {
        shutdown(p->fd, SHUT_WR);
        p->wr_shut = 1;
        rc = maybe_done(p);
    }
    return rc;
}

static void opened(struct pstream *p) {
    p->connecting = 0;
    int one = 1;
    setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    send_frame(T_PORT_OPENED, p->chan, NULL, 0);
}

/*
 * Starts a non-blocking connection to the loopback address (127.0.0.1, or ::1 with `v6`) on `port`. Returns 0 when
 * connected, 1 when in progress (*fd set either way), or -errno with no socket left open.
 */
static int loopback_connect(uint16_t port, int v6, int *fd) {
    int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    int rc;
    if (v6) {
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        rc = connect(s, (struct sockaddr *)&sa, sizeof sa);
    } else {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = connect(s, (struct sockaddr *)&sa, sizeof sa);
    }
    if (rc < 0 && errno != EINPROGRESS && errno != EINTR) {
        int e = errno;
        close(s);
        return -e;
    }
    *fd = s;
    return rc == 0 ? 0 : 1;
}

static int open_stream(uint32_t chan, struct rd *r) {
    uint16_t port;
    if (rd_u16(r, &port) < 0 || rd_left(r) != 0) {
        protocol_error("PORT_OPEN payload must be 2 bytes, got %zu", r->len);
        return -1;
    }
    if (port == 0) {
        send_error(chan, EINVAL, "port 0 cannot be connected to");
        return 0;
    }
    if (g_nps >= MAX_PORT_STREAMS) {
        send_error(chan, EAGAIN, "%d port streams are open already", MAX_PORT_STREAMS);
        return 0;
    }
    int fd = -1, v6 = 0;
    int rc = loopback_connect(port, 0, &fd);
    if (rc == -ECONNREFUSED) {
        int rc6 = loopback_connect(port, 1, &fd); /* a sandbox without IPv6 loopback keeps the refusal */
        if (rc6 >= 0) {
            rc = rc6;
            v6 = 1;
        }
    }
    if (rc < 0) {
        send_error(chan, -rc, "connect to 127.0.0.1:%u: %s", port, strerror(-rc));
        return 0;
    }
    struct pstream *p = calloc(1, sizeof *p);
    if (!p) {
        close(fd);
        send_error(chan, ENOMEM, "out of memory");
        return 0;
    }
    p->fd = fd;
    p->chan = chan;
    p->idx = -1;
    p->credit = PORT_WINDOW;
    p->connecting = 1;
    p->v6 = v6;
    p->port = port;
    p->next = g_ps;
    g_ps = p;
    g_nps++;
    if (rc == 0) opened(p);
    return 0;
}

int ports_handle(uint8_t type, uint32_t chan, struct rd *r) {
    if (type == T_PORT_OPEN) return open_stream(chan, r);
    struct pstream *p = find(chan);
    if (!p) return 0; /* crossed our RESET, ERROR or final CLOSE on the wire */
    if (p->connecting && type != T_RESET && type != T_ERROR) {
        protocol_error("frame type 0x%02x on port stream %u before PORT_OPENED", type, chan);
        return -1;
    }
    switch (type) {
    case T_DATA:
        if (p->host_closed) {
            protocol_error("DATA after CLOSE on port stream %u", chan);
            return -1;
        }
        if (p->out.len + rd_left(r) > PORT_WINDOW) {
            send_reset(p, "host sent more DATA than its WINDOW allowed");
            return 0;
        }
        if (buf_append(&p->out, r->p + r->off, rd_left(r)) < 0) {
            send_reset(p, "agent out of memory");
            return 0;
        }
        flush(p);
        return 0;
    case T_WINDOW: {
        uint32_t n;
        if (rd_u32(r, &n) < 0 || rd_left(r) != 0 || n == 0 || n > PORT_WINDOW - p->credit) {
            protocol_error("bad WINDOW on port stream %u (credit %u)", chan, p->credit);
            return -1;
        }
        p->credit += n;
        return 0;
    }
    case T_CLOSE:
        if (rd_left(r) != 0) {
            protocol_error("CLOSE with a %zu byte payload on port stream %u", r->len, chan);
            return -1;
        }
        p->host_closed = 1;
        flush(p);
        return 0;
    default: { /* RESET or ERROR from host: abort at once, no answer */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        ps_free(p);
        return 0;
    }
    }
}

int ports_poll_fill(struct pollfd *pfd, int max, int backpressure) {
    int n = 0;
    for (struct pstream *p = g_ps; p; p = p->next) {
        p->idx = -1;
        short ev = 0;
        if (p->connecting) ev |= POLLOUT;
        else {
            if (!p->app_eof && !backpressure && p->credit > 0) ev |= POLLIN;
            if (p->out.len > 0) ev |= POLLOUT;
        }
        if (ev && n < max) {
            p->idx = n;
            pfd[n++] = (struct pollfd){.fd = p->fd, .events = ev};
        }
    }
    return n;
}

void ports_poll_handle(struct pollfd *pfd, int n) {
    struct pstream *next;
    for (struct pstream *p = g_ps; p; p = next) {
        next = p->next;
        if (p->idx < 0 || p->idx >= n) continue;
        short re = pfd[p->idx].revents;
        p->idx = -1;
        if (!re) continue;
        if (p->connecting) {
            int err = 0;
            socklen_t el = sizeof err;
            if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) err = errno;
            if (err == ECONNREFUSED && !p->v6) {
                /* nothing on 127.0.0.1: try [::1]; a sandbox without IPv6 loopback keeps the refusal */
                int fd = -1;
                int rc = loopback_connect(p->port, 1, &fd);
                if (rc >= 0) {
                    close(p->fd);
                    p->fd = fd;
                    p->v6 = 1;
                    if (rc == 0) opened(p);
                    continue;
                }
            }
            if (err && p->v6) {
                /* 127.0.0.1 refused and [::1] failed too: nothing listens, whatever ::1 said */
                send_error(p->chan, ECONNREFUSED, "connect to 127.0.0.1:%u: %s ([::1]: %s)", p->port, strerror(ECONNREFUSED), strerror(err));
                ps_free(p);
            } else if (err) {
                send_error(p->chan, err, "connect to 127.0.0.1:%u: %s", p->port, strerror(err));
                ps_free(p);
            } else {
                opened(p);
            }
            continue;
        }
        if ((re & POLLOUT) && flush(p)) continue;
        if (re & (POLLIN | POLLHUP | POLLERR)) {
            if (p->app_eof || p->credit == 0) continue;
            size_t want = p->credit < sizeof g_pbuf ? p->credit : sizeof g_pbuf;
            ssize_t r = recv(p->fd, g_pbuf, want, 0);
            if (r > 0) {
                p->credit -= (uint32_t)r;
                send_frame(T_DATA, p->chan, g_pbuf, (size_t)r);
            } else if (r == 0) {
                p->app_eof = 1;
                send_frame(T_CLOSE, p->chan, NULL, 0);
                maybe_done(p);
            } else if (errno != EAGAIN && errno != EINTR) {
                send_reset(p, strerror(errno));
            }
        }
    }
}
