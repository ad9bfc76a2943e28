/* cpu_index.c — placeholder until its op family lands (issue 2 in progress). */
#include "cpu_impl.h"
tm_status tm__cpu_gather(const tm_buf *out, const tm_buf *in, int dim,
                         const tm_buf *index)
{ (void)out; (void)in; (void)dim; (void)index; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
tm_status tm__cpu_scatter(const tm_buf *dst, int dim, const tm_buf *index,
                          const tm_buf *src, bool add)
{ (void)dst; (void)dim; (void)index; (void)src; (void)add; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
tm_status tm__cpu_index_select(const tm_buf *out, const tm_buf *in, int dim,
                               const tm_buf *index)
{ (void)out; (void)in; (void)dim; (void)index; return TM_ERR(TM_EUNSUPPORTED, "not yet"); }
