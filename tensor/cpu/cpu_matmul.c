/* cpu_matmul.c — placeholder until its op family lands (issue 2 in progress). */
#include "cpu_impl.h"
tm_status tm__cpu_matmul(const tm_buf *out, const tm_buf *a, const tm_buf *b)
{ (void)out; (void)a; (void)b; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
