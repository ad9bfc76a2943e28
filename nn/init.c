/*
 * init.c — parameter initialisers (foundry/nn.h), as torch.nn.init.
 *
 * Every writer runs under no-grad: parameters require grad, and in-place
 * writes into such tensors are refused while grad mode is on.  Everything
 * is tensor ops on the tensor's own device, trunc_normal's redraw rounds
 * included, so the initialisers run on any device.
 */
#include "foundry/nn.h"

#include "../tensor/autograd/backward.h"

#include <math.h>

static tm_status check_float(const tm_tensor *t, const char *fn)
{
    if (!t) return tm__errf(TM_EINVAL, fn, "tensor is NULL");
    if (!tm_dtype_is_float(tm_dtype_of(t)))
        return tm__errf(TM_EDTYPE, fn, "needs a float tensor, not %s",
                        tm_dtype_name(tm_dtype_of(t)));
    return TM_OK;
}

double tm_init_gain(tm_nonlinearity nl, double param)
{
    switch (nl) {
    case TM_NL_LINEAR:
    case TM_NL_SIGMOID: return 1.0;
    case TM_NL_TANH: return 5.0 / 3.0;
    case TM_NL_RELU: return sqrt(2.0);
    case TM_NL_LEAKY_RELU: return sqrt(2.0 / (1.0 + param * param));
    case TM_NL_SELU: return 0.75;
    }
    TM_ERR(TM_EINVAL, "unknown nonlinearity %d", (int)nl);
    return NAN;
}

tm_status tm_init_fans(const tm_tensor *t, int64_t *fan_in, int64_t *fan_out)
{
    if (!t) return TM_ERR(TM_EINVAL, "tensor is NULL");
    int nd = tm_ndim(t);
    if (nd < 2)
        return TM_ERR(TM_EINVAL,
                      "fans need a tensor with >= 2 dims, got %d dims", nd);
    int64_t rf = 1;
    for (int d = 2; d < nd; d++) rf *= tm_size(t, d);
    if (fan_in) *fan_in = tm_size(t, 1) * rf;
    if (fan_out) *fan_out = tm_size(t, 0) * rf;
    return TM_OK;
}

/* The fill functions relabel errors so messages name the initialiser. */
static tm_status fill(tm_tensor *t, double v, const char *fn)
{
    tm_status st = check_float(t, fn);
    if (st != TM_OK || tm_numel(t) == 0) return st;
    bool prev = tm_no_grad_begin();
    st = tm_fill_(t, v);
    tm_no_grad_end(prev);
    return st == TM_OK ? st : tm__relabel_error(fn, st);
}

static tm_status uniform(tm_tensor *t, double lo, double hi, tm_rng *rng,
                         const char *fn)
{
    tm_status st = check_float(t, fn);
    if (st != TM_OK || tm_numel(t) == 0) return st;
    bool prev = tm_no_grad_begin();
    st = tm_uniform_(t, lo, hi, rng);
    tm_no_grad_end(prev);
    return st == TM_OK ? st : tm__relabel_error(fn, st);
}

static tm_status normal(tm_tensor *t, double mean, double std, tm_rng *rng,
                        const char *fn)
{
    tm_status st = check_float(t, fn);
    if (st != TM_OK || tm_numel(t) == 0) return st;
    bool prev = tm_no_grad_begin();
    st = tm_normal_(t, mean, std, rng);
    tm_no_grad_end(prev);
    return st == TM_OK ? st : tm__relabel_error(fn, st);
}

tm_status tm_init_zeros_(tm_tensor *t) { return fill(t, 0.0, __func__); }
tm_status tm_init_ones_(tm_tensor *t) { return fill(t, 1.0, __func__); }
tm_status tm_init_constant_(tm_tensor *t, double value)
{
    return fill(t, value, __func__);
}

tm_status tm_init_uniform_(tm_tensor *t, double low, double high,
                           tm_rng *rng)
{
    return uniform(t, low, high, rng, __func__);
}

tm_status tm_init_normal_(tm_tensor *t, double mean, double std, tm_rng *rng)
{
    return normal(t, mean, std, rng, __func__);
}

/* One redraw round of trunc_normal over *v (F64 [N]): the values outside
 * [a, b] (NaN too) are counted, as many fresh values are drawn, and the
 * k-th rejected position in index order takes the k-th draw.  The count
 * sizes the draw, so it is read back to the host (a data-dependent
 * shape: a host synchronization per round).  *bad gets it (0: done);
 * *v is replaced by the redrawn values. */
static tm_status trunc_redraw(tm_tensor **v, double a, double b, double mean,
                              double std, tm_rng *rng, int64_t *bad)
{
    tm__scratch s = {0};
    int64_t n = tm_numel(*v);
    tm_tensor *ge = tm__sc_keep(&s, tm_binary_scalar(TM_OP_GE, *v, a));
    tm_tensor *le = tm__sc_keep(&s, tm_binary_scalar(TM_OP_LE, *v, b));
    tm_tensor *in = tm__sc_binary(&s, TM_OP_LOGICAL_AND, ge, le);
    /* not in: a binary predicate, which also runs where BOOL is staged
     * as I64 (the unary logical_not refuses an I64 result) */
    tm_tensor *out = tm__sc_scalar(&s, TM_OP_EQ, in, 0.0);
    /* rank[i]: the rejections up to and including i (I64) */
    tm_tensor *rank = out ? tm__sc_keep(&s, tm_cumsum(out, 0)) : NULL;
    tm_tensor *last = rank ? tm__sc_keep(&s, tm_select(rank, 0, n - 1))
                           : NULL;
    *bad = 0;
    if (last && tm_item_i64(last, bad)) tm__sc_keep(&s, NULL);
    if (s.st || *bad == 0) return tm__sc_done(&s, "tm_init_trunc_normal_");
    tm_tensor *more = tm__sc_keep(
        &s, tm_empty_on(bad, 1, TM_F64, tm_device_of(*v)));
    if (more && tm_normal_(more, mean, std, rng)) tm__sc_keep(&s, NULL);
    /* position i takes more[rank[i] - 1]; those before the first
     * rejection (rank 0) read more[0], which `where` then drops */
    tm_tensor *k = rank && !s.st
                       ? tm__sc_keep(&s, tm_sub_scalar(rank, 1.0)) : NULL;
    tm_tensor *k0 = k ? tm__sc_keep(&s, tm_maximum_scalar(k, 0.0)) : NULL;
    tm_tensor *pick = k0 ? tm__sc_keep(&s, tm_gather(more, 0, k0)) : NULL;
    tm_tensor *next = pick ? tm_where(out, pick, *v) : NULL;
    if (next) {
        tm_free(*v);
        *v = next;
    } else {
        tm__sc_keep(&s, NULL);
    }
    return tm__sc_done(&s, "tm_init_trunc_normal_");
}

tm_status tm_init_trunc_normal_(tm_tensor *t, double mean, double std,
                                double a, double b, tm_rng *rng)
{
    tm_status st = check_float(t, __func__);
    if (st != TM_OK) return st;
    if (!isfinite(mean) || !isfinite(std) || !(std > 0) || isnan(a) ||
        isnan(b) || !(a < b))
        return TM_ERR(TM_EINVAL,
                      "needs finite mean, std > 0 and a < b, got mean %g "
                      "std %g [%g, %g]",
                      mean, std, a, b);
    double mass = 0.5 * (erf((b - mean) / (std * sqrt(2.0))) -
                         erf((a - mean) / (std * sqrt(2.0))));
    if (!(mass >= 1e-3))
        return TM_ERR(TM_EINVAL,
                      "[%g, %g] holds only %.3g of N(%g, %g^2): below 1e-3",
                      a, b, mass, mean, std);
    int64_t n = tm_numel(t);
    if (n == 0) return TM_OK;
    bool prev = tm_no_grad_begin();
    tm_tensor *all = tm_empty_on((int64_t[]){n}, 1, TM_F64, tm_device_of(t));
    st = all ? tm_normal_(all, mean, std, rng) : tm_last_status();
    /* Redraw the rejected values in rounds of exactly that many draws, in
     * index order, so the result depends only on the generator. */
    int64_t bad = 1;
    while (st == TM_OK && bad > 0)
        st = trunc_redraw(&all, a, b, mean, std, rng, &bad);
    if (st == TM_OK) {
        tm_tensor *src = tm_view(all, tm_shape(t), tm_ndim(t));
        st = src ? tm_copy_(t, src) : tm_last_status();
        tm_free(src);
    }
    tm_no_grad_end(prev);
    tm_free(all);
    return st == TM_OK ? st : tm__relabel_error(__func__, st);
}

static tm_status xavier_std(const tm_tensor *t, double gain, double *std,
                            const char *fn)
{
    tm_status st = check_float(t, fn);
    int64_t fi, fo;
    if (st == TM_OK) st = tm_init_fans(t, &fi, &fo);
    if (st != TM_OK) return tm__relabel_error(fn, st);
    *std = fi + fo > 0 ? gain * sqrt(2.0 / (double)(fi + fo)) : 0.0;
    return TM_OK;
}

tm_status tm_init_xavier_uniform_(tm_tensor *t, double gain, tm_rng *rng)
{
    double std;
    tm_status st = xavier_std(t, gain, &std, __func__);
    if (st != TM_OK) return st;
    double bound = sqrt(3.0) * std;
    return uniform(t, -bound, bound, rng, __func__);
}

tm_status tm_init_xavier_normal_(tm_tensor *t, double gain, tm_rng *rng)
{
    double std;
    tm_status st = xavier_std(t, gain, &std, __func__);
    return st != TM_OK ? st : normal(t, 0.0, std, rng, __func__);
}

static tm_status kaiming_std(const tm_tensor *t, double a, tm_fan_mode mode,
                             tm_nonlinearity nl, double *std, const char *fn)
{
    tm_status st = check_float(t, fn);
    int64_t fi, fo;
    if (st == TM_OK) st = tm_init_fans(t, &fi, &fo);
    if (st != TM_OK) return tm__relabel_error(fn, st);
    if (mode != TM_FAN_IN && mode != TM_FAN_OUT)
        return tm__errf(TM_EINVAL, fn, "unknown fan mode %d", (int)mode);
    double gain = tm_init_gain(nl, a);
    if (isnan(gain)) return tm__relabel_error(fn, TM_EINVAL);
    int64_t fan = mode == TM_FAN_IN ? fi : fo;
    /* A zero fan means a zero-element tensor: nothing is drawn. */
    *std = fan > 0 ? gain / sqrt((double)fan) : 0.0;
    return TM_OK;
}

tm_status tm_init_kaiming_uniform_(tm_tensor *t, double a, tm_fan_mode mode,
                                   tm_nonlinearity nl, tm_rng *rng)
{
    double std;
    tm_status st = kaiming_std(t, a, mode, nl, &std, __func__);
    if (st != TM_OK) return st;
    double bound = sqrt(3.0) * std;
    return uniform(t, -bound, bound, rng, __func__);
}

tm_status tm_init_kaiming_normal_(tm_tensor *t, double a, tm_fan_mode mode,
                                  tm_nonlinearity nl, tm_rng *rng)
{
    double std;
    tm_status st = kaiming_std(t, a, mode, nl, &std, __func__);
    return st != TM_OK ? st : normal(t, 0.0, std, rng, __func__);
}
