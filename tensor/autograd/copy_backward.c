/* copy_backward.c — the gradients of the copies of core/copy.c (clone,
 * contiguous, to_dtype, to) and their recording hooks. */
#include "backward.h"
#include "../core/grad_hooks.h"

/* The gradient, converted back to the input's dtype. */
static tm_status to_dtype_backward(tm__node *n, const tm_tensor *g,
                                   tm_tensor **gi)
{
    gi[0] = tm__grad_as(tm_retain((tm_tensor *)g), n->edges[0].dtype);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_to_dtype(tm_tensor *out, const tm_tensor *t,
                             const char *name)
{
    const tm_tensor *ins[1] = {t};
    tm__record r = {.name = name, .backward = to_dtype_backward, .nin = 1,
                    .in = ins};
    return tm__ag_result(&r, out);
}

typedef struct { tm_device from; } to_device_args;

/* The gradient, copied back to the input's device. */
static tm_status to_device_backward(tm__node *n, const tm_tensor *g,
                                    tm_tensor **gi)
{
    gi[0] = tm_to(g, TM__AG_ARGS(n, to_device_args)->from);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_to_device(tm_tensor *out, const tm_tensor *t,
                              tm_device from)
{
    const tm_tensor *ins[1] = {t};
    to_device_args p = {from};
    tm__record r = {.name = "ToCopyBackward", .backward = to_device_backward,
                    .nin = 1, .in = ins, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
