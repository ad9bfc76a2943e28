/*
 * clip.c — gradient clipping by global norm and by value
 * (torch.nn.utils.clip_grad_norm_ / clip_grad_value_).
 *
 * The norm is accumulated in double over fixed chunks of CHUNK elements,
 * each summed in a fixed order, and the chunk partials are combined in
 * chunk order: the result is the same for any thread count.
 */
#include "optim_impl.h"

#include <math.h>

#define CHUNK 65536
#define STACK_CHUNKS 64

typedef struct {
    const void *g;
    bool f64;
    int64_t n;
    int mode; /* 0: p-norm sum |x|^p, 1: sum x^2, 2: sum |x|, 3: max |x| */
    double p;
    double *part;
} norm_job;

static double elem(const norm_job *j, int64_t i)
{
    return j->f64 ? ((const double *)j->g)[i]
                  : (double)((const float *)j->g)[i];
}

static void norm_range(int64_t cb, int64_t ce, void *ctx)
{
    const norm_job *j = ctx;
    for (int64_t c = cb; c < ce; c++) {
        int64_t b = c * CHUNK, e = b + CHUNK < j->n ? b + CHUNK : j->n;
        double acc[8] = {0};
        int64_t i = b;
        if (j->mode == 1) {
            for (; i + 8 <= e; i += 8)
                for (int u = 0; u < 8; u++) {
                    double x = elem(j, i + u);
                    acc[u] += x * x;
                }
            for (; i < e; i++) {
                double x = elem(j, i);
                acc[0] += x * x;
            }
        } else if (j->mode == 3) {
            for (; i < e; i++) {
                double x = fabs(elem(j, i));
                if (x > acc[0] || x != x) acc[0] = x;
                if (acc[0] != acc[0]) break;
            }
        } else {
            for (; i < e; i++) {
                double x = fabs(elem(j, i));
                acc[0] += j->mode == 2 ? x : pow(x, j->p);
            }
        }
        double s = acc[0];
        if (j->mode == 1) {
            s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        }
        j->part[c] = s;
    }
}

typedef struct {
    void *g;
    bool f64;
    double coef;
    double lo, hi; /* value clipping */
    bool clamp;
} scale_job;

static void scale_range(int64_t b, int64_t e, void *ctx)
{
    const scale_job *j = ctx;
    if (j->f64) {
        double *g = j->g;
        if (j->clamp) {
            for (int64_t i = b; i < e; i++)
                g[i] = g[i] < j->lo ? j->lo : g[i] > j->hi ? j->hi : g[i];
        } else {
            for (int64_t i = b; i < e; i++) g[i] *= j->coef;
        }
    } else {
        float *g = j->g;
        const float c = (float)j->coef, lo = (float)j->lo, hi = (float)j->hi;
        if (j->clamp) {
            for (int64_t i = b; i < e; i++)
                g[i] = g[i] < lo ? lo : g[i] > hi ? hi : g[i];
        } else {
            for (int64_t i = b; i < e; i++) g[i] *= c;
        }
    }
}

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
    if (!tm_is_contiguous(g) || tm_device_of(g) != TM_CPU) {
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
    int mode = isinf(norm_type) ? 3 : norm_type == 2 ? 1
                                   : norm_type == 1 ? 2 : 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        tm_tensor *g = grad_of(__func__, params, i, &st);
        if (!g) continue;
        norm_job j = {.g = tm_data(g), .f64 = tm_dtype_of(g) == TM_F64,
                      .n = tm_numel(g), .mode = mode, .p = norm_type};
        int64_t nc = (j.n + CHUNK - 1) / CHUNK;
        double stackpart[STACK_CHUNKS];
        j.part = nc <= STACK_CHUNKS
                     ? stackpart
                     : tm__alloc((size_t)nc * sizeof(double), __func__);
        if (!j.part) return TM_ENOMEM;
        tm__parallel_for(nc, 1, norm_range, &j);
        for (int64_t c = 0; c < nc; c++) {
            if (mode == 3) {
                if (j.part[c] > total || j.part[c] != j.part[c])
                    total = j.part[c];
            } else {
                total += j.part[c];
            }
        }
        if (j.part != stackpart) tm__dealloc(j.part);
    }
    if (mode == 1)
        total = sqrt(total);
    else if (mode == 0)
        total = pow(total, 1.0 / norm_type);
    if (total_norm_out) *total_norm_out = total;
    double coef = max_norm / (total + 1e-6);
    if (!(coef < 1) && !isnan(coef)) return TM_OK;
    for (int i = 0; i < n; i++) {
        tm_tensor *g = grad_of(__func__, params, i, &st);
        if (!g) continue;
        scale_job j = {.g = tm_data(g), .f64 = tm_dtype_of(g) == TM_F64,
                       .coef = coef};
        tm__parallel_for(tm_numel(g), 65536, scale_range, &j);
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
        scale_job j = {.g = tm_data(g), .f64 = tm_dtype_of(g) == TM_F64,
                       .lo = -clip_value, .hi = clip_value, .clamp = true};
        tm__parallel_for(tm_numel(g), 65536, scale_range, &j);
        tm__bump_version(g);
    }
    return TM_OK;
}
