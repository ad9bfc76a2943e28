/*
 * safetensors_write.c — tm_safetensors_save: the reference writer's layout
 * (safetensors/src/tensor.rs: prepare, serialize_to_file), written
 * atomically (temporary file beside the target, fsync, rename).
 *
 * Layout, as the reference produces it:
 *   - tensors sorted by dtype descending in the reference's Dtype order
 *     (so larger elements come first and every tensor starts aligned to
 *     its element size), then by name, bytewise ascending;
 *   - header: compact JSON (serde_json::to_string), "__metadata__" first,
 *     then each tensor as {"dtype":..,"shape":[..],"data_offsets":[b,e]};
 *     strings escaped as serde_json escapes them;
 *   - header padded with spaces to a multiple of 8; data contiguous from 0.
 */
#include "foundry/io.h"
#include "file_map.h"
#include "file_out.h"
#include "json.h"
#include "safetensors_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_item {
    const char *name;
    int rank;        /* index in tm__st_dtypes */
    tm_tensor *t;    /* borrowed */
    uint64_t begin, end;
} st_item;

static int item_by_name(const void *a, const void *b)
{
    return strcmp(((const st_item *)a)->name, ((const st_item *)b)->name);
}

/* The reference's order: dtype descending, then name ascending. */
static int item_by_layout(const void *a, const void *b)
{
    const st_item *x = a, *y = b;
    if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* --------------------------------------------------------- header writer */

/* Appends to buf when it is non-NULL; always counts. */
typedef struct jout {
    char *buf;
    size_t n;
} jout;

static void put(jout *o, const char *s, size_t len)
{
    if (o->buf) memcpy(o->buf + o->n, s, len);
    o->n += len;
}

static void puts_(jout *o, const char *s) { put(o, s, strlen(s)); }

/* A JSON string as serde_json writes it: '"' and '\\' escaped, \b \f \n \r
 * \t by name, other control bytes as \u00xx (lowercase hex), everything
 * else (0x7F and UTF-8 included) as is. */
static void put_str(jout *o, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    put(o, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[7];
        switch (*p) {
        case '"': put(o, "\\\"", 2); break;
        case '\\': put(o, "\\\\", 2); break;
        case '\b': put(o, "\\b", 2); break;
        case '\f': put(o, "\\f", 2); break;
        case '\n': put(o, "\\n", 2); break;
        case '\r': put(o, "\\r", 2); break;
        case '\t': put(o, "\\t", 2); break;
        default:
            if (*p < 0x20) {
                memcpy(e, "\\u00", 4);
                e[4] = hex[*p >> 4];
                e[5] = hex[*p & 15];
                put(o, e, 6);
            } else {
                put(o, (const char *)p, 1);
            }
        }
    }
    put(o, "\"", 1);
}

static void put_u64(jout *o, uint64_t v)
{
    char b[24];
    int k = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    put(o, b, (size_t)k);
}

static void write_header(jout *o, const st_item *items, int n,
                         const char *const *mk, const char *const *mv,
                         int nmeta)
{
    put(o, "{", 1);
    bool first = true;
    if (mk) {
        puts_(o, "\"__metadata__\":{");
        for (int i = 0; i < nmeta; i++) {
            if (i) put(o, ",", 1);
            put_str(o, mk[i]);
            put(o, ":", 1);
            put_str(o, mv[i]);
        }
        put(o, "}", 1);
        first = false;
    }
    for (int i = 0; i < n; i++) {
        const st_item *it = &items[i];
        if (!first) put(o, ",", 1);
        first = false;
        put_str(o, it->name);
        puts_(o, ":{\"dtype\":");
        put_str(o, tm__st_dtypes[it->rank].name);
        puts_(o, ",\"shape\":[");
        const int64_t *shape = tm_shape(it->t);
        for (int d = 0; d < tm_ndim(it->t); d++) {
            if (d) put(o, ",", 1);
            put_u64(o, (uint64_t)shape[d]);
        }
        puts_(o, "],\"data_offsets\":[");
        put_u64(o, it->begin);
        put(o, ",", 1);
        put_u64(o, it->end);
        puts_(o, "]}");
    }
    put(o, "}", 1);
}

/* ----------------------------------------------------------- validation */

static tm_status check_string(const char *fn, const char *path,
                              const char *what, int i, const char *s)
{
    if (!s)
        return tm__errf(TM_EINVAL, fn, "%s: %s[%d] is NULL", path, what, i);
    size_t bad, len = strlen(s);
    if (!tm__utf8_valid((const unsigned char *)s, len, &bad)) {
        char nm[96];
        tm__fmt_name(nm, sizeof nm, s, len);
        return tm__errf(TM_EINVAL, fn, "%s: %s[%d] '%s' is not valid UTF-8 "
                        "(byte %zu)", path, what, i, nm, bad);
    }
    return TM_OK;
}

static tm_status check_args(const char *fn, const char *path, st_item *items,
                            const char *const *names,
                            tm_tensor *const *tensors, int n,
                            const char *const *mk, const char *const *mv,
                            int nmeta)
{
    tm_status st;
    char nm[96];
    for (int i = 0; i < n; i++) {
        if ((st = check_string(fn, path, "names", i, names[i]))) return st;
        tm__fmt_name(nm, sizeof nm, names[i], strlen(names[i]));
        if (!strcmp(names[i], "__metadata__"))
            return tm__errf(TM_EINVAL, fn, "%s: names[%d] is '__metadata__', "
                            "which the format reserves", path, i);
        const tm_tensor *t = tensors[i];
        if (!t)
            return tm__errf(TM_EINVAL, fn, "%s: tensors[%d] ('%s') is NULL",
                            path, i, nm);
        int rank = tm_dtype_is_valid(tm_dtype_of(t))
                       ? tm__st_dtype_of(tm_dtype_of(t)) : -1;
        if (rank < 0)
            return tm__errf(TM_EDTYPE, fn, "%s: tensor '%s' has dtype %s, "
                            "which safetensors cannot store", path, nm,
                            tm_dtype_name(tm_dtype_of(t)));
        items[i].name = names[i];
        items[i].rank = rank;
        items[i].t = tensors[i];
    }
    for (int i = 0; i < nmeta; i++) {
        if ((st = check_string(fn, path, "meta_keys", i, mk[i])) ||
            (st = check_string(fn, path, "meta_values", i, mv[i])))
            return st;
    }
    qsort(items, (size_t)n, sizeof *items, item_by_name);
    for (int i = 1; i < n; i++)
        if (!strcmp(items[i - 1].name, items[i].name))
            return tm__errf(TM_EINVAL, fn, "%s: duplicate tensor name '%s'",
                            path, tm__fmt_name(nm, sizeof nm, items[i].name,
                                               strlen(items[i].name)));
    if (nmeta > 1) {
        const char **k = tm__alloc((size_t)nmeta * sizeof *k, fn);
        if (!k) return TM_ENOMEM;
        memcpy(k, mk, (size_t)nmeta * sizeof *k);
        qsort(k, (size_t)nmeta, sizeof *k, str_cmp);
        st = TM_OK;
        for (int i = 1; i < nmeta && !st; i++)
            if (!strcmp(k[i - 1], k[i]))
                st = tm__errf(TM_EINVAL, fn, "%s: duplicate metadata key '%s'",
                              path, tm__fmt_name(nm, sizeof nm, k[i],
                                                 strlen(k[i])));
        tm__dealloc(k);
        if (st) return st;
    }
    return TM_OK;
}

/* ------------------------------------------------------------ file output */

static tm_status write_file(const char *fn, const char *path,
                            const st_item *items, int n, const char *header,
                            size_t header_len, bool sync)
{
    tm__file_out f;
    tm_status st = tm__file_out_open(&f, fn, path);
    if (st) return st;
    if ((st = tm__file_out_write(&f, header, header_len))) goto fail;
    for (int i = 0; i < n; i++) {
        size_t nb = (size_t)(items[i].end - items[i].begin);
        if ((st = tm__file_out_tensor(&f, items[i].t, nb))) goto fail;
    }
    return tm__file_out_commit(&f, sync);
fail:
    tm__file_out_abort(&f);
    return st;
}

/* ------------------------------------------------------------------- save */

tm_status tm_safetensors_save(const char *path, const char *const *names,
                              tm_tensor *const *tensors, int n,
                              const char *const *meta_keys,
                              const char *const *meta_values, int nmeta)
{
    return tm_safetensors_save_ex(path, names, tensors, n, meta_keys,
                                  meta_values, nmeta, 0);
}

tm_status tm_safetensors_save_ex(const char *path, const char *const *names,
                                 tm_tensor *const *tensors, int n,
                                 const char *const *meta_keys,
                                 const char *const *meta_values, int nmeta,
                                 unsigned flags)
{
    if (flags & ~(unsigned)TM_SAVE_NO_SYNC)
        return TM_ERR(TM_EINVAL, "unknown flags 0x%x", flags);
    if (!path || !*path) return TM_ERR(TM_EINVAL, "path is NULL or empty");
    if (n < 0 || nmeta < 0)
        return TM_ERR(TM_EINVAL, "%s: negative count (n %d, nmeta %d)", path,
                      n, nmeta);
    if (n > 0 && (!names || !tensors))
        return TM_ERR(TM_EINVAL, "%s: names or tensors is NULL for %d "
                      "tensors", path, n);
    if (nmeta > 0 && (!meta_keys || !meta_values))
        return TM_ERR(TM_EINVAL, "%s: meta_keys or meta_values is NULL for %d "
                      "entries", path, nmeta);
    if (!tm__host_le())
        return TM_ERR(TM_EUNSUPPORTED, "%s: big-endian hosts are not "
                      "supported", path);
    st_item *items = tm__calloc((n ? (size_t)n : 1) * sizeof *items, __func__);
    if (!items) return TM_ENOMEM;
    char *header = NULL;
    tm_status st = check_args(__func__, path, items, names, tensors, n,
                              meta_keys, meta_values, nmeta);
    if (st) goto done;
    qsort(items, (size_t)n, sizeof *items, item_by_layout);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        /* tm_nbytes cannot overflow (every tensor exists in memory), but
         * the sum over tensors can, in principle */
        uint64_t nb = (uint64_t)tm_nbytes(items[i].t);
        if (nb > UINT64_MAX - off) {
            st = TM_ERR(TM_EOVERFLOW, "%s: total size overflows 64 bits",
                        path);
            goto done;
        }
        items[i].begin = off;
        items[i].end = off += nb;
    }
    jout o = {NULL, 0};
    write_header(&o, items, n, meta_keys, meta_values, nmeta);
    size_t len = o.n, padded = (len + 7) / 8 * 8;
    if (padded > TM__ST_MAX_HEADER) {
        st = TM_ERR(TM_EINVAL, "%s: the header would be %zu bytes, more than "
                    "the format's limit of %llu", path, padded,
                    TM__ST_MAX_HEADER);
        goto done;
    }
    header = tm__alloc(8 + padded, __func__);
    if (!header) {
        st = TM_ENOMEM;
        goto done;
    }
    for (int b = 0; b < 8; b++)
        header[b] = (char)(((uint64_t)padded >> (8 * b)) & 0xFF);
    o.buf = header + 8;
    o.n = 0;
    write_header(&o, items, n, meta_keys, meta_values, nmeta);
    memset(header + 8 + len, ' ', padded - len);
    st = write_file(__func__, path, items, n, header, 8 + padded,
                    !(flags & TM_SAVE_NO_SYNC));
done:
    tm__dealloc(header);
    tm__dealloc(items);
    return st;
}
