/* optim_kern.c — the portable family of the optimizer kernels (F32 and
 * F64, one element per "vector"), and the per-ISA dispatch. */
#include "../../optim/optim_impl.h"

#include "../cpu_features.h"

#include <math.h>

#define TMO_FAM portable
#define TMO_W 1
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_DIV(a, b) ((a) / (b))
#define V_NEG(a) (-(a))

#define TMO_SUF f32
#define TMO_T float
typedef float tmo_v32;
#define V tmo_v32
#define V_SET(c) ((float)(c))
#define V_SQRT(a) sqrtf(a)
#define V_FMA(a, b, c) fmaf(a, b, c)
#define V_MAXN(a, b) tmo_maxn_f32(a, b)
static inline float tmo_maxn_f32(float a, float b)
{
    return (a != a || a > b) ? a : b;
}
#include "optim_kern_tmpl.h"
#undef TMO_SUF
#undef TMO_T
#undef V_SET
#undef V_SQRT
#undef V_FMA
#undef V_MAXN
#undef V

typedef double tmo_v64;
#define V tmo_v64

#define TMO_SUF f64
#define TMO_T double
#define V_SET(c) ((double)(c))
#define V_SQRT(a) sqrt(a)
#define V_FMA(a, b, c) fma(a, b, c)
#define V_MAXN(a, b) tmo_maxn_f64(a, b)
static inline double tmo_maxn_f64(double a, double b)
{
    return (a != a || a > b) ? a : b;
}
#include "optim_kern_tmpl.h"

#define TMO_ROW(fam)                                                          \
    {tm__optk_sgd_f32_##fam, tm__optk_adam_f32_##fam,                         \
     tm__optk_rmsprop_f32_##fam, tm__optk_adagrad_f32_##fam}

tm__optk_f32 tm__optk_family_f32(int which, int isa)
{
    static const tm__optk_f32 table[TM__ISA_COUNT][TM__OPTK_COUNT] = {
        [TM__ISA_PORTABLE] = TMO_ROW(portable),
#if defined(__x86_64__)
        [TM__ISA_AVX2] = TMO_ROW(avx2),
        [TM__ISA_AVX512] = TMO_ROW(avx512),
#endif
#if defined(__aarch64__)
        [TM__ISA_NEON] = TMO_ROW(neon),
#endif
    };
    if (which < 0 || which >= TM__OPTK_COUNT || isa < 0 ||
        isa >= TM__ISA_COUNT || !tm__isa_supported((tm__isa)isa) ||
        !table[isa][0])
        isa = TM__ISA_PORTABLE;
    if (which < 0 || which >= TM__OPTK_COUNT) which = 0;
    return table[isa][which];
}

tm__optk_f32 tm__optk_pick_f32(int which)
{
    return tm__optk_family_f32(which, (int)tm__cpu_isa());
}

tm__optk_f64 tm__optk_pick_f64(int which)
{
    static const tm__optk_f64 table[TM__OPTK_COUNT] = {
        tm__optk_sgd_f64_portable, tm__optk_adam_f64_portable,
        tm__optk_rmsprop_f64_portable, tm__optk_adagrad_f64_portable};
    return table[which >= 0 && which < TM__OPTK_COUNT ? which : 0];
}
