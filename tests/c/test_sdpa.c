/*
 * test_sdpa.c — tm_sdpa (forward and gradients) against the independent
 * F64 reference of sdpa_ref.c: head dims, Dv != D, lengths that are not a
 * multiple of any tile, Tq != Tk, MHA / GQA / MQA, causal alignment and
 * offsets, windows, BOOL and float masks broadcast from fewer dims, scale,
 * layouts, narrow dtypes, empty sizes.
 *
 * F32 tolerance: max |tm_sdpa - ref| / max |ref| <= 1e-5, for the output
 * and each gradient.  Every value is a sum over up to a few hundred keys
 * (or query rows, for dk and dv) of products of F32-rounded terms (2^-24
 * relative each, ~6e-8); accumulated in any order that stays below 1e-6
 * relative to the largest value, so 1e-5 fails only on a real error.  F64:
 * 1e-12 (the same sums in double).
 */
#include "gradcheck.h"
#include "harness.h"
#include "sdpa_ref.h"

#include <stdlib.h>

#define TOL32 1e-5
#define TOL64 1e-12

static const tm_sdpa_opts FUSED = {.impl = TM_SDPA_FUSED};

TEST(sdpa_head_dims_match_reference)
{
    int64_t ds[] = {8, 16, 32, 64, 80, 96, 128};
    for (int i = 0; i < 7; i++) {
        tt_sdpa_case c = {2, 2, 2, 37, 70, ds[i], ds[i], false, 0, 0, 0.0};
        char label[32];
        snprintf(label, sizeof label, "D %lld", (long long)ds[i]);
        SDPA_CHECK(label, &c, TM_F32, &FUSED, true, TOL32, 10 + (uint64_t)i);
    }
}

TEST(sdpa_dv_differs_from_d_and_heads_group)
{
    /* MHA, GQA (3 query heads per key/value head), MQA */
    int64_t hkv[] = {6, 2, 1};
    for (int i = 0; i < 3; i++) {
        tt_sdpa_case c = {2, 6, hkv[i], 33, 65, 16, 40, false, 0, 0, 0.0};
        SDPA_CHECK("heads", &c, TM_F32, &FUSED, true, TOL32, 20 + (uint64_t)i);
        SDPA_CHECK("heads f64", &c, TM_F64, &FUSED, true, TOL64, 20);
    }
}

TEST(sdpa_causal_alignment_and_offsets)
{
    /* top-left when Tq != Tk (PyTorch's is_causal), bottom-right with
     * offset Tk - Tq, a negative offset that leaves the first rows seeing
     * nothing (they must be 0), and Tq > Tk */
    tt_sdpa_case cs[] = {
        {1, 4, 2, 20, 77, 32, 32, true, 0, 0, 0.0},
        {1, 4, 2, 20, 77, 32, 32, true, 57, 0, 0.0},
        {1, 4, 2, 40, 40, 32, 24, true, -5, 0, 0.0},
        {2, 2, 1, 90, 30, 16, 16, true, 0, 0, 0.0},
        {1, 2, 2, 1, 300, 64, 64, true, 299, 0, 0.0}, /* one decode row */
    };
    for (int i = 0; i < 5; i++)
        SDPA_CHECK("causal", &cs[i], TM_F32, &FUSED, true, TOL32,
                   30 + (uint64_t)i);
}

TEST(sdpa_sliding_windows)
{
    tt_sdpa_case cs[] = {
        {1, 4, 2, 70, 70, 16, 16, true, 0, 16, 0.0},  /* causal window */
        {1, 2, 2, 50, 90, 16, 8, false, 0, 7, 0.0},    /* window alone */
        {1, 2, 1, 30, 100, 16, 16, true, 70, 33, 0.0}, /* after a cache */
        {1, 2, 2, 64, 64, 16, 16, true, 0, 1, 0.0},    /* itself only */
    };
    for (int i = 0; i < 4; i++)
        SDPA_CHECK("window", &cs[i], TM_F32, &FUSED, true, TOL32,
                   40 + (uint64_t)i);
}

TEST(sdpa_scale_given_and_default)
{
    tt_sdpa_case c = {1, 2, 2, 19, 23, 16, 16, false, 0, 0, 0.3};
    SDPA_CHECK("scale 0.3", &c, TM_F32, &FUSED, true, TOL32, 50);
    c.scale = -1.5;
    SDPA_CHECK("scale -1.5", &c, TM_F32, &FUSED, true, TOL32, 51);
    c.scale = 0.0;
    SDPA_CHECK("default scale", &c, TM_F32, &FUSED, true, TOL32, 52);
}

/* A BOOL mask of `shape` with about 1 in 4 keys hidden (fixed stream). */
static tm_tensor *bool_mask(const int64_t *shape, int nd, uint64_t seed)
{
    tm_tensor *u = tm_empty(shape, nd, TM_F32);
    tm_rng r = tm_rng_new(seed);
    tm_tensor *m = u && !tm_uniform_(u, 0, 1, &r)
                       ? tm_binary_scalar(TM_OP_GT, u, 0.25)
                       : NULL;
    tm_free(u);
    return m;
}

static tm_tensor *float_mask(const int64_t *shape, int nd, uint64_t seed,
                             tm_dtype dt)
{
    tm_tensor *m = tm_empty(shape, nd, dt);
    tm_rng r = tm_rng_new(seed);
    if (m && tm_normal_(m, 0.0, 2.0, &r)) tm_free(m), m = NULL;
    return m;
}

TEST(sdpa_masks_broadcast_from_fewer_dims)
{
    tt_sdpa_case c = {2, 4, 2, 21, 45, 16, 12, false, 0, 0, 0.0};
    int64_t shapes[][4] = {{2, 4, 21, 45}, {2, 1, 21, 45}, {1, 4, 1, 45},
                           {21, 45, 0, 0}, {45, 0, 0, 0}, {2, 1, 21, 1},
                           {1, 1, 1, 1}};
    int nds[] = {4, 4, 4, 2, 1, 4, 4};
    for (int i = 0; i < 7; i++) {
        tm_sdpa_opts o = FUSED;
        tm_tensor *m = bool_mask(shapes[i], nds[i], 60 + (uint64_t)i);
        REQUIRE(m);
        o.mask = m;
        SDPA_CHECK("bool mask", &c, TM_F32, &o, true, TOL32, 61);
        tm_free(m);
        m = float_mask(shapes[i], nds[i], 70 + (uint64_t)i, TM_F32);
        REQUIRE(m);
        o.mask = m;
        SDPA_CHECK("float mask", &c, TM_F32, &o, true, TOL32, 62);
        tm_free(m);
    }
}

TEST(sdpa_masks_with_causal_window_and_other_dtypes)
{
    tt_sdpa_case c = {1, 4, 1, 40, 40, 32, 32, true, 0, 12, 0.0};
    tm_sdpa_opts o = FUSED;
    tm_tensor *m = bool_mask((int64_t[]){40, 40}, 2, 80);
    REQUIRE(m);
    o.mask = m;
    SDPA_CHECK("bool+causal+window", &c, TM_F32, &o, true, TOL32, 81);
    tm_free(m);
    /* an F64 mask beside F32 q is converted to F32 (PyTorch would refuse;
     * here the mask's values are exact enough) and an F32 mask beside F64
     * q to F64 */
    m = float_mask((int64_t[]){1, 4, 40, 40}, 4, 82, TM_F64);
    REQUIRE(m);
    o.mask = m;
    SDPA_CHECK("f64 mask, f32 q", &c, TM_F32, &o, true, TOL32, 83);
    tm_free(m);
    m = float_mask((int64_t[]){40, 1}, 2, 84, TM_F32);
    REQUIRE(m);
    o.mask = m;
    SDPA_CHECK("f32 mask, f64 q", &c, TM_F64, &o, true, TOL64, 85);
    tm_free(m);
}

TEST(sdpa_fully_masked_rows_are_zero_not_nan)
{
    /* row 3 hides every key with a BOOL mask, row 5 with -inf floats */
    tt_sdpa_case c = {1, 2, 2, 8, 10, 8, 8, false, 0, 0, 0.0};
    double mb[80], mf[80];
    for (int i = 0; i < 80; i++) {
        mb[i] = i / 10 == 3 ? 0.0 : 1.0;
        mf[i] = i / 10 == 5 ? -INFINITY : 0.0;
    }
    tm_tensor *b = tt_tensor(mb, (int64_t[]){8, 10}, 2, TM_BOOL);
    tm_tensor *f = tt_tensor(mf, (int64_t[]){8, 10}, 2, TM_F32);
    REQUIRE(b && f);
    for (int impl = TM_SDPA_FUSED; impl <= TM_SDPA_COMPOSED; impl++) {
        tm_sdpa_opts o = {.impl = (tm_sdpa_impl)impl, .mask = b};
        SDPA_CHECK("dead bool row", &c, TM_F32, &o, true, TOL32, 90);
        o.mask = f;
        SDPA_CHECK("dead -inf row", &c, TM_F32, &o, true, TOL32, 91);
    }
    tm_free(b), tm_free(f);
}

TEST(sdpa_three_dim_and_five_dim_inputs)
{
    /* (H, T, D): no batch dims; (2, 3, H, T, D): two batch dims */
    tm_tensor *q = tt_sdpa_input((int64_t[]){4, 9, 8}, 3, TM_F32, 1, NULL);
    tm_tensor *k = tt_sdpa_input((int64_t[]){2, 11, 8}, 3, TM_F32, 2, NULL);
    tm_tensor *v = tt_sdpa_input((int64_t[]){2, 11, 6}, 3, TM_F32, 3, NULL);
    tm_tensor *o = tm_sdpa(q, k, v, &FUSED);
    REQUIRE(o);
    CHECK_SHAPE(o, 4, 9, 6);
    /* the same as a 4-d call with B = 1 */
    tm_tensor *q4 = tm_unsqueeze(q, 0), *k4 = tm_unsqueeze(k, 0);
    tm_tensor *v4 = tm_unsqueeze(v, 0);
    tm_tensor *o4 = tm_sdpa(q4, k4, v4, &FUSED);
    REQUIRE(o4);
    double *a = tt_values(o), *b = tt_values(o4);
    CHECK(a && b && tt_rel_err(a, b, 4 * 9 * 6) == 0.0);
    free(a), free(b);
    tm_free(q), tm_free(k), tm_free(v), tm_free(o);
    tm_free(q4), tm_free(k4), tm_free(v4), tm_free(o4);

    /* five dims with a mask (3, 1, T, T) broadcast over the first batch
     * dim and the heads: the same as the flattened 4-d call */
    tm_tensor *q5 = tt_sdpa_input((int64_t[]){2, 3, 2, 7, 8}, 5, TM_F32, 4,
                                  NULL);
    tm_tensor *k5 = tt_sdpa_input((int64_t[]){2, 3, 1, 7, 8}, 5, TM_F32, 5,
                                  NULL);
    tm_tensor *v5 = tt_sdpa_input((int64_t[]){2, 3, 1, 7, 8}, 5, TM_F32, 6,
                                  NULL);
    tm_tensor *m = bool_mask((int64_t[]){3, 1, 7, 7}, 4, 7);
    REQUIRE(q5 && k5 && v5 && m);
    tm_sdpa_opts op = FUSED;
    op.mask = m;
    tm_tensor *y5 = tm_sdpa(q5, k5, v5, &op);
    REQUIRE(y5);
    CHECK_SHAPE(y5, 2, 3, 2, 7, 8);
    tm_tensor *me = tm_expand(m, (int64_t[]){2, 3, 2, 7, 7}, 5);
    tm_tensor *mf = me ? tm_reshape(me, (int64_t[]){6, 2, 7, 7}, 4) : NULL;
    tm_tensor *qf = tm_reshape(q5, (int64_t[]){6, 2, 7, 8}, 4);
    tm_tensor *kf = tm_reshape(k5, (int64_t[]){6, 1, 7, 8}, 4);
    tm_tensor *vf = tm_reshape(v5, (int64_t[]){6, 1, 7, 8}, 4);
    op.mask = mf;
    tm_tensor *yf = mf && qf ? tm_sdpa(qf, kf, vf, &op) : NULL;
    REQUIRE(yf);
    a = tt_values(y5), b = tt_values(yf);
    CHECK(a && b && tt_rel_err(a, b, 6 * 2 * 7 * 8) == 0.0);
    free(a), free(b);
    tm_free(q5), tm_free(k5), tm_free(v5), tm_free(m), tm_free(y5);
    tm_free(me), tm_free(mf), tm_free(qf), tm_free(kf), tm_free(vf);
    tm_free(yf);
}

TEST(sdpa_permuted_layout_goes_through_without_copy)
{
    /* [B, T, H, D] viewed as [B, H, T, D]: no copy of q, k or v, so the
     * forward's extra peak is the output (and the kernel's small scratch),
     * well below one more input's bytes */
    int64_t s[4] = {1, 256, 8, 64};
    int perm[4] = {0, 2, 1, 3};
    tm_tensor *qt = tt_sdpa_input(s, 4, TM_F32, 1, NULL);
    tm_tensor *kt = tt_sdpa_input(s, 4, TM_F32, 2, NULL);
    tm_tensor *vt = tt_sdpa_input(s, 4, TM_F32, 3, NULL);
    tm_tensor *q = tm_permute(qt, perm, 4), *k = tm_permute(kt, perm, 4);
    tm_tensor *v = tm_permute(vt, perm, 4);
    REQUIRE(q && k && v);
    tm_mem_stats before, after;
    tm_memory_reset_peak();
    tm_memory_stats(&before);
    tm_tensor *o = tm_sdpa(q, k, v, &FUSED);
    tm_memory_stats(&after);
    REQUIRE(o);
    size_t extra = after.peak_bytes - before.current_bytes;
    size_t out_bytes = tm_nbytes(o), in_bytes = tm_nbytes(qt);
    if (!(extra < out_bytes + in_bytes / 4))
        tt_fail(__FILE__, __LINE__, "extra peak %zu bytes for an output of "
                "%zu: an input (%zu) was copied?", extra, out_bytes,
                in_bytes);
    /* and the values are those of the contiguous layout */
    tm_tensor *qc = tm_contiguous(q), *kc = tm_contiguous(k);
    tm_tensor *vc = tm_contiguous(v);
    tm_tensor *oc = tm_sdpa(qc, kc, vc, &FUSED);
    double *a = tt_values(o), *b = oc ? tt_values(oc) : NULL;
    CHECK(a && b && tt_rel_err(a, b, 256 * 8 * 64) == 0.0);
    free(a), free(b);
    tm_free(qt), tm_free(kt), tm_free(vt), tm_free(q), tm_free(k);
    tm_free(v), tm_free(o), tm_free(qc), tm_free(kc), tm_free(vc);
    tm_free(oc);
}

TEST(sdpa_narrow_dtypes)
{
    /* F16 / BF16 q, k, v compute in F32 and round the result: compared
     * with the reference over the rounded inputs, the error is the final
     * rounding (2^-11 for F16, 2^-8 for BF16 of the largest value) */
    tt_sdpa_case c = {1, 2, 2, 17, 29, 16, 16, true, 12, 0, 0.0};
    SDPA_CHECK("f16", &c, TM_F16, &FUSED, false, 1e-3, 100);
    SDPA_CHECK("bf16", &c, TM_BF16, &FUSED, false, 8e-3, 101);
    SDPA_CHECK("f16 grads", &c, TM_F16, &FUSED, true, 1e-2, 102);
    /* F32 q over an F16 cache that needs no gradient: the kernel reads it
     * as stored, exact to F32 rounding */
    double *qv = NULL, *kv = NULL, *vv = NULL;
    tm_tensor *q = tt_sdpa_input((int64_t[]){1, 2, 17, 16}, 4, TM_F32, 103,
                                 &qv);
    tm_tensor *k = tt_sdpa_input((int64_t[]){1, 2, 29, 16}, 4, TM_F16, 104,
                                 &kv);
    tm_tensor *v = tt_sdpa_input((int64_t[]){1, 2, 29, 16}, 4, TM_BF16, 105,
                                 &vv);
    REQUIRE(q && k && v);
    tm_sdpa_opts o = FUSED;
    o.causal = true, o.causal_offset = 12;
    tm_requires_grad_(q, true);
    tm_tensor *y = tm_sdpa(q, k, v, &o);
    REQUIRE(y);
    CHECK(tm_dtype_of(y) == TM_F32);
    double want[2 * 17 * 16];
    tt_sdpa_ref(&c, qv, kv, vv, NULL, NULL, want);
    double *yv = tt_values(y);
    CHECK(yv && tt_rel_err(yv, want, 2 * 17 * 16) <= TOL32);
    /* q's gradient still flows (k, v converted for the backward) */
    tm_tensor *l = tm_sum(y, NULL, 0, false);
    CHECK(l && tm_backward(l) == TM_OK && tm_grad(q) &&
          tm_grad(k) == NULL);
    free(qv), free(kv), free(vv), free(yv);
    tm_free(q), tm_free(k), tm_free(v), tm_free(y), tm_free(l);
}

TEST(sdpa_empty_sizes)
{
    /* Tk = 0: every query sees nothing, out = 0 and gradients 0; Tq = 0
     * and B = 0: empty results */
    tm_tensor *q = tt_sdpa_input((int64_t[]){2, 2, 3, 4}, 4, TM_F32, 1, NULL);
    tm_tensor *k = tm_zeros((int64_t[]){2, 1, 0, 4}, 4, TM_F32);
    tm_tensor *v = tm_zeros((int64_t[]){2, 1, 0, 5}, 4, TM_F32);
    REQUIRE(q && k && v);
    for (int impl = TM_SDPA_FUSED; impl <= TM_SDPA_COMPOSED; impl++) {
        tm_requires_grad_(q, true);
        tm_sdpa_opts o = {.impl = (tm_sdpa_impl)impl};
        tm_tensor *y = tm_sdpa(q, k, v, &o);
        REQUIRE(y);
        CHECK_SHAPE(y, 2, 2, 3, 5);
        double zeros[60] = {0};
        CHECK_VALUES(y, zeros, 60, 0, 0);
        tm_tensor *l = tm_sum(y, NULL, 0, false);
        CHECK(l && tm_backward(l) == TM_OK);
        if (tm_grad(q)) CHECK_VALUES(tm_grad(q), zeros, 48, 0, 0);
        tm_zero_grad(q);
        tm_free(y), tm_free(l);
    }
    tm_tensor *q0 = tm_zeros((int64_t[]){2, 2, 0, 4}, 4, TM_F32);
    tm_tensor *k1 = tm_zeros((int64_t[]){2, 1, 3, 4}, 4, TM_F32);
    tm_tensor *y0 = tm_sdpa(q0, k1, k1, &FUSED);
    CHECK(y0 && tm_numel(y0) == 0);
    tm_free(q), tm_free(k), tm_free(v), tm_free(q0), tm_free(k1);
    tm_free(y0);
}
