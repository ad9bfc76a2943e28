/*
 * test_rope.c — rotary embeddings (foundry/attention.h): the rotation
 * against the formula written out here, both layouts and partial
 * rotary_dim, positions by offset and by tensor, the F32 kernel (vector
 * body, scalar tail, threads) against F64, the cache and dynamic NTK's
 * recomputation, F64 gradient checks and the errors of bad input.
 * The scaling variants are checked against an independent numpy
 * transcription in tests/python/test_rope.py.
 */
#include "gradcheck.h"

#include "foundry/attention.h"

#include <stdlib.h>

/* The unscaled rotation of row vector x[d] at position pos, in double. */
static void ref_row(const double *x, double *o, int64_t d, int64_t r,
                    double theta, bool inter, double pos)
{
    for (int64_t k = 0; k < d; k++) o[k] = x[k];
    for (int64_t t = 0; t < r / 2; t++) {
        double a = pos * pow(theta, -2.0 * (double)t / (double)r);
        int64_t i = inter ? 2 * t : t, j = inter ? 2 * t + 1 : t + r / 2;
        o[i] = x[i] * cos(a) - x[j] * sin(a);
        o[j] = x[j] * cos(a) + x[i] * sin(a);
    }
}

/* Checks rope(x) for x (rows, t, d) against ref_row at pos[row, t]. */
static void check_rows(const tm_tensor *got, const tm_tensor *x, int64_t d,
                       int64_t r, double theta, bool inter,
                       const int64_t *pos, int64_t pos_rows, double tol)
{
    double *xv = tt_values(x);
    int64_t n = tm_numel(x), t = tm_shape(x)[tm_ndim(x) - 2];
    int64_t per = n / (t * d) / pos_rows; /* rows sharing a position row */
    double *want = malloc((size_t)n * sizeof *want);
    if (xv && want) {
        for (int64_t row = 0; row < n / d; row++) {
            int64_t ti = row % t, pr = row / t / per;
            ref_row(xv + row * d, want + row * d, d, r, theta, inter,
                    (double)pos[pr * t + ti]);
        }
        CHECK_VALUES(got, want, n, 0, tol);
    }
    free(xv);
    free(want);
}

static tm_tensor *leaf(uint64_t seed, const int64_t *shape, int nd,
                       tm_dtype dt)
{
    tm_tensor *x = tt_leaf(shape, nd, seed);
    if (!x || dt == TM_F64) return x;
    tm_tensor *y = tm_to_dtype(x, dt);
    tm_free(x);
    return y;
}

TEST(rope_rotates_pairs_by_offset_positions_both_layouts)
{
    int64_t shape[4] = {2, 3, 5, 10};
    for (int inter = 0; inter < 2; inter++) {
        for (int64_t r = 4; r <= 10; r += 6) {
            tm_rope_config c = tm_rope_defaults(10);
            c.rotary_dim = r;
            c.interleaved = inter;
            c.theta = 500.0;
            tm_rope *rope = tm_rope_new(&c);
            tm_tensor *x = leaf(1, shape, 4, TM_F64);
            REQUIRE(rope && x);
            tm_tensor *y = tm_rope_apply(rope, x, 7, NULL);
            REQUIRE(y);
            CHECK_SHAPE(y, 2, 3, 5, 10);
            int64_t pos[5] = {7, 8, 9, 10, 11};
            /* F64 tables and kernel: only the last-bit rounding of each
             * product and of the host's cos/sin differ */
            check_rows(y, x, 10, r, 500.0, inter, pos, 1, 1e-13);
            tm_free(y);
            tm_free(x);
            tm_rope_free(rope);
        }
    }
}

TEST(rope_explicit_positions_1d_and_batched)
{
    tm_rope_config c = tm_rope_defaults(8);
    tm_rope *rope = tm_rope_new(&c);
    tm_tensor *x = leaf(2, (int64_t[]){2, 3, 4, 8}, 4, TM_F64);
    int64_t p1[4] = {5, 0, 300, 2};
    int64_t p2[8] = {0, 1, 2, 3, 40, 41, 999, 7};
    tm_tensor *t1 = tm_from_buffer(p1, (int64_t[]){4}, 1, TM_I64);
    tm_tensor *t2 = tm_from_buffer(p2, (int64_t[]){2, 4}, 2, TM_I64);
    REQUIRE(rope && x && t1 && t2);
    tm_tensor *y1 = tm_rope_apply(rope, x, 0, t1);
    tm_tensor *y2 = tm_rope_apply(rope, x, 0, t2);
    REQUIRE(y1 && y2);
    check_rows(y1, x, 8, 8, 10000.0, false, p1, 1, 1e-12);
    check_rows(y2, x, 8, 8, 10000.0, false, p2, 2, 1e-12);
    /* the offset is added to explicit positions */
    tm_tensor *y3 = tm_rope_apply(rope, x, 10, t1);
    int64_t p3[4] = {15, 10, 310, 12};
    REQUIRE(y3);
    check_rows(y3, x, 8, 8, 10000.0, false, p3, 1, 1e-12);
    tm_free(y1);
    tm_free(y2);
    tm_free(y3);
    tm_free(t1);
    tm_free(t2);
    tm_free(x);
    tm_rope_free(rope);
}

/* The F32 kernel against the F64 one, for head dims whose rows end in a
 * vector body and a scalar tail, both layouts, on enough rows to split
 * over threads.  F32 rounds cos, sin, x and each product once: a few ulp
 * of values of magnitude ~3, so 2e-6 absolute. */
TEST(rope_f32_kernel_matches_f64_vector_tail_and_threads)
{
    int64_t dims[3][2] = {{128, 128}, {80, 36}, {14, 14}};
    for (int k = 0; k < 3; k++) {
        for (int inter = 0; inter < 2; inter++) {
            tm_rope_config c = tm_rope_defaults(dims[k][0]);
            c.rotary_dim = dims[k][1];
            c.interleaved = inter;
            tm_rope *rope = tm_rope_new(&c);
            int64_t shape[4] = {2, 8, 300, dims[k][0]};
            tm_tensor *x64 = leaf(3 + (uint64_t)k, shape, 4, TM_F64);
            tm_tensor *x32 = x64 ? tm_to_dtype(x64, TM_F32) : NULL;
            REQUIRE(rope && x32);
            /* x32's values, exactly, as the F64 reference's input */
            tm_tensor *xr = tm_to_dtype(x32, TM_F64);
            tm_tensor *y32 = tm_rope_apply(rope, x32, 3, NULL);
            tm_tensor *y64 = xr ? tm_rope_apply(rope, xr, 3, NULL) : NULL;
            REQUIRE(y32 && y64);
            double *want = tt_values(y64);
            REQUIRE(want);
            CHECK_VALUES(y32, want, tm_numel(y64), 0, 2e-6);
            free(want);
            tm_free(y32);
            tm_free(y64);
            tm_free(xr);
            tm_free(x32);
            tm_free(x64);
            tm_rope_free(rope);
        }
    }
}

TEST(rope_non_contiguous_and_half_precision_inputs)
{
    tm_rope_config c = tm_rope_defaults(16);
    tm_rope *rope = tm_rope_new(&c);
    tm_tensor *base = leaf(5, (int64_t[]){3, 16, 6}, 3, TM_F64);
    REQUIRE(rope && base);
    tm_tensor *xt = tm_transpose(base, 1, 2); /* (3, 6, 16), strided */
    tm_tensor *xc = xt ? tm_contiguous(xt) : NULL;
    tm_tensor *yt = xt ? tm_rope_apply(rope, xt, 0, NULL) : NULL;
    tm_tensor *yc = xc ? tm_rope_apply(rope, xc, 0, NULL) : NULL;
    REQUIRE(yt && yc);
    double *want = tt_values(yc);
    REQUIRE(want);
    CHECK_VALUES(yt, want, tm_numel(yc), 0, 0);
    /* BF16 computes in F32 and rounds back: BF16's 2^-8 relative step */
    tm_tensor *xb = tm_to_dtype(xc, TM_BF16);
    tm_tensor *yb = xb ? tm_rope_apply(rope, xb, 0, NULL) : NULL;
    REQUIRE(yb);
    CHECK(tm_dtype_of(yb) == TM_BF16);
    CHECK_VALUES(yb, want, tm_numel(yc), 1.0 / 64, 1.0 / 64);
    free(want);
    tm_free(yb);
    tm_free(xb);
    tm_free(yt);
    tm_free(yc);
    tm_free(xc);
    tm_free(xt);
    tm_free(base);
    tm_rope_free(rope);
}

TEST(rope_tables_grow_and_match_a_fresh_rope)
{
    tm_rope_config c = tm_rope_defaults(12);
    c.rotary_dim = 8;
    tm_rope *a = tm_rope_new(&c), *b = tm_rope_new(&c);
    REQUIRE(a && b);
    tm_tensor *c1, *s1, *c2, *s2;
    /* a grows its table from 256 to past 1000; b makes it at once */
    REQUIRE(!tm_rope_tables(a, 0, NULL, 10, TM_F32, TM_CPU, &c1, &s1));
    CHECK_SHAPE(c1, 10, 4);
    tm_free(c1);
    tm_free(s1);
    REQUIRE(!tm_rope_tables(a, 990, NULL, 20, TM_F32, TM_CPU, &c1, &s1));
    REQUIRE(!tm_rope_tables(b, 990, NULL, 20, TM_F32, TM_CPU, &c2, &s2));
    double *w1 = tt_values(c2), *w2 = tt_values(s2);
    REQUIRE(w1 && w2);
    CHECK_VALUES(c1, w1, 80, 0, 0);
    CHECK_VALUES(s1, w2, 80, 0, 0);
    /* the entry of position 1000, pair 1, by the formula */
    double a1000 = 1000.0 * pow(10000.0, -2.0 / 8.0);
    CHECK_NEAR(w1[10 * 4 + 1], (float)cos(a1000), 0);
    CHECK_NEAR(w2[10 * 4 + 1], (float)sin(a1000), 0);
    free(w1);
    free(w2);
    tm_free(c1);
    tm_free(s1);
    tm_free(c2);
    tm_free(s2);
    tm_rope_free(a);
    tm_rope_free(b);
}

/* Element [row, 1] of the F64 cos table tm_rope_tables gives for `len`
 * positions from `offset` (NaN, with a failure, when it cannot). */
static double cos_at(tm_rope *r, int64_t offset, int64_t len, int64_t row)
{
    tm_tensor *cs = NULL, *sn = NULL;
    double x = NAN;
    if (tm_rope_tables(r, offset, NULL, len, TM_F64, TM_CPU, &cs, &sn)) {
        tt_fail(__FILE__, __LINE__, "tm_rope_tables(%lld, %lld) failed",
                (long long)offset, (long long)len);
        return x;
    }
    double *v = tt_values(cs);
    if (v) x = v[row * tm_shape(cs)[tm_ndim(cs) - 1] + 1];
    free(v);
    tm_free(cs);
    tm_free(sn);
    return x;
}

/* Hugging Face's dynamic update: frequencies for the longest length seen
 * beyond orig, back to orig's for a sequence shorter than orig. */
TEST(rope_dynamic_ntk_recomputes_with_the_length)
{
    tm_rope_config c = tm_rope_defaults(8);
    c.scaling = TM_ROPE_SCALING_DYNAMIC;
    c.factor = 2.0;
    c.original_max_positions = 16;
    tm_rope *r = tm_rope_new(&c);
    REQUIRE(r);
    double base40 = 10000.0 * pow(2.0 * 40 / 16 - 1, 8.0 / 6.0);
    double f1 = pow(10000.0, -0.25), f40 = pow(base40, -0.25);
    /* length 10 <= orig: the unscaled base (row 4 is position 9) */
    CHECK_NEAR(cos_at(r, 5, 5, 4), cos(9.0 * f1), 1e-15);
    /* length 40: the base for 40, for every position */
    CHECK_NEAR(cos_at(r, 0, 40, 9), cos(9.0 * f40), 1e-15);
    /* length 20, after 40: still 40's (it only grows above orig) */
    CHECK_NEAR(cos_at(r, 0, 20, 9), cos(9.0 * f40), 1e-15);
    /* length 10 < orig: reset to the original frequencies */
    CHECK_NEAR(cos_at(r, 0, 10, 9), cos(9.0 * f1), 1e-15);
    tm_rope_free(r);
}

typedef struct gc_ctx {
    tm_rope *rope;
    int64_t offset;
    tm_tensor *pos;
} gc_ctx;

static tm_tensor *gc_apply(tm_tensor *const *in, void *ctx)
{
    gc_ctx *g = ctx;
    return tm_rope_apply(g->rope, in[0], g->offset, g->pos);
}

/* Through a transposed view, so the recorded contiguous copy is on the
 * path of the gradient too. */
static tm_tensor *gc_apply_t(tm_tensor *const *in, void *ctx)
{
    gc_ctx *g = ctx;
    tm_tensor *xt = tm_transpose(in[0], 1, 2);
    tm_tensor *y = xt ? tm_rope_apply(g->rope, xt, g->offset, g->pos) : NULL;
    tm_free(xt);
    return y;
}

TEST(rope_gradcheck_f64_layouts_partial_positions)
{
    int64_t pv[6] = {4, 0, 9, 1, 1, 30};
    tm_tensor *pos = tm_from_buffer(pv, (int64_t[]){2, 3}, 2, TM_I64);
    REQUIRE(pos);
    for (int inter = 0; inter < 2; inter++) {
        tm_rope_config c = tm_rope_defaults(10);
        c.rotary_dim = 6;
        c.interleaved = inter;
        c.scaling = TM_ROPE_SCALING_YARN;
        c.factor = 4.0;
        c.original_max_positions = 64;
        tm_rope *rope = tm_rope_new(&c);
        REQUIRE(rope);
        gc_ctx g = {rope, 2, NULL};
        tm_tensor *x = TT_LEAF(7, 2, 2, 3, 10);
        REQUIRE(x);
        GRADCHECK("rope offset", gc_apply, &g, &x, 1, 1e-6);
        g.pos = pos;
        GRADCHECK("rope positions", gc_apply, &g, &x, 1, 1e-6);
        tm_tensor *xs = TT_LEAF(8, 2, 10, 3);
        REQUIRE(xs);
        g.pos = NULL; /* xs (2, 10, 3) is rotated as (2, 3, 10) */
        GRADCHECK("rope strided x", gc_apply_t, &g, &xs, 1, 1e-6);
        tm_free(xs);
        tm_free(x);
        tm_rope_free(rope);
    }
    tm_free(pos);
}

/* The backward is the inverse rotation: rotating g forward then taking
 * the gradient through the rotation gives g back. */
TEST(rope_backward_is_the_inverse_rotation)
{
    tm_rope_config c = tm_rope_defaults(8);
    c.interleaved = true;
    tm_rope *rope = tm_rope_new(&c);
    tm_tensor *x = TT_LEAF(9, 3, 5, 8);
    REQUIRE(rope && x);
    tm_tensor *y = tm_rope_apply(rope, x, 11, NULL);
    REQUIRE(y);
    tm_tensor *yd = tm_detach(y);
    tm_tensor *prod = yd ? tm_mul(y, yd) : NULL; /* g = y */
    tm_tensor *loss = prod ? tm_sum(prod, NULL, 0, false) : NULL;
    REQUIRE(loss && !tm_backward(loss));
    /* the gradient is R^T y = x, a rotation being orthogonal */
    double *xv = tt_values(x);
    REQUIRE(xv && tm_grad(x));
    CHECK_VALUES(tm_grad(x), xv, 120, 0, 1e-12);
    free(xv);
    tm_free(loss);
    tm_free(prod);
    tm_free(yd);
    tm_free(y);
    tm_free(x);
    tm_rope_free(rope);
}

TEST(rope_config_errors_name_the_field)
{
    tm_rope_config c = tm_rope_defaults(8);
    c.rotary_dim = 5;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "rotary_dim");
    c.rotary_dim = 10;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "rotary_dim");
    c = tm_rope_defaults(8);
    c.scaling = (tm_rope_scaling)9;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "unknown scaling");
    c = tm_rope_defaults(8);
    c.scaling = TM_ROPE_SCALING_LINEAR;
    c.factor = 0;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "factor");
    c.scaling = TM_ROPE_SCALING_YARN;
    c.factor = 2;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL,
                   "original_max_positions");
    c.original_max_positions = 100;
    c.beta_fast = -1;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "beta_fast");
    c = tm_rope_defaults(8);
    c.scaling = TM_ROPE_SCALING_LLAMA3;
    c.factor = 8;
    c.original_max_positions = 100;
    c.low_freq_factor = 4;
    c.high_freq_factor = 1;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "low_freq_factor");
    c = tm_rope_defaults(8);
    c.theta = -1;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "theta");
    c = tm_rope_defaults(8);
    c.attention_factor = NAN;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL,
                   "attention_factor");
    c = tm_rope_defaults(4);
    c.rotary_dim = 2;
    c.scaling = TM_ROPE_SCALING_DYNAMIC;
    c.original_max_positions = 10;
    CHECK_NULL_ERR((tm_tensor *)tm_rope_new(&c), TM_EINVAL, "rotary_dim > 2");
}

TEST(rope_apply_errors_name_the_values)
{
    tm_rope_config c = tm_rope_defaults(8);
    tm_rope *rope = tm_rope_new(&c);
    tm_tensor *x = TT_LEAF(10, 2, 4, 8);
    tm_tensor *x6 = TT_LEAF(11, 2, 4, 6);
    int64_t neg[4] = {0, 1, -3, 2}, ok[3] = {0, 1, 2};
    tm_tensor *pn = tm_from_buffer(neg, (int64_t[]){4}, 1, TM_I64);
    tm_tensor *p3 = tm_from_buffer(ok, (int64_t[]){3}, 1, TM_I64);
    tm_tensor *pf = tm_zeros((int64_t[]){4}, 1, TM_F32);
    tm_tensor *xi = tm_zeros((int64_t[]){2, 4, 8}, 3, TM_I64);
    REQUIRE(rope && x && x6 && pn && p3 && pf && xi);
    CHECK_NULL_ERR(tm_rope_apply(rope, x6, 0, NULL), TM_ESHAPE,
                   "head_dim 8");
    CHECK_NULL_ERR(tm_rope_apply(rope, xi, 0, NULL), TM_EDTYPE, "float");
    CHECK_NULL_ERR(tm_rope_apply(rope, x, -1, NULL), TM_EINVAL, "offset -1");
    CHECK_NULL_ERR(tm_rope_apply(rope, x, 0, pn), TM_EINVAL, "-3");
    CHECK_NULL_ERR(tm_rope_apply(rope, x, 0, p3), TM_ESHAPE, "positions [3]");
    CHECK_NULL_ERR(tm_rope_apply(rope, x, 0, pf), TM_EDTYPE, "integer");
    tm_tensor *cs = tm_zeros((int64_t[]){4, 5}, 2, TM_F32);
    REQUIRE(cs);
    CHECK_NULL_ERR(tm_rope_rotate(x, cs, cs, false), TM_ESHAPE,
                   "must broadcast");
    tm_free(cs);
    tm_free(xi);
    tm_free(pf);
    tm_free(p3);
    tm_free(pn);
    tm_free(x6);
    tm_free(x);
    tm_rope_free(rope);
}

static tm_status rope_sequence(void)
{
    tm_rope_config c = tm_rope_defaults(8);
    c.scaling = TM_ROPE_SCALING_LLAMA3;
    c.factor = 8;
    c.original_max_positions = 64;
    tm_rope *rope = tm_rope_new(&c);
    tm_tensor *x = rope ? tm_ones((int64_t[]){2, 3, 8}, 3, TM_F32) : NULL;
    tm_tensor *y = x ? tm_rope_apply(rope, x, 5, NULL) : NULL;
    tm_status st = y ? TM_OK : tm_last_status();
    tm_free(y);
    tm_free(x);
    tm_rope_free(rope);
    return st;
}

TEST(rope_survives_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(rope_sequence, 4);
}
