/*
 * gguf_write_file.c — serialising a GGUF writer's contents to a file.
 *
 * The header (magic, counts, metadata in the order set, tensor infos) is
 * built in memory, then written with the tensor data to a temporary file
 * beside the target, fsynced and renamed over it.  Tensors are laid out in
 * the order added, each at a multiple of the alignment, padded with zeros
 * (as ggml and the gguf package write them).
 */
#include "gguf_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
    bool oom;
    const char *fn;
} buf;

static void put_bytes(buf *b, const void *s, size_t n)
{
    if (b->oom || !n) return;
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (n > cap - b->n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = true;
                return;
            }
            cap *= 2;
        }
        unsigned char *np = tm__alloc(cap, b->fn);
        if (!np) {
            b->oom = true;
            return;
        }
        if (b->n) memcpy(np, b->p, b->n);
        tm__dealloc(b->p);
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void put_le(buf *b, uint64_t v, int n)
{
    unsigned char d[8];
    for (int k = 0; k < n; k++) d[k] = (unsigned char)(v >> 8 * k);
    put_bytes(b, d, (size_t)n);
}

static void put_str(buf *b, const char *s, size_t n)
{
    put_le(b, n, 8);
    put_bytes(b, s, n);
}

static void put_value(buf *b, const tm_gguf_value *v)
{
    size_t sz = tm__gguf_scalar_size(v->type);
    if (sz) {
        uint64_t u = v->num.u;
        if (v->type == TM_GGUF_FLOAT32) {
            float f = (float)v->num.f;
            uint32_t x;
            memcpy(&x, &f, 4);
            u = x;
        }
        put_le(b, u, (int)sz);
    } else if (v->type == TM_GGUF_STRING) {
        put_str(b, v->str, (size_t)v->n);
    } else {
        put_le(b, v->elem, 4);
        put_le(b, v->n, 8);
        size_t es = tm__gguf_scalar_size(v->elem);
        if (es)
            put_bytes(b, v->raw, (size_t)v->n * es);
        else
            for (uint64_t j = 0; j < v->n; j++) put_value(b, &v->items[j]);
    }
}

static tm_status io_error(const char *fn, const char *path, const char *what,
                          int err)
{
    char why[128];
    if (strerror_r(err, why, sizeof why) != 0)
        snprintf(why, sizeof why, "errno %d", err);
    return tm__errf(TM_EIO, fn, "%s: %s: %s", path, what, why);
}

static tm_status write_all(int fd, const void *data, size_t n,
                           const char *fn, const char *path)
{
    const char *p = data;
    while (n) {
        size_t chunk = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return io_error(fn, path, "write failed", errno);
        }
        if (w == 0) return io_error(fn, path, "write made no progress", EIO);
        p += w;
        n -= (size_t)w;
    }
    return TM_OK;
}

static int create_temp(const char *path, char *tmp, size_t size)
{
    static atomic_uint counter;
    for (int tries = 0; tries < 1000; tries++) {
        unsigned k = atomic_fetch_add(&counter, 1);
        snprintf(tmp, size, "%s.tmp.%ld.%u", path, (long)getpid(), k);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

static const unsigned char zeros[256];

static tm_status write_pad(int fd, size_t n, const char *fn, const char *path)
{
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        tm_status st = write_all(fd, zeros, k, fn, path);
        if (st) return st;
        n -= k;
    }
    return TM_OK;
}

/* The header and tensor infos; tensor offsets are assigned here. */
static tm_status build_header(const tm_gguf_writer *w, buf *b)
{
    size_t a = w->alignment, off = 0;
    put_bytes(b, "GGUF", 4);
    put_le(b, 3, 4);
    put_le(b, (uint64_t)w->nt, 8);
    put_le(b, (uint64_t)w->nkv, 8);
    for (int64_t i = 0; i < w->nkv; i++) {
        put_str(b, w->kv[i].key, strlen(w->kv[i].key));
        put_le(b, w->kv[i].v.type, 4);
        put_value(b, &w->kv[i].v);
    }
    for (int64_t i = 0; i < w->nt; i++) {
        tm__gguf_wtensor *t = &w->t[i];
        int nd = tm_ndim(t->t);
        const int64_t *sh = tm_shape(t->t);
        put_str(b, t->name, strlen(t->name));
        put_le(b, (uint64_t)nd, 4);
        for (int k = nd - 1; k >= 0; k--) put_le(b, (uint64_t)sh[k], 8);
        put_le(b, t->type, 4);
        t->offset = off;
        put_le(b, off, 8);
        size_t pad = (a - t->nbytes % a) % a;
        if (t->nbytes > SIZE_MAX - pad - off)
            return tm__errf(TM_EOVERFLOW, b->fn, "the tensor data overflows "
                            "size_t");
        off += t->nbytes + pad;
    }
    if (b->oom) return tm__errf(TM_ENOMEM, b->fn, "out of memory building "
                                "the header");
    return TM_OK;
}

tm_status tm_gguf_writer_write(const tm_gguf_writer *w, const char *path)
{
    const char *fn = __func__;
    if (!w || !path) return TM_ERR(TM_EINVAL, "%s is NULL", w ? "path" : "w");
    buf b = {0};
    b.fn = fn;
    char *tmp = NULL;
    int fd = -1;
    /* offsets are bookkeeping of this call: the writer stays logically
     * const */
    tm_status st = build_header((tm_gguf_writer *)(uintptr_t)w, &b);
    if (st) goto fail;
    size_t a = w->alignment;
    size_t plen = strlen(path);
    tmp = tm__alloc(plen + 48, fn);
    if (!tmp) {
        st = TM_ENOMEM;
        goto fail;
    }
    fd = create_temp(path, tmp, plen + 48);
    if (fd < 0) {
        st = io_error(fn, path, "cannot create a temporary file beside it",
                      errno);
        tm__dealloc(tmp);
        tmp = NULL;
        goto fail;
    }
    struct stat old;
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode))
        (void)fchmod(fd, old.st_mode & 07777);
    if ((st = write_all(fd, b.p, b.n, fn, path))) goto fail;
    if ((st = write_pad(fd, (a - b.n % a) % a, fn, path))) goto fail;
    for (int64_t i = 0; i < w->nt; i++) {
        const tm__gguf_wtensor *t = &w->t[i];
        if (t->nbytes) {
            /* host bytes: a device tensor is copied first */
            tm_tensor *h = tm_to(t->t, TM_CPU);
            tm_tensor *c = h ? tm_contiguous(h) : NULL;
            tm_free(h);
            if (!c) {
                st = tm__relabel_error(fn, tm_last_status());
                goto fail;
            }
            st = write_all(fd, tm_data(c), t->nbytes, fn, path);
            tm_free(c);
            if (st) goto fail;
        }
        if ((st = write_pad(fd, (a - t->nbytes % a) % a, fn, path)))
            goto fail;
    }
    if (fsync(fd) != 0) {
        st = io_error(fn, path, "fsync failed", errno);
        goto fail;
    }
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        st = io_error(fn, path, "close failed", errno);
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        st = io_error(fn, path, "cannot rename the temporary file over it",
                      errno);
        goto fail;
    }
    tm__dealloc(tmp);
    tm__dealloc(b.p);
    return TM_OK;
fail:
    if (fd >= 0) close(fd);
    if (tmp) unlink(tmp);
    tm__dealloc(tmp);
    tm__dealloc(b.p);
    return st;
}
