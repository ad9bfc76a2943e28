/* test_max_dims.c — tensors have at most TM_MAX_DIMS (8) dims: every path
 * that would make a 9th dim fails with TM_EINVAL and a message naming the
 * limit, and one dim fewer works. */
#include "harness.h"

/* [1, 1, ..., 1] (n ones) for the shapes below; n <= TM_MAX_DIMS + 1. */
static const int64_t ones9[TM_MAX_DIMS + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};

TEST(max_dims_is_8)
{
    CHECK_INT(TM_MAX_DIMS, 8);
}

TEST(max_dims_creation_refuses_a_9th_dim)
{
    CHECK_NULL_ERR(tm_zeros(ones9, TM_MAX_DIMS + 1, TM_F32), TM_EINVAL, "8");
    CHECK_NULL_ERR(tm_empty(ones9, TM_MAX_DIMS + 1, TM_F64), TM_EINVAL, "8");
    tm_tensor *t = tm_zeros(ones9, TM_MAX_DIMS, TM_F32);
    CHECK(t && tm_ndim(t) == TM_MAX_DIMS);
    tm_free(t);
}

TEST(max_dims_views_refuse_a_9th_dim)
{
    tm_tensor *t = tm_zeros(ones9, TM_MAX_DIMS, TM_F32);
    REQUIRE(t);
    CHECK_NULL_ERR(tm_unsqueeze(t, 0), TM_EINVAL, "max 8");
    CHECK_NULL_ERR(tm_unsqueeze(t, -1), TM_EINVAL, "max 8");
    CHECK_NULL_ERR(tm_view(t, ones9, TM_MAX_DIMS + 1), TM_EINVAL, "8");
    CHECK_NULL_ERR(tm_reshape(t, ones9, TM_MAX_DIMS + 1), TM_EINVAL, "8");
    CHECK_NULL_ERR(tm_expand(t, ones9, TM_MAX_DIMS + 1), TM_EINVAL, "8");
    CHECK_NULL_ERR(tm_broadcast_to(t, ones9, TM_MAX_DIMS + 1), TM_EINVAL,
                   "8");
    CHECK_NULL_ERR(tm_repeat(t, ones9, TM_MAX_DIMS + 1), TM_EINVAL, "8");
    tm_tensor *pair[2] = {t, t};
    CHECK_NULL_ERR(tm_stack(pair, 2, 0), TM_EINVAL, "8");
    /* the largest shape still works */
    tm_tensor *s = tm_squeeze(t, 0);
    REQUIRE(s);
    tm_tensor *u = tm_unsqueeze(s, 3);
    CHECK(u && tm_ndim(u) == TM_MAX_DIMS);
    tm_free(u);
    tm_free(s);
    tm_free(t);
}

TEST(max_dims_index_and_one_hot_refuse_a_9th_dim)
{
    tm_tensor *idx = tm_zeros(ones9, TM_MAX_DIMS, TM_I64);
    REQUIRE(idx);
    CHECK_NULL_ERR(tm_one_hot(idx, 3), TM_EINVAL, "8");
    tm_free(idx);
}
