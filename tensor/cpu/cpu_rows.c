/* cpu_rows.c — placeholder until the row kernels land. */
#include "cpu_impl.h"

tm_status tm__cpu_softmax(const tm_buf *out, const tm_buf *in, bool log)
{
    (void)out; (void)in; (void)log;
    return TM_ERR(TM_EUNSUPPORTED, "not yet");
}

tm_status tm__cpu_norm_rows(const tm_buf *out, const tm_buf *in,
                            const tm_buf *weight, const tm_buf *bias,
                            double eps, bool rms)
{
    (void)out; (void)in; (void)weight; (void)bias; (void)eps; (void)rms;
    return TM_ERR(TM_EUNSUPPORTED, "not yet");
}
