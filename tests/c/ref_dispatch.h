/*
 * ref_dispatch.h — the dispatchers of the reference-case families: each
 * maps a case's op name (tests/data/<family>.ref) to Foundry calls on the
 * case's inputs.  One copy serves every runner: the CPU tests (tests/c,
 * against the numpy references) and the conformance suite (tests/backend,
 * the same calls on every device against the CPU).
 *
 * A dispatcher follows its inputs: it computes on their device and leaves
 * its results where the ops put them.  A case without inputs creates its
 * tensor on c->device.  Host values a case reports besides its tensors (a
 * generator's counter, an optimizer's step count, a total norm) are CPU
 * tensors on any device.
 */
#ifndef FOUNDRY_TEST_REF_DISPATCH_H
#define FOUNDRY_TEST_REF_DISPATCH_H

#include "refcase.h"

/* ref_dispatch_ops.c */
tm_status tt_unary_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_binary_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_reduce_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_rows_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_shape_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_index_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_sort_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_matmul_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
tm_status tt_convert_dispatch(const tt_refcase *c, tm_tensor **got,
                              int *ngot);
tm_status tt_random_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);

/* ref_dispatch_scan.c: cumprod, cummax, cummin, logcumsumexp (scan.ref). */
tm_status tt_scan_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);

/* ref_dispatch_optim.c: "optim_step" (checked against the case's ulps
 * bound as well), "sched", "clip_norm", "clip_value". */
tm_status tt_optim_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot);
/* One optimizer step of an "optim_step" case, without the ulps check. */
tm_status tt_optim_run_step(const tt_refcase *c, tm_tensor **got, int *ngot);

#endif
