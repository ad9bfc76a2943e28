/*
 * gguf_write.c — the GGUF writer: metadata values (copied, checked as the
 * reader would check them) and tensors; gguf_write_file.c writes them out.
 */
#include "gguf_impl.h"
#include "json.h"

#include <stdio.h>

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
        tm__gguf_wkv *nk = tm__alloc((size_t)cap * sizeof *nk, fn);
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
        tm__gguf_wtensor *nt = tm__alloc((size_t)cap * sizeof *nt, __func__);
        if (!nt) return TM_ENOMEM;
        if (w->nt) memcpy(nt, w->t, (size_t)w->nt * sizeof *nt);
        tm__dealloc(w->t);
        w->t = nt;
        w->t_cap = cap;
    }
    char *n = dup_bytes(name, strlen(name), __func__);
    if (!n) return TM_ENOMEM;
    tm_retain(t);
    w->t[w->nt++] = (tm__gguf_wtensor){n, t, (uint32_t)type, tm_nbytes(t), 0};
    return TM_OK;
}
