/* optim_kern.c — the portable family of the optimizer kernels (F32 and
 * F64, one element per "vector"), the per-ISA dispatch, and the driver
 * that splits one parameter's update over the thread pool. */
#include "optim_kern.h"

#include "../cpu_features.h"
#include "../../tensor/runtime/runtime_impl.h"

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

/* Elements per thread-pool range: below 2x this a parameter is updated on
 * the calling thread (the update is memory-bound; small ones are not worth
 * waking the pool). */
#define TMO_GRAIN 32768

typedef struct {
    bool f64;
    tm__optk_f32 f32k;
    tm__optk_f64 f64k;
    const tm__optk *k;
    void *p;
    const void *g;
    void *s[3];
} tmo_job;

static void run_range(int64_t b, int64_t e, void *ctx)
{
    const tmo_job *j = ctx;
    if (j->f64) {
        double *s[3];
        for (int i = 0; i < 3; i++)
            s[i] = j->s[i] ? (double *)j->s[i] + b : NULL;
        j->f64k(e - b, j->k, (double *)j->p + b, (const double *)j->g + b,
                s[0], s[1], s[2]);
    } else {
        float *s[3];
        for (int i = 0; i < 3; i++)
            s[i] = j->s[i] ? (float *)j->s[i] + b : NULL;
        j->f32k(e - b, j->k, (float *)j->p + b, (const float *)j->g + b,
                s[0], s[1], s[2]);
    }
}

void tm__optk_run(int which, bool f64, const tm__optk *k, int64_t n,
                  void *p, const void *g, void *const s[3])
{
    tmo_job job = {.f64 = f64, .k = k, .p = p, .g = g,
                   .s = {s[0], s[1], s[2]}};
    if (f64)
        job.f64k = tm__optk_pick_f64(which);
    else
        job.f32k = tm__optk_pick_f32(which);
    tm__parallel_for(n, TMO_GRAIN, run_range, &job);
}
