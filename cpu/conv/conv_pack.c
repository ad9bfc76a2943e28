/* conv_pack.c — the packing loops of the implicit-GEMM convolution
 * (conv_igemm.c): the GEMM panels filled straight from the padded input,
 * and the transposing pack of the weight-gradient product.  Panel layouts
 * are the GEMM's (gemm_impl.h): A element [r, p] at p*MR + r, B element
 * [p, j] at p*NR + j. */
#include "conv_pack.h"

#include <string.h>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

void tm__cvp_pack_rows(float *restrict dst, const float *base,
                       const int64_t *koff, int64_t kc, int64_t cols, int nr)
{
    if (cols == nr) {
        /* a fixed-size copy per row: the compiler emits vector moves */
        switch (nr) {
        case 32:
            for (int64_t p = 0; p < kc; p++)
                memcpy(dst + p * 32, base + koff[p], 32 * sizeof(float));
            return;
        case 16:
            for (int64_t p = 0; p < kc; p++)
                memcpy(dst + p * 16, base + koff[p], 16 * sizeof(float));
            return;
        case 12:
            for (int64_t p = 0; p < kc; p++)
                memcpy(dst + p * 12, base + koff[p], 12 * sizeof(float));
            return;
        case 8:
            for (int64_t p = 0; p < kc; p++)
                memcpy(dst + p * 8, base + koff[p], 8 * sizeof(float));
            return;
        default: break;
        }
    }
    for (int64_t p = 0; p < kc; p++) {
        const float *s = base + koff[p];
        float *d = dst + p * nr;
        int64_t j = 0;
        for (; j < cols; j++) d[j] = s[j];
        for (; j < nr; j++) d[j] = 0;
    }
}

void tm__cvp_pack_t(float *restrict dst, const float *const *rows,
                    int nrows, int64_t kc, int w)
{
    int r = 0;
#if defined(__x86_64__)
    /* 4 x 4 blocks transposed in registers (SSE is baseline on x86-64) */
    for (; r + 4 <= nrows; r += 4) {
        const float *s0 = rows[r], *s1 = rows[r + 1], *s2 = rows[r + 2],
                    *s3 = rows[r + 3];
        int64_t p = 0;
        for (; p + 4 <= kc; p += 4) {
            __m128 x0 = _mm_loadu_ps(s0 + p), x1 = _mm_loadu_ps(s1 + p);
            __m128 x2 = _mm_loadu_ps(s2 + p), x3 = _mm_loadu_ps(s3 + p);
            _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
            float *d = dst + p * w + r;
            _mm_storeu_ps(d, x0);
            _mm_storeu_ps(d + w, x1);
            _mm_storeu_ps(d + 2 * w, x2);
            _mm_storeu_ps(d + 3 * w, x3);
        }
        for (; p < kc; p++) {
            float *d = dst + p * w + r;
            d[0] = s0[p], d[1] = s1[p], d[2] = s2[p], d[3] = s3[p];
        }
    }
#endif
    for (; r < nrows; r++) {
        const float *s = rows[r];
        for (int64_t p = 0; p < kc; p++) dst[p * w + r] = s[p];
    }
    if (nrows < w)
        for (int64_t p = 0; p < kc; p++)
            for (int j = nrows; j < w; j++) dst[p * w + j] = 0;
}
