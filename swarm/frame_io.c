/* frame_io.c — the byte streams frames travel over: a file descriptor
 * with poll() deadlines, and memory for tests and fuzzing (frame.h). */
#include "frame.h"

#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Waits until fd is ready for `events` or the deadline passes. */
static tm_status wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms < 0 ? 1000 : deadline_ms - tm__now_ms();
        if (deadline_ms >= 0 && left <= 0)
            return TM_ERR(TM_EIO, "timed out: the peer sent nothing in time");
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r > 0) return TM_OK;
        if (r < 0 && errno != EINTR)
            return TM_ERR(TM_EIO, "poll: %s", strerror(errno));
    }
}

static tm_status fd_read(void *ctx, void *buf, size_t n, int64_t deadline_ms)
{
    int fd = (int)(intptr_t)ctx;
    uint8_t *b = buf;
    while (n) {
        tm_status st = wait_fd(fd, POLLIN, deadline_ms);
        if (st) return st;
        ssize_t r = read(fd, b, n);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r == 0) return TM_ERR(TM_EIO, "peer closed the connection");
        if (r < 0) return TM_ERR(TM_EIO, "read: %s", strerror(errno));
        b += r;
        n -= (size_t)r;
    }
    return TM_OK;
}

static tm_status fd_write(void *ctx, const void *buf, size_t n,
                          int64_t deadline_ms)
{
    int fd = (int)(intptr_t)ctx;
    const uint8_t *b = buf;
    bool sock = true;
    while (n) {
        tm_status st = wait_fd(fd, POLLOUT, deadline_ms);
        if (st) return st;
        ssize_t w = sock ? send(fd, b, n, MSG_NOSIGNAL) : write(fd, b, n);
        if (w < 0 && errno == ENOTSOCK && sock) {
            sock = false;
            continue;
        }
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (w <= 0) return TM_ERR(TM_EIO, "write: %s", strerror(errno));
        b += w;
        n -= (size_t)w;
    }
    return TM_OK;
}

tm__swrm_io tm__swrm_fd_io(int fd)
{
    return (tm__swrm_io){fd_read, fd_write, (void *)(intptr_t)fd};
}

static tm_status mem_read(void *ctx, void *buf, size_t n, int64_t deadline_ms)
{
    (void)deadline_ms;
    tm__swrm_mem *m = ctx;
    if (m->in_n - m->in_pos < n) {
        m->in_pos = m->in_n;
        return TM_ERR(TM_EIO, "peer closed the connection");
    }
    memcpy(buf, m->in + m->in_pos, n);
    m->in_pos += n;
    return TM_OK;
}

static tm_status mem_write(void *ctx, const void *buf, size_t n,
                           int64_t deadline_ms)
{
    (void)deadline_ms;
    tm__swrm_mem *m = ctx;
    if (n > m->out_cap_limit - m->out_n)
        return TM_ERR(TM_EIO, "write: the stream is full");
    if (m->out_n + n > m->out_cap) {
        size_t cap = m->out_cap ? m->out_cap : 256;
        while (cap < m->out_n + n) cap *= 2;
        uint8_t *o = tm__alloc(cap, __func__);
        if (!o) return TM_ENOMEM;
        if (m->out_n) memcpy(o, m->out, m->out_n);
        tm__dealloc(m->out);
        m->out = o;
        m->out_cap = cap;
    }
    memcpy(m->out + m->out_n, buf, n);
    m->out_n += n;
    return TM_OK;
}

tm__swrm_io tm__swrm_mem_io(tm__swrm_mem *m)
{
    return (tm__swrm_io){mem_read, mem_write, m};
}

void tm__swrm_mem_free(tm__swrm_mem *m)
{
    if (!m) return;
    tm__dealloc(m->out);
    m->out = NULL;
    m->out_n = m->out_cap = 0;
}
