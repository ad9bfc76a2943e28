/*
 * foundry/nn.h — parameters, initialisers and layers.
 *
 * A parameter is a float leaf tensor that requires grad, with a name
 * ("fc1.weight") and a no-weight-decay flag (biases and norm weights).
 * A tm_params set holds parameters in the order they were added; that
 * order and the names are stable, so optimizers (state per index), state
 * dicts (by name), adapters and the distributed module (same order on every
 * rank) can all consume the same set.
 *
 *   tm_linear_layer *fc1 = tm_linear_layer_new(2, 16, true, TM_F32, &rng);
 *   tm_linear_layer *fc2 = tm_linear_layer_new(16, 1, true, TM_F32, &rng);
 *   tm_params *ps = tm_params_new();
 *   tm_linear_layer_params(fc1, ps, "fc1");   // fc1.weight, fc1.bias
 *   tm_linear_layer_params(fc2, ps, "fc2");
 *   ... forward, tm_backward(loss) ...
 *   bool prev = tm_no_grad_begin();            // w -= lr * grad
 *   for (int i = 0; i < tm_params_count(ps); i++) { ... }
 *   tm_no_grad_end(prev);
 *   tm_params_zero_grad(ps);
 *
 * Ownership: a set holds its own reference to each tensor (tm_params_free
 * drops them); tensors returned by tm_params_get/find are borrowed.
 * Layers own their parameter tensors; their forward functions return new
 * references and record autograd nodes like any op.  Names and layer
 * structs are not thread-safe to mutate concurrently; forward passes of
 * one layer from several threads are fine.
 */
#ifndef FOUNDRY_NN_H
#define FOUNDRY_NN_H

#include "autograd.h"
#include "nn_functional.h"
#include "random.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------------- params */

typedef struct tm_params tm_params;

/* An empty set.  NULL (TM_ENOMEM) on allocation failure. */
tm_params *tm_params_new(void);
/* Drops the set's references and its names.  NULL is a no-op. */
void tm_params_free(tm_params *set);
/* Appends `t` under `name` (copied) and marks it as requiring grad.  t must
 * be a float leaf tensor (TM_EDTYPE / TM_ESTATE); the name is non-empty
 * and not yet in the set (TM_EINVAL, naming it).  The set takes its own
 * reference (the caller keeps its one).  On failure nothing changes.
 * To freeze a parameter (adapters, fine-tuning) call tm_requires_grad_(t,
 * false) after adding it; it stays in the set and gets no gradient.
 * The same tensor may be added under two names (tied weights); an
 * optimizer walking the set then sees it twice. */
tm_status tm_params_add(tm_params *set, const char *name, tm_tensor *t,
                        bool no_decay);
/* Appends a buffer: a tensor that is state but not a parameter (running
 * statistics, optimizer state, anything a state dict must carry).  Any
 * dense dtype; its requires-grad flag is left alone; it is marked no-decay
 * and tm_params_is_buffer reports it, so optimizers skip it.  Same naming
 * rules and reference handling as tm_params_add. */
tm_status tm_params_add_buffer(tm_params *set, const char *name,
                               tm_tensor *t);
/* Appends every entry of `other` (parameters and buffers), in order, under "prefix.name" (just
 * "name" when prefix is NULL or ""), keeping the no-decay flags; this is
 * how modules nest.  All or nothing: on a duplicate name (TM_EINVAL) or
 * any failure the set is unchanged.  set and other must differ. */
tm_status tm_params_add_all(tm_params *set, const char *prefix,
                            const tm_params *other);
/* Number of entries, parameters and buffers (0 for NULL). */
int tm_params_count(const tm_params *set);
/* Total number of elements over all parameters. */
int64_t tm_params_numel(const tm_params *set);
/* Parameter i (borrowed), its name (borrowed, valid while the set lives)
 * and its no-decay flag.  An i out of [0, count) gives NULL / false with
 * TM_ERANGE set. */
tm_tensor *tm_params_get(const tm_params *set, int i);
const char *tm_params_name(const tm_params *set, int i);
bool tm_params_no_decay(const tm_params *set, int i);
/* True when entry i was added with tm_params_add_buffer. */
bool tm_params_is_buffer(const tm_params *set, int i);
/* Index of the parameter called `name`, or -1 (no error set). */
int tm_params_index(const tm_params *set, const char *name);
/* The parameter called `name` (borrowed), or NULL with TM_EINVAL set. */
tm_tensor *tm_params_find(const tm_params *set, const char *name);
/* Drops every parameter's accumulated gradient (tm_zero_grad). */
void tm_params_zero_grad(tm_params *set);

/* ---------------------------------------------------------------- init
 * In-place initialisers, as torch.nn.init.  They write under no-grad, so
 * they work on parameters that require grad; t must be a float tensor
 * without broadcast (stride 0) dims.  rng NULL uses the default generator.
 * A zero-element tensor is left as is (TM_OK). */

typedef enum tm_fan_mode { TM_FAN_IN = 0, TM_FAN_OUT = 1 } tm_fan_mode;

typedef enum tm_nonlinearity {
    TM_NL_LINEAR = 0,     /* also conv and identity: gain 1 */
    TM_NL_SIGMOID = 1,    /* 1 */
    TM_NL_TANH = 2,       /* 5/3 */
    TM_NL_RELU = 3,       /* sqrt(2) */
    TM_NL_LEAKY_RELU = 4, /* sqrt(2 / (1 + a^2)), a = negative slope */
    TM_NL_SELU = 5        /* 3/4 */
} tm_nonlinearity;

/* The recommended gain of a nonlinearity (torch.nn.init.calculate_gain);
 * `param` is the leaky-relu slope and ignored otherwise.  NaN with
 * TM_EINVAL for an unknown value. */
double tm_init_gain(tm_nonlinearity nl, double param);
/* Fans as PyTorch computes them: for shape [out, in, k...],
 * fan_in = in * prod(k), fan_out = out * prod(k).  Tensors with fewer than
 * 2 dims fail (TM_EINVAL). */
tm_status tm_init_fans(const tm_tensor *t, int64_t *fan_in,
                       int64_t *fan_out);

tm_status tm_init_zeros_(tm_tensor *t);
tm_status tm_init_ones_(tm_tensor *t);
tm_status tm_init_constant_(tm_tensor *t, double value);
/* U[low, high) and N(mean, std^2), as tm_uniform_ / tm_normal_. */
tm_status tm_init_uniform_(tm_tensor *t, double low, double high,
                           tm_rng *rng);
tm_status tm_init_normal_(tm_tensor *t, double mean, double std,
                          tm_rng *rng);
/* N(mean, std^2) restricted to [a, b] (a < b), by rejection: draws
 * outside [a, b] are redrawn, so values are exactly distributed.  Fails
 * (TM_EINVAL) when [a, b] holds less than 1e-3 of the normal's mass, where
 * rejection would be slow.  Drawn in F64, then rounded to t's dtype. */
tm_status tm_init_trunc_normal_(tm_tensor *t, double mean, double std,
                                double a, double b, tm_rng *rng);
/* Glorot: std = gain * sqrt(2 / (fan_in + fan_out)); uniform over
 * [-sqrt(3) std, sqrt(3) std) or normal. */
tm_status tm_init_xavier_uniform_(tm_tensor *t, double gain, tm_rng *rng);
tm_status tm_init_xavier_normal_(tm_tensor *t, double gain, tm_rng *rng);
/* He: std = gain(nl, a) / sqrt(fan), fan chosen by `mode`; uniform over
 * [-sqrt(3) std, sqrt(3) std) or normal.  PyTorch's default is
 * (a = 0, TM_FAN_IN, TM_NL_LEAKY_RELU). */
tm_status tm_init_kaiming_uniform_(tm_tensor *t, double a, tm_fan_mode mode,
                                   tm_nonlinearity nl, tm_rng *rng);
tm_status tm_init_kaiming_normal_(tm_tensor *t, double a, tm_fan_mode mode,
                                  tm_nonlinearity nl, tm_rng *rng);

/* -------------------------------------------------------------- layers
 * Each layer is a plain struct: _new creates it with PyTorch's default
 * init (dt a float dtype; rng NULL = default generator) or returns NULL;
 * _forward returns a new reference (NULL on error); _params adds the
 * layer's parameters to `set` under "prefix.weight" etc. (all or nothing);
 * _free releases it (NULL is a no-op).  The parameter tensors are public
 * fields: read them, load into them under no-grad, never replace them. */

/* y = x W^T + b.  x [..., in] -> y [..., out].  weight [out, in]:
 * kaiming_uniform(a = sqrt(5)), i.e. U(+-1/sqrt(in)); bias [out] (no
 * decay): U(+-1/sqrt(in)). */
typedef struct tm_linear_layer {
    int64_t in_features, out_features;
    tm_tensor *weight; /* [out, in] */
    tm_tensor *bias;   /* [out] or NULL */
} tm_linear_layer;
tm_linear_layer *tm_linear_layer_new(int64_t in_features,
                                     int64_t out_features, bool bias,
                                     tm_dtype dt, tm_rng *rng);
tm_tensor *tm_linear_layer_forward(const tm_linear_layer *l,
                                   const tm_tensor *x);
tm_status tm_linear_layer_params(const tm_linear_layer *l, tm_params *set,
                                 const char *prefix);
void tm_linear_layer_free(tm_linear_layer *l);

/* Normalises the last dim: x [..., dim] -> same shape.  weight ones and
 * bias zeros [dim] (both no decay, NULL when affine is false). */
typedef struct tm_layer_norm_layer {
    int64_t dim;
    double eps;        /* 1e-5 by default */
    tm_tensor *weight; /* [dim] or NULL */
    tm_tensor *bias;   /* [dim] or NULL */
} tm_layer_norm_layer;
tm_layer_norm_layer *tm_layer_norm_layer_new(int64_t dim, double eps,
                                             bool affine, tm_dtype dt);
tm_tensor *tm_layer_norm_layer_forward(const tm_layer_norm_layer *l,
                                       const tm_tensor *x);
tm_status tm_layer_norm_layer_params(const tm_layer_norm_layer *l,
                                     tm_params *set, const char *prefix);
void tm_layer_norm_layer_free(tm_layer_norm_layer *l);

/* x / sqrt(mean(x^2) + eps) * weight over the last dim; weight ones [dim]
 * (no decay). */
typedef struct tm_rms_norm_layer {
    int64_t dim;
    double eps;        /* e.g. 1e-6 */
    tm_tensor *weight; /* [dim] */
} tm_rms_norm_layer;
tm_rms_norm_layer *tm_rms_norm_layer_new(int64_t dim, double eps,
                                         tm_dtype dt);
tm_tensor *tm_rms_norm_layer_forward(const tm_rms_norm_layer *l,
                                     const tm_tensor *x);
tm_status tm_rms_norm_layer_params(const tm_rms_norm_layer *l,
                                   tm_params *set, const char *prefix);
void tm_rms_norm_layer_free(tm_rms_norm_layer *l);

/* The transformer MLP block: fc2(gelu(fc1(x))), x [..., dim] ->
 * [..., dim], hidden width `hidden`; parameters "fc1.weight", "fc1.bias",
 * "fc2.weight", "fc2.bias" under the prefix. */
typedef struct tm_mlp_layer {
    tm_linear_layer *fc1; /* dim -> hidden */
    tm_linear_layer *fc2; /* hidden -> dim */
} tm_mlp_layer;
tm_mlp_layer *tm_mlp_layer_new(int64_t dim, int64_t hidden, bool bias,
                               tm_dtype dt, tm_rng *rng);
tm_tensor *tm_mlp_layer_forward(const tm_mlp_layer *l, const tm_tensor *x);
tm_status tm_mlp_layer_params(const tm_mlp_layer *l, tm_params *set,
                              const char *prefix);
void tm_mlp_layer_free(tm_mlp_layer *l);

/* Rows of a [num, dim] table picked by integer indices: indices [...]
 * (I64 or I32) -> [..., dim].  weight: N(0, 1), as PyTorch. */
typedef struct tm_embedding_layer {
    int64_t num, dim;
    tm_tensor *weight; /* [num, dim] */
} tm_embedding_layer;
tm_embedding_layer *tm_embedding_layer_new(int64_t num, int64_t dim,
                                           tm_dtype dt, tm_rng *rng);
tm_tensor *tm_embedding_layer_forward(const tm_embedding_layer *l,
                                      const tm_tensor *indices);
tm_status tm_embedding_layer_params(const tm_embedding_layer *l,
                                    tm_params *set, const char *prefix);
void tm_embedding_layer_free(tm_embedding_layer *l);

/* Dropout with probability p (tm_dropout): active while `train` is set
 * (the default), the identity otherwise.  It has no parameters.  With an
 * rng the layer owns a stream split from it (tm_rng_split), so its masks
 * are reproducible on their own; with NULL it draws from the default
 * generator.  Forward advances the layer's stream, so a layer must not be
 * run from several threads at once. */
typedef struct tm_dropout_layer {
    double p;
    bool train;
    bool own_rng; /* whether `rng` is used (else the default generator) */
    tm_rng rng;
} tm_dropout_layer;
tm_dropout_layer *tm_dropout_layer_new(double p, tm_rng *rng);
tm_tensor *tm_dropout_layer_forward(tm_dropout_layer *l, const tm_tensor *x);
void tm_dropout_layer_free(tm_dropout_layer *l);

/* 2-D convolution (tm_conv2d): x [N, in, H, W] -> [N, out, OH, OW].
 * weight [out, in/groups, kh, kw]: kaiming_uniform(a = sqrt(5)), i.e.
 * U(+-1/sqrt(fan_in)) with fan_in = in/groups * kh * kw; bias [out] (no
 * decay): U(+-1/sqrt(fan_in)).  opts NULL means tm_conv2d_defaults();
 * groups must divide in and out (TM_EINVAL). */
typedef struct tm_conv2d_layer {
    int64_t in_channels, out_channels, kernel[2];
    tm_conv2d_opts opts;
    tm_tensor *weight; /* [out, in/groups, kh, kw] */
    tm_tensor *bias;   /* [out] or NULL */
} tm_conv2d_layer;
tm_conv2d_layer *tm_conv2d_layer_new(int64_t in_channels,
                                     int64_t out_channels, int64_t kh,
                                     int64_t kw, const tm_conv2d_opts *opts,
                                     bool bias, tm_dtype dt, tm_rng *rng);
tm_tensor *tm_conv2d_layer_forward(const tm_conv2d_layer *l,
                                   const tm_tensor *x);
tm_status tm_conv2d_layer_params(const tm_conv2d_layer *l, tm_params *set,
                                 const char *prefix);
void tm_conv2d_layer_free(tm_conv2d_layer *l);

#ifdef __cplusplus
}
#endif
#endif
