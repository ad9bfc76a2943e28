/*
 * foundry/optim.h — optimizers, learning-rate schedules, gradient clipping.
 *
 *   tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_ADAMW);
 *   hp.lr = 3e-4;
 *   tm_optim *opt = tm_optim_new(TM_OPTIM_ADAMW, &hp);
 *   tm_optim_add_params(opt, params, NULL);      // one group, defaults
 *   for (step...) {
 *       tm_optim_zero_grad(opt);
 *       ... forward, tm_backward(loss) ...
 *       tm_clip_grad_norm_(ptrs, n, 1.0, 2.0, NULL);
 *       tm_optim_set_lr(opt, -1, tm_lr_sched_at(&sched, step));
 *       tm_optim_step(opt);
 *   }
 *   tm_optim_free(opt);
 *
 * Semantics follow torch.optim (PyTorch 2.13) single-tensor
 * (foreach=False) implementations, operation by operation, including where
 * PyTorch's CPU kernels fuse a multiply-add (add with alpha, lerp,
 * addcmul): Foundry fuses the same ones with an explicit fma, so every
 * kernel family and every thread count gives bitwise the same result.  The
 * per-element formulas are in docs/optim.md.  One F32 step from the same
 * parameters, gradients and state agrees with PyTorch's to a few ulps
 * (PyTorch's vectorized sqrt is not correctly rounded; ours is); long
 * trajectories can drift apart from there where the problem is chaotic,
 * as two runs of PyTorch itself do.
 *
 * Parameters and groups.  An optimizer holds parameter groups, each with
 * its own full tm_optim_hparams.  Parameters are numbered in the order they
 * were added, across groups (0, 1, ...): that index names their state.  A
 * parameter flagged no-decay has weight_decay treated as 0 (both L2 and
 * decoupled).  A parameter may appear only once in an optimizer.
 *
 * Dtypes: F32 and F64 parameters are updated in their own precision;
 * state has the parameter's dtype.  F16/BF16 parameters are refused
 * (TM_EDTYPE): keep an F32 master copy.  Parameters must be contiguous
 * (TM_EINVAL); a non-contiguous gradient is read through a contiguous
 * copy.  Each update is one fused pass over the parameter (reads p, grad
 * and state, writes p and state), vectorized for F32 and split over the
 * thread pool for large parameters on the CPU.
 *
 * Devices: each parameter is updated where it lives, by its device's
 * backend (the optim_step entry of foundry/backend.h); its gradient and
 * state must be on the same device (TM_EDEVICE), and state is created
 * there.  A step reads nothing back to the host.
 *
 * Ownership: the optimizer holds its own reference to every parameter and
 * owns its state tensors.  Not thread-safe: one optimizer, one thread at a
 * time.  All functions that take an optimizer fail with TM_EINVAL on NULL.
 */
#ifndef FOUNDRY_OPTIM_H
#define FOUNDRY_OPTIM_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------- optimizers */

typedef enum tm_optim_kind {
    TM_OPTIM_SGD = 0,
    TM_OPTIM_ADAM = 1,   /* weight_decay is an L2 term added to the grad */
    TM_OPTIM_ADAMW = 2,  /* weight_decay is decoupled: p *= 1 - lr * wd */
    TM_OPTIM_RMSPROP = 3,
    TM_OPTIM_ADAGRAD = 4
} tm_optim_kind;

/* Every hyperparameter of every optimizer; each kind reads its own fields
 * and ignores the others (they are still validated only when used).
 * Start from tm_optim_defaults(kind) — PyTorch's defaults:
 *   SGD      lr 1e-3, momentum 0, dampening 0, nesterov false, wd 0
 *   Adam     lr 1e-3, betas (0.9, 0.999), eps 1e-8, wd 0, amsgrad false
 *   AdamW    as Adam but wd 1e-2
 *   RMSprop  lr 1e-2, alpha 0.99, eps 1e-8, momentum 0, centered false
 *   Adagrad  lr 1e-2, lr_decay 0, wd 0, initial_accumulator_value 0,
 *            eps 1e-10 */
typedef struct tm_optim_hparams {
    double lr;           /* >= 0 */
    double weight_decay; /* >= 0 */
    double momentum;     /* SGD, RMSprop: >= 0 */
    double dampening;    /* SGD */
    double beta1, beta2; /* Adam, AdamW: each in [0, 1) */
    double eps;          /* Adam, AdamW, RMSprop, Adagrad: >= 0 */
    double alpha;        /* RMSprop smoothing: >= 0 */
    double lr_decay;     /* Adagrad: >= 0 */
    double initial_accumulator_value; /* Adagrad: >= 0 */
    bool nesterov;       /* SGD: needs momentum > 0 and dampening 0 */
    bool amsgrad;        /* Adam, AdamW */
    bool centered;       /* RMSprop */
    bool maximize;       /* all: ascend instead of descend */
} tm_optim_hparams;

/* PyTorch's defaults for `kind` (all fields zero/false for an unknown
 * kind). */
tm_optim_hparams tm_optim_defaults(tm_optim_kind kind);
/* Checks hyperparameters for `kind`: TM_EINVAL naming the field and value
 * ("tm_optim_check_hparams: invalid beta2 1.5: must be in [0, 1)"). */
tm_status tm_optim_check_hparams(tm_optim_kind kind,
                                 const tm_optim_hparams *hp);
/* "SGD", "Adam", "AdamW", "RMSprop", "Adagrad" (static; "?" if unknown). */
const char *tm_optim_kind_name(tm_optim_kind kind);

typedef struct tm_optim tm_optim;

/* A new optimizer without parameters; `defaults` (copied; NULL means
 * tm_optim_defaults(kind)) are the hyperparameters of groups added with
 * hp NULL.  NULL on an unknown kind or invalid defaults (TM_EINVAL) or
 * TM_ENOMEM. */
tm_optim *tm_optim_new(tm_optim_kind kind, const tm_optim_hparams *defaults);
/* Drops the parameter references and the state.  NULL is a no-op. */
void tm_optim_free(tm_optim *opt);
tm_optim_kind tm_optim_kind_of(const tm_optim *opt);

/* Appends a group of n >= 1 parameters (borrowed array; the optimizer
 * retains each tensor) with hyperparameters *hp (copied; NULL: the
 * optimizer's defaults).  no_decay (NULL: all false) flags parameters that
 * skip weight decay.  Every parameter must be a float leaf tensor
 * (TM_EDTYPE / TM_ESTATE), not already in the optimizer nor twice in the
 * list (TM_EINVAL naming its position).  Returns the new group's index,
 * or a negative status; on failure nothing changes. */
int tm_optim_add_group(tm_optim *opt, tm_tensor *const *params,
                       const bool *no_decay, int n,
                       const tm_optim_hparams *hp);
/* Same with every parameter of a set, in order, with the set's no-decay
 * flags (tm_params_no_decay).  A tensor listed twice in the set (tied
 * weights) is taken once, at its first position, as PyTorch's
 * Module.parameters() does.  An empty set fails (TM_EINVAL). */
int tm_optim_add_params(tm_optim *opt, const tm_params *set,
                        const tm_optim_hparams *hp);

int tm_optim_group_count(const tm_optim *opt);
/* Parameters in group g (-1 on a bad group, TM_ERANGE). */
int tm_optim_group_size(const tm_optim *opt, int group);
/* Parameters over all groups. */
int tm_optim_param_count(const tm_optim *opt);
/* Parameter i of group g (borrowed), or NULL with TM_ERANGE. */
tm_tensor *tm_optim_param(const tm_optim *opt, int group, int i);
/* Its global index (the state index), or -1 with TM_ERANGE. */
int tm_optim_param_index(const tm_optim *opt, int group, int i);

/* Group g's hyperparameters, copied into *out. */
tm_status tm_optim_get_hparams(const tm_optim *opt, int group,
                               tm_optim_hparams *out);
/* Replaces group g's hyperparameters (validated first; unchanged on
 * error).  Changing amsgrad, centered or momentum between steps works as
 * in PyTorch: missing state is created (zeros) at the next step. */
tm_status tm_optim_set_hparams(tm_optim *opt, int group,
                               const tm_optim_hparams *hp);
/* Sets lr of group g, or of every group when g is -1.  lr >= 0 and
 * finite (TM_EINVAL). */
tm_status tm_optim_set_lr(tm_optim *opt, int group, double lr);
/* lr of group g; NaN with TM_ERANGE on a bad group. */
double tm_optim_get_lr(const tm_optim *opt, int group);

/* One update of every parameter that has a gradient (parameters whose
 * tm_grad is NULL are skipped and their state is untouched, as in
 * PyTorch).  Runs without recording autograd.  Everything is checked
 * before anything is written: a gradient whose shape or dtype differs from
 * its parameter's (TM_ESHAPE / TM_EDTYPE), a gradient or state on another
 * device than its parameter (TM_EDEVICE), a read-only or non-contiguous
 * parameter, an F16/BF16 parameter — then no parameter changes. */
tm_status tm_optim_step(tm_optim *opt);
/* Drops every parameter's gradient (tm_zero_grad; PyTorch's
 * set_to_none=True). */
void tm_optim_zero_grad(tm_optim *opt);
/* Number of tm_optim_step calls that succeeded. */
int64_t tm_optim_step_count(const tm_optim *opt);

/* The optimizer state as named tensors, appended to `out` as buffers
 * (tm_params_add_buffer: copies, not requiring grad), for each parameter
 * index i that has state, in index order:
 *   "state.<i>.step"            0-d I64: updates applied so far (all but
 *                               SGD)
 *   "state.<i>.momentum_buffer" SGD with momentum; RMSprop with momentum
 *   "state.<i>.exp_avg", "state.<i>.exp_avg_sq",
 *   "state.<i>.max_exp_avg_sq"  Adam/AdamW (the last with amsgrad)
 *   "state.<i>.square_avg", "state.<i>.grad_avg" (centered)   RMSprop
 *   "state.<i>.sum"             Adagrad
 * Slots have the parameter's shape, dtype and device; "step" is a CPU
 * tensor (host bookkeeping, as in PyTorch).  Hyperparameters are not
 * included (read them with tm_optim_get_hparams).  All or nothing: on a
 * name already in `out` (TM_EINVAL) or TM_ENOMEM, `out` is unchanged. */
tm_status tm_optim_state_dict(const tm_optim *opt, tm_params *out);
/* Replaces the whole state by copies of the tensors of `in` (names as
 * above), each slot copied to its parameter's device (so a checkpoint
 * loaded on the CPU serves parameters on any device).  Validated first, with errors naming the tensor: unknown names
 * or keys for this kind, an index out of range, a shape or dtype differing
 * from the parameter's, a step that is not a non-negative 0-d I64, or a
 * parameter's required state incomplete (TM_EINVAL / TM_ESHAPE /
 * TM_EDTYPE).  Parameters without any entry get fresh state.  On failure
 * the optimizer is unchanged.  A state saved after N steps and loaded into
 * a fresh optimizer over equal parameters continues bit-exactly. */
tm_status tm_optim_load_state_dict(tm_optim *opt, const tm_params *in);

/* ------------------------------------------------------------- clipping */

/* torch.nn.utils.clip_grad_norm_: the norm of all gradients of
 * params[0..n) taken together (parameters without a gradient are
 * skipped), computed in double in one pass over each gradient on their
 * device (all of them on one device, else TM_EDEVICE); then every
 * gradient is multiplied in place by min(coef, 1), coef = max_norm /
 * (norm + 1e-6), rounded to the gradient's dtype first — a factor of 1
 * leaves a gradient's bits as they were, so only coef < 1 (or NaN)
 * changes anything.  norm_type: any p > 0 (sum |g|^p)^(1/p), INFINITY for
 * max |g|.  *total_norm_out (may be NULL) gets the norm before clipping.
 * max_norm >= 0 and norm_type > 0 (TM_EINVAL).  The norm does not depend
 * on the thread count.
 * Host synchronization: the norm and the coefficient stay on the device;
 * only a non-NULL total_norm_out makes the call wait for the device and
 * read the norm back (as tm_item does).  Pass NULL to keep an
 * asynchronous device's queue running. */
tm_status tm_clip_grad_norm_(tm_tensor *const *params, int n,
                             double max_norm, double norm_type,
                             double *total_norm_out);
/* torch.nn.utils.clip_grad_value_: clamps every gradient element to
 * [-clip_value, clip_value] in place (NaN stays NaN); clip_value >= 0. */
tm_status tm_clip_grad_value_(tm_tensor *const *params, int n,
                              double clip_value);

/* ------------------------------------------------------- LR schedules
 * Pure functions of the step t = 0, 1, 2, ... (the number of optimizer
 * steps taken, PyTorch's scheduler.last_epoch): tm_lr_sched_at returns the
 * lr to use for step t.  Formulas (b = base_lr):
 *   CONSTANT     b
 *   STEP         b * gamma^floor(t / step_size)                   (StepLR)
 *   EXPONENTIAL  b * gamma^t                                (ExponentialLR)
 *   COSINE       t < warmup:  b * (f + (1 - f) * t / warmup)
 *                else, u = t - warmup:
 *                eta_min + (b - eta_min) * (1 + cos(pi * u / t_max)) / 2
 *                (SequentialLR([LinearLR(f, 1, warmup),
 *                 CosineAnnealingLR(t_max, eta_min)], [warmup]); f is
 *                 start_factor; warmup 0 is plain CosineAnnealingLR; past
 *                 t_max the cosine rises again, as in PyTorch)
 *   LINEAR       b * (f + (end_factor - f) * min(t, total_steps)
 *                / total_steps)                                  (LinearLR)
 *   ONE_CYCLE    OneCycleLR, cos annealing, three_phase false, b = max_lr:
 *                lo = b / div_factor, fin = lo / final_div_factor,
 *                e1 = pct_start * total_steps - 1, e2 = total_steps - 1;
 *                t <= e1: anneal(lo, b, t / e1)
 *                else:    anneal(b, fin, (t - e1) / (e2 - e1)),
 *                anneal(s, e, x) = e + (s - e) / 2 * (cos(pi x) + 1);
 *                t > total_steps is an error (as PyTorch)
 * PyTorch computes most of these recursively (lr *= factor per step);
 * the closed forms agree to about 1e-15 relative.  OneCycleLR's momentum
 * cycling is not part of the schedule. */

typedef enum tm_lr_sched_kind {
    TM_LR_CONSTANT = 0,
    TM_LR_STEP = 1,
    TM_LR_EXPONENTIAL = 2,
    TM_LR_COSINE = 3,
    TM_LR_LINEAR = 4,
    TM_LR_ONE_CYCLE = 5
} tm_lr_sched_kind;

typedef struct tm_lr_sched {
    tm_lr_sched_kind kind;
    double base_lr;       /* ONE_CYCLE: max_lr */
    double gamma;         /* STEP, EXPONENTIAL (> 0) */
    int64_t step_size;    /* STEP (>= 1) */
    int64_t warmup_steps; /* COSINE (>= 0) */
    int64_t t_max;        /* COSINE (>= 1) */
    double eta_min;       /* COSINE */
    double start_factor;  /* COSINE warm-up, LINEAR: in (0, 1] */
    double end_factor;    /* LINEAR: in [0, 1] */
    int64_t total_steps;  /* LINEAR, ONE_CYCLE (>= 1) */
    double pct_start;     /* ONE_CYCLE: in [0, 1] */
    double div_factor;    /* ONE_CYCLE: > 0 */
    double final_div_factor; /* ONE_CYCLE: > 0 */
} tm_lr_sched;

/* A schedule of `kind` with PyTorch's defaults: gamma 0.1, step_size 1,
 * warmup 0, t_max 1, eta_min 0, start_factor 1/3, end_factor 1,
 * total_steps 5 (LinearLR's total_iters), pct_start 0.3, div_factor 25,
 * final_div_factor 1e4.  Set base_lr (and t_max / total_steps) yourself. */
tm_lr_sched tm_lr_sched_defaults(tm_lr_sched_kind kind, double base_lr);
/* Validates the fields the kind uses (TM_EINVAL naming the field). */
tm_status tm_lr_sched_check(const tm_lr_sched *s);
/* The lr at step t >= 0; NaN with TM_EINVAL for an invalid schedule, a
 * negative t, or t > total_steps for ONE_CYCLE (TM_ERANGE). */
double tm_lr_sched_at(const tm_lr_sched *s, int64_t t);

#ifdef __cplusplus
}
#endif
#endif
