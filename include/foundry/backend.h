/*
 * foundry/backend.h — the table a device backend fills in.
 *
 * Op code (tm_add, tm_conv2d, an optimizer step, ...) validates arguments,
 * works out result shapes and dtypes, allocates results and then calls the
 * backend of the tensors' device through this table.  A new backend (CUDA,
 * Metal) plugs in by filling a tm_backend and registering it; no op code
 * changes.  docs/backends.md says what to implement first and how to run
 * the conformance suite (tests/backend) against it.
 *
 * Devices and contexts.  One table serves every device of its type
 * (cuda:0, cuda:1, ...).  The core opens a context (tm_ctx) per device at
 * first use and passes it to every entry: it carries the device, the
 * backend's own state for it (its stream: an ordered queue of work),
 * scratch memory and a sticky error status.
 *
 * Streams and errors.  An entry may run its work at once (the CPU) or
 * queue it and return (an asynchronous device).  Either way work runs in
 * the order it was queued.  An entry returns an error itself only for what
 * it can tell before running (an op or dtype it lacks, a failed launch);
 * an error found while the work runs (an index out of range, a kernel that
 * faulted) is recorded with tm_ctx_fail and reported by the next
 * synchronization of that device.  After an error the backend may skip the
 * rest of the queued work: results are undefined until the error has been
 * reported.  The public calls that synchronize the host are listed in
 * docs/backends.md ("Host synchronization").
 *
 * Buffers.  Kernels see tensors as tm_buf: the storage's backend handle (a
 * host address on the CPU, a device pointer on CUDA, an MTLBuffer on
 * Metal), a byte offset to the first element, and shape/strides in
 * elements.  Front ends have already
 *   - broadcast every operand to the output's shape (stride 0 where
 *     broadcast), so kernels never apply broadcasting rules themselves;
 *   - checked dtypes, dims, shapes and parameter values;
 *   - asked `supports` and converted operands the backend declines to F32
 *     (or I64 for integers), so a backend may start with F32 kernels.
 * A buffer with handle NULL is an absent optional operand.
 */
#ifndef FOUNDRY_BACKEND_H
#define FOUNDRY_BACKEND_H

#include "nn_functional.h"
#include "ops.h"
#include "random.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the layout or meaning of tm_backend changes. */
#define TM_BACKEND_ABI_VERSION 7

/* A strided view as kernels see it. */
typedef struct tm_buf {
    void *handle;  /* the storage's backend handle; NULL: operand absent */
    size_t offset; /* bytes from the start of the handle's memory to the
                      first element */
    tm_dtype dtype;
    int ndim;
    int64_t shape[TM_MAX_DIMS];
    int64_t strides[TM_MAX_DIMS]; /* in elements */
} tm_buf;

/* ------------------------------------------------------------- contexts */

typedef struct tm_ctx tm_ctx;

tm_device tm_ctx_device(const tm_ctx *ctx);
/* The backend's own state for this device, as its `open` stored it. */
void *tm_ctx_impl(const tm_ctx *ctx);
void tm_ctx_set_impl(tm_ctx *ctx, void *impl);
/* Records an error found by work that ran asynchronously: the first since
 * the last synchronization is kept with its message, later ones are
 * dropped.  Safe from any thread.  Returns st. */
tm_status tm_ctx_fail(tm_ctx *ctx, tm_status st, const char *message);
/* The recorded error (TM_OK when none), without clearing it. */
tm_status tm_ctx_status(tm_ctx *ctx);
/* Device memory of at least `bytes` (a handle), owned by the context and
 * valid until the context's next tm_ctx_scratch call.  For backends whose
 * stream orders all work: an entry may use it for the work it queues,
 * since the next entry's work runs after.  NULL (error set) on failure,
 * and on the CPU, whose entries run on several callers' threads at once
 * (TM_EUNSUPPORTED). */
void *tm_ctx_scratch(tm_ctx *ctx, size_t bytes);
/* The context of `dev`, opened at first use; NULL (error set) when the
 * device has no backend or does not open. */
tm_ctx *tm_device_ctx(tm_device dev);

/* --------------------------------------------------------- entry names
 * Each compute entry has an id, used by `supports` and in error messages
 * ("device test:1 has no 'conv' entry"). */
#define TM_BACKEND_ENTRIES(X)                                                 \
    X(COPY, copy) X(FILL, fill) X(SEQUENCE, sequence) X(UNARY, unary)         \
    X(BINARY, binary) X(WHERE, where) X(REDUCE, reduce)                       \
    X(ARG_REDUCE, arg_reduce) X(CUMSUM, cumsum) X(GEMM, gemm)                 \
    X(GATHER, gather) X(SCATTER, scatter) X(INDEX_SELECT, index_select)       \
    X(SORT, sort) X(SOFTMAX, softmax) X(NORM_ROWS, norm_rows)                 \
    X(NORM_ROWS_BACKWARD, norm_rows_backward) X(RANDOM, random)               \
    X(CONV, conv) X(CONV_BACKWARD, conv_backward) X(POOL, pool)               \
    X(POOL_BACKWARD, pool_backward) X(LOSS, loss)                             \
    X(LOSS_BACKWARD, loss_backward)                                           \
    X(EMBEDDING_BACKWARD, embedding_backward) X(OPTIM_STEP, optim_step)       \
    X(GRAD_NORM, grad_norm) X(SCAN, scan)                                     \
    X(SCATTER_REDUCE, scatter_reduce) X(ATTENTION, attention)                 \
    X(ATTENTION_BACKWARD, attention_backward) X(ROPE, rope)                   \
    X(QUANTIZE, quantize) X(QMATMUL, qmatmul)                                 \
    X(QMATMUL_BACKWARD, qmatmul_backward)

typedef enum tm_entry {
#define TM__ENTRY_ENUM(E, n) TM_ENTRY_##E,
    TM_BACKEND_ENTRIES(TM__ENTRY_ENUM)
#undef TM__ENTRY_ENUM
    TM_ENTRY_COUNT
} tm_entry;

/* "copy", "conv", ... ("invalid" otherwise). */
const char *tm_entry_name(tm_entry e);

/* --------------------------------------------------- entry parameters */

/* arange / linspace / eye / the tril-triu keep-mask, for `sequence`. */
typedef enum tm_seq_kind {
    TM_SEQ_ARANGE,   /* dst (1-D) [i] = a + i * b, in double, rounded once */
    TM_SEQ_LINSPACE, /* dst (1-D, n > 1) [i] = a + i * (b - a) / (n - 1),
                        exactly b at i = n - 1 */
    TM_SEQ_EYE,      /* dst (2-D) = 1 on the diagonal, 0 elsewhere */
    TM_SEQ_TRIL,     /* dst (2-D BOOL) [i, j] = j - i <= k */
    TM_SEQ_TRIU      /* dst (2-D BOOL) [i, j] = j - i >= k */
} tm_seq_kind;

/* One convolution of up to 3 spatial dims (2-D has D = KD = OD = 1, SD =
 * DD = 1, PD = 0; 1-D also has H = KH = OH = 1).  x is (N, C, D, H, W),
 * weight (OC, C/G, KD, KH, KW), bias (OC), y (N, OC, OD, OH, OW); output
 * (oz, oy, ox) reads x[.., oz*SD - PD + l*DD, oy*SH - PH + i*DH,
 * ox*SW - PW + j*DW] (0 outside x).  OD, OH, OW are given, not derived
 * from the padding: padding 'same' with an even kernel and the transposed
 * convolutions (which run on conv_backward's dx and on conv) read past
 * x's far edge, and those reads are 0 too. */
typedef struct tm_conv_geom {
    int64_t n, c, h, w;
    int64_t oc, kh, kw;
    int64_t oh, ow;
    int64_t sh, sw, ph, pw, dh, dw; /* stride, padding, dilation */
    int64_t g;                      /* groups */
    int64_t d, kd, od, sd, pd, dd;  /* depth: size, kernel, output, stride,
                                       padding, dilation */
} tm_conv_geom;

/* One pooling over 1 to 3 spatial dims: x is (P, D, H, W) with P = N*C
 * planes, y (P, OD, OH, OW); window KD x KH x KW at stride (SD, SH, SW)
 * over x padded by (PD, PH, PW), taps spaced by the dilation (DD, DH,
 * DW), clipped to x.  The window of output (oz, oy, ox) starts at
 * (oz*SD - PD, oy*SH - PH, ox*SW - PW); with ceil mode the last one may
 * run past the padded input.  Average pooling (dilation 1) divides by
 * divisor when it is > 0, else by the window clipped to the padded input
 * (include_pad) or to x.  A 2-D pooling has d = od = kd = sd = dd = 1,
 * pd = 0, dh = dw = 1, divisor = 0. */
typedef struct tm_pool_geom {
    int64_t planes, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw;
    bool include_pad;
    int64_t d, od, kd, sd, pd; /* depth: size, output, kernel, stride, pad */
    int64_t dd, dh, dw;        /* dilation (max pooling) */
    int64_t divisor;           /* average pooling: > 0 overrides */
} tm_pool_geom;

typedef enum tm_loss_kind {
    TM_LOSS_CE_INDEX, /* cross entropy, target = class indices (M) */
    TM_LOSS_CE_PROB,  /* cross entropy, target = probabilities (M, C) */
    TM_LOSS_NLL       /* nll_loss: x holds log-probabilities */
} tm_loss_kind;

typedef struct tm_loss_params {
    tm_loss_kind kind;
    tm_reduction reduction;
    int64_t ignore_index; /* index kinds: rows with this target are
                             skipped (count toward nothing) */
    double label_smoothing;
} tm_loss_params;

/* Everything one optimizer update needs, decided by the front end per
 * parameter and step.  Doubles are cast to the element type inside the
 * kernel, exactly where PyTorch casts its Python-float scalars. */
typedef enum tm_update_kind {
    TM_UPDATE_SGD,     /* s0 momentum_buffer */
    TM_UPDATE_ADAM,    /* s0 exp_avg, s1 exp_avg_sq, s2 max_exp_avg_sq
                          (AdamW too: `decoupled`) */
    TM_UPDATE_RMSPROP, /* s0 square_avg, s1 grad_avg, s2 momentum_buffer */
    TM_UPDATE_ADAGRAD  /* s0 sum */
} tm_update_kind;

typedef struct tm_optim_update {
    tm_update_kind kind;
    bool maximize;
    bool decay;     /* weight_decay != 0 and the parameter may decay */
    bool decoupled; /* AdamW: p *= decay_mul instead of g += wd p */
    bool momentum;  /* SGD / RMSprop keep a momentum buffer */
    bool first;     /* SGD: the buffer is created from this grad */
    bool nesterov;
    bool amsgrad;
    bool centered;
    double wd;
    double decay_mul; /* 1 - lr * wd */
    double neg_lr;    /* -lr (SGD, RMSprop) */
    double mom;
    double damp1;     /* 1 - dampening */
    double w1;        /* 1 - beta1 (lerp weight) */
    double beta2, c2; /* beta2, 1 - beta2 */
    double bc2_sqrt;  /* (1 - beta2^step)^0.5 */
    double neg_step;  /* -(lr / (1 - beta1^step)) for Adam, -clr Adagrad */
    double eps;
    double alpha, ca; /* RMSprop alpha, 1 - alpha */
} tm_optim_update;

/* The norm of `grad_norm`: (sum |x|^p)^(1/p) over every element of every
 * buffer; TM_NORM_INF is max |x| (a NaN wins). */
typedef enum tm_norm_kind { TM_NORM_P, TM_NORM_L2, TM_NORM_L1, TM_NORM_INF }
    tm_norm_kind;

/* The running operation of `scan`. */
typedef enum tm_scan_kind {
    TM_SCAN_SUM,      /* running sum */
    TM_SCAN_PROD,     /* running product */
    TM_SCAN_MAX,      /* running max, with the index where it was taken */
    TM_SCAN_MIN,      /* running min, likewise */
    TM_SCAN_LOGSUMEXP /* running log(sum(exp(x))) */
} tm_scan_kind;

/* One scaled-dot-product attention, for `attention` and
 * `attention_backward`.  Shapes: q (B, H, Tq, D), k (B, Hkv, Tk, D),
 * v (B, Hkv, Tk, Dv), out (B, H, Tq, Dv), lse (B, H, Tq), mask (B, H, Tq,
 * Tk), with H a multiple of Hkv: query head h reads key/value head
 * h / (H / Hkv) (grouped-query attention; Hkv == 1 is multi-query).
 *
 * Which keys a query sees.  Query i sees key j when all of these hold:
 *   causal:      j <= i + offset   (offset 0 is PyTorch's is_causal, the
 *                                   diagonal aligned top-left; Tk - Tq
 *                                   aligns it bottom-right: a chunk of new
 *                                   queries after a KV cache of Tk - Tq)
 *   window > 0:  j > i + offset - window   (at most the last `window`
 *                                   keys up to the diagonal)
 *   mask BOOL:   mask[b, h, i, j] is true (true = takes part, as PyTorch)
 * A float mask is instead added to the scaled score: s = scale * q.k +
 * mask[b, h, i, j] (-inf hides the key).  A query that sees no key (or
 * only -inf scores) has out = 0 and lse = -inf, and passes no gradient.
 *
 * Dropout.  With dropout_p > 0 each softmax weight w[b, h, i, j] is kept
 * with probability 1 - p and scaled by 1 / (1 - p), else dropped, after
 * the softmax (PyTorch's order); lse is that of the undropped softmax.
 * The decision for element e = ((b*H + h)*Tq + i)*Tk + j is the one
 * tm_uniform_ would draw for element e of an F32 (B, H, Tq, Tk) tensor
 * from `rng` (random.h): word e % 4 of Philox block rng.counter + e / 4,
 * u = (word >> 8) * 2^-24, kept iff u < (float)(1 - p).  The backward
 * regenerates the same decisions from the same rng; nothing is stored.
 * The front end advances the caller's generator by ceil(B*H*Tq*Tk / 4)
 * blocks. */
typedef struct tm_attn_params {
    double scale;     /* multiplies q.k (the front end's default 1/sqrt(D)) */
    bool causal;
    int64_t offset;   /* the diagonal of causal and window (above) */
    int64_t window;   /* > 0: a sliding window of that many keys; 0: none */
    double dropout_p; /* in [0, 1); 0: no dropout (rng unused) */
    tm_rng rng;
} tm_attn_params;

/* Rotary position embedding, for `rope`: the first rotary_dim (even) of
 * x's last dim D are rotated in pairs (x1, x2) by the angle whose cosine
 * and sine are given,
 *     out1 = x1 cos - x2 sin,   out2 = x2 cos + x1 sin
 * (with -sin when `inverse`: the backward, a rotation back); the other
 * D - rotary_dim elements are copied.  Pair t (0 <= t < rotary_dim / 2) is
 * (2t, 2t + 1) when `interleaved` (GPT-J, ggml's normal mode), else
 * (t, t + rotary_dim / 2) (GPT-NeoX, Hugging Face Llama). */
typedef struct tm_rope_params {
    int64_t rotary_dim;
    bool interleaved;
    bool inverse;
} tm_rope_params;

/* ---------------------------------------------------------------- table */

typedef struct tm_backend {
    uint32_t abi_version; /* TM_BACKEND_ABI_VERSION: checked at registration */
    uint32_t size;        /* sizeof(tm_backend) as compiled by the backend */
    const char *name;     /* the device type's name: "cpu", "cuda", ... */
    tm_device_type type;

    /* ---- devices and streams (any may be NULL: see each) ---- */

    /* How many devices of this type there are (NULL: one). */
    int (*device_count)(void);
    /* Opens device tm_ctx_device(ctx).index: creates its stream and stores
     * its state with tm_ctx_set_impl (NULL: nothing to open).  A context
     * lives until the process ends (storages point at it), so there is no
     * close. */
    tm_status (*open)(tm_ctx *ctx);
    /* Waits until all work queued on the stream has run; errors that work
     * found have gone to tm_ctx_fail (NULL: the backend is synchronous). */
    void (*synchronize)(tm_ctx *ctx);
    /* Whether `entry` (with `op`: a tm_unary_op / tm_binary_op /
     * tm_reduce_op / tm_seq_kind / tm_loss_kind / tm_update_kind /
     * tm_scan_kind, else 0)
     * runs on buffers of dtypes[0..n) — the entry's tm_buf parameters in
     * order, absent ones skipped.  NULL: every entry that is not NULL runs
     * every dtype the CPU runs.  `copy` must run every pair of dtypes. */
    bool (*supports)(tm_ctx *ctx, tm_entry entry, int op,
                     const tm_dtype *dtypes, int n);

    /* ---- memory ---- */

    /* A handle to `bytes` of device memory, NULL (error set) on failure.
     * Foundry's caching allocator sits in front: the backend sees whole
     * size-class blocks, and each block once until the cache lets go. */
    void *(*alloc)(tm_ctx *ctx, size_t bytes);
    /* Releases a block after the work queued before this call is done
     * with it (stream-ordered). */
    void (*free)(tm_ctx *ctx, void *handle);
    /* Byte copies between host memory and the device.  to_device runs
     * after the work already queued (it may overwrite memory that work
     * reads) and has finished with src when it returns.  to_host waits
     * for the queued work first.  Neither reports errors of other work. */
    tm_status (*to_device)(tm_ctx *ctx, void *dst, size_t dst_offset,
                           const void *src_host, size_t bytes);
    tm_status (*to_host)(tm_ctx *ctx, void *dst_host, const void *src,
                         size_t src_offset, size_t bytes);

    /* ---- compute (NULL: the device lacks it; front ends report so) ---- */

    /* dst = src, same shape, converting dtype.  Overlap is handled by the
     * front end (it copies through a temporary). */
    tm_status (*copy)(tm_ctx *ctx, const tm_buf *dst, const tm_buf *src);
    /* Every element of dst = value (converted to dst's dtype). */
    tm_status (*fill)(tm_ctx *ctx, const tm_buf *dst, double value);
    /* dst (contiguous) = one of the tm_seq_kind patterns. */
    tm_status (*sequence)(tm_ctx *ctx, const tm_buf *dst, tm_seq_kind kind,
                          double a, double b, int64_t k);

    /* out = op(in, p0, p1).  in's dtype is the compute input; out's dtype
     * may differ (a narrower float to round into; predicates write 0 or 1
     * in out's dtype: BOOL, or I64 when the dtype fallback staged it). */
    tm_status (*unary)(tm_ctx *ctx, tm_unary_op op, const tm_buf *out,
                       const tm_buf *in, double p0, double p1);
    /* out = a op b, all the same shape.  a and b may have any dtypes; they
     * are converted to the compute type of their promoted dtype (F64 for
     * F64; F32 for F32/F16/BF16 and for div of integers; I64 for integers
     * and bool) and the result is converted to out's dtype.  Integer
     * floor_divide/remainder by zero and integer pow with a negative
     * exponent fail with TM_EINVAL (out may then be partly written). */
    tm_status (*binary)(tm_ctx *ctx, tm_binary_op op, const tm_buf *out,
                        const tm_buf *a, const tm_buf *b);
    /* out = cond != 0 ? a : b, all the same shape; cond is any dtype; a
     * and b are any dtypes, converted to out's. */
    tm_status (*where)(tm_ctx *ctx, const tm_buf *out, const tm_buf *cond,
                       const tm_buf *a, const tm_buf *b);

    /* Reduces the last `nred` dims of `in` (the front end permutes the
     * reduced dims to the end); out has in's leading ndim - nred dims.
     * `p` is the op's parameter (correction for var/std, order for norm). */
    tm_status (*reduce)(tm_ctx *ctx, tm_reduce_op op, const tm_buf *out,
                        const tm_buf *in, int nred, double p);
    /* Index (I64) of the max (is_max) or min along the last dim of `in`;
     * `values` (may be absent) receives the value. out has ndim - 1 dims. */
    tm_status (*arg_reduce)(tm_ctx *ctx, bool is_max, const tm_buf *indices,
                            const tm_buf *values, const tm_buf *in);
    /* Running sum along `dim`; out and in have the same shape. */
    tm_status (*cumsum)(tm_ctx *ctx, const tm_buf *out, const tm_buf *in,
                        int dim);

    /* c[..., m, n] = alpha * sum_k a[..., m, k] * b[..., k, n]
     *                + beta * c[..., m, n]
     * All three have the same ndim >= 2 and equal batch dims (broadcast
     * batch dims have stride 0).  a and b may have any strides, so op(A) =
     * A^T is a transposed view, never a copy.  a, b, c share one dtype.
     * beta == 0 ignores c's old contents (NaN included), as BLAS does. */
    tm_status (*gemm)(tm_ctx *ctx, const tm_buf *c, const tm_buf *a,
                      const tm_buf *b, double alpha, double beta);

    /* out = in gathered along `dim` by `index` (I64/I32, index's shape ==
     * out's shape).  Range-checks every index (TM_ERANGE). */
    tm_status (*gather)(tm_ctx *ctx, const tm_buf *out, const tm_buf *in,
                        int dim, const tm_buf *index);
    /* dst[index along dim] = src (or += when `add`), in row-major order of
     * `index`; src has index's shape (may be broadcast from a scalar). */
    tm_status (*scatter)(tm_ctx *ctx, const tm_buf *dst, int dim,
                         const tm_buf *index, const tm_buf *src, bool add);
    /* out = in picked along `dim` by a 1-D `index` (range-checked). */
    tm_status (*index_select)(tm_ctx *ctx, const tm_buf *out,
                              const tm_buf *in, int dim,
                              const tm_buf *index);
    /* Stable sort along the last dim; values and/or indices (I64) may be
     * absent when not wanted. */
    tm_status (*sort)(tm_ctx *ctx, const tm_buf *values,
                      const tm_buf *indices, const tm_buf *in,
                      bool descending);

    /* Row ops over the last dim of same-shaped out and in (float dtypes):
     * softmax (log_softmax when `log`), and layer_norm / rms_norm with an
     * optional per-column weight and bias (1-D, length = the last dim). */
    tm_status (*softmax)(tm_ctx *ctx, const tm_buf *out, const tm_buf *in,
                         bool log);
    tm_status (*norm_rows)(tm_ctx *ctx, const tm_buf *out, const tm_buf *in,
                           const tm_buf *weight, const tm_buf *bias,
                           double eps, bool rms);
    /* Gradients of norm_rows in one fused pass per row: dx, and dw / db
     * summed over the rows (deterministic for a thread count); any of the
     * three may be absent, as may weight.  All buffers contiguous with one
     * float dtype (F32 or F64); rows are the last dim of x, g and dx. */
    tm_status (*norm_rows_backward)(tm_ctx *ctx, const tm_buf *dx,
                                    const tm_buf *dw, const tm_buf *db,
                                    const tm_buf *g, const tm_buf *x,
                                    const tm_buf *weight, double eps,
                                    bool rms);

    /* Fills dst (contiguous) from the Philox stream of `rng` (random.h):
     * kind 0 uniform [p0, p1), 1 normal (mean p0, std p1), 2 integers in
     * [p0, p1).  The front end advances the caller's generator by the
     * blocks random.h documents, so `rng` is passed by value. */
    tm_status (*random)(tm_ctx *ctx, const tm_buf *dst, int kind, double p0,
                        double p1, tm_rng rng);

    /* ---- neural-network kernels (F32 or F64, all buffers contiguous) ---- */

    /* y = conv(x, weight) + bias (bias may be absent). */
    tm_status (*conv)(tm_ctx *ctx, const tm_buf *y, const tm_buf *x,
                      const tm_buf *weight, const tm_buf *bias,
                      const tm_conv_geom *q);
    /* Gradients of conv from g (the shape of y): dx, dweight, dbias, each
     * absent when not wanted; each present one is overwritten.  x is
     * absent when dweight is, and weight when dx is (the front end keeps
     * only what the wanted gradients read). */
    tm_status (*conv_backward)(tm_ctx *ctx, const tm_buf *dx,
                               const tm_buf *dweight, const tm_buf *dbias,
                               const tm_buf *g, const tm_buf *x,
                               const tm_buf *weight, const tm_conv_geom *q);
    /* y and x are F32 or F64, or I64 for max pooling of integers.
     * Max pooling (is_max; argmax I64 (P, OD, OH, OW) = the flat index
     * (zz*H + yy)*W + xx of the max within its plane, the first maximum
     * and the last NaN winning) or
     * average pooling (argmax absent). */
    tm_status (*pool)(tm_ctx *ctx, const tm_buf *y, const tm_buf *argmax,
                      const tm_buf *x, const tm_pool_geom *q, bool is_max);
    /* dx (overwritten) from g (the shape of y): max pooling adds g at
     * argmax in order; average pooling spreads g over each window. */
    tm_status (*pool_backward)(tm_ctx *ctx, const tm_buf *dx,
                               const tm_buf *g, const tm_buf *argmax,
                               const tm_pool_geom *q, bool is_max);
    /* Cross entropy / nll_loss over the rows of x (M, C).  target is
     * I64 (M) class indices or (M, C) probabilities (prob kind).  out is
     * x's dtype: (M) for TM_REDUCTION_NONE, else 0-d (the sum in row
     * order, divided by the rows not ignored for MEAN).  lse (F64 (M),
     * absent for nll) receives each row's log-sum-exp for the backward.
     * A class index outside [0, C) that is not ignore_index: TM_ERANGE. */
    tm_status (*loss)(tm_ctx *ctx, const tm_buf *out, const tm_buf *lse,
                      const tm_buf *x, const tm_buf *target,
                      const tm_loss_params *p);
    /* Gradients of loss from g (F64: (M) for NONE, else 0-d): gx (M, C)
     * and, for the prob kind, gtarget (M, C); either may be absent.  Each
     * row's share of g is g[r] (NONE), g (SUM) or g / the number of rows
     * not ignored (MEAN), a count the kernel takes from target itself, as
     * the forward did, so it never has to reach the host.  A class index
     * outside [0, C) that is not ignore_index: TM_ERANGE. */
    tm_status (*loss_backward)(tm_ctx *ctx, const tm_buf *gx,
                               const tm_buf *gtarget, const tm_buf *g,
                               const tm_buf *x, const tm_buf *target,
                               const tm_buf *lse, const tm_loss_params *p);
    /* dweight (V, D) (overwritten) = for each k, in order, g[k, :] added
     * to row index[k] (index I64 (K) in [0, V), range-checked). */
    tm_status (*embedding_backward)(tm_ctx *ctx, const tm_buf *dweight,
                                    const tm_buf *g, const tm_buf *index);

    /* ---- optimizers ---- */

    /* One fused update of parameter p from gradient g and the kept states
     * s0..s2 (absent where u's configuration keeps none); all one dtype. */
    tm_status (*optim_step)(tm_ctx *ctx, const tm_optim_update *u,
                            const tm_buf *p, const tm_buf *g,
                            const tm_buf *s0, const tm_buf *s1,
                            const tm_buf *s2);
    /* out (F64, 0-d) = the `kind` norm (order p for TM_NORM_P) of all the
     * elements of bufs[0..n) together, summed in an order fixed by their
     * sizes only (the same for any thread count). */
    tm_status (*grad_norm)(tm_ctx *ctx, const tm_buf *out,
                           const tm_buf *bufs, int n, tm_norm_kind kind,
                           double p);

    /* ---- appended entries ---- */

    /* Running `kind` along `dim`: out and in (and indices, I64, when
     * present) have the same shape; `reverse` runs from the end of the
     * dim to its start.  Sum and prod: out is I64 for integer and bool in
     * (wrapping), else in's dtype, accumulated in F64 and rounded once per
     * element.  Max and min: out is in's dtype; indices (may be absent)
     * receive the position of the running extreme along dim, the latest
     * on ties; a NaN is taken as soon as it is seen and kept (each later
     * NaN moves the index).  Logsumexp: float dtypes only, log-add-exp of
     * the running value and each element in F64 (no overflow; -inf with
     * -inf stays -inf). */
    tm_status (*scan)(tm_ctx *ctx, tm_scan_kind kind, const tm_buf *out,
                      const tm_buf *indices, const tm_buf *in, int dim,
                      bool reverse);
    /* dst[index along dim] = reduce(dst[...], src[p]) for each position p
     * of `index` in row-major order (as scatter), with `kind` SUM, PROD,
     * AMAX or AMIN (MEAN is no kernel kind: the front end divides a SUM
     * by counts; TM_EINVAL for it).  src has index's shape; integers
     * wrap; AMAX / AMIN propagate NaN; BOOL multiplies as `and`.
     * Range-checks every index first (TM_ERANGE, dst untouched). */
    tm_status (*scatter_reduce)(tm_ctx *ctx, const tm_buf *dst, int dim,
                                const tm_buf *index, const tm_buf *src,
                                tm_scatter_reduce_kind kind);

    /* Scaled-dot-product attention (tm_attn_params has the shapes and
     * which keys each query sees): out[b, h, i] = sum_j w_ij v[b, h', j]
     * with w_i = softmax_j(scale * q_i.k_j (+ float mask)) over the keys
     * query i sees (dropout applied), and lse[b, h, i] = the log-sum-exp
     * of those scores.  q, out and lse share a float dtype (F32 or F64);
     * k and v have q's dtype, or F16 / BF16 for an F32 q (a cache stored
     * narrow, computed in F32).  A float mask has q's dtype.  q, k, v and
     * mask may have any strides (mask broadcast with stride 0 over any of
     * its dims) but a unit stride on their last dim; out and lse are
     * contiguous.  lse may be absent (inference).  The kernel may not
     * allocate O(Tq * Tk) memory: weights are never stored. */
    tm_status (*attention)(tm_ctx *ctx, const tm_buf *out, const tm_buf *lse,
                           const tm_buf *q, const tm_buf *k, const tm_buf *v,
                           const tm_buf *mask, const tm_attn_params *p);
    /* Gradients of attention from g (the shape of out, unit last stride),
     * given the forward's q, k, v, out, lse and mask (and the same
     * params, so dropout repeats): dq, dk, dv (contiguous, overwritten),
     * each absent when not wanted.  dk and dv are summed over the query
     * heads of each key/value head.  All float buffers have q's dtype (F32
     * or F64).  No O(Tq * Tk) memory. */
    tm_status (*attention_backward)(tm_ctx *ctx, const tm_buf *dq,
                                    const tm_buf *dk, const tm_buf *dv,
                                    const tm_buf *g, const tm_buf *q,
                                    const tm_buf *k, const tm_buf *v,
                                    const tm_buf *out, const tm_buf *lse,
                                    const tm_buf *mask,
                                    const tm_attn_params *p);
    /* Rotary embedding (tm_rope_params): out (contiguous) from x, both
     * (..., T, D); cos and sin have x's shape with the last dim
     * rotary_dim / 2 (broadcast, stride 0, over any leading dim; the
     * front end picks each row's position).  One float dtype (F32 or
     * F64); x, cos and sin with a unit last stride. */
    tm_status (*rope)(tm_ctx *ctx, const tm_buf *out, const tm_buf *x,
                      const tm_buf *cos, const tm_buf *sin,
                      const tm_rope_params *p);

    /* ---- block-quantized weights (foundry/quantize.h) ----
     * A quantized buffer's offset is in bytes to its first block; its
     * shape and strides are in values, 2-D [rows, n] with strides[1] == 1
     * and strides[0] a multiple of the block (rows start on blocks: row r
     * starts strides[0] / block * block_bytes bytes after row 0).  Float
     * buffers here are F32 with a unit last stride and any row stride. */

    /* Converts between a quantized buffer and an F32 one of the same 2-D
     * shape, either way round (dst's dtype says which): quantizing rounds
     * exactly as quantize/quant_ref.c does (byte-identical), dequantizing
     * is bit-identical to it. */
    tm_status (*quantize)(tm_ctx *ctx, const tm_buf *dst, const tm_buf *src);
    /* y [m, n] = x [m, k] · w [n, k]^T, or y += that when `accumulate`; w
     * quantized (Q8_0 .. Q6_K), x and y F32.  x's rows are quantized to the
     * activation type of w's dtype (tm__quant_act_type) with the reference
     * rounding, each y element is a sum over k's blocks in order of
     * (scale products x integer block dot products) in F32: results do not
     * depend on the thread count or the ISA beyond F32 summation order
     * within a block group (stated per kernel in cpu/quant/). */
    tm_status (*qmatmul)(tm_ctx *ctx, const tm_buf *y, const tm_buf *x,
                         const tm_buf *w, bool accumulate);
    /* dx [m, k] = dy [m, n] · w [n, k], or dx += that when `accumulate`; w
     * quantized, dequantized block by block as it is read (never a full
     * F32 copy), dx and dy F32. */
    tm_status (*qmatmul_backward)(tm_ctx *ctx, const tm_buf *dx,
                                  const tm_buf *dy, const tm_buf *w,
                                  bool accumulate);
} tm_backend;

/* Registers the backend of a device type.  Checks abi_version and size
 * (TM_EINVAL when they do not match).  Registering the table already
 * registered is a no-op; replacing a type's backend while any of its
 * devices is open is TM_ESTATE. */
tm_status tm_backend_register(const tm_backend *b);
/* The backend of a device type, or NULL (with an error set) if none is
 * loaded. */
const tm_backend *tm_backend_get(tm_device_type type);

#ifdef __cplusplus
}
#endif
#endif
