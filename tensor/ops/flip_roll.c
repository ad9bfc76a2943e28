/* flip_roll.c — flip, fliplr, flipud and roll.
 *
 * Tensors cannot have negative strides, so a flip materialises: one
 * index_select per flipped dim with a reversed index; a roll is two
 * narrowed views joined by cat per rolled dim.  Both run on any device and
 * record autograd through the ops they use. */
#include "compose_impl.h"

/* Wraps dims[n] against t (a 0-d tensor accepts 0 and -1) into w[n]. */
static tm_status wrap_dims(const char *fn, const tm_tensor *t,
                           const int *dims, int n, int *w)
{
    if (n < 0 || n > TM_MAX_DIMS)
        return tm__errf(TM_EINVAL, fn, "%d dims given; at most %d", n,
                        TM_MAX_DIMS);
    if (n > 0 && !dims) return tm__errf(TM_EINVAL, fn, "dims is NULL");
    int nd = t->ndim ? t->ndim : 1;
    for (int i = 0; i < n; i++)
        if (tm__wrap_dim(fn, dims[i], nd, &w[i])) return tm_last_status();
    return TM_OK;
}

static tm_tensor *flip_impl(const char *fn, const tm_tensor *t,
                            const int *dims, int ndims)
{
    int w[TM_MAX_DIMS];
    bool seen[TM_MAX_DIMS] = {false};
    if (tm__check_dense_operand(fn, t, "tensor") || wrap_dims(fn, t, dims, ndims, w))
        return NULL;
    for (int i = 0; i < ndims; i++) {
        if (seen[w[i]]) {
            tm__errf(TM_EINVAL, fn, "dim %d appears more than once in dims",
                     w[i]);
            return NULL;
        }
        seen[w[i]] = true;
    }
    tm_tensor *cur = tm_retain((tm_tensor *)t);
    for (int d = 0; d < t->ndim; d++) {
        if (!seen[d] || t->shape[d] < 2) continue;
        tm_tensor *h = tm_arange((double)(t->shape[d] - 1), -1.0, -1.0,
                                 TM_I64);
        tm_tensor *idx = h ? tm_to(h, tm_device_of(t)) : NULL;
        tm_free(h);
        tm_tensor *next = idx ? tm_index_select(cur, d, idx) : NULL;
        tm_free(idx);
        if (!tm__step(&cur, next)) goto fail;
    }
    if (cur == t) return tm__step(&cur, tm_clone(t)) ? cur : NULL;
    return cur;
fail:
    tm__relabel_error(fn, tm_last_status());
    return NULL;
}

tm_tensor *tm_flip(const tm_tensor *t, const int *dims, int ndims)
{
    return flip_impl(__func__, t, dims, ndims);
}

tm_tensor *tm_fliplr(const tm_tensor *t)
{
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    if (t->ndim < 2) {
        TM_ERR(TM_EINVAL, "input must be >= 2-d, got %d dims", t->ndim);
        return NULL;
    }
    return flip_impl(__func__, t, (int[]){1}, 1);
}

tm_tensor *tm_flipud(const tm_tensor *t)
{
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    if (t->ndim < 1) {
        TM_ERR(TM_EINVAL, "input must be >= 1-d, got %d dims", t->ndim);
        return NULL;
    }
    return flip_impl(__func__, t, (int[]){0}, 1);
}

/* Rolls dim d by s (already reduced to [0, n)). */
static tm_tensor *roll_one(const tm_tensor *t, int d, int64_t s)
{
    int64_t n = t->shape[d];
    tm_tensor *p[2] = {tm_narrow(t, d, n - s, s), tm_narrow(t, d, 0, n - s)};
    tm_tensor *r = p[0] && p[1] ? tm_cat(p, 2, d) : NULL;
    tm_free(p[0]);
    tm_free(p[1]);
    return r;
}

tm_tensor *tm_roll(const tm_tensor *t, const int64_t *shifts, int nshifts,
                   const int *dims, int ndims)
{
    int w[TM_MAX_DIMS];
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    if (nshifts < 1 || !shifts) {
        TM_ERR(TM_EINVAL, "needs at least one shift, got %d", nshifts);
        return NULL;
    }
    if (ndims == 0) { /* the flattened tensor, rolled, in t's shape */
        if (nshifts != 1) {
            TM_ERR(TM_EINVAL, "%d shifts without dims; expected one",
                   nshifts);
            return NULL;
        }
        int64_t n = tm_numel(t);
        tm_tensor *f = tm_reshape(t, &n, 1);
        tm_tensor *r = f ? tm_roll(f, shifts, 1, (int[]){0}, 1) : NULL;
        tm_tensor *o = r ? tm_reshape(r, t->shape, t->ndim) : NULL;
        tm_free(f);
        tm_free(r);
        return o;
    }
    if (nshifts != ndims) {
        TM_ERR(TM_EINVAL, "shifts and dims must align: %d shifts, %d dims",
               nshifts, ndims);
        return NULL;
    }
    if (!dims) {
        TM_ERR(TM_EINVAL, "dims is NULL");
        return NULL;
    }
    if (t->ndim == 0) { /* as torch: a 0-d tensor has no dim to roll */
        TM_ERR(TM_EINVAL, "dim %d is out of range for a 0-d tensor (it has "
               "no dim to roll)", dims[0]);
        return NULL;
    }
    if (wrap_dims(__func__, t, dims, ndims, w)) return NULL;
    tm_tensor *cur = tm_retain((tm_tensor *)t);
    for (int i = 0; i < ndims; i++) {
        int64_t n = t->shape[w[i]];
        int64_t s = n ? ((shifts[i] % n) + n) % n : 0;
        if (s && !tm__step(&cur, roll_one(cur, w[i], s))) goto fail;
    }
    if (cur == t) return tm__step(&cur, tm_clone(t)) ? cur : NULL;
    return cur;
fail:
    tm__relabel_error(__func__, tm_last_status());
    return NULL;
}
