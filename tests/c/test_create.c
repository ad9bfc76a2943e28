/* test_create.c — creation functions, wrapping caller memory, element
 * access and copies.  Expected values are written out by hand from the
 * definitions in tensor.h (small integers and exact binary fractions). */
#include "harness.h"

TEST(zeros_ones_full_scalar_values_and_dtypes)
{
    tm_tensor *z = tm_zeros((int64_t[]){2, 3}, 2, TM_I16);
    tm_tensor *o = tm_ones((int64_t[]){4}, 1, TM_BF16);
    tm_tensor *f = tm_full((int64_t[]){2, 2}, 2, -1.5, TM_F16);
    tm_tensor *s = tm_scalar(7.25, TM_F64);
    double w0[6] = {0}, w1[4] = {1, 1, 1, 1}, wf[4] = {-1.5, -1.5, -1.5, -1.5};
    CHECK_VALUES(z, w0, 6, 0, 0);
    CHECK_VALUES(o, w1, 4, 0, 0);
    CHECK_VALUES(f, wf, 4, 0, 0);
    CHECK_INT(tm_dtype_of(z), TM_I16);
    CHECK_INT(tm_ndim(s), 0);
    double v;
    CHECK_INT(tm_item(s, &v), TM_OK);
    CHECK_NEAR(v, 7.25, 0);
    tm_tensor *like = tm_full_like(z, 3);
    double w3[6] = {3, 3, 3, 3, 3, 3};
    CHECK_VALUES(like, w3, 6, 0, 0);
    CHECK_INT(tm_dtype_of(like), TM_I16);
    tm_free(like); tm_free(z); tm_free(o); tm_free(f); tm_free(s);
}

TEST(arange_linspace_eye)
{
    tm_tensor *a = tm_arange(1, 2, 0.25, TM_F32);
    double wa[] = {1, 1.25, 1.5, 1.75};
    CHECK_VALUES(a, wa, 4, 0, 0);
    tm_tensor *d = tm_arange(5, 0, -2, TM_I32); /* 5 3 1 */
    double wd[] = {5, 3, 1};
    CHECK_VALUES(d, wd, 3, 0, 0);
    tm_tensor *l = tm_linspace(-1, 1, 5, TM_F64);
    double wl[] = {-1, -0.5, 0, 0.5, 1};
    CHECK_VALUES(l, wl, 5, 0, 0);
    tm_tensor *l1 = tm_linspace(3, 9, 1, TM_F32);
    double wl1[] = {3};
    CHECK_VALUES(l1, wl1, 1, 0, 0);
    tm_tensor *e = tm_eye(2, 3, TM_U8);
    double we[] = {1, 0, 0, 0, 1, 0};
    CHECK_VALUES(e, we, 6, 0, 0);
    CHECK_NULL_ERR(tm_arange(0, 1, 0, TM_F32), TM_EINVAL,
                   "step 0 cannot go from 0 to 1");
    CHECK_NULL_ERR(tm_arange(0, 1, -1, TM_F32), TM_EINVAL, "step -1");
    CHECK_NULL_ERR(tm_arange(0, 1e300, 1e-300, TM_F32), TM_EOVERFLOW,
                   "too many");
    CHECK_NULL_ERR(tm_linspace(0, 1, -2, TM_F32), TM_EINVAL,
                   "steps -2 is negative");
    tm_free(a); tm_free(d); tm_free(l); tm_free(l1); tm_free(e);
}

TEST(bad_shapes_and_dtypes_are_reported)
{
    CHECK_NULL_ERR(tm_zeros((int64_t[]){1LL << 40, 1LL << 40}, 2, TM_F32),
                   TM_EOVERFLOW,
                   "tm_zeros: shape [1099511627776,1099511627776]: element "
                   "count overflows");
    CHECK_NULL_ERR(tm_empty((int64_t[]){1LL << 62}, 1, TM_F64), TM_EOVERFLOW,
                   "element count overflows");
    CHECK_NULL_ERR(tm_ones((int64_t[]){2, -3}, 2, TM_F32), TM_EINVAL,
                   "shape [2,-3] has a negative size");
    /* a zero dim neither hides a negative dim after it nor lets the other
     * dims overflow (their product is a stride) */
    CHECK_NULL_ERR(tm_ones((int64_t[]){0, -3}, 2, TM_F32), TM_EINVAL,
                   "shape [0,-3] has a negative size");
    CHECK_NULL_ERR(tm_zeros((int64_t[]){0, 1LL << 40, 1LL << 40}, 3, TM_F32),
                   TM_EOVERFLOW, "element count overflows");
    tm_tensor *e = tm_zeros((int64_t[]){0, 1LL << 40}, 2, TM_F32);
    CHECK(e && tm_numel(e) == 0);
    tm_free(e);
    CHECK_NULL_ERR(tm_zeros((int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 9,
                            TM_F32),
                   TM_EINVAL, "ndim 9 is outside [0, 8]");
    /* quantized dtypes are tensor dtypes whose last dim is whole blocks
     * (tests/c/test_quant_tensor.c) */
    CHECK_NULL_ERR(tm_zeros((int64_t[]){2}, 1, TM_Q8_0), TM_ESHAPE,
                   "the last dim 2 of a q8_0 tensor must be a multiple of "
                   "its block of 32");
    CHECK_NULL_ERR(tm_zeros((int64_t[]){2}, 1, (tm_dtype)31), TM_EDTYPE,
                   "dtype 31 (invalid) is not a dtype");
    CHECK_NULL_ERR(tm_zeros(NULL, 2, TM_F32), TM_EINVAL,
                   "shape is NULL with ndim 2");
    CHECK_NULL_ERR(tm_from_buffer(NULL, (int64_t[]){2}, 1, TM_F32), TM_EINVAL,
                   "data is NULL");
    /* a zero dim makes any other size fine */
    tm_tensor *z = tm_zeros((int64_t[]){0, 1LL << 62}, 2, TM_F32);
    CHECK(z && tm_numel(z) == 0);
    tm_free(z);
}

static int released;
static void count_release(void *data, void *user)
{
    (void)data;
    released += *(int *)user;
}

TEST(wrap_shares_caller_memory_and_releases_once)
{
    float buf[6] = {0, 1, 2, 3, 4, 5};
    int one = 1;
    released = 0;
    tm_tensor *t = tm_wrap(buf, (int64_t[]){2, 3}, NULL, 2, TM_F32,
                           count_release, &one);
    REQUIRE(t);
    CHECK(tm_data(t) == buf);
    CHECK_INT(tm_storage_kind_of(tm_storage_of(t)), TM_STORAGE_BORROWED);
    tm_tensor *v = tm_transpose(t, 0, 1);
    CHECK_INT(tm_set(v, (int64_t[]){2, 1}, 9), TM_OK); /* buf[5] */
    CHECK_NEAR(buf[5], 9, 0);
    tm_free(t);
    CHECK_INT(released, 0); /* the view still holds the storage */
    tm_free(v);
    CHECK_INT(released, 1);
    /* strided wrap: every other element */
    tm_tensor *s = tm_wrap(buf, (int64_t[]){3}, (int64_t[]){2}, 1, TM_F32,
                           NULL, NULL);
    double ws[] = {0, 2, 4};
    CHECK_VALUES(s, ws, 3, 0, 0);
    tm_free(s);
    /* a failed wrap still releases, so ownership always passes */
    released = 0;
    CHECK_NULL_ERR(tm_wrap(buf, (int64_t[]){-1}, NULL, 1, TM_F32,
                           count_release, &one),
                   TM_EINVAL, "negative size");
    CHECK_INT(released, 1);
    CHECK_NULL_ERR(tm_wrap(buf, (int64_t[]){3}, (int64_t[]){-1}, 1, TM_F32,
                           NULL, NULL),
                   TM_EINVAL, "stride -1 of dim 0");
}

TEST(storage_views_are_bounds_checked)
{
    float buf[8] = {0};
    tm_storage *s = tm_storage_wrap(buf, sizeof buf, TM_STORAGE_MAPPED, NULL,
                                    NULL);
    REQUIRE(s);
    tm_tensor *t = tm_tensor_from_storage(s, 2, (int64_t[]){2, 3}, NULL, 2,
                                          TM_F32);
    CHECK(t && tm_data(t) == buf + 2);
    CHECK_NULL_ERR(tm_tensor_from_storage(s, 3, (int64_t[]){2, 3}, NULL, 2,
                                          TM_F32),
                   TM_ERANGE, "view reaches element 8 but storage holds 8");
    CHECK_NULL_ERR(tm_tensor_from_storage(s, 0, (int64_t[]){2},
                                          (int64_t[]){1LL << 60}, 1, TM_F32),
                   TM_ERANGE, "stride 1152921504606846976 of dim 0");
    tm_storage_free(s); /* t keeps its own reference */
    double w[6] = {0};
    CHECK_VALUES(t, w, 6, 0, 0);
    tm_free(t);
}

TEST(an_empty_view_takes_any_strides_over_empty_storage)
{
    /* an empty tensor's own strides (3, 1) exceed its storage of 0 bytes;
     * a view with no element reaches nothing, so it is re-creatable */
    tm_tensor *e = tm_empty((int64_t[]){0, 3}, 2, TM_F32);
    REQUIRE(e);
    tm_tensor *v = tm_as_strided(e, tm_shape(e), tm_strides(e), 2, 0);
    CHECK(v && tm_numel(v) == 0 && tm_strides(v)[0] == 3);
    tm_free(v);
    CHECK_NULL_ERR(tm_as_strided(e, (int64_t[]){0, 3}, (int64_t[]){3, -1}, 2,
                                 0),
                   TM_ERANGE, "stride -1 of dim 1");
    tm_free(e);
}

TEST(read_only_storage_refuses_every_in_place_write)
{
    float buf[6] = {1, 2, 3, 4, 5, 6};
    tm_storage *s = tm_storage_wrap(buf, sizeof buf, TM_STORAGE_BORROWED,
                                    NULL, NULL);
    REQUIRE(s);
    CHECK(!tm_storage_is_readonly(s));
    tm_storage_set_readonly(s);
    CHECK(tm_storage_is_readonly(s));
    tm_tensor *t = tm_tensor_from_storage(s, 0, (int64_t[]){2, 3}, NULL, 2,
                                          TM_F32);
    tm_storage_free(s);
    REQUIRE(t);
    tm_tensor *v = tm_transpose(t, 0, 1); /* views inherit the storage */
    const char *msg = "cannot write into read-only storage";
    CHECK_STATUS(tm_fill_(v, 0), TM_ESTATE, msg);
    CHECK_STATUS(tm_add_scalar_(t, 1), TM_ESTATE, msg);
    CHECK_STATUS(tm_copy_(v, v), TM_ESTATE, msg);
    CHECK_STATUS(tm_set(t, (int64_t[]){0, 0}, 9), TM_ESTATE, msg);
    CHECK_STATUS(tm_unary_(TM_OP_NEG, t), TM_ESTATE, msg);
    CHECK_STATUS(tm_tril_(t, 0), TM_ESTATE, msg);
    CHECK_STATUS(tm_normal_(t, 0, 1, NULL), TM_ESTATE, msg);
    tm_tensor *sum = tm_add(t, t); /* reads are fine */
    CHECK(sum != NULL);
    double want[6] = {1, 2, 3, 4, 5, 6};
    CHECK_VALUES(t, want, 6, 0, 0); /* nothing was written */
    tm_free(sum);
    tm_free(v);
    tm_free(t);
}

TEST(get_set_item_and_their_errors)
{
    tm_tensor *a = tm_zeros((int64_t[]){2, 3}, 2, TM_I32);
    CHECK_INT(tm_set(a, (int64_t[]){-1, -1}, 42.9), TM_OK);
    double v = 0;
    CHECK_INT(tm_get(a, (int64_t[]){1, 2}, &v), TM_OK);
    CHECK_NEAR(v, 42, 0); /* converted to i32: truncated */
    CHECK_STATUS(tm_get(a, (int64_t[]){2, 0}, &v), TM_ERANGE,
                 "index 2 is out of range for dim 0 of size 2");
    CHECK_STATUS(tm_item(a, &v), TM_ESHAPE,
                 "tensor of shape [2,3] has 6 elements, not 1");
    tm_tensor *one = tm_full((int64_t[]){1, 1}, 2, -3, TM_I64);
    int64_t i = 0;
    CHECK_INT(tm_item_i64(one, &i), TM_OK);
    CHECK_INT(i, -3);
    tm_free(one);
    tm_free(a);
}

TEST(copy_broadcasts_converts_and_handles_overlap)
{
    tm_tensor *dst = tm_zeros((int64_t[]){2, 3}, 2, TM_F16);
    double rv[] = {1, 2, 3};
    tm_tensor *row = tt_tensor(rv, (int64_t[]){3}, 1, TM_I64);
    CHECK_INT(tm_copy_(dst, row), TM_OK);
    double w[] = {1, 2, 3, 1, 2, 3};
    CHECK_VALUES(dst, w, 6, 0, 0);
    tm_tensor *big = tm_zeros((int64_t[]){4}, 1, TM_F32);
    CHECK_STATUS(tm_copy_(row, big), TM_ESHAPE,
                 "src shape [4] does not broadcast to dst [3]");
    /* overlapping: shift a[0:4] into a[1:5] must read the old values */
    tm_tensor *a = tm_arange(0, 5, 1, TM_F64);
    tm_tensor *src = tm_slice(a, 0, 0, 4, 1), *d2 = tm_slice(a, 0, 1, 5, 1);
    CHECK_INT(tm_copy_(d2, src), TM_OK);
    double ws[] = {0, 0, 1, 2, 3};
    CHECK_VALUES(a, ws, 5, 0, 0);
    CHECK_INT(tm_fill_(d2, 0.5), TM_OK);
    double wf[] = {0, 0.5, 0.5, 0.5, 0.5};
    CHECK_VALUES(a, wf, 5, 0, 0);
    float out[6];
    CHECK_INT(tm_copy_to_buffer(dst, out, sizeof out, TM_F32), TM_OK);
    CHECK_NEAR(out[5], 3, 0);
    CHECK_STATUS(tm_copy_to_buffer(dst, out, 8, TM_F32), TM_EINVAL,
                 "buffer of 8 bytes is smaller than the 24 bytes needed");
    tm_free(src); tm_free(d2); tm_free(a); tm_free(big); tm_free(row);
    tm_free(dst);
}

TEST(copy_and_fill_into_an_expanded_tensor_are_errors)
{
    tm_tensor *base = tm_zeros((int64_t[]){2, 1}, 2, TM_I32);
    tm_tensor *e = tm_expand(base, (int64_t[]){2, 3}, 2);
    tm_tensor *src = tm_arange(0, 3, 1, TM_I32);
    REQUIRE(base && e && src);
    CHECK_STATUS(tm_copy_(e, src), TM_EINVAL,
                 "tm_copy_: cannot write in place into an expanded tensor: "
                 "dim 1 of size 3 has stride 0");
    CHECK_STATUS(tm_fill_(e, 7), TM_EINVAL,
                 "tm_fill_: cannot write in place into an expanded tensor");
    double zeros[2] = {0};
    CHECK_VALUES(base, zeros, 2, 0, 0);
    tm_free(src);
    tm_free(e);
    tm_free(base);
}

TEST(describe_names_dtype_shape_and_strides)
{
    tm_tensor *a = tm_zeros((int64_t[]){2, 3}, 2, TM_BF16);
    tm_tensor *t = tm_transpose(a, 0, 1);
    char buf[96];
    CHECK(!strcmp(tm_describe(a, buf, sizeof buf), "bf16[2,3]"));
    CHECK(!strcmp(tm_describe(t, buf, sizeof buf),
                  "bf16[3,2], strides [1,3]"));
    tm_free(t);
    tm_free(a);
}
