/* test_unary.c — unary elementwise ops: numpy reference cases (every op x
 * dtype, special values, views, 0-d, 0-size, in place), error messages,
 * integer wrapping, stability limits, thread-count independence and
 * allocation failure. */
#include "ref_dispatch.h"

/* White-box: the storage version counter that in-place ops must bump. */
#include "../../tensor/core/tensor_impl.h"

#include <stdint.h>

TEST(unary_reference_cases)
{
    tt_run_ref_file("unary.ref", tt_unary_dispatch);
}

TEST(unary_errors_name_the_function_and_values)
{
    double v[] = {1, 0, 1};
    tm_tensor *f = tt_tensor(v, (int64_t[]){3}, 1, TM_F32);
    tm_tensor *d = tt_tensor(v, (int64_t[]){3}, 1, TM_F64);
    tm_tensor *i = tt_tensor(v, (int64_t[]){3}, 1, TM_I32);
    tm_tensor *b = tt_tensor(v, (int64_t[]){3}, 1, TM_BOOL);
    REQUIRE(f && d && i && b);
    CHECK_NULL_ERR(tm_exp(NULL), TM_EINVAL, "tm_exp: tensor is NULL");
    CHECK_NULL_ERR(tm_softplus(NULL, 1, 20), TM_EINVAL,
                   "tm_softplus: tensor is NULL");
    CHECK_NULL_ERR(tm_clamp(NULL, 0, 1), TM_EINVAL,
                   "tm_clamp: tensor is NULL");
    CHECK_STATUS(tm_unary_(TM_OP_EXP, NULL), TM_EINVAL,
                 "tm_unary_: tensor is NULL");
    CHECK_NULL_ERR(tm_unary((tm_unary_op)99, f), TM_EINVAL,
                   "tm_unary: unknown unary op 99");
    CHECK_NULL_ERR(tm_unary((tm_unary_op)-1, f), TM_EINVAL,
                   "tm_unary: unknown unary op -1");
    CHECK_NULL_ERR(tm_unary(TM_UNARY_OP_COUNT, f), TM_EINVAL,
                   "unknown unary op");
    CHECK_STATUS(tm_unary_((tm_unary_op)99, f), TM_EINVAL,
                 "tm_unary_: unknown unary op 99");
    CHECK_NULL_ERR(tm_neg(b), TM_EDTYPE,
                   "tm_neg: negation of a bool tensor is not supported");
    CHECK_NULL_ERR(tm_unary(TM_OP_NEG, b), TM_EDTYPE, "tm_unary: negation");
    CHECK_STATUS(tm_unary_(TM_OP_NEG, b), TM_EDTYPE, "tm_unary_: negation");
    CHECK_STATUS(tm_unary_(TM_OP_SQRT, i), TM_EDTYPE,
                 "tm_unary_: sqrt of a i32 tensor gives f32, which cannot be "
                 "written back into i32");
    CHECK_STATUS(tm_unary_(TM_OP_ISFINITE, d), TM_EDTYPE,
                 "isfinite of a f64 tensor gives bool");
    CHECK_STATUS(tm_unary_(TM_OP_LOGICAL_NOT, i), TM_EDTYPE,
                 "logical_not of a i32 tensor gives bool");
    CHECK_STATUS(tm_unary_(TM_OP_SQUARE, b), TM_EDTYPE,
                 "square of a bool tensor gives i64");
    CHECK_STATUS(tm_clamp_(i, 0.5, NAN), TM_EDTYPE,
                 "tm_clamp_: clamp of a i32 tensor gives f32");
    /* a failed in-place op leaves the tensor as it was */
    CHECK_VALUES(i, v, 3, 0, 0);
    tm_free(f);
    tm_free(d);
    tm_free(i);
    tm_free(b);
}

TEST(unary_inplace_rejects_broadcast_views)
{
    tm_tensor *row = tm_ones((int64_t[]){1, 3}, 2, TM_F32);
    tm_tensor *e = tm_expand(row, (int64_t[]){4, 3}, 2);
    REQUIRE(row && e);
    CHECK_STATUS(tm_unary_(TM_OP_EXP, e), TM_EINVAL,
                 "tm_unary_: cannot write in place into an expanded tensor");
    CHECK_STATUS(tm_clamp_(e, 0, 0.5), TM_EINVAL,
                 "tm_clamp_: cannot write in place into an expanded tensor: "
                 "dim 0 of size 4 has stride 0");
    double ones[] = {1, 1, 1};
    CHECK_VALUES(row, ones, 3, 0, 0);
    /* out of place is fine on a broadcast view */
    tm_tensor *n = tm_neg(e);
    REQUIRE(n);
    CHECK_SHAPE(n, 4, 3);
    CHECK(tm_is_contiguous(n));
    tm_free(n);
    tm_free(e);
    tm_free(row);
}

TEST(unary_inplace_bumps_version_only_on_success)
{
    double v[] = {-1, 0.5, 2, -3};
    tm_tensor *t = tt_tensor(v, (int64_t[]){2, 2}, 2, TM_F32);
    tm_tensor *i = tt_tensor(v, (int64_t[]){4}, 1, TM_I32);
    REQUIRE(t && i);
    uint_fast64_t v0 = atomic_load(&t->storage->version);
    CHECK(tm_unary_(TM_OP_RELU, t) == TM_OK);
    CHECK(atomic_load(&t->storage->version) == v0 + 1);
    CHECK(tm_clamp_(t, NAN, 1.0) == TM_OK);
    CHECK(atomic_load(&t->storage->version) == v0 + 2);
    double want[] = {0, 0.5, 1, 0};
    CHECK_VALUES(t, want, 4, 0, 0);
    uint_fast64_t w0 = atomic_load(&i->storage->version);
    CHECK(tm_unary_(TM_OP_EXP, i) == TM_EDTYPE);
    CHECK(atomic_load(&i->storage->version) == w0);
    /* a zero-size tensor is fine in place too */
    tm_tensor *z = tm_empty((int64_t[]){0, 3}, 2, TM_F16);
    REQUIRE(z);
    CHECK(tm_unary_(TM_OP_TANH, z) == TM_OK);
    tm_free(z);
    tm_free(i);
    tm_free(t);
}

/* int64 elements of t (any integer dtype), exactly. */
static void tt_i64s(const tm_tensor *t, int64_t *out, size_t n)
{
    CHECK(tm_copy_to_buffer(t, out, n * sizeof(int64_t), TM_I64) == TM_OK);
}

TEST(unary_integer_ops_wrap_without_overflow)
{
    int64_t v[] = {INT64_MIN, INT64_MAX, -1, (int64_t)1 << 32, -7};
    tm_tensor *t = tm_from_buffer(v, (int64_t[]){5}, 1, TM_I64);
    REQUIRE(t);
    tm_tensor *n = tm_neg(t), *a = tm_abs(t), *s = tm_square(t),
              *g = tm_sign(t);
    REQUIRE(n && a && s && g);
    CHECK(tm_dtype_of(n) == TM_I64 && tm_dtype_of(s) == TM_I64);
    int64_t got[5];
    tt_i64s(n, got, 5);
    CHECK(got[0] == INT64_MIN && got[1] == -INT64_MAX && got[2] == 1 &&
          got[3] == -((int64_t)1 << 32) && got[4] == 7);
    tt_i64s(a, got, 5);
    CHECK(got[0] == INT64_MIN && got[1] == INT64_MAX && got[2] == 1 &&
          got[4] == 7);
    tt_i64s(s, got, 5);
    CHECK(got[0] == 0 && got[1] == 1 && got[2] == 1 && got[3] == 0 &&
          got[4] == 49);
    tt_i64s(g, got, 5);
    CHECK(got[0] == -1 && got[1] == 1 && got[2] == -1 && got[3] == 1);
    /* clamp bounds beyond int64 saturate */
    tm_tensor *c = tm_clamp(t, -1e300, 1e300);
    REQUIRE(c);
    tt_i64s(c, got, 5);
    CHECK(got[0] == INT64_MIN && got[1] == INT64_MAX);
    tm_free(c);
    tm_free(n);
    tm_free(a);
    tm_free(s);
    tm_free(g);
    tm_free(t);
}

TEST(unary_stable_ops_reach_exact_limits)
{
    double v[] = {-1000, -100, 100, 1000};
    for (int k = 0; k < 2; k++) {
        tm_dtype dt = k ? TM_F64 : TM_F32;
        tm_tensor *t = tt_tensor(v, (int64_t[]){4}, 1, dt);
        REQUIRE(t);
        tm_tensor *sg = tm_sigmoid(t), *th = tm_tanh(t),
                  *sp = tm_softplus(t, 1, INFINITY), *si = tm_silu(t);
        REQUIRE(sg && th && sp && si);
        double got[4];
        CHECK(tm_copy_to_buffer(sg, got, sizeof got, TM_F64) == TM_OK);
        CHECK(got[0] == 0 && got[1] > 0 && got[1] < 1e-43 && got[2] == 1 &&
              got[3] == 1);
        CHECK(tm_copy_to_buffer(th, got, sizeof got, TM_F64) == TM_OK);
        CHECK(got[0] == -1 && got[1] == -1 && got[2] == 1 && got[3] == 1);
        /* no threshold: log1p(exp(1000)) must not overflow to inf */
        CHECK(tm_copy_to_buffer(sp, got, sizeof got, TM_F64) == TM_OK);
        CHECK(got[0] == 0 && got[1] > 0 && got[2] == 100 && got[3] == 1000);
        CHECK(tm_copy_to_buffer(si, got, sizeof got, TM_F64) == TM_OK);
        CHECK(got[0] == 0 && got[2] == 100 && got[3] == 1000);
        tm_free(sg);
        tm_free(th);
        tm_free(sp);
        tm_free(si);
        tm_free(t);
    }
}

TEST(unary_results_do_not_depend_on_thread_count)
{
    /* [700, 600] transposed: 420k elements, non-contiguous, so the engine
     * converts through its buffers and splits over the pool */
    tm_manual_seed(11);
    tm_tensor *x = tm_randn((int64_t[]){700, 600}, 2, TM_F32);
    REQUIRE(x);
    tm_tensor *xt = tm_transpose(x, 0, 1);
    REQUIRE(xt);
    tm_unary_op ops[] = {TM_OP_EXP, TM_OP_GELU};
    for (int k = 0; k < 2; k++) {
        tm_set_num_threads(1);
        tm_tensor *a = tm_unary(ops[k], xt);
        tm_set_num_threads(3);
        tm_tensor *b = tm_unary(ops[k], xt);
        tm_tensor *c = tm_clone(xt); /* in place, 3 threads */
        REQUIRE(a && b && c);
        CHECK(tm_unary_(ops[k], c) == TM_OK);
        tm_tensor *cc = tm_contiguous(c);
        REQUIRE(cc);
        CHECK_SHAPE(a, 600, 700);
        CHECK(!memcmp(tm_data(a), tm_data(b), tm_nbytes(a)));
        CHECK(!memcmp(tm_data(a), tm_data(cc), tm_nbytes(a)));
        /* spot checks against the C library (independent of Foundry):
         * exp in float is within 1-2 ulps of expf */
        const float *xs = tm_data(x), *as = tm_data(a);
        for (int64_t i = 0; i < 600 * 700; i += 9973) {
            int64_t r = i / 700, col = i % 700; /* a[r][col] = x[col][r] */
            double xv = xs[col * 600 + r];
            double want = k == 0 ? exp(xv)
                                 : 0.5 * xv * erfc(-xv / sqrt(2.0));
            CHECK(tt_near(as[i], want, 2e-6, 1e-30));
        }
        tm_free(cc);
        tm_free(c);
        tm_free(a);
        tm_free(b);
    }
    tm_set_num_threads(0);
    tm_free(xt);
    tm_free(x);
}

TEST(unary_allocation_failure_is_clean)
{
    double v[] = {0.5, -2, 3};
    tm_tensor *t = tt_tensor(v, (int64_t[]){3}, 1, TM_F16);
    REQUIRE(t);
    bool done = false;
    for (int n = 1; n < 20 && !done; n++) {
        tm_clear_error();
        tm_alloc_fail_after(n);
        tm_tensor *r = tm_gelu(t);
        tm_alloc_fail_after(0);
        if (r) {
            done = true;
            tm_free(r);
        } else {
            CHECK(tm_last_status() == TM_ENOMEM);
            CHECK(strstr(tm_last_error(), "tm_gelu") != NULL);
        }
    }
    CHECK(done);
    tm_free(t);
}
