/* cpu_fill.c — the host fills of cpu_fill.h. */
#include "cpu_fill.h"

void tm__cpu_arange(const tm_buf *dst, double start, double step)
{
    char *p = dst->data;
    size_t es = tm_dtype_size(dst->dtype);
    for (int64_t i = 0; i < dst->shape[0]; i++)
        tm__store_f64(p + (size_t)i * es, dst->dtype,
                      start + (double)i * step);
}

void tm__cpu_linspace(const tm_buf *dst, double start, double end)
{
    char *p = dst->data;
    size_t es = tm_dtype_size(dst->dtype);
    int64_t n = dst->shape[0];
    double step = n > 1 ? (end - start) / (double)(n - 1) : 0;
    for (int64_t i = 0; i < n; i++) {
        double v = i == n - 1 && n > 1 ? end : start + (double)i * step;
        tm__store_f64(p + (size_t)i * es, dst->dtype, v);
    }
}

void tm__cpu_eye(const tm_buf *dst)
{
    char *p = dst->data;
    size_t es = tm_dtype_size(dst->dtype);
    int64_t n = dst->shape[0], m = dst->shape[1];
    for (int64_t i = 0; i < n && i < m; i++)
        tm__store_f64(p + (size_t)(i * m + i) * es, dst->dtype, 1.0);
}

void tm__cpu_tri_mask(const tm_buf *dst, int64_t k, bool upper)
{
    uint8_t *m = dst->data;
    int64_t rows = dst->shape[0], cols = dst->shape[1];
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) /* j - i: the diagonal of (i,j) */
            m[i * cols + j] = upper ? j - i >= k : j - i <= k;
}
