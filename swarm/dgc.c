/* dgc.c — Deep Gradient Compression's accumulator (compress.h): local
 * clipping, momentum correction, error feedback and the sparsity
 * warm-up.  The kept fraction falls exponentially from all to ratio over
 * the warm-up: ratio^((r + 1) / warmup_rounds) in round r < warmup_rounds
 * (DGC's 75%, 93.75%, ... sparsity, smoothed); from then on ratio. */
#include "compress.h"

#include "../tensor/core/tensor_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <string.h>

struct tm__dgc {
    tm__dgc_opts o;
    int64_t n;
    float *u, *v; /* momentum (NULL without correction) and residual */
};

tm__dgc *tm__dgc_new(int64_t n, const tm__dgc_opts *o)
{
    if (!o || n <= 0) {
        TM_ERR(TM_EINVAL, "need options and n > 0");
        return NULL;
    }
    if (!(o->ratio > 0 && o->ratio <= 1)) {
        TM_ERR(TM_EINVAL, "ratio %g is not in (0, 1]", o->ratio);
        return NULL;
    }
    if (o->warmup_rounds < 0 || !(o->momentum >= 0 && o->momentum < 1) ||
        !(o->clip_norm >= 0) || !isfinite(o->clip_norm)) {
        TM_ERR(TM_EINVAL, "warmup_rounds, momentum or clip_norm out of range");
        return NULL;
    }
    tm__dgc *d = tm__calloc(sizeof *d, __func__);
    if (!d) return NULL;
    d->o = *o;
    d->n = n;
    d->v = tm__calloc((size_t)n * 4, __func__);
    if (o->momentum > 0) d->u = tm__calloc((size_t)n * 4, __func__);
    if (!d->v || (o->momentum > 0 && !d->u)) {
        tm__dgc_free(d);
        return NULL;
    }
    return d;
}

void tm__dgc_free(tm__dgc *d)
{
    if (!d) return;
    tm__dealloc(d->u);
    tm__dealloc(d->v);
    tm__dealloc(d);
}

int64_t tm__dgc_k(const tm__dgc *d, int64_t round)
{
    if (round < 0) return d->n; /* everything held back */
    double r = d->o.ratio;
    if (round >= 0 && round < d->o.warmup_rounds)
        r = pow(r, (double)(round + 1) / (double)d->o.warmup_rounds);
    int64_t k = (int64_t)ceil((double)d->n * r);
    if (k < 1) k = 1;
    return k > d->n ? d->n : k;
}

tm_status tm__dgc_compress(tm__dgc *d, const float *g, int64_t round,
                           int64_t *k_out, int64_t *idx, float *val)
{
    float scale = 1;
    if (d->o.clip_norm > 0) {
        double norm = tm__l2norm(g, d->n);
        if (norm > d->o.clip_norm) scale = (float)(d->o.clip_norm / norm);
    }
    float m = (float)d->o.momentum;
    if (d->u)
        for (int64_t i = 0; i < d->n; i++) {
            d->u[i] = m * d->u[i] + scale * g[i];
            d->v[i] += d->u[i];
        }
    else
        for (int64_t i = 0; i < d->n; i++) d->v[i] += scale * g[i];
    int64_t k = tm__dgc_k(d, round);
    tm_status st = tm__topk_select(d->v, d->n, k, idx, val);
    if (st) return st;
    for (int64_t i = 0; i < k; i++) {
        float left = 0;
        if (d->o.values_f16) {
            float h = tm__f16_to_f32(tm__f32_to_f16(val[i]));
            if (isfinite(h)) left = val[i] - h;
            val[i] = h;
        }
        d->v[idx[i]] = left;
        if (d->u) d->u[idx[i]] = 0;
    }
    *k_out = k;
    return TM_OK;
}

void tm__dgc_reset(tm__dgc *d)
{
    memset(d->v, 0, (size_t)d->n * 4);
    if (d->u) memset(d->u, 0, (size_t)d->n * 4);
}

const float *tm__dgc_residual(const tm__dgc *d) { return d->v; }
