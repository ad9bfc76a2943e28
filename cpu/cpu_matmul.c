/* cpu_matmul.c — the CPU gemm entry: F32 and F64 go to the packed SIMD
 * GEMM (gemm.c); F16, BF16 and integers to the cache-blocked loop below,
 * which converts while packing.
 *
 * out is (..., m, n), a is (..., m, k), b is (..., k, n); the batch dims are
 * equal (broadcast ones have stride 0).  The output is cut into tiles of
 * MB rows x NB columns of one batch entry; a tile keeps its sums in a
 * scratch buffer and walks k in blocks of KB, packing the A block (MB x KB)
 * and the B block (KB x NB) into contiguous panels of the compute type.
 * Packing gathers any strides and converts: F16/BF16 to F32, integers to
 * I64.  The inner loop runs along a row of the B panel, so it is contiguous.
 *
 * Every output element is the sum over k in increasing order, one product
 * added at a time, starting from 0 — whatever the tiling or thread count,
 * so results are bitwise identical for any number of threads.  F32 (and
 * F16/BF16) accumulate in F32 like BLAS, F64 in F64; integers in 64-bit
 * unsigned arithmetic (wrapping, no undefined behaviour) and are narrowed
 * with wrap-around when stored.
 */
#include "cpu_impl.h"
#include "gemm/gemm_impl.h"

#include <string.h>

#define MB 64  /* rows per tile */
#define NB 256 /* columns per tile: a row of sums stays in L1 */
#define KB 256 /* depth per block: the B panel (KB x NB) stays in L2 */

/* Multiply-adds per thread below which splitting does not pay. */
#define MM_GRAIN ((int64_t)1 << 20)

typedef struct {
    const tm_buf *out, *a, *b;
    tm_dtype ct; /* compute type: F32, F64 or I64 */
    size_t ces;  /* its size */
    int nbd;     /* batch dims */
    int64_t m, n, k;
    int64_t mt, nt;  /* row tiles, column tiles */
    int64_t items;   /* batch entries * mt * nt */
    int64_t mbe, nbe, kbe; /* tile extents actually needed (<= MB, NB, KB) */
    double alpha, beta;    /* out = alpha * sum + beta * out */
    char *scratch;
    size_t part_bytes;
} mm_ctx;

/* acc[mc x nc] += ap[mc x kc] * bp[kc x nc], all row-major.  Four rows at a
 * time share each load of the B row; each sum still adds one product per k
 * in increasing k.  The row updates take restrict parameters and full-width
 * tiles pass nc == NB as a constant: at -O2 the compiler vectorizes only
 * loops whose trip count and aliasing it knows. */

#define MM_T float
#define MM_N(name) mm_##name##_f32
#include "matmul_loop_tmpl.h"
#undef MM_T
#undef MM_N
#define MM_T double
#define MM_N(name) mm_##name##_f64
#include "matmul_loop_tmpl.h"
#undef MM_T
#undef MM_N
/* Unsigned so that overflow wraps; the panels hold int64 values, which may
 * be read through the corresponding unsigned type. */
#define MM_T uint64_t
#define MM_N(name) mm_##name##_u64
#include "matmul_loop_tmpl.h"
#undef MM_T
#undef MM_N

/* Byte offset of batch entry `bi` in buffer `t` (row-major over the batch
 * dims, which all buffers share). */
static int64_t mm_batch_offset(const tm_buf *t, int nbd, int64_t bi)
{
    int64_t off = 0;
    for (int d = nbd - 1; d >= 0 && bi > 0; d--) {
        int64_t s = t->shape[d];
        off += (bi % s) * t->strides[d];
        bi /= s;
    }
    return off * (int64_t)tm_dtype_size(t->dtype);
}

/* Computes one output tile, using the scratch at `scr`. */
static void mm_tile(const mm_ctx *c, char *scr, int64_t item)
{
    const tm_buf *o = c->out, *a = c->a, *b = c->b;
    int64_t jt = item % c->nt, it = (item / c->nt) % c->mt;
    int64_t bi = item / c->nt / c->mt;
    int64_t i0 = it * MB, j0 = jt * NB;
    int64_t mc = c->m - i0 < MB ? c->m - i0 : MB;
    int64_t nc = c->n - j0 < NB ? c->n - j0 : NB;
    int nd = c->nbd;
    int64_t aes = (int64_t)tm_dtype_size(a->dtype);
    int64_t bes = (int64_t)tm_dtype_size(b->dtype);
    int64_t oes = (int64_t)tm_dtype_size(o->dtype);
    int64_t ces = (int64_t)c->ces;
    int64_t sam = a->strides[nd] * aes, sak = a->strides[nd + 1] * aes;
    int64_t sbk = b->strides[nd] * bes, sbn = b->strides[nd + 1] * bes;
    int64_t som = o->strides[nd] * oes, son = o->strides[nd + 1] * oes;
    const char *ab = (const char *)tm__ptr(a) + mm_batch_offset(a, nd, bi);
    const char *bb = (const char *)tm__ptr(b) + mm_batch_offset(b, nd, bi);
    char *ob = (char *)tm__ptr(o) + mm_batch_offset(o, nd, bi);
    char *acc = scr;
    char *ap = acc + c->mbe * c->nbe * ces;
    char *bp = ap + c->mbe * c->kbe * ces;

    memset(acc, 0, (size_t)(mc * nc * ces)); /* 0.0 and 0 are all-zero bits */
    for (int64_t k0 = 0; k0 < c->k; k0 += KB) {
        int64_t kc = c->k - k0 < KB ? c->k - k0 : KB;
        for (int64_t i = 0; i < mc; i++)
            tm__convert(ap + i * kc * ces, c->ct, ces,
                        ab + (i0 + i) * sam + k0 * sak, a->dtype, sak, kc);
        for (int64_t kk = 0; kk < kc; kk++)
            tm__convert(bp + kk * nc * ces, c->ct, ces,
                        bb + (k0 + kk) * sbk + j0 * sbn, b->dtype, sbn, nc);
        switch (c->ct) {
        case TM_F32:
            mm_loop_f32((float *)acc, (const float *)ap, (const float *)bp,
                        mc, kc, nc);
            break;
        case TM_F64:
            mm_loop_f64((double *)acc, (const double *)ap, (const double *)bp,
                        mc, kc, nc);
            break;
        default:
            mm_loop_u64((uint64_t *)acc, (const uint64_t *)ap,
                        (const uint64_t *)bp, mc, kc, nc);
            break;
        }
    }
    /* One rounding from the compute type (F16/BF16 outputs); integers
     * narrow with wrap-around.  With alpha/beta (float dtypes only), the
     * merge alpha * sum + beta * out is computed in F64 and rounded once. */
    if (c->alpha == 1 && c->beta == 0) {
        for (int64_t i = 0; i < mc; i++)
            tm__convert(ob + (i0 + i) * som + j0 * son, o->dtype, son,
                        acc + i * nc * ces, c->ct, ces, nc);
        return;
    }
    for (int64_t i = 0; i < mc; i++)
        for (int64_t j = 0; j < nc; j++) {
            char *op = ob + (i0 + i) * som + (j0 + j) * son;
            double v = c->alpha * tm__load_f64(acc + (i * nc + j) * ces, c->ct);
            if (c->beta != 0) v += c->beta * tm__load_f64(op, o->dtype);
            tm__store_f64(op, o->dtype, v);
        }
}

static void mm_part(int part, int nparts, void *p)
{
    const mm_ctx *c = p;
    int64_t lo = c->items * part / nparts;
    int64_t hi = c->items * (part + 1) / nparts;
    char *scr = c->scratch + (size_t)part * c->part_bytes;
    for (int64_t item = lo; item < hi; item++) mm_tile(c, scr, item);
}

static tm_status tm__cpu_matmul(const tm_buf *out, const tm_buf *a,
                                const tm_buf *b, double alpha, double beta)
{
    mm_ctx c;
    memset(&c, 0, sizeof c);
    int nd = out->ndim;
    TM_ASSERT(nd >= 2 && a->ndim == nd && b->ndim == nd, TM_ESTATE);
    c.out = out, c.a = a, c.b = b;
    c.alpha = alpha, c.beta = beta;
    c.nbd = nd - 2;
    c.m = out->shape[nd - 2];
    c.n = out->shape[nd - 1];
    c.k = a->shape[nd - 1];
    int64_t batch = 1;
    for (int d = 0; d < c.nbd; d++) batch *= out->shape[d];
    if (batch == 0 || c.m == 0 || c.n == 0) return TM_OK;

    switch (a->dtype) {
    case TM_F32: case TM_F16: case TM_BF16: c.ct = TM_F32; break;
    case TM_F64: c.ct = TM_F64; break;
    case TM_I8: case TM_U8: case TM_I16: case TM_I32: case TM_I64:
    case TM_BOOL:
        c.ct = TM_I64;
        break;
    default:
        return tm__errf(TM_EDTYPE, "tm_matmul", "dtype %s is not supported",
                        tm_dtype_name(a->dtype));
    }
    c.ces = tm_dtype_size(c.ct);
    c.mt = (c.m + MB - 1) / MB;
    c.nt = (c.n + NB - 1) / NB;
    c.items = batch * c.mt * c.nt;
    c.mbe = c.m < MB ? c.m : MB;
    c.nbe = c.n < NB ? c.n : NB;
    c.kbe = c.k < KB ? c.k : KB;

    /* Parts: at most one per thread and per tile, and enough work each.
     * The work product is computed in double: it can exceed int64. */
    double work = (double)batch * (double)c.m * (double)c.n * (double)c.k;
    int64_t nparts = tm_get_num_threads();
    if ((double)nparts > work / (double)MM_GRAIN)
        nparts = (int64_t)(work / (double)MM_GRAIN);
    if (nparts > c.items) nparts = c.items;
    if (nparts < 1) nparts = 1;

    size_t bytes = (size_t)(c.mbe * c.nbe + c.mbe * c.kbe + c.kbe * c.nbe) *
                   c.ces;
    c.part_bytes = (bytes + 63) / 64 * 64;
    c.scratch = tm__alloc(c.part_bytes * (size_t)nparts, "tm_matmul");
    if (!c.scratch) return TM_ENOMEM;
    tm__parallel_parts((int)nparts, mm_part, &c);
    tm__dealloc(c.scratch);
    return TM_OK;
}

tm_status tm__cpu_gemm(tm_ctx *ctx, const tm_buf *c, const tm_buf *a, const tm_buf *b,
                       double alpha, double beta)
{
    (void)ctx;
    if (c->dtype == TM_F32 || c->dtype == TM_F64)
        return tm__gemm_float(c, a, b, alpha, beta);
    if (!tm_dtype_is_float(c->dtype) && (alpha != 1.0 || beta != 0.0))
        return TM_ERR(TM_EUNSUPPORTED, "alpha/beta need a float dtype, "
                      "not %s", tm_dtype_name(c->dtype));
    return tm__cpu_matmul(c, a, b, alpha, beta);
}
