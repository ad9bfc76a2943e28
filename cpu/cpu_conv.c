/* cpu_conv.c — the element loops of the CPU's conv entries (contracts in
 * cpu_nn.h): im2col / col2im, the bias add and its gradient, and the
 * regrouping of the output gradient for the weight-gradient product.  The
 * products themselves are GEMMs, run by the entries (cpu_conv_entry.c)
 * with the CPU's gemm kernel.
 *
 * The loops are written once per element type in cpu_conv_tmpl.h.  Each
 * is split over the thread pool so that every output element has one
 * writer (im2col by rows of cols, col2im by input volumes, the bias by
 * output rows / channels) and a fixed summation order. */
#include "cpu_nn.h"

#include "../tensor/core/tensor_impl.h"

#include <string.h>

typedef struct conv_job {
    const tm_conv_geom *q;
    const void *src; /* x of image 0 (im2col), dcols (col2im), bias, g */
    void *dst;       /* cols (im2col), dx of image 0 (col2im), y, db */
    int64_t ld;      /* elements between rows of cols / dcols */
    int64_t bs;      /* elements between images in cols / dcols */
} conv_job;

/* The output columns ox whose input column x0 + ox * sw lies in [0, w):
 * [*lo, *hi) (possibly empty). */
static void conv_span(int64_t x0, int64_t sw, int64_t w, int64_t ow,
                      int64_t *lo, int64_t *hi)
{
    int64_t l = x0 >= 0 ? 0 : (-x0 + sw - 1) / sw;
    int64_t h = x0 >= w ? 0 : (w - x0 + sw - 1) / sw;
    if (h > ow) h = ow;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

#define T float
#define SUF f32
#include "cpu_conv_tmpl.h"
#undef T
#undef SUF

#define T double
#define SUF f64
#include "cpu_conv_tmpl.h"
#undef T
#undef SUF

/* Work items of at least this many elements per thread. */
static int64_t conv_grain(int64_t per_item)
{
    int64_t g = 32768 / (per_item > 0 ? per_item : 1);
    return g > 0 ? g : 1;
}

void tm__conv_im2col(const tm_conv_geom *q, tm_dtype dt, const void *x,
                     void *cols, int64_t nb, bool wide)
{
    int64_t L = q->od * q->oh * q->ow, R = q->c * q->kd * q->kh * q->kw;
    conv_job jb = {q, x, cols, wide ? nb * L : L, wide ? L : R * L};
    tm__parallel_for(nb * R, conv_grain(L),
                     dt == TM_F64 ? conv_im2col_f64 : conv_im2col_f32, &jb);
}

void tm__conv_col2im(const tm_conv_geom *q, tm_dtype dt, const void *dcols,
                     void *dx, int64_t nb)
{
    int64_t L = q->od * q->oh * q->ow, R = q->c * q->kd * q->kh * q->kw;
    conv_job jb = {q, dcols, dx, L, R * L};
    tm__parallel_for(nb * q->c, conv_grain(q->kd * q->kh * q->kw * L),
                     dt == TM_F64 ? conv_col2im_f64 : conv_col2im_f32, &jb);
}

void tm__conv_bias_add(const tm_conv_geom *q, tm_dtype dt, void *y,
                       const void *bias)
{
    conv_job jb = {q, bias, y, 0, 0};
    tm__parallel_for(q->n * q->oc, conv_grain(q->od * q->oh * q->ow),
                     dt == TM_F64 ? conv_bias_add_f64 : conv_bias_add_f32,
                     &jb);
}

void tm__conv_bias_grad(const tm_conv_geom *q, tm_dtype dt, const void *g,
                        void *db)
{
    conv_job jb = {q, g, db, 0, 0};
    tm__parallel_for(q->oc,
                     conv_grain(q->n * q->od * q->oh * q->ow),
                     dt == TM_F64 ? conv_bias_grad_f64 : conv_bias_grad_f32,
                     &jb);
}

void tm__conv_regroup(const void *g, void *gt, int64_t nb, int64_t oc,
                      int64_t l, size_t es)
{
    size_t row = (size_t)l * es;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t o = 0; o < oc; o++)
            memcpy((char *)gt + (size_t)(o * nb + b) * row,
                   (const char *)g + (size_t)(b * oc + o) * row, row);
}
