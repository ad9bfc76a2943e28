/* cpu_random.c — placeholder until its op family lands (issue 2 in progress). */
#include "cpu_impl.h"
tm_status tm__cpu_random(const tm_buf *dst, int kind, double p0, double p1,
                         tm_rng *rng)
{ (void)dst; (void)kind; (void)p0; (void)p1; (void)rng; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
