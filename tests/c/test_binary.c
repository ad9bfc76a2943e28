/* test_binary.c — binary elementwise ops, where, clamp_tensor, masked_fill
 * and tril/triu: numpy reference cases (tests/gen/gen_binary.py) plus error
 * paths, overlap handling and thread-count independence. */
#include "ref_dispatch.h"

#include <stdlib.h>

TEST(binary_reference_cases)
{
    tt_run_ref_file("binary.ref", tt_binary_dispatch);
}

/* ------------------------------------------------------------ helpers */

static tm_tensor *vec(const double *v, int64_t n, tm_dtype dt)
{
    return tt_tensor(v, (int64_t[]){n}, 1, dt);
}

/* True when a and b (same dtype and shape) hold identical bytes in
 * row-major order. */
static bool same_bytes(const tm_tensor *a, const tm_tensor *b)
{
    tm_tensor *ca = tm_contiguous(a), *cb = tm_contiguous(b);
    bool ok = ca && cb && tm_dtype_of(ca) == tm_dtype_of(cb) &&
              tm_nbytes(ca) == tm_nbytes(cb) &&
              !memcmp(tm_data(ca), tm_data(cb), tm_nbytes(ca));
    tm_free(ca);
    tm_free(cb);
    return ok;
}

/* ---------------------------------------------------------- error paths */

TEST(binary_shapes_that_do_not_broadcast_name_both_shapes)
{
    tm_tensor *a = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *b = tm_zeros((int64_t[]){4}, 1, TM_F32);
    CHECK_NULL_ERR(tm_add(a, b), TM_ESHAPE,
                   "tm_add: shapes [2,3] and [4] do not broadcast");
    CHECK_NULL_ERR(tm_binary(TM_OP_LT, a, b), TM_ESHAPE,
                   "tm_binary: shapes [2,3] and [4] do not broadcast");
    CHECK_STATUS(tm_mul_(a, b), TM_ESHAPE, "do not broadcast");
    CHECK_NULL_ERR(tm_where(a, a, b), TM_ESHAPE,
                   "shapes of cond [2,3], a [2,3] and b [4] do not broadcast");
    CHECK_NULL_ERR(tm_clamp_tensor(a, b, NULL), TM_ESHAPE, "do not broadcast");
    tm_free(a);
    tm_free(b);
}

TEST(binary_null_arguments_are_named)
{
    tm_tensor *a = tm_zeros((int64_t[]){3}, 1, TM_F32);
    CHECK_NULL_ERR(tm_add(NULL, a), TM_EINVAL, "tm_add: a is NULL");
    CHECK_NULL_ERR(tm_sub(a, NULL), TM_EINVAL, "tm_sub: b is NULL");
    CHECK_NULL_ERR(tm_binary_scalar(TM_OP_ADD, NULL, 1), TM_EINVAL,
                   "a is NULL");
    CHECK_NULL_ERR(tm_binary_rscalar(TM_OP_ADD, 1, NULL), TM_EINVAL,
                   "a is NULL");
    CHECK_STATUS(tm_add_(NULL, a), TM_EINVAL, "tm_add_: a is NULL");
    CHECK_STATUS(tm_mul_scalar_(NULL, 2), TM_EINVAL, "a is NULL");
    CHECK_NULL_ERR(tm_where(NULL, a, a), TM_EINVAL, "tm_where: cond is NULL");
    CHECK_NULL_ERR(tm_where(a, a, NULL), TM_EINVAL, "tm_where: b is NULL");
    CHECK_NULL_ERR(tm_clamp_tensor(NULL, a, a), TM_EINVAL, "t is NULL");
    CHECK_NULL_ERR(tm_clamp_tensor(a, NULL, NULL), TM_EINVAL,
                   "lo and hi are both NULL");
    CHECK_NULL_ERR(tm_masked_fill(a, NULL, 0), TM_EINVAL, "mask is NULL");
    CHECK_STATUS(tm_masked_fill_(NULL, a, 0), TM_EINVAL, "t is NULL");
    CHECK_NULL_ERR(tm_tril(NULL, 0), TM_EINVAL, "tm_tril: t is NULL");
    CHECK_STATUS(tm_triu_(NULL, 0), TM_EINVAL, "tm_triu_: t is NULL");
    CHECK_NULL_ERR(tm_binary((tm_binary_op)99, a, a), TM_EINVAL,
                   "unknown binary op 99");
    tm_free(a);
}

TEST(masked_fill_requires_a_bool_mask)
{
    tm_tensor *t = tm_zeros((int64_t[]){2, 2}, 2, TM_F32);
    tm_tensor *m = tm_ones((int64_t[]){2}, 1, TM_F32);
    CHECK_NULL_ERR(tm_masked_fill(t, m, 1), TM_EDTYPE,
                   "tm_masked_fill: mask must have dtype bool, not f32");
    CHECK_STATUS(tm_masked_fill_(t, m, 1), TM_EDTYPE, "must have dtype bool");
    tm_free(m);
    tm_free(t);
}

TEST(integer_division_by_zero_is_an_error)
{
    double x[] = {4, -4, 7}, y[] = {2, 0, 1};
    tm_tensor *a = vec(x, 3, TM_I32), *b = vec(y, 3, TM_I32);
    CHECK_NULL_ERR(tm_binary(TM_OP_FLOOR_DIVIDE, a, b), TM_EINVAL,
                   "tm_binary: integer division by zero");
    CHECK_NULL_ERR(tm_binary(TM_OP_REMAINDER, a, b), TM_EINVAL,
                   "division by zero");
    CHECK_NULL_ERR(tm_binary_scalar(TM_OP_REMAINDER, a, 0), TM_EINVAL,
                   "tm_binary_scalar: integer division by zero");
    CHECK_STATUS(tm_binary_scalar_(TM_OP_FLOOR_DIVIDE, a, 0), TM_EINVAL,
                 "tm_binary_scalar_: integer division by zero");
    CHECK_STATUS(tm_binary_(TM_OP_REMAINDER, a, b), TM_EINVAL,
                 "tm_binary_: integer division by zero");
    CHECK_VALUES(a, x, 3, 0, 0); /* a failed in-place op leaves a as it was */
    /* float division by zero is IEEE, not an error */
    tm_tensor *q = tm_div(a, b);
    double want[] = {2, -INFINITY, 7};
    CHECK_VALUES(q, want, 3, 0, 0);
    tm_free(q);
    tm_free(a);
    tm_free(b);
}

TEST(integer_pow_with_negative_exponent_is_an_error)
{
    double x[] = {2, 3}, y[] = {2, -1};
    tm_tensor *a = vec(x, 2, TM_I64), *b = vec(y, 2, TM_I64);
    CHECK_NULL_ERR(tm_pow(a, b), TM_EINVAL, "tm_pow: integers to negative "
                   "integer powers are not allowed (negative exponent)");
    CHECK_NULL_ERR(tm_pow_scalar(a, -2), TM_EINVAL, "negative exponent");
    tm_tensor *f = tm_pow_scalar(a, -1.5); /* non-integral: F32, fine */
    REQUIRE(f);
    CHECK_INT(tm_dtype_of(f), TM_F32);
    tm_free(f);
    tm_free(a);
    tm_free(b);
}

TEST(inplace_result_must_be_castable_to_the_target)
{
    tm_tensor *i = tm_ones((int64_t[]){3}, 1, TM_I64);
    tm_tensor *f = tm_ones((int64_t[]){3}, 1, TM_F32);
    tm_tensor *bl = tm_ones((int64_t[]){3}, 1, TM_BOOL);
    CHECK_STATUS(tm_add_(i, f), TM_EDTYPE,
                 "tm_add_: result type f32 can't be cast to the output "
                 "dtype i64");
    CHECK_STATUS(tm_div_(i, i), TM_EDTYPE,
                 "result type f32 can't be cast to the output dtype i64");
    CHECK_STATUS(tm_add_scalar_(i, 0.5), TM_EDTYPE,
                 "result type f32 can't be cast to the output dtype i64");
    CHECK_STATUS(tm_add_(bl, i), TM_EDTYPE,
                 "result type i64 can't be cast to the output dtype bool");
    CHECK_STATUS(tm_sub_(bl, bl), TM_EDTYPE, "subtraction with a bool operand");
    /* allowed: int into float, bool result into anything */
    CHECK_STATUS(tm_add_(f, i), TM_OK, "");
    CHECK_STATUS(tm_binary_(TM_OP_LT, i, f), TM_OK, "");
    double want[] = {2, 2, 2};
    CHECK_VALUES(f, want, 3, 0, 0);
    double ones[] = {1, 1, 1};
    CHECK_VALUES(i, ones, 3, 0, 0); /* 1 < 2: true, stored as 1 */
    tm_free(i);
    tm_free(f);
    tm_free(bl);
}

TEST(inplace_into_expanded_tensor_is_an_error)
{
    tm_tensor *a = tm_zeros((int64_t[]){1, 3}, 2, TM_F32);
    tm_tensor *e = tm_expand(a, (int64_t[]){4, 3}, 2);
    tm_tensor *b = tm_ones((int64_t[]){4, 3}, 2, TM_F32);
    CHECK_STATUS(tm_add_(e, b), TM_EINVAL,
                 "cannot write in place into an expanded tensor");
    CHECK_STATUS(tm_tril_(e, 0), TM_EINVAL, "expanded tensor");
    tm_free(b);
    tm_free(e);
    tm_free(a);
}

TEST(tril_needs_two_dims)
{
    tm_tensor *a = tm_zeros((int64_t[]){4}, 1, TM_F32);
    CHECK_NULL_ERR(tm_triu(a, 0), TM_EINVAL,
                   "tm_triu: t must have at least 2 dims, not 1");
    CHECK_STATUS(tm_tril_(a, 0), TM_EINVAL, "at least 2 dims");
    tm_free(a);
}

/* ------------------------------------------------------------- overlap */

TEST(inplace_with_the_same_tensor_on_both_sides)
{
    double x[] = {1, 2, 3, 4};
    tm_tensor *a = vec(x, 4, TM_F32);
    REQUIRE(tm_add_(a, a) == TM_OK);
    double want[] = {2, 4, 6, 8};
    CHECK_VALUES(a, want, 4, 0, 0);
    REQUIRE(tm_binary_(TM_OP_MUL, a, a) == TM_OK);
    double sq[] = {4, 16, 36, 64};
    CHECK_VALUES(a, sq, 4, 0, 0);
    tm_free(a);
}

TEST(inplace_with_partially_overlapping_operand_reads_a_copy)
{
    /* a = x[1:], b = x[:-1] share storage shifted by one element: a naive
     * loop would read values it already wrote (a running sum). */
    double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    tm_tensor *base = vec(x, 16, TM_I32);
    tm_tensor *a = tm_slice(base, 0, 1, 16, 1);
    tm_tensor *b = tm_slice(base, 0, 0, 15, 1);
    REQUIRE(tm_add_(a, b) == TM_OK);
    double want[16] = {1};
    for (int i = 1; i < 16; i++) want[i] = x[i] + x[i - 1];
    CHECK_VALUES(base, want, 16, 0, 0);
    /* reversed roles and a transposed overlap on a 2-D view */
    tm_tensor *m = tm_arange(0, 9, 1, TM_F64);
    tm_tensor *m2 = tm_view(m, (int64_t[]){3, 3}, 2);
    tm_tensor *mt = tm_transpose(m2, 0, 1);
    REQUIRE(tm_sub_(m2, mt) == TM_OK);
    double anti[] = {0, -2, -4, 2, 0, -2, 4, 2, 0};
    CHECK_VALUES(m2, anti, 9, 0, 0);
    /* masked_fill_ with a mask sharing the tensor's storage */
    tm_tensor *bt = tm_zeros((int64_t[]){4}, 1, TM_BOOL);
    REQUIRE(tm_set(bt, (int64_t[]){0}, 1) == TM_OK);
    tm_tensor *head = tm_slice(bt, 0, 0, 3, 1), *tail = tm_slice(bt, 0, 1, 4, 1);
    REQUIRE(tm_masked_fill_(tail, head, 1) == TM_OK); /* tail = head|tail */
    double bw[] = {1, 1, 0, 0};
    CHECK_VALUES(bt, bw, 4, 0, 0);
    tm_free(head);
    tm_free(tail);
    tm_free(bt);
    tm_free(mt);
    tm_free(m2);
    tm_free(m);
    tm_free(a);
    tm_free(b);
    tm_free(base);
}

/* ----------------------------------------------------------- threading */

/* A [rows, cols] f32 tensor of pseudo-random values in [-4, 4). */
static tm_tensor *noise(int64_t rows, int64_t cols, uint32_t seed)
{
    int64_t n = rows * cols;
    float *v = malloc(sizeof(float) * (size_t)n);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)(seed >> 8) * 0x1p-21f - 4.0f;
    }
    tm_tensor *t = tm_from_buffer(v, (int64_t[]){rows, cols}, 2, TM_F32);
    free(v);
    return t;
}

TEST(binary_results_do_not_depend_on_thread_count)
{
    /* 600 x 800 = 480k elements: the engine splits it over threads. */
    tm_tensor *x = noise(800, 600, 1), *y = noise(600, 800, 2);
    tm_tensor *xt = tm_transpose(x, 0, 1); /* non-contiguous [600, 800] */
    tm_tensor *h = tm_to_dtype(y, TM_F16);
    tm_tensor *ht = tm_to_dtype(xt, TM_F16);
    REQUIRE(xt && h && ht);
    tm_set_num_threads(1);
    tm_tensor *s1 = tm_add(xt, y), *p1 = tm_mul(h, ht);
    tm_tensor *w1 = tm_where(xt, y, h), *c1 = tm_lt(xt, y);
    tm_set_num_threads(3);
    tm_tensor *s3 = tm_add(xt, y), *p3 = tm_mul(h, ht);
    tm_tensor *w3 = tm_where(xt, y, h), *c3 = tm_lt(xt, y);
    tm_set_num_threads(0);
    REQUIRE(s1 && s3 && p1 && p3 && w1 && w3 && c1 && c3);
    CHECK(tm_dtype_of(p1) == TM_F16);
    CHECK(same_bytes(s1, s3));
    CHECK(same_bytes(p1, p3));
    CHECK(same_bytes(w1, w3));
    CHECK(same_bytes(c1, c3));
    /* and the values are right: spot-check against scalar arithmetic */
    int64_t idx[2] = {123, 456};
    double vx = 0, vy = 0, vs = 1;
    tm_get(xt, idx, &vx);
    tm_get(y, idx, &vy);
    tm_get(s3, idx, &vs);
    CHECK(vs == (double)((float)vx + (float)vy));
    tm_free(s1), tm_free(s3), tm_free(p1), tm_free(p3);
    tm_free(w1), tm_free(w3), tm_free(c1), tm_free(c3);
    tm_free(ht);
    tm_free(h);
    tm_free(xt);
    tm_free(x);
    tm_free(y);
}

/* ------------------------------------------------- wrapped-number rules */

TEST(scalars_do_not_widen_float_tensors)
{
    tm_tensor *h = tm_ones((int64_t[]){2}, 1, TM_F16);
    tm_tensor *i = tm_ones((int64_t[]){2}, 1, TM_I8);
    tm_tensor *b = tm_ones((int64_t[]){2}, 1, TM_BOOL);
    tm_tensor *r[6] = {tm_add_scalar(h, 2.5), tm_add_scalar(i, 2),
                       tm_add_scalar(i, 2.5), tm_add_scalar(b, 1),
                       tm_binary_rscalar(TM_OP_SUB, 1e10, h),
                       tm_div_scalar(i, 2)};
    tm_dtype want[6] = {TM_F16, TM_I8, TM_F32, TM_I64, TM_F16, TM_F32};
    for (int k = 0; k < 6; k++) {
        CHECK(r[k] && tm_dtype_of(r[k]) == want[k]);
        tm_free(r[k]);
    }
    tm_free(h);
    tm_free(i);
    tm_free(b);
}

/* ------------------------------------------------- allocation failures */

/* One of each kind of call, every result released at once; returns the
 * first failure. */
static tm_status alloc_sequence(tm_tensor *f, tm_tensor *i, tm_tensor *h,
                                tm_tensor *m)
{
    tm_tensor *r[8] = {
        tm_add(i, h),            /* i32 rounded to f16 first: a temporary */
        tm_mul_scalar(h, 0.1),   /* scalar tensor */
        tm_binary_rscalar(TM_OP_SUB, 2, i),
        tm_where(m, f, i),
        tm_masked_fill(f, m, 3),
        tm_tril(f, 0),
        tm_clamp_tensor(f, i, h),
        tm_ge(f, i),
    };
    tm_status st = TM_OK;
    for (int k = 0; k < 8; k++) {
        if (!r[k] && st == TM_OK) st = tm_last_status();
        tm_free(r[k]);
    }
    if (st) return st;
    tm_tensor *fs = tm_slice(f, 1, 1, 3, 1), *fo = tm_slice(f, 1, 0, 2, 1);
    if (!fs || !fo) st = tm_last_status();
    if (!st) st = tm_add_(fs, fo); /* overlapping: copies fo first */
    if (!st) st = tm_binary_scalar_(TM_OP_REMAINDER, i, 7); /* computed aside */
    if (!st) st = tm_masked_fill_(f, m, 1);
    if (!st) st = tm_triu_(f, 1);
    tm_free(fs);
    tm_free(fo);
    return st;
}

TEST(binary_ops_fail_cleanly_at_every_allocation)
{
    tm_tensor *f = tm_ones((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *i = tm_ones((int64_t[]){3}, 1, TM_I32);
    tm_tensor *h = tm_ones((int64_t[]){2, 1}, 2, TM_F16);
    tm_tensor *m = tm_ones((int64_t[]){3}, 1, TM_BOOL);
    REQUIRE(f && i && h && m);
    int n;
    for (n = 1; n < 500; n++) {
        tm_mem_stats before, after;
        tm_memory_stats(&before);
        tm_clear_error();
        tm_alloc_fail_after(n);
        tm_status st = alloc_sequence(f, i, h, m);
        tm_alloc_fail_after(0);
        tm_memory_stats(&after);
        CHECK_INT(after.current_bytes, before.current_bytes);
        if (st == TM_OK) break;
        CHECK_INT(st, TM_ENOMEM);
        CHECK(strstr(tm_last_error(), "out of memory") != NULL);
    }
    CHECK(n > 10 && n < 500); /* it did reach a run without failures */
    tm_free(f);
    tm_free(i);
    tm_free(h);
    tm_free(m);
}
