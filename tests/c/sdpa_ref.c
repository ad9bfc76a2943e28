/* sdpa_ref.c — the F64 attention reference of the tm_sdpa tests. */
#include "sdpa_ref.h"
#include "gradcheck.h"

#include <stdlib.h>

void tt_sdpa_ref(const tt_sdpa_case *c, const double *q, const double *k,
                 const double *v, const double *madd, const double *drop,
                 double *out)
{
    double scale = c->scale != 0.0 ? c->scale : 1.0 / sqrt((double)c->d);
    double *s = malloc(sizeof(double) * (size_t)(c->tk ? c->tk : 1));
    int64_t group = c->h / c->hkv;
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->tq; i++) {
                int64_t hk = h / group;
                const double *qi = q + ((b * c->h + h) * c->tq + i) * c->d;
                double m = -INFINITY;
                for (int64_t j = 0; j < c->tk; j++) {
                    bool seen = (!c->causal || j <= i + c->offset) &&
                                (c->window <= 0 ||
                                 j > i + c->offset - c->window);
                    const double *kj =
                        k + ((b * c->hkv + hk) * c->tk + j) * c->d;
                    double dot = 0.0;
                    for (int64_t x = 0; x < c->d; x++) dot += qi[x] * kj[x];
                    s[j] = seen ? scale * dot : -INFINITY;
                    if (madd)
                        s[j] += madd[((b * c->h + h) * c->tq + i) * c->tk + j];
                    if (s[j] > m) m = s[j];
                }
                double *o = out + ((b * c->h + h) * c->tq + i) * c->dv;
                for (int64_t x = 0; x < c->dv; x++) o[x] = 0.0;
                if (m == -INFINITY) continue;
                double sum = 0.0;
                for (int64_t j = 0; j < c->tk; j++) sum += exp(s[j] - m);
                for (int64_t j = 0; j < c->tk; j++) {
                    double w = exp(s[j] - m) / sum;
                    if (drop)
                        w *= drop[((b * c->h + h) * c->tq + i) * c->tk + j];
                    const double *vj =
                        v + ((b * c->hkv + hk) * c->tk + j) * c->dv;
                    for (int64_t x = 0; x < c->dv; x++) o[x] += w * vj[x];
                }
            }
    free(s);
}

double tt_rel_err(const double *got, const double *want, int64_t n)
{
    double e = 0.0, m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]);
        if (!(d <= e)) e = d; /* NaN counts as the worst error */
        if (fabs(want[i]) > m) m = fabs(want[i]);
    }
    return m > 0.0 ? e / m : e;
}

tm_tensor *tt_sdpa_input(const int64_t *shape, int nd, tm_dtype dt,
                         uint64_t seed, double **vals)
{
    tm_tensor *t = tm_empty(shape, nd, dt);
    tm_rng r = tm_rng_new(seed);
    if (!t || tm_normal_(t, 0.0, 1.0, &r)) {
        tm_free(t);
        return NULL;
    }
    if (vals && !(*vals = tt_values(t))) {
        tm_free(t);
        return NULL;
    }
    return t;
}
