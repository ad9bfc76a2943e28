/*
 * optim_kern.h — the CPU kernels of optim/ (internal): the fused
 * optimizer updates behind the CPU backend's `optim_step` entry
 * (optim_kern_tmpl.h, one family per instruction set; optim_kern.c runs
 * them; contract in foundry/backend.h), and the loops of gradient
 * clipping (clip_kern.c), which optim/clip.c still calls directly on CPU
 * tensors.
 *
 * optim/optim_step.c goes through the backend table, so the same front
 * end serves every device.  Every array is contiguous F32 or F64; the
 * front ends check dtypes, shapes and writability first.
 */
#ifndef FOUNDRY_CPU_OPTIM_KERN_H
#define FOUNDRY_CPU_OPTIM_KERN_H

#include "foundry/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------ optimizer step */

/* Kernels over n contiguous elements: p, g and the state arrays are (N).
 * State pointers a given configuration does not use may be NULL; the
 * settings are a tm_optim_update (foundry/backend.h), whose doubles each
 * kernel casts to its element type.
 *   sgd:     s0 momentum_buffer
 *   adam:    s0 exp_avg, s1 exp_avg_sq, s2 max_exp_avg_sq
 *   rmsprop: s0 square_avg, s1 grad_avg, s2 momentum_buffer
 *   adagrad: s0 sum */
typedef void (*tm__optk_f32)(int64_t n, const tm_optim_update *k, float *p,
                             const float *g, float *s0, float *s1,
                             float *s2);
typedef void (*tm__optk_f64)(int64_t n, const tm_optim_update *k,
                             double *p, const double *g, double *s0,
                             double *s1, double *s2);

/* The tm_update_kind values, TM_UPDATE_SGD .. TM_UPDATE_ADAGRAD. */
#define TM__OPTK_KINDS 4

#define TM__OPTK_DECLARE(fam, T, suffix)                                      \
    void tm__optk_sgd_##suffix##_##fam(int64_t, const tm_optim_update *,      \
                                       T *, const T *, T *, T *, T *);        \
    void tm__optk_adam_##suffix##_##fam(int64_t, const tm_optim_update *,     \
                                        T *, const T *, T *, T *, T *);       \
    void tm__optk_rmsprop_##suffix##_##fam(int64_t, const tm_optim_update *,  \
                                           T *, const T *, T *, T *, T *);    \
    void tm__optk_adagrad_##suffix##_##fam(int64_t, const tm_optim_update *,  \
                                           T *, const T *, T *, T *, T *);

TM__OPTK_DECLARE(portable, float, f32)
TM__OPTK_DECLARE(portable, double, f64)
TM__OPTK_DECLARE(avx2, float, f32)
TM__OPTK_DECLARE(avx512, float, f32)
TM__OPTK_DECLARE(neon, float, f32)

/* The F32 kernel of update kind `kind` for the running kernel family. */
tm__optk_f32 tm__optk_pick_f32(tm_update_kind kind);
/* Same, for a given family (tests). */
tm__optk_f32 tm__optk_family_f32(tm_update_kind kind, int isa);
tm__optk_f64 tm__optk_pick_f64(tm_update_kind kind);

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
