/* index_impl.h — the scatter writer of ops/index.c, shared with
 * ops/scatter_reduce.c (internal). */
#ifndef FOUNDRY_INDEX_IMPL_H
#define FOUNDRY_INDEX_IMPL_H

#include "../core/tensor_impl.h"

/* `kind` of tm__scatter_kind that writes (tm_scatter) rather than
 * reduces. */
#define TM__SCATTER_WRITE (-1)

/* dst[index along dim] = src, or reduced into dst with `kind` (a
 * tm_scatter_reduce_kind other than MEAN: SUM adds through the scatter
 * entry, PROD / AMAX / AMIN go through scatter_reduce).  src is a tensor
 * or, when NULL, the scalar `value`.  Checks everything (arguments, then
 * every index) before writing; dst is unchanged on failure. */
tm_status tm__scatter_kind(const char *fn, tm_tensor *dst, int dim,
                           const tm_tensor *index, const tm_tensor *src,
                           double value, int kind);

#endif
