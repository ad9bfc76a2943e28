/* qdot_avx512vnni.c — the VNNI block dot kernels: u8 x s8 products summed
 * by fours straight into i32 lanes with vpdpbusd (256-bit, AVX512VL), one
 * instruction where AVX2 needs two.  The K-quants keep vpmaddubsw +
 * vpmaddwd, whose second step applies the sub-block scales for free.
 * Q5_0 has a 512-bit row kernel (qdot_zmm_tmpl.h).
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma
 * -mf16c (Makefile); chosen when tm__cpu_has_vnni(). */
#include "qkern.h"

#if defined(__x86_64__)
#define QX_DOT_US(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), (u), (s))
#define QX_TABLE qx_vnni
#define QX_NAME "avx512vnni"
/* a 512-bit row kernel for Q5_0 (qdot_zmm_tmpl.h) */
static void qz_q5_0(const void *, const void *, size_t, int, int64_t,
                    float *);
#define QX_ROW_Q5_0 qz_q5_0
#include "qdot_x86_tmpl.h"
#include "qdot_zmm_tmpl.h"

const tm__qkern *tm__qkern_avx512vnni(void) { return &qx_vnni; }
#else
const tm__qkern *tm__qkern_avx512vnni(void) { return NULL; }
#endif
