/*
 * sdpa_ref.h — an independent F64 reference of scaled-dot-product
 * attention for the tm_sdpa tests: the Tq x Tk weights materialised with
 * plain loops, straight from PyTorch's definition (fine at test sizes).
 */
#ifndef FOUNDRY_TEST_SDPA_REF_H
#define FOUNDRY_TEST_SDPA_REF_H

#include "harness.h"

typedef struct tt_sdpa_case {
    int64_t b, h, hkv, tq, tk, d, dv;
    bool causal;
    int64_t offset, window;
    double scale; /* 0: 1 / sqrt(d) */
} tt_sdpa_case;

/* out[b, h, i, :] (B, H, Tq, Dv row-major) from q (B, H, Tq, D), k (B,
 * Hkv, Tk, D), v (B, Hkv, Tk, Dv).  madd: NULL or an additive term per
 * score (B, H, Tq, Tk; -inf hides); drop: NULL or a factor per weight
 * (0 or 1 / (1 - p)).  Rows that see nothing give 0. */
void tt_sdpa_ref(const tt_sdpa_case *c, const double *q, const double *k,
                 const double *v, const double *madd, const double *drop,
                 double *out);

/* The gradients of sum(out * go) (go: B, H, Tq, Dv) into dq, dk, dv
 * (shapes of q, k, v; each may be NULL), from the same materialised
 * weights: dv = P^T go, dS = P (dP - rowsum(P dP)), dq = scale dS k,
 * dk = scale dS^T q, with the dropout factors applied to P where given. */
void tt_sdpa_ref_grad(const tt_sdpa_case *c, const double *q,
                      const double *k, const double *v, const double *madd,
                      const double *drop, const double *go, double *dq,
                      double *dk, double *dv);

/* max |got - want| / max |want| (0 when both are 0). */
double tt_rel_err(const double *got, const double *want, int64_t n);

/* A tensor of `shape` with values from a fixed normal stream, as dtype
 * dt (its values read back into *vals, malloc'ed, when vals is given). */
tm_tensor *tt_sdpa_input(const int64_t *shape, int nd, tm_dtype dt,
                         uint64_t seed, double **vals);

/* One comparison of tm_sdpa against the reference: inputs of case c in
 * dtype dt (seeded), opts->causal/offset/window/scale taken from c, an
 * optional mask (BOOL or float, any broadcastable shape) and dropout from
 * opts.  Checks the forward and, with grads, dq, dk and dv of
 * sum(out * go) against tt_sdpa_ref_grad: max error relative to the
 * largest reference value <= tol.  Failures are recorded with `label`;
 * returns whether all passed. */
bool tt_sdpa_check(const char *file, int line, const char *label,
                   const tt_sdpa_case *c, tm_dtype dt,
                   const tm_sdpa_opts *opts, bool grads, double tol,
                   uint64_t seed);
#define SDPA_CHECK(label, c, dt, opts, grads, tol, seed)                      \
    tt_sdpa_check(__FILE__, __LINE__, (label), (c), (dt), (opts), (grads),   \
                  (tol), (seed))

/* The reference's additive mask (B, H, Tq, Tk) of a BOOL or float mask
 * tensor (NULL for none); malloc'ed. */
double *tt_sdpa_mask_add(const tm_tensor *mask, const tt_sdpa_case *c);
/* The dropout factors (B, H, Tq, Tk) the contract defines for state rng
 * and probability p: tm_uniform_ of an F32 tensor, u < (float)(1 - p). */
double *tt_sdpa_drop(const tt_sdpa_case *c, tm_rng rng, double p);

#endif
