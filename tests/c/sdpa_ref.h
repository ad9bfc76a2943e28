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

/* max |got - want| / max |want| (0 when both are 0). */
double tt_rel_err(const double *got, const double *want, int64_t n);

/* A tensor of `shape` with values from a fixed normal stream, as dtype
 * dt (its values read back into *vals, malloc'ed, when vals is given). */
tm_tensor *tt_sdpa_input(const int64_t *shape, int nd, tm_dtype dt,
                         uint64_t seed, double **vals);

#endif
