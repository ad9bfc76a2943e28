/* cpu_reduce.c — placeholder until its op family lands (issue 2 in progress). */
#include "cpu_impl.h"
tm_status tm__cpu_reduce(tm_reduce_op op, const tm_buf *out, const tm_buf *in,
                         int nred, double p)
{ (void)op; (void)out; (void)in; (void)nred; (void)p; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
tm_status tm__cpu_arg_reduce(bool is_max, const tm_buf *indices,
                             const tm_buf *values, const tm_buf *in)
{ (void)is_max; (void)indices; (void)values; (void)in; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
tm_status tm__cpu_cumsum(const tm_buf *out, const tm_buf *in, int dim)
{ (void)out; (void)in; (void)dim; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
