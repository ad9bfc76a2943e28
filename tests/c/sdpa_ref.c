/* sdpa_ref.c — the F64 attention reference of the tm_sdpa tests. */
#include "sdpa_ref.h"
#include "gradcheck.h"

#include <stdlib.h>
#include <string.h>

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

/* The softmax weights of row (b, h, i) into w[Tk] (all 0 when it sees
 * nothing). */
static void ref_row(const tt_sdpa_case *c, const double *q, const double *k,
                    const double *madd, int64_t b, int64_t h, int64_t i,
                    double *w)
{
    double scale = c->scale != 0.0 ? c->scale : 1.0 / sqrt((double)c->d);
    int64_t hk = h / (c->h / c->hkv), r = (b * c->h + h) * c->tq + i;
    const double *qi = q + r * c->d;
    double m = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < c->tk; j++) {
        bool seen = (!c->causal || j <= i + c->offset) &&
                    (c->window <= 0 || j > i + c->offset - c->window);
        const double *kj = k + ((b * c->hkv + hk) * c->tk + j) * c->d;
        double dot = 0.0;
        for (int64_t x = 0; x < c->d; x++) dot += qi[x] * kj[x];
        w[j] = seen ? scale * dot : -INFINITY;
        if (madd) w[j] += madd[r * c->tk + j];
        if (w[j] > m) m = w[j];
    }
    for (int64_t j = 0; j < c->tk; j++) {
        w[j] = m == -INFINITY ? 0.0 : exp(w[j] - m);
        sum += w[j];
    }
    for (int64_t j = 0; j < c->tk && sum > 0.0; j++) w[j] /= sum;
}

void tt_sdpa_ref_grad(const tt_sdpa_case *c, const double *q,
                      const double *k, const double *v, const double *madd,
                      const double *drop, const double *go, double *dq,
                      double *dk, double *dv)
{
    double scale = c->scale != 0.0 ? c->scale : 1.0 / sqrt((double)c->d);
    size_t tk = (size_t)(c->tk ? c->tk : 1);
    double *w = malloc(sizeof(double) * tk), *dp = malloc(sizeof(double) * tk);
    int64_t nq = c->b * c->h * c->tq * c->d;
    int64_t nk = c->b * c->hkv * c->tk * c->d;
    int64_t nv = c->b * c->hkv * c->tk * c->dv;
    if (dq) memset(dq, 0, sizeof(double) * (size_t)nq);
    if (dk) memset(dk, 0, sizeof(double) * (size_t)nk);
    if (dv) memset(dv, 0, sizeof(double) * (size_t)nv);
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->tq; i++) {
                int64_t hk = h / (c->h / c->hkv), r = (b * c->h + h) * c->tq + i;
                const double *gi = go + r * c->dv, *qi = q + r * c->d;
                ref_row(c, q, k, madd, b, h, i, w);
                double dsum = 0.0;
                for (int64_t j = 0; j < c->tk; j++) {
                    double z = drop ? drop[r * c->tk + j] : 1.0;
                    int64_t kv = (b * c->hkv + hk) * c->tk + j;
                    double x = 0.0;
                    for (int64_t e = 0; e < c->dv; e++)
                        x += gi[e] * v[kv * c->dv + e];
                    dp[j] = x * z; /* d loss / d P[i, j] */
                    dsum += w[j] * dp[j];
                    if (dv)
                        for (int64_t e = 0; e < c->dv; e++)
                            dv[kv * c->dv + e] += w[j] * z * gi[e];
                }
                for (int64_t j = 0; j < c->tk; j++) {
                    double ds = w[j] * (dp[j] - dsum) * scale;
                    int64_t kv = (b * c->hkv + hk) * c->tk + j;
                    for (int64_t e = 0; e < c->d; e++) {
                        if (dq) dq[r * c->d + e] += ds * k[kv * c->d + e];
                        if (dk) dk[kv * c->d + e] += ds * qi[e];
                    }
                }
            }
    free(w), free(dp);
}

double *tt_sdpa_mask_add(const tm_tensor *mask, const tt_sdpa_case *c)
{
    if (!mask) return NULL;
    tm_tensor *e = tm_broadcast_to(mask, (int64_t[]){c->b, c->h, c->tq,
                                                     c->tk}, 4);
    double *v = e ? tt_values(e) : NULL;
    int64_t n = c->b * c->h * c->tq * c->tk;
    if (v && tm_dtype_of(mask) == TM_BOOL)
        for (int64_t i = 0; i < n; i++) v[i] = v[i] != 0.0 ? 0.0 : -INFINITY;
    tm_free(e);
    return v;
}

double *tt_sdpa_drop(const tt_sdpa_case *c, tm_rng rng, double p)
{
    tm_tensor *u = tm_empty((int64_t[]){c->b, c->h, c->tq, c->tk}, 4, TM_F32);
    double *v = u && !tm_uniform_(u, 0.0, 1.0, &rng) ? tt_values(u) : NULL;
    int64_t n = c->b * c->h * c->tq * c->tk;
    float th = (float)(1.0 - p);
    for (int64_t i = 0; v && i < n; i++)
        v[i] = (float)v[i] < th ? 1.0 / (1.0 - p) : 0.0;
    tm_free(u);
    return v;
}

static bool close_enough(const char *file, int line, const char *label,
                         const char *what, const tm_tensor *t,
                         const double *want, int64_t n, double tol)
{
    double *got = t ? tt_values(t) : NULL;
    double e = got ? tt_rel_err(got, want, n) : INFINITY;
    free(got);
    if (e <= tol) return true;
    tt_fail(file, line, "%s: %s rel err %g > %g (%s)", label, what, e, tol,
            t ? "" : tm_last_error());
    return false;
}

bool tt_sdpa_check(const char *file, int line, const char *label,
                   const tt_sdpa_case *c, tm_dtype dt,
                   const tm_sdpa_opts *opts, bool grads, double tol,
                   uint64_t seed)
{
    double *qv = NULL, *kv = NULL, *vv = NULL, *gv = NULL, *madd = NULL;
    double *drop = NULL, *want = NULL, *dq = NULL, *dk = NULL, *dv = NULL;
    tm_tensor *q, *k, *v, *o = NULL, *go = NULL, *l = NULL, *prod = NULL;
    bool ok = false;
    tm_sdpa_opts so = *opts;
    so.causal = c->causal, so.causal_offset = c->offset;
    so.window = c->window, so.scale = c->scale;
    int64_t nq = c->b * c->h * c->tq * c->d, nk = c->b * c->hkv * c->tk * c->d;
    int64_t nv = c->b * c->hkv * c->tk * c->dv, no = c->b * c->h * c->tq * c->dv;
    q = tt_sdpa_input((int64_t[]){c->b, c->h, c->tq, c->d}, 4, dt, seed, &qv);
    k = tt_sdpa_input((int64_t[]){c->b, c->hkv, c->tk, c->d}, 4, dt,
                      seed + 1, &kv);
    v = tt_sdpa_input((int64_t[]){c->b, c->hkv, c->tk, c->dv}, 4, dt,
                      seed + 2, &vv);
    go = tt_sdpa_input((int64_t[]){c->b, c->h, c->tq, c->dv}, 4, dt,
                       seed + 3, &gv);
    if (!q || !k || !v || !go) goto done;
    madd = tt_sdpa_mask_add(opts->mask, c);
    if (opts->dropout_p > 0.0) {
        tm_rng r = opts->rng ? *opts->rng : tm_rng_new(0);
        if (!opts->rng) goto done; /* the default generator: not here */
        drop = tt_sdpa_drop(c, r, opts->dropout_p);
    }
    if (grads) {
        tm_requires_grad_(q, true);
        tm_requires_grad_(k, true);
        tm_requires_grad_(v, true);
    }
    o = tm_sdpa(q, k, v, &so);
    if (!o) {
        tt_fail(file, line, "%s: tm_sdpa failed: %s", label, tm_last_error());
        goto done;
    }
    want = malloc(sizeof(double) * (size_t)(no + 1));
    tt_sdpa_ref(c, qv, kv, vv, madd, drop, want);
    ok = close_enough(file, line, label, "out", o, want, no, tol);
    if (!grads) goto done;
    prod = tm_mul(o, go);
    l = prod ? tm_sum(prod, NULL, 0, false) : NULL;
    if (!l || tm_backward(l)) {
        tt_fail(file, line, "%s: backward failed: %s", label, tm_last_error());
        ok = false;
        goto done;
    }
    dq = malloc(sizeof(double) * (size_t)(nq + 1));
    dk = malloc(sizeof(double) * (size_t)(nk + 1));
    dv = malloc(sizeof(double) * (size_t)(nv + 1));
    tt_sdpa_ref_grad(c, qv, kv, vv, madd, drop, gv, dq, dk, dv);
    ok &= close_enough(file, line, label, "dq", tm_grad(q), dq, nq, tol);
    ok &= close_enough(file, line, label, "dk", tm_grad(k), dk, nk, tol);
    ok &= close_enough(file, line, label, "dv", tm_grad(v), dv, nv, tol);
done:
    if (!q || !k || !v || !go)
        tt_fail(file, line, "%s: inputs: %s", label, tm_last_error());
    free(qv), free(kv), free(vv), free(gv), free(madd), free(drop);
    free(want), free(dq), free(dk), free(dv);
    tm_free(q), tm_free(k), tm_free(v), tm_free(go), tm_free(o);
    tm_free(prod), tm_free(l);
    return ok;
}
