/*
 * optim_impl.h — internals shared by the files of optim/.  Never installed.
 * The arithmetic runs behind the backend table (the `optim_step` and
 * `grad_norm` entries of foundry/backend.h, and ordinary table ops), so
 * optim/ reads no tensor elements and serves every device.
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

#endif
