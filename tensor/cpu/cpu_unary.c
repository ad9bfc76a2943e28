/* cpu_unary.c — placeholder until its op family lands (issue 2 in progress). */
#include "cpu_impl.h"
tm_status tm__cpu_unary(tm_unary_op op, const tm_buf *out, const tm_buf *in,
                        double p0, double p1)
{ (void)op; (void)out; (void)in; (void)p0; (void)p1; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
