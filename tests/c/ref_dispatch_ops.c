/* ref_dispatch_ops.c — the dispatchers of the op families
 * (ref_dispatch.h), moved here from the test files so that the CPU tests
 * and the conformance suite run one copy. */
#include "ref_dispatch.h"

#include <stdint.h>
#include <stdlib.h>

/* ------------------------------------- unary elementwise ops (unary.ref) */

typedef struct {
    const char *name;
    tm_unary_op op;
    tm_tensor *(*fn)(const tm_tensor *); /* NULL: takes parameters */
} tt_unary_entry;

static const tt_unary_entry tt_unary_ops[] = {
    {"neg", TM_OP_NEG, tm_neg}, {"abs", TM_OP_ABS, tm_abs},
    {"sign", TM_OP_SIGN, tm_sign}, {"exp", TM_OP_EXP, tm_exp},
    {"log", TM_OP_LOG, tm_log}, {"log1p", TM_OP_LOG1P, tm_log1p},
    {"expm1", TM_OP_EXPM1, tm_expm1}, {"sqrt", TM_OP_SQRT, tm_sqrt},
    {"rsqrt", TM_OP_RSQRT, tm_rsqrt}, {"sin", TM_OP_SIN, tm_sin},
    {"cos", TM_OP_COS, tm_cos}, {"tanh", TM_OP_TANH, tm_tanh},
    {"sigmoid", TM_OP_SIGMOID, tm_sigmoid}, {"relu", TM_OP_RELU, tm_relu},
    {"leaky_relu", TM_OP_LEAKY_RELU, NULL}, {"gelu", TM_OP_GELU, tm_gelu},
    {"gelu_tanh", TM_OP_GELU_TANH, tm_gelu_tanh},
    {"silu", TM_OP_SILU, tm_silu}, {"softplus", TM_OP_SOFTPLUS, NULL},
    {"logical_not", TM_OP_LOGICAL_NOT, tm_logical_not},
    {"floor", TM_OP_FLOOR, tm_floor}, {"ceil", TM_OP_CEIL, tm_ceil},
    {"round", TM_OP_ROUND, tm_round}, {"trunc", TM_OP_TRUNC, tm_trunc},
    {"reciprocal", TM_OP_RECIPROCAL, tm_reciprocal},
    {"square", TM_OP_SQUARE, tm_square}, {"erf", TM_OP_ERF, tm_erf},
    {"log2", TM_OP_LOG2, tm_log2}, {"exp2", TM_OP_EXP2, tm_exp2}, {"isnan", TM_OP_ISNAN, tm_isnan},
    {"isinf", TM_OP_ISINF, tm_isinf},
    {"isfinite", TM_OP_ISFINITE, tm_isfinite},
    {"clamp", TM_OP_CLAMP, NULL},
    {"tan", TM_OP_TAN, tm_tan},
    {"asin", TM_OP_ASIN, tm_asin},
    {"acos", TM_OP_ACOS, tm_acos},
    {"atan", TM_OP_ATAN, tm_atan},
    {"sinh", TM_OP_SINH, tm_sinh},
    {"cosh", TM_OP_COSH, tm_cosh},
    {"asinh", TM_OP_ASINH, tm_asinh},
    {"acosh", TM_OP_ACOSH, tm_acosh},
    {"atanh", TM_OP_ATANH, tm_atanh},
    {"log10", TM_OP_LOG10, tm_log10},
};

/* op names: "<op>" calls the named function (tm_leaky_relu, tm_softplus,
 * tm_clamp with the case's args), "u.<op>" calls tm_unary (default
 * parameters), "<op>_" calls tm_unary_ (tm_clamp_ for clamp) on the input
 * view and returns it. */
tm_status tt_unary_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    const char *name = c->op;
    bool generic = !strncmp(name, "u.", 2), inplace = false;
    char buf[64];
    if (generic) name += 2;
    size_t len = strlen(name);
    if (len > 1 && len < sizeof buf && name[len - 1] == '_') {
        memcpy(buf, name, len - 1);
        buf[len - 1] = '\0';
        name = buf;
        inplace = true;
    }
    const tt_unary_entry *e = NULL;
    for (size_t i = 0; i < sizeof tt_unary_ops / sizeof *tt_unary_ops; i++)
        if (!strcmp(tt_unary_ops[i].name, name)) e = &tt_unary_ops[i];
    if (!e) return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
    if (c->nin != 1)
        return tm_set_error(TM_EINVAL, "%s takes 1 input, not %d", c->op,
                            c->nin);
    tm_tensor *x = c->in[0], *r;
    double lo = tt_arg(c, "lo", NAN), hi = tt_arg(c, "hi", NAN);
    if (inplace) {
        tm_status st = e->op == TM_OP_CLAMP ? tm_clamp_(x, lo, hi)
                                            : tm_unary_(e->op, x);
        if (st) return st;
        r = tm_retain(x);
    } else if (generic) {
        r = tm_unary(e->op, x);
    } else if (e->op == TM_OP_LEAKY_RELU) {
        r = tm_leaky_relu(x, tt_arg(c, "slope", 0.01));
    } else if (e->op == TM_OP_SOFTPLUS) {
        r = tm_softplus(x, tt_arg(c, "beta", 1), tt_arg(c, "threshold", 20));
    } else if (e->op == TM_OP_CLAMP) {
        r = tm_clamp(x, lo, hi);
    } else {
        r = e->fn(x);
    }
    if (!r) return tm_last_status();
    got[0] = r;
    *ngot = 1;
    return TM_OK;
}

/* --------------- binary ops, where, clamp_tensor, masked_fill, tril/triu */

typedef tm_tensor *(*tt_bin_fn)(const tm_tensor *, const tm_tensor *);
typedef tm_tensor *(*tt_bin_s_fn)(const tm_tensor *, double);
typedef tm_status (*tt_bin_i_fn)(tm_tensor *, const tm_tensor *);
typedef tm_status (*tt_bin_is_fn)(tm_tensor *, double);

/* Each op with its named wrappers (NULL where there is none: the generic
 * tm_binary* entry is used instead, so both paths are exercised). */
static const struct {
    const char *name;
    tm_binary_op op;
    tt_bin_fn fn;
    tt_bin_s_fn sfn;
    tt_bin_i_fn ifn;
    tt_bin_is_fn isfn;
} tt_binops[] = {
    {"add", TM_OP_ADD, tm_add, tm_add_scalar, tm_add_, tm_add_scalar_},
    {"sub", TM_OP_SUB, tm_sub, tm_sub_scalar, tm_sub_, NULL},
    {"mul", TM_OP_MUL, tm_mul, tm_mul_scalar, tm_mul_, tm_mul_scalar_},
    {"div", TM_OP_DIV, tm_div, tm_div_scalar, tm_div_, NULL},
    {"pow", TM_OP_POW, tm_pow, tm_pow_scalar, NULL, NULL},
    {"maximum", TM_OP_MAXIMUM, tm_maximum, tm_maximum_scalar, NULL, NULL},
    {"minimum", TM_OP_MINIMUM, tm_minimum, tm_minimum_scalar, NULL, NULL},
    {"eq", TM_OP_EQ, tm_eq, NULL, NULL, NULL},
    {"ne", TM_OP_NE, tm_ne, NULL, NULL, NULL},
    {"lt", TM_OP_LT, tm_lt, NULL, NULL, NULL},
    {"le", TM_OP_LE, tm_le, NULL, NULL, NULL},
    {"gt", TM_OP_GT, tm_gt, NULL, NULL, NULL},
    {"ge", TM_OP_GE, tm_ge, NULL, NULL, NULL},
    {"logical_and", TM_OP_LOGICAL_AND, tm_logical_and, NULL, NULL, NULL},
    {"logical_or", TM_OP_LOGICAL_OR, tm_logical_or, NULL, NULL, NULL},
    {"logical_xor", TM_OP_LOGICAL_XOR, tm_logical_xor, NULL, NULL, NULL},
    {"floor_divide", TM_OP_FLOOR_DIVIDE, tm_floor_divide, NULL, NULL, NULL},
    {"remainder", TM_OP_REMAINDER, tm_remainder, tm_remainder_scalar, NULL,
     NULL},
    {"bitwise_and", TM_OP_BITWISE_AND, tm_bitwise_and, NULL, NULL, NULL},
    {"bitwise_or", TM_OP_BITWISE_OR, tm_bitwise_or, NULL, NULL, NULL},
    {"bitwise_xor", TM_OP_BITWISE_XOR, tm_bitwise_xor, NULL, NULL, NULL},
    {"bitwise_left_shift", TM_OP_BITWISE_LEFT_SHIFT, tm_bitwise_left_shift,
     NULL, NULL, NULL},
    {"bitwise_right_shift", TM_OP_BITWISE_RIGHT_SHIFT,
     tm_bitwise_right_shift, NULL, NULL, NULL},
    {"fmod", TM_OP_FMOD, tm_fmod, tm_fmod_scalar, NULL, NULL},
    {"atan2", TM_OP_ATAN2, tm_atan2, NULL, NULL, NULL},
    {"logaddexp", TM_OP_LOGADDEXP, tm_logaddexp, NULL, NULL, NULL},
    {"logaddexp2", TM_OP_LOGADDEXP2, tm_logaddexp2, NULL, NULL, NULL},
    {"copysign", TM_OP_COPYSIGN, tm_copysign, NULL, NULL, NULL},
    {"hypot", TM_OP_HYPOT, tm_hypot, NULL, NULL, NULL},
};

/* The result of an in-place op is its (mutated) first input. */
static tm_status tt_inplace_result(tm_status st, tm_tensor *a, tm_tensor **got,
                                   int *ngot)
{
    if (st) return st;
    got[0] = tm_retain(a);
    *ngot = 1;
    return TM_OK;
}

/* "<op>", "<op>_s", "<op>_rs", "<op>_", "<op>_s_". */
tm_status tt_binary_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    static const char *suffixes[] = {"_s_", "_rs", "_s", "_", ""};
    size_t len = strlen(c->op);
    for (size_t k = 0; k < sizeof tt_binops / sizeof tt_binops[0]; k++) {
        size_t nl = strlen(tt_binops[k].name);
        if (len < nl || strncmp(c->op, tt_binops[k].name, nl)) continue;
        const char *sfx = c->op + nl;
        int v = 0;
        while (v < 5 && strcmp(sfx, suffixes[v])) v++;
        if (v == 5) continue;
        tm_binary_op op = tt_binops[k].op;
        tm_tensor *a = c->in[0], *b = c->nin > 1 ? c->in[1] : NULL;
        double s = tt_arg(c, "s", 0);
        tm_tensor *r = NULL;
        switch (v) {
        case 0:
            return tt_inplace_result(tt_binops[k].isfn
                                         ? tt_binops[k].isfn(a, s)
                                         : tm_binary_scalar_(op, a, s),
                                     a, got, ngot);
        case 1: r = tm_binary_rscalar(op, s, a); break;
        case 2:
            r = tt_binops[k].sfn ? tt_binops[k].sfn(a, s)
                                 : tm_binary_scalar(op, a, s);
            break;
        case 3:
            return tt_inplace_result(tt_binops[k].ifn ? tt_binops[k].ifn(a, b)
                                                      : tm_binary_(op, a, b),
                                     a, got, ngot);
        default:
            r = tt_binops[k].fn ? tt_binops[k].fn(a, b) : tm_binary(op, a, b);
        }
        if (!r) return tm_last_status();
        got[0] = r;
        *ngot = 1;
        return TM_OK;
    }
    tm_tensor *r = NULL, *t = c->in[0];
    int64_t k = (int64_t)tt_arg(c, "k", 0);
    double value = tt_arg(c, "value", 0);
    if (!strcmp(c->op, "where")) {
        r = tm_where(c->in[0], c->in[1], c->in[2]);
    } else if (!strcmp(c->op, "clamp_tensor")) {
        int i = 1;
        tm_tensor *lo = tt_arg(c, "has_lo", 0) ? c->in[i++] : NULL;
        tm_tensor *hi = tt_arg(c, "has_hi", 0) ? c->in[i++] : NULL;
        r = tm_clamp_tensor(t, lo, hi);
    } else if (!strcmp(c->op, "masked_fill")) {
        r = tm_masked_fill(t, c->in[1], value);
    } else if (!strcmp(c->op, "masked_fill_")) {
        return tt_inplace_result(tm_masked_fill_(t, c->in[1], value), t, got,
                                 ngot);
    } else if (!strcmp(c->op, "tril")) {
        r = tm_tril(t, k);
    } else if (!strcmp(c->op, "triu")) {
        r = tm_triu(t, k);
    } else if (!strcmp(c->op, "tril_")) {
        return tt_inplace_result(tm_tril_(t, k), t, got, ngot);
    } else if (!strcmp(c->op, "triu_")) {
        return tt_inplace_result(tm_triu_(t, k), t, got, ngot);
    } else {
        return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
    }
    if (!r) return tm_last_status();
    got[0] = r;
    *ngot = 1;
    return TM_OK;
}

/* ----------------------- reductions, arg reductions, cumsum (reduce.ref) */

typedef tm_tensor *(*red_fn)(const tm_tensor *, const int *, int, bool);

static red_fn red_by_name(const char *op)
{
    static const struct {
        const char *name;
        red_fn fn;
    } tab[] = {{"sum", tm_sum}, {"mean", tm_mean}, {"prod", tm_prod},
               {"max", tm_max}, {"min", tm_min}, {"logsumexp", tm_logsumexp},
               {"any", tm_any}, {"all", tm_all}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].name, op)) return tab[i].fn;
    return NULL;
}

tm_status tt_reduce_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    if (c->nin != 1) return tm_set_error(TM_EUNSUPPORTED, "need one input");
    const tm_tensor *x = c->in[0];
    int dims[TM_MAX_DIMS];
    int nd = tt_arg_ints(c, "dims", dims, TM_MAX_DIMS);
    const int *dp = nd >= 0 ? dims : NULL;
    if (nd < 0) nd = 0;
    bool keep = tt_arg(c, "keepdim", 0) != 0;
    int dim = (int)tt_arg(c, "dim", 0);
    double p = tt_arg(c, "p", 0);
    const char *op = c->op;
    red_fn fn = red_by_name(op);
    *ngot = 1;
    if (fn) got[0] = fn(x, dp, nd, keep);
    else if (!strcmp(op, "var")) got[0] = tm_var(x, dp, nd, p, keep);
    else if (!strcmp(op, "std")) got[0] = tm_std(x, dp, nd, p, keep);
    else if (!strcmp(op, "norm")) got[0] = tm_norm(x, dp, nd, p, keep);
    else if (!strcmp(op, "argmax")) got[0] = tm_argmax(x, dim, keep);
    else if (!strcmp(op, "argmin")) got[0] = tm_argmin(x, dim, keep);
    else if (!strcmp(op, "argmax_all")) got[0] = tm_argmax_all(x);
    else if (!strcmp(op, "argmin_all")) got[0] = tm_argmin_all(x);
    else if (!strcmp(op, "cumsum")) got[0] = tm_cumsum(x, dim);
    else if (!strcmp(op, "max_dim") || !strcmp(op, "min_dim")) {
        tm_status st = op[1] == 'a'
                           ? tm_max_dim(x, dim, keep, &got[0], &got[1])
                           : tm_min_dim(x, dim, keep, &got[0], &got[1]);
        *ngot = st ? 0 : 2;
        return st;
    } else {
        *ngot = 0;
        return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", op);
    }
    if (!got[0]) {
        *ngot = 0;
        return tm_last_status();
    }
    return TM_OK;
}

/* ----------------- softmax, log_softmax, layer_norm, rms_norm (rows.ref) */

tm_status tt_rows_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    const char *op = c->op;
    const tm_tensor *x = c->in[0];
    int k = 1;
    const tm_tensor *w = NULL, *b = NULL;
    if (tt_arg(c, "hasw", 0) != 0 && k < c->nin) w = c->in[k++];
    if (tt_arg(c, "hasb", 0) != 0 && k < c->nin) b = c->in[k++];
    int dim = (int)tt_arg(c, "dim", 0);
    double eps = tt_arg(c, "eps", 1e-5);
    *ngot = 0;
    if (!strcmp(op, "softmax")) got[0] = tm_softmax(x, dim);
    else if (!strcmp(op, "log_softmax")) got[0] = tm_log_softmax(x, dim);
    else if (!strcmp(op, "layer_norm")) got[0] = tm_layer_norm(x, w, b, eps);
    else if (!strcmp(op, "rms_norm")) got[0] = tm_rms_norm(x, w, eps);
    else return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", op);
    if (!got[0]) return tm_last_status();
    *ngot = 1;
    return TM_OK;
}

/* --------------------- cat, stack, split, chunk, pad, repeat (shape.ref) */

tm_status tt_shape_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    int dim = (int)tt_arg(c, "dim", 0);
    const char *op = c->op;
    int64_t v[TT_REF_MAX_ARGVALS];
    tm_tensor *r = NULL;
    int n = -1;
    if (!strcmp(op, "cat")) {
        r = tm_cat(c->in, c->nin, dim);
    } else if (!strcmp(op, "stack")) {
        r = tm_stack(c->in, c->nin, dim);
    } else if (!strcmp(op, "split")) {
        n = tm_split(c->in[0], (int64_t)tt_arg(c, "size", 0), dim, got,
                     TT_REF_MAX_OUT);
    } else if (!strcmp(op, "split_sizes")) {
        int k = tt_arg_i64s(c, "sizes", v, TT_REF_MAX_ARGVALS);
        n = tm_split_sizes(c->in[0], v, k, dim, got, TT_REF_MAX_OUT);
    } else if (!strcmp(op, "chunk")) {
        n = tm_chunk(c->in[0], (int)tt_arg(c, "chunks", 0), dim, got,
                     TT_REF_MAX_OUT);
    } else if (!strcmp(op, "pad")) {
        int np = (int)tt_arg(c, "npad", 0);
        if (np > 0 && tt_arg_i64s(c, "pad", v, TT_REF_MAX_ARGVALS) != np)
            return tm_set_error(TM_EINVAL, "case needs %d pad values", np);
        r = tm_pad(c->in[0], np > 0 ? v : NULL, np, tt_arg(c, "value", 0));
    } else if (!strcmp(op, "repeat")) {
        int k = tt_arg_i64s(c, "repeats", v, TT_REF_MAX_ARGVALS);
        r = tm_repeat(c->in[0], v, k);
    } else {
        return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", op);
    }
    if (n >= 0) {
        *ngot = n;
        return TM_OK;
    }
    if (n < -1) return (tm_status)n;
    if (!r) return tm_last_status();
    got[0] = r;
    *ngot = 1;
    return TM_OK;
}

/* -------------------- gather, scatter, index_select, one_hot (index.ref) */

tm_status tt_index_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    int dim = (int)tt_arg(c, "dim", 0);
    tm_tensor *r = NULL;
    tm_status st = TM_OK;
    const char *op = c->op;
    if (!strcmp(op, "gather")) {
        r = tm_gather(c->in[0], dim, c->in[1]);
    } else if (!strcmp(op, "scatter")) {
        r = tm_scatter(c->in[0], dim, c->in[1], c->in[2]);
    } else if (!strcmp(op, "scatter_add")) {
        r = tm_scatter_add(c->in[0], dim, c->in[1], c->in[2]);
    } else if (!strcmp(op, "scatter_value")) {
        r = tm_scatter_value(c->in[0], dim, c->in[1], tt_arg(c, "value", 0));
    } else if (!strcmp(op, "scatter_") || !strcmp(op, "scatter_add_")) {
        /* in place into the input (which may be a view) */
        if (!strcmp(op, "scatter_add_"))
            st = tm_scatter_add_(c->in[0], dim, c->in[1], c->in[2]);
        else
            st = tm_scatter_(c->in[0], dim, c->in[1], c->in[2]);
        if (st) return st;
        r = tm_retain(c->in[0]);
    } else if (!strcmp(op, "scatter_reduce")) {
        r = tm_scatter_reduce(c->in[0], dim, c->in[1], c->in[2],
                              (tm_scatter_reduce_kind)tt_arg(c, "kind", 0),
                              tt_arg(c, "include_self", 1) != 0);
    } else if (!strcmp(op, "index_select")) {
        r = tm_index_select(c->in[0], dim, c->in[1]);
    } else if (!strcmp(op, "one_hot")) {
        r = tm_one_hot(c->in[0], (int64_t)tt_arg(c, "num_classes", -1));
    } else {
        return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", op);
    }
    if (!r) return tm_last_status();
    got[0] = r;
    *ngot = 1;
    return TM_OK;
}

/* ---------------------------------------- sort, argsort, topk (sort.ref) */

tm_status tt_sort_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    int dim = (int)tt_arg(c, "dim", 0);
    tm_status st;
    if (!strcmp(c->op, "sort")) {
        st = tm_sort(c->in[0], dim, tt_arg(c, "descending", 0) != 0, &got[0],
                     &got[1]);
        if (!st) *ngot = 2;
        return st;
    }
    if (!strcmp(c->op, "argsort")) {
        got[0] = tm_argsort(c->in[0], dim, tt_arg(c, "descending", 0) != 0);
        if (!got[0]) return tm_last_status();
        *ngot = 1;
        return TM_OK;
    }
    if (!strcmp(c->op, "topk")) {
        st = tm_topk(c->in[0], (int64_t)tt_arg(c, "k", 0), dim,
                     tt_arg(c, "largest", 1) != 0, &got[0], &got[1]);
        if (!st) *ngot = 2;
        return st;
    }
    return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
}

/* --------------------------------------------------- matmul (matmul.ref) */

tm_status tt_matmul_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    if (strcmp(c->op, "matmul") || c->nin != 2)
        return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
    got[0] = tm_matmul(c->in[0], c->in[1]);
    if (!got[0]) return tm_last_status();
    *ngot = 1;
    return TM_OK;
}

/* ---------------------------------------- dtype conversion (convert.ref) */

tm_status tt_convert_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    if (strcmp(c->op, "to_dtype"))
        return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
    got[0] = tm_to_dtype(c->in[0], (tm_dtype)tt_arg(c, "dtype", -1));
    *ngot = got[0] ? 1 : 0;
    return got[0] ? TM_OK : tm_last_status();
}

/* ------------------- Philox, generator splits, random fills (random.ref) */

static uint64_t arg_u64(const tt_refcase *c, const char *key)
{
    int64_t v[2] = {0, 0};
    tt_arg_i64s(c, key, v, 2);
    return (uint64_t)v[0] | (uint64_t)v[1] << 32;
}

static tm_tensor *i64_tensor(const int64_t *v, int64_t n)
{
    return tm_from_buffer(v, &n, 1, TM_I64);
}

static tm_tensor *counter_tensor(uint64_t counter)
{
    int64_t v[2] = {(int64_t)(counter & 0xFFFFFFFFu),
                    (int64_t)(counter >> 32)};
    return i64_tensor(v, 2);
}

tm_status tt_random_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    tm_rng rng = {arg_u64(c, "seed"), arg_u64(c, "counter")};
    if (!strcmp(c->op, "philox_u32")) {
        int64_t n = (int64_t)tt_arg(c, "n", 0);
        uint32_t *raw = malloc(sizeof(uint32_t) * (size_t)n);
        int64_t *vals = malloc(sizeof(int64_t) * (size_t)n);
        if (!raw || !vals) {
            free(raw);
            free(vals);
            return tm_set_error(TM_ENOMEM, "test: out of memory");
        }
        tm_rng_u32(&rng, raw, (size_t)n);
        for (int64_t i = 0; i < n; i++) vals[i] = raw[i];
        got[0] = i64_tensor(vals, n);
        got[1] = counter_tensor(rng.counter);
        free(raw);
        free(vals);
        *ngot = 2;
        return TM_OK;
    }
    if (!strcmp(c->op, "split")) {
        tm_rng child = tm_rng_split(&rng);
        int64_t v[6] = {(int64_t)(child.key & 0xFFFFFFFFu),
                        (int64_t)(child.key >> 32),
                        (int64_t)(child.counter & 0xFFFFFFFFu),
                        (int64_t)(child.counter >> 32),
                        (int64_t)(rng.counter & 0xFFFFFFFFu),
                        (int64_t)(rng.counter >> 32)};
        got[0] = i64_tensor(v, 6);
        *ngot = 1;
        return TM_OK;
    }
    int64_t shape[TM_MAX_DIMS];
    int nd = tt_arg_i64s(c, "shape", shape, TM_MAX_DIMS);
    tm_dtype dt = (tm_dtype)(int)tt_arg(c, "dtype", 0);
    int64_t p[2] = {0, 1};
    double pd[2] = {0, 1};
    tt_arg_i64s(c, "p", p, 2);
    for (int k = 0; k < c->nargs; k++)
        if (!strcmp(c->args[k].key, "p") && c->args[k].n == 2)
            pd[0] = c->args[k].v[0], pd[1] = c->args[k].v[1];
    if (nd < 0) nd = 0;
    tm_tensor *t = NULL;
    if (!strcmp(c->op, "rand") || !strcmp(c->op, "randn") ||
        !strcmp(c->op, "randint_new")) {
        tm_manual_seed(rng.key);
        t = !strcmp(c->op, "rand")    ? tm_rand(shape, nd, dt)
            : !strcmp(c->op, "randn") ? tm_randn(shape, nd, dt)
                                      : tm_randint(p[0], p[1], shape, nd, dt);
        if (!t) return tm_last_status();
        got[0] = t;
        *ngot = 1;
        return TM_OK;
    }
    t = c->nin ? tm_retain(c->in[0]) : tm_empty_on(shape, nd, dt, c->device);
    if (!t) return tm_last_status();
    tm_status st;
    if (!strcmp(c->op, "uniform")) st = tm_uniform_(t, pd[0], pd[1], &rng);
    else if (!strcmp(c->op, "normal")) st = tm_normal_(t, pd[0], pd[1], &rng);
    else if (!strcmp(c->op, "randint")) st = tm_randint_(t, p[0], p[1], &rng);
    else st = tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
    if (st) {
        tm_free(t);
        return st;
    }
    got[0] = t;
    got[1] = counter_tensor(rng.counter);
    *ngot = 2;
    return TM_OK;
}
