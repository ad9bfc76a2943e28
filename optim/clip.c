/*
 * clip.c — gradient clipping by global norm and by value
 * (torch.nn.utils.clip_grad_norm_ / clip_grad_value_).
 *
 * The loops over the gradients' elements are CPU kernels
 * (cpu/optim/clip_kern.c): the norm is accumulated in double over fixed
 * chunks, each summed in a fixed order, and the chunk partials are
 * combined in chunk order, so the result is the same for any thread
 * count.  This file checks the gradients, holds the partials' scratch,
 * and turns the total into a norm and a scale.
 */
#include "optim_impl.h"

#include <math.h>

#define STACK_CHUNKS 64

/* The gradient of params[i] if it can be clipped in place, NULL when it
 * has none (*st TM_OK) or on error (*st set). */
static tm_tensor *grad_of(const char *fn, tm_tensor *const *params, int i,
                          tm_status *st)
{
    *st = TM_OK;
    if (!params[i]) {
        *st = tm__errf(TM_EINVAL, fn, "parameter %d is NULL", i);
        return NULL;
    }
    tm_tensor *g = tm_grad(params[i]);
    if (!g) return NULL;
    tm_dtype dt = tm_dtype_of(g);
    if (dt != TM_F32 && dt != TM_F64) {
        *st = tm__errf(TM_EDTYPE, fn, "gradient %d is %s: only F32 and F64 "
                       "gradients are clipped", i, tm_dtype_name(dt));
        return NULL;
    }
    if (!tm_is_contiguous(g) || !tm__on_cpu(g)) {
        *st = tm__errf(TM_EINVAL, fn,
                       "gradient %d is not a contiguous CPU tensor", i);
        return NULL;
    }
    if ((*st = tm__check_writable(fn, g)) != TM_OK) return NULL;
    return g;
}

static tm_status check_all(const char *fn, tm_tensor *const *params, int n)
{
    if (n < 0 || (n > 0 && !params))
        return tm__errf(TM_EINVAL, fn, "params is NULL or n (%d) < 0", n);
    tm_status st;
    for (int i = 0; i < n; i++)
        if (!grad_of(fn, params, i, &st) && st != TM_OK) return st;
    return TM_OK;
}

tm_status tm_clip_grad_norm_(tm_tensor *const *params, int n,
                             double max_norm, double norm_type,
                             double *total_norm_out)
{
    if (!(max_norm >= 0))
        return TM_ERR(TM_EINVAL, "max_norm %g must be >= 0", max_norm);
    if (!(norm_type > 0))
        return TM_ERR(TM_EINVAL, "norm_type %g must be > 0 (or INFINITY)",
                      norm_type);
    tm_status st = check_all(__func__, params, n);
    if (st != TM_OK) return st;
    tm__norm_kind kind = isinf(norm_type)    ? TM__NORM_INF
                         : norm_type == 2 ? TM__NORM_L2
                         : norm_type == 1 ? TM__NORM_L1
                                          : TM__NORM_P;
    double total = 0;
    for (int i = 0; i < n; i++) {
        tm_tensor *g = grad_of(__func__, params, i, &st);
        if (!g) continue;
        int64_t nc = tm__clip_norm_chunks(tm_numel(g));
        double stackpart[STACK_CHUNKS];
        double *part = nc <= STACK_CHUNKS
                           ? stackpart
                           : tm__alloc((size_t)nc * sizeof(double), __func__);
        if (!part) return TM_ENOMEM;
        tm__clip_norm_accumulate(tm_data(g), tm_dtype_of(g) == TM_F64,
                                 tm_numel(g), kind, norm_type, part, &total);
        if (part != stackpart) tm__dealloc(part);
    }
    if (kind == TM__NORM_L2)
        total = sqrt(total);
    else if (kind == TM__NORM_P)
        total = pow(total, 1.0 / norm_type);
    if (total_norm_out) *total_norm_out = total;
    double coef = max_norm / (total + 1e-6);
    if (!(coef < 1) && !isnan(coef)) return TM_OK;
    for (int i = 0; i < n; i++) {
        tm_tensor *g = grad_of(__func__, params, i, &st);
        if (!g) continue;
        tm__clip_scale(tm_data(g), tm_dtype_of(g) == TM_F64, tm_numel(g),
                       coef);
        tm__bump_version(g);
    }
    return TM_OK;
}

tm_status tm_clip_grad_value_(tm_tensor *const *params, int n,
                              double clip_value)
{
    if (!(clip_value >= 0))
        return TM_ERR(TM_EINVAL, "clip_value %g must be >= 0", clip_value);
    tm_status st = check_all(__func__, params, n);
    if (st != TM_OK) return st;
    for (int i = 0; i < n; i++) {
        tm_tensor *g = grad_of(__func__, params, i, &st);
        if (!g) continue;
        tm__clip_clamp(tm_data(g), tm_dtype_of(g) == TM_F64, tm_numel(g),
                       -clip_value, clip_value);
        tm__bump_version(g);
    }
    return TM_OK;
}
