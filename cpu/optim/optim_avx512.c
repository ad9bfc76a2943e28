/* optim_avx512.c — AVX-512 family of the optimizer kernels: 16 floats per
 * vector, instantiating optim_kern_tmpl.h. */
#if defined(__x86_64__)
#include "optim_kern.h"

#include <immintrin.h>

#define TMO_FAM avx512
#define TMO_SUF f32
#define TMO_T float
#define TMO_W 16
typedef __m512 V;
#define V_SET(c) _mm512_set1_ps(c)
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_SQRT(a) _mm512_sqrt_ps(a)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_NEG(a)                                                              \
    _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a),              \
                                         _mm512_set1_epi32((int)0x80000000u)))
/* max_ps returns its second operand when either is NaN: that covers a NaN
 * b; a NaN a is kept by the blend. */
#define V_MAXN(a, b)                                                          \
    _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q),              \
                         _mm512_max_ps(a, b), a)
#include "optim_kern_tmpl.h"
#else
typedef int tm__optim_avx512_unused;
#endif
