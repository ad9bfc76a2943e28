/* test_reduce.c — reductions, arg reductions and cumsum: numpy references
 * (tests/data/reduce.ref from tests/gen/gen_reduce.py), error messages,
 * determinism across runs and thread counts, and a long F32 sum against a
 * compensated double reference. */
#include "ref_dispatch.h"

#include <stdlib.h>

TEST(reduce_matches_numpy_references)
{
    tt_run_ref_file("reduce.ref", tt_reduce_dispatch);
}

/* The same cases on 3 threads (every case is small, so this mostly checks
 * that the split decisions do not change small results). */
TEST(reduce_references_hold_on_three_threads)
{
    tm_set_num_threads(3);
    tt_run_ref_file("reduce.ref", tt_reduce_dispatch);
    tm_set_num_threads(0);
}

TEST(reduce_errors_name_the_problem)
{
    tm_tensor *a = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *e = tm_zeros((int64_t[]){0, 3}, 2, TM_F32);
    REQUIRE(a && e);
    CHECK_NULL_ERR(tm_sum(NULL, NULL, 0, false), TM_EINVAL,
                   "tm_sum: tensor is NULL");
    CHECK_NULL_ERR(tm_sum(a, (int[]){2}, 1, false), TM_ERANGE,
                   "tm_sum: dim 2 is out of range for a 2-d tensor");
    CHECK_NULL_ERR(tm_mean(a, (int[]){1, -1}, 2, false), TM_EINVAL,
                   "tm_mean: dim 1 appears twice");
    CHECK_NULL_ERR(tm_var(a, (int[]){0}, -1, 1, false), TM_EINVAL,
                   "tm_var: ndims -1 is negative");
    CHECK_NULL_ERR(tm_reduce(TM_REDUCE_OP_COUNT, a, NULL, 0, 0, false),
                   TM_EINVAL, "tm_reduce: unknown reduce op");
    CHECK_NULL_ERR(tm_norm(a, NULL, 0, NAN, false), TM_EINVAL,
                   "tm_norm: order p is NaN");
    CHECK_NULL_ERR(tm_max(e, NULL, 0, false), TM_EINVAL,
                   "tm_max: cannot reduce 0 elements: dim 0 of shape [0,3] "
                   "is empty");
    CHECK_NULL_ERR(tm_min(e, (int[]){0}, 1, true), TM_EINVAL,
                   "tm_min: cannot reduce 0 elements");
    CHECK_NULL_ERR(tm_argmax(e, 0, false), TM_EINVAL,
                   "tm_argmax: cannot reduce 0 elements");
    CHECK_NULL_ERR(tm_argmin_all(e), TM_EINVAL,
                   "tm_argmin_all: cannot reduce 0 elements");
    CHECK_NULL_ERR(tm_argmax(NULL, 0, false), TM_EINVAL, "tensor is NULL");
    CHECK_NULL_ERR(tm_cumsum(a, -3), TM_ERANGE,
                   "tm_cumsum: dim -3 is out of range");
    tm_tensor *v = a, *i = a;
    CHECK_STATUS(tm_max_dim(e, 0, false, &v, &i), TM_EINVAL,
                 "tm_max_dim: cannot reduce 0 elements");
    CHECK(v == NULL && i == NULL); /* both NULL on failure */
    CHECK_STATUS(tm_min_dim(a, 0, false, &v, NULL), TM_EINVAL,
                 "tm_min_dim: indices is NULL");
    tm_free(a);
    tm_free(e);
}

/* n pseudo-random F32 values in [-1, 1) plus an offset, from an LCG. */
static tm_tensor *lcg_f32(int64_t n, double offset, uint32_t seed)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((double)(seed >> 8) / (1 << 23) - 1.0 + offset);
    }
    tm_tensor *t = tm_from_buffer(v, &n, 1, TM_F32);
    free(v);
    return t;
}

static bool same_bits(const tm_tensor *a, const tm_tensor *b)
{
    return a && b && tm_nbytes(a) == tm_nbytes(b) &&
           !memcmp(tm_data(a), tm_data(b), tm_nbytes(a));
}

/* 2M elements: F32 sum (accumulated in double, rounded once) against a
 * Kahan-summed double reference: one f32 rounding apart at most. */
TEST(reduce_long_f32_sum_matches_kahan_reference)
{
    const int64_t n = 2000003;
    tm_tensor *x = lcg_f32(n, 0.25, 7);
    REQUIRE(x);
    const float *v = tm_data(x);
    double s = 0, c = 0;
    for (int64_t i = 0; i < n; i++) {
        double y = (double)v[i] - c, t = s + y;
        c = (t - s) - y;
        s = t;
    }
    for (int nt = 1; nt <= 4; nt += 3) {
        tm_set_num_threads(nt);
        tm_tensor *r = tm_sum(x, NULL, 0, false);
        tm_tensor *m = tm_mean(x, NULL, 0, false);
        REQUIRE(r && m);
        double got = 0, mean = 0;
        CHECK(tm_item(r, &got) == TM_OK && tm_item(m, &mean) == TM_OK);
        CHECK_NEAR(got, (float)s, fabs(s) * 1.2e-7);
        CHECK_NEAR(mean, (float)(s / (double)n), fabs(s / n) * 1.2e-7);
        tm_free(r);
        tm_free(m);
    }
    tm_set_num_threads(0);
    tm_free(x);
}

/* Same input, same thread count: the same bits, run after run; 1 vs 3
 * threads: floats agree closely (the split order differs), integers and
 * argmax exactly. */
TEST(reduce_is_deterministic_per_thread_count)
{
    const int64_t n = 600011;
    tm_tensor *x = lcg_f32(n, 0.0, 11);
    tm_tensor *x2 = x ? tm_view(x, (int64_t[]){1, n}, 2) : NULL;
    int32_t *iv = malloc(sizeof(int32_t) * (size_t)n);
    REQUIRE(iv);
    for (int64_t i = 0; i < n; i++) iv[i] = (int32_t)(i * 2654435761u);
    tm_tensor *ii = tm_from_buffer(iv, &n, 1, TM_I32);
    free(iv);
    REQUIRE(x2 && ii);
    tm_tensor *r[2][6] = {{NULL}};
    for (int k = 0; k < 2; k++) {
        tm_set_num_threads(k == 0 ? 1 : 3);
        tm_tensor *once = tm_sum(x2, (int[]){1}, 1, false);
        r[k][0] = tm_sum(x2, (int[]){1}, 1, false);
        r[k][1] = tm_var(x, NULL, 0, 1, false);
        r[k][2] = tm_norm(x, NULL, 0, 2, false);
        r[k][3] = tm_logsumexp(x, NULL, 0, false);
        r[k][4] = tm_sum(ii, NULL, 0, false);
        r[k][5] = tm_argmax_all(x);
        CHECK(same_bits(once, r[k][0]));
        tm_free(once);
    }
    tm_set_num_threads(0);
    for (int j = 0; j < 6; j++) {
        REQUIRE(r[0][j] && r[1][j]);
        double a = 0, b = 0;
        CHECK(tm_item(r[0][j], &a) == TM_OK && tm_item(r[1][j], &b) == TM_OK);
        if (j >= 4) CHECK(a == b);
        else CHECK_NEAR(a, b, fabs(a) * 2.4e-7);
    }
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 6; j++) tm_free(r[k][j]);
    tm_free(ii);
    tm_free(x2);
    tm_free(x);
}

/* Reducing the leading dim of a tall tensor (strided reads) and many rows
 * at once (outputs split over threads) agree with a per-row reference. */
TEST(reduce_many_outputs_over_threads)
{
    const int64_t rows = 4000, cols = 300;
    tm_tensor *x = lcg_f32(rows * cols, 0.0, 3);
    tm_tensor *m = x ? tm_view(x, (int64_t[]){rows, cols}, 2) : NULL;
    REQUIRE(m);
    const float *v = tm_data(m);
    double *want_r = malloc(sizeof(double) * rows);
    double *want_c = calloc((size_t)cols, sizeof(double));
    REQUIRE(want_r && want_c);
    for (int64_t i = 0; i < rows; i++) {
        double s = 0;
        for (int64_t j = 0; j < cols; j++) {
            s += v[i * cols + j];
            want_c[j] += v[i * cols + j];
        }
        want_r[i] = (float)s;
    }
    for (int64_t j = 0; j < cols; j++) want_c[j] = (float)want_c[j];
    tm_set_num_threads(3);
    tm_tensor *sr = tm_sum(m, (int[]){1}, 1, false);
    tm_tensor *sc = tm_sum(m, (int[]){0}, 1, true);
    tm_set_num_threads(0);
    CHECK_SHAPE(sr, rows);
    CHECK_SHAPE(sc, 1, cols);
    CHECK_VALUES(sr, want_r, rows, 2.4e-7, 1e-9);
    CHECK_VALUES(sc, want_c, cols, 2.4e-7, 1e-9);
    tm_free(sr);
    tm_free(sc);
    free(want_r);
    free(want_c);
    tm_free(m);
    tm_free(x);
}

TEST(reduce_keepdim_result_is_contiguous_with_size_one_dims)
{
    tm_tensor *a = tm_ones((int64_t[]){2, 3, 4}, 3, TM_F16);
    tm_tensor *s = tm_sum(a, (int[]){0, 2}, 2, true);
    REQUIRE(s);
    CHECK_SHAPE(s, 1, 3, 1);
    CHECK(tm_dtype_of(s) == TM_F16 && tm_is_contiguous(s));
    double want[] = {8, 8, 8};
    CHECK_VALUES(s, want, 3, 0, 0);
    tm_tensor *b = tm_ones((int64_t[]){3}, 1, TM_BOOL);
    tm_tensor *c = tm_cumsum(b, 0);
    REQUIRE(c);
    CHECK(tm_dtype_of(c) == TM_I64);
    double wc[] = {1, 2, 3};
    CHECK_VALUES(c, wc, 3, 0, 0);
    tm_free(c);
    tm_free(b);
    tm_free(s);
    tm_free(a);
}

/* Runs the reductions that allocate (results, a flattening copy, the
 * per-part partials of a split reduction); returns the first failure. */
static tm_status alloc_sequence(const tm_tensor *x, const tm_tensor *big)
{
    tm_tensor *r[6] = {NULL}, *v = NULL, *i = NULL;
    tm_tensor *t = tm_transpose(x, 0, 1);
    tm_status st = TM_OK;
    if (!t) return tm_last_status();
    r[0] = tm_sum(x, (int[]){0}, 1, true);
    r[1] = r[0] ? tm_argmax_all(t) : NULL; /* copies to flatten */
    r[2] = r[1] ? tm_cumsum(t, 1) : NULL;
    r[3] = r[2] ? tm_var(big, (int[]){1}, 1, 1, false) : NULL;
    r[4] = r[3] ? tm_logsumexp(big, NULL, 0, false) : NULL;
    if (!r[4] || tm_max_dim(x, 1, false, &v, &i)) st = tm_last_status();
    for (int k = 0; k < 6; k++) tm_free(r[k]);
    tm_free(v);
    tm_free(i);
    tm_free(t);
    return st;
}

TEST(reduce_fails_cleanly_at_every_allocation)
{
    tm_tensor *x = tm_ones((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *flat = lcg_f32(100 * 70000, 0, 5);
    tm_tensor *big = flat ? tm_view(flat, (int64_t[]){100, 70000}, 2) : NULL;
    REQUIRE(x && big);
    /* 2 threads and 100 outputs of 70000: not split; 64+ partials need
     * the heap only when split, so also run a split case below */
    tm_set_num_threads(2);
    bool done = false;
    for (int64_t n = 1; n < 64 && !done; n++) {
        tm_alloc_fail_after(n);
        tm_status st = alloc_sequence(x, big);
        tm_alloc_fail_after(0);
        done = st == TM_OK;
        CHECK(done || st == TM_ENOMEM);
    }
    CHECK(done);
    tm_tensor *rows = tm_view(flat, (int64_t[]){70, 100000}, 2);
    REQUIRE(rows);
    tm_set_num_threads(128); /* 70 outputs x 3 parts > 64 partials: heap */
    char last[256] = "";
    for (int64_t n = 1; n < 8; n++) {
        tm_alloc_fail_after(n);
        tm_tensor *s = tm_sum(rows, (int[]){1}, 1, false);
        tm_alloc_fail_after(0);
        if (s) {
            tm_free(s);
            break;
        }
        snprintf(last, sizeof last, "%s", tm_last_error());
        CHECK(tm_last_status() == TM_ENOMEM);
    }
    CHECK(strstr(last, "cpu reduce") != NULL); /* the partials failed last */
    tm_set_num_threads(0);
    tm_free(rows);
    tm_free(big);
    tm_free(flat);
    tm_free(x);
}
