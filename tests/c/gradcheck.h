/*
 * gradcheck.h — central-difference gradient checks in F64.
 *
 * tt_gradcheck(f, ctx, inputs, n, tol) builds out = f(inputs) with the
 * inputs as leaves requiring grad, backpropagates a fixed random upstream
 * gradient R (so every output element matters: loss = sum(out * R)), and
 * compares each input's gradient with
 *     (loss(x + h e_j) - loss(x - h e_j)) / (2 h),   h = 1e-6,
 * element by element: |analytic - numeric| <= tol * (1 + |numeric|).
 * In F64 the central difference errs by O(h^2 f''') + O(eps / h) ~ 1e-10,
 * so tol = 1e-6 leaves a wide margin for well-conditioned functions.
 * Inputs must be F64 tensors (any layout; they are perturbed through
 * tm_set).  f may build views, broadcasts or non-contiguous copies of its
 * inputs — that is how those paths get checked.  Inputs that should not be
 * differentiated (indices, masks) are passed with requires_grad off.
 * Failures are recorded in the running test with the function's name.
 */
#ifndef FOUNDRY_TEST_GRADCHECK_H
#define FOUNDRY_TEST_GRADCHECK_H

#include "harness.h"

typedef tm_tensor *(*tt_gc_fn)(tm_tensor *const *in, void *ctx);

/* Returns true when every gradient matches.  `name` labels failures. */
bool tt_gradcheck_at(const char *file, int line, const char *name,
                     tt_gc_fn f, void *ctx, tm_tensor *const *inputs, int n,
                     double tol);
#define GRADCHECK(name, f, ctx, inputs, n, tol)                               \
    tt_gradcheck_at(__FILE__, __LINE__, (name), (f), (ctx), (inputs), (n),    \
                    (tol))

/* The elements of t (any layout, any device) as a malloc'ed row-major
 * double array (NULL with the error set); free() it. */
double *tt_values(const tm_tensor *t);

/* A fresh F64 leaf of the shape with values from a fixed stream (seed),
 * requiring grad.  New reference. */
tm_tensor *tt_leaf(const int64_t *shape, int ndim, uint64_t seed);
#define TT_LEAF(seed, ...)                                                    \
    tt_leaf((int64_t[]){__VA_ARGS__},                                         \
            (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (seed))

#endif
