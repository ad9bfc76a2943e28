/* test_scatter_reduce.c — tm_scatter_reduce(_): values for each reduction
 * (with and without the tensor's own values), integer rounding of mean,
 * gradients by central differences in F64 (tol 1e-6: sum and mean are
 * linear, prod is linear in each factor and amax / amin are linear
 * between ties, which random leaves do not have, so the difference is
 * exact up to rounding, ~1e-10), and bad input. */
#include "gradcheck.h"

#define TOL 1e-6

static tm_tensor *i64(const int64_t *v, const int64_t *shape, int nd)
{
    return tm_from_buffer(v, shape, nd, TM_I64);
}

/* t = [1, 5, 2], index = [0, 0, 2], src = [3, -1, 4] along dim 0 */
TEST(scatter_reduce_values_of_each_kind)
{
    double tv[] = {1, 5, 2}, sv[] = {3, -1, 4};
    int64_t iv[] = {0, 0, 2};
    tm_tensor *t = tt_tensor(tv, (int64_t[]){3}, 1, TM_F64);
    tm_tensor *s = tt_tensor(sv, (int64_t[]){3}, 1, TM_F64);
    tm_tensor *ix = i64(iv, (int64_t[]){3}, 1);
    REQUIRE(t && s && ix);
    static const double want[5][2][3] = {
        {{3, 5, 6}, {2, 5, 4}},           /* sum: with self, without */
        {{-3, 5, 8}, {-3, 5, 4}},         /* prod */
        {{1, 5, 3}, {1, 5, 4}},           /* mean */
        {{3, 5, 4}, {3, 5, 4}},           /* amax */
        {{-1, 5, 2}, {-1, 5, 4}},         /* amin */
    };
    for (int k = 0; k < 5; k++)
        for (int inc = 0; inc < 2; inc++) {
            tm_tensor *r = tm_scatter_reduce(t, 0, ix, s,
                                             (tm_scatter_reduce_kind)k,
                                             inc == 0);
            REQUIRE(r);
            CHECK_VALUES(r, want[k][inc], 3, 0, 0);
            tm_free(r);
        }
    tm_free(t);
    tm_free(s);
    tm_free(ix);
}

TEST(scatter_reduce_integer_mean_rounds_down_and_nan_propagates)
{
    double tv[] = {5, 7}, sv[] = {-2, -4};
    int64_t iv[] = {0, 0};
    tm_tensor *t = tt_tensor(tv, (int64_t[]){2}, 1, TM_I32);
    tm_tensor *s = tt_tensor(sv, (int64_t[]){2}, 1, TM_I32);
    tm_tensor *ix = i64(iv, (int64_t[]){2}, 1);
    REQUIRE(t && s && ix);
    tm_tensor *r = tm_scatter_reduce(t, 0, ix, s, TM_SCATTER_MEAN, false);
    REQUIRE(r);
    CHECK_INT(tm_dtype_of(r), TM_I32);
    CHECK_VALUES(r, ((double[]){-3, 7}), 2, 0, 0); /* floor(-6 / 2) */
    tm_free(r);
    double fv[] = {1, NAN};
    tm_tensor *f = tt_tensor(fv, (int64_t[]){2}, 1, TM_F32);
    tm_tensor *z = tm_zeros((int64_t[]){2}, 1, TM_F32);
    REQUIRE(f && z);
    r = tm_scatter_reduce(z, 0, ix, f, TM_SCATTER_AMAX, true);
    REQUIRE(r);
    CHECK(isnan(((float *)tm_data(r))[0]));
    tm_free(r);
    tm_free(f);
    tm_free(z);
    tm_free(t);
    tm_free(s);
    tm_free(ix);
}

typedef struct {
    int kind;
    bool include_self;
    const tm_tensor *index;
    int dim;
} sr_ctx;

static tm_tensor *f_sr(tm_tensor *const *in, void *c)
{
    const sr_ctx *k = c;
    return tm_scatter_reduce(in[0], k->dim, k->index, in[1],
                             (tm_scatter_reduce_kind)k->kind,
                             k->include_self);
}

/* A transposed src: the gradient goes back through a view too. */
static tm_tensor *f_sr_transposed_src(tm_tensor *const *in, void *c)
{
    const sr_ctx *k = c;
    tm_tensor *st = tm_transpose(in[1], 0, 1);
    tm_tensor *r = st ? tm_scatter_reduce(in[0], k->dim, k->index, st,
                                          (tm_scatter_reduce_kind)k->kind,
                                          k->include_self)
                      : NULL;
    tm_free(st);
    return r;
}

TEST(scatter_reduce_gradients_by_finite_differences)
{
    /* t [3, 4]; index [4, 4] along dim 0 (collisions), src [5, 4] (a
     * larger src: only its leading block is read) */
    int64_t iv[] = {0, 2, 1, 0, 2, 2, 1, 0, 0, 1, 1, 2, 2, 0, 1, 0};
    tm_tensor *ix = i64(iv, (int64_t[]){4, 4}, 2);
    REQUIRE(ix);
    for (int kind = 0; kind < 5; kind++)
        for (int inc = 0; inc < 2; inc++) {
            tm_tensor *in[2] = {TT_LEAF(11 + (uint64_t)kind, 3, 4),
                                TT_LEAF(29 + (uint64_t)kind, 5, 4)};
            REQUIRE(in[0] && in[1]);
            sr_ctx c = {kind, inc == 0, ix, 0};
            char name[64];
            snprintf(name, sizeof name, "scatter_reduce kind %d self %d",
                     kind, inc == 0);
            CHECK(GRADCHECK(name, f_sr, &c, in, 2, TOL));
            tm_free(in[0]);
            tm_free(in[1]);
            /* dim 1 (negative) with a transposed src */
            tm_tensor *j[2] = {TT_LEAF(41, 4, 3), TT_LEAF(43, 4, 5)};
            REQUIRE(j[0] && j[1]);
            sr_ctx c1 = {kind, inc == 0, ix, -1};
            /* index [4, 4] into t [4, 3] along dim 1: entries < 3 */
            CHECK(GRADCHECK(name, f_sr_transposed_src, &c1, j, 2, TOL));
            tm_free(j[0]);
            tm_free(j[1]);
        }
    tm_free(ix);
}

TEST(scatter_reduce_prod_gradient_with_zeros)
{
    double tv[] = {0, 2, 3}, sv[] = {0, 4, 0, 0, 5};
    int64_t iv[] = {1, 1, 2, 2, 0};
    tm_tensor *in[2] = {tt_tensor(tv, (int64_t[]){3}, 1, TM_F64),
                        tt_tensor(sv, (int64_t[]){5}, 1, TM_F64)};
    tm_tensor *ix = i64(iv, (int64_t[]){5}, 1);
    REQUIRE(in[0] && in[1] && ix);
    tm_requires_grad_(in[0], true);
    tm_requires_grad_(in[1], true);
    for (int inc = 0; inc < 2; inc++) {
        sr_ctx c = {TM_SCATTER_PROD, inc == 0, ix, 0};
        CHECK(GRADCHECK("scatter_reduce prod with zeros", f_sr, &c, in, 2,
                        TOL));
    }
    tm_free(in[0]);
    tm_free(in[1]);
    tm_free(ix);
}

TEST(scatter_reduce_bad_input_and_in_place_atomicity)
{
    double tv[] = {1, 2, 3};
    int64_t iv[] = {0, 5}, ok[] = {0, 1};
    tm_tensor *t = tt_tensor(tv, (int64_t[]){3}, 1, TM_F32);
    tm_tensor *s = tm_ones((int64_t[]){2}, 1, TM_F32);
    tm_tensor *s64 = tm_ones((int64_t[]){2}, 1, TM_F64);
    tm_tensor *bad = i64(iv, (int64_t[]){2}, 1);
    tm_tensor *good = i64(ok, (int64_t[]){2}, 1);
    tm_tensor *b = tm_zeros((int64_t[]){3}, 1, TM_BOOL);
    tm_tensor *bs = tm_zeros((int64_t[]){2}, 1, TM_BOOL);
    REQUIRE(t && s && s64 && bad && good && b && bs);
    CHECK_NULL_ERR(tm_scatter_reduce(t, 0, bad, s, TM_SCATTER_AMAX, true),
                   TM_ERANGE, "index 5 is out of range");
    CHECK_NULL_ERR(tm_scatter_reduce(t, 0, good, s,
                                     (tm_scatter_reduce_kind)9, true),
                   TM_EINVAL, "reduce must be");
    CHECK_NULL_ERR(tm_scatter_reduce(t, 0, good, s64, TM_SCATTER_SUM, true),
                   TM_EDTYPE, "src dtype");
    CHECK_NULL_ERR(tm_scatter_reduce(t, 1, good, s, TM_SCATTER_SUM, true),
                   TM_ERANGE, "dim");
    CHECK_NULL_ERR(tm_scatter_reduce(b, 0, good, bs, TM_SCATTER_MEAN, true),
                   TM_EDTYPE, "bool");
    CHECK_NULL_ERR(tm_scatter_reduce(NULL, 0, good, s, TM_SCATTER_SUM, true),
                   TM_EINVAL, "tensor");
    CHECK_STATUS(tm_scatter_reduce_(t, 0, bad, s, TM_SCATTER_PROD, false),
                 TM_ERANGE, "out of range");
    CHECK_VALUES(t, tv, 3, 0, 0); /* unchanged */
    CHECK_STATUS(tm_scatter_reduce_(t, 0, good, s, TM_SCATTER_PROD, false),
                 TM_OK, "");
    CHECK_VALUES(t, ((double[]){1, 1, 3}), 3, 0, 0);
    tm_free(t);
    tm_free(s);
    tm_free(s64);
    tm_free(bad);
    tm_free(good);
    tm_free(b);
    tm_free(bs);
}
