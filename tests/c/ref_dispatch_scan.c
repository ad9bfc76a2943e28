/* ref_dispatch_scan.c — the dispatcher of scan.ref (cumprod, cummax,
 * cummin, logcumsumexp), for the CPU tests and the conformance suite. */
#include "ref_dispatch.h"

#include <string.h>

tm_status tt_scan_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    if (c->nin != 1) return tm_set_error(TM_EUNSUPPORTED, "need one input");
    const tm_tensor *x = c->in[0];
    int dim = (int)tt_arg(c, "dim", 0);
    const char *op = c->op;
    *ngot = 0;
    if (!strcmp(op, "cumprod")) {
        got[0] = tm_cumprod(x, dim);
    } else if (!strcmp(op, "logcumsumexp")) {
        got[0] = tm_logcumsumexp(x, dim);
    } else if (!strcmp(op, "cummax") || !strcmp(op, "cummin")) {
        tm_status st = op[4] == 'a' ? tm_cummax(x, dim, &got[0], &got[1])
                                    : tm_cummin(x, dim, &got[0], &got[1]);
        *ngot = st ? 0 : 2;
        return st;
    } else {
        return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", op);
    }
    if (!got[0]) return tm_last_status();
    *ngot = 1;
    return TM_OK;
}
