/*
 * compress.h — gradient compression for the swarm (internal): exact TopK
 * selection by magnitude, the Deep Gradient Compression accumulator
 * (error feedback, momentum correction, local clipping, sparsity warm-up),
 * and the sparse payload the TOPK and UPDATE frames carry.
 */
#ifndef FOUNDRY_SWARM_COMPRESS_H
#define FOUNDRY_SWARM_COMPRESS_H

#include "foundry/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ----------------------------------------------------------- selection */

/* The k entries of x[0..n) largest in magnitude, exactly: idx[0..k)
 * ascending, val[i] = x[idx[i]].  Ties at the threshold go to the lower
 * index, so the result depends only on x and k (not on threads).  NaN
 * counts as larger than any number (a broken gradient is sent, and the
 * receiver refuses it).  0 <= k <= n.  Sampled threshold plus one collect
 * pass, an exact radix select over the candidates, and a radix select
 * over all of x when the sample misjudges; threaded over the pool. */
tm_status tm__topk_select(const float *x, int64_t n, int64_t k, int64_t *idx,
                          float *val);

/* --------------------------------------------------- DGC accumulation */

typedef struct tm__dgc_opts {
    double ratio;          /* final k / n, in (0, 1] */
    int64_t warmup_rounds; /* sparsity warm-up: k / n falls exponentially
                              from 1 to ratio over these rounds, as
                              ratio^((r + 1) / warmup_rounds); 0: none */
    double momentum;       /* momentum correction factor (0: plain error
                              feedback, for optimizers with their own
                              momentum, such as Adam) */
    double clip_norm;      /* local clip of each gradient's L2 norm before
                              accumulation; 0: none */
    bool values_f16;       /* the selected values travel as F16: each is
                              rounded here and its rounding error stays in
                              the residual, so error feedback covers the
                              rounding too */
} tm__dgc_opts;

typedef struct tm__dgc tm__dgc;

/* An accumulator over n values (residual and momentum buffers zeroed).
 * NULL on bad options (TM_EINVAL naming the field) or TM_ENOMEM. */
tm__dgc *tm__dgc_new(int64_t n, const tm__dgc_opts *o);
void tm__dgc_free(tm__dgc *d);
/* k for a round (round 0 is the first): ceil(n * ratio_at(round)), at
 * least 1 when n > 0; round < 0 means all n (a flush of the residual). */
int64_t tm__dgc_k(const tm__dgc *d, int64_t round);
/* Folds grad[0..n) into the accumulator (clip; u = m*u + g; v += u, or
 * v += g without momentum), selects the top k of v for `round`, writes
 * them to idx/val (capacity tm__dgc_k(d, round)), *k_out = k, and clears
 * those entries of v and u.  The rest stays for later rounds.  With
 * values_f16, val holds the F16 roundings and v keeps what they lost
 * (exactly: a value minus its F16 rounding is an F32); a value beyond
 * F16's range is sent as infinity, which the receiver refuses. */
tm_status tm__dgc_compress(tm__dgc *d, const float *grad, int64_t round,
                           int64_t *k_out, int64_t *idx, float *val);
/* Zeroes the residual and momentum (after a resync). */
void tm__dgc_reset(tm__dgc *d);
/* The residual v (n floats, borrowed), for tests. */
const float *tm__dgc_residual(const tm__dgc *d);

/* ------------------------------------------------------- sparse payload */

/* Layout (little-endian):
 *   u64 n        length of the dense vector
 *   u64 k        entries that follow
 *   u8  dtype    0 = F32 values, 1 = F16 values
 *   u8[3]        zero
 *   k LEB128 unsigned varints: idx[0], then idx[i] - idx[i-1]
 *   k values (4 or 2 bytes each)
 * A delta of 0 is a duplicate index and is refused on decode. */
#define TM__SPARSE_F32 0
#define TM__SPARSE_F16 1

/* Bytes the encoding of k entries takes at most. */
size_t tm__sparse_max_bytes(int64_t k, int dtype);
/* Encodes (idx ascending and unique, else TM_EINVAL) into out[0..cap);
 * *len = bytes written.  F16 rounds to nearest even (values beyond F16's
 * range become +-inf and are refused by the receiver). */
tm_status tm__sparse_encode(int64_t n, int64_t k, const int64_t *idx,
                            const float *val, int dtype, uint8_t *out,
                            size_t cap, size_t *len);
/* Decodes and validates p[0..len): n must equal n_expected, k <= k_max,
 * indices strictly ascending and < n, varints canonical and within 64
 * bits, no trailing bytes, every value finite.  idx/val have room for
 * k_max entries.  TM_EFORMAT with a message naming the first problem
 * ("index 12 out of range for 10 values", "duplicate index 5",
 * "value 3 is not finite", ...). */
tm_status tm__sparse_decode(const uint8_t *p, size_t len, int64_t n_expected,
                            int64_t k_max, int64_t *k, int64_t *idx,
                            float *val);

/* L2 norm of v[0..k) in double. */
double tm__l2norm(const float *v, int64_t k);

#endif
