/* cpu_pool_max22.c — F32 max pooling over 2x2 windows at stride 2 (no
 * padding), four outputs at a time with SSE (baseline on x86-64): the
 * CNN's pooling layers, where the scalar select chain of cpu_pool_tmpl.h
 * was 15% of a training step.  Same result bits and argmax as that chain:
 * a window's first element, then each later one taken when it is greater
 * or NaN (the last NaN wins). */
#include "cpu_pool_max22.h"

#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

bool tm__pool_max22_ok(const tm_pool_geom *q)
{
    return q->kh == 2 && q->kw == 2 && q->sh == 2 && q->sw == 2 &&
           q->ph == 0 && q->pw == 0 && 2 * q->oh <= q->h &&
           2 * q->ow <= q->w && q->h * q->w < ((int64_t)1 << 30);
}

#if defined(__x86_64__)
/* Outputs [ox, ox + 4) of a row whose windows start at r0 (top row) and
 * r1 (bottom row); i0 is the flat index of r0[0]. */
static void mx_four(const float *r0, const float *r1, float *y, int64_t *ix,
                    int64_t ox, int64_t i0, int64_t w)
{
    __m128 a0 = _mm_loadu_ps(r0 + 2 * ox), a1 = _mm_loadu_ps(r0 + 2 * ox + 4);
    __m128 c0 = _mm_loadu_ps(r1 + 2 * ox), c1 = _mm_loadu_ps(r1 + 2 * ox + 4);
    __m128 v[4] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                   _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                   _mm_shuffle_ps(c0, c1, _MM_SHUFFLE(2, 0, 2, 0)),
                   _mm_shuffle_ps(c0, c1, _MM_SHUFFLE(3, 1, 3, 1))};
    int32_t b = (int32_t)(i0 + 2 * ox);
    __m128i at = _mm_setr_epi32(b, b + 2, b + 4, b + 6);
    const int32_t off[4] = {0, 1, (int32_t)w, (int32_t)w + 1};
    __m128 m = v[0];
    __m128i mi = at;
    for (int t = 1; t < 4; t++) {
        __m128 k = _mm_or_ps(_mm_cmpgt_ps(v[t], m),
                             _mm_cmpunord_ps(v[t], v[t]));
        __m128i ki = _mm_castps_si128(k);
        __m128i it = _mm_add_epi32(at, _mm_set1_epi32(off[t]));
        m = _mm_or_ps(_mm_and_ps(k, v[t]), _mm_andnot_ps(k, m));
        mi = _mm_or_si128(_mm_and_si128(ki, it), _mm_andnot_si128(ki, mi));
    }
    const __m128i zero = _mm_setzero_si128();
    _mm_storeu_ps(y + ox, m);
    _mm_storeu_si128((__m128i *)(void *)(ix + ox),
                     _mm_unpacklo_epi32(mi, zero));
    _mm_storeu_si128((__m128i *)(void *)(ix + ox + 2),
                     _mm_unpackhi_epi32(mi, zero));
}
#endif

/* Output row oy of one plane: windows at x[i0], x[i0+1], x[i0+w],
 * x[i0+w+1], i0 = 2*oy*w + 2*ox. */
static void mx_row(const float *x, float *y, int64_t *ix, int64_t oy,
                   int64_t w, int64_t ow)
{
    int64_t ox = 0, b0 = 2 * oy * w;
#if defined(__x86_64__)
    /* 2*(ox + 4) <= 2*ow <= w: the eight loads stay in the row */
    for (; ox + 4 <= ow; ox += 4)
        mx_four(x + b0, x + b0 + w, y, ix, ox, b0, w);
    /* a ragged end: the last four outputs again (same values) */
    if (ox < ow && ow >= 4) {
        mx_four(x + b0, x + b0 + w, y, ix, ow - 4, b0, w);
        ox = ow;
    }
#endif
    for (; ox < ow; ox++) {
        int64_t i0 = b0 + 2 * ox;
        int64_t at[4] = {i0, i0 + 1, i0 + w, i0 + w + 1};
        float m = x[i0];
        int64_t mi = i0;
        for (int t = 1; t < 4; t++) {
            float v = x[at[t]];
            if (v > m || v != v) m = v, mi = at[t];
        }
        y[ox] = m;
        ix[ox] = mi;
    }
}

void tm__pool_max22_f32(const tm_pool_geom *q, const float *x, float *y,
                        int64_t *ix, int64_t p0, int64_t p1)
{
    int64_t hw = q->h * q->w, L = q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++)
        for (int64_t oy = 0; oy < q->oh; oy++)
            mx_row(x + p * hw, y + p * L + oy * q->ow,
                   ix + p * L + oy * q->ow, oy, q->w, q->ow);
}
