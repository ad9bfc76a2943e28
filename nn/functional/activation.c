/*
 * activation.c — the activations beyond the unary op table: elu, selu,
 * celu, relu6, hardtanh, hardsigmoid, hardswish, mish, softsign,
 * logsigmoid, softmin, glu, prelu, rrelu, threshold, tanhshrink,
 * softshrink, hardshrink.
 *
 * Each is composed from recorded ops, so it runs on every device and
 * autograd derives its gradient.  The compositions are chosen so that the
 * derivative matches PyTorch's rule, including where a branch overflows:
 * a where() passes a zero gradient to the branch it did not pick, and
 * 0 * inf would be NaN, so exponentials only ever see min(x, 0).  Where
 * PyTorch's mask is strict (hardtanh passes the gradient only for
 * min < x < max) the clamped branch is computed without grad and picked
 * by where() instead of using clamp's inclusive derivative.
 */
#include "foundry/nn_functional.h"

#include "functional_impl.h"

#include "../../tensor/autograd/backward.h"

#include <math.h>

bool tm__nn_check_float(const char *fn, const tm_tensor *x,
                        const char *what)
{
    if (tm__check_tensor(fn, x, what)) return false;
    if (!tm_dtype_is_float(tm_dtype_of(x))) {
        tm__errf(TM_EDTYPE, fn, "%s must be a float tensor, got %s", what,
                 tm_dtype_name(tm_dtype_of(x)));
        return false;
    }
    return true;
}

/* A kept 0-d tensor of x's dtype and device holding v. */
static tm_tensor *sc_const(tm__scratch *s, const char *fn, double v,
                           const tm_tensor *x)
{
    if (s->st) return NULL;
    return tm__sc_keep(s, tm__scalar_on(fn, v, tm_dtype_of(x),
                                        tm_device_of(x)));
}

/* Hands back r (the final, unkept result) unless a step failed. */
static tm_tensor *finish(tm__scratch *s, const char *fn, tm_tensor *r)
{
    if (!r && !s->st) tm__sc_keep(s, NULL);
    if (tm__sc_done(s, fn)) {
        tm_free(r);
        return NULL;
    }
    return r;
}

/* where(x > 0, x, alpha * expm1(min(x, 0) * in_scale)) * scale: elu,
 * selu and celu are this with PyTorch's (alpha, scale, input_scale). */
static tm_tensor *elu_like(const char *fn, const tm_tensor *x, double alpha,
                           double scale, double in_scale)
{
    if (!tm__nn_check_float(fn, x, "input")) return NULL;
    tm__scratch s = {0};
    tm_tensor *pos = tm__sc_scalar(&s, TM_OP_GT, x, 0.0);
    tm_tensor *neg = s.st ? NULL : tm__sc_keep(&s, tm_clamp(x, NAN, 0.0));
    if (in_scale != 1.0) neg = tm__sc_scalar(&s, TM_OP_MUL, neg, in_scale);
    tm_tensor *e = tm__sc_unary(&s, TM_OP_EXPM1, neg);
    e = tm__sc_scalar(&s, TM_OP_MUL, e, alpha);
    tm_tensor *r = NULL;
    if (scale == 1.0) {
        r = s.st ? NULL : tm_where(pos, x, e);
    } else {
        tm_tensor *w = tm__sc_where(&s, pos, x, e);
        r = s.st ? NULL : tm_mul_scalar(w, scale);
    }
    return finish(&s, fn, r);
}

tm_tensor *tm_elu(const tm_tensor *x, double alpha)
{
    return elu_like(__func__, x, alpha, 1.0, 1.0);
}

tm_tensor *tm_selu(const tm_tensor *x)
{
    return elu_like(__func__, x, 1.6732632423543772848170429916717,
                    1.0507009873554804934193349852946, 1.0);
}

tm_tensor *tm_celu(const tm_tensor *x, double alpha)
{
    if (alpha == 0.0) {
        tm__errf(TM_EINVAL, __func__, "alpha cannot be 0 (it divides x)");
        return NULL;
    }
    return elu_like(__func__, x, alpha, 1.0, 1.0 / alpha);
}

/* where(lo < x < hi, x, clamp(x, lo, hi) without grad). */
static tm_tensor *hardtanh_in(tm__scratch *s, const tm_tensor *x, double lo,
                              double hi)
{
    tm_tensor *a = tm__sc_scalar(s, TM_OP_GT, x, lo);
    tm_tensor *b = tm__sc_scalar(s, TM_OP_LT, x, hi);
    tm_tensor *in = tm__sc_binary(s, TM_OP_LOGICAL_AND, a, b);
    tm_tensor *c = NULL;
    if (!s->st) {
        bool prev = tm_no_grad_begin();
        c = tm__sc_keep(s, tm_clamp(x, lo, hi));
        tm_no_grad_end(prev);
    }
    return s->st ? NULL : tm_where(in, x, c);
}

tm_tensor *tm_hardtanh(const tm_tensor *x, double min_val, double max_val)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    if (isnan(min_val) || isnan(max_val) || min_val > max_val) {
        tm__errf(TM_EINVAL, __func__, "min_val (%g) cannot be greater than "
                 "max_val (%g)", min_val, max_val);
        return NULL;
    }
    tm__scratch s = {0};
    return finish(&s, __func__, hardtanh_in(&s, x, min_val, max_val));
}

tm_tensor *tm_relu6(const tm_tensor *x)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    return finish(&s, __func__, hardtanh_in(&s, x, 0.0, 6.0));
}

/* relu6(x + 3) / 6, kept. */
static tm_tensor *hsig_in(tm__scratch *s, const tm_tensor *x)
{
    tm_tensor *t = tm__sc_scalar(s, TM_OP_ADD, x, 3.0);
    tm_tensor *h = s->st ? NULL : tm__sc_keep(s, hardtanh_in(s, t, 0, 6));
    return tm__sc_scalar(s, TM_OP_DIV, h, 6.0);
}

tm_tensor *tm_hardsigmoid(const tm_tensor *x)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    tm_tensor *h = hsig_in(&s, x);
    return finish(&s, __func__, h ? tm_retain(h) : NULL);
}

tm_tensor *tm_hardswish(const tm_tensor *x)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    tm_tensor *h = hsig_in(&s, x);
    return finish(&s, __func__, s.st ? NULL : tm_mul(x, h));
}

tm_tensor *tm_mish(const tm_tensor *x)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    /* softplus returns x itself past the threshold, so no overflow */
    tm_tensor *sp = tm__sc_keep(&s, tm_softplus(x, 1.0, 20.0));
    tm_tensor *t = tm__sc_unary(&s, TM_OP_TANH, sp);
    return finish(&s, __func__, s.st ? NULL : tm_mul(x, t));
}

tm_tensor *tm_softsign(const tm_tensor *x)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    tm_tensor *a = tm__sc_unary(&s, TM_OP_ABS, x);
    tm_tensor *d = tm__sc_scalar(&s, TM_OP_ADD, a, 1.0);
    return finish(&s, __func__, s.st ? NULL : tm_div(x, d));
}

tm_tensor *tm_logsigmoid(const tm_tensor *x)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    /* -softplus(-x) with no threshold is max(-x, 0) + log1p(exp(-|x|)):
     * exact for every x, where log(sigmoid(x)) underflows to -inf */
    tm_tensor *n = tm__sc_unary(&s, TM_OP_NEG, x);
    tm_tensor *sp = s.st ? NULL : tm__sc_keep(&s, tm_softplus(n, 1.0,
                                                              INFINITY));
    return finish(&s, __func__, s.st ? NULL : tm_neg(sp));
}

tm_tensor *tm_softmin(const tm_tensor *x, int dim)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    tm_tensor *n = tm__sc_unary(&s, TM_OP_NEG, x);
    return finish(&s, __func__, s.st ? NULL : tm_softmax(n, dim));
}

tm_tensor *tm_glu(const tm_tensor *x, int dim)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    int d;
    if (tm_ndim(x) == 0) {
        tm__errf(TM_ESHAPE, __func__, "glu does not support 0-d tensors: "
                 "the halved dim must have an even size");
        return NULL;
    }
    if (tm__wrap_dim(__func__, dim, tm_ndim(x), &d)) return NULL;
    int64_t n = tm_shape(x)[d];
    if (n % 2) {
        tm__errf(TM_ESHAPE, __func__, "halving dimension must be even, but "
                 "dim %d has size %lld", d, (long long)n);
        return NULL;
    }
    tm__scratch s = {0};
    tm_tensor *a = tm__sc_keep(&s, tm_narrow(x, d, 0, n / 2));
    tm_tensor *b = s.st ? NULL : tm__sc_keep(&s, tm_narrow(x, d, n / 2,
                                                           n / 2));
    tm_tensor *g = tm__sc_unary(&s, TM_OP_SIGMOID, b);
    return finish(&s, __func__, s.st ? NULL : tm_mul(a, g));
}

tm_tensor *tm_prelu(const tm_tensor *x, const tm_tensor *weight)
{
    if (!tm__nn_check_float(__func__, x, "input") ||
        !tm__nn_check_float(__func__, weight, "weight"))
        return NULL;
    const tm_tensor *both[2] = {x, weight};
    if (tm__check_same_device(__func__, both, 2)) return NULL;
    if (tm_dtype_of(x) != tm_dtype_of(weight)) {
        tm__errf(TM_EDTYPE, __func__, "weight (%s) must have the input's "
                 "dtype (%s)", tm_dtype_name(tm_dtype_of(weight)),
                 tm_dtype_name(tm_dtype_of(x)));
        return NULL;
    }
    int64_t c = tm_ndim(x) >= 2 ? tm_shape(x)[1] : 1;
    int64_t k = tm_numel(weight);
    if (tm_ndim(weight) > 1 || (k != 1 && k != c)) {
        tm__errf(TM_ESHAPE, __func__, "weight must be 1-D with 1 or C "
                 "elements: found %lld parameters (%d-d) and channel size "
                 "%lld", (long long)k, tm_ndim(weight), (long long)c);
        return NULL;
    }
    /* weight as [C, 1, ..., 1] against x's dims 1..; one slope: 0-d */
    int64_t shape[TM_MAX_DIMS];
    int nd = 0;
    if (k != 1) {
        shape[nd++] = c;
        while (nd < tm_ndim(x) - 1) shape[nd++] = 1;
    }
    tm__scratch s = {0};
    tm_tensor *w = tm__sc_keep(&s, tm_reshape(weight, shape, nd));
    tm_tensor *wx = tm__sc_binary(&s, TM_OP_MUL, x, w);
    tm_tensor *pos = tm__sc_scalar(&s, TM_OP_GT, x, 0.0);
    return finish(&s, __func__, s.st ? NULL : tm_where(pos, x, wx));
}

tm_tensor *tm_rrelu(const tm_tensor *x, double lower, double upper,
                    bool training, tm_rng *rng)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    if (!isfinite(lower) || !isfinite(upper) || lower > upper) {
        tm__errf(TM_EINVAL, __func__, "lower (%g) and upper (%g) must be "
                 "finite with lower <= upper", lower, upper);
        return NULL;
    }
    if (!training) return tm_leaky_relu(x, (lower + upper) / 2);
    tm__scratch s = {0};
    /* one slope per element, drawn in row-major order */
    tm_tensor *a = tm__sc_keep(&s, tm_zeros_like(x));
    if (a && tm_uniform_(a, lower, upper, rng)) tm__sc_keep(&s, NULL);
    tm_tensor *ax = tm__sc_binary(&s, TM_OP_MUL, x, a);
    tm_tensor *pos = tm__sc_scalar(&s, TM_OP_GE, x, 0.0);
    return finish(&s, __func__, s.st ? NULL : tm_where(pos, x, ax));
}

tm_tensor *tm_threshold(const tm_tensor *x, double threshold, double value)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    /* x <= threshold picks value, so NaN stays NaN as in PyTorch */
    tm_tensor *le = tm__sc_scalar(&s, TM_OP_LE, x, threshold);
    tm_tensor *v = sc_const(&s, __func__, value, x);
    return finish(&s, __func__, s.st ? NULL : tm_where(le, v, x));
}

tm_tensor *tm_tanhshrink(const tm_tensor *x)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    tm_tensor *t = tm__sc_unary(&s, TM_OP_TANH, x);
    return finish(&s, __func__, s.st ? NULL : tm_sub(x, t));
}

tm_tensor *tm_softshrink(const tm_tensor *x, double lambd)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    if (!(lambd >= 0.0) || isinf(lambd)) {
        tm__errf(TM_EINVAL, __func__, "lambd must be finite and >= 0, got "
                 "%g", lambd);
        return NULL;
    }
    tm__scratch s = {0};
    /* clamp's derivative is 1 on [-lambd, lambd] inclusive, so this is
     * PyTorch's mask (0 there, 1 outside) */
    tm_tensor *c = tm__sc_keep(&s, tm_clamp(x, -lambd, lambd));
    return finish(&s, __func__, s.st ? NULL : tm_sub(x, c));
}

tm_tensor *tm_hardshrink(const tm_tensor *x, double lambd)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    tm__scratch s = {0};
    tm_tensor *a = tm__sc_unary(&s, TM_OP_ABS, x);
    tm_tensor *in = tm__sc_scalar(&s, TM_OP_LE, a, lambd);
    tm_tensor *z = sc_const(&s, __func__, 0.0, x);
    return finish(&s, __func__, s.st ? NULL : tm_where(in, z, x));
}
