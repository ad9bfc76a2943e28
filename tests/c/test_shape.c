/* test_shape.c — cat, stack, split, split_sizes, chunk, pad, repeat: numpy
 * reference cases (tests/gen/gen_shape.py) plus views, error paths and
 * overflow. */
#include "ref_dispatch.h"

TEST(shape_reference_cases)
{
    tt_run_ref_file("shape.ref", tt_shape_dispatch);
}

/* 0..n-1 as [rows, cols] f32. */
static tm_tensor *iota2(int64_t rows, int64_t cols)
{
    tm_tensor *a = tm_arange(0, (double)(rows * cols), 1, TM_F32);
    tm_tensor *b = a ? tm_view(a, (int64_t[]){rows, cols}, 2) : NULL;
    tm_free(a);
    return b;
}

TEST(split_pieces_are_views_sharing_storage)
{
    tm_tensor *a = iota2(5, 2);
    REQUIRE(a);
    tm_tensor *p[3] = {NULL};
    CHECK_INT(tm_split(a, 2, 0, p, 3), 3);
    REQUIRE(p[0] && p[1] && p[2]);
    CHECK_SHAPE(p[2], 1, 2);
    for (int i = 0; i < 3; i++) CHECK(tm_storage_of(p[i]) == tm_storage_of(a));
    CHECK_INT(tm_offset(p[1]), 4);
    /* a write through a piece shows in the original */
    REQUIRE(tm_set(p[2], (int64_t[]){0, 1}, -7) == TM_OK);
    double x;
    REQUIRE(tm_get(a, (int64_t[]){4, 1}, &x) == TM_OK);
    CHECK_NEAR(x, -7, 0);
    for (int i = 0; i < 3; i++) tm_free(p[i]);

    tm_tensor *q[2] = {NULL};
    CHECK_INT(tm_chunk(a, 2, 1, q, 2), 2);
    CHECK(q[0] && tm_storage_of(q[0]) == tm_storage_of(a));
    CHECK_INT(tm_strides(q[1])[0], 2);
    CHECK_INT(tm_offset(q[1]), 1);
    tm_free(q[0]);
    tm_free(q[1]);
    CHECK_INT(tm_split_sizes(a, (int64_t[]){1, 4}, 2, 0, q, 2), 2);
    CHECK(q[1] && tm_storage_of(q[1]) == tm_storage_of(a));
    CHECK_SHAPE(q[1], 4, 2);
    tm_free(q[0]);
    tm_free(q[1]);
    tm_free(a);
}

TEST(split_with_too_small_out_writes_nothing)
{
    tm_tensor *a = iota2(5, 2);
    REQUIRE(a);
    tm_tensor *sentinel = (tm_tensor *)&a; /* never dereferenced */
    tm_tensor *p[2] = {sentinel, sentinel};
    CHECK_STATUS(tm_split(a, 2, 0, p, 2), TM_EINVAL,
                 "tm_split: 3 pieces do not fit in max_out = 2");
    CHECK(p[0] == sentinel && p[1] == sentinel);
    CHECK_STATUS(tm_chunk(a, 5, 0, p, 2), TM_EINVAL,
                 "tm_chunk: 5 pieces do not fit in max_out = 2");
    CHECK_STATUS(tm_split_sizes(a, (int64_t[]){1, 1, 3}, 3, 0, p, 2),
                 TM_EINVAL, "3 pieces do not fit in max_out = 2");
    CHECK(p[0] == sentinel && p[1] == sentinel);
    CHECK_STATUS(tm_split(a, 2, 0, NULL, 8), TM_EINVAL, "out is NULL");
    tm_free(a);
}

TEST(split_family_rejects_bad_arguments)
{
    tm_tensor *a = iota2(3, 4), *s = tm_scalar(1, TM_F32);
    tm_tensor *p[8];
    REQUIRE(a && s);
    CHECK_STATUS(tm_split(NULL, 1, 0, p, 8), TM_EINVAL, "tensor is NULL");
    CHECK_STATUS(tm_split(s, 1, 0, p, 8), TM_EINVAL,
                 "tm_split: cannot split a 0-d tensor");
    CHECK_STATUS(tm_split(a, -1, 0, p, 8), TM_EINVAL,
                 "split size -1 must be positive");
    CHECK_STATUS(tm_split(a, 1, 2, p, 8), TM_ERANGE,
                 "dim 2 is out of range for a 2-d tensor");
    CHECK_STATUS(tm_split_sizes(a, (int64_t[]){5, -1}, 2, 1, p, 8), TM_EINVAL,
                 "tm_split_sizes: sizes[1] = -1 is negative");
    CHECK_STATUS(tm_split_sizes(a, NULL, 2, 1, p, 8), TM_EINVAL,
                 "sizes is NULL");
    CHECK_STATUS(tm_split_sizes(a, (int64_t[]){INT64_MAX, 2}, 2, 1, p, 8),
                 TM_EOVERFLOW, "sizes add up to more than");
    CHECK_STATUS(tm_chunk(a, -2, 0, p, 8), TM_EINVAL,
                 "tm_chunk: chunks = -2 must be positive");
    CHECK_STATUS(tm_chunk(s, 2, 0, p, 8), TM_EINVAL,
                 "tm_chunk: cannot split a 0-d tensor");
    tm_free(a);
    tm_free(s);
}

TEST(cat_and_stack_reject_bad_arguments)
{
    tm_tensor *a = iota2(2, 3), *b = iota2(3, 2), *s = tm_scalar(1, TM_F32);
    tm_tensor *c = tm_zeros((int64_t[]){2, 3, 1}, 3, TM_F32);
    tm_tensor *e = tm_zeros((int64_t[]){0}, 1, TM_F32);
    tm_tensor *d8 = tm_zeros((int64_t[]){1, 1, 1, 1, 1, 1, 1, 1}, 8, TM_F32);
    REQUIRE(a && b && s && c && e && d8);
    CHECK_NULL_ERR(tm_cat(NULL, 2, 0), TM_EINVAL, "tm_cat: ts is NULL");
    CHECK_NULL_ERR(tm_cat((tm_tensor *[]){a}, 0, 0), TM_EINVAL,
                   "tm_cat: needs at least one tensor, got n = 0");
    CHECK_NULL_ERR(tm_cat((tm_tensor *[]){a, NULL}, 2, 0), TM_EINVAL,
                   "tm_cat: tensor 1 is NULL");
    CHECK_NULL_ERR(tm_cat((tm_tensor *[]){a, b}, 2, 0), TM_ESHAPE,
                   "tm_cat: tensor 1 has shape [3,2], expected [*,3] (as "
                   "tensor 0): size 2 != 3 at dim 1");
    CHECK_NULL_ERR(tm_cat((tm_tensor *[]){e, a, c}, 3, 0), TM_ESHAPE,
                   "tm_cat: tensor 2 has 3 dims (shape [2,3,1]) but tensor "
                   "1 has 2");
    CHECK_NULL_ERR(tm_cat((tm_tensor *[]){s, s}, 2, 0), TM_EINVAL,
                   "tm_cat: tensor 0 is 0-d and cannot be concatenated");
    CHECK_NULL_ERR(tm_cat((tm_tensor *[]){a, a}, 2, 2), TM_ERANGE,
                   "tm_cat: dim 2 is out of range for a 2-d tensor");
    CHECK_NULL_ERR(tm_stack((tm_tensor *[]){a, b}, 2, 0), TM_ESHAPE,
                   "tm_stack: tensor 1 has shape [3,2], expected [2,3] (as "
                   "tensor 0)");
    CHECK_NULL_ERR(tm_stack((tm_tensor *[]){a, a}, 2, 3), TM_ERANGE,
                   "tm_stack: dim 3 is out of range for a 3-d tensor");
    CHECK_NULL_ERR(tm_stack((tm_tensor *[]){a, a}, 2, -4), TM_ERANGE,
                   "dim -4 is out of range");
    CHECK_NULL_ERR(tm_stack((tm_tensor *[]){d8, d8}, 2, 0), TM_EINVAL,
                   "tm_stack: stacking 8-d tensors needs more than 8 dims");
    CHECK_NULL_ERR(tm_stack(NULL, 1, 0), TM_EINVAL, "tm_stack: ts is NULL");
    /* stack at dim -1 of 2-d inputs is the new last dim */
    tm_tensor *st = tm_stack((tm_tensor *[]){a, a}, 2, -1);
    CHECK_SHAPE(st, 2, 3, 2);
    tm_free(st);
    tm_free(a);
    tm_free(b);
    tm_free(s);
    tm_free(c);
    tm_free(e);
    tm_free(d8);
}

TEST(pad_and_repeat_reject_bad_arguments)
{
    tm_tensor *a = iota2(2, 3);
    REQUIRE(a);
    CHECK_NULL_ERR(tm_pad(NULL, (int64_t[]){1, 1}, 2, 0), TM_EINVAL,
                   "tm_pad: tensor is NULL");
    CHECK_NULL_ERR(tm_pad(a, (int64_t[]){1, 1, 1, 1, 1, 1}, 6, 0), TM_EINVAL,
                   "tm_pad: npad = 6 must be even and at most 2 * ndim = 4");
    CHECK_NULL_ERR(tm_pad(a, NULL, 2, 0), TM_EINVAL, "tm_pad: pad is NULL");
    CHECK_NULL_ERR(tm_pad(a, (int64_t[]){0, 0, -1, -2}, 4, 0), TM_EINVAL,
                   "tm_pad: padding (-1, -2) of dim 0 of size 2 gives a "
                   "negative or too large size");
    CHECK_NULL_ERR(tm_pad(a, (int64_t[]){INT64_MAX, 1}, 2, 0), TM_EOVERFLOW,
                   "tm_pad: padding");
    CHECK_NULL_ERR(tm_pad(a, (int64_t[]){INT64_MIN, 0}, 2, 0), TM_EOVERFLOW,
                   "tm_pad: padding");
    CHECK_NULL_ERR(tm_pad(a, (int64_t[]){(int64_t)1 << 40, 0, (int64_t)1 << 40,
                                         0}, 4, 0),
                   TM_EOVERFLOW, "element count overflows");
    CHECK_NULL_ERR(tm_repeat(NULL, (int64_t[]){1}, 1), TM_EINVAL,
                   "tm_repeat: tensor is NULL");
    CHECK_NULL_ERR(tm_repeat(a, (int64_t[]){2}, 1), TM_EINVAL,
                   "tm_repeat: 1 repeats for a 2-d tensor (need 2 to 8)");
    CHECK_NULL_ERR(tm_repeat(a, NULL, 2), TM_EINVAL, "repeats is NULL");
    CHECK_NULL_ERR(tm_repeat(a, (int64_t[]){2, -1}, 2), TM_EINVAL,
                   "tm_repeat: repeats [2,-1] has a negative entry");
    tm_free(a);
}

TEST(repeat_overflowing_shape_is_an_error)
{
    tm_tensor *one = tm_ones((int64_t[]){1, 1}, 2, TM_F32);
    tm_tensor *row = tm_ones((int64_t[]){1, 3}, 2, TM_F32);
    REQUIRE(one && row);
    /* [2^40, 2^40]: each dim fits, the element count does not */
    int64_t big = (int64_t)1 << 40;
    CHECK_NULL_ERR(tm_repeat(one, (int64_t[]){big, big}, 2), TM_EOVERFLOW,
                   "tm_repeat: shape [1099511627776,1099511627776]: element "
                   "count overflows");
    /* one dim alone overflowing int64 */
    CHECK_NULL_ERR(tm_repeat(row, (int64_t[]){1, INT64_MAX / 2}, 2),
                   TM_EOVERFLOW, "tm_repeat: shape [1,3] repeated [1,");
    tm_free(one);
    tm_free(row);
}

TEST(shape_ops_fail_cleanly_when_allocation_fails)
{
    tm_tensor *a = iota2(2, 3), *b = iota2(1, 3);
    REQUIRE(a && b);
    for (int n = 1; n <= 8; n++) {
        tm_tensor *r[4], *p[2] = {NULL, NULL};
        tm_alloc_fail_after(n);
        r[0] = tm_cat((tm_tensor *[]){a, b}, 2, 0);
        tm_alloc_fail_after(n);
        r[1] = tm_stack((tm_tensor *[]){a, a}, 2, 1);
        tm_alloc_fail_after(n);
        r[2] = tm_pad(a, (int64_t[]){1, -1, 2, 0}, 4, 3);
        tm_alloc_fail_after(n);
        r[3] = tm_repeat(a, (int64_t[]){2, 1, 2}, 3);
        tm_alloc_fail_after(n);
        int k = tm_split(a, 2, 1, p, 2);
        tm_alloc_fail_after(0);
        if (k < 0) CHECK(p[0] == NULL && p[1] == NULL);
        for (int i = 0; i < (k > 0 ? k : 0); i++) tm_free(p[i]);
        for (int j = 0; j < 4; j++) tm_free(r[j]);
    }
    tm_free(a);
    tm_free(b);
}
