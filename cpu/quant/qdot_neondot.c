/* qdot_neondot.c — the NEON block dot kernels with the dot-product
 * extension: 16 byte products summed by fours into 32-bit lanes by one
 * vdotq_s32 (sdot).  Compiled with -march=armv8.2-a+dotprod (Makefile);
 * chosen when tm__cpu_has_dotprod(). */
#include "qkern.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#define QN_DOT16(acc, a, b) vdotq_s32((acc), (a), (b))
#define QN_TABLE qn_neondot
#define QN_NAME "neondot"
#include "qdot_neon_tmpl.h"

const tm__qkern *tm__qkern_neondot(void) { return &qn_neondot; }
#else
const tm__qkern *tm__qkern_neondot(void) { return NULL; }
#endif
