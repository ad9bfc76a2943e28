/* test_matmul.c — tm_matmul against numpy references, against a naive loop
 * past every block size, thread-count invariance, errors and allocation
 * failures. */
#include "ref_dispatch.h"

#include <stdlib.h>

TEST(matmul_matches_numpy_references)
{
    tt_run_ref_file("matmul.ref", tt_matmul_dispatch);
}

/* A [rows, cols] tensor of dtype dt from a fixed LCG: integers in
 * [-4, 4] times `scale` (scale 1: products and sums are exact in F64), or
 * with `frac`, values in [-1, 1) with 24 random bits. */
static tm_tensor *lcg_tensor(int64_t rows, int64_t cols, tm_dtype dt,
                             uint32_t seed, double scale, bool frac)
{
    int64_t n = rows * cols;
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = frac ? (double)(seed >> 8) / 8388608.0 - 1.0
                    : (double)((int)(seed >> 24) % 9 - 4) * scale;
    }
    tm_tensor *t = tt_tensor(v, (int64_t[]){rows, cols}, 2, dt);
    free(v);
    return t;
}

/* Sizes past the row (64), column (256) and depth (256) blocks, with a
 * transposed B: compared element by element with a naive triple loop over
 * the same values (exact: the values are small integers). */
TEST(matmul_crosses_every_block_exactly)
{
    const int64_t m = 130, k = 300, n = 270;
    tm_tensor *a = lcg_tensor(m, k, TM_F64, 1, 1, false);
    tm_tensor *bt = lcg_tensor(n, k, TM_F64, 2, 1, false);
    tm_tensor *b = bt ? tm_transpose(bt, 0, 1) : NULL;
    REQUIRE(a && b);
    tm_tensor *c = tm_matmul(a, b);
    REQUIRE(c);
    CHECK_SHAPE(c, m, n);
    const double *pa = tm_data(a), *pb = tm_data(bt), *pc = tm_data(c);
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t kk = 0; kk < k; kk++) s += pa[i * k + kk] * pb[j * k + kk];
            if (s != pc[i * n + j] && bad++ < 3)
                tt_fail(__FILE__, __LINE__, "c[%lld,%lld] = %.17g, want %.17g",
                        (long long)i, (long long)j, pc[i * n + j], s);
        }
    tm_free(c);
    tm_free(b);
    tm_free(bt);
    tm_free(a);
}

/* I32 past every block, with values large enough to wrap: the reference
 * sums in uint64 and keeps the low 32 bits. */
TEST(matmul_i32_wraps_like_twos_complement)
{
    const int64_t m = 70, k = 260, n = 300;
    tm_tensor *a = lcg_tensor(m, k, TM_I32, 3, 40000000.0, false);
    tm_tensor *b = lcg_tensor(k, n, TM_I32, 4, 1, false);
    REQUIRE(a && b);
    tm_tensor *c = tm_matmul(a, b);
    REQUIRE(c && tm_dtype_of(c) == TM_I32);
    const int32_t *pa = tm_data(a), *pb = tm_data(b), *pc = tm_data(c);
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint64_t s = 0;
            for (int64_t kk = 0; kk < k; kk++)
                s += (uint64_t)(int64_t)pa[i * k + kk] *
                     (uint64_t)(int64_t)pb[kk * n + j];
            if ((uint32_t)s != (uint32_t)pc[i * n + j] && bad++ < 3)
                tt_fail(__FILE__, __LINE__, "c[%lld,%lld] wrong",
                        (long long)i, (long long)j);
        }
    tm_free(c);
    tm_free(a);
    tm_free(b);
}

/* Each output element is summed in the same order whatever the split. */
TEST(matmul_is_bitwise_identical_for_any_thread_count)
{
    tm_tensor *a2 = lcg_tensor(300, 300, TM_F32, 5, 1, true);
    tm_tensor *b = lcg_tensor(300, 270, TM_F32, 6, 1, true);
    tm_tensor *a = a2 ? tm_view(a2, (int64_t[]){2, 150, 300}, 3) : NULL;
    REQUIRE(a && b);
    tm_set_num_threads(1);
    tm_tensor *c1 = tm_matmul(a, b);
    tm_set_num_threads(3);
    tm_tensor *c3 = tm_matmul(a, b);
    tm_set_num_threads(0);
    REQUIRE(c1 && c3);
    CHECK(memcmp(tm_data(c1), tm_data(c3), tm_nbytes(c1)) == 0);
    tm_free(c1);
    tm_free(c3);
    tm_free(a);
    tm_free(a2);
    tm_free(b);
}

TEST(matmul_f16_rounds_once_from_f32)
{
    /* 2050 ones: a sum kept in f16 would stick at 2048 (2048 + 1 rounds
     * back to even 2048); summed in F32 it is 2050, which f16 holds. */
    tm_tensor *a = tm_ones((int64_t[]){1, 2050}, 2, TM_F16);
    tm_tensor *b = tm_ones((int64_t[]){2050, 1}, 2, TM_F16);
    REQUIRE(a && b);
    tm_tensor *c = tm_matmul(a, b);
    REQUIRE(c && tm_dtype_of(c) == TM_F16);
    double want[] = {2050};
    CHECK_VALUES(c, want, 1, 0, 0);
    tm_free(c);
    tm_free(a);
    tm_free(b);
}

TEST(matmul_errors_name_the_problem)
{
    tm_tensor *a = tm_zeros((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *b = tm_zeros((int64_t[]){5, 6}, 2, TM_F32);
    tm_tensor *v = tm_zeros((int64_t[]){3}, 1, TM_F32);
    tm_tensor *s = tm_scalar(1, TM_F32);
    tm_tensor *ba = tm_zeros((int64_t[]){2, 3, 4}, 3, TM_F32);
    tm_tensor *bb = tm_zeros((int64_t[]){3, 4, 5}, 3, TM_F32);
    tm_tensor *q = tm_zeros((int64_t[]){2, 2}, 2, TM_BOOL);
    tm_tensor *one = tm_zeros((int64_t[]){1, 1}, 2, TM_F32);
    tm_tensor *tall = one ? tm_expand(one, (int64_t[]){1LL << 40, 1}, 2)
                          : NULL;
    tm_tensor *wide = one ? tm_expand(one, (int64_t[]){1, 1LL << 40}, 2)
                          : NULL;
    REQUIRE(a && b && v && s && ba && bb && q && tall && wide);
    CHECK_NULL_ERR(tm_matmul(a, b), TM_ESHAPE,
                   "tm_matmul: shapes [3,4] and [5,6] do not match: 4 != 5");
    CHECK_NULL_ERR(tm_matmul(v, b), TM_ESHAPE,
                   "shapes [3] and [5,6] do not match: 3 != 5");
    CHECK_NULL_ERR(tm_matmul(a, v), TM_ESHAPE,
                   "shapes [3,4] and [3] do not match: 4 != 3");
    CHECK_NULL_ERR(tm_matmul(ba, bb), TM_ESHAPE,
                   "tm_matmul: batch dims [2] and [3] of shapes [2,3,4] and "
                   "[3,4,5] do not broadcast");
    CHECK_NULL_ERR(tm_matmul(s, v), TM_EINVAL,
                   "tm_matmul: both operands need at least 1 dim, got "
                   "shapes [] and [3]");
    CHECK_NULL_ERR(tm_matmul(v, s), TM_EINVAL, "at least 1 dim");
    CHECK_NULL_ERR(tm_matmul(NULL, a), TM_EINVAL, "tm_matmul: a is NULL");
    CHECK_NULL_ERR(tm_matmul(a, NULL), TM_EINVAL, "tm_matmul: b is NULL");
    CHECK_NULL_ERR(tm_matmul(q, q), TM_EDTYPE,
                   "tm_matmul: bool x bool is not supported");
    CHECK_NULL_ERR(tm_matmul(tall, wide), TM_EOVERFLOW,
                   "element count overflows");
    tm_free(a);
    tm_free(b);
    tm_free(v);
    tm_free(s);
    tm_free(ba);
    tm_free(bb);
    tm_free(q);
    tm_free(one);
    tm_free(tall);
    tm_free(wide);
}

/* Every allocation of a matmul that converts dtypes fails in turn: each
 * failure is reported, nothing leaks (the runner checks the byte count). */
TEST(matmul_survives_every_allocation_failure)
{
    tm_tensor *a = tm_ones((int64_t[]){2, 3, 4}, 3, TM_F16);
    tm_tensor *b = tm_ones((int64_t[]){4, 5}, 2, TM_F32);
    REQUIRE(a && b);
    int failures = 0;
    for (int64_t n = 1; n < 100; n++) {
        tm_clear_error();
        tm_alloc_fail_after(n);
        tm_tensor *c = tm_matmul(a, b);
        tm_alloc_fail_after(0);
        if (c) {
            double want[30];
            for (int i = 0; i < 30; i++) want[i] = 4;
            CHECK_VALUES(c, want, 30, 0, 0);
            tm_free(c);
            break;
        }
        failures++;
        CHECK_INT(tm_last_status(), TM_ENOMEM);
    }
    CHECK(failures >= 3); /* result, converted operand, kernel scratch */
    tm_free(a);
    tm_free(b);
}
