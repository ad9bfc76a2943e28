/* cpu_rows_avx512.c — AVX-512 loops of the F32 row kernels (cpu_rows.c
 * calls them when tm__cpu_isa() is AVX-512).  Same formulas as the
 * portable loops there, without fused multiply-adds; sums run in double in
 * a fixed lane order, so results do not depend on the thread count (they
 * may differ from the portable family's by the summation order). */
#if defined(__x86_64__)
#include "cpu_rows_impl.h"

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

static inline __mmask16 tail_mask(int64_t k)
{
    return (__mmask16)((1u << k) - 1u);
}

/* Max ignoring NaN (vmaxps returns its second operand for a NaN). */
static float tm__rows_max_f32_avx512(const float *x, int64_t n)
{
    __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 m0 = ninf, m1 = ninf;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
    }
    for (; i + 16 <= n; i += 16)
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
    if (i < n)
        m1 = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tail_mask(n - i),
                                                x + i), m1);
    return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

static double tm__rows_sum_f32_avx512(const float *x, int64_t n)
{
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
    }
    if (i < n) {
        __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_castpd_ps(
                                   _mm512_extractf64x4_pd(
                                       _mm512_castps_pd(v), 1))));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
}

static void tm__rows_sub_f32_avx512(const float *x, float *y, int64_t n,
                                    float m)
{
    __m512 vm = _mm512_set1_ps(m);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    if (i < n) {
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_sub_ps(
                                            _mm512_maskz_loadu_ps(k, x + i),
                                            vm));
    }
}

static void tm__rows_scale_f32_avx512(float *y, int64_t n, float s)
{
    __m512 vs = _mm512_set1_ps(s);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), vs));
    if (i < n) {
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(
                                            _mm512_maskz_loadu_ps(k, y + i),
                                            vs));
    }
}

static void tm__rows_logsub_f32_avx512(const float *x, float *y, int64_t n,
                                float m, float l)
{
    __m512 vm = _mm512_set1_ps(m), vl = _mm512_set1_ps(l);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_sub_ps(
                                    _mm512_loadu_ps(x + i), vm), vl));
    if (i < n) {
        __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        _mm512_mask_storeu_ps(y + i, k,
                              _mm512_sub_ps(_mm512_sub_ps(v, vm), vl));
    }
}

/* s1 = sum(x - x0), s2 = sum((x - x0)^2), in double. */
static void tm__rows_stats_f32_avx512(const float *x, int64_t n, double x0,
                               double *s1, double *s2)
{
    __m512d c = _mm512_set1_pd(x0), z = _mm512_setzero_pd();
    __m512d a0 = z, a1 = z, q0 = z, q1 = z;
    int64_t i = 0;
    /* Two more accumulator pairs for the bulk: a row is latency-bound on
     * the add chains otherwise. */
    __m512d a2 = z, a3 = z, q2 = z, q3 = z;
    for (; i + 32 <= n; i += 32) {
        __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)),
                                   c);
        __m512d d1 = _mm512_sub_pd(
            _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), c);
        __m512d d2 = _mm512_sub_pd(
            _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)), c);
        __m512d d3 = _mm512_sub_pd(
            _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24)), c);
        a0 = _mm512_add_pd(a0, d0);
        a1 = _mm512_add_pd(a1, d1);
        a2 = _mm512_add_pd(a2, d2);
        a3 = _mm512_add_pd(a3, d3);
        q0 = _mm512_add_pd(q0, _mm512_mul_pd(d0, d0));
        q1 = _mm512_add_pd(q1, _mm512_mul_pd(d1, d1));
        q2 = _mm512_add_pd(q2, _mm512_mul_pd(d2, d2));
        q3 = _mm512_add_pd(q3, _mm512_mul_pd(d3, d3));
    }
    a0 = _mm512_add_pd(a0, a2);
    a1 = _mm512_add_pd(a1, a3);
    q0 = _mm512_add_pd(q0, q2);
    q1 = _mm512_add_pd(q1, q3);
    for (; i + 16 <= n; i += 16) {
        __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)),
                                   c);
        __m512d d1 = _mm512_sub_pd(
            _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), c);
        a0 = _mm512_add_pd(a0, d0);
        a1 = _mm512_add_pd(a1, d1);
        q0 = _mm512_add_pd(q0, _mm512_mul_pd(d0, d0));
        q1 = _mm512_add_pd(q1, _mm512_mul_pd(d1, d1));
    }
    for (; i + 8 <= n; i += 8) {
        __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)),
                                   c);
        a0 = _mm512_add_pd(a0, d0);
        q0 = _mm512_add_pd(q0, _mm512_mul_pd(d0, d0));
    }
    if (i < n) {
        __mmask8 k = (__mmask8)((1u << (n - i)) - 1u);
        __m512d d1 = _mm512_maskz_sub_pd(
            k, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, x + i)), c);
        a1 = _mm512_add_pd(a1, d1);
        q1 = _mm512_add_pd(q1, _mm512_mul_pd(d1, d1));
    }
    *s1 = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
    *s2 = _mm512_reduce_add_pd(_mm512_add_pd(q0, q1));
}

/* y = (((x - fm) - fd) * r) * w + b, w and b optional. */
static void tm__rows_norm_f32_avx512(const float *x, float *y, int64_t n,
                                     float fm,
                              float fd, float r, const float *w,
                              const float *b)
{
    __m512 vm = _mm512_set1_ps(fm), vd = _mm512_set1_ps(fd),
           vr = _mm512_set1_ps(r);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : tail_mask(n - i);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        v = _mm512_mul_ps(_mm512_sub_ps(_mm512_sub_ps(v, vm), vd), vr);
        if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, w + i));
        if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, b + i));
        _mm512_mask_storeu_ps(y + i, k, v);
    }
}
const tm__rows_f32_ops tm__rows_avx512 = {
    tm__rows_max_f32_avx512, tm__rows_sum_f32_avx512,
    tm__rows_sub_f32_avx512, tm__rows_scale_f32_avx512,
    tm__rows_logsub_f32_avx512, tm__rows_stats_f32_avx512,
    tm__rows_norm_f32_avx512};
#else
typedef int tm__unused_tu;
#endif
