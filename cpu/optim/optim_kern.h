/*
 * optim_kern.h — the kernels behind the CPU backend's `optim_step` and
 * `grad_norm` entries (internal to cpu/; contracts in foundry/backend.h):
 * the fused optimizer updates (optim_kern_tmpl.h, one family per
 * instruction set; optim_kern.c runs them) and the chunked norm of
 * gradient clipping (clip_kern.c).
 *
 * Front ends (optim/) never call these: they go through the backend
 * table, so the same front end serves every device.  The entries take
 * contiguous F32 or F64 buffers (the front ends check dtypes, shapes and
 * writability and make gradients contiguous first).
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

#endif
