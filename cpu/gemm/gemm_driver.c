/* gemm.c — the packed, cache-blocked GEMM driver for F32 and F64:
 * C = alpha * A·B + beta * C on tm_bufs of any strides (a transposed
 * operand is just a view with swapped strides: packing reads it as it is).
 *
 * Blocking (per batch entry and per thread piece [m0, m1) x [n0, n1)):
 *
 *   for ic in rows, step MC            A block   MC x KC  (L2/L3)
 *     for pc in depth, step KC         pack A into MR-row panels
 *       for jc in columns, step NC     pack B into NR-column panels (L2)
 *         for ir in the A block, step MR      one A panel stays in L1
 *           for jr in the B block, step NR    B panels stream from L2
 *             micro-kernel: MR x NR tile of C
 *
 * The micro-kernel (gemm_impl.h) is picked from the kernel family in use
 * (tm__cpu_isa): AVX-512, AVX2+FMA, NEON or portable C for F32; for F64,
 * AVX-512, AVX2+FMA or portable C (NEON runs the portable F64 kernel).
 * Edge tiles, and C views whose column stride is not 1, go through a small
 * staging tile merged here with the same arithmetic as the kernels' own
 * merge.  Packing gathers any strides; F32 panels with a unit stride on
 * either side are packed with SSE on x86-64 (4 x 4 register transposes
 * for row-major A / transposed B, also for the 6-row panels of the AVX2
 * family's A; straight copies otherwise).  A small
 * row-major B (rows <= 1 KiB, one K block), or any row-major B against an
 * A of a few panels, is not packed at all: the kernel reads its full
 * panels in place (ldb = its row stride).  For such a small A the tile
 * loops run B panel outer, so each B panel comes from memory once and
 * serves every A panel from L1.
 *
 * Summation order: element (i, j) of a K block is summed from 0 adding one
 * product per p in increasing p; the blocks (KC deep, starting at p = 0)
 * are merged in increasing order: C = alpha*s0 + beta*C, then
 * C = alpha*s1 + C, ...  So for K <= KC the result is
 * fl(alpha*s + beta*c), and in general the error is bounded like a
 * recursive sum: |err| <= (K + 2) * u * sum_p |alpha a_ip b_pj| + u|beta c|
 * to first order (u = unit roundoff; one FMA rounding per product, or two
 * roundings with the portable kernels, hence the test's c = 2).
 *
 * Threads: the work is cut into items = batch entries x pieces; a matrix
 * is split into pieces along its larger dim (M at multiples of MR, N at
 * multiples of NR) when the batch alone cannot keep every thread busy.
 * K is never split, the tile grid is global, so every element is summed
 * in the same order whatever the thread count: results are bitwise
 * identical for 1, 2 or 3 threads, for a given kernel family.  Each part
 * packs into its own buffers (tm__alloc, 64-byte aligned, one block for
 * all parts allocated before the threads start, freed at the end).
 */
#include "gemm_impl.h"

#include "../cpu_features.h"
#include "../cpu_impl.h"

#include <string.h>

/* A row-major B is read in place, never packed, when A has at most this
 * many MR-row panels: packing costs as much as the product then (one
 * sentence through a transformer's weights stored [in, out]). */
#define GM_DIRECT_MAX_PANELS 4
/* Ragged rows take the row kernel when rows * GM_ROW_SHARE <= MR (see
 * gm_tile). */
#define GM_ROW_SHARE 4
/* A blocks of at most this many panels run B-panel-outer (see gm_block). */
#define GM_B_OUTER_PANELS 4

/* Multiply-adds per part below which another thread does not pay. */
#define GM_GRAIN ((double)(1 << 20))

/* ---------------------------------------------------------- typed parts */

#define GM_T float
#define GM_N(name) name##_f32
#include "gemm_pack_tmpl.h"
#undef GM_T
#undef GM_N
#define GM_T double
#define GM_N(name) name##_f64
#include "gemm_pack_tmpl.h"
#undef GM_T
#undef GM_N

/* ---------------------------------------------------------------- driver */

typedef struct {
    const tm__gemm_kernel *k;
    bool f64;
    size_t es;
    const tm_buf *c, *a, *b;
    double alpha, beta;
    int nbd;
    int64_t m, n, kd;
    int64_t sam, sak, sbk, sbn, scm, scn; /* element strides */
    int split;     /* pieces per matrix */
    bool split_m;  /* along M (else N) */
    bool direct_b; /* full B panels read in place (row-major B) */
    int64_t items; /* batch entries * split */
    int64_t batch; /* batch entries (the small-M path) */
    int64_t mce, kce, nce; /* block extents actually needed */
    size_t a_bytes, b_bytes, part_bytes;
    char *scratch;
} gm_ctx;

/* Element offset of batch entry `bi` in `t` (row-major over the batch dims,
 * which all buffers share). */
static int64_t gm_batch_offset(const tm_buf *t, int nbd, int64_t bi)
{
    int64_t off = 0;
    for (int d = nbd - 1; d >= 0 && bi > 0; d--) {
        int64_t s = t->shape[d];
        off += (bi % s) * t->strides[d];
        bi /= s;
    }
    return off;
}

#if defined(__x86_64__)
#include <emmintrin.h>
#include <xmmintrin.h>
#define GM_SSE 1

/* Fast F32 packing of one full panel of width w (a multiple of 4) with SSE
 * (baseline on x86-64).  Transposing: dst[p*w + r] = src[r*ld + p], as
 * 4 x 4 blocks transposed in registers.  Copying: dst[p*w + j] =
 * src[p*ld + j]. */
static void gm_pack_t_sse(float *restrict dst, const float *src, int64_t ld,
                          int64_t kc, int w)
{
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4)
        for (int r = 0; r < w; r += 4) {
            const float *sr = src + r * ld + p;
            __m128 x0 = _mm_loadu_ps(sr), x1 = _mm_loadu_ps(sr + ld);
            __m128 x2 = _mm_loadu_ps(sr + 2 * ld);
            __m128 x3 = _mm_loadu_ps(sr + 3 * ld);
            _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
            float *dp = dst + p * w + r;
            _mm_storeu_ps(dp, x0);
            _mm_storeu_ps(dp + w, x1);
            _mm_storeu_ps(dp + 2 * w, x2);
            _mm_storeu_ps(dp + 3 * w, x3);
        }
    for (; p < kc; p++)
        for (int r = 0; r < w; r++) dst[p * w + r] = src[r * ld + p];
}

/* The same transposing pack for w = 6 (the AVX2 family's MR, so A of a
 * row-major x · W): rows 0..3 as 4 x 4 register transposes, rows 4..5 as
 * interleaved pairs; each depth's 6 values are stored as 4 + 2. */
static void gm_pack_t6_sse(float *restrict dst, const float *src, int64_t ld,
                           int64_t kc)
{
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
        const float *sr = src + p;
        __m128 x0 = _mm_loadu_ps(sr), x1 = _mm_loadu_ps(sr + ld);
        __m128 x2 = _mm_loadu_ps(sr + 2 * ld);
        __m128 x3 = _mm_loadu_ps(sr + 3 * ld);
        __m128 y4 = _mm_loadu_ps(sr + 4 * ld), y5 = _mm_loadu_ps(sr + 5 * ld);
        _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
        __m128 lo = _mm_unpacklo_ps(y4, y5), hi = _mm_unpackhi_ps(y4, y5);
        float *dp = dst + p * 6;
        _mm_storeu_ps(dp, x0);
        _mm_storel_pi((__m64 *)(dp + 4), lo);
        _mm_storeu_ps(dp + 6, x1);
        _mm_storeh_pi((__m64 *)(dp + 10), lo);
        _mm_storeu_ps(dp + 12, x2);
        _mm_storel_pi((__m64 *)(dp + 16), hi);
        _mm_storeu_ps(dp + 18, x3);
        _mm_storeh_pi((__m64 *)(dp + 22), hi);
    }
    for (; p < kc; p++)
        for (int r = 0; r < 6; r++) dst[p * 6 + r] = src[r * ld + p];
}

/* (Whole rows are moved as straight-line code: GCC would turn a copy loop
 * into a memcpy call per row.) */
#define GM_CP4(j) _mm_store_ps(dst + j, _mm_loadu_ps(src + j));
static void gm_pack_n_sse(float *restrict dst, const float *src, int64_t ld,
                          int64_t kc, int w)
{
    for (int64_t p = 0; p < kc; p++, dst += w, src += ld) {
        switch (w) {
        case 32: GM_CP4(16) GM_CP4(20) GM_CP4(24) GM_CP4(28) /* fallthrough */
        case 16: GM_CP4(8) GM_CP4(12) /* fallthrough */
        case 8: GM_CP4(0) GM_CP4(4) break;
        default:
            for (int j = 0; j < w; j += 4) {
                __m128 v = _mm_loadu_ps(src + j);
                _mm_store_ps(dst + j, v);
            }
        }
    }
}
#undef GM_CP4

/* Packs the full panels of an F32 block with SSE when one of its strides
 * is 1 and the panel width allows it; returns how many rows (A) or
 * columns (B) it packed. */
static int64_t gm_pack_fast(float *dst, const float *src, int64_t s_out,
                            int64_t s_k, int64_t ext, int64_t kc, int w)
{
    int64_t full = ext / w * w;
    if (w == 6 && s_k == 1) {
        for (int64_t i = 0; i < full; i += w)
            gm_pack_t6_sse(dst + i * kc, src + i * s_out, s_out, kc);
        return full;
    }
    if (w % 4) return 0;
    if (s_k == 1) {
        for (int64_t i = 0; i < full; i += w)
            gm_pack_t_sse(dst + i * kc, src + i * s_out, s_out, kc, w);
        return full;
    }
    if (s_out == 1) {
        for (int64_t i = 0; i < full; i += w)
            gm_pack_n_sse(dst + i * kc, src + i, s_k, kc, w);
        return full;
    }
    return 0;
}
#endif

static void gm_pack_a(const gm_ctx *x, void *dst, const char *src,
                      int64_t mc, int64_t kc)
{
    const int mr = x->k->mr;
    if (x->f64) {
        gm_pack_a_f64(dst, (const double *)src, x->sam, x->sak, mc, kc, mr);
        return;
    }
    int64_t done = 0;
#ifdef GM_SSE
    done = gm_pack_fast(dst, (const float *)src, x->sam, x->sak, mc, kc, mr);
#endif
    if (done < mc)
        gm_pack_a_f32((float *)dst + done * kc,
                      (const float *)src + done * x->sam, x->sam, x->sak,
                      mc - done, kc, mr);
}

static void gm_pack_b(const gm_ctx *x, void *dst, const char *src,
                      int64_t kc, int64_t nc)
{
    const int nr = x->k->nr;
    if (x->f64) {
        gm_pack_b_f64(dst, (const double *)src, x->sbk, x->sbn, kc, nc, nr);
        return;
    }
    int64_t done = 0;
#ifdef GM_SSE
    done = gm_pack_fast(dst, (const float *)src, x->sbn, x->sbk, nc, kc, nr);
#endif
    if (done < nc)
        gm_pack_b_f32((float *)dst + done * kc,
                      (const float *)src + done * x->sbn, x->sbk, x->sbn, kc,
                      nc - done, nr);
}

/* One MR x NR tile (or its ragged part) of C: A panel `apan` times B
 * panel `bpan` (row stride ldb) into ct, C rows `rows`, columns `cols`. */
static void gm_tile(const gm_ctx *x, char *tile, const char *apan,
                    const char *bpan, int64_t ldb, char *ct, int64_t rows,
                    int64_t cols, int64_t kc, double beta)
{
    const tm__gemm_kernel *k = x->k;
    const int64_t es = (int64_t)x->es, mr = k->mr, nr = k->nr;
    if (rows == mr && cols == nr && x->scn == 1) {
        k->ukr(kc, apan, bpan, ldb, ct, x->scm, x->alpha, beta);
        return;
    }
    /* A row kernel has one dependent FMA chain per vector of the row, so
     * it is bound by FMA latency, about 4x slower per row than the tile
     * kernel's throughput: only a quarter of a tile or less pays. */
    if (cols == nr && x->scn == 1 && k->ukr_row && rows * GM_ROW_SHARE <= mr) {
        for (int64_t r = 0; r < rows; r++)
            k->ukr_row(kc, apan + r * es, bpan, ldb, ct + r * x->scm * es,
                       x->alpha, beta);
        return;
    }
    k->ukr(kc, apan, bpan, ldb, tile, nr, 1.0, 0.0);
    if (x->f64)
        gm_merge_f64((double *)ct, x->scm, x->scn, (const double *)tile,
                     (int)nr, rows, cols, x->alpha, beta);
    else
        gm_merge_f32((float *)ct, x->scm, x->scn, (const float *)tile,
                     (int)nr, rows, cols, x->alpha, beta);
}

/* Computes C[m0:m1, n0:n1] of batch entry bi. */
static void gm_block(const gm_ctx *x, char *scr, int64_t bi, int64_t m0,
                     int64_t m1, int64_t n0, int64_t n1)
{
    const tm__gemm_kernel *k = x->k;
    const int64_t es = (int64_t)x->es, mr = k->mr, nr = k->nr;
    char *ap = scr, *bp = scr + x->a_bytes, *tile = bp + x->b_bytes;
    const char *ab = (const char *)tm__ptr(x->a) +
                     gm_batch_offset(x->a, x->nbd, bi) * es;
    const char *bb = (const char *)tm__ptr(x->b) +
                     gm_batch_offset(x->b, x->nbd, bi) * es;
    char *cb = (char *)tm__ptr(x->c) + gm_batch_offset(x->c, x->nbd, bi) * es;

    for (int64_t ic = m0; ic < m1; ic += k->mc) {
        int64_t mc = m1 - ic < k->mc ? m1 - ic : k->mc;
        /* Few A panels: each B panel is used by all of them while it is
         * in L1 (it is read once from memory); otherwise an A panel stays
         * in L1 while the B block streams from L2.  Same tiles, same
         * bits, in either order. */
        bool b_outer = mc <= GM_B_OUTER_PANELS * mr;
        for (int64_t pc = 0; pc < x->kd; pc += k->kc) {
            int64_t kc = x->kd - pc < k->kc ? x->kd - pc : k->kc;
            double beta = pc == 0 ? x->beta : 1.0;
            gm_pack_a(x, ap, ab + (ic * x->sam + pc * x->sak) * es, mc, kc);
            for (int64_t jc = n0; jc < n1; jc += k->nc) {
                int64_t nc = n1 - jc < k->nc ? n1 - jc : k->nc;
                /* Direct: full panels read in place, the rest packed. */
                int64_t direct = x->direct_b ? nc / nr * nr : 0;
                const char *bsrc = bb + (pc * x->sbk + jc * x->sbn) * es;
                if (direct < nc)
                    gm_pack_b(x, bp, bsrc + direct * x->sbn * es, kc,
                              nc - direct);
                int64_t na = (mc + mr - 1) / mr, nb = (nc + nr - 1) / nr;
                for (int64_t u = 0; u < na * nb; u++) {
                    int64_t ia = b_outer ? u % na : u / nb;
                    int64_t jb = b_outer ? u / na : u % nb;
                    int64_t ir = ia * mr, jr = jb * nr;
                    int64_t rows = mc - ir < mr ? mc - ir : mr;
                    int64_t cols = nc - jr < nr ? nc - jr : nr;
                    const char *bpan = jr < direct
                                           ? bsrc + jr * es
                                           : bp + (jr - direct) * kc * es;
                    int64_t ldb = jr < direct ? x->sbk : nr;
                    char *ct = cb + ((ic + ir) * x->scm + (jc + jr) * x->scn) * es;
                    gm_tile(x, tile, ap + ir * kc * es, bpan, ldb, ct, rows,
                            cols, kc, beta);
                }
            }
        }
    }
}

static void gm_item(const gm_ctx *x, char *scr, int64_t item)
{
    int64_t bi = item / x->split, piece = item % x->split;
    int64_t m0 = 0, m1 = x->m, n0 = 0, n1 = x->n;
    if (x->split > 1) {
        int64_t unit = x->split_m ? x->k->mr : x->k->nr;
        int64_t ext = x->split_m ? x->m : x->n;
        int64_t units = (ext + unit - 1) / unit;
        int64_t lo = units * piece / x->split * unit;
        int64_t hi = units * (piece + 1) / x->split * unit;
        if (hi > ext) hi = ext;
        if (x->split_m) m0 = lo, m1 = hi;
        else n0 = lo, n1 = hi;
    }
    if (m0 < m1 && n0 < n1) gm_block(x, scr, bi, m0, m1, n0, n1);
}

static void gm_part(int part, int nparts, void *p)
{
    const gm_ctx *x = p;
    int64_t lo = x->items * part / nparts;
    int64_t hi = x->items * (part + 1) / nparts;
    char *scr = x->scratch + (size_t)part * x->part_bytes;
    for (int64_t item = lo; item < hi; item++) gm_item(x, scr, item);
}

/* Rows of A at most this many, against a column-major B, skip packing B
 * when the kernel family has a row_bt kernel: packing B costs as much as
 * the product for one row (decoding one token through x · Wᵀ). */
#define GM_BT_MAX_M 2
/* Their parts are cut finer than GM_GRAIN: B is read from memory once
 * (no packing to share) and decoding is bound by reading it, which
 * several cores do faster than one. */
#define GM_BT_GRAIN ((double)(1 << 15))

/* Part `part` of the small-M path: columns [n0, n1) at multiples of 8 of
 * every row and batch entry, K blocks of the family's kc merged as the
 * packed path merges them (same bits). */
static void gm_bt_part(int part, int nparts, void *p)
{
    const gm_ctx *x = p;
    int64_t units = (x->n + 7) / 8;
    int64_t n0 = units * part / nparts * 8, n1 = units * (part + 1) / nparts * 8;
    if (n1 > x->n) n1 = x->n;
    if (n0 >= n1) return;
    for (int64_t bi = 0; bi < x->batch; bi++) {
        const float *ab = (const float *)tm__ptr(x->a) + gm_batch_offset(x->a, x->nbd, bi);
        const float *bb = (const float *)tm__ptr(x->b) + gm_batch_offset(x->b, x->nbd, bi);
        float *cb = (float *)tm__ptr(x->c) + gm_batch_offset(x->c, x->nbd, bi);
        for (int64_t i = 0; i < x->m; i++)
            for (int64_t pc = 0; pc < x->kd; pc += x->k->kc) {
                int64_t kc = x->kd - pc < x->k->kc ? x->kd - pc : x->k->kc;
                x->k->row_bt(kc, ab + i * x->sam + pc, bb + pc + n0 * x->sbn, x->sbn, n1 - n0,
                             cb + i * x->scm + n0 * x->scn, x->scn, (float)x->alpha,
                             pc == 0 ? (float)x->beta : 1.0f);
            }
    }
}

static const tm__gemm_kernel *gm_kernel(tm_dtype dt)
{
    bool f64 = dt == TM_F64;
    switch (tm__cpu_isa()) {
#if defined(__x86_64__)
    case TM__ISA_AVX512: return f64 ? &tm__dgemm_avx512 : &tm__sgemm_avx512;
    case TM__ISA_AVX2: return f64 ? &tm__dgemm_avx2 : &tm__sgemm_avx2;
#endif
#if defined(__aarch64__)
    case TM__ISA_NEON: return f64 ? &tm__dgemm_portable : &tm__sgemm_neon;
#endif
    default: return f64 ? &tm__dgemm_portable : &tm__sgemm_portable;
    }
}

static size_t gm_round64(size_t n) { return (n + 63) / 64 * 64; }

static int64_t gm_round_up(int64_t v, int64_t to)
{
    return (v + to - 1) / to * to;
}

tm_status tm__gemm_float(const tm_buf *c, const tm_buf *a, const tm_buf *b,
                         double alpha, double beta)
{
    gm_ctx x;
    memset(&x, 0, sizeof x);
    int nd = c->ndim;
    TM_ASSERT(nd >= 2 && a->ndim == nd && b->ndim == nd, TM_ESTATE);
    TM_ASSERT(a->dtype == c->dtype && b->dtype == c->dtype &&
              (c->dtype == TM_F32 || c->dtype == TM_F64), TM_ESTATE);
    x.f64 = c->dtype == TM_F64;
    x.es = x.f64 ? sizeof(double) : sizeof(float);
    x.k = gm_kernel(c->dtype);
    x.c = c, x.a = a, x.b = b, x.alpha = alpha, x.beta = beta;
    x.nbd = nd - 2;
    x.m = c->shape[nd - 2];
    x.n = c->shape[nd - 1];
    x.kd = a->shape[nd - 1];
    x.sam = a->strides[nd - 2], x.sak = a->strides[nd - 1];
    x.sbk = b->strides[nd - 2], x.sbn = b->strides[nd - 1];
    x.scm = c->strides[nd - 2], x.scn = c->strides[nd - 1];
    int64_t batch = 1;
    for (int d = 0; d < x.nbd; d++) batch *= c->shape[d];
    if (batch == 0 || x.m == 0 || x.n == 0) return TM_OK;

    if (alpha == 0 || x.kd == 0) { /* C = beta * C; A and B are not read */
        for (int64_t bi = 0; bi < batch; bi++) {
            char *cb = (char *)tm__ptr(c) +
                       gm_batch_offset(c, x.nbd, bi) * (int64_t)x.es;
            if (x.f64) gm_scale_f64((double *)cb, x.scm, x.scn, x.m, x.n, beta);
            else gm_scale_f32((float *)cb, x.scm, x.scn, x.m, x.n, beta);
        }
        return TM_OK;
    }

    /* Parts: at most one per thread, each with enough work. */
    double work = (double)batch * (double)x.m * (double)x.n * (double)x.kd;
    int64_t parts = tm_get_num_threads();
    if ((double)parts > work / GM_GRAIN) parts = (int64_t)(work / GM_GRAIN);
    if (parts < 1) parts = 1;
    x.split = 1;
    if (parts > 1 && (batch < parts || (batch % parts && batch < 8 * parts))) {
        /* The batch alone leaves threads idle: cut each matrix along its
         * larger dim (the other operand's packing is repeated per piece). */
        x.split_m = x.m >= x.n;
        int64_t units = x.split_m ? (x.m + x.k->mr - 1) / x.k->mr
                                  : (x.n + x.k->nr - 1) / x.k->nr;
        x.split = (int)(units < parts ? units : parts);
    }
    if (!x.f64 && x.k->row_bt && x.m <= GM_BT_MAX_M && x.sak == 1 && x.sbk == 1) {
        x.batch = batch;
        int64_t units = (x.n + 7) / 8;
        parts = tm_get_num_threads();
        if ((double)parts > work / GM_BT_GRAIN) parts = (int64_t)(work / GM_BT_GRAIN);
        if (parts < 1) parts = 1;
        if (parts > units) parts = units;
        if (parts == 1) gm_bt_part(0, 1, &x);
        else tm__parallel_parts((int)parts, gm_bt_part, &x);
        return TM_OK;
    }
    x.items = batch * x.split;
    /* A row-major B with short rows (<= 1 KiB: n <= 256 for F32) and one
     * K block is read in place: packing it would cost more than it saves
     * (measured: +8% at n = 64, +5% at n = 128; wider rows or deeper K are
     * slower unpacked, unless A is a few panels: GM_DIRECT_MAX_PANELS).
     * Same sums, same order: only the loads differ. */
    x.direct_b = x.sbn == 1 && x.sbk >= x.k->nr &&
                 ((x.kd <= x.k->kc && x.sbk * (int64_t)x.es <= 1024) ||
                  x.m <= GM_DIRECT_MAX_PANELS * x.k->mr);
    if (parts > x.items) parts = x.items;

    x.mce = gm_round_up(x.m < x.k->mc ? x.m : x.k->mc, x.k->mr);
    x.kce = x.kd < x.k->kc ? x.kd : x.k->kc;
    x.nce = gm_round_up(x.n < x.k->nc ? x.n : x.k->nc, x.k->nr);
    x.a_bytes = gm_round64((size_t)(x.mce * x.kce) * x.es);
    x.b_bytes = gm_round64((size_t)(x.kce * x.nce) * x.es);
    x.part_bytes = x.a_bytes + x.b_bytes +
                   gm_round64((size_t)(x.k->mr * x.k->nr) * x.es);
    x.scratch = tm__alloc(x.part_bytes * (size_t)parts, "gemm");
    if (!x.scratch) return TM_ENOMEM;
    if (parts == 1) gm_part(0, 1, &x);
    else tm__parallel_parts((int)parts, gm_part, &x);
    tm__dealloc(x.scratch);
    return TM_OK;
}
