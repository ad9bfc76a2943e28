/*
 * optim_kern.h — the CPU kernels of optim/ (internal): the fused
 * optimizer updates (optim_kern_tmpl.h, one family per instruction set)
 * and the loops of gradient clipping (clip_kern.c).
 *
 * There are no backend-table entries for these yet, so optim/ calls them
 * directly and accepts CPU tensors only.  Every array is contiguous; the
 * front ends check dtypes, shapes and writability first.
 */
#ifndef FOUNDRY_CPU_OPTIM_KERN_H
#define FOUNDRY_CPU_OPTIM_KERN_H

#include "foundry/base.h"

#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------ optimizer step */

/* Everything one update kernel needs, decided once per parameter and
 * step.  The doubles are cast to the element type inside the kernel,
 * exactly where PyTorch casts its Python-float scalars. */
typedef struct tm__optk {
    bool maximize;
    bool decay;      /* weight_decay != 0 and the parameter may decay */
    bool decoupled;  /* AdamW: p *= decay_mul instead of g += wd p */
    bool momentum;   /* SGD / RMSprop keep a momentum buffer */
    bool first;      /* SGD: the buffer is created from this grad */
    bool nesterov;
    bool amsgrad;
    bool centered;
    double wd;
    double decay_mul; /* 1 - lr * wd */
    double neg_lr;    /* -lr (SGD, RMSprop) */
    double mom;
    double damp1;     /* 1 - dampening */
    double w1;        /* 1 - beta1 (lerp weight) */
    double beta2, c2; /* beta2, 1 - beta2 */
    double bc2_sqrt;  /* (1 - beta2^step)^0.5 */
    double neg_step;  /* -(lr / (1 - beta1^step)) for Adam, -clr Adagrad */
    double eps;
    double alpha, ca; /* RMSprop alpha, 1 - alpha */
} tm__optk;

/* Kernels over n contiguous elements: p, g and the state arrays are (N).
 * State pointers a given configuration does not use may be NULL.
 *   sgd:     s0 momentum_buffer
 *   adam:    s0 exp_avg, s1 exp_avg_sq, s2 max_exp_avg_sq
 *   rmsprop: s0 square_avg, s1 grad_avg, s2 momentum_buffer
 *   adagrad: s0 sum */
typedef void (*tm__optk_f32)(int64_t n, const tm__optk *k, float *p,
                             const float *g, float *s0, float *s1,
                             float *s2);
typedef void (*tm__optk_f64)(int64_t n, const tm__optk *k, double *p,
                             const double *g, double *s0, double *s1,
                             double *s2);

enum { TM__OPTK_SGD, TM__OPTK_ADAM, TM__OPTK_RMSPROP, TM__OPTK_ADAGRAD,
       TM__OPTK_COUNT };

#define TM__OPTK_DECLARE(fam, T, suffix)                                      \
    void tm__optk_sgd_##suffix##_##fam(int64_t, const tm__optk *, T *,        \
                                       const T *, T *, T *, T *);             \
    void tm__optk_adam_##suffix##_##fam(int64_t, const tm__optk *, T *,       \
                                        const T *, T *, T *, T *);            \
    void tm__optk_rmsprop_##suffix##_##fam(int64_t, const tm__optk *, T *,    \
                                           const T *, T *, T *, T *);         \
    void tm__optk_adagrad_##suffix##_##fam(int64_t, const tm__optk *, T *,    \
                                           const T *, T *, T *, T *);

TM__OPTK_DECLARE(portable, float, f32)
TM__OPTK_DECLARE(portable, double, f64)
TM__OPTK_DECLARE(avx2, float, f32)
TM__OPTK_DECLARE(avx512, float, f32)
TM__OPTK_DECLARE(neon, float, f32)

/* The F32 kernel of `which` (TM__OPTK_*) for the running kernel family. */
tm__optk_f32 tm__optk_pick_f32(int which);
/* Same, for a given family (tests). */
tm__optk_f32 tm__optk_family_f32(int which, int isa);
tm__optk_f64 tm__optk_pick_f64(int which);

/* One update of a parameter: p, g and the kept states s[0..2] are (N),
 * F32 (f64 false) or F64, s[j] NULL where not kept.  Runs kernel `which`
 * of the running family, split over the thread pool in ranges of at
 * least 32768 elements (smaller parameters stay on the calling thread);
 * the split cannot change results (optim_kern_tmpl.h). */
void tm__optk_run(int which, bool f64, const tm__optk *k, int64_t n,
                  void *p, const void *g, void *const s[3]);

/* ------------------------------------------------------------ clipping */

/* The norm a clip_grad_norm_ accumulates, per element x of a gradient. */
typedef enum tm__norm_kind {
    TM__NORM_P,   /* sum of |x|^p */
    TM__NORM_L2,  /* sum of x^2 */
    TM__NORM_L1,  /* sum of |x| */
    TM__NORM_INF  /* max of |x| (NaN wins) */
} tm__norm_kind;

/* The number of partials of a gradient of n elements (chunks of 65536). */
int64_t tm__clip_norm_chunks(int64_t n);

/* g is (N), F32 (f64 false) or F64; part is scratch for
 * tm__clip_norm_chunks(n) partials.  Folds g's norm into *total: each
 * chunk's partial is summed in a fixed order (L2: 8 interleaved lanes) on
 * the thread pool, and the partials are combined into *total in chunk
 * order (added; for TM__NORM_INF the larger, a NaN kept), so the result
 * is the same for any thread count. */
void tm__clip_norm_accumulate(const void *g, bool f64, int64_t n,
                              tm__norm_kind kind, double p, double *part,
                              double *total);

/* g is (N), F32 or F64: g *= coef (cast to g's type first). */
void tm__clip_scale(void *g, bool f64, int64_t n, double coef);

/* g is (N), F32 or F64: g = min(max(g, lo), hi) (bounds cast to g's
 * type; NaN stays NaN). */
void tm__clip_clamp(void *g, bool f64, int64_t n, double lo, double hi);

#endif
