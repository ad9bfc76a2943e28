/* test_views.c — views share storage, have the right geometry and values;
 * reshape views when it can and copies when it must. */
#include "harness.h"

/* 0..n-1 as a [rows, cols] f32 tensor. */
static tm_tensor *iota2(int64_t rows, int64_t cols)
{
    tm_tensor *a = tm_arange(0, (double)(rows * cols), 1, TM_F32);
    tm_tensor *b = tm_view(a, (int64_t[]){rows, cols}, 2);
    tm_free(a);
    return b;
}

TEST(transpose_is_a_view_with_swapped_strides)
{
    tm_tensor *a = iota2(2, 3);
    REQUIRE(a);
    tm_tensor *t = tm_transpose(a, 0, -1);
    REQUIRE(t);
    CHECK_SHAPE(t, 3, 2);
    CHECK_INT(tm_strides(t)[0], 1);
    CHECK_INT(tm_strides(t)[1], 3);
    CHECK(tm_storage_of(t) == tm_storage_of(a));
    CHECK(!tm_is_contiguous(t));
    double want[] = {0, 3, 1, 4, 2, 5};
    CHECK_VALUES(t, want, 6, 0, 0);
    tm_tensor *c = tm_contiguous(t);
    CHECK(c && tm_is_contiguous(c) && tm_storage_of(c) != tm_storage_of(a));
    CHECK_VALUES(c, want, 6, 0, 0);
    tm_tensor *same = tm_contiguous(a);
    CHECK(same == a); /* already contiguous: a new reference to itself */
    tm_free(same);
    tm_free(c);
    tm_free(a); /* any order: the view keeps storage alive */
    CHECK_VALUES(t, want, 6, 0, 0);
    tm_free(t);
}

TEST(permute_and_error_on_repeated_dim)
{
    tm_tensor *a = tm_zeros((int64_t[]){2, 3, 4}, 3, TM_F32);
    tm_tensor *p = tm_permute(a, (int[]){2, 0, 1}, 3);
    CHECK_SHAPE(p, 4, 2, 3);
    CHECK_INT(tm_strides(p)[0], 1);
    CHECK_INT(tm_strides(p)[1], 12);
    CHECK_NULL_ERR(tm_permute(a, (int[]){0, 0, 1}, 3), TM_EINVAL,
                   "dim 0 appears twice");
    CHECK_NULL_ERR(tm_permute(a, (int[]){0, 1}, 2), TM_EINVAL,
                   "got 2 dims for a 3-d tensor");
    tm_free(p);
    tm_free(a);
}

TEST(slice_with_step_and_negative_indices)
{
    tm_tensor *a = tm_arange(0, 10, 1, TM_I64);
    tm_tensor *s = tm_slice(a, 0, -8, TM_END, 3); /* 2, 5, 8 */
    double w1[] = {2, 5, 8};
    CHECK_VALUES(s, w1, 3, 0, 0);
    CHECK_INT(tm_strides(s)[0], 3);
    tm_tensor *e = tm_slice(a, 0, 7, 3, 1); /* empty, like Python */
    CHECK_SHAPE(e, 0);
    tm_tensor *c = tm_slice(a, 0, -100, 100, 4); /* clamps: 0, 4, 8 */
    double w2[] = {0, 4, 8};
    CHECK_VALUES(c, w2, 3, 0, 0);
    CHECK_NULL_ERR(tm_slice(a, 0, 0, 5, 0), TM_EINVAL, "step 0 must be >= 1");
    CHECK_NULL_ERR(tm_slice(a, 1, 0, 5, 1), TM_ERANGE,
                   "dim 1 is out of range for a 1-d tensor");
    tm_free(s);
    tm_free(e);
    tm_free(c);
    tm_free(a);
}

TEST(select_narrow_squeeze_unsqueeze)
{
    tm_tensor *a = iota2(3, 4);
    tm_tensor *r = tm_select(a, 0, -1); /* last row */
    double w[] = {8, 9, 10, 11};
    CHECK_VALUES(r, w, 4, 0, 0);
    CHECK_NULL_ERR(tm_select(a, 1, 4), TM_ERANGE,
                   "index 4 is out of range for dim 1 of size 4");
    tm_tensor *n = tm_narrow(a, 1, 1, 2);
    double wn[] = {1, 2, 5, 6, 9, 10};
    CHECK_VALUES(n, wn, 6, 0, 0);
    CHECK_NULL_ERR(tm_narrow(a, 1, 3, 2), TM_ERANGE, "do not fit dim 1");
    tm_tensor *u = tm_unsqueeze(a, 1);
    CHECK_SHAPE(u, 3, 1, 4);
    tm_tensor *u2 = tm_unsqueeze(a, -1);
    CHECK_SHAPE(u2, 3, 4, 1);
    tm_tensor *sq = tm_squeeze(u, 1);
    CHECK_SHAPE(sq, 3, 4);
    tm_tensor *sq0 = tm_squeeze(a, 0); /* size 3: unchanged */
    CHECK_SHAPE(sq0, 3, 4);
    tm_tensor *sa = tm_squeeze_all(u2);
    CHECK_SHAPE(sa, 3, 4);
    tm_free(r); tm_free(n); tm_free(u); tm_free(u2); tm_free(sq);
    tm_free(sq0); tm_free(sa); tm_free(a);
}

TEST(view_needs_compatible_strides_reshape_copies)
{
    tm_tensor *a = iota2(2, 3);
    tm_tensor *v = tm_view(a, (int64_t[]){3, -1}, 2);
    CHECK_SHAPE(v, 3, 2);
    CHECK(tm_storage_of(v) == tm_storage_of(a));
    tm_tensor *t = tm_transpose(a, 0, 1);
    CHECK_NULL_ERR(tm_view(t, (int64_t[]){6}, 1), TM_ESHAPE,
                   "without copying");
    tm_tensor *r = tm_reshape(t, (int64_t[]){6}, 1);
    CHECK(r && tm_storage_of(r) != tm_storage_of(a));
    double w[] = {0, 3, 1, 4, 2, 5};
    CHECK_VALUES(r, w, 6, 0, 0);
    /* splitting a transposed dim is still a view */
    tm_tensor *t3 = tm_view(t, (int64_t[]){3, 1, 2}, 3);
    CHECK(t3 && tm_storage_of(t3) == tm_storage_of(a));
    CHECK_VALUES(t3, w, 6, 0, 0);
    CHECK_NULL_ERR(tm_view(a, (int64_t[]){4, -1}, 2), TM_ESHAPE,
                   "invalid for 6 elements");
    CHECK_NULL_ERR(tm_view(a, (int64_t[]){-1, -1}, 2), TM_EINVAL,
                   "only one dim may be -1");
    tm_tensor *f = tm_flatten(a, 0, -1);
    CHECK_SHAPE(f, 6);
    tm_free(f); tm_free(t3); tm_free(r); tm_free(t); tm_free(v); tm_free(a);
}

TEST(expand_broadcast_and_as_strided)
{
    tm_tensor *a = tm_arange(0, 3, 1, TM_F32); /* [3] */
    tm_tensor *e = tm_expand(a, (int64_t[]){2, -1}, 2);
    CHECK_SHAPE(e, 2, 3);
    CHECK_INT(tm_strides(e)[0], 0);
    double w[] = {0, 1, 2, 0, 1, 2};
    CHECK_VALUES(e, w, 6, 0, 0);
    CHECK_NULL_ERR(tm_broadcast_to(a, (int64_t[]){2, 4}, 2), TM_ESHAPE,
                   "dim 0 is 3, not 1 or 4");
    tm_tensor *s = tm_as_strided(a, (int64_t[]){2, 2}, (int64_t[]){1, 1}, 2,
                                 0);
    double ws[] = {0, 1, 1, 2};
    CHECK_VALUES(s, ws, 4, 0, 0);
    CHECK_NULL_ERR(tm_as_strided(a, (int64_t[]){2, 2}, (int64_t[]){2, 1}, 2,
                                 0),
                   TM_ERANGE, "reaches element 3");
    int64_t out[TM_MAX_DIMS];
    int nd;
    CHECK_INT(tm_broadcast_shapes((int64_t[]){3, 1}, 2, (int64_t[]){4}, 1,
                                  out, &nd), TM_OK);
    CHECK_INT(nd, 2);
    CHECK_INT(out[1], 4);
    CHECK_STATUS(tm_broadcast_shapes((int64_t[]){3}, 1, (int64_t[]){4}, 1,
                                     out, &nd),
                 TM_ESHAPE, "do not broadcast: 3 vs 4");
    tm_free(s); tm_free(e); tm_free(a);
}

TEST(zero_d_and_zero_size_views)
{
    tm_tensor *s = tm_scalar(5, TM_F64);
    CHECK_INT(tm_ndim(s), 0);
    CHECK_INT(tm_numel(s), 1);
    tm_tensor *u = tm_unsqueeze(s, 0);
    CHECK_SHAPE(u, 1);
    tm_tensor *z = tm_zeros((int64_t[]){0, 3}, 2, TM_F32);
    CHECK_INT(tm_numel(z), 0);
    tm_tensor *zt = tm_transpose(z, 0, 1);
    tm_tensor *zr = tm_reshape(zt, (int64_t[]){3, 0, 5}, 3);
    CHECK_SHAPE(zr, 3, 0, 5);
    tm_tensor *zc = tm_contiguous(zt);
    CHECK_SHAPE(zc, 3, 0);
    tm_free(zc); tm_free(zr); tm_free(zt); tm_free(z); tm_free(u);
    tm_free(s);
}
