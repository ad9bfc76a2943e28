/*
 * foundry/attention.h — scaled-dot-product attention, rotary position
 * embeddings and the key/value cache of autoregressive decoding.
 *
 * Attention runs as one fused kernel of the tensors' backend (`attention`
 * and `attention_backward` in foundry/backend.h): tiles of queries against
 * tiles of keys with an online softmax, so no Tq x Tk matrix is ever
 * stored, in the forward or the backward, whatever the mask.
 */
#ifndef FOUNDRY_ATTENTION_H
#define FOUNDRY_ATTENTION_H

#include "random.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------- scaled-dot-product attention */

/* How tm_sdpa computes: AUTO picks the fused kernel, or the composed path
 * (matmul, softmax, matmul through ordinary ops) where that is faster
 * (many heads of a few scores each, with a backward: docs/attention.md);
 * FUSED and COMPOSED force one (COMPOSED materialises the Tq x Tk weights:
 * for tests and benchmarks).  Both give the same results (to rounding) and
 * the same dropout decisions. */
typedef enum tm_sdpa_impl {
    TM_SDPA_AUTO,
    TM_SDPA_FUSED,
    TM_SDPA_COMPOSED
} tm_sdpa_impl;

/* Options of tm_sdpa; a zeroed struct (or NULL) is plain softmax attention
 * with the default scale. */
typedef struct tm_sdpa_opts {
    /* NULL, or a BOOL mask (true = the key takes part, PyTorch's meaning)
     * or a float mask added to the scaled scores (-inf hides a key);
     * broadcastable from the right to (..., H, Tq, Tk).  Borrowed. */
    const tm_tensor *mask;
    /* Query i sees only keys j <= i + causal_offset.  Offset 0 is
     * PyTorch's is_causal (aligned top-left when Tq != Tk); Tk - Tq aligns
     * it bottom-right (new queries after a cache of Tk - Tq keys). */
    bool causal;
    int64_t causal_offset;
    /* > 0: a sliding window: query i sees only keys j > i + causal_offset
     * - window (with causal: the last `window` keys up to itself); 0: no
     * window. */
    int64_t window;
    /* Multiplies q.k; 0 means the default 1 / sqrt(D). */
    double scale;
    /* Dropout on the attention weights (training), from `rng` (NULL: the
     * default generator); the backward regenerates the same mask. */
    double dropout_p;
    tm_rng *rng;
    tm_sdpa_impl impl;
} tm_sdpa_opts;

/* Attention of q (..., H, Tq, D) over k (..., Hkv, Tk, D) and v (..., Hkv,
 * Tk, Dv): softmax(scale * q k^T + mask) v, shape (..., H, Tq, Dv).  The
 * leading dims (at least none) of q, k and v are equal; H is a multiple of
 * Hkv (query head h reads key/value head h / (H / Hkv): grouped-query and
 * multi-query attention without copying k and v).  A query that sees no
 * key gets zeros.  F32 or F64 (F16/BF16 inputs compute in F32 and round
 * the result); differentiable in q, k and v (not in a float mask).  New
 * reference; NULL with an error on bad input.
 *
 * Any strides: a [B, T, H, D] tensor permuted to [B, H, T, D] is read in
 * place (a copy only when the last dim is strided).  An F32 q with F16 or
 * BF16 k and v that need no gradient computes on them as stored (a KV
 * cache kept narrow).  Masks are never expanded to (B, H, Tq, Tk) by
 * broadcasting, except along the keys for a mask of size 1 there.
 *
 * Dropout: the weights kept are those tm_uniform_ would draw for an F32
 * (B, H, Tq, Tk) tensor from the generator's state (B the leading dims'
 * product; kept iff u < (float)(1 - p)); the generator advances by
 * ceil(B*H*Tq*Tk / 4) blocks; the backward regenerates the same mask.  A
 * call that fails leaves a caller's generator (not the default one) as it
 * was.
 *
 * Autograd: one node ("ScaledDotProductFlashAttentionBackward") saving q,
 * k, v, the output and a log-sum-exp per row; the backward recomputes the
 * weights.  Writing into q, k, v or the mask before the backward is
 * reported then.  Double backward is not supported.
 *
 * Errors: TM_ESHAPE (dims, sizes, heads, a mask that does not broadcast,
 * D = 0 with the default scale), TM_EDTYPE (non-float q, k, v; a mask
 * neither BOOL nor float), TM_EINVAL (window < 0, dropout_p outside
 * [0, 1), a non-finite scale, |causal_offset| or window beyond 2^60, an
 * unknown impl), TM_EDEVICE (tensors on different devices),
 * TM_EUNSUPPORTED (a float mask that requires grad), TM_EOVERFLOW (B*H*Tq*Tk
 * beyond int64 with dropout). */
tm_tensor *tm_sdpa(const tm_tensor *q, const tm_tensor *k,
                   const tm_tensor *v, const tm_sdpa_opts *opts);


/* ------------------------------------------------ rotary position embeddings
 *
 * RoPE rotates the first rotary_dim (even) elements of each head vector in
 * pairs by angles pos * inv_freq[t], t < rotary_dim / 2:
 *     out1 = x1 cos - x2 sin,   out2 = x2 cos + x1 sin
 * Pair t is (t, t + rotary_dim / 2) (Hugging Face Llama, GPT-NeoX,
 * SmolLM2) or, `interleaved`, (2t, 2t + 1) (GPT-J, ggml's normal mode);
 * the other head_dim - rotary_dim elements pass through.  The frequencies
 * inv_freq[t] = theta^(-2t / rotary_dim) are rescaled as Hugging Face
 * transformers' rope types define them (modeling_rope_utils):
 *   LINEAR   inv_freq / factor (positions divided by factor);
 *   DYNAMIC  NTK-aware: theta * (factor L / orig - (factor - 1))^(r/(r-2))
 *            with L the sequence length seen (at least orig; see
 *            tm_rope_apply), r = rotary_dim;
 *   YARN     a linear ramp over the pair index between interpolation
 *            (inv_freq / factor) and extrapolation (inv_freq), bounded by
 *            the dims where beta_fast and beta_slow rotations fit in orig
 *            positions (floored / ceiled unless yarn_truncate is false),
 *            and an attention factor (default 0.1 ln(factor) + 1, or
 *            mscale(factor, mscale) / mscale(factor, mscale_all_dim) when
 *            both are given) that multiplies cos and sin;
 *   LLAMA3   wavelengths 2 pi / inv_freq above orig / low_freq_factor are
 *            divided by factor, those below orig / high_freq_factor kept,
 *            those between smoothly interpolated.
 * Angles are computed in double and cos and sin rounded once to the
 * compute dtype (F32; F64 for F64 inputs), scaled by the attention factor.
 */

typedef enum tm_rope_scaling {
    TM_ROPE_SCALING_NONE = 0,
    TM_ROPE_SCALING_LINEAR = 1,
    TM_ROPE_SCALING_DYNAMIC = 2,
    TM_ROPE_SCALING_YARN = 3,
    TM_ROPE_SCALING_LLAMA3 = 4
} tm_rope_scaling;

/* What a tm_rope computes; start from tm_rope_defaults(head_dim). */
typedef struct tm_rope_config {
    int64_t head_dim;   /* D, the last dim of the tensors rotated */
    int64_t rotary_dim; /* even, in [2, head_dim]: the dims rotated */
    double theta;       /* the base (10000) */
    bool interleaved;   /* pairs (2t, 2t + 1) instead of halves */
    tm_rope_scaling scaling;
    double factor;      /* LINEAR, DYNAMIC, YARN, LLAMA3: > 0 */
    /* DYNAMIC, YARN, LLAMA3: the context length trained on (> 0) */
    int64_t original_max_positions;
    /* Multiplies cos and sin; 0 means the variant's default (YaRN's
     * formula above, 1 for the others).  >= 0. */
    double attention_factor;
    double beta_fast, beta_slow;   /* YARN: 32 and 1 (> 0) */
    double mscale, mscale_all_dim; /* YARN: 0 = not given */
    bool yarn_truncate;            /* YARN: floor / ceil the ramp's bounds
                                      (true, Hugging Face's default) */
    double low_freq_factor, high_freq_factor; /* LLAMA3: 1 and 4
                                                 (0 < low < high) */
} tm_rope_config;

/* rotary_dim = head_dim, theta 10000, halves layout, no scaling, factor
 * 1, attention_factor 0 (default), beta_fast 32, beta_slow 1,
 * yarn_truncate true, low/high_freq_factor 1 and 4, original_max_positions
 * 0 (to be set for DYNAMIC, YARN and LLAMA3). */
tm_rope_config tm_rope_defaults(int64_t head_dim);

/* A rotary embedding: the configuration (copied), its frequencies and
 * cos/sin tables cached per dtype and device, grown when a longer length
 * is needed.  Calls on one tm_rope may come from several threads (a lock
 * guards the cache). */
typedef struct tm_rope tm_rope;

/* NULL with an error (TM_EINVAL naming the field and value) when the
 * configuration is invalid: head_dim < 2, rotary_dim odd, < 2 or >
 * head_dim, theta or a factor not finite and > 0, an unknown scaling, a
 * missing original_max_positions, DYNAMIC with rotary_dim 2, LLAMA3 with
 * low_freq_factor >= high_freq_factor. */
tm_rope *tm_rope_new(const tm_rope_config *cfg);
/* NULL is a no-op.  Tensors returned earlier stay valid. */
void tm_rope_free(tm_rope *rope);

/* x (..., T, head_dim) rotated at positions: offset + t for row t when
 * `positions` is NULL (offset >= 0: the KV cache decodes at its length);
 * else offset + positions[t] for an integer `positions` of shape (T), or
 * offset + positions[b, t] for shape (B, T), where x is (B, ..., T, D)
 * (B may be 1 in positions: broadcast).  Positions must be >= 0;
 * explicit positions are read back to size the tables (a host
 * synchronization).  DYNAMIC tracks the longest length L = max position + 1
 * seen, as Hugging Face does: the frequencies are recomputed when L grows
 * past what they were made for, and reset to those of orig when a shorter
 * sequence than orig follows a longer one.  F32, F64, F16 or BF16 x (F16
 * and BF16 computed in F32 and rounded back); differentiable in x.  New
 * reference, contiguous; NULL with an error on bad input. */
tm_tensor *tm_rope_apply(tm_rope *rope, const tm_tensor *x, int64_t offset,
                         const tm_tensor *positions);

/* The cos and sin the rotation of tm_rope_apply uses (attention factor
 * included), one value per pair: shape (length, rotary_dim / 2) for the
 * positions offset .. offset + length - 1 (positions NULL), else
 * (positions' shape..., rotary_dim / 2) at offset + positions, in dtype
 * dt (F32 or F64) on device dev.  What Hugging Face's rotary_emb(x,
 * position_ids) returns, without its duplication of each value over the
 * pair's two dims.  Two new references (views of the cache, or its rows
 * copied for explicit positions); on error both are NULL. */
tm_status tm_rope_tables(tm_rope *rope, int64_t offset,
                         const tm_tensor *positions, int64_t length,
                         tm_dtype dt, tm_device dev, tm_tensor **cos,
                         tm_tensor **sin);

/* x (..., T, D) rotated by given tables: cos and sin of shape
 * broadcastable to (..., T, rotary_dim / 2) (rotary_dim = 2 *
 * cos's last dim <= D), pairs as `interleaved` says.  cos and sin are
 * converted to x's compute dtype.  Differentiable in x only (cos and sin
 * get no gradient).  New reference; NULL with an error on bad input. */
tm_tensor *tm_rope_rotate(const tm_tensor *x, const tm_tensor *cos,
                          const tm_tensor *sin, bool interleaved);
/* ---------------------------------------------------------- key/value cache
 *
 * The keys and values of the tokens decoded so far, per layer, so each new
 * token attends over them without recomputing them:
 *
 *   tm_kv_cache_opts o = {0};                 // F32 on the CPU, no window
 *   o.dtype = TM_F16;                         // storage; attention in F32
 *   tm_kv_cache *c = tm_kv_cache_new(layers, B, Hkv, Tmax, D, &o);
 *   for each step, for each layer l:
 *       tm_tensor *y = tm_kv_cache_attend(c, l, q, k, v, NULL);
 *   tm_kv_cache_truncate(c, n);               // undo a rejected draft
 *   tm_kv_cache_free(c);
 *
 * Layer l stores k as (B, Hkv, Tmax, D) and v as (B, Hkv, Tmax, Dv) tensors
 * of the storage dtype on the cache's device, allocated once by
 * tm_kv_cache_new.  New tokens are copied in (converted to the storage
 * dtype) through ordinary tensor copies.  A layer with a window W > 0 keeps
 * only its last W positions, in a ring of W slots (position p in slot
 * p % W) instead of Tmax.  Every layer has its own length (the positions
 * appended to it); a decoding step appends to every layer once, so they
 * agree between steps.  The cache holds no autograd history: what it
 * stores is detached.  Not thread-safe: one thread uses a cache at a time.
 */

typedef struct tm_kv_cache tm_kv_cache;

/* Options of tm_kv_cache_new; a zeroed struct (or NULL) is F32 storage on
 * the CPU, Dv = D and no window. */
typedef struct tm_kv_cache_opts {
    /* The storage dtype: F32, F64, F16 or BF16 (zero: F32). */
    tm_dtype dtype;
    /* Where k and v live (zero: the CPU). */
    tm_device device;
    /* The size of the last dim of v; 0 means D. */
    int64_t v_head_dim;
    /* Sliding windows: NULL gives every layer `window` (0: none);
     * otherwise `windows` has one entry per layer (copied), 0 for a layer
     * that keeps everything and W > 0 for one that keeps its last W
     * positions (as tm_sdpa_opts.window: a query sees itself and the
     * W - 1 keys before it). */
    int64_t window;
    const int64_t *windows;
} tm_kv_cache_opts;

/* A cache of `layers` layers for `batch` sequences of `kv_heads` key/value
 * heads of `head_dim`, up to `max_len` positions.  Every count must be
 * positive (TM_EINVAL naming it otherwise), the dtype F32/F64/F16/BF16
 * (TM_EDTYPE) and the device available (TM_EDEVICE); windows must not be
 * negative.  A window of max_len or more never drops a position: that
 * layer is stored whole (its attention still applies the window).  The
 * storage is allocated here, uninitialised.  Returns a new cache; release
 * it with tm_kv_cache_free.  NULL with an error on failure. */
tm_kv_cache *tm_kv_cache_new(int layers, int64_t batch, int64_t kv_heads,
                             int64_t max_len, int64_t head_dim,
                             const tm_kv_cache_opts *opts);
/* Releases the cache and its storage (tensors returned by the calls below
 * stay valid: they hold their own references).  NULL is a no-op. */
void tm_kv_cache_free(tm_kv_cache *c);

/* Shape facts: the layer count, the storage dtype, the device; the window
 * of one layer (0: none; -1 with TM_ERANGE for a bad layer). */
int tm_kv_cache_layers(const tm_kv_cache *c);
tm_dtype tm_kv_cache_dtype(const tm_kv_cache *c);
tm_device tm_kv_cache_device(const tm_kv_cache *c);
int64_t tm_kv_cache_window(const tm_kv_cache *c, int layer);
int64_t tm_kv_cache_max_len(const tm_kv_cache *c);

/* Positions appended to `layer` so far (after truncations); -1 with
 * TM_ERANGE for a bad layer.  A windowed layer counts every position, not
 * only the W it still holds. */
int64_t tm_kv_cache_length(const tm_kv_cache *c, int layer);
/* Bytes of storage the cache holds (k and v of every layer; a windowed
 * layer counts W slots, not max_len). */
size_t tm_kv_cache_nbytes(const tm_kv_cache *c);

/* Appends n >= 1 tokens to `layer`: k (B, Hkv, n, D) and v (B, Hkv, n,
 * Dv), any float dtype (converted to the storage dtype), on the cache's
 * device, any strides.  Errors, with nothing changed: TM_ERANGE for a bad
 * layer or when length + n would pass max_len; TM_ESHAPE for other shapes;
 * TM_EDTYPE for non-float k or v; TM_EDEVICE for another device. */
tm_status tm_kv_cache_append(tm_kv_cache *c, int layer, const tm_tensor *k,
                             const tm_tensor *v);

/* Appends as tm_kv_cache_append, then sets *k_all and *v_all to the keys
 * and values the n new queries attend over, in position order: every
 * position of a full layer (a view of the storage: valid until the next
 * append, truncate or reset overwrites it), or for a windowed layer the
 * last W - 1 positions before the new ones followed by the new ones (a
 * view while the ring has not wrapped, else a copy).  The first new query
 * is at index *offset (length before - what a windowed layer left out):
 * attend with causal, causal_offset = *offset and the layer's window.  New
 * references in *k_all and *v_all; on failure they are NULL and the cache
 * is unchanged. */
tm_status tm_kv_cache_update(tm_kv_cache *c, int layer, const tm_tensor *k,
                             const tm_tensor *v, tm_tensor **k_all,
                             tm_tensor **v_all, int64_t *offset);

/* Appends k and v to `layer`, then returns tm_sdpa of q (B, H, n, D) over
 * the layer's keys: each new query sees every earlier position and the new
 * ones up to itself (causal, aligned bottom-right), within the layer's
 * window.  `opts` (NULL: defaults) gives the scale, dropout and impl; its
 * mask must be NULL and its causal_offset and window 0, since the cache
 * sets them (TM_EINVAL otherwise); its causal flag is not read (always
 * causal).  q's n must be k's.  Differentiable in
 * q only (cached keys are detached); the node saves a view of the layer's
 * storage, so run the backward before writing to the layer again (a later
 * write is reported at backward time as an in-place change).  New
 * reference; NULL with an error, the cache unchanged, on failure. */
tm_tensor *tm_kv_cache_attend(tm_kv_cache *c, int layer, const tm_tensor *q,
                              const tm_tensor *k, const tm_tensor *v,
                              const tm_sdpa_opts *opts);

/* Drops every position >= n from every layer (undoing a rejected
 * speculative draft): no copy, the storage stays.  TM_ERANGE when n < 0
 * or n is larger than a layer's length.  A windowed layer can only go
 * back to where it still holds the W - 1 positions before n that the next
 * query needs: once its ring has wrapped (length > W) that is one position
 * back at most (n >= length - 1); further is refused with TM_ESTATE, since
 * those positions were overwritten.  Nothing changes on failure. */
tm_status tm_kv_cache_truncate(tm_kv_cache *c, int64_t n);
/* Empties every layer (length 0); the storage stays allocated. */
tm_status tm_kv_cache_reset(tm_kv_cache *c);

#ifdef __cplusplus
}
#endif
#endif
