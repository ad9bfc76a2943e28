/*
 * foundry/nn_functional.h — losses, dropout, embedding, convolution and
 * pooling (functional form, PyTorch semantics and argument names).
 *
 * Every function here records for autograd like the ops of foundry/ops.h:
 * float inputs that require grad receive gradients; integer inputs (class
 * indices, embedding indices) never do.  Inputs are borrowed and may have
 * any strides; results are new references; failures return NULL with
 * tm_last_error() set.  Float dtypes only (F16/BF16 are computed in F32).
 */
#ifndef FOUNDRY_NN_FUNCTIONAL_H
#define FOUNDRY_NN_FUNCTIONAL_H

#include "random.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a loss reduces its per-element values.  Values only ever appended. */
typedef enum tm_reduction {
    TM_REDUCTION_MEAN = 0, /* mean (see each loss for the divisor); 0-d */
    TM_REDUCTION_SUM = 1,  /* sum; 0-d */
    TM_REDUCTION_NONE = 2, /* the per-element losses */
    TM_REDUCTION_BATCHMEAN = 3 /* tm_kl_div only: the sum divided by the
                                  size of dim 0 (1 for 0-d); 0-d */
} tm_reduction;

/* ------------------------------------------------------------ losses */

typedef struct tm_cross_entropy_opts {
    tm_reduction reduction;  /* default TM_REDUCTION_MEAN */
    int64_t ignore_index;    /* class-index targets only; default -100 */
    double label_smoothing;  /* in [0, 1]; default 0 */
} tm_cross_entropy_opts;

/* {TM_REDUCTION_MEAN, -100, 0.0}. */
tm_cross_entropy_opts tm_cross_entropy_defaults(void);

/* Cross entropy from unnormalised logits, fused with log_softmax.
 * logits: [N, C] or [N, C, d1, ...] (classes on dim 1), or [C] (one
 * sample).  target is either
 * - class indices (I64 or I32) of shape [N] / [N, d1, ...] / [] with
 *   values in [0, C) or equal to opts.ignore_index (TM_ERANGE otherwise);
 * - class probabilities: a float tensor of logits' shape (ignore_index
 *   does not apply).
 * With label smoothing e the target distribution is q = (1 - e) y + e / C
 * (y the one-hot or probability target) and each sample's loss is
 * sum_c q_c (logsumexp(x) - x_c).  Reduction: NONE gives [N, d1, ...]
 * (0 for ignored samples), SUM the total, MEAN the total divided by the
 * number of non-ignored samples (class indices; NaN when there are none)
 * or by N * d1 * ... (probabilities).  Only the logits and the per-sample
 * logsumexp are kept for backward, never a probability matrix.  opts NULL
 * means the defaults.  Gradients flow to the logits and to probability
 * targets. */
tm_tensor *tm_cross_entropy(const tm_tensor *logits, const tm_tensor *target,
                            const tm_cross_entropy_opts *opts);
/* Negative log likelihood of log-probabilities: loss_i = -logp[i, t_i];
 * shapes, ignore_index and reductions as class-index cross entropy. */
tm_tensor *tm_nll_loss(const tm_tensor *logp, const tm_tensor *target,
                       tm_reduction reduction, int64_t ignore_index);
/* max(x, 0) - x y + log1p(exp(-|x|)) elementwise (stable for any x);
 * x and y have the same shape; MEAN divides by the number of elements. */
tm_tensor *tm_binary_cross_entropy_with_logits(const tm_tensor *x,
                                               const tm_tensor *y,
                                               tm_reduction reduction);
/* (x - y)^2, |x - y|, and with d = |x - y|:
 *   smooth_l1: 0.5 d^2 / beta if d < beta, else d - 0.5 beta (beta >= 0;
 *              beta 0 is l1);
 *   huber:     0.5 d^2 if d < delta, else delta (d - 0.5 delta) (delta > 0).
 * x and y broadcast; MEAN divides by the number of elements. */
tm_tensor *tm_mse_loss(const tm_tensor *x, const tm_tensor *y,
                       tm_reduction reduction);
tm_tensor *tm_l1_loss(const tm_tensor *x, const tm_tensor *y,
                      tm_reduction reduction);
tm_tensor *tm_smooth_l1_loss(const tm_tensor *x, const tm_tensor *y,
                             tm_reduction reduction, double beta);
tm_tensor *tm_huber_loss(const tm_tensor *x, const tm_tensor *y,
                         tm_reduction reduction, double delta);

/* --------------------------------------------------- dropout, embedding */

/* Zeroes each element with probability p and scales the rest by
 * 1 / (1 - p); p in [0, 1] (TM_EINVAL otherwise).  The keep mask is drawn
 * from `rng` (NULL: the default generator) as one F32 uniform per element
 * in row-major order (keep when u < 1 - p), so a given seed gives the
 * same mask for every float dtype.  train false or p == 0 returns a new
 * reference to x itself (no draw); p == 1 gives zeros (no draw).
 * Backward multiplies by the same saved mask. */
tm_tensor *tm_dropout(const tm_tensor *x, double p, bool train, tm_rng *rng);
/* Rows of weight [V, D] picked by integer indices of any shape:
 * out[..., :] = weight[indices[...], :], shape [..., D].  Indices outside
 * [0, V) are an error (TM_ERANGE, naming the index).  Backward adds each
 * output row's gradient into its weight row (repeated indices
 * accumulate). */
tm_tensor *tm_embedding(const tm_tensor *weight, const tm_tensor *indices);

/* ------------------------------------------------ convolution and pooling
 * PyTorch layouts: images are x [N, C, H, W].  Spatial settings are
 * {height, width} pairs (the N-d pools: one entry per spatial dim).
 * Float dtypes (F16/BF16 compute in F32, F64 in F64; the pools also take
 * integers); tensors on any one device.  Results are new contiguous
 * tensors of x's dtype; gradients flow to x (and weight, bias) when they
 * require grad ("ConvolutionBackward", "MaxPool2DBackward",
 * "AvgPool2DBackward", ...).  The adaptive pools, unpooling, interpolate
 * and the pad modes are composed of public ops (F16/BF16 then round
 * after each step, a few ulp from PyTorch's single rounding). */

/* Settings of tm_conv2d; start from tm_conv2d_defaults(). */
typedef struct tm_conv2d_opts {
    int64_t stride[2];   /* >= 1; default {1, 1} */
    int64_t padding[2];  /* zeros added on each side, >= 0; default {0, 0} */
    int64_t dilation[2]; /* spacing of kernel taps, >= 1; default {1, 1} */
    int64_t groups;      /* >= 1, divides C_in and C_out; default 1 */
} tm_conv2d_opts;
tm_conv2d_opts tm_conv2d_defaults(void);

/* 2-D cross-correlation (what PyTorch calls conv2d):
 *   x [N, C_in, H, W], weight [C_out, C_in/groups, kH, kW], bias [C_out]
 *   or NULL  ->  y [N, C_out, OH, OW] with
 *   OH = (H + 2*padding[0] - dilation[0]*(kH-1) - 1) / stride[0] + 1
 *   (OW likewise).  Output channel o of group g = o / (C_out/groups) sees
 *   input channels g*(C_in/groups) ... (g+1)*(C_in/groups)-1.
 * opts NULL means the defaults.  Computed by im2col and GEMM, one image at
 * a time (scratch of C_in*kH*kW*OH*OW elements); sums are in the compute
 * dtype.  Errors: NULL tensors, dtypes that differ or are not float
 * (TM_EDTYPE); wrong ranks or shapes, channels not divisible by groups,
 * a dilated kernel larger than the padded input (TM_ESHAPE); bad settings
 * (TM_EINVAL). */
tm_tensor *tm_conv2d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv2d_opts *opts);

/* ------------------------------------------- N-d and transposed convolution
 * One code path for 1, 2 and 3 spatial dims (nd).  The spatial settings
 * of an nd-dim convolution are the first nd entries of each array, in
 * PyTorch's order ({W}, {H, W}, {D, H, W}); the rest are ignored.  x is
 * [N, C_in, *spatial] (batched) or [C_in, *spatial] (unbatched: the
 * result has no batch dim either).  Dtypes, devices and results as
 * tm_conv2d; gradients flow to x, weight and bias ("ConvolutionBackward",
 * "ConvTransposeBackward"; the transposed bias through an add).
 * Errors: NULL tensors, dtypes that differ or are not float (TM_EDTYPE);
 * ranks, channels, groups, bias, kernels that do not fit or outputs of
 * size <= 0 (TM_ESHAPE); bad settings (TM_EINVAL).  Messages name the
 * function and the values. */

/* How tm_conv pads: by opts.padding, not at all, or so that the output
 * has the input's size (stride 1 only; a dilated kernel extent k' pads
 * (k'-1)/2 before and the rest, one more for an even k', after, as
 * PyTorch does). */
typedef enum tm_conv_pad_mode {
    TM_CONV_PAD_EXPLICIT = 0,
    TM_CONV_PAD_VALID,
    TM_CONV_PAD_SAME
} tm_conv_pad_mode;

/* Settings of tm_conv; start from tm_conv_defaults(). */
typedef struct tm_conv_opts {
    int64_t stride[3];   /* >= 1; default 1 */
    int64_t padding[3];  /* zeros on each side, >= 0; default 0 */
    int64_t dilation[3]; /* >= 1; default 1 */
    int64_t groups;      /* >= 1, divides C_in and C_out; default 1 */
    tm_conv_pad_mode pad_mode; /* default TM_CONV_PAD_EXPLICIT */
} tm_conv_opts;
tm_conv_opts tm_conv_defaults(void);

/* Cross-correlation over nd (1..3) spatial dims: weight [C_out,
 * C_in/groups, *k], bias [C_out] or NULL -> [N, C_out, *out] with
 * out = (in + 2*padding - dilation*(k-1) - 1) / stride + 1 per dim
 * (same: out = in).  opts NULL means the defaults.  Computed by the
 * conv entry (im2col + GEMM on the CPU). */
tm_tensor *tm_conv(const tm_tensor *x, const tm_tensor *weight,
                   const tm_tensor *bias, int nd, const tm_conv_opts *opts);
tm_tensor *tm_conv1d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv_opts *opts);
tm_tensor *tm_conv3d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv_opts *opts);

/* Settings of tm_conv_transpose; start from tm_conv_transpose_defaults(). */
typedef struct tm_conv_transpose_opts {
    int64_t stride[3];         /* >= 1; default 1 */
    int64_t padding[3];        /* removed from each side, >= 0; default 0 */
    int64_t output_padding[3]; /* added on the far side, >= 0 and smaller
                                  than the stride or the dilation;
                                  default 0 */
    int64_t dilation[3];       /* >= 1; default 1 */
    int64_t groups;            /* >= 1, divides C_in and C_out; default 1 */
} tm_conv_transpose_opts;
tm_conv_transpose_opts tm_conv_transpose_defaults(void);

/* Transposed convolution (the gradient of tm_conv with respect to its
 * input) over nd (1..3) spatial dims: weight [C_in, C_out/groups, *k],
 * bias [C_out] or NULL -> [N, C_out, *out] with
 *   out = (in - 1)*stride - 2*padding + dilation*(k-1) + output_padding + 1
 * per dim (must be >= 1).  opts NULL means the defaults.  Computed by the
 * conv_backward entry (its input gradient); its gradients by the conv
 * entry (input) and the conv_backward entry (weight). */
tm_tensor *tm_conv_transpose(const tm_tensor *x, const tm_tensor *weight,
                             const tm_tensor *bias, int nd,
                             const tm_conv_transpose_opts *opts);
tm_tensor *tm_conv_transpose1d(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias,
                               const tm_conv_transpose_opts *opts);
tm_tensor *tm_conv_transpose2d(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias,
                               const tm_conv_transpose_opts *opts);
tm_tensor *tm_conv_transpose3d(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias,
                               const tm_conv_transpose_opts *opts);

/* Settings of tm_max_pool2d / tm_avg_pool2d; start from
 * tm_pool2d_defaults() and set the kernel. */
typedef struct tm_pool2d_opts {
    int64_t kernel[2];  /* window, >= 1; default {2, 2} */
    int64_t stride[2];  /* >= 1, or 0 for "the kernel size" (default) */
    int64_t padding[2]; /* each side, 0 <= padding <= kernel / 2; default 0 */
    bool count_include_pad; /* avg only: divide by kH*kW even where the
                               window covers padding; default true */
} tm_pool2d_opts;
tm_pool2d_opts tm_pool2d_defaults(void);

/* Max / average over kH x kW windows of each channel: tm_max_pool_nd /
 * tm_avg_pool_nd (below) with 2 spatial dims, no dilation, floor mode:
 *   x [N, C, H, W] (or batchless [C, H, W]) -> y [N, C, OH, OW],
 *   OH = (H + 2*padding[0] - kernel[0]) / stride[0] + 1 (OW likewise).
 * Max pooling ignores padding, propagates NaN, and sends the gradient to
 * the first maximum of each window (in row-major order).  Average pooling
 * pads with zeros; it divides by kH*kW when count_include_pad, else by
 * the number of window elements inside x.  opts NULL means the defaults.
 * Errors as tm_max_pool_nd's. */
tm_tensor *tm_max_pool2d(const tm_tensor *x, const tm_pool2d_opts *opts);
tm_tensor *tm_avg_pool2d(const tm_tensor *x, const tm_pool2d_opts *opts);

/* ---------------------------------------------------------- activations
 * Elementwise unless noted; x is a float tensor of any shape (0-d and
 * empty included); the result has x's shape and dtype.  Composed from the
 * recorded ops of foundry/ops.h, so every device runs them and gradients
 * are PyTorch's (where a mask is strict in PyTorch, it is strict here).
 * Errors: NULL or non-float x (TM_EDTYPE), bad parameters (TM_EINVAL). */

/* x if x > 0, else alpha (exp(x) - 1); exp only sees min(x, 0), so large
 * x never overflows into the gradient. */
tm_tensor *tm_elu(const tm_tensor *x, double alpha);
/* scale * elu(x, a) with PyTorch's a = 1.6732632423543772,
 * scale = 1.0507009873554805. */
tm_tensor *tm_selu(const tm_tensor *x);
/* max(0, x) + min(0, alpha (exp(x / alpha) - 1)); alpha != 0. */
tm_tensor *tm_celu(const tm_tensor *x, double alpha);
/* clamp(x, min_val, max_val) (min_val <= max_val, not NaN); the gradient
 * is 1 strictly inside (min_val, max_val), 0 elsewhere.  relu6 is
 * hardtanh(x, 0, 6). */
tm_tensor *tm_hardtanh(const tm_tensor *x, double min_val, double max_val);
tm_tensor *tm_relu6(const tm_tensor *x);
/* relu6(x + 3) / 6 and x * relu6(x + 3) / 6. */
tm_tensor *tm_hardsigmoid(const tm_tensor *x);
tm_tensor *tm_hardswish(const tm_tensor *x);
/* x tanh(softplus(x)) (softplus with threshold 20, as PyTorch). */
tm_tensor *tm_mish(const tm_tensor *x);
/* x / (1 + |x|). */
tm_tensor *tm_softsign(const tm_tensor *x);
/* log(sigmoid(x)) = -(max(-x, 0) + log1p(exp(-|x|))), exact for any x. */
tm_tensor *tm_logsigmoid(const tm_tensor *x);
/* softmax(-x, dim). */
tm_tensor *tm_softmin(const tm_tensor *x, int dim);
/* a * sigmoid(b), where a and b are the first and second halves of x
 * along dim; dim's size must be even and x not 0-d (TM_ESHAPE). */
tm_tensor *tm_glu(const tm_tensor *x, int dim);
/* x if x > 0, else w x; weight (x's dtype, at most 1-D) has 1 element or
 * C = x's size on dim 1 (1 for x under 2-D), one slope per channel
 * (TM_ESHAPE otherwise).  Gradients flow to x and weight. */
tm_tensor *tm_prelu(const tm_tensor *x, const tm_tensor *weight);
/* Randomized leaky relu: x if x >= 0, else a x.  Not training: a =
 * (lower + upper) / 2 (no draw).  Training: one a per element drawn
 * uniformly from [lower, upper) by `rng` (NULL: the default generator)
 * in row-major order, as tm_uniform_.  lower <= upper, both finite. */
tm_tensor *tm_rrelu(const tm_tensor *x, double lower, double upper,
                    bool training, tm_rng *rng);
/* value where x <= threshold, else x (NaN stays NaN). */
tm_tensor *tm_threshold(const tm_tensor *x, double threshold, double value);
/* x - tanh(x). */
tm_tensor *tm_tanhshrink(const tm_tensor *x);
/* x - lambd above lambd, x + lambd below -lambd, 0 between; lambd finite
 * and >= 0. */
tm_tensor *tm_softshrink(const tm_tensor *x, double lambd);
/* 0 where |x| <= lambd, else x (any lambd; negative is the identity). */
tm_tensor *tm_hardshrink(const tm_tensor *x, double lambd);

/* -------------------------------------------------- losses and distances
 * Float tensors on one device; gradients flow to every float input except
 * where noted. */

/* x / max(||x||_p over dim, eps) (the norm kept as a dim); 0-d x takes
 * dim 0 or -1.  p and eps not NaN. */
tm_tensor *tm_normalize(const tm_tensor *x, double p, int dim, double eps);
/* w * ((y - 1) max(log(1 - x), -100) - y max(log(x), -100)) with
 * probabilities x in [0, 1] (TM_EINVAL otherwise, NaN included: this
 * reads x on the host) and y of x's shape (TM_ESHAPE otherwise); weight
 * NULL or broadcastable to x's shape, not differentiated.  MEAN divides
 * by the number of elements.  d/dx = w (x - y) / max(x (1 - x), 1e-12),
 * as PyTorch. */
tm_tensor *tm_binary_cross_entropy(const tm_tensor *x, const tm_tensor *y,
                                   const tm_tensor *weight,
                                   tm_reduction reduction);
/* Kullback-Leibler divergence of log-probabilities x from target y
 * (broadcast): y (log y - x) (0 where y == 0), or with log_target
 * exp(y) (y - x).  MEAN divides by the number of elements, BATCHMEAN by
 * x's size on dim 0 (the mathematically right KL). */
tm_tensor *tm_kl_div(const tm_tensor *x, const tm_tensor *y,
                     tm_reduction reduction, bool log_target);
/* sum(x1 / n1 * x2 / n2) over dim of the broadcast shape, with n_i =
 * max(||x_i||_2, eps) (PyTorch's: each norm clamped separately, the clamp
 * left out of the gradient).  dim is of the broadcast shape. */
tm_tensor *tm_cosine_similarity(const tm_tensor *x1, const tm_tensor *x2,
                                int dim, double eps);
/* ||x1 - x2 + eps||_p over the last dim of the broadcast shape (all of
 * it for 0-d), that dim kept as size 1 when keepdim. */
tm_tensor *tm_pairwise_distance(const tm_tensor *x1, const tm_tensor *x2,
                                double p, double eps, bool keepdim);
/* max(d(a, p) - d(a, n) + margin, 0) with d = pairwise_distance(., ., p,
 * eps); swap uses min(d(a, n), d(p, n)) for the negative distance.  The
 * three have one ndim (TM_ESHAPE otherwise); margin > 0 (TM_EINVAL).
 * MEAN divides by the number of triplets. */
tm_tensor *tm_triplet_margin_loss(const tm_tensor *anchor,
                                  const tm_tensor *positive,
                                  const tm_tensor *negative, double margin,
                                  double p, double eps, bool swap,
                                  tm_reduction reduction);

/* Margin and count losses; reductions as the pointwise losses (MEAN
 * divides by the number of elements of the unreduced loss).  Inputs
 * broadcast unless noted.
 * - margin_ranking: max(0, -y (x1 - x2) + margin); x1, x2 and y have one
 *   ndim (TM_ESHAPE otherwise).
 * - hinge_embedding: x where y == 1, max(0, margin - x) where y == -1
 *   (both summed for other y, as PyTorch).
 * - soft_margin: log(1 + exp(-y x)), computed as softplus (finite for
 *   any x).
 * - cosine_embedding: with cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12)
 *   (sum(x2^2) + 1e-12)) over the last dim, 1 - cos where y == 1 and
 *   max(0, cos - margin) where y == -1; x1, x2 are [N, D] with y [N], or
 *   [D] with a 0-d y (TM_ESHAPE otherwise).
 * - poisson_nll: exp(x) - y x (log_input), else x - y log(x + eps); full
 *   adds y log y - y + log(2 pi y) / 2 where y > 1.
 * - gaussian_nll: (log(v) + (x - y)^2 / v) / 2 (+ log(2 pi) / 2 when
 *   full) with v = max(var, eps) (the clamp left out of the gradient, as
 *   PyTorch's); var has x's shape, or x's without the last dim, or x's
 *   ndim with one dim of size 1 where x's differs (TM_ESHAPE otherwise);
 *   a negative var is an error (TM_EINVAL; this reads var on the host). */
tm_tensor *tm_margin_ranking_loss(const tm_tensor *x1, const tm_tensor *x2,
                                  const tm_tensor *y, double margin,
                                  tm_reduction reduction);
tm_tensor *tm_hinge_embedding_loss(const tm_tensor *x, const tm_tensor *y,
                                   double margin, tm_reduction reduction);
tm_tensor *tm_soft_margin_loss(const tm_tensor *x, const tm_tensor *y,
                               tm_reduction reduction);
tm_tensor *tm_cosine_embedding_loss(const tm_tensor *x1, const tm_tensor *x2,
                                    const tm_tensor *y, double margin,
                                    tm_reduction reduction);
tm_tensor *tm_poisson_nll_loss(const tm_tensor *x, const tm_tensor *y,
                               bool log_input, bool full, double eps,
                               tm_reduction reduction);
tm_tensor *tm_gaussian_nll_loss(const tm_tensor *x, const tm_tensor *y,
                                const tm_tensor *var, bool full, double eps,
                                tm_reduction reduction);
/* Settings of tm_im2col / tm_col2im (torch.nn.functional.unfold / fold);
 * start from tm_fold_defaults() and set the kernel. */
typedef struct tm_fold_opts {
    int64_t kernel[2];   /* block size, >= 1; default {1, 1} */
    int64_t dilation[2]; /* spacing of block taps, >= 1; default {1, 1} */
    int64_t padding[2];  /* zeros on each side, >= 0; default {0, 0} */
    int64_t stride[2];   /* >= 1; default {1, 1} */
} tm_fold_opts;
tm_fold_opts tm_fold_defaults(void);

/* Sliding blocks of an image as columns (torch's unfold):
 *   x [N, C, H, W] (or [C, H, W]) -> [N, C*kH*kW, L] (or [C*kH*kW, L]),
 *   L = OH * OW, OH = (H + 2*padding[0] - dilation[0]*(kH-1) - 1) /
 *   stride[0] + 1 (OW likewise), rows ordered (c, ki, kj).
 * tm_col2im is its adjoint (torch's fold): it sums every column back into
 * an image of output_size[2] = {H, W}, overlaps adding up:
 *   x [N, C*kH*kW, L] (or [C*kH*kW, L]) -> [N, C, H, W] (or [C, H, W]).
 * Both are a gather / scatter-add with one index computed from the
 * geometry, so each is the other's gradient; any dtype, any device.
 * Errors: wrong ranks, a channel dim not divisible by kH*kW, L not the
 * number of blocks, or no block fitting (TM_ESHAPE); bad settings
 * (TM_EINVAL). */
tm_tensor *tm_im2col(const tm_tensor *x, const tm_fold_opts *opts);
tm_tensor *tm_col2im(const tm_tensor *x, const int64_t *output_size,
                     const tm_fold_opts *opts);
/* Settings of the pools over 1 to 3 spatial dims (entry i is spatial dim
 * i; entries past the pooled dims are ignored); start from
 * tm_pool_defaults() and set the kernel. */
typedef struct tm_pool_opts {
    int64_t kernel[3];   /* window, >= 1; default 2 */
    int64_t stride[3];   /* >= 1, or 0 for "the kernel size" (default) */
    int64_t padding[3];  /* each side, >= 0, at most half the kernel;
                            default 0 */
    int64_t dilation[3]; /* max only: spacing of taps, >= 1; default 1 */
    bool ceil_mode;      /* round the window count up (the last window
                            must start inside x or its left padding);
                            default false */
    bool count_include_pad;   /* avg only; default true */
    int64_t divisor_override; /* avg only: > 0 divides every window by it;
                                 0 (default) for none */
} tm_pool_opts;
tm_pool_opts tm_pool_defaults(void);

/* Max / average pooling over the last `dims` (1, 2 or 3) dims of x
 * [N, C, *S] or batchless [C, *S], as torch.nn.functional.max_poolNd /
 * avg_poolNd: per spatial dim, the output size is
 *   floor-or-ceil((S + 2*padding - dilation*(kernel-1) - 1) / stride) + 1
 * less one in ceil mode when the last window would start past the input
 * and its left padding.  Max pooling ignores padding, keeps the first
 * maximum of each window (a NaN wins), and with indices non-NULL returns
 * in *indices (a new reference, I64, y's shape) the flat index of each
 * maximum within its (C-)plane, (z*H + y)*W + x.  Average pooling
 * divides by divisor_override, else by the window clipped to the padded
 * input (count_include_pad) or to x.  Float dtypes (F16/BF16 in F32) are
 * differentiable ("MaxPool<dims>DBackward", "AvgPool<dims>DBackward");
 * integer maxima are exact (computed in I64); integer averages compute
 * in F64 (exact while window sums stay below 2^53) and truncate toward
 * zero, as PyTorch's.  Returns a new reference.  Errors:
 * NULL x, BOOL or quantized dtype (TM_EDTYPE); x of another rank, an
 * empty non-batch dim, or an output size below 1 (TM_ESHAPE); bad
 * settings (TM_EINVAL). */
tm_tensor *tm_max_pool_nd(const tm_tensor *x, int dims,
                          const tm_pool_opts *opts, tm_tensor **indices);
tm_tensor *tm_avg_pool_nd(const tm_tensor *x, int dims,
                          const tm_pool_opts *opts);

/* Adaptive pooling over the last `dims` (1 to 3) dims of float x
 * [N, C, *S] or [C, *S] to output_size[dims] (a negative entry keeps
 * that dim's size; 0 gives an empty result), as
 * torch.nn.functional.adaptive_{avg,max}_poolNd: output i of a dim of
 * length L covers [floor(i*L/O), ceil((i+1)*L/O)).  The max keeps the
 * first maximum in row-major order and, with indices non-NULL, returns
 * in *indices (a new reference, I64) its flat index within the plane.
 * Composed of public ops (differentiable through them).  Returns a new
 * reference.  Errors: NULL x or output_size (TM_EINVAL), non-float dtype
 * (TM_EDTYPE), another rank or an empty non-batch dim (TM_ESHAPE). */
tm_tensor *tm_adaptive_avg_pool_nd(const tm_tensor *x, int dims,
                                   const int64_t *output_size);
tm_tensor *tm_adaptive_max_pool_nd(const tm_tensor *x, int dims,
                                   const int64_t *output_size,
                                   tm_tensor **indices);

/* Max unpooling, as torch.nn.functional.max_unpoolNd: float x and I64
 * indices of one shape [N, C, *S] or [C, *S] (S: `dims` dims) -> zeros
 * of [N, C, *output_size] (or [C, *output_size]) holding x at the flat
 * plane indices (a repeated index keeps the last value in row-major
 * order).  Reads the indices' range (a host synchronization point).
 * Differentiable in x.  Returns a new reference.  Errors: NULL tensors,
 * a negative output size (TM_EINVAL); x not float or indices not I64
 * (TM_EDTYPE); ranks or shapes that differ (TM_ESHAPE); an index outside
 * [0, prod(output_size)) (TM_ERANGE). */
tm_tensor *tm_max_unpool_nd(const tm_tensor *x, const tm_tensor *indices,
                            int dims, const int64_t *output_size);

/* Interpolation modes of tm_interpolate. */
typedef enum tm_interp_mode {
    TM_INTERP_NEAREST = 0,       /* PyTorch's "nearest" (floor(i*scale)) */
    TM_INTERP_NEAREST_EXACT = 1, /* "nearest-exact" (floor((i+.5)*scale)) */
    TM_INTERP_LINEAR = 2,        /* linear / bilinear / trilinear */
    TM_INTERP_CUBIC = 3          /* bicubic, A = -0.75, border clamped */
} tm_interp_mode;

/* Resamples float x [N, C, *S] (S: `dims` = 1 to 3 dims) to
 * [N, C, *size], as torch.nn.functional.interpolate: scales (NULL, or
 * one per dim; entries <= 0 mean none) is the scale_factor PyTorch uses
 * in the coordinate transform (1/scale instead of in/out) unless
 * align_corners, which maps corner pixel centres onto each other (linear
 * and cubic only; ignored by the nearest modes).  Composed of public ops
 * (differentiable through them).  Returns a new reference.  Errors: NULL
 * x or size, bad mode or dims (TM_EINVAL); non-float dtype (TM_EDTYPE);
 * x not (dims+2)-D, an input or output size below 1 (TM_ESHAPE). */
tm_tensor *tm_interpolate(const tm_tensor *x, int dims, const int64_t *size,
                          const double *scales, tm_interp_mode mode,
                          bool align_corners);
/* tm_interpolate with antialias=True (linear or cubic mode), as
 * PyTorch's: each output is a normalized filter (the triangle, or the
 * cubic with A = -0.5) over the inputs within its support, widened by the
 * scale when downsampling.  Same arguments and errors. */
tm_tensor *tm_interpolate_aa(const tm_tensor *x, int dims,
                             const int64_t *size, const double *scales,
                             tm_interp_mode mode, bool align_corners);

/* Padding modes of tm_pad_mode. */
typedef enum tm_padding_mode {
    TM_PAD_CONSTANT = 0,  /* value outside (tm_pad) */
    TM_PAD_REFLECT = 1,   /* mirror without repeating the edge */
    TM_PAD_REPLICATE = 2, /* repeat the edge */
    TM_PAD_CIRCULAR = 3   /* wrap around */
} tm_padding_mode;

/* torch.nn.functional.pad: pad[0], pad[1] are the (before, after)
 * amounts of the last dim, pad[2], pad[3] of the one before, ...;
 * negative amounts crop.  Constant mode is tm_pad (any rank).  The other
 * modes pad the last npad/2 (1 to 3) dims of a (npad/2 + 1)-D or
 * (npad/2 + 2)-D (batch mode) t of any dtype; reflect needs each amount
 * below its dim's size, circular at most that size; dims other than the
 * batch dim must be non-empty (circular: the padded dims).
 * Differentiable (through index_select).  Returns a new reference.
 * Errors: NULL t, a bad mode, bad amounts (TM_EINVAL); another rank or
 * an empty dim (TM_ESHAPE). */
tm_tensor *tm_pad_mode(const tm_tensor *t, const int64_t *pad, int npad,
                       tm_padding_mode mode, double value);

#ifdef __cplusplus
}
#endif
#endif
