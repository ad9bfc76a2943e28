/* qaxpy_avx2.c — the backward's scaled row sums with AVX2, 8 floats a
 * vector: separate multiplies and adds (no FMA), in tm__qaxpy_portable's
 * order, so the bits equal the portable loop's. */
#include "qmatmul.h"

#if defined(__x86_64__)
#include <immintrin.h>

void tm__qaxpy_avx2(float *dx, const float *b, int64_t bs, const float *c,
                    int nr, int64_t n)
{
    __m256 cv[4];
    for (int r = 0; r < nr; r++) cv[r] = _mm256_set1_ps(c[r]);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 s = _mm256_loadu_ps(dx + i);
        for (int r = 0; r < nr; r++)
            s = _mm256_add_ps(s, _mm256_mul_ps(cv[r],
                                               _mm256_loadu_ps(b + r * bs + i)));
        _mm256_storeu_ps(dx + i, s);
    }
    if (i < n) tm__qaxpy_portable(dx + i, b + i, bs, c, nr, n - i);
}
#endif
