/*
 * FILE_READ / FILE_WRITE / FILE_LIST and the guest operations (SYNC, CLOCK_SET, RNG_SEED).
 * These run synchronously in the loop: they touch local filesystems only and are bounded by MAX_PAYLOAD.
 * Paths are not confined here; the sandbox boundary does that (spec, "Files").
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned char *g_fbuf; /* one reply buffer, MAX_PAYLOAD bytes, allocated on first use */

static unsigned char *fbuf(void) {
    if (!g_fbuf) g_fbuf = malloc(MAX_PAYLOAD);
    return g_fbuf;
}

static void file_read(uint32_t chan, struct rd *r) {
    char *path = NULL;
    uint64_t offset;
    uint32_t max_len;
    if (rd_cstr(r, &path) < 0 || rd_u64(r, &offset) < 0 || rd_u32(r, &max_len) < 0 || rd_left(r) != 0) {
        protocol_error("malformed FILE_READ payload on channel %u (%zu bytes)", chan, r->len);
        free(path);
        return;
    }
    unsigned char *b = fbuf();
    if (!b) {
        send_error(chan, ENOMEM, "out of memory");
        goto out;
    }
    if (max_len > MAX_PAYLOAD - 12) {
        send_error(chan, EINVAL, "max_len %u exceeds MAX_PAYLOAD - 12 (%u)", max_len, MAX_PAYLOAD - 12);
        goto out;
    }
    if (offset > (uint64_t)INT64_MAX) {
        send_error(chan, EINVAL, "offset %llu out of range", (unsigned long long)offset);
        goto out;
    }
    /* O_NONBLOCK: opening a FIFO must not hang the agent waiting for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        send_error(chan, e, "%s: %s", path, strerror(e));
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        send_error(chan, e, "%s: %s", path, strerror(e));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        send_error(chan, EISDIR, "%s: %s", path, strerror(EISDIR));
        goto out;
    }
    size_t got = 0;
    while (got < max_len) {
        ssize_t n = pread(fd, b + 12 + got, max_len - got, (off_t)(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            send_error(chan, e, "%s: read at %llu: %s", path, (unsigned long long)(offset + got), strerror(e));
            goto out;
        }
        if (n == 0) break;
        got += (size_t)n;
    }
    close(fd);
    put_u64(b, (uint64_t)st.st_size);
    put_u32(b + 8, (uint32_t)(st.st_mode & 07777));
    send_ok(chan, b, 12 + got);
out:
    free(path);
}

/* mkdir -p of the parent of `path`, mode 0755 */
static int mkdirs_parent(const char *path) {
    char *copy = strdup(path);
    if (!copy) return -1;
    char *slash = strrchr(copy, '/');
    if (slash && slash != copy) {
        *slash = 0;
        for (char *p = copy + 1; *p; p++) {
            if (*p != '/') continue;
            *p = 0;
            if (mkdir(copy, 0755) == 0) {
                run_as_own(copy);
            } else if (errno != EEXIST) {
                free(copy);
                return -1;
            }
            *p = '/';
        }
        if (mkdir(copy, 0755) == 0) {
            run_as_own(copy);
        } else if (errno != EEXIST) {
            free(copy);
            return -1;
        }
    }
    free(copy);
    return 0;
}

static void file_write(uint32_t chan, struct rd *r) {
    char *path = NULL;
    uint32_t mode, flags;
    if (rd_cstr(r, &path) < 0 || rd_u32(r, &mode) < 0 || rd_u32(r, &flags) < 0) {
        protocol_error("malformed FILE_WRITE payload on channel %u (%zu bytes)", chan, r->len);
        free(path);
        return;
    }
    const unsigned char *data = r->p + r->off;
    size_t len = rd_left(r);
    if (flags & ~(WRITE_TRUNCATE | WRITE_APPEND | WRITE_MKDIRS)) {
        send_error(chan, EINVAL, "unknown FILE_WRITE flags 0x%x", flags);
        goto out;
    }
    if ((flags & WRITE_TRUNCATE) && (flags & WRITE_APPEND)) {
        send_error(chan, EINVAL, "FILE_WRITE flags 0x%x: TRUNCATE and APPEND exclude each other", flags);
        goto out;
    }
    if ((flags & WRITE_MKDIRS) && mkdirs_parent(path) < 0) {
        int e = errno;
        send_error(chan, e, "creating parents of %s: %s", path, strerror(e));
        goto out;
    }
    int oflags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    if (flags & WRITE_TRUNCATE) oflags |= O_CREAT | O_TRUNC;
    if (flags & WRITE_APPEND) oflags |= O_CREAT | O_APPEND;
    int fd = open(path, oflags, (mode_t)(mode & 07777));
    if (fd < 0) {
        int e = errno;
        send_error(chan, e, "%s: %s", path, strerror(e));
        goto out;
    }
    if (g_run_as && fchown(fd, (uid_t)g_run_uid, (gid_t)g_run_gid) < 0)
        logmsg("giving %s to %u:%u: %s", path, g_run_uid, g_run_gid, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            send_error(chan, e, "%s: write after %zu of %zu bytes: %s", path, done, len, strerror(e));
            goto out;
        }
        done += (size_t)n;
    }
    if (close(fd) < 0) {
        int e = errno;
        send_error(chan, e, "%s: close: %s", path, strerror(e));
        goto out;
    }
    unsigned char ok[8];
    put_u64(ok, done);
    send_ok(chan, ok, sizeof ok);
out:
    free(path);
}

static void file_list(uint32_t chan, struct rd *r) {
    char *path = NULL;
    if (rd_cstr(r, &path) < 0 || rd_left(r) != 0) {
        protocol_error("malformed FILE_LIST payload on channel %u (%zu bytes)", chan, r->len);
        free(path);
        return;
    }
    unsigned char *b = fbuf();
    if (!b) {
        send_error(chan, ENOMEM, "out of memory");
        goto out;
    }
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        send_error(chan, e, "%s: %s", path, strerror(e));
        goto out;
    }
    size_t off = 4;
    uint32_t count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        struct stat st;
        /* an entry that vanished between readdir and stat is simply not listed */
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        size_t nl = strlen(de->d_name);
        if (off + 4 + nl + 1 + 8 + 4 + 8 > MAX_PAYLOAD) {
            closedir(d);
            send_error(chan, E2BIG, "%s: listing exceeds MAX_PAYLOAD after %u entries", path, count);
            goto out;
        }
        put_u32(b + off, (uint32_t)nl);
        memcpy(b + off + 4, de->d_name, nl);
        off += 4 + nl;
        b[off++] = S_ISREG(st.st_mode) ? KIND_FILE : S_ISDIR(st.st_mode) ? KIND_DIR : S_ISLNK(st.st_mode) ? KIND_LINK : KIND_OTHER;
        put_u64(b + off, (uint64_t)st.st_size);
        put_u32(b + off + 8, (uint32_t)(st.st_mode & 07777));
        put_u64(b + off + 12, (uint64_t)(int64_t)st.st_mtim.tv_sec);
        off += 20;
        count++;
    }
    closedir(d);
    put_u32(b, count);
    send_ok(chan, b, off);
out:
    free(path);
}

int files_handle(uint8_t type, uint32_t chan, struct rd *r) {
    if (type == T_FILE_READ) file_read(chan, r);
    else if (type == T_FILE_WRITE) file_write(chan, r);
    else file_list(chan, r);
    return 0;
}

static void rng_seed(uint32_t chan, struct rd *r) {
    const unsigned char *seed = r->p + r->off;
    size_t len = rd_left(r);
    if (len == 0) {
        send_error(chan, EINVAL, "RNG_SEED with an empty seed");
        return;
    }
    int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        send_error(chan, e, "/dev/urandom: %s", strerror(e));
        return;
    }
    /* writing mixes the seed into the pool (any user may do that) but credits no entropy */
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, seed + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            send_error(chan, e, "writing seed to /dev/urandom: %s", strerror(e));
            return;
        }
        done += (size_t)n;
    }
    /* RNDADDENTROPY also credits it (needs CAP_SYS_ADMIN); a sandbox without it still got the mix */
    size_t credit = len > 512 ? 512 : len;
    struct {
        struct rand_pool_info info;
        unsigned char data[512];
    } req;
    req.info.entropy_count = (int)(credit * 8);
    req.info.buf_size = (int)credit;
    memcpy(req.data, seed, credit);
    unsigned char credited = ioctl(fd, RNDADDENTROPY, &req) == 0;
    if (!credited) logmsg("RNDADDENTROPY: %s (seed mixed, not credited)", strerror(errno));
    /* Linux >= 5.18 does not reseed an initialised CRNG on credit: forks of one snapshot would go on producing the
     * same bytes until the next timed reseed. Force it (CAP_SYS_ADMIN, as above); a kernel without the ioctl
     * (before 4.17) reseeds on credit. */
    if (credited && ioctl(fd, RNDRESEEDCRNG) < 0 && errno != EINVAL && errno != ENOTTY) {
        logmsg("RNDRESEEDCRNG: %s (seed credited, CRNG not reseeded)", strerror(errno));
        credited = 0;
    }
    close(fd);
    send_ok(chan, &credited, 1);
}

int guest_handle(uint8_t type, uint32_t chan, struct rd *r) {
    if (type == T_SYNC) {
        if (rd_left(r) != 0) {
            protocol_error("SYNC with a %zu byte payload", r->len);
            return -1;
        }
        sync();
        send_ok(chan, NULL, 0);
    } else if (type == T_CLOCK_SET) {
        uint64_t ns;
        if (rd_u64(r, &ns) < 0 || rd_left(r) != 0) {
            protocol_error("CLOCK_SET payload must be 8 bytes, got %zu", r->len);
            return -1;
        }
        int64_t v = (int64_t)ns;
        struct timespec ts = {.tv_sec = v / 1000000000, .tv_nsec = v % 1000000000};
        if (ts.tv_nsec < 0) {
            ts.tv_sec -= 1;
            ts.tv_nsec += 1000000000;
        }
        if (clock_settime(CLOCK_REALTIME, &ts) < 0) {
            int e = errno;
            send_error(chan, e, "clock_settime(%lld ns): %s", (long long)v, strerror(e));
        } else {
            send_ok(chan, NULL, 0);
        }
    } else {
        rng_seed(chan, r);
    }
    return 0;
}
