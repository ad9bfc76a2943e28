/* test_bitwise.c — bitwise ops and shifts, C's fmod, scalar kinds in type
 * promotion, and the composed ops lerp, isclose and nan_to_num (values,
 * dtypes, errors and gradients).  Expected values are PyTorch 2.13's. */
#include "gradcheck.h"

#include <math.h>

/* Checks r's dtype and values (exact: integer results), then frees r. */
static void tt_expect(const char *file, int line, tm_tensor *r, tm_dtype dt,
                      const double *want, int64_t n)
{
    if (!r) {
        tt_fail(file, line, "failed: %s", tm_last_error());
        return;
    }
    if (tm_dtype_of(r) != dt)
        tt_fail(file, line, "dtype %s, expected %s",
                tm_dtype_name(tm_dtype_of(r)), tm_dtype_name(dt));
    tt_check_values(file, line, r, want, n, 0, 0);
    tm_free(r);
}
#define EXPECT(r, dt, ...)                                                    \
    tt_expect(__FILE__, __LINE__, (r), (dt), (double[]){__VA_ARGS__},         \
              (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))

static tm_tensor *vec(tm_dtype dt, const double *v, int64_t n)
{
    return tt_tensor(v, &n, 1, dt);
}
#define VEC(dt, ...)                                                          \
    vec((dt), (double[]){__VA_ARGS__},                                        \
        (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))

TEST(bitwise_ops_are_bitwise_on_integers_and_logical_on_bool)
{
    tm_tensor *a = VEC(TM_I32, 12, -7, 5, 0), *b = VEC(TM_I32, 10, 3, -1, 9);
    tm_tensor *p = VEC(TM_BOOL, 1, 1, 0, 0), *q = VEC(TM_BOOL, 1, 0, 1, 0);
    REQUIRE(a && b && p && q);
    EXPECT(tm_bitwise_and(a, b), TM_I32, 8, 1, 5, 0);
    EXPECT(tm_bitwise_or(a, b), TM_I32, 14, -5, -1, 9);
    EXPECT(tm_bitwise_xor(a, b), TM_I32, 6, -6, -6, 9);
    EXPECT(tm_bitwise_not(a), TM_I32, -13, 6, -6, -1);
    EXPECT(tm_bitwise_and(p, q), TM_BOOL, 1, 0, 0, 0);
    EXPECT(tm_bitwise_or(p, q), TM_BOOL, 1, 1, 1, 0);
    EXPECT(tm_bitwise_xor(p, q), TM_BOOL, 0, 1, 1, 0);
    EXPECT(tm_bitwise_not(p), TM_BOOL, 0, 0, 1, 1);
    /* bool with an integer promotes to it */
    EXPECT(tm_bitwise_or(p, a), TM_I32, 13, -7, 5, 0);
    tm_free(a);
    tm_free(b);
    tm_free(p);
    tm_free(q);
}

TEST(bitwise_not_flips_every_bit_in_each_width)
{
    tm_tensor *u = VEC(TM_U8, 0, 5, 255), *i = VEC(TM_I8, -128, 0, 127);
    tm_tensor *l = VEC(TM_I64, 0, -1, 1);
    REQUIRE(u && i && l);
    EXPECT(tm_bitwise_not(u), TM_U8, 255, 250, 0);
    EXPECT(tm_bitwise_not(i), TM_I8, 127, -1, -128);
    EXPECT(tm_bitwise_not(l), TM_I64, -1, 0, -2);
    CHECK_INT(tm_bitwise_not_(u), TM_OK);
    CHECK_VALUES(u, ((double[]){255, 250, 0}), 3, 0, 0);
    tm_free(u);
    tm_free(i);
    tm_free(l);
}

TEST(shifts_follow_pytorch_for_negative_and_oversized_counts)
{
    tm_tensor *i8 = VEC(TM_I8, -128, 100, -3, 3);
    tm_tensor *u8 = VEC(TM_U8, 255, 128, 3, 1);
    tm_tensor *c8 = VEC(TM_I8, 8, -1, 1, 7);
    tm_tensor *l = VEC(TM_I64, 5, -5, -5, 5);
    tm_tensor *cl = VEC(TM_I64, 64, 64, -64, 62);
    REQUIRE(i8 && u8 && c8 && l && cl);
    EXPECT(tm_bitwise_right_shift(i8, c8), TM_I8, -1, 0, -2, 0);
    EXPECT(tm_bitwise_left_shift(i8, c8), TM_I8, 0, 0, -6, -128);
    EXPECT(tm_binary_scalar(TM_OP_BITWISE_RIGHT_SHIFT, u8, 8), TM_U8, 0, 0,
           0, 0);
    EXPECT(tm_binary_scalar(TM_OP_BITWISE_RIGHT_SHIFT, u8, -1), TM_U8, 0, 0,
           0, 0);
    EXPECT(tm_binary_scalar(TM_OP_BITWISE_LEFT_SHIFT, u8, 1), TM_U8, 254, 0,
           6, 2);
    EXPECT(tm_bitwise_left_shift(l, cl), TM_I64, 0, 0, 0, 0x1p62);
    EXPECT(tm_bitwise_right_shift(l, cl), TM_I64, 0, -1, -1, 0);
    /* 3 << t: the number on the left */
    EXPECT(tm_binary_rscalar(TM_OP_BITWISE_LEFT_SHIFT, 3, c8), TM_I8, 0, 0, 6,
           -128);
    tm_free(i8);
    tm_free(u8);
    tm_free(c8);
    tm_free(l);
    tm_free(cl);
}

TEST(bitwise_ops_refuse_floats_and_shifts_refuse_bool)
{
    tm_tensor *f = VEC(TM_F32, 1, 2), *i = VEC(TM_I32, 1, 2);
    tm_tensor *p = VEC(TM_BOOL, 1, 0);
    REQUIRE(f && i && p);
    CHECK_NULL_ERR(tm_bitwise_and(f, i), TM_EDTYPE,
                   "bitwise_and is only defined on integer and bool");
    CHECK_NULL_ERR(tm_binary_scalar_as(TM_OP_BITWISE_OR, i, 2,
                                       TM_SCALAR_FLOAT),
                   TM_EDTYPE, "not f32");
    CHECK_NULL_ERR(tm_bitwise_not(f), TM_EDTYPE, "tm_bitwise_not");
    CHECK_NULL_ERR(tm_bitwise_left_shift(p, p), TM_EDTYPE,
                   "shifts of bool tensors are not supported");
    CHECK_STATUS(tm_binary_(TM_OP_BITWISE_XOR, f, f), TM_EDTYPE, "f32");
    tm_free(f);
    tm_free(i);
    tm_free(p);
}

TEST(fmod_takes_the_sign_of_the_dividend)
{
    tm_tensor *a = VEC(TM_I64, 7, -7, 7, -7), *b = VEC(TM_I64, 3, 3, -3, -3);
    tm_tensor *x = VEC(TM_F64, 7.5, -7.5, 7.5, -7.5);
    tm_tensor *z = VEC(TM_I32, 0, 1);
    REQUIRE(a && b && x && z);
    EXPECT(tm_fmod(a, b), TM_I64, 1, -1, 1, -1);
    EXPECT(tm_remainder(a, b), TM_I64, 1, 2, -2, -1);
    EXPECT(tm_fmod(x, b), TM_F64, 1.5, -1.5, 1.5, -1.5);
    EXPECT(tm_fmod_scalar(x, -2), TM_F64, 1.5, -1.5, 1.5, -1.5);
    EXPECT(tm_binary_rscalar(TM_OP_FMOD, -7, b), TM_I64, -1, -1, -1, -1);
    CHECK_NULL_ERR(tm_fmod(b, z), TM_ESHAPE, "do not broadcast");
    tm_tensor *z4 = VEC(TM_I64, 1, 0, 1, 1);
    REQUIRE(z4);
    CHECK_NULL_ERR(tm_fmod(a, z4), TM_EINVAL, "division by zero");
    /* in place: a failure leaves a unchanged */
    CHECK_STATUS(tm_binary_(TM_OP_FMOD, a, z4), TM_EINVAL, "division");
    CHECK_VALUES(a, ((double[]){7, -7, 7, -7}), 4, 0, 0);
    tm_free(a);
    tm_free(b);
    tm_free(x);
    tm_free(z);
    tm_free(z4);
}

TEST(scalar_kinds_promote_as_python_numbers_do)
{
    tm_tensor *i = VEC(TM_I32, 1, 2), *p = VEC(TM_BOOL, 1, 0);
    tm_tensor *h = VEC(TM_F16, 1, 2);
    REQUIRE(i && p && h);
    /* an integral float still counts as a float */
    EXPECT(tm_binary_scalar_as(TM_OP_POW, i, 2, TM_SCALAR_FLOAT), TM_F32, 1,
           4);
    EXPECT(tm_binary_scalar_as(TM_OP_POW, i, -1, TM_SCALAR_FLOAT), TM_F32, 1,
           0.5);
    EXPECT(tm_binary_scalar_as(TM_OP_MUL, i, 0.5, TM_SCALAR_FLOAT), TM_F32,
           0.5, 1);
    EXPECT(tm_binary_rscalar_as(TM_OP_SUB, 3, i, TM_SCALAR_FLOAT), TM_F32, 2,
           1);
    EXPECT(tm_binary_scalar_as(TM_OP_MUL, i, 3, TM_SCALAR_INT), TM_I32, 3, 6);
    EXPECT(tm_binary_scalar_as(TM_OP_ADD, p, 1, TM_SCALAR_BOOL), TM_BOOL, 1,
           1);
    EXPECT(tm_binary_scalar_as(TM_OP_ADD, p, 1, TM_SCALAR_INT), TM_I64, 2, 1);
    EXPECT(tm_binary_scalar_as(TM_OP_MUL, p, 2, TM_SCALAR_FLOAT), TM_F32, 2,
           0);
    EXPECT(tm_binary_scalar_as(TM_OP_MUL, h, 3, TM_SCALAR_FLOAT), TM_F16, 3,
           6);
    EXPECT(tm_binary_scalar_as(TM_OP_MUL, i, 1, TM_SCALAR_BOOL), TM_I32, 1,
           2);
    CHECK_NULL_ERR(tm_binary_scalar_as(TM_OP_POW, i, -1, TM_SCALAR_INT),
                   TM_EINVAL, "negative integer powers");
    CHECK_NULL_ERR(tm_binary_scalar_as(TM_OP_ADD, i, 0.5, TM_SCALAR_INT),
                   TM_EINVAL, "must be integral, not 0.5");
    CHECK_NULL_ERR(tm_binary_scalar_as(TM_OP_ADD, p, 2, TM_SCALAR_BOOL),
                   TM_EINVAL, "must be 0 or 1, not 2");
    CHECK_NULL_ERR(tm_binary_scalar_as(TM_OP_ADD, p, 2, (tm_scalar_kind)9),
                   TM_EINVAL, "unknown scalar kind 9");
    /* in place: an integer tensor cannot take a float result */
    CHECK_STATUS(tm_binary_scalar_as_(TM_OP_MUL, i, 2, TM_SCALAR_FLOAT),
                 TM_EDTYPE, "can't be cast");
    CHECK_INT(tm_binary_scalar_as_(TM_OP_MUL, i, 2, TM_SCALAR_INT), TM_OK);
    CHECK_VALUES(i, ((double[]){2, 4}), 2, 0, 0);
    tm_free(i);
    tm_free(p);
    tm_free(h);
}

TEST(binary_math_ops_match_libm)
{
    tm_tensor *a = VEC(TM_F64, 1, -1, 1000, -INFINITY, 3);
    tm_tensor *b = VEC(TM_F64, 0, 2, 1000, -INFINITY, -0.0);
    REQUIRE(a && b);
    EXPECT(tm_atan2(a, b), TM_F64, atan2(1, 0), atan2(-1, 2), atan2(1, 1),
           atan2(-INFINITY, -INFINITY), atan2(3, -0.0));
    double l1 = log1p(exp(-1.0)), l3 = log1p(exp(-3.0));
    EXPECT(tm_logaddexp(a, b), TM_F64, 1 + l1, 2 + l3, 1000 + log(2.0),
           -INFINITY, 3 + l3);
    double m1 = log1p(exp2(-1.0)) / log(2.0);
    double m3 = log1p(exp2(-3.0)) / log(2.0);
    EXPECT(tm_logaddexp2(a, b), TM_F64, 1 + m1, 2 + m3, 1001, -INFINITY,
           3 + m3);
    EXPECT(tm_copysign(a, b), TM_F64, 1, 1, 1000, -INFINITY, -3);
    EXPECT(tm_hypot(a, b), TM_F64, 1, hypot(1, 2), hypot(1000, 1000),
           INFINITY, 3);
    tm_tensor *i = VEC(TM_I32, 3, 0), *j = VEC(TM_I32, 4, 0);
    REQUIRE(i && j);
    EXPECT(tm_hypot(i, j), TM_F32, 5, 0); /* integers compute in F32 */
    tm_free(i);
    tm_free(j);
    tm_free(a);
    tm_free(b);
}

TEST(lerp_isclose_nan_to_num_values_and_errors)
{
    tm_tensor *a = VEC(TM_F64, 0, 1, -2), *e = VEC(TM_F64, 10, 2, 4);
    tm_tensor *w = VEC(TM_F64, 0.25, 1, 0.5), *f = VEC(TM_F32, 0, 1, 2);
    tm_tensor *i = VEC(TM_I64, 1, 2, 3);
    REQUIRE(a && e && w && f && i);
    EXPECT(tm_lerp(a, e, w), TM_F64, 2.5, 2, 1);
    EXPECT(tm_lerp_scalar(a, e, 1), TM_F64, 10, 2, 4);
    CHECK_NULL_ERR(tm_lerp(a, f, w), TM_EDTYPE, "end has dtype f32");
    CHECK_NULL_ERR(tm_lerp_scalar(i, i, 0.5), TM_EDTYPE,
                   "input must be a float tensor");
    tm_tensor *x = VEC(TM_F64, 1, NAN, INFINITY, 1, 100);
    tm_tensor *y = VEC(TM_F64, 1 + 1e-6, NAN, INFINITY, -INFINITY, 101);
    REQUIRE(x && y);
    EXPECT(tm_isclose(x, y, 1e-5, 1e-8, false), TM_BOOL, 1, 0, 1, 0, 0);
    EXPECT(tm_isclose(x, y, 1e-2, 0, true), TM_BOOL, 1, 1, 1, 0, 1);
    EXPECT(tm_isclose(i, i, 0, 0, false), TM_BOOL, 1, 1, 1);
    CHECK_NULL_ERR(tm_isclose(a, f, 1e-5, 1e-8, false), TM_EDTYPE,
                   "b has dtype f32, expected f64");
    CHECK_NULL_ERR(tm_isclose(a, a, -1, 1e-8, false), TM_EINVAL,
                   "rtol -1 and atol 1e-08 must be >= 0");
    tm_tensor *n = VEC(TM_F32, NAN, INFINITY, -INFINITY, 2);
    REQUIRE(n);
    EXPECT(tm_nan_to_num(n, 0, NAN, NAN), TM_F32, 0, 0x1.fffffep127,
           -0x1.fffffep127, 2);
    EXPECT(tm_nan_to_num(n, 1, 5, -5), TM_F32, 1, 5, -5, 2);
    EXPECT(tm_nan_to_num(i, 0, NAN, NAN), TM_I64, 1, 2, 3);
    tm_free(a);
    tm_free(e);
    tm_free(w);
    tm_free(f);
    tm_free(i);
    tm_free(x);
    tm_free(y);
    tm_free(n);
}

static tm_tensor *f_lerp(tm_tensor *const *in, void *ctx)
{
    (void)ctx;
    return tm_lerp(in[0], in[1], in[2]);
}

static tm_tensor *f_lerp_scalar(tm_tensor *const *in, void *ctx)
{
    return tm_lerp_scalar(in[0], in[1], *(const double *)ctx);
}

static tm_tensor *f_nan_to_num(tm_tensor *const *in, void *ctx)
{
    (void)ctx;
    return tm_nan_to_num(in[0], 0, NAN, NAN);
}

/* tol 1e-6: see gradcheck.h (F64 central differences of smooth maps). */
TEST(lerp_and_nan_to_num_pass_gradcheck_with_broadcasting)
{
    tm_tensor *in[3] = {TT_LEAF(1, 3, 4), TT_LEAF(2, 4), TT_LEAF(3, 3, 1)};
    REQUIRE(in[0] && in[1] && in[2]);
    GRADCHECK("lerp", f_lerp, NULL, in, 3, 1e-6);
    double w[2] = {0.3, 0.8};
    GRADCHECK("lerp_scalar(w < 0.5)", f_lerp_scalar, &w[0], in, 2, 1e-6);
    GRADCHECK("lerp_scalar(w >= 0.5)", f_lerp_scalar, &w[1], in, 2, 1e-6);
    GRADCHECK("nan_to_num", f_nan_to_num, NULL, in, 1, 1e-6);
    for (int k = 0; k < 3; k++) tm_free(in[k]);
}
