/* cpu_sort.c — placeholder until its op family lands (issue 2 in progress). */
#include "cpu_impl.h"
tm_status tm__cpu_sort(const tm_buf *values, const tm_buf *indices,
                       const tm_buf *in, bool descending)
{ (void)values; (void)indices; (void)in; (void)descending; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
