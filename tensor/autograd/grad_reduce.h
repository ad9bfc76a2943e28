/*
 * grad_reduce.h — recording (and, in grad_reduce.c, backward functions)
 * of reductions, max/min over a dim, cumsum, sort and topk (internal).
 *
 * Each recorder is called by the op's front end after the result exists;
 * it records a node only when tm__ag_needed() says so and returns TM_OK
 * otherwise.  On failure the error is set and the caller frees its
 * results.
 */
#ifndef FOUNDRY_GRAD_REDUCE_H
#define FOUNDRY_GRAD_REDUCE_H

#include "autograd_impl.h"

/* out = op(t) over the dims marked in red[t's ndim]; p is the correction
 * (var, std) or the order (norm).  ANY/ALL never record. */
tm_status tm__grad_reduce_record(tm_reduce_op op, const tm_tensor *t,
                                 const bool *red, bool keepdim, double p,
                                 tm_tensor *out);
/* values = max/min of t along dim d (wrapped), indices its positions
 * (I64, keepdim as values). */
tm_status tm__grad_minmax_dim_record(bool is_max, const tm_tensor *t, int d,
                                     bool keepdim, tm_tensor *values,
                                     const tm_tensor *indices);
/* out = cumsum of t along dim d (wrapped). */
tm_status tm__grad_cumsum_record(const tm_tensor *t, int d, tm_tensor *out);
/* values = t gathered along dim (may be negative) at indices (sort,
 * topk): the gradient is scattered back through indices. */
tm_status tm__grad_sort_record(const char *name, const tm_tensor *t, int dim,
                               tm_tensor *values, const tm_tensor *indices);

#endif
