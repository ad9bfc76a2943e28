/* test_einsum.c — tm_einsum: contractions, traces, implicit outputs,
 * ellipsis broadcasting, errors, out-of-memory at every allocation, and
 * GRADCHECK in F64 (tol 1e-6: each output is a polynomial of degree n in
 * the inputs with O(1) coefficients, for which the central difference
 * errs by ~1e-10). */
#include "gradcheck.h"

#define TOL 1e-6

static tm_tensor *vals(const double *v, const int64_t *shape, int nd)
{
    return tt_tensor(v, shape, nd, TM_F64);
}

TEST(einsum_matmul_trace_outer_and_implicit_output)
{
    tm_tensor *a = vals((double[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2);
    tm_tensor *b = vals((double[]){1, 0, 0, 1, 1, 1}, (int64_t[]){3, 2}, 2);
    REQUIRE(a && b);
    tm_tensor *ab = tm_einsum("ij,jk->ik", (tm_tensor *[]){a, b}, 2);
    tm_tensor *imp = tm_einsum("ij,jk", (tm_tensor *[]){a, b}, 2);
    tm_tensor *tr = ab ? tm_einsum("ii", (tm_tensor *[]){ab}, 1) : NULL;
    tm_tensor *t = tm_einsum(" ij -> ji ", (tm_tensor *[]){a}, 1);
    tm_tensor *s = tm_einsum("ij->", (tm_tensor *[]){a}, 1);
    REQUIRE(ab && imp && tr && t && s);
    CHECK_VALUES(ab, ((double[]){4, 5, 10, 11}), 4, 0, 0);
    CHECK_VALUES(imp, ((double[]){4, 5, 10, 11}), 4, 0, 0);
    CHECK_VALUES(tr, ((double[]){15}), 1, 0, 0);
    CHECK_INT(tm_ndim(tr), 0);
    CHECK_SHAPE(t, 3, 2);
    CHECK_VALUES(t, ((double[]){1, 4, 2, 5, 3, 6}), 6, 0, 0);
    CHECK_VALUES(s, ((double[]){21}), 1, 0, 0);
    tm_free(ab);
    tm_free(imp);
    tm_free(tr);
    tm_free(t);
    tm_free(s);
    tm_free(a);
    tm_free(b);
}

TEST(einsum_ellipsis_broadcasts_and_sorts_implicit_labels)
{
    tm_tensor *a = tm_ones((int64_t[]){2, 1, 3, 4}, 4, TM_F32);
    tm_tensor *b = tm_ones((int64_t[]){5, 4, 2}, 3, TM_F32);
    REQUIRE(a && b);
    tm_tensor *r = tm_einsum("...ij,...jk", (tm_tensor *[]){a, b}, 2);
    tm_tensor *m = tm_ones((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *u = m ? tm_einsum("bA", (tm_tensor *[]){m}, 1) : NULL;
    REQUIRE(r && u);
    CHECK_SHAPE(r, 2, 5, 3, 2);
    CHECK_SHAPE(u, 3, 2); /* implicit: A-Z sort before a-z */
    double v;
    REQUIRE(tm_get(r, (int64_t[]){1, 4, 2, 1}, &v) == TM_OK);
    CHECK(v == 4.0);
    tm_free(r);
    tm_free(u);
    tm_free(m);
    tm_free(a);
    tm_free(b);
}

TEST(einsum_errors_name_the_problem)
{
    tm_tensor *a = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *b = tm_zeros((int64_t[]){4, 5}, 2, TM_F32);
    REQUIRE(a && b);
    tm_tensor *ab[] = {a, b};
    CHECK_NULL_ERR(tm_einsum("ij,jk", ab, 2), TM_ESHAPE,
                   "tm_einsum: subscript j has size 4 in operand 1");
    CHECK_NULL_ERR(tm_einsum("ij", ab, 2), TM_EINVAL, "1 terms but 2");
    CHECK_NULL_ERR(tm_einsum("ij,jk", ab, 1), TM_EINVAL, "more terms");
    CHECK_NULL_ERR(tm_einsum("i#", ab, 1), TM_EINVAL, "invalid subscript '#'");
    CHECK_NULL_ERR(tm_einsum("ij->ii", ab, 1), TM_EINVAL, "more than once");
    CHECK_NULL_ERR(tm_einsum("ij->k", ab, 1), TM_EINVAL, "not appear");
    CHECK_NULL_ERR(tm_einsum("ijk", ab, 1), TM_ESHAPE, "has 2 dims");
    CHECK_NULL_ERR(tm_einsum("i.j", ab, 1), TM_EINVAL, "bad ellipsis");
    CHECK_NULL_ERR(tm_einsum(NULL, ab, 1), TM_EINVAL, "equation is NULL");
    CHECK_NULL_ERR(tm_einsum("ij", ab, 0), TM_EINVAL, "operands");
    CHECK_NULL_ERR(tm_einsum("ij", (tm_tensor *[]){NULL}, 1), TM_EINVAL,
                   "operand 0 is NULL");
    tm_free(a);
    tm_free(b);
}

static tm_status einsum_chain(void)
{
    tm_tensor *a = tm_ones((int64_t[]){2, 3, 3}, 3, TM_F32);
    tm_tensor *b = tm_ones((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *c = tm_ones((int64_t[]){4, 5}, 2, TM_F32);
    tm_tensor *r = a && b && c ? tm_einsum("bii,ij,jk->bk",
                                           (tm_tensor *[]){a, b, c}, 3)
                               : NULL;
    tm_status st = r ? TM_OK : tm_last_status();
    tm_free(a);
    tm_free(b);
    tm_free(c);
    tm_free(r);
    return st;
}

TEST(einsum_survives_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(einsum_chain, 5);
}

typedef struct {
    const char *eq;
    int n;
} ectx;

static tm_tensor *g_einsum(tm_tensor *const *in, void *c)
{
    const ectx *k = c;
    return tm_einsum(k->eq, in, k->n);
}

/* The same with the first operand transposed (non-contiguous). */
static tm_tensor *g_einsum_t(tm_tensor *const *in, void *c)
{
    const ectx *k = c;
    tm_tensor *ops[3] = {tm_transpose(in[0], 0, 1), in[1], k->n > 2 ? in[2]
                                                                    : NULL};
    tm_tensor *r = ops[0] ? tm_einsum(k->eq, ops, k->n) : NULL;
    tm_free(ops[0]);
    return r;
}

TEST(einsum_gradients_match_finite_differences)
{
    tm_tensor *a = TT_LEAF(1, 3, 4), *b = TT_LEAF(2, 4, 2);
    tm_tensor *c = TT_LEAF(3, 2, 3), *sq = TT_LEAF(4, 3, 3, 2);
    tm_tensor *v = TT_LEAF(5, 3), *w = TT_LEAF(6, 1, 3);
    REQUIRE(a && b && c && sq && v && w);
    ectx mm = {"ij,jk->ki", 2}, ch = {"ij,jk,ki->", 3};
    ectx tr = {"iij->j", 1}, bc = {"...i,...i->...", 2};
    ectx mt = {"ji,jk->ik", 2};
    GRADCHECK("matmul", g_einsum, &mm, ((tm_tensor *[]){a, b}), 2, TOL);
    GRADCHECK("chain", g_einsum, &ch, ((tm_tensor *[]){a, b, c}), 3, TOL);
    GRADCHECK("trace", g_einsum, &tr, &sq, 1, TOL);
    GRADCHECK("broadcast", g_einsum, &bc, ((tm_tensor *[]){v, w}), 2, TOL);
    GRADCHECK("transposed", g_einsum_t, &mt, ((tm_tensor *[]){a, b}), 2,
              TOL);
    tm_free(a);
    tm_free(b);
    tm_free(c);
    tm_free(sq);
    tm_free(v);
    tm_free(w);
}
