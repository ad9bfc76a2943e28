/*
 * layers.c — Linear, LayerNorm, RMSNorm, the MLP block, Embedding, Dropout
 * and Conv2d (foundry/nn.h).
 *
 * Forward passes are the differentiable functional ops (tm_linear,
 * tm_layer_norm, tm_rms_norm, tm_gelu, tm_embedding, tm_dropout, tm_conv2d);
 * layers only own and initialise their parameters, with PyTorch's
 * defaults.
 */
#include "foundry/nn.h"

#include "../tensor/core/tensor_impl.h"

#include <math.h>

static tm_status check_dt(tm_dtype dt, const char *fn)
{
    if (!tm_dtype_is_float(dt))
        return tm__errf(TM_EDTYPE, fn, "needs a float dtype, not %s",
                        tm_dtype_name(dt));
    return TM_OK;
}

/* Adds (name, tensor, no_decay) triples to `set` under `prefix`, all or
 * nothing: they are collected in a scratch set, then merged. */
typedef struct entry {
    const char *name;
    tm_tensor *t;
    bool no_decay;
} entry;

static tm_status add_entries(tm_params *set, const char *prefix,
                             const entry *e, int n, const char *fn)
{
    if (!set) return tm__errf(TM_EINVAL, fn, "set is NULL");
    tm_params *tmp = tm_params_new();
    tm_status st = tmp ? TM_OK : TM_ENOMEM;
    for (int i = 0; st == TM_OK && i < n; i++)
        if (e[i].t) st = tm_params_add(tmp, e[i].name, e[i].t, e[i].no_decay);
    if (st == TM_OK) st = tm_params_add_all(set, prefix, tmp);
    tm_params_free(tmp);
    return st == TM_OK ? st : tm__relabel_error(fn, st);
}

/* A new leaf of shape[ndim] that requires grad (not yet initialised).
 * Layers are built on the CPU: their constructors take no device.  The
 * initialisers and forward passes are device-neutral, so parameters moved
 * to another device (tm_to) work there; forward passes take the device of
 * the parameters and refuse inputs on another one. */
static tm_tensor *param(const int64_t *shape, int ndim, tm_dtype dt,
                        const char *fn)
{
    tm_tensor *t = tm_empty(shape, ndim, dt);
    if (t && tm_requires_grad_(t, true) != TM_OK) {
        tm_free(t);
        t = NULL;
    }
    if (!t) tm__relabel_error(fn, tm_last_status());
    return t;
}

/* ------------------------------------------------------------- linear */

tm_linear_layer *tm_linear_layer_new(int64_t in_features,
                                     int64_t out_features, bool bias,
                                     tm_dtype dt, tm_rng *rng)
{
    if (check_dt(dt, __func__) != TM_OK) return NULL;
    if (in_features < 0 || out_features < 0) {
        TM_ERR(TM_EINVAL, "features must be >= 0, got in %lld out %lld",
               (long long)in_features, (long long)out_features);
        return NULL;
    }
    tm_linear_layer *l = tm__calloc(sizeof *l, __func__);
    if (!l) return NULL;
    l->in_features = in_features;
    l->out_features = out_features;
    if (!(l->weight = param((int64_t[]){out_features, in_features}, 2, dt,
                            __func__)))
        goto fail;
    /* kaiming_uniform(a = sqrt(5)) gives exactly U(+-1/sqrt(fan_in)). */
    if (tm_init_kaiming_uniform_(l->weight, sqrt(5.0), TM_FAN_IN,
                                 TM_NL_LEAKY_RELU, rng) != TM_OK)
        goto fail;
    if (bias) {
        double bound = in_features > 0 ? 1.0 / sqrt((double)in_features) : 0;
        if (!(l->bias = param((int64_t[]){out_features}, 1, dt, __func__)) ||
            tm_init_uniform_(l->bias, -bound, bound, rng) != TM_OK)
            goto fail;
    }
    return l;
fail:
    tm__relabel_error(__func__, tm_last_status());
    tm_linear_layer_free(l);
    return NULL;
}

tm_tensor *tm_linear_layer_forward(const tm_linear_layer *l,
                                   const tm_tensor *x)
{
    if (!l) {
        TM_ERR(TM_EINVAL, "layer is NULL");
        return NULL;
    }
    return tm_linear(x, l->weight, l->bias);
}

tm_status tm_linear_layer_params(const tm_linear_layer *l, tm_params *set,
                                 const char *prefix)
{
    if (!l) return TM_ERR(TM_EINVAL, "layer is NULL");
    entry e[] = {{"weight", l->weight, false}, {"bias", l->bias, true}};
    return add_entries(set, prefix, e, 2, __func__);
}

void tm_linear_layer_free(tm_linear_layer *l)
{
    if (!l) return;
    tm_free(l->weight);
    tm_free(l->bias);
    tm__dealloc(l);
}

/* --------------------------------------------------------- layer norm */

static bool check_norm_args(int64_t dim, double eps, tm_dtype dt,
                            const char *fn)
{
    if (check_dt(dt, fn) != TM_OK) return false;
    if (dim < 1 || !isfinite(eps) || eps < 0) {
        tm__errf(TM_EINVAL, fn, "needs dim >= 1 and finite eps >= 0, got "
                 "dim %lld eps %g", (long long)dim, eps);
        return false;
    }
    return true;
}

tm_layer_norm_layer *tm_layer_norm_layer_new(int64_t dim, double eps,
                                             bool affine, tm_dtype dt)
{
    if (!check_norm_args(dim, eps, dt, __func__)) return NULL;
    tm_layer_norm_layer *l = tm__calloc(sizeof *l, __func__);
    if (!l) return NULL;
    l->dim = dim;
    l->eps = eps;
    if (affine &&
        (!(l->weight = param((int64_t[]){dim}, 1, dt, __func__)) ||
         tm_init_ones_(l->weight) != TM_OK ||
         !(l->bias = param((int64_t[]){dim}, 1, dt, __func__)) ||
         tm_init_zeros_(l->bias) != TM_OK)) {
        tm__relabel_error(__func__, tm_last_status());
        tm_layer_norm_layer_free(l);
        return NULL;
    }
    return l;
}

tm_tensor *tm_layer_norm_layer_forward(const tm_layer_norm_layer *l,
                                       const tm_tensor *x)
{
    if (!l) {
        TM_ERR(TM_EINVAL, "layer is NULL");
        return NULL;
    }
    return tm_layer_norm(x, l->weight, l->bias, l->eps);
}

tm_status tm_layer_norm_layer_params(const tm_layer_norm_layer *l,
                                     tm_params *set, const char *prefix)
{
    if (!l) return TM_ERR(TM_EINVAL, "layer is NULL");
    entry e[] = {{"weight", l->weight, true}, {"bias", l->bias, true}};
    return add_entries(set, prefix, e, 2, __func__);
}

void tm_layer_norm_layer_free(tm_layer_norm_layer *l)
{
    if (!l) return;
    tm_free(l->weight);
    tm_free(l->bias);
    tm__dealloc(l);
}

/* ----------------------------------------------------------- rms norm */

tm_rms_norm_layer *tm_rms_norm_layer_new(int64_t dim, double eps, tm_dtype dt)
{
    if (!check_norm_args(dim, eps, dt, __func__)) return NULL;
    tm_rms_norm_layer *l = tm__calloc(sizeof *l, __func__);
    if (!l) return NULL;
    l->dim = dim;
    l->eps = eps;
    if (!(l->weight = param((int64_t[]){dim}, 1, dt, __func__)) ||
        tm_init_ones_(l->weight) != TM_OK) {
        tm__relabel_error(__func__, tm_last_status());
        tm_rms_norm_layer_free(l);
        return NULL;
    }
    return l;
}

tm_tensor *tm_rms_norm_layer_forward(const tm_rms_norm_layer *l,
                                     const tm_tensor *x)
{
    if (!l) {
        TM_ERR(TM_EINVAL, "layer is NULL");
        return NULL;
    }
    return tm_rms_norm(x, l->weight, l->eps);
}

tm_status tm_rms_norm_layer_params(const tm_rms_norm_layer *l,
                                   tm_params *set, const char *prefix)
{
    if (!l) return TM_ERR(TM_EINVAL, "layer is NULL");
    entry e[] = {{"weight", l->weight, true}};
    return add_entries(set, prefix, e, 1, __func__);
}

void tm_rms_norm_layer_free(tm_rms_norm_layer *l)
{
    if (!l) return;
    tm_free(l->weight);
    tm__dealloc(l);
}

/* ---------------------------------------------------------------- mlp */

tm_mlp_layer *tm_mlp_layer_new(int64_t dim, int64_t hidden, bool bias,
                               tm_dtype dt, tm_rng *rng)
{
    tm_mlp_layer *l = tm__calloc(sizeof *l, __func__);
    if (!l) return NULL;
    if (!(l->fc1 = tm_linear_layer_new(dim, hidden, bias, dt, rng)) ||
        !(l->fc2 = tm_linear_layer_new(hidden, dim, bias, dt, rng))) {
        tm__relabel_error(__func__, tm_last_status());
        tm_mlp_layer_free(l);
        return NULL;
    }
    return l;
}

tm_tensor *tm_mlp_layer_forward(const tm_mlp_layer *l, const tm_tensor *x)
{
    if (!l) {
        TM_ERR(TM_EINVAL, "layer is NULL");
        return NULL;
    }
    tm_tensor *h = tm_linear_layer_forward(l->fc1, x), *g = NULL, *y = NULL;
    if (h) g = tm_gelu(h);
    if (g) y = tm_linear_layer_forward(l->fc2, g);
    tm_free(h);
    tm_free(g);
    return y;
}

tm_status tm_mlp_layer_params(const tm_mlp_layer *l, tm_params *set,
                              const char *prefix)
{
    if (!l) return TM_ERR(TM_EINVAL, "layer is NULL");
    if (!set) return TM_ERR(TM_EINVAL, "set is NULL");
    tm_params *tmp = tm_params_new();
    tm_status st = tmp ? TM_OK : TM_ENOMEM;
    if (st == TM_OK) st = tm_linear_layer_params(l->fc1, tmp, "fc1");
    if (st == TM_OK) st = tm_linear_layer_params(l->fc2, tmp, "fc2");
    if (st == TM_OK) st = tm_params_add_all(set, prefix, tmp);
    tm_params_free(tmp);
    return st == TM_OK ? st : tm__relabel_error(__func__, st);
}

void tm_mlp_layer_free(tm_mlp_layer *l)
{
    if (!l) return;
    tm_linear_layer_free(l->fc1);
    tm_linear_layer_free(l->fc2);
    tm__dealloc(l);
}

/* ---------------------------------------------------------- embedding */

tm_embedding_layer *tm_embedding_layer_new(int64_t num, int64_t dim,
                                           tm_dtype dt, tm_rng *rng)
{
    if (check_dt(dt, __func__) != TM_OK) return NULL;
    if (num < 0 || dim < 0) {
        TM_ERR(TM_EINVAL, "sizes must be >= 0, got num %lld dim %lld",
               (long long)num, (long long)dim);
        return NULL;
    }
    tm_embedding_layer *l = tm__calloc(sizeof *l, __func__);
    if (!l) return NULL;
    l->num = num;
    l->dim = dim;
    if (!(l->weight = param((int64_t[]){num, dim}, 2, dt, __func__)) ||
        tm_init_normal_(l->weight, 0.0, 1.0, rng) != TM_OK) {
        tm__relabel_error(__func__, tm_last_status());
        tm_embedding_layer_free(l);
        return NULL;
    }
    return l;
}

tm_tensor *tm_embedding_layer_forward(const tm_embedding_layer *l,
                                      const tm_tensor *indices)
{
    if (!l) {
        TM_ERR(TM_EINVAL, "layer is NULL");
        return NULL;
    }
    return tm_embedding(l->weight, indices);
}

tm_status tm_embedding_layer_params(const tm_embedding_layer *l,
                                    tm_params *set, const char *prefix)
{
    if (!l) return TM_ERR(TM_EINVAL, "layer is NULL");
    entry e[] = {{"weight", l->weight, false}};
    return add_entries(set, prefix, e, 1, __func__);
}

void tm_embedding_layer_free(tm_embedding_layer *l)
{
    if (!l) return;
    tm_free(l->weight);
    tm__dealloc(l);
}

/* ------------------------------------------------------------ dropout */

tm_dropout_layer *tm_dropout_layer_new(double p, tm_rng *rng)
{
    if (!(p >= 0.0 && p <= 1.0)) {
        TM_ERR(TM_EINVAL, "p must be in [0, 1], got %g", p);
        return NULL;
    }
    tm_dropout_layer *l = tm__calloc(sizeof *l, __func__);
    if (!l) return NULL;
    l->p = p;
    l->train = true;
    if (rng) {
        l->own_rng = true;
        l->rng = tm_rng_split(rng);
    }
    return l;
}

tm_tensor *tm_dropout_layer_forward(tm_dropout_layer *l, const tm_tensor *x)
{
    if (!l) {
        TM_ERR(TM_EINVAL, "layer is NULL");
        return NULL;
    }
    return tm_dropout(x, l->p, l->train, l->own_rng ? &l->rng : NULL);
}

void tm_dropout_layer_free(tm_dropout_layer *l) { tm__dealloc(l); }

/* ------------------------------------------------------------- conv2d */

tm_conv2d_layer *tm_conv2d_layer_new(int64_t in_channels,
                                     int64_t out_channels, int64_t kh,
                                     int64_t kw, const tm_conv2d_opts *opts,
                                     bool bias, tm_dtype dt, tm_rng *rng)
{
    if (check_dt(dt, __func__) != TM_OK) return NULL;
    tm_conv2d_opts o = opts ? *opts : tm_conv2d_defaults();
    if (in_channels < 1 || out_channels < 1 || kh < 1 || kw < 1) {
        TM_ERR(TM_EINVAL,
               "channels and kernel must be >= 1, got in %lld out %lld "
               "kernel %lldx%lld",
               (long long)in_channels, (long long)out_channels,
               (long long)kh, (long long)kw);
        return NULL;
    }
    if (o.groups < 1 || in_channels % o.groups || out_channels % o.groups) {
        TM_ERR(TM_EINVAL,
               "groups %lld must be >= 1 and divide in %lld and out %lld",
               (long long)o.groups, (long long)in_channels,
               (long long)out_channels);
        return NULL;
    }
    tm_conv2d_layer *l = tm__calloc(sizeof *l, __func__);
    if (!l) return NULL;
    l->in_channels = in_channels;
    l->out_channels = out_channels;
    l->kernel[0] = kh;
    l->kernel[1] = kw;
    l->opts = o;
    int64_t fan_in = in_channels / o.groups * kh * kw;
    if (!(l->weight = param((int64_t[]){out_channels, in_channels / o.groups,
                                        kh, kw},
                            4, dt, __func__)) ||
        tm_init_kaiming_uniform_(l->weight, sqrt(5.0), TM_FAN_IN,
                                 TM_NL_LEAKY_RELU, rng) != TM_OK)
        goto fail;
    if (bias) {
        double bound = 1.0 / sqrt((double)fan_in);
        if (!(l->bias = param((int64_t[]){out_channels}, 1, dt, __func__)) ||
            tm_init_uniform_(l->bias, -bound, bound, rng) != TM_OK)
            goto fail;
    }
    return l;
fail:
    tm__relabel_error(__func__, tm_last_status());
    tm_conv2d_layer_free(l);
    return NULL;
}

tm_tensor *tm_conv2d_layer_forward(const tm_conv2d_layer *l,
                                   const tm_tensor *x)
{
    if (!l) {
        TM_ERR(TM_EINVAL, "layer is NULL");
        return NULL;
    }
    return tm_conv2d(x, l->weight, l->bias, &l->opts);
}

tm_status tm_conv2d_layer_params(const tm_conv2d_layer *l, tm_params *set,
                                 const char *prefix)
{
    if (!l) return TM_ERR(TM_EINVAL, "layer is NULL");
    entry e[] = {{"weight", l->weight, false}, {"bias", l->bias, true}};
    return add_entries(set, prefix, e, 2, __func__);
}

void tm_conv2d_layer_free(tm_conv2d_layer *l)
{
    if (!l) return;
    tm_free(l->weight);
    tm_free(l->bias);
    tm__dealloc(l);
}
