/* qact_avx2.c — the activation quantizers (Q8_0, Q8_1, Q8_K) with AVX2,
 * byte-identical to the references in quantize/quant_ref.c: the same F32
 * operations in the same order per value (|x| max, d = amax / 127, the
 * reciprocal and x * id as there), rounding emulated exactly (roundf's
 * half away from zero for Q8_0 / Q8_1, ties to even for Q8_K), and any
 * block holding a non-finite value handed to the reference whole, so
 * NaN / inf inputs give its bytes too. */
#include "qact.h"

#if defined(__x86_64__)
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

/* max |x| over 8n values; false when one is not finite. */
static inline bool absmax_finite(const float *x, int n8, float *amax)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(FLT_MAX);
    __m256 m = _mm256_setzero_ps(), ok = _mm256_castsi256_ps(
                                        _mm256_set1_epi32(-1));
    for (int i = 0; i < n8; i++) {
        __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i));
        ok = _mm256_and_ps(ok, _mm256_cmp_ps(a, big, _CMP_LE_OQ));
        m = _mm256_max_ps(m, a);
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    *amax = _mm_cvtss_f32(h);
    return _mm256_movemask_ps(ok) == 0xff;
}

/* roundf(v) (half away from zero), clamped to [-127, 127], as i32. */
static inline __m256i round_away_q8(__m256 v)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
    __m256 one = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
    __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    t = _mm256_add_ps(t, _mm256_and_ps(up, one));
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-127.0f)),
                      _mm256_set1_ps(127.0f));
    return _mm256_cvttps_epi32(t);
}

/* 32 i32 (four vectors) -> 32 bytes in order. */
static inline void pack32(__m256i a, __m256i b, __m256i c, __m256i d,
                          int8_t *out)
{
    __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    __m256i v = _mm256_packs_epi16(ab, cd);
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3,
                                                         7));
    _mm256_storeu_si256((__m256i *)out, v);
}

static inline int32_t hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v),
                              _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* One 32-value block to qs (Q8_0 / Q8_1 rounding); returns d, and the sum
 * of the quants in *sum. */
static inline float q8_block(const float *x, int8_t *qs, int32_t *sum,
                             float amax)
{
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; i++)
        q[i] = round_away_q8(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), idv));
    pack32(q[0], q[1], q[2], q[3], qs);
    *sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]),
                                     _mm256_add_epi32(q[2], q[3])));
    return d;
}

void tm__qact_q8_0_avx2(const float *x, void *dst, int64_t n)
{
    tm__block_q8_0 *y = dst;
    for (int64_t b = 0; b < n / TM__QK; b++, x += TM__QK) {
        float amax;
        int32_t sum;
        if (!absmax_finite(x, 4, &amax)) {
            tm__qtraits_of(TM_Q8_0)->quantize_ref(x, &y[b], TM__QK);
            continue;
        }
        y[b].d = tm__f32_to_half(q8_block(x, y[b].qs, &sum, amax));
    }
}

void tm__qact_q8_1_avx2(const float *x, void *dst, int64_t n)
{
    tm__block_q8_1 *y = dst;
    for (int64_t b = 0; b < n / TM__QK; b++, x += TM__QK) {
        float amax;
        int32_t sum;
        if (!absmax_finite(x, 4, &amax)) {
            tm__qtraits_of(TM_Q8_1)->quantize_ref(x, &y[b], TM__QK);
            continue;
        }
        const float d = q8_block(x, y[b].qs, &sum, amax);
        y[b].d = tm__f32_to_half(d);
        y[b].s = tm__f32_to_half((float)sum * d);
    }
}

void tm__qact_q8_k_avx2(const float *x, void *dst, int64_t n)
{
    tm__block_q8_K *y = dst;
    for (int64_t b = 0; b < n / TM__QK_K; b++, x += TM__QK_K) {
        float amax;
        if (!absmax_finite(x, 32, &amax) || !amax) {
            tm__qtraits_of(TM_Q8_K)->quantize_ref(x, &y[b], TM__QK_K);
            continue;
        }
        /* the first value of largest magnitude, with its sign */
        float max = 0.0f;
        for (int j = 0; j < TM__QK_K; j++)
            if (fabsf(x[j]) == amax) {
                max = x[j];
                break;
            }
        const float iscale = -127.f / max;
        const __m256 isv = _mm256_set1_ps(iscale);
        for (int g = 0; g < 8; g++) {
            __m256i q[4];
            for (int i = 0; i < 4; i++) {
                __m256 v = _mm256_round_ps(
                    _mm256_mul_ps(isv, _mm256_loadu_ps(x + 32 * g + 8 * i)),
                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128.0f)),
                                  _mm256_set1_ps(127.0f));
                q[i] = _mm256_cvttps_epi32(v);
            }
            pack32(q[0], q[1], q[2], q[3], y[b].qs + 32 * g);
            y[b].bsums[2 * g] =
                (int16_t)hsum_i32(_mm256_add_epi32(q[0], q[1]));
            y[b].bsums[2 * g + 1] =
                (int16_t)hsum_i32(_mm256_add_epi32(q[2], q[3]));
        }
        y[b].d = 1 / iscale;
    }
}
#endif
