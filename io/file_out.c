/* file_out.c — atomic file output for the writers (file_out.h). */
#include "file_out.h"

#include "../tensor/core/tensor_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *tm__io_strerror(int err, char *buf, size_t size)
{
    if (strerror_r(err, buf, size) != 0) snprintf(buf, size, "errno %d", err);
    return buf;
}

static tm_status io_error(const tm__file_out *f, const char *what, int err)
{
    char why[128];
    return tm__errf(TM_EIO, f->fn, "%s: %s: %s", f->path, what,
                    tm__io_strerror(err, why, sizeof why));
}

tm_status tm__file_out_open(tm__file_out *f, const char *fn, const char *path)
{
    static atomic_uint counter;
    size_t size = strlen(path) + 48;
    f->fd = -1;
    f->path = path;
    f->fn = fn;
    f->tmp = tm__alloc(size, fn);
    if (!f->tmp) return TM_ENOMEM;
    int fd = -1;
    for (int tries = 0; tries < 1000 && fd < 0; tries++) {
        unsigned k = atomic_fetch_add(&counter, 1);
        snprintf(f->tmp, size, "%s.tmp.%ld.%u", path, (long)getpid(), k);
        fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        tm_status st = io_error(f, "cannot create a temporary file beside "
                                "it", errno);
        tm__dealloc(f->tmp);
        f->tmp = NULL;
        return st;
    }
    f->fd = fd;
    struct stat old;
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode))
        (void)fchmod(fd, old.st_mode & 07777);
    return TM_OK;
}

tm_status tm__file_out_write(tm__file_out *f, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        size_t chunk = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        ssize_t w = write(f->fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return io_error(f, "write failed", errno);
        }
        if (w == 0) return io_error(f, "write made no progress", EIO);
        p += w;
        n -= (size_t)w;
    }
    return TM_OK;
}

tm_status tm__file_out_pad(tm__file_out *f, size_t n)
{
    static const unsigned char zeros[256];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        tm_status st = tm__file_out_write(f, zeros, k);
        if (st) return st;
        n -= k;
    }
    return TM_OK;
}

tm_status tm__file_out_tensor(tm__file_out *f, tm_tensor *t, size_t nbytes)
{
    if (!nbytes) return TM_OK;
    tm_tensor *h = tm_to(t, TM_CPU);
    tm_tensor *c = h ? tm_contiguous(h) : NULL;
    tm_free(h);
    if (!c) return tm__relabel_error(f->fn, tm_last_status());
    tm_status st = tm__file_out_write(f, tm_data(c), nbytes);
    tm_free(c);
    return st;
}

/* fsync of the directory holding the target, so the rename itself is
 * durable.  Best effort: the new file is already in place.  Reuses the
 * temporary's buffer, which is longer than the target's path. */
static void sync_dir(tm__file_out *f)
{
    char *buf = f->tmp;
    strcpy(buf, f->path);
    char *slash = strrchr(buf, '/');
    if (!slash) strcpy(buf, ".");
    else if (slash == buf) buf[1] = '\0';
    else *slash = '\0';
    int dfd = open(buf, O_RDONLY | O_CLOEXEC);
    if (dfd < 0) return;
    (void)fsync(dfd);
    close(dfd);
}

tm_status tm__file_out_commit(tm__file_out *f, bool sync)
{
    tm_status st = TM_OK;
    if (sync && fsync(f->fd) != 0) {
        st = io_error(f, "fsync failed", errno);
        goto fail;
    }
    int fd = f->fd;
    f->fd = -1;
    if (close(fd) != 0) {
        st = io_error(f, "close failed", errno);
        goto fail;
    }
    if (rename(f->tmp, f->path) != 0) {
        st = io_error(f, "cannot rename the temporary file over it", errno);
        goto fail;
    }
    if (sync) sync_dir(f);
    tm__dealloc(f->tmp);
    f->tmp = NULL;
    return TM_OK;
fail:
    tm__file_out_abort(f);
    return st;
}

void tm__file_out_abort(tm__file_out *f)
{
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    if (f->tmp) unlink(f->tmp);
    tm__dealloc(f->tmp);
    f->tmp = NULL;
}
