/* optim_kern.c — the portable family of the optimizer kernels (F32 and
 * F64, one element per "vector"), the per-ISA dispatch, and the CPU
 * backend's `optim_step` entry, which splits one parameter's update over
 * the thread pool. */
#include "optim_kern.h"

#include "../cpu_features.h"
#include "../cpu_impl.h"

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

tm__optk_f32 tm__optk_family_f32(tm_update_kind kind, int isa)
{
    static const tm__optk_f32 table[TM__ISA_COUNT][TM__OPTK_KINDS] = {
        [TM__ISA_PORTABLE] = TMO_ROW(portable),
#if defined(__x86_64__)
        [TM__ISA_AVX2] = TMO_ROW(avx2),
        [TM__ISA_AVX512] = TMO_ROW(avx512),
#endif
#if defined(__aarch64__)
        [TM__ISA_NEON] = TMO_ROW(neon),
#endif
    };
    int which = (int)kind;
    if (which < 0 || which >= TM__OPTK_KINDS) which = 0;
    if (isa < 0 || isa >= TM__ISA_COUNT || !tm__isa_supported((tm__isa)isa) ||
        !table[isa][0])
        isa = TM__ISA_PORTABLE;
    return table[isa][which];
}

tm__optk_f32 tm__optk_pick_f32(tm_update_kind kind)
{
    return tm__optk_family_f32(kind, (int)tm__cpu_isa());
}

tm__optk_f64 tm__optk_pick_f64(tm_update_kind kind)
{
    static const tm__optk_f64 table[TM__OPTK_KINDS] = {
        tm__optk_sgd_f64_portable, tm__optk_adam_f64_portable,
        tm__optk_rmsprop_f64_portable, tm__optk_adagrad_f64_portable};
    int which = (int)kind;
    return table[which >= 0 && which < TM__OPTK_KINDS ? which : 0];
}

/* Elements per thread-pool range: below 2x this a parameter is updated on
 * the calling thread (the update is memory-bound; small ones are not worth
 * waking the pool). */
#define TMO_GRAIN 32768

typedef struct {
    bool f64;
    tm__optk_f32 f32k;
    tm__optk_f64 f64k;
    const tm_optim_update *k;
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

/* Whether b (present) is a dense array of dtype dt with n elements. */
static bool dense_of(const tm_buf *b, tm_dtype dt, int64_t n)
{
    if (b->dtype != dt) return false;
    int64_t expect = 1;
    for (int i = b->ndim - 1; i >= 0; i--) {
        if (b->shape[i] == 0) return n == 0;
        if (b->shape[i] != 1 && b->strides[i] != expect) return false;
        expect *= b->shape[i];
    }
    return expect == n;
}

tm_status tm__cpu_optim_step(tm_ctx *ctx, const tm_optim_update *u,
                             const tm_buf *p, const tm_buf *g,
                             const tm_buf *s0, const tm_buf *s1,
                             const tm_buf *s2)
{
    (void)ctx;
    static const char *fn = "optim_step";
    tm_dtype dt = p->dtype;
    if (dt != TM_F32 && dt != TM_F64)
        return tm__errf(TM_EDTYPE, fn, "parameters are F32 or F64, not %s",
                        tm_dtype_name(dt));
    if ((int)u->kind < 0 || (int)u->kind >= TM__OPTK_KINDS)
        return tm__errf(TM_EINVAL, fn, "unknown update kind %d",
                        (int)u->kind);
    /* the states u's configuration keeps must be there */
    bool sgd = u->kind == TM_UPDATE_SGD, adam = u->kind == TM_UPDATE_ADAM,
         rms = u->kind == TM_UPDATE_RMSPROP;
    bool need[3] = {!sgd || u->momentum, adam || (rms && u->centered),
                    (adam && u->amsgrad) || (rms && u->momentum)};
    const tm_buf *all[5] = {p, g, s0, s1, s2};
    for (int i = 0; i < 5; i++)
        if (!all[i]->handle && (i < 2 || need[i - 2]))
            return tm__errf(TM_EINVAL, fn, "%s is absent",
                            i == 0 ? "the parameter" : i == 1 ? "the gradient"
                                                              : "a state");
    int64_t n = 1;
    for (int i = 0; i < p->ndim; i++) n *= p->shape[i];
    for (int i = 0; i < 5; i++)
        if (all[i]->handle && !dense_of(all[i], dt, n))
            return tm__errf(TM_EINVAL, fn, "every buffer must be a "
                            "contiguous %s array of %lld elements",
                            tm_dtype_name(dt), (long long)n);
    tmo_job job = {.f64 = dt == TM_F64, .k = u, .p = tm__ptr(p),
                   .g = tm__ptr(g),
                   .s = {tm__ptr(s0), tm__ptr(s1), tm__ptr(s2)}};
    if (job.f64)
        job.f64k = tm__optk_pick_f64(u->kind);
    else
        job.f32k = tm__optk_pick_f32(u->kind);
    tm__parallel_for(n, TMO_GRAIN, run_range, &job);
    return TM_OK;
}
