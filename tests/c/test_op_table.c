/* test_op_table.c — every row of the op tables in foundry/ops.h keeps its
 * promises: an op whose result is a float records its autograd node (with
 * the row's name) whenever an input requires grad, and its gradient
 * reaches that input; an op without a gradient gives BOOL; and the row's
 * class matches what the op does with integer inputs (FLOAT ops give F32,
 * PRED ops BOOL, INT and BITS ops stay integers; BITS ops refuse float
 * operands).  A float op whose node name is
 * missing, or whose front end forgets to record, fails here instead of
 * silently losing its gradient. */
#include "harness.h"

enum { TT_FLOAT, TT_INT, TT_PRED, TT_BITS };

typedef struct {
    int op;
    const char *name, *grad;
    int cls;
} tt_row;

#define TT_ROW(E, name, cls, dt, grad) {TM_OP_##E, name, grad, TT_##cls},
static const tt_row tt_unary[] = {TM_UNARY_OPS(TT_ROW)};
static const tt_row tt_binary[] = {TM_BINARY_OPS(TT_ROW)};
#undef TT_ROW
#define TT_ROW(E, name, cls, dt, grad) {TM_RED_##E, name, grad, TT_##cls},
static const tt_row tt_reduce[] = {TM_REDUCE_OPS(TT_ROW)};
#undef TT_ROW

#define TT_COUNT(a) ((int)(sizeof a / sizeof a[0]))

/* A [2,3] F64 leaf that requires grad, with values inside every op's
 * domain (positive, away from kinks and from 0 and 1). */
static tm_tensor *tt_leaf(double shift)
{
    const double v[6] = {0.3, 0.7, 1.2, 1.9, 0.45, 2.5};
    tm_tensor *t = tm_empty((int64_t[]){2, 3}, 2, TM_F64);
    if (!t) return NULL;
    double *p = tm_data(t);
    for (int i = 0; i < 6; i++) p[i] = v[i] + shift;
    if (tm_requires_grad_(t, true)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

/* out came from op `row` applied to the leaves xs[0..n) (grad mode on):
 * checks its node and that backward reaches every leaf.  Frees out. */
static void tt_check_recorded(const char *family, const tt_row *row,
                              tm_tensor *out, tm_tensor **xs, int n)
{
    if (row->cls == TT_BITS) { /* bitwise: float operands are refused */
        if (out || tm_last_status() != TM_EDTYPE)
            tt_fail(__FILE__, __LINE__, "%s %s: a bitwise op must refuse "
                    "float operands with TM_EDTYPE", family, row->name);
        tm_free(out);
        return;
    }
    if (!out) {
        tt_fail(__FILE__, __LINE__, "%s %s failed: %s", family, row->name,
                tm_last_error());
        return;
    }
    if (row->cls == TT_PRED) {
        if (tm_dtype_of(out) != TM_BOOL || tm_grad_fn_name(out))
            tt_fail(__FILE__, __LINE__, "%s %s: a predicate must give "
                    "BOOL without a node", family, row->name);
        tm_free(out);
        return;
    }
    const char *got = tm_grad_fn_name(out);
    if (!row->grad) {
        tt_fail(__FILE__, __LINE__, "%s %s gives %s but its table row has no "
                "gradient: its result must be BOOL, or the row needs a node "
                "name", family, row->name, tm_dtype_name(tm_dtype_of(out)));
        tm_free(out);
        return;
    }
    if (!got || strcmp(got, row->grad)) {
        tt_fail(__FILE__, __LINE__, "%s %s: the result recorded node %s, "
                "the table says %s", family, row->name, got ? got : "none",
                row->grad);
        tm_free(out);
        return;
    }
    tm_tensor *s = tm_sum(out, NULL, 0, false);
    tm_free(out);
    if (!s || tm_backward(s)) {
        tt_fail(__FILE__, __LINE__, "%s %s: backward failed: %s", family,
                row->name, tm_last_error());
        tm_free(s);
        return;
    }
    tm_free(s);
    for (int i = 0; i < n; i++) {
        tm_tensor *g = tm_grad(xs[i]);
        if (!g || tm_numel(g) != tm_numel(xs[i]))
            tt_fail(__FILE__, __LINE__, "%s %s: input %d got no gradient",
                    family, row->name, i);
        tm_zero_grad(xs[i]);
    }
}

/* The row's class against what the op makes of integer operands. */
static void tt_check_class(const char *family, const tt_row *row,
                           tm_tensor *out)
{
    if (!out) {
        tt_fail(__FILE__, __LINE__, "%s %s on i32 failed: %s", family,
                row->name, tm_last_error());
        return;
    }
    tm_dtype dt = tm_dtype_of(out);
    bool ok = row->cls == TT_FLOAT  ? dt == TM_F32
              : row->cls == TT_PRED ? dt == TM_BOOL
                                    : tm_dtype_is_integer(dt);
    if (!ok)
        tt_fail(__FILE__, __LINE__, "%s %s of i32 gives %s, which its class "
                "does not allow", family, row->name, tm_dtype_name(dt));
    tm_free(out);
}

static tm_tensor *tt_ints(int64_t lo)
{
    return tm_arange((double)lo, (double)lo + 6, 1, TM_I32);
}

TEST(every_unary_op_records_its_gradient_as_its_table_row_says)
{
    tm_tensor *x = tt_leaf(0);
    tm_tensor *xi = tt_ints(1);
    REQUIRE(x && xi);
    for (int k = 0; k < TT_COUNT(tt_unary); k++) {
        const tt_row *row = &tt_unary[k];
        tt_check_recorded("unary", row, tm_unary(row->op, x), &x, 1);
        tt_check_class("unary", row, tm_unary(row->op, xi));
    }
    CHECK_INT(TT_COUNT(tt_unary), TM_UNARY_OP_COUNT);
    tm_free(x);
    tm_free(xi);
}

TEST(every_binary_op_records_its_gradient_as_its_table_row_says)
{
    tm_tensor *xs[2] = {tt_leaf(0), tt_leaf(0.25)};
    tm_tensor *ai = tt_ints(1), *bi = tt_ints(2);
    REQUIRE(xs[0] && xs[1] && ai && bi);
    for (int k = 0; k < TT_COUNT(tt_binary); k++) {
        const tt_row *row = &tt_binary[k];
        tt_check_recorded("binary", row, tm_binary(row->op, xs[0], xs[1]), xs,
                          2);
        tt_check_recorded("binary (tensor op scalar)", row,
                          tm_binary_scalar(row->op, xs[0], 1.5), xs, 1);
        tt_check_recorded("binary (scalar op tensor)", row,
                          tm_binary_rscalar(row->op, 1.5, xs[0]), xs, 1);
        tt_check_class("binary", row, tm_binary(row->op, ai, bi));
    }
    CHECK_INT(TT_COUNT(tt_binary), TM_BINARY_OP_COUNT);
    tm_free(xs[0]);
    tm_free(xs[1]);
    tm_free(ai);
    tm_free(bi);
}

TEST(every_reduction_records_its_gradient_as_its_table_row_says)
{
    tm_tensor *x = tt_leaf(0);
    tm_tensor *xi = tt_ints(1);
    REQUIRE(x && xi);
    for (int k = 0; k < TT_COUNT(tt_reduce); k++) {
        const tt_row *row = &tt_reduce[k];
        /* the parameter: var/std's correction, norm's order */
        double p = row->op == TM_RED_NORM                               ? 2
                   : row->op == TM_RED_VAR || row->op == TM_RED_STD ? 1
                                                                    : 0;
        tt_check_recorded("reduce", row, tm_reduce(row->op, x, NULL, 0, p,
                                                   false),
                          &x, 1);
        tt_check_recorded("reduce (dim 1, keepdim)", row,
                          tm_reduce(row->op, x, (int[]){1}, 1, p, true), &x,
                          1);
        tt_check_class("reduce", row,
                       tm_reduce(row->op, xi, NULL, 0, p, false));
    }
    CHECK_INT(TT_COUNT(tt_reduce), TM_REDUCE_OP_COUNT);
    tm_free(x);
    tm_free(xi);
}
