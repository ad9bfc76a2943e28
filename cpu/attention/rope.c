/*
 * rope.c — the CPU's `rope` entry (contract in foundry/backend.h,
 * tm_rope_params): rows of x rotated in pairs by per-row cos and sin.
 *
 * out, x are (..., T, D); cos, sin (..., T, R/2) with any strides (stride 0
 * where broadcast) and a unit last stride; out contiguous.  Every pair is
 *     o1 = x1 c - x2 s,   o2 = x2 c + x1 s
 * with s negated for the inverse rotation.  The F32 loops run four pairs at
 * a time in GCC/clang vector types; the products and sums are the same
 * IEEE operations as the scalar tail (no contraction), so the result does
 * not depend on where a row's vector part ends, nor on the thread split.
 */
#include "../cpu_impl.h"

#include <string.h>

typedef struct rope_job {
    const tm_buf *out, *x, *cos, *sin;
    int64_t d, half; /* head dim, pairs per row */
    bool interleaved;
    bool inverse;
    int nlead; /* dims before the last */
} rope_job;

/* Element offsets of row `r` (all dims but the last, row-major) in b. */
static int64_t row_offset(const tm_buf *b, int nlead, int64_t r)
{
    int64_t off = 0;
    for (int k = nlead - 1; k >= 0; k--) {
        int64_t n = b->shape[k];
        off += (r % n) * b->strides[k];
        r /= n;
    }
    return off;
}

#if defined(__GNUC__) || defined(__clang__)
#define ROPE_VEC 1
typedef float rope_v4 __attribute__((vector_size(16)));

static inline rope_v4 v4_load(const float *p)
{
    rope_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v4_store(float *p, rope_v4 v) { memcpy(p, &v, sizeof v); }
#endif

#if defined(ROPE_VEC) && (defined(__clang__) || __GNUC__ >= 12)
#define ROPE_SHUFFLE 1
#endif

/* One F32 row in the halves layout: pair t is (t, t + half). */
static void row_halves_f32(float *o, const float *x, const float *c,
                           const float *s, int64_t half, float sgn)
{
    int64_t t = 0;
#ifdef ROPE_VEC
    rope_v4 vs = {sgn, sgn, sgn, sgn};
    for (; t + 4 <= half; t += 4) {
        rope_v4 x1 = v4_load(x + t), x2 = v4_load(x + half + t);
        rope_v4 cv = v4_load(c + t), sv = v4_load(s + t) * vs;
        v4_store(o + t, x1 * cv - x2 * sv);
        v4_store(o + half + t, x2 * cv + x1 * sv);
    }
#endif
    for (; t < half; t++) {
        float x1 = x[t], x2 = x[half + t], cv = c[t], sv = s[t] * sgn;
        o[t] = x1 * cv - x2 * sv;
        o[half + t] = x2 * cv + x1 * sv;
    }
}

/* One F32 row in the interleaved layout: pair t is (2t, 2t + 1). */
static void row_inter_f32(float *o, const float *x, const float *c,
                          const float *s, int64_t half, float sgn)
{
    int64_t t = 0;
#ifdef ROPE_SHUFFLE
    /* even lanes get x1 c - x2 s, odd lanes x2 c + x1 s: the swapped
     * vector times s with the sign pattern (-, +) */
    rope_v4 alt = {-sgn, sgn, -sgn, sgn};
    for (; t + 4 <= half; t += 4) {
        rope_v4 cq = v4_load(c + t), sq = v4_load(s + t);
        rope_v4 lo = v4_load(x + 2 * t), hi = v4_load(x + 2 * t + 4);
        rope_v4 c0 = __builtin_shufflevector(cq, cq, 0, 0, 1, 1);
        rope_v4 c1 = __builtin_shufflevector(cq, cq, 2, 2, 3, 3);
        rope_v4 s0 = __builtin_shufflevector(sq, sq, 0, 0, 1, 1) * alt;
        rope_v4 s1 = __builtin_shufflevector(sq, sq, 2, 2, 3, 3) * alt;
        rope_v4 w0 = __builtin_shufflevector(lo, lo, 1, 0, 3, 2);
        rope_v4 w1 = __builtin_shufflevector(hi, hi, 1, 0, 3, 2);
        v4_store(o + 2 * t, lo * c0 + w0 * s0);
        v4_store(o + 2 * t + 4, hi * c1 + w1 * s1);
    }
#endif
    for (; t < half; t++) {
        float x1 = x[2 * t], x2 = x[2 * t + 1], cv = c[t], sv = s[t] * sgn;
        o[2 * t] = x1 * cv + x2 * -sv;
        o[2 * t + 1] = x2 * cv + x1 * sv;
    }
}

static void rows_f32(int64_t begin, int64_t end, void *arg)
{
    const rope_job *j = arg;
    const float *xb = tm__ptr(j->x), *cb = tm__ptr(j->cos),
                *sb = tm__ptr(j->sin);
    float *ob = tm__ptr(j->out);
    float sgn = j->inverse ? -1.0f : 1.0f;
    int64_t rd = 2 * j->half;
    for (int64_t r = begin; r < end; r++) {
        const float *x = xb + row_offset(j->x, j->nlead, r);
        const float *c = cb + row_offset(j->cos, j->nlead, r);
        const float *s = sb + row_offset(j->sin, j->nlead, r);
        float *o = ob + r * j->d;
        if (j->interleaved) row_inter_f32(o, x, c, s, j->half, sgn);
        else row_halves_f32(o, x, c, s, j->half, sgn);
        if (j->d > rd) memcpy(o + rd, x + rd, (size_t)(j->d - rd) * 4);
    }
}

/* F64 rows: plain loops (gradient checks and precise references). */
static void rows_f64(int64_t begin, int64_t end, void *arg)
{
    const rope_job *j = arg;
    const double *xb = tm__ptr(j->x), *cb = tm__ptr(j->cos),
                 *sb = tm__ptr(j->sin);
    double *ob = tm__ptr(j->out);
    double sgn = j->inverse ? -1.0 : 1.0;
    int64_t h = j->half, rd = 2 * h;
    int64_t i1 = j->interleaved ? 2 : 1, i2 = j->interleaved ? 1 : h;
    for (int64_t r = begin; r < end; r++) {
        const double *x = xb + row_offset(j->x, j->nlead, r);
        const double *c = cb + row_offset(j->cos, j->nlead, r);
        const double *s = sb + row_offset(j->sin, j->nlead, r);
        double *o = ob + r * j->d;
        for (int64_t t = 0; t < h; t++) {
            int64_t a = t * i1, b = a + i2;
            double x1 = x[a], x2 = x[b], cv = c[t], sv = s[t] * sgn;
            o[a] = x1 * cv - x2 * sv;
            o[b] = x2 * cv + x1 * sv;
        }
        if (j->d > rd) memcpy(o + rd, x + rd, (size_t)(j->d - rd) * 8);
    }
}

tm_status tm__cpu_rope(tm_ctx *ctx, const tm_buf *out, const tm_buf *x,
                       const tm_buf *cos, const tm_buf *sin,
                       const tm_rope_params *p)
{
    (void)ctx;
    const char *fn = "rope";
    tm_dtype dt = x->dtype;
    if ((dt != TM_F32 && dt != TM_F64) || out->dtype != dt ||
        cos->dtype != dt || sin->dtype != dt)
        return tm__errf(TM_EDTYPE, fn, "the CPU's rope takes one dtype, F32 "
                        "or F64; got out %s, x %s, cos %s, sin %s",
                        tm_dtype_name(out->dtype), tm_dtype_name(dt),
                        tm_dtype_name(cos->dtype), tm_dtype_name(sin->dtype));
    int nd = x->ndim;
    int64_t d = nd > 0 ? x->shape[nd - 1] : 0;
    int64_t r = p->rotary_dim;
    if (nd < 1 || out->ndim != nd || cos->ndim != nd || sin->ndim != nd ||
        r < 2 || r % 2 || r > d || cos->shape[nd - 1] != r / 2 ||
        sin->shape[nd - 1] != r / 2)
        return tm__errf(TM_ESHAPE, fn, "x (ndim %d, last dim %lld), cos "
                        "and sin (ndim %d, %d) do not fit rotary_dim %lld",
                        nd, (long long)d, cos->ndim, sin->ndim,
                        (long long)r);
    int64_t rows = 1;
    for (int k = 0; k + 1 < nd; k++) {
        rows *= x->shape[k];
        if (cos->shape[k] != x->shape[k] || sin->shape[k] != x->shape[k] ||
            out->shape[k] != x->shape[k])
            return tm__errf(TM_ESHAPE, fn, "cos, sin and out must have x's "
                            "shape before the last dim (dim %d: %lld)", k,
                            (long long)x->shape[k]);
    }
    if (rows == 0 || d == 0) return TM_OK;
    if ((d > 1 && x->strides[nd - 1] != 1) || (r > 2 &&
        (cos->strides[nd - 1] != 1 || sin->strides[nd - 1] != 1)))
        return tm__errf(TM_EINVAL, fn, "x, cos and sin need a unit stride "
                        "on their last dim");
    rope_job j = {out, x, cos, sin, d, r / 2, p->interleaved, p->inverse,
                  nd - 1};
    int64_t grain = TM__GRAIN / d;
    if (grain < 1) grain = 1;
    tm__parallel_for(rows, grain, dt == TM_F32 ? rows_f32 : rows_f64, &j);
    return TM_OK;
}
