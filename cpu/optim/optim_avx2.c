/* optim_avx2.c — AVX2 + FMA family of the optimizer kernels: 8 floats per
 * vector, instantiating optim_kern_tmpl.h. */
#if defined(__x86_64__)
#include "optim_kern.h"

#include <immintrin.h>

#define TMO_FAM avx2
#define TMO_SUF f32
#define TMO_T float
#define TMO_W 8
typedef __m256 V;
#define V_SET(c) _mm256_set1_ps(c)
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_SQRT(a) _mm256_sqrt_ps(a)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_NEG(a) _mm256_xor_ps(a, _mm256_set1_ps(-0.0f))
/* max_ps returns its second operand when either is NaN: that covers a NaN
 * b; a NaN a is kept by the blend. */
#define V_MAXN(a, b)                                                          \
    _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q))
#include "optim_kern_tmpl.h"
#else
typedef int tm__optim_avx2_unused;
#endif
