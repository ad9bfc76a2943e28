/*
 * optim_impl.h — internals shared by the files of optim/.  Never installed.
 */
#ifndef FOUNDRY_OPTIM_IMPL_H
#define FOUNDRY_OPTIM_IMPL_H

#include "foundry/optim.h"

#include "../tensor/core/tensor_impl.h"

#include <stdint.h>

/* State slots per parameter (which tensor each kind keeps where):
 *   SGD      s[0] momentum_buffer
 *   Adam(W)  s[0] exp_avg, s[1] exp_avg_sq, s[2] max_exp_avg_sq
 *   RMSprop  s[0] square_avg, s[1] grad_avg, s[2] momentum_buffer
 *   Adagrad  s[0] sum */
#define TMO_NSTATE 3

typedef struct tmo_param {
    tm_tensor *t;  /* one reference held */
    bool no_decay;
    int group;
    bool has_state; /* stepped (or loaded) at least once */
    int64_t step;   /* updates applied (all kinds but SGD report it) */
    tm_tensor *s[TMO_NSTATE]; /* owned; NULL when not kept */
} tmo_param;

typedef struct tmo_group {
    tm_optim_hparams hp;
    int first, count; /* parameters [first, first + count) */
} tmo_group;

struct tm_optim {
    tm_optim_kind kind;
    tm_optim_hparams defaults;
    int ngroups, gcap;
    tmo_group *groups;
    int nparams, pcap;
    tmo_param *params;
    int64_t steps;
};

/* Frees a parameter's state tensors and resets its step. */
void tm__optim_clear_state(tmo_param *pa);
/* Name of state slot j for `kind` ("exp_avg"), NULL if unused. */
const char *tm__optim_slot_name(tm_optim_kind kind, int j);
/* Whether slot j is needed under hyperparameters hp. */
bool tm__optim_slot_used(tm_optim_kind kind, const tm_optim_hparams *hp,
                         int j);

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

/* Kernels over n contiguous elements.  State pointers a given
 * configuration does not use may be NULL.
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

#endif
