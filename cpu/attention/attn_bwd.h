/*
 * attn_bwd.h — the pieces of the tiled F32 attention backward
 * (attn_bwd.c) that work on one tile: packing q, k, v and g tiles for the
 * GEMM micro-kernels (cpu/gemm/gemm_impl.h), the tile GEMM, and the
 * element steps (scores to weights, weights to score gradients).
 * Internal to cpu/attention/attn_bwd*.c.
 *
 * Layouts.  An "A panel" operand is packed MR rows at a time (element
 * [r, p] of panel ip at a[(ip * kc + p) * MR + r], rows past the end
 * zero); a "B" operand is row-major with its columns padded with zeros to
 * a multiple of NR; a "C" tile is row-major with MR-rounded rows and
 * NR-rounded columns, so every micro-kernel call is a full one.
 */
#ifndef FOUNDRY_CPU_ATTN_BWD_H
#define FOUNDRY_CPU_ATTN_BWD_H

#include "attn_impl.h"
#include "../gemm/gemm_impl.h"

/* Query and key rows per tile.  64 x 64 keeps a tile's scores, weights
 * and packed operands (D <= 128) inside L2 next to the accumulators;
 * 64 x 128, 128 x 64 and 128 x 128 measured within noise of it (T = 256
 * and T = 2048 causal), with more scratch and more causal waste. */
#define TM__ABWD_BQ 64
#define TM__ABWD_BK 64

static inline int64_t tm__abwd_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* Rows to bring into cache while the tile GEMMs run: the inputs of the
 * next query tile and of the part's next task are otherwise first read
 * by the packing copies, cold (measured: a quarter of T = 256's time
 * outside the GEMMs), and the output rows a task stores at its end are
 * first written cold.  A few ranges of rows; a cursor walks them one
 * cache line at a time. */
#define TM__ABWD_PF_RANGES 12
typedef struct tm__abwd_pf {
    const char *base[TM__ABWD_PF_RANGES];
    int64_t rows[TM__ABWD_PF_RANGES];   /* rows of each range */
    int64_t stride[TM__ABWD_PF_RANGES]; /* row stride, bytes */
    int64_t bytes[TM__ABWD_PF_RANGES];  /* row length, bytes */
    bool write[TM__ABWD_PF_RANGES];     /* to be written (an output) */
    int n, r;                           /* ranges, current range */
    int64_t row, off;                   /* cursor inside range r */
} tm__abwd_pf;

/* Queues rows [0, rows) of base (stride and row length in bytes); write:
 * rows about to be stored (fetched for writing: no read-for-ownership
 * miss in the store loop). */
void tm__abwd_pf_add(tm__abwd_pf *pf, const void *base, int64_t rows,
                     int64_t stride, int64_t bytes, bool write);
/* Prefetches up to lines cache lines of the queue. */
void tm__abwd_pf_step(tm__abwd_pf *pf, int lines);

/* The F32 GEMM micro-kernel family in use. */
const tm__gemm_kernel *tm__abwd_kernel(void);

/* C[m x n] = alpha * A·B + beta * C: A packed panels with depth kc, B
 * row-major (ldb), C row-major (ldc); C and B sized as in the layouts.
 * With pf, a few of its lines are prefetched between micro-kernel calls
 * (spread out: a burst would fill the miss buffers the GEMM loads use). */
void tm__abwd_gemm(const tm__gemm_kernel *kr, int64_t m, int64_t n,
                   int64_t kc, const float *a, const float *b, int64_t ldb,
                   float *c, int64_t ldc, float alpha, float beta,
                   tm__abwd_pf *pf);

/* The keys each row of a tile (not full: causal or window) sees, relative
 * to the tile's first key and within [0, n): [lo[r], hi[r]), empty when
 * lo[r] >= hi[r] (rows past the tile's too).  The weights and dS are
 * exact zeros outside, and the other operands finite, so the tile GEMMs
 * may leave those products out without changing a bit: C blocks of S and
 * dP that no row of theirs sees are zeroed instead of computed, and the
 * accumulating GEMMs run each block over the depth range that is not
 * zero (on a diagonal 64 x 64 tile, about a third of the work). */
typedef struct tm__abwd_band {
    int64_t lo[TM__ABWD_BQ + 16], hi[TM__ABWD_BQ + 16];
} tm__abwd_band;

/* How a banded GEMM's C relates to the tile: OUT, C is (tile rows x
 * keys), blocks no row sees are zeroed; KEYS, C is (features x keys), the
 * depth the tile's rows (dV^T, dK^T); ROWS, C is (tile rows x features),
 * the depth the keys (dQ). */
enum { TM__ABWD_OUT, TM__ABWD_KEYS, TM__ABWD_ROWS };

/* tm__abwd_gemm restricted by band bd (kind as above; rows the C or depth
 * rows of the tile).  With rv and s (OUT only): the dS epilogue of
 * tm__abwd_gemm_ds_avx512 (the AVX-512 family). */
void tm__abwd_gemm_band(const tm__gemm_kernel *kr, int kind,
                        const tm__abwd_band *bd, int64_t m, int64_t n,
                        int64_t kc, const float *a, const float *b,
                        int64_t ldb, float *c, int64_t ldc, float alpha,
                        float beta, const float *rv, const float *s,
                        tm__abwd_pf *pf);

/* A panels of the m x k rows of src (row stride ld) into dst. */
void tm__abwd_pack_a(const float *src, int64_t ld, int64_t m, int64_t k,
                     int mr, float *dst);
/* A panels of the transpose of src (k rows of m, row stride ld): the A
 * operand whose row r is column r of src.  With z (row stride ldz), each
 * element is multiplied by z's. */
void tm__abwd_pack_at(const float *src, int64_t ld, const float *z,
                      int64_t ldz, int64_t k, int64_t m, int mr, float *dst);
/* Rows [0, m) of src (row stride ld), n columns, into dst (row stride
 * ldd, columns n..ldd zero). */
void tm__abwd_rows(const float *src, int64_t ld, int64_t m, int64_t n,
                   float *dst, int64_t ldd);
/* The transpose of src (n rows of k, row stride ld) into dst (k rows,
 * row stride ldd, columns n..ldd zero). */
void tm__abwd_trans(const float *src, int64_t ld, int64_t n, int64_t k,
                    float *dst, int64_t ldd);

#if defined(__x86_64__)
/* The same copies with AVX2 (attn_bwd_avx2.c); the packs for MR = 8
 * (pack_at without z). */
void tm__abwd_pack_a8_avx2(const float *src, int64_t ld, int64_t m,
                           int64_t k, float *dst);
void tm__abwd_pack_at8_avx2(const float *src, int64_t ld, int64_t k,
                            int64_t m, float *dst);
void tm__abwd_trans_avx2(const float *src, int64_t ld, int64_t n, int64_t k,
                         float *dst, int64_t ldd);
/* tm__abwd_gemm for the tm__sgemm_avx512 family (attn_bwd_avx512.c). */
void tm__abwd_gemm_avx512(int64_t m, int64_t n, int64_t kc, const float *a,
                          const float *b, int64_t ldb, float *c, int64_t ldc,
                          float alpha, float beta, tm__abwd_pf *pf);
/* C = alpha A·B - l[r] on row r (m a multiple of 8: every row has its l),
 * and dS = S (A·B - di[r]) scale (rows of C past the tile's are 0 in S:
 * di must cover m rounded up to 8), with S at s (row stride ldc): the
 * GEMM fused with the first step of tm__abwd_weights, and with
 * tm__abwd_ds (no dropout), same bits. */
void tm__abwd_gemm_sub_avx512(int64_t m, int64_t n, int64_t kc,
                              const float *a, const float *b, int64_t ldb,
                              float *c, int64_t ldc, float alpha,
                              const float *l, tm__abwd_pf *pf);
void tm__abwd_gemm_ds_avx512(int64_t m, int64_t n, int64_t kc,
                             const float *a, const float *b, int64_t ldb,
                             float *c, int64_t ldc, float scale,
                             const float *di, const float *s,
                             tm__abwd_pf *pf);
/* One 8 x 32 block of tm__abwd_gemm_avx512 (rv, s NULL) or of
 * tm__abwd_gemm_ds_avx512 (rv, s at the block's row and column). */
void tm__abwd_ukr_avx512(int64_t kc, const float *a, const float *b,
                         int64_t ldb, float *c, int64_t ldc, float alpha,
                         float beta, const float *rv, const float *s);
/* dp[c] = s[c] (dp[c] - di) scale, or (z[c] dp[c] - s[c] di) scale with
 * z, for c < n: tm__abwd_ds's loop, same bits. */
void tm__abwd_ds_avx2(const float *s, const float *z, float *dp, int64_t n,
                      float di, float scale);
/* x[c] -= l for c < n. */
void tm__abwd_sub_avx2(float *x, int64_t n, float l);
#endif

/* dS of one row in place of its dP: dp[c] = s[c] (dp[c] - di) scale, or
 * with the dropout-weighted weights z (= P Z), (z[c] dp[c] - s[c] di)
 * scale; c < n. */
void tm__abwd_ds(const float *s, const float *z, float *dp, int64_t n,
                 float di, float scale);

/* Where one tile sits: rows [i0, i0 + m) of head h, keys [j0, j0 + n) of
 * batch b. */
typedef struct tm__abwd_tile {
    int64_t b, h, i0, m, j0, n;
} tm__abwd_tile;

/* Scores s (m x n, row stride ld, already scale * q.k) into weights
 * exp(s + mask - lse) in place: keys a row does not see (causal, window,
 * BOOL mask false) weigh 0, as do rows with lse = -inf.  `full`: no
 * causal/window test is needed in this tile. */
void tm__abwd_weights(const tm_attn_params *p, const tm_buf *mask,
                      int64_t tk, const tm__abwd_tile *t, bool full,
                      const float *lse, float *s, int64_t ld);

#endif
