/* cpu_rows_grad.c — fused backward of layer_norm / rms_norm rows.
 *
 * Per row, with xhat = (x - mean) * rstd (rms: x * rstd) and gy = g * w:
 *   dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))   (rms: no mean(gy))
 *   dw += g * xhat,  db += g                               (summed over rows)
 * Three passes over a row that stays in cache (statistics, the two means,
 * the output) instead of a dozen full-tensor temporaries.  Sums run in
 * double.  dw / db are summed per thread part into double buffers and
 * combined in part order, so they are deterministic for a thread count;
 * dx does not depend on it at all. */
#include "cpu_impl.h"

#include <math.h>
#include <string.h>

typedef struct {
    const tm_buf *dx, *dw, *db, *g, *x, *w;
    double eps;
    bool rms, f64;
    int64_t rows, cols;
    double *part; /* per part: dw[cols], db[cols] */
} tm__nrb;

#define NRB_T float
#define NRB_N(name) name##_float
#include "rows_grad_tmpl.h"
#undef NRB_T
#undef NRB_N
#define NRB_T double
#define NRB_N(name) name##_double
#include "rows_grad_tmpl.h"
#undef NRB_T
#undef NRB_N

static void tm__nrb_part(int part, int nparts, void *p)
{
    const tm__nrb *c = p;
    int64_t r0 = c->rows * part / nparts, r1 = c->rows * (part + 1) / nparts;
    double *pdw = c->part ? c->part + (size_t)part * 2 * (size_t)c->cols
                          : NULL;
    double *pdb = pdw ? pdw + c->cols : NULL;
    if (pdw) memset(pdw, 0, sizeof(double) * 2 * (size_t)c->cols);
    for (int64_t r = r0; r < r1; r++) {
        if (c->f64) tm__nrb_row_double(c, r, pdw, pdb);
        else tm__nrb_row_float(c, r, pdw, pdb);
    }
}

/* Sums part buffers (offset 0: dw, cols: db) in part order into out. */
static void tm__nrb_combine(const tm__nrb *c, int nparts, int64_t off,
                            const tm_buf *out)
{
    if (!out || !tm__ptr(out)) return;
    for (int64_t j = 0; j < c->cols; j++) {
        double s = 0;
        for (int p = 0; p < nparts; p++)
            s += c->part[(size_t)p * 2 * (size_t)c->cols + (size_t)off +
                         (size_t)j];
        if (c->f64) ((double *)tm__ptr(out))[j] = s;
        else ((float *)tm__ptr(out))[j] = (float)s;
    }
}

tm_status tm__cpu_norm_rows_backward(tm_ctx *ctx, const tm_buf *dx, const tm_buf *dw,
                                     const tm_buf *db, const tm_buf *g,
                                     const tm_buf *x, const tm_buf *weight,
                                     double eps, bool rms)
{
    (void)ctx;
    TM_ASSERT(x->dtype == TM_F32 || x->dtype == TM_F64, TM_ESTATE);
    tm__nrb c = {.dx = dx, .dw = dw, .db = db, .g = g, .x = x, .w = weight,
                 .eps = eps, .rms = rms, .f64 = x->dtype == TM_F64};
    c.cols = x->ndim ? x->shape[x->ndim - 1] : 1;
    int64_t numel = 1;
    for (int d = 0; d < x->ndim; d++) numel *= x->shape[d];
    if (numel == 0 || c.cols == 0) {
        const tm_buf *outs[2] = {dw, db};
        for (int k = 0; k < 2; k++)
            if (outs[k] && tm__ptr(outs[k]))
                memset(tm__ptr(outs[k]), 0,
                       (size_t)c.cols * tm_dtype_size(x->dtype));
        return TM_OK;
    }
    c.rows = numel / c.cols;
    int64_t parts = c.rows * c.cols / TM__GRAIN;
    int nt = tm_get_num_threads();
    if (parts > nt) parts = nt;
    if (parts < 1) parts = 1;
    bool sums = (dw && tm__ptr(dw)) || (db && tm__ptr(db));
    if (sums) {
        c.part = tm__alloc(sizeof(double) * 2 * (size_t)c.cols *
                               (size_t)parts, "tm_layer_norm backward");
        if (!c.part) return tm_last_status();
    }
    tm__parallel_parts((int)parts, tm__nrb_part, &c);
    if (sums) {
        tm__nrb_combine(&c, (int)parts, 0, dw);
        tm__nrb_combine(&c, (int)parts, c.cols, db);
        tm__dealloc(c.part);
    }
    return TM_OK;
}
