/*
 * safetensors_read.c — listing and reading the tensors of an open
 * safetensors file (opened and validated by safetensors_open.c).
 */
#include "foundry/io.h"
#include "json.h"
#include "safetensors_impl.h"

#include <string.h>

/* -------------------------------------------------------------- accessors */

static bool check_index(const tm_safetensors *f, int i, const char *fn)
{
    if (!f) {
        tm__errf(TM_EINVAL, fn, "handle is NULL");
        return false;
    }
    if (i < 0 || i >= f->nt) {
        tm__errf(TM_ERANGE, fn, "%s: index %d is outside [0, %d)", f->label, i,
                 f->nt);
        return false;
    }
    return true;
}

int tm_safetensors_count(const tm_safetensors *f)
{
    if (!f) {
        TM_ERR(TM_EINVAL, "handle is NULL");
        return 0;
    }
    return f->nt;
}

const char *tm_safetensors_name(const tm_safetensors *f, int i)
{
    return check_index(f, i, __func__) ? f->t[i].name : NULL;
}

static int lookup(const tm_safetensors *f, const char *name, const char *fn)
{
    if (!f || !name) {
        tm__errf(TM_EINVAL, fn, "%s is NULL", f ? "name" : "handle");
        return -1;
    }
    int lo = 0, hi = f->nt;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(f->by_name[mid]->name, name);
        if (!c) return (int)(f->by_name[mid] - f->t);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    char nm[TM__ST_NAME_BUF];
    tm__errf(TM_EINVAL, fn, "%s: no tensor named '%s'", f->label,
             tm__st_name(nm, name));
    return -1;
}

int tm_safetensors_find(const tm_safetensors *f, const char *name)
{
    return lookup(f, name, __func__);
}

const char *tm_safetensors_dtype_name(const tm_safetensors *f, int i)
{
    return check_index(f, i, __func__) ? tm__st_dtypes[f->t[i].dtype].name
                                       : NULL;
}

static tm_status unsupported(const tm_safetensors *f, int i, const char *fn)
{
    char nm[TM__ST_NAME_BUF];
    return tm__errf(TM_EDTYPE, fn, "%s: tensor '%s' has dtype %s, which "
                    "Foundry cannot represent (unsupported dtype)", f->label,
                    tm__st_name(nm, f->t[i].name), tm__st_dtypes[f->t[i].dtype].name);
}

tm_status tm_safetensors_dtype(const tm_safetensors *f, int i, tm_dtype *out)
{
    if (!check_index(f, i, __func__)) return tm_last_status();
    int dt = tm__st_dtypes[f->t[i].dtype].tm;
    if (dt < 0) return unsupported(f, i, __func__);
    if (out) *out = (tm_dtype)dt;
    return TM_OK;
}

int tm_safetensors_ndim(const tm_safetensors *f, int i)
{
    return check_index(f, i, __func__) ? f->t[i].ndim : -1;
}

const int64_t *tm_safetensors_shape(const tm_safetensors *f, int i)
{
    return check_index(f, i, __func__) ? f->t[i].shape : NULL;
}

tm_status tm_safetensors_offsets(const tm_safetensors *f, int i,
                                 uint64_t *begin, uint64_t *end,
                                 uint64_t *data_start)
{
    if (!check_index(f, i, __func__)) return tm_last_status();
    if (begin) *begin = f->t[i].begin;
    if (end) *end = f->t[i].end;
    if (data_start) *data_start = f->data_start;
    return TM_OK;
}

bool tm_safetensors_has_metadata(const tm_safetensors *f)
{
    return f && f->has_meta;
}

int tm_safetensors_metadata_count(const tm_safetensors *f)
{
    if (!f) {
        TM_ERR(TM_EINVAL, "handle is NULL");
        return 0;
    }
    return f->nmeta;
}

static bool check_meta(const tm_safetensors *f, int i, const char *fn)
{
    if (!f) {
        tm__errf(TM_EINVAL, fn, "handle is NULL");
        return false;
    }
    if (i < 0 || i >= f->nmeta) {
        tm__errf(TM_ERANGE, fn, "%s: metadata index %d is outside [0, %d)",
                 f->label, i, f->nmeta);
        return false;
    }
    return true;
}

const char *tm_safetensors_metadata_key(const tm_safetensors *f, int i)
{
    return check_meta(f, i, __func__) ? f->meta[i]->key : NULL;
}

const char *tm_safetensors_metadata_value(const tm_safetensors *f, int i)
{
    return check_meta(f, i, __func__) ? f->meta[i]->str : NULL;
}

const char *tm_safetensors_metadata_get(const tm_safetensors *f,
                                        const char *key)
{
    if (!f || !key) return NULL;
    for (int i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[i]->key, key)) return f->meta[i]->str;
    return NULL;
}

/* ----------------------------------------------------------------- reading */

/* A new contiguous copy of tensor i (dtype checked by the caller). */
static tm_tensor *copy_tensor(const tm_safetensors *f, int i, tm_dtype dt,
                              const char *fn)
{
    const tm__st_entry *e = &f->t[i];
    tm_tensor *t = tm_from_buffer(f->bytes + f->data_start + e->begin,
                                  e->shape, e->ndim, dt);
    if (!t) tm__relabel_error(fn, tm_last_status());
    return t;
}

tm_tensor *tm_safetensors_get(const tm_safetensors *f, const char *name)
{
    int i = lookup(f, name, __func__);
    if (i < 0) return NULL;
    const tm__st_entry *e = &f->t[i];
    int dt = tm__st_dtypes[e->dtype].tm;
    if (dt < 0) {
        unsupported(f, i, __func__);
        return NULL;
    }
    size_t es = tm_dtype_size((tm_dtype)dt);
    uint64_t at = f->data_start + e->begin;
    tm_tensor *t;
    if (e->end == e->begin) {
        /* empty: nothing to share, and a view's strides (the product of
         * the other dims) could exceed the mapping, which views reject */
        t = tm__tensor_new(__func__, e->shape, e->ndim, (tm_dtype)dt, TM_CPU);
        if (t) tm_storage_set_readonly(tm_storage_of(t));
        return t;
    }
    if (at % es == 0) {
        t = tm_tensor_from_storage(f->storage, (int64_t)(at / es), e->shape,
                                   NULL, e->ndim, (tm_dtype)dt);
        if (!t) tm__relabel_error(__func__, tm_last_status());
        return t;
    }
    /* misaligned within the file (other writers): copy, keep read-only */
    t = copy_tensor(f, i, (tm_dtype)dt, __func__);
    if (t) tm_storage_set_readonly(tm_storage_of(t));
    return t;
}

tm_tensor *tm_safetensors_load(const tm_safetensors *f, const char *name)
{
    int i = lookup(f, name, __func__);
    if (i < 0) return NULL;
    int dt = tm__st_dtypes[f->t[i].dtype].tm;
    if (dt < 0) {
        unsupported(f, i, __func__);
        return NULL;
    }
    return copy_tensor(f, i, (tm_dtype)dt, __func__);
}
