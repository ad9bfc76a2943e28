/* test_index.c — gather, scatter, scatter_add, index_select, one_hot:
 * numpy reference cases (tests/gen/gen_index.py) plus error paths,
 * in-place behaviour and thread-count independence. */
#include "ref_dispatch.h"

#include "../../tensor/core/tensor_impl.h" /* storage version counter */

TEST(index_reference_cases)
{
    tt_run_ref_file("index.ref", tt_index_dispatch);
}

static tm_tensor *i64s(const double *v, int64_t n)
{
    return tt_tensor(v, (int64_t[]){n}, 1, TM_I64);
}

TEST(gather_rejects_bad_arguments)
{
    tm_tensor *t = tm_zeros((int64_t[]){2, 5}, 2, TM_F32);
    tm_tensor *fi = tm_zeros((int64_t[]){2, 2}, 2, TM_F32);
    tm_tensor *i1 = tm_zeros((int64_t[]){2}, 1, TM_I64);
    tm_tensor *big = tm_zeros((int64_t[]){3, 2}, 2, TM_I64);
    tm_tensor *ok = tm_zeros((int64_t[]){2, 7}, 2, TM_I32);
    REQUIRE(t && fi && i1 && big && ok);
    CHECK_NULL_ERR(tm_gather(NULL, 0, ok), TM_EINVAL,
                   "tm_gather: tensor is NULL");
    CHECK_NULL_ERR(tm_gather(t, 0, NULL), TM_EINVAL,
                   "tm_gather: index is NULL");
    CHECK_NULL_ERR(tm_gather(t, 0, fi), TM_EDTYPE,
                   "tm_gather: index must be i64 or i32, got f32");
    CHECK_NULL_ERR(tm_gather(t, 2, ok), TM_ERANGE,
                   "dim 2 is out of range for a 2-d tensor");
    CHECK_NULL_ERR(tm_gather(t, 0, i1), TM_ESHAPE,
                   "index has 1 dims but the tensor has 2");
    CHECK_NULL_ERR(tm_gather(t, 1, big), TM_ESHAPE,
                   "index shape [3,2] is larger than tensor shape [2,5] at "
                   "dim 0: 3 > 2");
    /* along `dim` the index may be longer than the tensor */
    tm_tensor *g = tm_gather(t, 1, ok);
    CHECK_SHAPE(g, 2, 7);
    tm_free(g);
    tm_tensor *bad = tt_tensor((double[]){0, 1, 2, 3, 4, 7, 0, 0},
                               (int64_t[]){2, 4}, 2, TM_I64);
    CHECK_NULL_ERR(tm_gather(t, 1, bad), TM_ERANGE,
                   "tm_gather: index 7 is out of range for dim 1 of size 5");
    tm_free(bad);
    tm_free(t);
    tm_free(fi);
    tm_free(i1);
    tm_free(big);
    tm_free(ok);
}

TEST(scatter_rejects_bad_arguments)
{
    tm_tensor *t = tm_zeros((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *ix = tm_zeros((int64_t[]){2, 3}, 2, TM_I64);
    tm_tensor *src = tm_ones((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *src64 = tm_ones((int64_t[]){2, 3}, 2, TM_F64);
    tm_tensor *small = tm_ones((int64_t[]){2, 2}, 2, TM_F32);
    tm_tensor *src1 = tm_ones((int64_t[]){6}, 1, TM_F32);
    tm_tensor *fi = tm_zeros((int64_t[]){2, 3}, 2, TM_U8);
    REQUIRE(t && ix && src && src64 && small && src1 && fi);
    CHECK_NULL_ERR(tm_scatter(t, 0, ix, NULL), TM_EINVAL,
                   "tm_scatter: src is NULL");
    CHECK_NULL_ERR(tm_scatter(NULL, 0, ix, src), TM_EINVAL,
                   "tm_scatter: tensor is NULL");
    CHECK_NULL_ERR(tm_scatter_add(t, 0, ix, src64), TM_EDTYPE,
                   "tm_scatter_add: src dtype f64 does not match the "
                   "tensor's f32");
    CHECK_NULL_ERR(tm_scatter(t, 0, ix, small), TM_ESHAPE,
                   "index shape [2,3] is larger than src shape [2,2] at dim "
                   "1: 3 > 2");
    CHECK_NULL_ERR(tm_scatter(t, 0, ix, src1), TM_ESHAPE,
                   "src has 1 dims but index has 2");
    CHECK_NULL_ERR(tm_scatter_value(t, 0, fi, 1.0), TM_EDTYPE,
                   "tm_scatter_value: index must be i64 or i32, got u8");
    CHECK_NULL_ERR(tm_scatter_value(t, -3, ix, 1.0), TM_ERANGE,
                   "tm_scatter_value: dim -3 is out of range");
    CHECK_STATUS(tm_scatter_(t, 0, ix, src64), TM_EDTYPE,
                 "tm_scatter_: src dtype f64");
    CHECK_STATUS(tm_scatter_add_(t, 0, NULL, src), TM_EINVAL,
                 "tm_scatter_add_: index is NULL");
    CHECK_STATUS(tm_scatter_add_(NULL, 0, ix, src), TM_EINVAL,
                 "tm_scatter_add_: tensor is NULL");
    tm_tensor *bad = tt_tensor((double[]){0, 1, 2, 1, -4, 0},
                               (int64_t[]){2, 3}, 2, TM_I32);
    CHECK_STATUS(tm_scatter_add_(t, 0, bad, src), TM_ERANGE,
                 "tm_scatter_add_: index -4 is out of range for dim 0 of "
                 "size 3");
    tm_free(bad);
    tm_free(t);
    tm_free(ix);
    tm_free(src);
    tm_free(src64);
    tm_free(small);
    tm_free(src1);
    tm_free(fi);
}

TEST(failed_inplace_scatter_leaves_the_tensor_unchanged)
{
    /* valid indices come first in row-major order, the bad one last: a
     * kernel that wrote as it checked would have changed t already */
    tm_tensor *t = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *ix = tt_tensor((double[]){0, 1, 0, 1, 0, 2},
                              (int64_t[]){2, 3}, 2, TM_I64);
    tm_tensor *src = tm_ones((int64_t[]){2, 3}, 2, TM_F32);
    REQUIRE(t && ix && src);
    uint64_t v0 = atomic_load(&t->storage->version);
    CHECK_STATUS(tm_scatter_(t, 0, ix, src), TM_ERANGE,
                 "tm_scatter_: index 2 is out of range for dim 0 of size 2");
    CHECK_STATUS(tm_scatter_add_(t, 0, ix, src), TM_ERANGE,
                 "index 2 is out of range");
    double zeros[6] = {0};
    CHECK_VALUES(t, zeros, 6, 0, 0);
    CHECK(atomic_load(&t->storage->version) == v0);
    /* a successful in-place scatter bumps the version */
    REQUIRE(tm_set(ix, (int64_t[]){1, 2}, 1) == TM_OK);
    v0 = atomic_load(&t->storage->version);
    CHECK_INT(tm_scatter_add_(t, 0, ix, src), TM_OK);
    CHECK(atomic_load(&t->storage->version) > v0);
    double want[] = {1, 1, 1, 1, 1, 1};
    CHECK_VALUES(t, want, 6, 0, 0);
    tm_free(t);
    tm_free(ix);
    tm_free(src);
}

TEST(inplace_scatter_into_an_expanded_tensor_is_an_error)
{
    /* [1] expanded to [3]: scatter_ used to write through the stride-0 dim,
     * so every position aliased one element */
    tm_tensor *base = tm_full((int64_t[]){1}, 1, 5, TM_F32);
    tm_tensor *t = tm_expand(base, (int64_t[]){3}, 1);
    tm_tensor *ix = tt_tensor((double[]){0, 2}, (int64_t[]){2}, 1, TM_I64);
    tm_tensor *src = tm_ones((int64_t[]){2}, 1, TM_F32);
    REQUIRE(base && t && ix && src);
    CHECK_STATUS(tm_scatter_(t, 0, ix, src), TM_EINVAL,
                 "tm_scatter_: cannot write in place into an expanded tensor");
    CHECK_STATUS(tm_scatter_add_(t, 0, ix, src), TM_EINVAL,
                 "tm_scatter_add_: cannot write in place into an expanded");
    double five[] = {5};
    CHECK_VALUES(base, five, 1, 0, 0);
    tm_free(src);
    tm_free(ix);
    tm_free(t);
    tm_free(base);
}

TEST(scatter_source_overlapping_the_target_reads_old_values)
{
    /* t[index[i]] = t[i] with t as its own source: every read must see
     * the values from before the call (a rotation, not a smear) */
    tm_tensor *t = tt_tensor((double[]){10, 20, 30, 40}, (int64_t[]){4}, 1,
                             TM_F64);
    tm_tensor *ix = i64s((double[]){1, 2, 3, 0}, 4);
    REQUIRE(t && ix);
    CHECK_INT(tm_scatter_(t, 0, ix, t), TM_OK);
    double want[] = {40, 10, 20, 30};
    CHECK_VALUES(t, want, 4, 0, 0);
    /* an I64 target that is also the index */
    tm_tensor *u = i64s((double[]){1, 0, 2}, 3);
    REQUIRE(u);
    CHECK_INT(tm_scatter_(u, 0, u, u), TM_OK);
    double want_u[] = {0, 1, 2};
    CHECK_VALUES(u, want_u, 3, 0, 0);
    tm_free(u);
    tm_free(t);
    tm_free(ix);
}

TEST(index_select_and_one_hot_reject_bad_arguments)
{
    tm_tensor *t = tm_zeros((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *i2 = tm_zeros((int64_t[]){2, 2}, 2, TM_I64);
    tm_tensor *fi = tm_zeros((int64_t[]){2}, 1, TM_F32);
    tm_tensor *s = tm_scalar(1, TM_F32);
    tm_tensor *two = tm_zeros((int64_t[]){2}, 1, TM_I64);
    tm_tensor *empty = tm_zeros((int64_t[]){0}, 1, TM_I64);
    REQUIRE(t && i2 && fi && s && two && empty);
    CHECK_NULL_ERR(tm_index_select(t, 0, i2), TM_ESHAPE,
                   "tm_index_select: index must be 1-D or 0-d, got shape "
                   "[2,2]");
    CHECK_NULL_ERR(tm_index_select(t, 0, fi), TM_EDTYPE,
                   "index must be i64 or i32, got f32");
    CHECK_NULL_ERR(tm_index_select(t, 2, two), TM_ERANGE,
                   "dim 2 is out of range");
    CHECK_NULL_ERR(tm_index_select(s, 0, two), TM_ESHAPE,
                   "a 0-d tensor takes exactly one index, got 2");
    CHECK_NULL_ERR(tm_index_select(NULL, 0, two), TM_EINVAL,
                   "tensor is NULL");
    CHECK_NULL_ERR(tm_one_hot(fi, 3), TM_EDTYPE,
                   "tm_one_hot: index must be an integer tensor, got f32");
    CHECK_NULL_ERR(tm_one_hot(empty, -1), TM_EINVAL,
                   "cannot infer num_classes from an empty index");
    CHECK_NULL_ERR(tm_one_hot(two, 0), TM_ERANGE,
                   "index value 0 is out of range for 0 classes");
    CHECK_NULL_ERR(tm_one_hot(NULL, 3), TM_EINVAL, "index is NULL");
    CHECK_NULL_ERR(tm_one_hot(two, (int64_t)1 << 62), TM_EOVERFLOW,
                   "tm_one_hot: shape [2,4611686018427387904]");
    tm_free(t);
    tm_free(i2);
    tm_free(fi);
    tm_free(s);
    tm_free(two);
    tm_free(empty);
}

/* A [rows, cols] tensor of distinct values and a random index. */
static void big_inputs(tm_tensor **t, tm_tensor **ix, int64_t rows,
                       int64_t cols, tm_dtype dt)
{
    tm_tensor *a = tm_arange(0, (double)(rows * cols), 1, dt);
    *t = a ? tm_view(a, (int64_t[]){rows, cols}, 2) : NULL;
    tm_free(a);
    *ix = tm_empty((int64_t[]){rows, cols}, 2, TM_I64);
    if (!*ix) return;
    int64_t *p = tm_data(*ix);
    uint64_t x = 12345; /* an LCG: any spread of values will do */
    for (int64_t i = 0; i < rows * cols; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (int64_t)((x >> 33) % (uint64_t)rows);
    }
}

TEST(gather_and_scatter_add_do_not_depend_on_thread_count)
{
    tm_tensor *t, *ix;
    big_inputs(&t, &ix, 300, 400, TM_F32); /* 120k elements: 4 parts */
    REQUIRE(t && ix);
    tm_tensor *r[2][3] = {{NULL}};
    int threads[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        tm_set_num_threads(threads[k]);
        r[k][0] = tm_gather(t, 0, ix);
        r[k][1] = tm_scatter_add(t, 0, ix, t);
        tm_tensor *v = tm_select(ix, 1, 5);
        r[k][2] = tm_index_select(t, 0, v);
        tm_free(v);
    }
    tm_set_num_threads(0);
    for (int j = 0; j < 3; j++) {
        REQUIRE(r[0][j] && r[1][j]);
        CHECK_INT(tm_nbytes(r[0][j]), tm_nbytes(r[1][j]));
        CHECK(!memcmp(tm_data(r[0][j]), tm_data(r[1][j]),
                      tm_nbytes(r[0][j])));
    }
    /* spot-check the gather against the definition */
    double g, want, k;
    REQUIRE(tm_get(ix, (int64_t[]){123, 321}, &k) == TM_OK);
    REQUIRE(tm_get(r[0][0], (int64_t[]){123, 321}, &g) == TM_OK);
    REQUIRE(tm_get(t, (int64_t[]){(int64_t)k, 321}, &want) == TM_OK);
    CHECK_NEAR(g, want, 0);
    for (int k2 = 0; k2 < 2; k2++)
        for (int j = 0; j < 3; j++) tm_free(r[k2][j]);
    tm_free(t);
    tm_free(ix);
}

TEST(index_ops_fail_cleanly_when_allocation_fails)
{
    tm_tensor *t = tm_ones((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *ix = i64s((double[]){2, 0, 1}, 3);
    tm_tensor *ix2 = tt_tensor((double[]){2, 0, 1, 1}, (int64_t[]){2, 2}, 2,
                               TM_I32);
    REQUIRE(t && ix && ix2);
    for (int n = 1; n <= 12; n++) {
        tm_tensor *r[4];
        tm_alloc_fail_after(n);
        r[0] = tm_one_hot(ix, 4);
        tm_alloc_fail_after(n);
        r[1] = tm_scatter_value(t, 0, ix2, 5);
        tm_alloc_fail_after(n);
        r[2] = tm_gather(t, 1, ix2);
        tm_alloc_fail_after(n);
        r[3] = tm_index_select(t, 1, ix);
        tm_alloc_fail_after(0);
        for (int j = 0; j < 4; j++) {
            if (!r[j]) CHECK(tm_last_status() == TM_ENOMEM ||
                             strstr(tm_last_error(), "injected"));
            tm_free(r[j]);
        }
    }
    tm_free(t);
    tm_free(ix);
    tm_free(ix2);
}
