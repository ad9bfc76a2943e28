/* cpu_fill.c — the `sequence` entry: arange, linspace, eye and the
 * tril/triu keep-mask (contracts in foundry/backend.h). */
#include "cpu_impl.h"

#include <string.h>

static void tm__seq_line(char *p, const tm_buf *dst, tm_seq_kind kind,
                         double a, double b)
{
    size_t es = tm_dtype_size(dst->dtype);
    int64_t n = dst->shape[0];
    double step = kind == TM_SEQ_ARANGE ? b
                  : n > 1             ? (b - a) / (double)(n - 1)
                                      : 0;
    for (int64_t i = 0; i < n; i++) {
        double v = kind == TM_SEQ_LINSPACE && i == n - 1 && n > 1
                       ? b
                       : a + (double)i * step;
        tm__store_f64(p + (size_t)i * es, dst->dtype, v);
    }
}

tm_status tm__cpu_sequence(tm_ctx *ctx, const tm_buf *dst, tm_seq_kind kind,
                           double a, double b, int64_t k)
{
    (void)ctx;
    char *p = tm__ptr(dst);
    switch (kind) {
    case TM_SEQ_ARANGE:
    case TM_SEQ_LINSPACE: tm__seq_line(p, dst, kind, a, b); return TM_OK;
    case TM_SEQ_EYE: {
        size_t es = tm_dtype_size(dst->dtype);
        int64_t n = dst->shape[0], m = dst->shape[1];
        memset(p, 0, (size_t)(n * m) * es);
        for (int64_t i = 0; i < n && i < m; i++)
            tm__store_f64(p + (size_t)(i * m + i) * es, dst->dtype, 1.0);
        return TM_OK;
    }
    case TM_SEQ_TRIL:
    case TM_SEQ_TRIU: {
        /* 0 or 1 in dst's dtype: BOOL, or I64 when the fallback staged it */
        size_t es = tm_dtype_size(dst->dtype);
        int64_t rows = dst->shape[0], cols = dst->shape[1];
        bool upper = kind == TM_SEQ_TRIU;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) { /* j - i: the diagonal */
                bool keep = upper ? j - i >= k : j - i <= k;
                char *e = p + (size_t)(i * cols + j) * es;
                if (dst->dtype == TM_BOOL) *(uint8_t *)e = keep;
                else tm__store_f64(e, dst->dtype, keep);
            }
        return TM_OK;
    }
    }
    return TM_ERR(TM_EINVAL, "sequence kind %d", (int)kind);
}
