/* cpu_binary.c — placeholder until its op family lands (issue 2 in progress). */
#include "cpu_impl.h"
tm_status tm__cpu_binary(tm_binary_op op, const tm_buf *out, const tm_buf *a,
                         const tm_buf *b)
{ (void)op; (void)out; (void)a; (void)b; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
tm_status tm__cpu_where(const tm_buf *out, const tm_buf *cond,
                        const tm_buf *a, const tm_buf *b)
{ (void)cond; (void)out; (void)a; (void)b; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
