/*
 * gguf_read.c — parsing and validating a GGUF file held in memory.
 *
 * Two passes over the same bytes with the same checks: the first counts
 * the array element values and string bytes the file needs (every count
 * is bounded by the bytes left before it is trusted), the second fills
 * blocks of exactly that size.  So nothing is allocated from an unchecked
 * count, and a file claiming 2^60 elements fails before any allocation.
 */
#include "gguf_impl.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct rd {
    const unsigned char *p;
    size_t size, pos;
    const char *fn, *L;
    bool fill;            /* second pass: store what is read */
    size_t nvals, nstr;   /* first pass: counted; second: used */
    tm_gguf_value *vals;
    char *str;
    char where[160];      /* what is being read, for messages */
} rd;

#define NAME_BUF 96

static tm_status fail(rd *r, const char *fmt, const char *detail)
{
    return tm__errf(TM_EFORMAT, r->fn, fmt, r->L, r->where, detail);
}

/* n more bytes must exist at r->pos. */
static tm_status need(rd *r, uint64_t n, const char *what)
{
    if (n <= r->size - r->pos) return TM_OK;
    return tm__errf(TM_EFORMAT, r->fn, "%s: %s: %s at byte %zu needs %llu "
                    "bytes but only %zu are left (truncated file)", r->L,
                    r->where, what, r->pos, (unsigned long long)n,
                    r->size - r->pos);
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = (v << 8) | p[k];
    return v;
}

static tm_status rd_u32(rd *r, uint32_t *out, const char *what)
{
    tm_status st = need(r, 4, what);
    if (st) return st;
    *out = (uint32_t)le(r->p + r->pos, 4);
    r->pos += 4;
    return TM_OK;
}

static tm_status rd_u64(rd *r, uint64_t *out, const char *what)
{
    tm_status st = need(r, 8, what);
    if (st) return st;
    *out = le(r->p + r->pos, 8);
    r->pos += 8;
    return TM_OK;
}

/* A length-prefixed string.  Names (keys, tensor names) must be valid
 * UTF-8 without NUL and at most TM__GGUF_MAX_NAME bytes; string values
 * may hold any bytes.  In the fill pass *out gets a NUL-terminated copy. */
static tm_status rd_str(rd *r, bool name, const char **out, size_t *len,
                        const char *what)
{
    uint64_t n;
    char lw[64];
    snprintf(lw, sizeof lw, "the length of %s", what);
    tm_status st = rd_u64(r, &n, lw);
    if (st) return st;
    if (n > r->size - r->pos)
        return tm__errf(TM_EFORMAT, r->fn, "%s: %s: %s of %llu bytes at byte "
                        "%zu runs past the end of the file (%zu bytes left; "
                        "string length out of range, or a truncated file)",
                        r->L, r->where, what,
                        (unsigned long long)n, r->pos, r->size - r->pos);
    const unsigned char *s = r->p + r->pos;
    if (name) {
        size_t bad;
        if (n > TM__GGUF_MAX_NAME)
            return tm__errf(TM_EFORMAT, r->fn, "%s: %s: %s is %llu bytes, "
                            "more than the limit of %u", r->L, r->where, what,
                            (unsigned long long)n, TM__GGUF_MAX_NAME);
        if (memchr(s, 0, (size_t)n))
            return tm__errf(TM_EFORMAT, r->fn, "%s: %s: %s contains a NUL "
                            "byte", r->L, r->where, what);
        if (!tm__utf8_valid(s, (size_t)n, &bad))
            return tm__errf(TM_EFORMAT, r->fn, "%s: %s: %s is not valid "
                            "UTF-8 (byte 0x%02X at offset %zu)", r->L,
                            r->where, what, s[bad], bad);
    }
    if (r->fill) {
        char *d = r->str + r->nstr;
        memcpy(d, s, (size_t)n);
        d[n] = 0;
        *out = d;
    }
    r->nstr += (size_t)n + 1;
    if (len) *len = (size_t)n;
    r->pos += (size_t)n;
    return TM_OK;
}

static bool valid_type(uint32_t t) { return t <= TM_GGUF_FLOAT64; }

/* The least bytes one element of `type` occupies in the file. */
static uint64_t min_bytes(uint32_t type)
{
    if (type == TM_GGUF_STRING) return 8;      /* its length */
    if (type == TM_GGUF_ARRAY) return 4 + 8;   /* element type + count */
    return tm__gguf_scalar_size(type);
}

static tm_status rd_value(rd *r, uint32_t type, int depth, tm_gguf_value *v)
{
    tm_gguf_value tmp;
    if (!v) v = &tmp;
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)type;
    size_t sz = tm__gguf_scalar_size(type);
    tm_status st;
    if (sz) {
        if ((st = need(r, sz, tm_gguf_type_name((tm_gguf_type)type))))
            return st;
        tm__gguf_scalar_load(v, type, r->p + r->pos);
        if (type == TM_GGUF_BOOL && v->num.u > 1) {
            char d[48];
            snprintf(d, sizeof d, "%u at byte %zu", (unsigned)v->num.u,
                     r->pos);
            return fail(r, "%s: %s: bool value %s is neither 0 nor 1", d);
        }
        r->pos += sz;
        return TM_OK;
    }
    if (type == TM_GGUF_STRING) {
        size_t n = 0;
        if ((st = rd_str(r, false, &v->str, &n, "a string value")))
            return st;
        v->n = n;
        return TM_OK;
    }
    /* an array */
    if (depth >= TM__GGUF_MAX_DEPTH) {
        char d[32];
        snprintf(d, sizeof d, "%d", TM__GGUF_MAX_DEPTH);
        return fail(r, "%s: %s: arrays nested more than %s deep", d);
    }
    uint32_t et;
    uint64_t n;
    if ((st = rd_u32(r, &et, "an array's element type"))) return st;
    if (!valid_type(et)) {
        char d[48];
        snprintf(d, sizeof d, "%u at byte %zu", et, r->pos - 4);
        return fail(r, "%s: %s: array element type %s is not a GGUF value "
                    "type (0..12)", d);
    }
    if ((st = rd_u64(r, &n, "an array's length"))) return st;
    uint64_t mb = min_bytes(et);
    if (n > (r->size - r->pos) / mb)
        return tm__errf(TM_EFORMAT, r->fn, "%s: %s: array of %llu %s "
                        "elements at byte %zu needs at least %llu bytes per "
                        "element but only %zu bytes are left (array length "
                        "out of range, or a truncated file)", r->L, r->where,
                        (unsigned long long)n,
                        tm_gguf_type_name((tm_gguf_type)et), r->pos,
                        (unsigned long long)mb, r->size - r->pos);
    v->elem = (uint8_t)et;
    v->n = n;
    tm_gguf_value *items = NULL;
    if (r->fill) items = r->vals + r->nvals;
    r->nvals += (size_t)n;
    v->items = items;
    sz = tm__gguf_scalar_size(et);
    if (sz) {
        v->raw = r->p + r->pos;
        for (uint64_t j = 0; j < n; j++) {
            tm_gguf_value e;
            tm__gguf_scalar_load(&e, et, r->p + r->pos);
            if (et == TM_GGUF_BOOL && e.num.u > 1) {
                char d[64];
                snprintf(d, sizeof d, "%u (element %llu, byte %zu)",
                         (unsigned)e.num.u, (unsigned long long)j, r->pos);
                return fail(r, "%s: %s: bool value %s is neither 0 nor 1", d);
            }
            if (items) items[j] = e;
            r->pos += sz;
        }
        return TM_OK;
    }
    for (uint64_t j = 0; j < n; j++)
        if ((st = rd_value(r, et, depth + 1, items ? &items[j] : NULL)))
            return st;
    return TM_OK;
}

static int ref_cmp(const void *a, const void *b)
{
    const tm__gguf_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

int64_t tm__gguf_ref_find(const tm__gguf_ref *refs, int64_t n,
                          const char *name)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(refs[mid].name, name);
        if (!c) return refs[mid].idx;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -1;
}

/* r->where = "<what> <i> ('<name>')" with the name as read at s[n]. */
static void set_where(rd *r, const char *what, uint64_t i,
                      const unsigned char *s, size_t n)
{
    char nm[NAME_BUF];
    if (s) {
        tm__fmt_name(nm, sizeof nm, (const char *)s, n);
        snprintf(r->where, sizeof r->where, "%s %llu ('%s')", what,
                 (unsigned long long)i, nm);
    } else {
        snprintf(r->where, sizeof r->where, "%s %llu", what,
                 (unsigned long long)i);
    }
}

static tm_status rd_header(tm_gguf *g, rd *r, uint64_t *nt, uint64_t *nkv)
{
    tm_status st;
    snprintf(r->where, sizeof r->where, "header");
    if ((st = need(r, 4, "the magic"))) return st;
    if (memcmp(r->p, "GGUF", 4)) {
        char d[NAME_BUF];
        tm__fmt_name(d, sizeof d, (const char *)r->p, 4);
        return fail(r, "%s: %s: bad magic '%s' (not a GGUF file)", d);
    }
    r->pos = 4;
    uint32_t ver;
    if ((st = rd_u32(r, &ver, "the version"))) return st;
    if (ver == 1)
        return fail(r, "%s: %s: version 1 is not supported (it used 32-bit "
                    "counts; only versions 2 and 3 are)%s", "");
    if (ver != 2 && ver != 3) {
        char d[96];
        snprintf(d, sizeof d, "%u%s", ver, (ver & 0xFFFF) == 0 ?
                 ", a big-endian file?" : "");
        return fail(r, "%s: %s: unsupported version %s (only versions 2 and "
                    "3 are)", d);
    }
    g->version = ver;
    if ((st = rd_u64(r, nt, "the tensor count"))) return st;
    if ((st = rd_u64(r, nkv, "the metadata count"))) return st;
    /* a key-value needs >= 13 bytes (key length, type, a 1-byte value), a
     * tensor info >= 24 (name length, dim count, type, offset) */
    size_t left = r->size - r->pos;
    if (*nkv > left / 13)
        return tm__errf(TM_EFORMAT, r->fn, "%s: header: %llu metadata "
                        "entries cannot fit in the %zu bytes left (at least "
                        "13 each; metadata count out of range, or a truncated "
                        "file)", r->L,
                        (unsigned long long)*nkv, left);
    left -= (size_t)*nkv * 13;
    if (*nt > left / 24)
        return tm__errf(TM_EFORMAT, r->fn, "%s: header: %llu tensor infos "
                        "cannot fit in the %zu bytes left after the metadata "
                        "(at least 24 each; tensor count out of range, or a "
                        "truncated file)", r->L,
                        (unsigned long long)*nt, left);
    return TM_OK;
}

static tm_status rd_kv(tm_gguf *g, rd *r, uint64_t i)
{
    tm_status st;
    tm__gguf_kv *kv = r->fill ? &g->kv[i] : NULL;
    const char *key = NULL;
    size_t kl = 0;
    set_where(r, "metadata entry", i, NULL, 0);
    if ((st = rd_str(r, true, &key, &kl, "the key"))) return st;
    const unsigned char *ks = r->p + r->pos - kl;
    if (!kl) return fail(r, "%s: %s: the key is empty%s", "");
    set_where(r, "metadata entry", i, ks, kl);
    uint32_t type;
    if ((st = rd_u32(r, &type, "the value type"))) return st;
    if (!valid_type(type)) {
        char d[48];
        snprintf(d, sizeof d, "%u at byte %zu", type, r->pos - 4);
        return fail(r, "%s: %s: value type %s is not a GGUF value type "
                    "(0..12)", d);
    }
    tm_gguf_value tmp;
    tm_gguf_value *v = kv ? &kv->value : &tmp;
    if ((st = rd_value(r, type, 0, v))) return st;
    if (kv) {
        kv->key = key;
        kv->key_len = kl;
    }
    if (kl == 17 && !memcmp(ks, "general.alignment", 17)) {
        if (type != TM_GGUF_UINT32)
            return fail(r, "%s: %s: general.alignment is %s, not uint32",
                        tm_gguf_type_name((tm_gguf_type)type));
        uint64_t a = v->num.u;
        if (a == 0 || (a & (a - 1))) {
            char d[32];
            snprintf(d, sizeof d, "%llu", (unsigned long long)a);
            return fail(r, "%s: %s: general.alignment is %s: it must be a "
                        "nonzero power of two", d);
        }
        g->alignment = (size_t)a;
    }
    return TM_OK;
}

static tm_status rd_tinfo(tm_gguf *g, rd *r, uint64_t i)
{
    tm_status st;
    const char *name = NULL;
    size_t nl = 0;
    char d[160];
    set_where(r, "tensor", i, NULL, 0);
    if ((st = rd_str(r, true, &name, &nl, "the name"))) return st;
    set_where(r, "tensor", i, r->p + r->pos - nl, nl);
    uint32_t nd, type;
    uint64_t ne[TM__GGUF_MAX_DIMS], off;
    if ((st = rd_u32(r, &nd, "the dim count"))) return st;
    if (nd > TM__GGUF_MAX_DIMS) {
        snprintf(d, sizeof d, "%u", nd);
        return fail(r, "%s: %s: %s dims, more than 4", d);
    }
    for (uint32_t k = 0; k < nd; k++) {
        if ((st = rd_u64(r, &ne[k], "a dim"))) return st;
        if (ne[k] > (uint64_t)INT64_MAX) {
            snprintf(d, sizeof d, "%u is %llu", k, (unsigned long long)ne[k]);
            return fail(r, "%s: %s: dim %s (negative as int64)", d);
        }
    }
    if ((st = rd_u32(r, &type, "the tensor type"))) return st;
    const tm__gguf_ggml_type *gt = tm__gguf_ggml_type_of(type);
    if (!gt) {
        snprintf(d, sizeof d, "%u", type);
        return fail(r, "%s: %s: unknown ggml tensor type %s", d);
    }
    if ((st = rd_u64(r, &off, "the data offset"))) return st;
    uint64_t row = nd ? ne[0] : 1;
    if (row % gt->block) {
        snprintf(d, sizeof d, "%llu values is not a multiple of %s's block "
                 "of %u", (unsigned long long)row, gt->name, gt->block);
        return fail(r, "%s: %s: a row of %s", d);
    }
    /* every dim counts (zeros as 1) so the strides of an empty tensor fit:
     * the element count and the byte size both within int64 */
    uint64_t extent = 1, rows = 1;
    uint64_t blocks = row ? row / gt->block : 1;
    bool empty = false;
    for (uint32_t k = 0; k < nd; k++) {
        uint64_t s = ne[k] ? ne[k] : 1;
        if (!ne[k]) empty = true;
        if (extent > (uint64_t)INT64_MAX / s)
            return fail(r, "%s: %s: %sthe element count overflows int64 "
                        "(size overflow)", "");
        extent *= s;
        if (k) rows *= s;
    }
    if (blocks > (uint64_t)INT64_MAX / gt->bytes ||
        rows > (uint64_t)INT64_MAX / (blocks * gt->bytes))
        return fail(r, "%s: %s: %sthe byte size overflows int64 (size "
                    "overflow)", "");
    uint64_t bytes = blocks * gt->bytes;
    if (off > (uint64_t)INT64_MAX) {
        snprintf(d, sizeof d, "%llu", (unsigned long long)off);
        return fail(r, "%s: %s: data offset %s is out of range", d);
    }
    if (!r->fill) return TM_OK;
    tm__gguf_tinfo *t = &g->t[i];
    t->info.name = name;
    t->name_len = nl;
    t->info.ggml_type = type;
    t->info.dtype = (tm_dtype)gt->dtype;
    t->info.ndim = (int)nd;
    for (uint32_t k = 0; k < nd; k++)
        t->info.shape[nd - 1 - k] = (int64_t)ne[k];
    t->info.offset = (size_t)off;
    t->info.nbytes = empty ? 0 : (size_t)(bytes * rows);
    return TM_OK;
}

static tm_status rd_all(tm_gguf *g, rd *r)
{
    uint64_t nt, nkv;
    tm_status st = rd_header(g, r, &nt, &nkv);
    if (st) return st;
    g->n_kv = (int64_t)nkv;
    g->n_tensors = (int64_t)nt;
    g->alignment = TM__GGUF_DEFAULT_ALIGN;
    for (uint64_t i = 0; i < nkv; i++)
        if ((st = rd_kv(g, r, i))) return st;
    for (uint64_t i = 0; i < nt; i++)
        if ((st = rd_tinfo(g, r, i))) return st;
    return TM_OK;
}

typedef struct span {
    size_t off, n;
    int64_t idx;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static tm_status check_layout(tm_gguf *g, rd *r)
{
    size_t a = g->alignment, pos = r->pos;
    char nm[NAME_BUF], nm2[NAME_BUF];
    if (pos > SIZE_MAX - (a - 1))
        return tm__errf(TM_EFORMAT, r->fn, "%s: the data section offset "
                        "overflows when aligned to %zu", r->L, a);
    g->data_offset = (pos + a - 1) / a * a;
    size_t ds = r->size > g->data_offset ? r->size - g->data_offset : 0;
    span *sp = tm__alloc((size_t)(g->n_tensors ? g->n_tensors : 1) *
                         sizeof *sp, r->fn);
    if (!sp) return TM_ENOMEM;
    int64_t ns = 0;
    tm_status st = TM_OK;
    for (int64_t i = 0; i < g->n_tensors && !st; i++) {
        const tm_gguf_tensor_info *t = &g->t[i].info;
        tm__fmt_name(nm, sizeof nm, t->name, g->t[i].name_len);
        if (t->offset % a)
            st = tm__errf(TM_EFORMAT, r->fn, "%s: tensor %lld ('%s'): data "
                          "offset %zu is not a multiple of the alignment %zu "
                          "(misaligned tensor data)", r->L, (long long)i, nm,
                          t->offset, a);
        else if (t->nbytes > SIZE_MAX - a)
            st = tm__errf(TM_EFORMAT, r->fn, "%s: tensor %lld ('%s'): %zu "
                          "bytes overflow when padded to %zu (size overflow)",
                          r->L, (long long)i, nm, t->nbytes, a);
        else if (t->offset > ds || t->nbytes > ds - t->offset)
            st = tm__errf(TM_EFORMAT, r->fn, "%s: tensor %lld ('%s'): data "
                          "at offset %zu of %zu bytes runs past the end of "
                          "the %zu-byte data section (out of the file; "
                          "truncated?)", r->L, (long long)i, nm, t->offset,
                          t->nbytes, ds);
        else if (t->nbytes)
            sp[ns++] = (span){t->offset, t->nbytes, i};
    }
    if (!st) qsort(sp, (size_t)ns, sizeof *sp, span_cmp);
    for (int64_t k = 1; k < ns && !st; k++) {
        const span *p = &sp[k - 1], *q = &sp[k];
        if (q->off >= p->off + p->n) continue;
        tm__fmt_name(nm, sizeof nm, g->t[q->idx].info.name,
                     g->t[q->idx].name_len);
        tm__fmt_name(nm2, sizeof nm2, g->t[p->idx].info.name,
                     g->t[p->idx].name_len);
        st = tm__errf(TM_EFORMAT, r->fn, "%s: tensor %lld ('%s'): data at "
                      "offset %zu overlaps tensor %lld ('%s') at [%zu, %zu)",
                      r->L, (long long)q->idx, nm, q->off,
                      (long long)p->idx, nm2, p->off, p->off + p->n);
    }
    tm__dealloc(sp);
    return st;
}

/* Sorted refs; a duplicate name is an error. */
static tm_status sort_names(rd *r, tm__gguf_ref *refs, int64_t n,
                            const char *what)
{
    qsort(refs, (size_t)n, sizeof *refs, ref_cmp);
    for (int64_t k = 1; k < n; k++) {
        if (strcmp(refs[k - 1].name, refs[k].name)) continue;
        char nm[NAME_BUF];
        tm__fmt_name(nm, sizeof nm, refs[k].name, strlen(refs[k].name));
        return tm__errf(TM_EFORMAT, r->fn, "%s: duplicate %s '%s' (entries "
                        "%lld and %lld)", r->L, what, nm,
                        (long long)refs[k - 1].idx, (long long)refs[k].idx);
    }
    return TM_OK;
}

tm_status tm__gguf_parse(tm_gguf *g, const char *fn)
{
    rd r = {0};
    r.p = g->map->base;
    r.size = g->map->size;
    r.fn = fn;
    r.L = g->label;
    tm_status st = rd_all(g, &r);
    if (st) return st;
    size_t nv = r.nvals, ns = r.nstr;
    size_t nkv = (size_t)g->n_kv, nt = (size_t)g->n_tensors;
    g->values = tm__alloc((nv ? nv : 1) * sizeof *g->values, fn);
    g->strings = tm__alloc(ns ? ns : 1, fn);
    g->kv = tm__calloc((nkv ? nkv : 1) * sizeof *g->kv, fn);
    g->t = tm__calloc((nt ? nt : 1) * sizeof *g->t, fn);
    g->kv_sorted = tm__alloc((nkv ? nkv : 1) * sizeof *g->kv_sorted, fn);
    g->t_sorted = tm__alloc((nt ? nt : 1) * sizeof *g->t_sorted, fn);
    if (!g->values || !g->strings || !g->kv || !g->t || !g->kv_sorted ||
        !g->t_sorted)
        return TM_ENOMEM;
    memset(&r, 0, sizeof r);
    r.p = g->map->base;
    r.size = g->map->size;
    r.fn = fn;
    r.L = g->label;
    r.fill = true;
    r.vals = g->values;
    r.str = g->strings;
    if ((st = rd_all(g, &r))) return st;
    TM_ASSERT(r.nvals == nv && r.nstr == ns, TM_ESTATE);
    for (size_t i = 0; i < nkv; i++)
        g->kv_sorted[i] = (tm__gguf_ref){g->kv[i].key, (int64_t)i};
    for (size_t i = 0; i < nt; i++)
        g->t_sorted[i] = (tm__gguf_ref){g->t[i].info.name, (int64_t)i};
    if ((st = sort_names(&r, g->kv_sorted, g->n_kv, "metadata key")))
        return st;
    if ((st = sort_names(&r, g->t_sorted, g->n_tensors, "tensor name")))
        return st;
    return check_layout(g, &r);
}
