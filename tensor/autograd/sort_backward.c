/* sort_backward.c — the recording hook of ops/sort.c (sort, topk): the
 * values' gradient lands at their indices, as for max/min over a dim
 * (reduce_backward.c). */
#include "backward.h"
#include "../core/grad_hooks.h"

tm_tensor *tm__grad_sort(tm_tensor *values, const char *name,
                         const tm_tensor *t, int dim,
                         const tm_tensor *indices)
{
    int d = dim < 0 ? dim + (t->ndim ? t->ndim : 1) : dim;
    return tm__grad_indexed(values, name, t, d, true, indices);
}
