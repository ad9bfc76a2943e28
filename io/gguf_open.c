/*
 * gguf_open.c — opening GGUF files (mapped read-only, or caller memory),
 * listing metadata and tensor infos, and cutting zero-copy tensors.
 *
 * Every tensor gets its own MAPPED storage over its bytes whose release
 * drops a reference on the shared mapping, so the mapping outlives the
 * reader for as long as any tensor cut from it.
 */
#include "file_map.h"
#include "gguf_impl.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static void map_drop(tm__gguf_map *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    if (m->unmap) munmap(m->base, m->size);
    tm__dealloc(m);
}

static void map_release(void *data, void *user)
{
    (void)data;
    map_drop(user);
}

void tm_gguf_close(tm_gguf *g)
{
    if (!g) return;
    tm__dealloc(g->values);
    tm__dealloc(g->strings);
    tm__dealloc(g->kv);
    tm__dealloc(g->t);
    tm__dealloc(g->kv_sorted);
    tm__dealloc(g->t_sorted);
    tm__dealloc(g->label);
    map_drop(g->map);
    tm__dealloc(g);
}

/* A reader over map (whose reference it takes). */
static tm_gguf *open_map(const char *fn, const char *label, tm__gguf_map *m)
{
    tm_gguf *g = tm__calloc(sizeof *g, fn);
    if (!g) {
        map_drop(m);
        return NULL;
    }
    g->map = m;
    size_t ll = strlen(label);
    g->label = tm__alloc(ll + 1, fn);
    if (g->label) memcpy(g->label, label, ll + 1);
    if (!g->label || tm__gguf_parse(g, fn)) {
        tm_gguf_close(g);
        return NULL;
    }
    return g;
}

static tm__gguf_map *new_map(void *base, size_t size, bool unmap,
                             const char *fn)
{
    tm__gguf_map *m = tm__alloc(sizeof *m, fn);
    if (!m) {
        if (unmap) munmap(base, size);
        return NULL;
    }
    atomic_init(&m->refs, 1);
    m->base = base;
    m->size = size;
    m->unmap = unmap;
    return m;
}

tm_gguf *tm_gguf_open(const char *path)
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
    void *base;
    size_t size;
    if (tm__file_map(__func__, path, 24, &base, &size)) return NULL;
    if (!base) {
        TM_ERR(TM_EFORMAT, "%s: file is %zu bytes, shorter than the 24-byte "
               "GGUF header (truncated file)", path, size);
        return NULL;
    }
    tm__gguf_map *m = new_map(base, size, true, __func__);
    return m ? open_map(__func__, path, m) : NULL;
}

tm_gguf *tm_gguf_open_memory(const void *data, size_t size)
{
    if (!data && size) {
        TM_ERR(TM_EINVAL, "data is NULL for %zu bytes", size);
        return NULL;
    }
    if (!tm__host_le()) {
        TM_ERR(TM_EUNSUPPORTED, "big-endian hosts are not supported");
        return NULL;
    }
    static const unsigned char none[1];
    tm__gguf_map *m = new_map(data ? (void *)(uintptr_t)data
                                   : (void *)(uintptr_t)none,
                              size, false, __func__);
    return m ? open_map(__func__, "<memory>", m) : NULL;
}

uint32_t tm_gguf_version(const tm_gguf *g) { return g ? g->version : 0; }
size_t tm_gguf_alignment(const tm_gguf *g) { return g ? g->alignment : 0; }
size_t tm_gguf_data_offset(const tm_gguf *g)
{
    return g ? g->data_offset : 0;
}
int64_t tm_gguf_n_kv(const tm_gguf *g) { return g ? g->n_kv : 0; }
int64_t tm_gguf_n_tensors(const tm_gguf *g) { return g ? g->n_tensors : 0; }

const char *tm_gguf_key(const tm_gguf *g, int64_t i)
{
    if (!g || i < 0 || i >= g->n_kv) return NULL;
    return g->kv[i].key;
}

const tm_gguf_value *tm_gguf_kv_value(const tm_gguf *g, int64_t i)
{
    if (!g || i < 0 || i >= g->n_kv) return NULL;
    return &g->kv[i].value;
}

int64_t tm_gguf_find_key(const tm_gguf *g, const char *key)
{
    if (!g || !key) return -1;
    return tm__gguf_ref_find(g->kv_sorted, g->n_kv, key);
}

const tm_gguf_value *tm_gguf_get(const tm_gguf *g, const char *key)
{
    return tm_gguf_kv_value(g, tm_gguf_find_key(g, key));
}

tm_status tm_gguf_tensor_info_at(const tm_gguf *g, int64_t i,
                                 tm_gguf_tensor_info *out)
{
    if (!g || !out) return TM_ERR(TM_EINVAL, "%s is NULL", g ? "out" : "g");
    if (i < 0 || i >= g->n_tensors)
        return TM_ERR(TM_ERANGE, "%s: tensor index %lld out of range [0, "
                      "%lld)", g->label, (long long)i,
                      (long long)g->n_tensors);
    *out = g->t[i].info;
    return TM_OK;
}

int64_t tm_gguf_find_tensor(const tm_gguf *g, const char *name)
{
    if (!g || !name) return -1;
    return tm__gguf_ref_find(g->t_sorted, g->n_tensors, name);
}

/* Alignment the tensor's bytes need in memory to be used in place. */
static size_t needed_align(const tm__gguf_ggml_type *gt)
{
    if (gt->block == 1) return gt->bytes;
    return gt->bytes % 4 ? 2 : 4; /* blocks of halves / of floats */
}

static tm_tensor *cut(const tm_gguf *g, int64_t i, const char *fn)
{
    if (!g) {
        tm__errf(TM_EINVAL, fn, "g is NULL");
        return NULL;
    }
    if (i < 0 || i >= g->n_tensors) {
        tm__errf(TM_ERANGE, fn, "%s: tensor index %lld out of range [0, "
                 "%lld)", g->label, (long long)i, (long long)g->n_tensors);
        return NULL;
    }
    const tm_gguf_tensor_info *t = &g->t[i].info;
    char nm[96];
    tm__fmt_name(nm, sizeof nm, t->name, g->t[i].name_len);
    const tm__gguf_ggml_type *gt = tm__gguf_ggml_type_of(t->ggml_type);
    if ((int)t->dtype < 0) {
        tm__errf(TM_EUNSUPPORTED, fn, "%s: tensor '%s' has ggml type %s "
                 "(%u), which Foundry cannot compute with", g->label, nm,
                 gt ? gt->name : "?", t->ggml_type);
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)g->map->base +
                             g->data_offset + t->offset;
    tm_tensor *out = NULL;
    if (!t->nbytes || (uintptr_t)p % needed_align(gt)) {
        /* empty (nothing to share) or misaligned in memory: a copy */
        out = tm_empty(t->shape, t->ndim, t->dtype);
        if (!out) goto fail;
        if (t->nbytes) memcpy(tm_data(out), p, t->nbytes);
        tm_storage_set_readonly(tm_storage_of(out));
        return out;
    }
    atomic_fetch_add(&g->map->refs, 1);
    tm_storage *s = tm_storage_wrap((void *)(uintptr_t)p, t->nbytes,
                                    TM_STORAGE_MAPPED, map_release, g->map);
    if (!s) goto fail;
    tm_storage_set_readonly(s);
    out = tm_tensor_from_storage(s, 0, t->shape, NULL, t->ndim, t->dtype);
    tm_storage_free(s);
    if (!out) goto fail;
    return out;
fail:
    tm__relabel_error(fn, tm_last_status());
    return NULL;
}

tm_tensor *tm_gguf_tensor(const tm_gguf *g, int64_t i)
{
    return cut(g, i, __func__);
}

tm_tensor *tm_gguf_tensor_by_name(const tm_gguf *g, const char *name)
{
    if (!g || !name) {
        TM_ERR(TM_EINVAL, "%s is NULL", g ? "name" : "g");
        return NULL;
    }
    int64_t i = tm_gguf_find_tensor(g, name);
    if (i < 0) {
        char nm[96];
        tm__fmt_name(nm, sizeof nm, name, strlen(name));
        TM_ERR(TM_EINVAL, "%s: no tensor named '%s'", g->label, nm);
        return NULL;
    }
    return cut(g, i, __func__);
}
