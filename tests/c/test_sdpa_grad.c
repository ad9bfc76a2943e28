/*
 * test_sdpa_grad.c — tm_sdpa's autograd: F64 central differences
 * (gradcheck.h) of q, k and v through the fused backward, the fused and
 * composed paths against each other (dropout included), dropout's
 * statistics and generator use, saved-tensor version checks, and the
 * memory bound of the fused forward + backward.
 */
#include "gradcheck.h"
#include "harness.h"
#include "sdpa_ref.h"

#include <stdlib.h>

static tm_tensor *sdpa_fn(tm_tensor *const *in, void *ctx)
{
    return tm_sdpa(in[0], in[1], in[2], ctx);
}

/* A dropout call with a fixed state: each evaluation restarts the same
 * generator, so the mask is the same and the function smooth. */
typedef struct drop_ctx {
    tm_sdpa_opts o;
    tm_rng start;
} drop_ctx;

static tm_tensor *sdpa_drop_fn(tm_tensor *const *in, void *ctx)
{
    drop_ctx *d = ctx;
    tm_rng r = d->start;
    tm_sdpa_opts o = d->o;
    o.rng = &r;
    return tm_sdpa(in[0], in[1], in[2], &o);
}

static void gradcheck_case(const char *name, const int64_t *qs,
                           const int64_t *ks, const int64_t *vs,
                           const tm_sdpa_opts *o, uint64_t seed)
{
    tm_tensor *in[3] = {tt_leaf(qs, 4, seed), tt_leaf(ks, 4, seed + 1),
                        tt_leaf(vs, 4, seed + 2)};
    if (in[0] && in[1] && in[2])
        CHECK(GRADCHECK(name, sdpa_fn, (void *)o, in, 3, 1e-6));
    else
        tt_fail(__FILE__, __LINE__, "leaves: %s", tm_last_error());
    for (int i = 0; i < 3; i++) tm_free(in[i]);
}

TEST(sdpa_gradcheck_causal_gqa_dv_differs)
{
    tm_sdpa_opts o = {.causal = true, .impl = TM_SDPA_FUSED};
    gradcheck_case("causal gqa", (int64_t[]){2, 4, 9, 8},
                   (int64_t[]){2, 2, 9, 8}, (int64_t[]){2, 2, 9, 5}, &o, 1);
    o.causal_offset = 4; /* bottom-right, Tq < Tk */
    gradcheck_case("causal offset", (int64_t[]){1, 2, 5, 8},
                   (int64_t[]){1, 1, 9, 8}, (int64_t[]){1, 1, 9, 3}, &o, 4);
}

TEST(sdpa_gradcheck_window_and_masks)
{
    tm_sdpa_opts o = {.causal = true, .window = 3, .impl = TM_SDPA_FUSED};
    gradcheck_case("window", (int64_t[]){1, 2, 11, 4},
                   (int64_t[]){1, 2, 11, 4}, (int64_t[]){1, 2, 11, 6}, &o,
                   10);
    double mb[7 * 9], mf[7 * 9];
    for (int i = 0; i < 63; i++) {
        mb[i] = (i * 7) % 5 != 0 || i / 9 == 2; /* row 2 sees every key */
        mf[i] = (i % 4 == 1) ? -INFINITY : 0.1 * (i % 7) - 0.3;
    }
    tm_tensor *b = tt_tensor(mb, (int64_t[]){7, 9}, 2, TM_BOOL);
    tm_tensor *f = tt_tensor(mf, (int64_t[]){1, 1, 7, 9}, 4, TM_F64);
    REQUIRE(b && f);
    tm_sdpa_opts m = {.mask = b, .impl = TM_SDPA_FUSED};
    gradcheck_case("bool mask", (int64_t[]){2, 3, 7, 4},
                   (int64_t[]){2, 1, 9, 4}, (int64_t[]){2, 1, 9, 4}, &m, 20);
    m.mask = f;
    gradcheck_case("float mask", (int64_t[]){2, 3, 7, 4},
                   (int64_t[]){2, 1, 9, 4}, (int64_t[]){2, 1, 9, 4}, &m, 30);
    tm_free(b), tm_free(f);
}

TEST(sdpa_gradcheck_dropout_with_fixed_state)
{
    drop_ctx d = {{.dropout_p = 0.3, .causal = true, .impl = TM_SDPA_FUSED},
                  tm_rng_new(1234)};
    tm_tensor *in[3] = {TT_LEAF(40, 1, 2, 8, 4), TT_LEAF(41, 1, 2, 8, 4),
                        TT_LEAF(42, 1, 2, 8, 4)};
    REQUIRE(in[0] && in[1] && in[2]);
    CHECK(GRADCHECK("dropout fused", sdpa_drop_fn, &d, in, 3, 1e-6));
    d.o.impl = TM_SDPA_COMPOSED;
    CHECK(GRADCHECK("dropout composed", sdpa_drop_fn, &d, in, 3, 1e-6));
    for (int i = 0; i < 3; i++) tm_free(in[i]);
}

TEST(sdpa_dropout_matches_the_contract_in_f32)
{
    /* the reference with the contract's decisions (tm_uniform_ of an F32
     * tensor from the same state), forward and gradients */
    tt_sdpa_case c = {2, 4, 2, 33, 47, 16, 8, true, 10, 0, 0.0};
    tm_rng r = tm_rng_new(77);
    tm_sdpa_opts o = {.dropout_p = 0.25, .rng = &r, .impl = TM_SDPA_FUSED};
    SDPA_CHECK("dropout fused", &c, TM_F32, &o, true, 1e-5, 5);
    r = tm_rng_new(77);
    o.impl = TM_SDPA_COMPOSED;
    SDPA_CHECK("dropout composed", &c, TM_F32, &o, true, 1e-5, 5);
}

/* out and the gradients of sum(out * go) for q, k, v of case c. */
static bool run_grads(const tt_sdpa_case *c, const tm_sdpa_opts *o,
                      uint64_t seed, double **res)
{
    tm_tensor *t[4] = {
        tt_sdpa_input((int64_t[]){c->b, c->h, c->tq, c->d}, 4, TM_F32, seed,
                      NULL),
        tt_sdpa_input((int64_t[]){c->b, c->hkv, c->tk, c->d}, 4, TM_F32,
                      seed + 1, NULL),
        tt_sdpa_input((int64_t[]){c->b, c->hkv, c->tk, c->dv}, 4, TM_F32,
                      seed + 2, NULL),
        tt_sdpa_input((int64_t[]){c->b, c->h, c->tq, c->dv}, 4, TM_F32,
                      seed + 3, NULL)};
    tm_tensor *y = NULL, *p = NULL, *l = NULL;
    bool ok = t[0] && t[1] && t[2] && t[3];
    for (int i = 0; ok && i < 3; i++) tm_requires_grad_(t[i], true);
    ok = ok && (y = tm_sdpa(t[0], t[1], t[2], o)) && (p = tm_mul(y, t[3])) &&
         (l = tm_sum(p, NULL, 0, false)) && !tm_backward(l);
    for (int i = 0; i < 4; i++) res[i] = NULL;
    if (ok) {
        res[0] = tt_values(y);
        for (int i = 0; i < 3; i++) res[i + 1] = tt_values(tm_grad(t[i]));
    }
    for (int i = 0; i < 4; i++) tm_free(t[i]);
    tm_free(y), tm_free(p), tm_free(l);
    return ok;
}

TEST(sdpa_fused_and_composed_agree)
{
    tt_sdpa_case c = {2, 4, 1, 19, 31, 16, 12, false, 0, 0, 0.0};
    int64_t n[4] = {2 * 4 * 19 * 12, 2 * 4 * 19 * 16, 2 * 31 * 16,
                    2 * 31 * 12};
    double mb[19 * 31];
    for (int i = 0; i < 19 * 31; i++) mb[i] = i % 3 != 0;
    tm_tensor *m = tt_tensor(mb, (int64_t[]){19, 31}, 2, TM_BOOL);
    REQUIRE(m);
    tm_rng r1 = tm_rng_new(5), r2 = tm_rng_new(5);
    tm_sdpa_opts of[3] = {{.causal = true, .causal_offset = 12, .window = 9},
                          {.mask = m, .scale = 0.7},
                          {.causal = true, .dropout_p = 0.4, .rng = &r1}};
    for (int k = 0; k < 3; k++) {
        tm_sdpa_opts a = of[k], b = of[k];
        a.impl = TM_SDPA_FUSED, b.impl = TM_SDPA_COMPOSED;
        if (k == 2) b.rng = &r2;
        double *x[4], *y[4];
        CHECK(run_grads(&c, &a, 100, x));
        CHECK(run_grads(&c, &b, 100, y));
        for (int i = 0; i < 4; i++) {
            double e = x[i] && y[i] ? tt_rel_err(x[i], y[i], n[i]) : 1.0;
            if (!(e <= 1e-5))
                tt_fail(__FILE__, __LINE__, "opts %d, result %d: fused vs "
                        "composed rel err %g", k, i, e);
            free(x[i]), free(y[i]);
        }
    }
    /* the same generator state was used and advanced alike */
    CHECK(r1.counter == r2.counter && r1.counter > 0);
    tm_free(m);
}

TEST(sdpa_dropout_statistics_and_generator_use)
{
    /* v = identity rows: out[i, j] is the kept weight of key j, so the
     * kept fraction and the mean are read off the output */
    int64_t b = 2, h = 4, t = 64, n = b * h * t * t;
    tm_tensor *q = tm_zeros((int64_t[]){b, h, t, 8}, 4, TM_F32);
    tm_tensor *k = tm_zeros((int64_t[]){b, h, t, 8}, 4, TM_F32);
    tm_tensor *e = tm_eye(t, t, TM_F32);
    tm_tensor *v = e ? tm_expand(e, (int64_t[]){b, h, t, t}, 4) : NULL;
    REQUIRE(q && k && v);
    double p = 0.3;
    tm_rng r = tm_rng_new(99);
    tm_sdpa_opts o = {.dropout_p = p, .rng = &r, .impl = TM_SDPA_FUSED};
    tm_tensor *y = tm_sdpa(q, k, v, &o);
    REQUIRE(y);
    /* ceil(B H Tq Tk / 4) blocks drawn */
    CHECK_INT(r.counter, (n + 3) / 4);
    double *yv = tt_values(y);
    REQUIRE(yv);
    int64_t kept = 0;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        kept += yv[i] != 0.0;
        sum += yv[i];
    }
    /* kept ~ Binomial(n, 1 - p): within 5 standard deviations */
    double mean = (double)n * (1 - p), sd = sqrt((double)n * p * (1 - p));
    if (!(fabs((double)kept - mean) <= 5 * sd))
        tt_fail(__FILE__, __LINE__, "kept %lld of %lld, expected %g +- %g",
                (long long)kept, (long long)n, mean, 5 * sd);
    /* each kept weight is (1 / T) / (1 - p) */
    for (int64_t i = 0; i < n; i++)
        if (yv[i] != 0.0 && fabs(yv[i] - 1.0 / t / (1 - p)) > 1e-6) {
            tt_fail(__FILE__, __LINE__, "a kept weight is %g", yv[i]);
            break;
        }
    /* the mean row sum is that of the undropped rows (1): a row sum is
     * (kept in row) / (T (1 - p)), of variance p / (T (1 - p)) */
    double rows = (double)(b * h * t), row_sd = sqrt(p / (1 - p) / t);
    CHECK(fabs(sum / rows - 1.0) <= 5 * row_sd / sqrt(rows));
    /* the default generator is used when rng is NULL, and advanced */
    tm_manual_seed(3);
    o.rng = NULL;
    tm_tensor *y1 = tm_sdpa(q, k, v, &o);
    tm_tensor *y2 = tm_sdpa(q, k, v, &o);
    tm_manual_seed(3);
    tm_tensor *y3 = tm_sdpa(q, k, v, &o);
    REQUIRE(y1 && y2 && y3);
    double *a1 = tt_values(y1), *a2 = tt_values(y2), *a3 = tt_values(y3);
    CHECK(a1 && a2 && a3);
    if (a1 && a2 && a3) {
        CHECK(tt_rel_err(a1, a3, n) == 0.0); /* reseeded: the same */
        CHECK(tt_rel_err(a1, a2, n) > 0.0);  /* advanced: another mask */
    }
    free(yv), free(a1), free(a2), free(a3);
    tm_free(q), tm_free(k), tm_free(e), tm_free(v), tm_free(y);
    tm_free(y1), tm_free(y2), tm_free(y3);
}

TEST(sdpa_gradients_only_for_inputs_that_require_them)
{
    tm_tensor *q = tt_sdpa_input((int64_t[]){1, 2, 5, 4}, 4, TM_F32, 1, NULL);
    tm_tensor *k = tt_sdpa_input((int64_t[]){1, 2, 5, 4}, 4, TM_F32, 2, NULL);
    tm_tensor *v = tt_sdpa_input((int64_t[]){1, 2, 5, 4}, 4, TM_F32, 3, NULL);
    REQUIRE(q && k && v);
    tm_requires_grad_(v, true);
    tm_tensor *y = tm_sdpa(q, k, v, NULL);
    REQUIRE(y);
    CHECK(tm_grad_fn_name(y) &&
          strcmp(tm_grad_fn_name(y),
                 "ScaledDotProductFlashAttentionBackward") == 0);
    tm_tensor *l = tm_sum(y, NULL, 0, false);
    CHECK(l && tm_backward(l) == TM_OK);
    CHECK(tm_grad(v) != NULL && tm_grad(q) == NULL && tm_grad(k) == NULL);
    tm_free(y), tm_free(l);
    /* no input requires grad: no node */
    tm_requires_grad_(v, false);
    y = tm_sdpa(q, k, v, NULL);
    CHECK(y && tm_grad_fn_name(y) == NULL);
    tm_free(y);
    tm_free(q), tm_free(k), tm_free(v);
}

TEST(sdpa_backward_detects_in_place_changes)
{
    tm_tensor *q = tt_sdpa_input((int64_t[]){1, 2, 5, 4}, 4, TM_F32, 1, NULL);
    tm_tensor *k = tt_sdpa_input((int64_t[]){1, 2, 5, 4}, 4, TM_F32, 2, NULL);
    tm_tensor *v = tt_sdpa_input((int64_t[]){1, 2, 5, 4}, 4, TM_F32, 3, NULL);
    REQUIRE(q && k && v);
    tm_requires_grad_(q, true);
    tm_tensor *y = tm_sdpa(q, k, v, NULL);
    tm_tensor *l = y ? tm_sum(y, NULL, 0, false) : NULL;
    REQUIRE(l);
    CHECK(tm_mul_scalar_(k, 2.0) == TM_OK); /* k was saved */
    CHECK_STATUS(tm_backward(l), TM_ESTATE, "modified in place");
    tm_free(y), tm_free(l);
    tm_free(q), tm_free(k), tm_free(v);
}

/* The acceptance bound: B=1, H=4, T=8192, D=64, causal, F32, forward and
 * backward together allocate less than 64 MB beyond what existed before
 * (the inputs).  The output, lse, upstream gradient and three gradients
 * are ~40 MB; a materialised Tq x Tk matrix would be 256 MB per head. */
TEST(sdpa_memory_t8192_forward_backward_below_64mb)
{
    int64_t s[4] = {1, 4, 8192, 64};
    tm_tensor *q = tt_sdpa_input(s, 4, TM_F32, 1, NULL);
    tm_tensor *k = tt_sdpa_input(s, 4, TM_F32, 2, NULL);
    tm_tensor *v = tt_sdpa_input(s, 4, TM_F32, 3, NULL);
    REQUIRE(q && k && v);
    tm_requires_grad_(q, true);
    tm_requires_grad_(k, true);
    tm_requires_grad_(v, true);
    tm_mem_stats before, after;
    tm_memory_reset_peak();
    tm_memory_stats(&before);
    tm_sdpa_opts o = {.causal = true, .impl = TM_SDPA_FUSED};
    tm_tensor *y = tm_sdpa(q, k, v, &o);
    tm_tensor *l = y ? tm_sum(y, NULL, 0, false) : NULL;
    CHECK(l && tm_backward(l) == TM_OK);
    tm_memory_stats(&after);
    size_t extra = after.peak_bytes - before.current_bytes;
    if (!(extra < (size_t)64 << 20))
        tt_fail(__FILE__, __LINE__, "extra peak %.1f MB >= 64 MB",
                (double)extra / (1 << 20));
    CHECK(tm_grad(q) && tm_grad(k) && tm_grad(v));
    tm_free(y), tm_free(l);
    tm_free(q), tm_free(k), tm_free(v);
}

static bool fused_node(const tm_tensor *y)
{
    const char *n = y ? tm_grad_fn_name(y) : NULL;
    return n && strcmp(n, "ScaledDotProductFlashAttentionBackward") == 0;
}

TEST(sdpa_auto_dispatch_rule)
{
    /* many heads of at most 3 x 3 scores with a backward: composed; the
     * same without many heads, or with 4 x 4 scores: fused; and both agree */
    tm_tensor *q = tt_sdpa_input((int64_t[]){16, 4, 3, 8}, 4, TM_F32, 1, NULL);
    tm_tensor *k = tt_sdpa_input((int64_t[]){16, 4, 3, 8}, 4, TM_F32, 2, NULL);
    tm_tensor *q4 = tt_sdpa_input((int64_t[]){16, 4, 4, 8}, 4, TM_F32, 3,
                                  NULL);
    tm_tensor *qs = tt_sdpa_input((int64_t[]){2, 4, 3, 8}, 4, TM_F32, 4, NULL);
    tm_tensor *ks = tt_sdpa_input((int64_t[]){2, 4, 3, 8}, 4, TM_F32, 5, NULL);
    REQUIRE(q && k && q4 && qs && ks);
    tm_requires_grad_(q, true), tm_requires_grad_(q4, true);
    tm_requires_grad_(qs, true);
    tm_tensor *ya = tm_sdpa(q, k, k, NULL);
    tm_sdpa_opts f = {.impl = TM_SDPA_FUSED};
    tm_tensor *yf = tm_sdpa(q, k, k, &f);
    tm_tensor *y4 = tm_sdpa(q4, k, k, NULL);
    tm_tensor *ys = tm_sdpa(qs, ks, ks, NULL);
    REQUIRE(ya && yf && y4 && ys);
    CHECK(!fused_node(ya) && fused_node(yf));
    CHECK(fused_node(y4) && fused_node(ys));
    double *a = tt_values(ya), *b = tt_values(yf);
    CHECK(a && b && tt_rel_err(a, b, 16 * 4 * 3 * 8) <= 1e-6);
    free(a), free(b);
    tm_free(q), tm_free(k), tm_free(q4), tm_free(qs), tm_free(ks);
    tm_free(ya), tm_free(yf), tm_free(y4), tm_free(ys);
}
