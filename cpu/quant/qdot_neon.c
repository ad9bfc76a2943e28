/* qdot_neon.c — the plain NEON block dot kernels (aarch64 without the
 * dot-product extension): 8 x 8 -> 16-bit products with vmull_s8, pairs
 * added into 32-bit lanes with vpadalq_s16.  Chosen when the CPU lacks
 * dotprod, or it is switched off (tm__cpu_set_dot_ext). */
#include "qkern.h"

#if defined(__aarch64__)
#include <arm_neon.h>

static inline __attribute__((always_inline)) int32x4_t
qn_dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}
#define QN_DOT16(acc, a, b) qn_dot16((acc), (a), (b))
#define QN_TABLE qn_neon
#define QN_NAME "neon"
#include "qdot_neon_tmpl.h"

const tm__qkern *tm__qkern_neon(void) { return &qn_neon; }
#else
const tm__qkern *tm__qkern_neon(void) { return NULL; }
#endif
