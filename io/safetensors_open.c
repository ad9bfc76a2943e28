/*
 * safetensors_open.c — opening and validating safetensors files.
 *
 * The whole file is mapped read-only and wrapped as one MAPPED storage;
 * tensors handed out (safetensors_read.c) are views onto it.  Validation (all of it at open):
 * the reference reader's rules (safetensors/src/tensor.rs: read_metadata,
 * Metadata::validate) plus Foundry's own (dims <= TM_MAX_DIMS, no negative
 * dims, no duplicate keys, string metadata values, no NUL in names).
 */
#include "foundry/io.h"
#include "file_map.h"
#include "json.h"
#include "safetensors_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const tm__st_dtype tm__st_dtypes[] = {
    {"BOOL", 8, TM_BOOL},     {"F4", 4, -1},
    {"F6_E2M3", 6, -1},       {"F6_E3M2", 6, -1},
    {"U8", 8, TM_U8},         {"I8", 8, TM_I8},
    {"F8_E5M2", 8, -1},       {"F8_E4M3", 8, -1},
    {"F8_E8M0", 8, -1},       {"F8_E4M3FNUZ", 8, -1},
    {"F8_E5M2FNUZ", 8, -1},   {"I16", 16, TM_I16},
    {"U16", 16, -1},          {"F16", 16, TM_F16},
    {"BF16", 16, TM_BF16},    {"I32", 32, TM_I32},
    {"U32", 32, -1},          {"F32", 32, TM_F32},
    {"C64", 64, -1},          {"F64", 64, TM_F64},
    {"I64", 64, TM_I64},      {"U64", 64, -1},
};
const int tm__st_ndtypes = (int)(sizeof tm__st_dtypes / sizeof *tm__st_dtypes);

int tm__st_dtype_find(const char *s, size_t len)
{
    for (int i = 0; i < tm__st_ndtypes; i++)
        if (strlen(tm__st_dtypes[i].name) == len &&
            !memcmp(tm__st_dtypes[i].name, s, len))
            return i;
    return -1;
}

int tm__st_dtype_of(tm_dtype dt)
{
    for (int i = 0; i < tm__st_ndtypes; i++)
        if (tm__st_dtypes[i].tm == (int)dt) return i;
    return -1;
}

/* ------------------------------------------------------------- the handle */


static void unmap_release(void *data, void *user)
{
    munmap(data, (size_t)(uintptr_t)user);
}

static void dealloc_release(void *data, void *user)
{
    (void)user;
    tm__dealloc(data);
}

void tm_safetensors_close(tm_safetensors *f)
{
    if (!f) return;
    tm__json_free(&f->doc);
    tm__dealloc(f->t);
    tm__dealloc(f->by_name);
    tm__dealloc(f->meta);
    tm_storage_free(f->storage);
    tm__dealloc(f->label);
    tm__dealloc(f);
}

/* ------------------------------------------------------------- validation */

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

const char *tm__st_name(char *buf, const char *name)
{
    return tm__fmt_name(buf, TM__ST_NAME_BUF, name, strlen(name));
}

/* Reads a JSON array of non-negative integers into out[max]; *count gets
 * the array's length even when it exceeds max (nothing stored then). */
static const char *read_uints(const tm__json_doc *doc, const tm__json_node *a,
                              int64_t *out, size_t max, size_t *count,
                              size_t *bad)
{
    *count = a->count;
    if (a->count > max) return NULL;
    size_t c = (size_t)(a - doc->nodes) + 1;
    for (size_t k = 0; k < a->count; k++, c = doc->nodes[c].next) {
        const tm__json_node *v = &doc->nodes[c];
        *bad = k;
        if (v->type != TM__JSON_INT) return "is not an integer";
        if (v->i < 0) return "is negative";
        out[k] = v->i;
    }
    return NULL;
}

static char *fmt_dims(const int64_t *d, int n, char *buf, size_t size)
{
    return tm__fmt_shape(d, n, buf, size);
}

/* Fills e from the header entry `node` (an object member named e->name). */
static tm_status parse_entry(tm_safetensors *f, const char *fn,
                             const tm__json_node *node, tm__st_entry *e,
                             uint64_t data_len)
{
    const tm__json_doc *doc = &f->doc;
    char nm[TM__ST_NAME_BUF], sh[TM_SHAPE_BUF];
    const char *L = f->label;
    size_t at = (size_t)(node - doc->nodes);
    tm__st_name(nm, e->name);
    if (node->type != TM__JSON_OBJECT)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': entry is not a "
                        "JSON object", L, nm);
    const tm__json_node *dt = tm__json_get(doc, at, "dtype");
    const tm__json_node *shape = tm__json_get(doc, at, "shape");
    const tm__json_node *offs = tm__json_get(doc, at, "data_offsets");
    if (!dt || !shape || !offs)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': missing \"%s\"", L,
                        nm, !dt ? "dtype" : !shape ? "shape" : "data_offsets");
    if (dt->type != TM__JSON_STRING)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': \"dtype\" is not a "
                        "string", L, nm);
    e->dtype = tm__st_dtype_find(dt->str, dt->len);
    if (e->dtype < 0) {
        char d[TM__ST_NAME_BUF];
        tm__fmt_name(d, sizeof d, dt->str, dt->len);
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': unknown dtype "
                        "\"%s\"", L, nm, d);
    }
    if (shape->type != TM__JSON_ARRAY)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': \"shape\" is not an "
                        "array", L, nm);
    size_t cnt, bad;
    const char *why = read_uints(doc, shape, e->shape, TM_MAX_DIMS, &cnt,
                                 &bad);
    if (cnt > TM_MAX_DIMS)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': shape has %zu dims, "
                        "more than TM_MAX_DIMS (%d)", L, nm, cnt, TM_MAX_DIMS);
    if (why) {
        const tm__json_node *v = &doc->nodes[(size_t)(shape - doc->nodes) + 1];
        for (size_t k = 0; k < bad; k++) v = &doc->nodes[v->next];
        if (v->type == TM__JSON_INT)
            return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': dim %zu is %lld "
                            "(negative)", L, nm, bad, (long long)v->i);
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': dim %zu %s", L, nm,
                        bad, why);
    }
    e->ndim = (int)cnt;
    int64_t o[2];
    if (offs->type != TM__JSON_ARRAY ||
        read_uints(doc, offs, o, 2, &cnt, &bad) || cnt != 2)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': \"data_offsets\" "
                        "must be [begin, end] with non-negative integers", L,
                        nm);
    e->begin = (uint64_t)o[0];
    e->end = (uint64_t)o[1];
    fmt_dims(e->shape, e->ndim, sh, sizeof sh);
    /* element count, then bits, overflow-checked.  The product runs over
     * every dim, zeros counted as 1: stricter than the reference (which
     * stops at a zero), because a tensor's strides are that product, so
     * Foundry cannot represent [0, 2^32, 2^32] even though it is empty. */
    const tm__st_dtype *d = &tm__st_dtypes[e->dtype];
    uint64_t extent = 1;
    bool empty = false;
    for (int k = 0; k < e->ndim; k++) {
        uint64_t s = (uint64_t)e->shape[k];
        if (!s) empty = true;
        if (s > 1 && extent > (uint64_t)INT64_MAX / s)
            return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': shape %s has "
                            "more elements than fit in 63 bits (size "
                            "overflow)", L, nm, sh);
        if (s > 1) extent *= s;
    }
    uint64_t numel = empty ? 0 : extent;
    if (numel && (uint64_t)d->bits > UINT64_MAX / numel)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': shape %s of %s "
                        "overflows 64 bits in bytes (size overflow)", L, nm,
                        sh, d->name);
    uint64_t nbits = numel * (uint64_t)d->bits;
    if (nbits % 8)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': %llu elements of %s "
                        "do not fill whole bytes", L, nm,
                        (unsigned long long)numel, d->name);
    if (e->end < e->begin)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': data_offsets "
                        "[%llu,%llu) are reversed (end before begin)", L, nm,
                        (unsigned long long)e->begin,
                        (unsigned long long)e->end);
    if (e->end > data_len)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': data_offsets "
                        "[%llu,%llu) run past the end of the %llu-byte data "
                        "section (out of range; truncated file?)", L, nm,
                        (unsigned long long)e->begin,
                        (unsigned long long)e->end,
                        (unsigned long long)data_len);
    if (e->end - e->begin != nbits / 8)
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': shape %s of %s "
                        "needs %llu bytes but data_offsets [%llu,%llu) span "
                        "%llu (shape-size mismatch)", L, nm, sh, d->name,
                        (unsigned long long)(nbits / 8),
                        (unsigned long long)e->begin,
                        (unsigned long long)e->end,
                        (unsigned long long)(e->end - e->begin));
    return TM_OK;
}

static int by_offsets(const void *a, const void *b)
{
    const tm__st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_name_cmp(const void *a, const void *b)
{
    return strcmp((*(const tm__st_entry *const *)a)->name,
                  (*(const tm__st_entry *const *)b)->name);
}

/* Offsets sorted-contiguous from 0, covering the data section exactly. */
static tm_status check_layout(tm_safetensors *f, const char *fn,
                              uint64_t data_len)
{
    char a[TM__ST_NAME_BUF], b[TM__ST_NAME_BUF];
    const char *L = f->label;
    qsort(f->t, (size_t)f->nt, sizeof *f->t, by_offsets);
    uint64_t pos = 0;
    for (int i = 0; i < f->nt; i++) {
        const tm__st_entry *e = &f->t[i];
        if (e->begin == pos) {
            pos = e->end;
            continue;
        }
        tm__st_name(b, e->name);
        if (i == 0)
            return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': data_offsets "
                            "[%llu,%llu) leave a gap of %llu bytes at the "
                            "start of the data section", L, b,
                            (unsigned long long)e->begin,
                            (unsigned long long)e->end,
                            (unsigned long long)e->begin);
        tm__st_name(a, f->t[i - 1].name);
        if (e->begin < pos)
            return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': data_offsets "
                            "[%llu,%llu) overlap the previous tensor '%s' "
                            "ending at %llu", L, b,
                            (unsigned long long)e->begin,
                            (unsigned long long)e->end, a,
                            (unsigned long long)pos);
        return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s': data_offsets "
                        "[%llu,%llu) leave a gap of %llu bytes after the "
                        "previous tensor '%s' ending at %llu", L, b,
                        (unsigned long long)e->begin,
                        (unsigned long long)e->end,
                        (unsigned long long)(e->begin - pos), a,
                        (unsigned long long)pos);
    }
    if (pos != data_len)
        return tm__errf(TM_EFORMAT, fn, "%s: the data section is %llu bytes "
                        "but the tensors cover %llu: %llu trailing bytes", L,
                        (unsigned long long)data_len, (unsigned long long)pos,
                        (unsigned long long)(data_len - pos));
    return TM_OK;
}

static tm_status no_nul(const tm_safetensors *f, const char *fn,
                        const char *what, const char *s, size_t len)
{
    if (!memchr(s, 0, len)) return TM_OK;
    char nm[TM__ST_NAME_BUF];
    tm__fmt_name(nm, sizeof nm, s, len);
    return tm__errf(TM_EFORMAT, fn, "%s: %s '%s' contains a NUL character",
                    f->label, what, nm);
}

static tm_status parse_metadata(tm_safetensors *f, const char *fn,
                                const tm__json_node *m)
{
    const tm__json_doc *doc = &f->doc;
    if (m->type == TM__JSON_NULL) return TM_OK; /* as if absent */
    if (m->type != TM__JSON_OBJECT)
        return tm__errf(TM_EFORMAT, fn, "%s: \"__metadata__\" is not a JSON "
                        "object", f->label);
    f->has_meta = true;
    if (m->count > (size_t)INT32_MAX)
        return tm__errf(TM_EFORMAT, fn, "%s: too many metadata entries",
                        f->label);
    f->meta = tm__alloc((m->count ? m->count : 1) * sizeof *f->meta, fn);
    if (!f->meta) return TM_ENOMEM;
    size_t c = (size_t)(m - doc->nodes) + 1;
    for (size_t k = 0; k < m->count; k++, c = doc->nodes[c].next) {
        const tm__json_node *v = &doc->nodes[c];
        char nm[TM__ST_NAME_BUF];
        tm_status st = no_nul(f, fn, "metadata key", v->key, v->key_len);
        if (st) return st;
        if (v->type != TM__JSON_STRING) {
            tm__fmt_name(nm, sizeof nm, v->key, v->key_len);
            return tm__errf(TM_EFORMAT, fn, "%s: metadata value for key '%s' "
                            "is not a string", f->label, nm);
        }
        if ((st = no_nul(f, fn, "metadata value", v->str, v->len))) return st;
        f->meta[f->nmeta++] = v;
    }
    return TM_OK;
}

static tm_status too_short(const char *fn, const char *label, size_t size)
{
    return tm__errf(TM_EFORMAT, fn, "%s: file is %zu bytes, too short for "
                    "the 8-byte header length (truncated file)", label, size);
}

static tm_status parse_file(tm_safetensors *f, const char *fn)
{
    const char *L = f->label;
    if (f->size < 8) return too_short(fn, L, f->size);
    uint64_t n = le64(f->bytes);
    if (n > TM__ST_MAX_HEADER) {
        if (n > UINT64_MAX - 8)
            return tm__errf(TM_EFORMAT, fn, "%s: header length %llu overflows "
                            "when the 8 length bytes are added (header length "
                            "overflow)", L, (unsigned long long)n);
        return tm__errf(TM_EFORMAT, fn, "%s: header length %llu exceeds the "
                        "limit of %llu bytes (header too large)", L,
                        (unsigned long long)n, TM__ST_MAX_HEADER);
    }
    if (n > (uint64_t)f->size - 8)
        return tm__errf(TM_EFORMAT, fn, "%s: header length %llu runs past the "
                        "end of the %zu-byte file (header length overflow)",
                        L, (unsigned long long)n, f->size);
    const unsigned char *hdr = f->bytes + 8;
    size_t bad;
    if (!tm__utf8_valid(hdr, (size_t)n, &bad))
        return tm__errf(TM_EFORMAT, fn, "%s: header is not valid UTF-8 (byte "
                        "0x%02X at header offset %zu)", L, hdr[bad], bad);
    size_t plen = strlen(L) + 16;
    char *prefix = tm__alloc(plen, fn);
    if (!prefix) return TM_ENOMEM;
    snprintf(prefix, plen, "%s: header: ", L);
    tm_status st = tm__json_parse(&f->doc, (const char *)hdr, (size_t)n, fn,
                                  prefix);
    tm__dealloc(prefix);
    if (st) return st;
    const tm__json_doc *doc = &f->doc;
    const tm__json_node *root = &doc->nodes[0];
    if (root->type != TM__JSON_OBJECT)
        return tm__errf(TM_EFORMAT, fn, "%s: header is not a JSON object", L);
    f->data_start = 8 + n;
    uint64_t data_len = (uint64_t)f->size - f->data_start;
    const tm__json_node *meta = tm__json_get(doc, 0, "__metadata__");
    size_t nt = root->count - (meta ? 1 : 0);
    if (nt > (size_t)INT32_MAX)
        return tm__errf(TM_EFORMAT, fn, "%s: too many tensors", L);
    if (meta && (st = parse_metadata(f, fn, meta))) return st;
    f->t = tm__calloc((nt ? nt : 1) * sizeof *f->t, fn);
    f->by_name = tm__alloc((nt ? nt : 1) * sizeof *f->by_name, fn);
    if (!f->t || !f->by_name) return TM_ENOMEM;
    size_t c = 1;
    for (size_t k = 0; k < root->count; k++, c = doc->nodes[c].next) {
        const tm__json_node *v = &doc->nodes[c];
        if (v == meta) continue;
        if ((st = no_nul(f, fn, "tensor name", v->key, v->key_len)))
            return st;
        tm__st_entry *e = &f->t[f->nt];
        e->name = v->key;
        if ((st = parse_entry(f, fn, v, e, data_len))) return st;
        f->nt++;
    }
    if ((st = check_layout(f, fn, data_len))) return st;
    for (int i = 0; i < f->nt; i++) f->by_name[i] = &f->t[i];
    qsort(f->by_name, (size_t)f->nt, sizeof *f->by_name, by_name_cmp);
    return TM_OK;
}

/* Builds a handle over storage `s` (whose reference it takes). */
static tm_safetensors *open_storage(const char *fn, const char *label,
                                    tm_storage *s)
{
    tm_safetensors *f = tm__calloc(sizeof *f, fn);
    if (!f) {
        tm_storage_free(s);
        return NULL;
    }
    f->storage = s;
    f->bytes = s->handle;
    f->size = s->nbytes;
    size_t ll = strlen(label);
    f->label = tm__alloc(ll + 1, fn);
    if (f->label) memcpy(f->label, label, ll + 1);
    if (!f->label || parse_file(f, fn)) {
        tm_safetensors_close(f);
        return NULL;
    }
    tm_storage_set_readonly(s);
    return f;
}

tm_safetensors *tm_safetensors_open(const char *path)
{
    if (!path) {
        TM_ERR(TM_EINVAL, "path is NULL");
        return NULL;
    }
    if (!tm__host_le()) {
        TM_ERR(TM_EUNSUPPORTED, "%s: big-endian hosts are not supported",
               path);
        return NULL;
    }
    void *map;
    size_t size;
    if (tm__file_map(__func__, path, 8, &map, &size)) return NULL;
    if (!map) { /* the message of a truncated header */
        too_short(__func__, path, size);
        return NULL;
    }
    tm_storage *s = tm_storage_wrap(map, size, TM_STORAGE_MAPPED,
                                    unmap_release, (void *)(uintptr_t)size);
    if (!s) return NULL;
    return open_storage(__func__, path, s);
}

tm_safetensors *tm_safetensors_open_memory(const void *data, size_t size)
{
    if (!data && size) {
        TM_ERR(TM_EINVAL, "data is NULL for %zu bytes", size);
        return NULL;
    }
    if (!tm__host_le()) {
        TM_ERR(TM_EUNSUPPORTED, "big-endian hosts are not supported");
        return NULL;
    }
    if (size < 8) {
        too_short(__func__, "<memory>", size);
        return NULL;
    }
    void *copy = tm__alloc(size, __func__);
    if (!copy) return NULL;
    memcpy(copy, data, size);
    tm_storage *s = tm_storage_wrap(copy, size, TM_STORAGE_BORROWED,
                                    dealloc_release, NULL);
    if (!s) return NULL;
    return open_storage(__func__, "<memory>", s);
}

