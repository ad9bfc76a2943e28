/* qdot_avx2.c — the AVX2 block dot kernels: u8 x s8 products through
 * vpmaddubsw (pairs to i16) and vpmaddwd (pairs to i32).  Compiled with
 * -mavx2 -mfma -mf16c (Makefile); chosen at run time (qkern_select.c). */
#include "qkern.h"

#if defined(__x86_64__)
#define QX_DOT_US(u, s)                                                       \
    _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1))
#define QX_TABLE qx_avx2
#define QX_NAME "avx2"
#include "qdot_x86_tmpl.h"

const tm__qkern *tm__qkern_avx2(void) { return &qx_avx2; }
#else
const tm__qkern *tm__qkern_avx2(void) { return NULL; }
#endif
