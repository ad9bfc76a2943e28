/*
 * gguf_write_file.c — serialising a GGUF writer's contents to a file.
 *
 * The header (magic, counts, metadata in the order set, tensor infos) is
 * built in memory, then written with the tensor data to a temporary file
 * beside the target, fsynced and renamed over it.  Tensors are laid out in
 * the order added, each at a multiple of the alignment, padded with zeros
 * (as ggml and the gguf package write them).
 */
#include "file_out.h"
#include "gguf_impl.h"

#include <stdlib.h>

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
    tm__file_out f = {.fd = -1};
    /* offsets are bookkeeping of this call: the writer stays logically
     * const */
    tm_status st = build_header((tm_gguf_writer *)(uintptr_t)w, &b);
    if (st) goto fail;
    size_t a = w->alignment;
    if ((st = tm__file_out_open(&f, fn, path))) goto fail;
    if ((st = tm__file_out_write(&f, b.p, b.n))) goto fail;
    if ((st = tm__file_out_pad(&f, (a - b.n % a) % a))) goto fail;
    for (int64_t i = 0; i < w->nt; i++) {
        const tm__gguf_wtensor *t = &w->t[i];
        if ((st = tm__file_out_tensor(&f, t->t, t->nbytes))) goto fail;
        if ((st = tm__file_out_pad(&f, (a - t->nbytes % a) % a))) goto fail;
    }
    tm__dealloc(b.p);
    return tm__file_out_commit(&f, true);
fail:
    tm__file_out_abort(&f);
    tm__dealloc(b.p);
    return st;
}
