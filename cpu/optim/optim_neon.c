/* optim_neon.c — NEON (aarch64) family of the optimizer kernels: 4 floats
 * per vector, instantiating optim_kern_tmpl.h. */
#if defined(__aarch64__)
#include "optim_kern.h"

#include <arm_neon.h>

#define TMO_FAM neon
#define TMO_SUF f32
#define TMO_T float
#define TMO_W 4
typedef float32x4_t V;
#define V_SET(c) vdupq_n_f32(c)
#define V_LOAD(p) vld1q_f32(p)
#define V_STORE(p, v) vst1q_f32(p, v)
#define V_ADD(a, b) vaddq_f32(a, b)
#define V_SUB(a, b) vsubq_f32(a, b)
#define V_MUL(a, b) vmulq_f32(a, b)
#define V_DIV(a, b) vdivq_f32(a, b)
#define V_SQRT(a) vsqrtq_f32(a)
#define V_FMA(a, b, c) vfmaq_f32(c, a, b)
#define V_NEG(a) vnegq_f32(a)
/* fmax (FMAX) returns NaN when either operand is NaN. */
#define V_MAXN(a, b) vmaxq_f32(a, b)
#include "optim_kern_tmpl.h"
#else
typedef int tm__optim_neon_unused;
#endif
