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

#ifdef __cplusplus
}
#endif
#endif
