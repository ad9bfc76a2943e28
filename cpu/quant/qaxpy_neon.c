/* qaxpy_neon.c — the backward's scaled row sums with NEON, 4 floats a
 * vector: separate multiplies and adds (no FMA), in tm__qaxpy_portable's
 * order, so the bits equal the portable loop's. */
#include "qmatmul.h"

#if defined(__aarch64__)
#include <arm_neon.h>

void tm__qaxpy_neon(float *dx, const float *b, int64_t bs, const float *c,
                    int nr, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t s = vld1q_f32(dx + i);
        for (int r = 0; r < nr; r++)
            s = vaddq_f32(s, vmulq_n_f32(vld1q_f32(b + r * bs + i), c[r]));
        vst1q_f32(dx + i, s);
    }
    if (i < n) tm__qaxpy_portable(dx + i, b + i, bs, c, nr, n - i);
}
#endif
