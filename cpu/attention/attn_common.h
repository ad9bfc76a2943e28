/*
 * attn_common.h — what every CPU attention kernel shares (internal): the
 * geometry of one call, which keys a query row sees, the dropout
 * decisions and element access of the mask and of narrow key/value rows.
 * The rules are those of tm_attn_params (foundry/backend.h); the reference
 * kernels (attn_ref.c) and the tiled ones read them from here only, so
 * they cannot disagree.
 */
#ifndef FOUNDRY_CPU_ATTN_COMMON_H
#define FOUNDRY_CPU_ATTN_COMMON_H

#include "../cpu_impl.h"
#include "../../tensor/core/random_impl.h"

#include <math.h>

/* The sizes of one call, read from the buffers. */
typedef struct tm__attn_geom {
    int64_t b, h, hkv, tq, tk, d, dv;
    int64_t group; /* h / hkv: query heads per key/value head */
} tm__attn_geom;

static inline tm__attn_geom tm__attn_geom_of(const tm_buf *q,
                                             const tm_buf *k,
                                             const tm_buf *v)
{
    tm__attn_geom g = {q->shape[0], q->shape[1], k->shape[1], q->shape[2],
                       k->shape[2], q->shape[3], v->shape[3], 0};
    g.group = g.h / g.hkv;
    return g;
}

/* The keys query row i may see before the mask: [*lo, *hi) (empty when
 * *lo >= *hi), from causal, window and offset. */
static inline void tm__attn_row_range(const tm_attn_params *p, int64_t tk,
                                      int64_t i, int64_t *lo, int64_t *hi)
{
    int64_t l = 0, h = tk;
    if (p->causal && i + p->offset + 1 < h) h = i + p->offset + 1;
    if (p->window > 0 && i + p->offset - p->window + 1 > l)
        l = i + p->offset - p->window + 1;
    if (h < 0) h = 0;
    if (l > tk) l = tk;
    *lo = l;
    *hi = h;
}

/* Rows [i0, i1) see keys only in [*lo, *hi): the union of their ranges
 * (the ranges move monotonically with i). */
static inline void tm__attn_block_range(const tm_attn_params *p, int64_t tk,
                                        int64_t i0, int64_t i1, int64_t *lo,
                                        int64_t *hi)
{
    int64_t l0, h0, l1, h1;
    tm__attn_row_range(p, tk, i0, &l0, &h0);
    tm__attn_row_range(p, tk, i1 - 1, &l1, &h1);
    *lo = l0 < l1 ? l0 : l1;
    *hi = h0 > h1 ? h0 : h1;
}

/* Whether every key of [j0, j1) is inside every range of rows [i0, i1):
 * a tile that needs no causal/window test per element. */
static inline bool tm__attn_tile_full(const tm_attn_params *p, int64_t tk,
                                      int64_t i0, int64_t i1, int64_t j0,
                                      int64_t j1)
{
    int64_t l0, h0, l1, h1;
    tm__attn_row_range(p, tk, i0, &l0, &h0);
    tm__attn_row_range(p, tk, i1 - 1, &l1, &h1);
    return j0 >= l1 && j1 <= h0;
}

/* ------------------------------------------------------------ dropout */

/* The dropout decisions of one row: keys j of row (b, h, i) are kept iff
 * u(e) < thresh with e = ((b*H + h)*Tq + i)*Tk + j, u(e) the F32 uniform
 * tm_uniform_ draws for element e (random.h). */
typedef struct tm__attn_dropout {
    uint64_t key, counter;
    float thresh; /* (float)(1 - p) */
    double keep_scale; /* 1 / (1 - p) */
} tm__attn_dropout;

static inline tm__attn_dropout tm__attn_dropout_of(const tm_attn_params *p)
{
    tm__attn_dropout d = {p->rng.key, p->rng.counter,
                          (float)(1.0 - p->dropout_p),
                          1.0 / (1.0 - p->dropout_p)};
    return d;
}

/* keep[j - j0] = 1 or 0 for keys [j0, j1) of the row whose element 0 is
 * e0 = ((b*H + h)*Tq + i)*Tk. */
static inline void tm__attn_dropout_row(const tm__attn_dropout *d,
                                        uint64_t e0, int64_t j0, int64_t j1,
                                        uint8_t *keep)
{
    uint64_t e = e0 + (uint64_t)j0, end = e0 + (uint64_t)j1;
    uint32_t w[4];
    uint64_t blk = UINT64_MAX;
    for (; e < end; e++) {
        uint64_t bb = d->counter + e / 4;
        if (bb != blk) {
            tm__philox_block(d->key, bb, w);
            blk = bb;
        }
        float u = (float)(w[e % 4] >> 8) * 0x1p-24f;
        keep[e - e0 - (uint64_t)j0] = u < d->thresh;
    }
}

/* ------------------------------------------------------ element access */

/* The mask element [b, h, i, j] of a 4-d mask buffer as an additive score
 * term: a BOOL mask gives 0 (true) or -inf (false), a float mask its
 * value.  NULL-handle masks are never passed here. */
static inline double tm__attn_mask_at(const tm_buf *m, int64_t b, int64_t h,
                                      int64_t i, int64_t j)
{
    const char *base = (const char *)m->handle + m->offset;
    int64_t off = b * m->strides[0] + h * m->strides[1] +
                  i * m->strides[2] + j * m->strides[3];
    switch (m->dtype) {
    case TM_BOOL: return ((const bool *)base)[off] ? 0.0 : -INFINITY;
    case TM_F32: return ((const float *)base)[off];
    case TM_F64: return ((const double *)base)[off];
    default: return NAN;
    }
}

/* Element pointer of a 4-d buffer at [a, b, c, 0] (bytes: element size of
 * its dtype). */
static inline const void *tm__attn_row_ptr(const tm_buf *t, int64_t a,
                                           int64_t b, int64_t c)
{
    return (const char *)t->handle + t->offset +
           (size_t)(a * t->strides[0] + b * t->strides[1] +
                    c * t->strides[2]) *
               tm_dtype_size(t->dtype);
}

/* Element j of a row of F32, F64, F16 or BF16 as a double. */
static inline double tm__attn_load(const void *row, tm_dtype dt, int64_t j)
{
    switch (dt) {
    case TM_F32: return ((const float *)row)[j];
    case TM_F64: return ((const double *)row)[j];
    case TM_F16: return tm__f16_to_f32(((const uint16_t *)row)[j]);
    case TM_BF16: return tm__bf16_to_f32(((const uint16_t *)row)[j]);
    default: return NAN;
    }
}

#endif
