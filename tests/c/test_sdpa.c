/*
 * test_sdpa.c — tm_sdpa's forward against the F64 reference of
 * sdpa_ref.c: head dims, GQA, causal alignment, masks, windows, scale.
 *
 * Tolerance for F32: max |fused - ref| / max |ref| <= 1e-5.  Each output
 * is a sum over Tk weighted values, each weight a rounded exp of a dot of
 * D products; F32 rounding (2^-24 ~ 6e-8 per operation) over sums of a few
 * hundred terms stays well below 1e-5 relative to the largest output.
 */
#include "gradcheck.h"
#include "harness.h"
#include "sdpa_ref.h"

#include <stdlib.h>

/* Runs case c in dtype dt (mask: an optional tensor plus its additive
 * values at full shape) through tm_sdpa with opts; returns the error. */
static double run_case(const tt_sdpa_case *c, tm_dtype dt,
                       const tm_sdpa_opts *opts, const double *madd,
                       uint64_t seed)
{
    double *qv = NULL, *kv = NULL, *vv = NULL, *ov = NULL, *want = NULL;
    double err = INFINITY;
    tm_tensor *q = tt_sdpa_input((int64_t[]){c->b, c->h, c->tq, c->d}, 4, dt,
                                 seed, &qv);
    tm_tensor *k = tt_sdpa_input((int64_t[]){c->b, c->hkv, c->tk, c->d}, 4,
                                 dt, seed + 1, &kv);
    tm_tensor *v = tt_sdpa_input((int64_t[]){c->b, c->hkv, c->tk, c->dv}, 4,
                                 dt, seed + 2, &vv);
    tm_tensor *o = q && k && v ? tm_sdpa(q, k, v, opts) : NULL;
    if (!o) {
        tt_fail(__FILE__, __LINE__, "tm_sdpa failed: %s", tm_last_error());
        goto done;
    }
    int64_t n = c->b * c->h * c->tq * c->dv;
    want = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tt_sdpa_ref(c, qv, kv, vv, madd, NULL, want);
    ov = tt_values(o);
    if (ov) err = tt_rel_err(ov, want, n);
done:
    free(qv), free(kv), free(vv), free(ov), free(want);
    tm_free(q), tm_free(k), tm_free(v), tm_free(o);
    return err;
}

static tm_sdpa_opts opts_of(const tt_sdpa_case *c)
{
    tm_sdpa_opts o = {0};
    o.causal = c->causal;
    o.causal_offset = c->offset;
    o.window = c->window;
    o.scale = c->scale;
    o.impl = TM_SDPA_FUSED;
    return o;
}

TEST(sdpa_forward_matches_reference_over_head_dims)
{
    int64_t ds[] = {8, 16, 32, 64, 80, 96, 128};
    for (int i = 0; i < 7; i++) {
        tt_sdpa_case c = {2, 4, 2, 37, 70, ds[i], ds[i], false, 0, 0, 0.0};
        tm_sdpa_opts o = opts_of(&c);
        double e = run_case(&c, TM_F32, &o, NULL, 10 + (uint64_t)i);
        if (!(e <= 1e-5))
            tt_fail(__FILE__, __LINE__, "D %lld: rel err %g",
                    (long long)ds[i], e);
    }
}

TEST(sdpa_forward_causal_gqa_matches_reference)
{
    tt_sdpa_case c = {1, 6, 2, 65, 65, 16, 24, true, 0, 0, 0.0};
    tm_sdpa_opts o = opts_of(&c);
    CHECK(run_case(&c, TM_F32, &o, NULL, 3) <= 1e-5);
    CHECK(run_case(&c, TM_F64, &o, NULL, 3) <= 1e-12);
}
