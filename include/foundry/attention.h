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
 * (tiny sequences); FUSED and COMPOSED force one (COMPOSED materialises the
 * Tq x Tk weights: for tests and benchmarks). */
typedef enum tm_sdpa_impl {
    TM_SDPA_AUTO,
    TM_SDPA_FUSED,
    TM_SDPA_COMPOSED
} tm_sdpa_impl;

/* Options of tm_sdpa; a zeroed struct (or NULL) is plain softmax attention
 * with the default scale. */
typedef struct tm_sdpa_opts {
    /* NULL, or a BOOL mask (true = the key takes part, PyTorch's meaning)
     * or a float mask added to the scaled scores; broadcastable to
     * (B, H, Tq, Tk). */
    const tm_tensor *mask;
    /* Query i sees only keys j <= i + causal_offset.  Offset 0 is
     * PyTorch's is_causal (aligned top-left when Tq != Tk); Tk - Tq aligns
     * it bottom-right (new queries after a cache of Tk - Tq keys). */
    bool causal;
    int64_t causal_offset;
    /* > 0: a sliding window: query i sees only keys j > i + causal_offset
     * - window (with causal: the last `window` keys up to itself). */
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
 * reference; NULL with an error on bad input. */
tm_tensor *tm_sdpa(const tm_tensor *q, const tm_tensor *k,
                   const tm_tensor *v, const tm_sdpa_opts *opts);

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
