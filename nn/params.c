/*
 * params.c — named, ordered parameter sets (foundry/nn.h).
 *
 * A set is three parallel growable arrays (tensor, name, no-decay flag).
 * Lookup by name is a linear scan: sets hold tens to a few thousand
 * parameters and are looked up when loading or building, not per step.
 */
#include "foundry/nn.h"

#include "../tensor/core/tensor_impl.h"

#include <string.h>

struct tm_params {
    int count, cap;
    tm_tensor **t;
    char **name;
    bool *no_decay;
    bool *buffer; /* tm_params_add_buffer: not a parameter */
};

tm_params *tm_params_new(void)
{
    tm_params *set = tm__calloc(sizeof *set, __func__);
    return set;
}

void tm_params_free(tm_params *set)
{
    if (!set) return;
    for (int i = 0; i < set->count; i++) {
        tm_free(set->t[i]);
        tm__dealloc(set->name[i]);
    }
    tm__dealloc(set->t);
    tm__dealloc(set->name);
    tm__dealloc(set->no_decay);
    tm__dealloc(set->buffer);
    tm__dealloc(set);
}

/* Makes room for `extra` more entries (the set is unchanged on failure). */
static tm_status reserve(tm_params *set, int extra, const char *fn)
{
    if (extra > INT32_MAX / 2 - set->count)
        return tm__errf(TM_EOVERFLOW, fn, "too many parameters");
    int need = set->count + extra;
    if (need <= set->cap) return TM_OK;
    int cap = set->cap ? set->cap : 8;
    while (cap < need) cap *= 2;
    tm_tensor **t = tm__alloc((size_t)cap * sizeof *t, fn);
    char **name = tm__alloc((size_t)cap * sizeof *name, fn);
    bool *nd = tm__alloc((size_t)cap * sizeof *nd, fn);
    bool *buf = tm__alloc((size_t)cap * sizeof *buf, fn);
    if (!t || !name || !nd || !buf) {
        tm__dealloc(t);
        tm__dealloc(name);
        tm__dealloc(nd);
        tm__dealloc(buf);
        return TM_ENOMEM;
    }
    if (set->count) {
        memcpy(t, set->t, (size_t)set->count * sizeof *t);
        memcpy(name, set->name, (size_t)set->count * sizeof *name);
        memcpy(nd, set->no_decay, (size_t)set->count * sizeof *nd);
        memcpy(buf, set->buffer, (size_t)set->count * sizeof *buf);
    }
    tm__dealloc(set->t);
    tm__dealloc(set->name);
    tm__dealloc(set->no_decay);
    tm__dealloc(set->buffer);
    set->t = t;
    set->name = name;
    set->no_decay = nd;
    set->buffer = buf;
    set->cap = cap;
    return TM_OK;
}

/* "prefix.name" (or a copy of name) from the allocator. */
static char *join(const char *prefix, const char *name, const char *fn)
{
    size_t lp = prefix ? strlen(prefix) : 0, ln = strlen(name);
    char *s = tm__alloc(lp + (lp ? 1 : 0) + ln + 1, fn);
    if (!s) return NULL;
    char *p = s;
    if (lp) {
        memcpy(p, prefix, lp);
        p += lp;
        *p++ = '.';
    }
    memcpy(p, name, ln + 1);
    return s;
}

int tm_params_index(const tm_params *set, const char *name)
{
    if (!set || !name) return -1;
    for (int i = 0; i < set->count; i++)
        if (strcmp(set->name[i], name) == 0) return i;
    return -1;
}

/* Checks that t can be a parameter. */
static tm_status check_param(const char *fn, const char *name,
                             const tm_tensor *t)
{
    if (!t) return tm__errf(TM_EINVAL, fn, "tensor for '%s' is NULL", name);
    if (!tm_dtype_is_float(tm_dtype_of(t)))
        return tm__errf(TM_EDTYPE, fn,
                        "parameter '%s' must be a float tensor, not %s", name,
                        tm_dtype_name(tm_dtype_of(t)));
    if (!tm_is_leaf(t))
        return tm__errf(TM_ESTATE, fn,
                        "parameter '%s' must be a leaf tensor (produced by "
                        "%s; use tm_detach)",
                        name, tm_grad_fn_name(t));
    return TM_OK;
}

tm_status tm_params_add(tm_params *set, const char *name, tm_tensor *t,
                        bool no_decay)
{
    if (!set) return TM_ERR(TM_EINVAL, "set is NULL");
    if (!name || !*name) return TM_ERR(TM_EINVAL, "name is NULL or empty");
    tm_status st = check_param(__func__, name, t);
    if (st != TM_OK) return st;
    if (tm_params_index(set, name) >= 0)
        return TM_ERR(TM_EINVAL, "duplicate parameter name '%s'", name);
    if ((st = reserve(set, 1, __func__)) != TM_OK) return st;
    char *copy = join(NULL, name, __func__);
    if (!copy) return TM_ENOMEM;
    if ((st = tm_requires_grad_(t, true)) != TM_OK) {
        tm__dealloc(copy);
        return tm__relabel_error(__func__, st);
    }
    set->t[set->count] = tm_retain(t);
    set->name[set->count] = copy;
    set->no_decay[set->count] = no_decay;
    set->buffer[set->count] = false;
    set->count++;
    return TM_OK;
}

tm_status tm_params_add_buffer(tm_params *set, const char *name,
                               tm_tensor *t)
{
    if (!set) return TM_ERR(TM_EINVAL, "set is NULL");
    if (!name || !*name) return TM_ERR(TM_EINVAL, "name is NULL or empty");
    if (!t) return TM_ERR(TM_EINVAL, "tensor for '%s' is NULL", name);
    if (tm_params_index(set, name) >= 0)
        return TM_ERR(TM_EINVAL, "duplicate parameter name '%s'", name);
    tm_status st = reserve(set, 1, __func__);
    if (st != TM_OK) return st;
    char *copy = join(NULL, name, __func__);
    if (!copy) return TM_ENOMEM;
    set->t[set->count] = tm_retain(t);
    set->name[set->count] = copy;
    set->no_decay[set->count] = true;
    set->buffer[set->count] = true;
    set->count++;
    return TM_OK;
}

tm_status tm_params_add_all(tm_params *set, const char *prefix,
                            const tm_params *other)
{
    if (!set || !other) return TM_ERR(TM_EINVAL, "set or other is NULL");
    if (set == other) return TM_ERR(TM_EINVAL, "set and other are the same");
    tm_status st = reserve(set, other->count, __func__);
    if (st != TM_OK) return st;
    int base = set->count, added = 0;
    for (; added < other->count; added++) {
        char *nm = join(prefix, other->name[added], __func__);
        if (!nm) {
            st = TM_ENOMEM;
            goto fail;
        }
        /* Also checks against names added earlier in this call. */
        if (tm_params_index(set, nm) >= 0) {
            st = TM_ERR(TM_EINVAL, "duplicate parameter name '%s'", nm);
            tm__dealloc(nm);
            goto fail;
        }
        set->t[set->count] = tm_retain(other->t[added]);
        set->name[set->count] = nm;
        set->no_decay[set->count] = other->no_decay[added];
        set->buffer[set->count] = other->buffer[added];
        set->count++;
    }
    return TM_OK;
fail:
    while (set->count > base) {
        set->count--;
        tm_free(set->t[set->count]);
        tm__dealloc(set->name[set->count]);
    }
    return st;
}

int tm_params_count(const tm_params *set) { return set ? set->count : 0; }

int64_t tm_params_numel(const tm_params *set)
{
    int64_t n = 0;
    for (int i = 0; i < tm_params_count(set); i++) n += tm_numel(set->t[i]);
    return n;
}

static bool in_range(const tm_params *set, int i, const char *fn)
{
    if (!set) {
        tm__errf(TM_EINVAL, fn, "set is NULL");
        return false;
    }
    if (i < 0 || i >= set->count) {
        tm__errf(TM_ERANGE, fn, "index %d out of range for %d parameters", i,
                 set->count);
        return false;
    }
    return true;
}

tm_tensor *tm_params_get(const tm_params *set, int i)
{
    return in_range(set, i, __func__) ? set->t[i] : NULL;
}

const char *tm_params_name(const tm_params *set, int i)
{
    return in_range(set, i, __func__) ? set->name[i] : NULL;
}

bool tm_params_no_decay(const tm_params *set, int i)
{
    return in_range(set, i, __func__) ? set->no_decay[i] : false;
}

bool tm_params_is_buffer(const tm_params *set, int i)
{
    return in_range(set, i, __func__) ? set->buffer[i] : false;
}

tm_tensor *tm_params_find(const tm_params *set, const char *name)
{
    int i = tm_params_index(set, name);
    if (i < 0) {
        TM_ERR(TM_EINVAL, "no parameter named '%s'", name ? name : "(null)");
        return NULL;
    }
    return set->t[i];
}

void tm_params_zero_grad(tm_params *set)
{
    for (int i = 0; i < tm_params_count(set); i++) tm_zero_grad(set->t[i]);
}
