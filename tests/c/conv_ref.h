/*
 * conv_ref.h — the reference the F32 convolution kernel tests compare with
 * (test_conv_igemm.c, test_conv_depthwise.c): the definition of
 * tm_conv_geom (backend.h) in F64, every gradient at once, with the sum of
 * the products' magnitudes per value for the error bound.
 *
 * Tolerance: F32 sums in another order than the reference.  For a value
 * that is a sum of T products, |err| <= (T + 2) * u * S to first order
 * (u = 2^-24, S = the sum of the magnitudes); the check allows twice that.
 */
#ifndef FOUNDRY_TEST_CONV_REF_H
#define FOUNDRY_TEST_CONV_REF_H

#include "foundry/backend.h"

/* Values y, dx, dw, db and the sums of the magnitudes of their terms. */
typedef struct tt_conv_refs {
    double *y, *dx, *dw, *db;
    double *sy, *sdx, *sdw, *sdb;
} tt_conv_refs;

/* Deterministic values in [-1, 1) from seed. */
void tt_conv_fill(float *p, int64_t n, unsigned seed);

/* Allocates r for q (zeroed) and fills it from x, w, b and g (the
 * gradient of y); false when out of memory (r freed). */
bool tt_conv_reference(const tm_conv_geom *q, const float *x, const float *w,
                       const float *b, const float *g, tt_conv_refs *r);
void tt_conv_refs_free(tt_conv_refs *r);

/* The failures among got[0, n) against ref (`terms` products a sum),
 * reporting the first with `what`. */
int tt_conv_compare(const char *what, const float *got, const double *ref,
                    const double *mag, int64_t n, double terms);

#endif
