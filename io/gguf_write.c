/*
 * gguf_write.c — writing GGUF files (version 3, little-endian).
 *
 * The header (magic, counts, metadata in the order set, tensor infos) is
 * built in memory, then written with the tensor data to a temporary file
 * beside the target, fsynced and renamed over it.  Tensors are laid out in
 * the order added, each at a multiple of the alignment, padded with zeros
 * (as ggml and the gguf package write them).
 */
#include "gguf_impl.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct wkv {
    char *key;
    tm_gguf_value v; /* owned: str, raw and items allocated */
} wkv;

typedef struct wtensor {
    char *name;
    tm_tensor *t;
    uint32_t type;
    size_t nbytes, offset;
} wtensor;

struct tm_gguf_writer {
    size_t alignment;
    wkv *kv;
    int64_t nkv, kv_cap;
    wtensor *t;
    int64_t nt, t_cap;
};

/* ---------------------------------------------------------- values */

static void value_free(tm_gguf_value *v)
{
    if (v->type == TM_GGUF_STRING) tm__dealloc((void *)(uintptr_t)v->str);
    if (v->type == TM_GGUF_ARRAY) {
        if (v->items)
            for (uint64_t j = 0; j < v->n; j++) value_free(&v->items[j]);
        tm__dealloc(v->items);
        tm__dealloc((void *)(uintptr_t)v->raw);
    }
    memset(v, 0, sizeof *v);
}

static char *dup_bytes(const char *s, size_t n, const char *fn)
{
    char *d = tm__alloc(n + 1, fn);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* A deep copy of src into *dst (zeroed first); checks element types and
 * nesting as the reader would. */
static tm_status value_copy(tm_gguf_value *dst, const tm_gguf_value *src,
                            int depth, const char *fn)
{
    memset(dst, 0, sizeof *dst);
    if (!src) return tm__errf(TM_EINVAL, fn, "value is NULL");
    uint32_t t = src->type;
    if (t > TM_GGUF_FLOAT64)
        return tm__errf(TM_EINVAL, fn, "value type %u is not a GGUF type", t);
    dst->type = (uint8_t)t;
    dst->num = src->num;
    if (t == TM_GGUF_BOOL && src->num.u > 1)
        return tm__errf(TM_EINVAL, fn, "bool value %llu is neither 0 nor 1",
                        (unsigned long long)src->num.u);
    if (t == TM_GGUF_STRING) {
        dst->n = src->n;
        dst->str = dup_bytes(src->str, (size_t)src->n, fn);
        return dst->str ? TM_OK : TM_ENOMEM;
    }
    if (t != TM_GGUF_ARRAY) return TM_OK;
    if (depth >= TM__GGUF_MAX_DEPTH)
        return tm__errf(TM_EINVAL, fn, "arrays nested more than %d deep",
                        TM__GGUF_MAX_DEPTH);
    uint32_t et = src->elem;
    if (et > TM_GGUF_FLOAT64)
        return tm__errf(TM_EINVAL, fn, "array element type %u is not a GGUF "
                        "type", et);
    if (src->n > (uint64_t)INT64_MAX / sizeof(tm_gguf_value))
        return tm__errf(TM_EOVERFLOW, fn, "array of %llu elements is too "
                        "long", (unsigned long long)src->n);
    dst->elem = (uint8_t)et;
    dst->items = tm__calloc((size_t)(src->n ? src->n : 1) *
                            sizeof *dst->items, fn);
    if (!dst->items) return TM_ENOMEM;
    dst->n = src->n;
    size_t sz = tm__gguf_scalar_size(et);
    if (sz) {
        unsigned char *raw = tm__alloc((size_t)src->n * sz + 1, fn);
        if (!raw) return TM_ENOMEM;
        dst->raw = raw;
    }
    for (uint64_t j = 0; j < src->n; j++) {
        const tm_gguf_value *e = &src->items[j];
        if (e->type != et)
            return tm__errf(TM_EINVAL, fn, "array of %s holds a %s at "
                            "element %llu", tm_gguf_type_name(et),
                            tm_gguf_type_name(e->type),
                            (unsigned long long)j);
        tm_status st = value_copy(&dst->items[j], e, depth + 1, fn);
        if (st) return st;
        if (sz) {
            unsigned char *p = (unsigned char *)(uintptr_t)dst->raw + j * sz;
            uint64_t u = e->num.u;
            if (et == TM_GGUF_FLOAT32) {
                float f = (float)e->num.f;
                uint32_t b;
                memcpy(&b, &f, 4);
                u = b;
            }
            for (size_t k = 0; k < sz; k++) p[k] = (unsigned char)(u >> 8 * k);
        }
    }
    return TM_OK;
}

/* ---------------------------------------------------------- the writer */

tm_gguf_writer *tm_gguf_writer_new(void)
{
    tm_gguf_writer *w = tm__calloc(sizeof *w, __func__);
    if (w) w->alignment = TM__GGUF_DEFAULT_ALIGN;
    return w;
}

void tm_gguf_writer_free(tm_gguf_writer *w)
{
    if (!w) return;
    for (int64_t i = 0; i < w->nkv; i++) {
        tm__dealloc(w->kv[i].key);
        value_free(&w->kv[i].v);
    }
    for (int64_t i = 0; i < w->nt; i++) {
        tm__dealloc(w->t[i].name);
        tm_free(w->t[i].t);
    }
    tm__dealloc(w->kv);
    tm__dealloc(w->t);
    tm__dealloc(w);
}

static tm_status check_name(const char *s, const char *what, const char *fn)
{
    size_t n = strlen(s), bad;
    char nm[96];
    tm__fmt_name(nm, sizeof nm, s, n);
    if (!n) return tm__errf(TM_EINVAL, fn, "%s is empty", what);
    if (n > TM__GGUF_MAX_NAME)
        return tm__errf(TM_EINVAL, fn, "%s '%s' is %zu bytes, more than %u",
                        what, nm, n, TM__GGUF_MAX_NAME);
    if (!tm__utf8_valid((const unsigned char *)s, n, &bad))
        return tm__errf(TM_EINVAL, fn, "%s '%s' is not valid UTF-8 (byte "
                        "%zu)", what, nm, bad);
    return TM_OK;
}

/* Stores v (taken over, freed on failure) under key. */
static tm_status put(tm_gguf_writer *w, const char *key, tm_gguf_value *v,
                     const char *fn)
{
    tm_status st = TM_OK;
    if (!w || !key) {
        st = tm__errf(TM_EINVAL, fn, "%s is NULL", w ? "key" : "w");
        goto fail;
    }
    if ((st = check_name(key, "key", fn))) goto fail;
    if (!strcmp(key, "general.alignment")) {
        uint64_t a = v->num.u;
        if (v->type != TM_GGUF_UINT32) {
            st = tm__errf(TM_EINVAL, fn, "general.alignment must be uint32, "
                          "not %s", tm_gguf_type_name(v->type));
            goto fail;
        }
        if (!a || (a & (a - 1))) {
            st = tm__errf(TM_EINVAL, fn, "general.alignment %llu is not a "
                          "nonzero power of two", (unsigned long long)a);
            goto fail;
        }
        w->alignment = (size_t)a;
    }
    for (int64_t i = 0; i < w->nkv; i++)
        if (!strcmp(w->kv[i].key, key)) {
            value_free(&w->kv[i].v);
            w->kv[i].v = *v;
            return TM_OK;
        }
    if (w->nkv == w->kv_cap) {
        int64_t cap = w->kv_cap ? 2 * w->kv_cap : 16;
        wkv *nk = tm__alloc((size_t)cap * sizeof *nk, fn);
        if (!nk) {
            st = TM_ENOMEM;
            goto fail;
        }
        if (w->nkv) memcpy(nk, w->kv, (size_t)w->nkv * sizeof *nk);
        tm__dealloc(w->kv);
        w->kv = nk;
        w->kv_cap = cap;
    }
    char *k = dup_bytes(key, strlen(key), fn);
    if (!k) {
        st = TM_ENOMEM;
        goto fail;
    }
    w->kv[w->nkv].key = k;
    w->kv[w->nkv].v = *v;
    w->nkv++;
    return TM_OK;
fail:
    value_free(v);
    return st;
}

static tm_status put_scalar(tm_gguf_writer *w, const char *key, uint32_t t,
                            uint64_t u, int64_t i, double f, const char *fn)
{
    tm_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = (uint8_t)t;
    if (t == TM_GGUF_FLOAT32 || t == TM_GGUF_FLOAT64) v.num.f = f;
    else if (t == TM_GGUF_INT8 || t == TM_GGUF_INT16 || t == TM_GGUF_INT32 ||
             t == TM_GGUF_INT64) v.num.i = i;
    else v.num.u = u;
    return put(w, key, &v, fn);
}

#define SET_U(name, ctype, T)                                                 \
    tm_status name(tm_gguf_writer *w, const char *key, ctype v)               \
    {                                                                         \
        return put_scalar(w, key, T, (uint64_t)v, 0, 0, __func__);            \
    }
#define SET_I(name, ctype, T)                                                 \
    tm_status name(tm_gguf_writer *w, const char *key, ctype v)               \
    {                                                                         \
        return put_scalar(w, key, T, 0, (int64_t)v, 0, __func__);             \
    }
SET_U(tm_gguf_set_u8, uint8_t, TM_GGUF_UINT8)
SET_I(tm_gguf_set_i8, int8_t, TM_GGUF_INT8)
SET_U(tm_gguf_set_u16, uint16_t, TM_GGUF_UINT16)
SET_I(tm_gguf_set_i16, int16_t, TM_GGUF_INT16)
SET_U(tm_gguf_set_u32, uint32_t, TM_GGUF_UINT32)
SET_I(tm_gguf_set_i32, int32_t, TM_GGUF_INT32)
SET_U(tm_gguf_set_u64, uint64_t, TM_GGUF_UINT64)
SET_I(tm_gguf_set_i64, int64_t, TM_GGUF_INT64)
SET_U(tm_gguf_set_bool, bool, TM_GGUF_BOOL)

tm_status tm_gguf_set_f32(tm_gguf_writer *w, const char *key, float v)
{
    return put_scalar(w, key, TM_GGUF_FLOAT32, 0, 0, v, __func__);
}

tm_status tm_gguf_set_f64(tm_gguf_writer *w, const char *key, double v)
{
    return put_scalar(w, key, TM_GGUF_FLOAT64, 0, 0, v, __func__);
}

tm_status tm_gguf_set_str(tm_gguf_writer *w, const char *key, const char *s,
                          size_t len)
{
    if (!s) return TM_ERR(TM_EINVAL, "s is NULL");
    tm_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = TM_GGUF_STRING;
    v.n = len == SIZE_MAX ? strlen(s) : len;
    v.str = dup_bytes(s, (size_t)v.n, __func__);
    if (!v.str) return TM_ENOMEM;
    return put(w, key, &v, __func__);
}

tm_status tm_gguf_set_array(tm_gguf_writer *w, const char *key,
                            tm_gguf_type elem, const void *data, int64_t n)
{
    size_t sz = tm__gguf_scalar_size(elem);
    if (!sz)
        return TM_ERR(TM_EINVAL, "element type %s is not numeric (use "
                      "tm_gguf_set_str_array / tm_gguf_set_value)",
                      tm_gguf_type_name(elem));
    if (n < 0 || (n && !data))
        return TM_ERR(TM_EINVAL, "bad array: n = %lld, data %s", (long long)n,
                      data ? "set" : "NULL");
    if ((uint64_t)n > SIZE_MAX / sizeof(tm_gguf_value))
        return TM_ERR(TM_EOVERFLOW, "array of %lld elements is too long",
                      (long long)n);
    tm_gguf_value src;
    memset(&src, 0, sizeof src);
    src.type = TM_GGUF_ARRAY;
    src.elem = (uint8_t)elem;
    src.n = (uint64_t)n;
    src.items = tm__calloc((size_t)(n ? n : 1) * sizeof *src.items, __func__);
    if (!src.items) return TM_ENOMEM;
    for (int64_t j = 0; j < n; j++)
        tm__gguf_scalar_load(&src.items[j], elem,
                             (const unsigned char *)data + (size_t)j * sz);
    tm_gguf_value v;
    tm_status st = value_copy(&v, &src, 0, __func__);
    tm__dealloc(src.items);
    if (st) {
        value_free(&v);
        return st;
    }
    return put(w, key, &v, __func__);
}

tm_status tm_gguf_set_str_array(tm_gguf_writer *w, const char *key,
                                const char *const *strs, int64_t n)
{
    if (n < 0 || (n && !strs))
        return TM_ERR(TM_EINVAL, "bad array: n = %lld, strs %s",
                      (long long)n, strs ? "set" : "NULL");
    if ((uint64_t)n > SIZE_MAX / sizeof(tm_gguf_value))
        return TM_ERR(TM_EOVERFLOW, "array of %lld strings is too long",
                      (long long)n);
    tm_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = TM_GGUF_ARRAY;
    v.elem = TM_GGUF_STRING;
    v.items = tm__calloc((size_t)(n ? n : 1) * sizeof *v.items, __func__);
    if (!v.items) return TM_ENOMEM;
    v.n = (uint64_t)n;
    for (int64_t j = 0; j < n; j++) {
        tm_gguf_value *e = &v.items[j];
        e->type = TM_GGUF_STRING;
        if (!strs[j]) {
            value_free(&v);
            return TM_ERR(TM_EINVAL, "string %lld is NULL", (long long)j);
        }
        e->n = strlen(strs[j]);
        e->str = dup_bytes(strs[j], (size_t)e->n, __func__);
        if (!e->str) {
            value_free(&v);
            return TM_ENOMEM;
        }
    }
    return put(w, key, &v, __func__);
}

tm_status tm_gguf_set_value(tm_gguf_writer *w, const char *key,
                            const tm_gguf_value *src)
{
    tm_gguf_value v;
    tm_status st = value_copy(&v, src, 0, __func__);
    if (st) {
        value_free(&v);
        return st;
    }
    return put(w, key, &v, __func__);
}

tm_status tm_gguf_writer_set_alignment(tm_gguf_writer *w, size_t alignment)
{
    if (!w) return TM_ERR(TM_EINVAL, "w is NULL");
    if (!alignment || (alignment & (alignment - 1)) ||
        alignment > UINT32_MAX)
        return TM_ERR(TM_EINVAL, "alignment %zu is not a power of two that "
                      "fits in uint32", alignment);
    return put_scalar(w, "general.alignment", TM_GGUF_UINT32,
                      (uint64_t)alignment, 0, 0, __func__);
}

tm_status tm_gguf_writer_add_tensor(tm_gguf_writer *w, const char *name,
                                    tm_tensor *t)
{
    if (!w || !name || !t)
        return TM_ERR(TM_EINVAL, "%s is NULL", !w ? "w" : !name ? "name"
                                                                : "t");
    tm_status st = check_name(name, "tensor name", __func__);
    if (st) return st;
    char nm[96];
    tm__fmt_name(nm, sizeof nm, name, strlen(name));
    int type = tm_gguf_type_of_dtype(tm_dtype_of(t));
    if (type < 0)
        return TM_ERR(TM_EDTYPE, "tensor '%s': dtype %s has no GGUF type", nm,
                      tm_dtype_name(tm_dtype_of(t)));
    int nd = tm_ndim(t);
    if (nd < 1 || nd > TM__GGUF_MAX_DIMS)
        return TM_ERR(TM_ESHAPE, "tensor '%s': %d dims (GGUF holds 1..4)", nm,
                      nd);
    for (int64_t i = 0; i < w->nt; i++)
        if (!strcmp(w->t[i].name, name))
            return TM_ERR(TM_EINVAL, "duplicate tensor name '%s'", nm);
    if (w->nt == w->t_cap) {
        int64_t cap = w->t_cap ? 2 * w->t_cap : 16;
        wtensor *nt = tm__alloc((size_t)cap * sizeof *nt, __func__);
        if (!nt) return TM_ENOMEM;
        if (w->nt) memcpy(nt, w->t, (size_t)w->nt * sizeof *nt);
        tm__dealloc(w->t);
        w->t = nt;
        w->t_cap = cap;
    }
    char *n = dup_bytes(name, strlen(name), __func__);
    if (!n) return TM_ENOMEM;
    tm_retain(t);
    w->t[w->nt++] = (wtensor){n, t, (uint32_t)type, tm_nbytes(t), 0};
    return TM_OK;
}

/* ---------------------------------------------------------- the file */

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
        wtensor *t = &w->t[i];
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
        const wtensor *t = &w->t[i];
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
