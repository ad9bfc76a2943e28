/* rows_backward.c — the gradients of the row ops of ops/rows.c
 * (softmax, log_softmax, layer_norm, rms_norm) and their recording
 * hooks. */
#include "backward.h"
#include "../core/grad_hooks.h"

/* --------------------------------------------------------------- softmax */

typedef struct { int dim; bool log; } softmax_args;

/* softmax: dx = y (g - sum(g y));  log_softmax: dx = g - exp(y) sum(g).
 * Saved: the output y. */
static tm_status softmax_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm_tensor *y = tm__ag_saved(n, 0);
    const softmax_args *p = TM__AG_ARGS(n, softmax_args);
    int d = p->dim;
    tm_tensor *r;
    if (p->log) {
        tm_tensor *sg = tm__sc_keep(&s, tm_sum(g, &d, 1, true));
        tm_tensor *p = tm__sc_keep(&s, tm_exp(y));
        tm_tensor *q = tm__sc_keep(&s, tm_mul(p, sg));
        r = tm__sc_keep(&s, tm_sub(g, q));
    } else {
        tm_tensor *gy = tm__sc_keep(&s, tm_mul(g, y));
        tm_tensor *sg = tm__sc_keep(&s, tm_sum(gy, &d, 1, true));
        tm_tensor *q = tm__sc_keep(&s, tm_sub(g, sg));
        r = tm__sc_keep(&s, tm_mul(y, q));
    }
    if (r) gin[0] = tm_retain(r);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_softmax(tm_tensor *out, const tm_tensor *t, int dim,
                            bool log)
{
    const tm_tensor *ins[1] = {t};
    softmax_args p = {dim, log};
    tm__record r = {.name = log ? "LogSoftmaxBackward" : "SoftmaxBackward",
                    .backward = softmax_backward, .nin = 1, .in = ins,
                    .save = {out}, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* ------------------------------------------------- layer_norm, rms_norm */

/* With xhat = (x - mean) rstd (layer_norm) or x rstd (rms_norm) and
 * gy = g w:
 *   dx = rstd (gy - mean(gy) - xhat mean(gy xhat))   (no mean(gy): rms)
 *   dw = sum of g xhat over the rows,  db = sum of g over the rows.
 * mean and rstd are recomputed from the saved input, in F32 for F16/BF16
 * (as the forward kernel computes).  Saved: x (slot 0), weight (slot 1). */
typedef struct { double eps; bool rms; } norm_args;


/* F32/F64: the backend's fused kernel (one pass per row, no temporaries
 * of the input's size besides dx). */
static tm_status norm_backward_fused(tm__node *n, const tm_tensor *g,
                                     tm_tensor **gin)
{
    const tm_tensor *xs = tm__ag_saved(n, 0), *ws = tm__ag_saved(n, 1);
    tm_tensor *x = tm_contiguous(xs), *gc = tm_contiguous(g);
    tm_tensor *w = ws ? tm_contiguous(ws) : NULL;
    tm_tensor *out[3] = {NULL, NULL, NULL};
    tm_status st = TM_OK;
    if (!x || !gc || (ws && !w)) {
        st = tm_last_status();
        goto done;
    }
    for (int i = 0; i < n->nin && i < 3; i++) {
        const tm__edge *e = &n->edges[i];
        if (!e->needed) continue;
        out[i] = tm_empty_on(e->shape, e->ndim, e->dtype, tm_device_of(g));
        if (!out[i]) {
            st = tm_last_status();
            goto done;
        }
    }
    tm_ctx *cx = tm__ctx(x);
    tm_buf none = {0};
    tm_buf bx = tm__buf(x), bg = tm__buf(gc), bw = w ? tm__buf(w) : none;
    tm_buf bo[3];
    for (int i = 0; i < 3; i++) bo[i] = out[i] ? tm__buf(out[i]) : none;
    tm__stage sg = {0};
    for (int i = 0; i < 3; i++) tm__stage_out(&sg, &bo[i]);
    tm__stage_in(&sg, &bg);
    tm__stage_in(&sg, &bx);
    tm__stage_in(&sg, &bw);
    st = TM__CALL_STAGED(n->name, cx, &sg, NORM_ROWS_BACKWARD, 0,
                         norm_rows_backward, &bo[0], &bo[1], &bo[2], &bg, &bx,
                         &bw, TM__AG_ARGS(n, norm_args)->eps,
                         TM__AG_ARGS(n, norm_args)->rms);
done:
    for (int i = 0; i < 3; i++) {
        if (st) tm_free(out[i]);
        else gin[i] = out[i];
    }
    tm_free(x);
    tm_free(gc);
    tm_free(w);
    return st;
}

static tm_status norm_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    if (n->edges[0].dtype == TM_F32 || n->edges[0].dtype == TM_F64)
        return norm_backward_fused(n, g, gin);
    tm__scratch s = {0};
    const tm__edge *ex = &n->edges[0];
    tm_dtype dt = ex->dtype;
    tm_dtype cd = dt == TM_F16 || dt == TM_BF16 ? TM_F32 : dt;
    bool rms = TM__AG_ARGS(n, norm_args)->rms;
    double eps = TM__AG_ARGS(n, norm_args)->eps;
    int last = -1;
    tm_tensor *x = tm__sc_keep(&s, tm__sc_as(tm__ag_saved(n, 0), cd));
    tm_tensor *gc = tm__sc_keep(&s, tm__sc_as(g, cd));
    tm_tensor *w = NULL, *xc = x;
    if (tm__ag_saved(n, 1))
        w = tm__sc_keep(&s, tm__sc_as(tm__ag_saved(n, 1), cd));
    if (!rms) {
        tm_tensor *mu = tm__sc_keep(&s, tm_mean(x, &last, 1, true));
        xc = tm__sc_keep(&s, tm_sub(x, mu));
    }
    tm_tensor *sq = tm__sc_keep(&s, tm_mul(xc, xc));
    tm_tensor *var = tm__sc_keep(&s, tm_mean(sq, &last, 1, true));
    tm_tensor *ve = tm__sc_keep(&s, tm_add_scalar(var, eps));
    tm_tensor *rstd = tm__sc_keep(&s, tm_rsqrt(ve));
    tm_tensor *xhat = tm__sc_keep(&s, tm_mul(xc, rstd));
    if (ex->needed) {
        tm_tensor *gy = w ? tm__sc_keep(&s, tm_mul(gc, w)) : gc;
        tm_tensor *gx = tm__sc_keep(&s, tm_mul(gy, xhat));
        tm_tensor *m2 = tm__sc_keep(&s, tm_mean(gx, &last, 1, true));
        tm_tensor *xm = tm__sc_keep(&s, tm_mul(xhat, m2));
        tm_tensor *t = tm__sc_keep(&s, tm_sub(gy, xm));
        if (!rms) {
            tm_tensor *m1 = tm__sc_keep(&s, tm_mean(gy, &last, 1, true));
            t = tm__sc_keep(&s, tm_sub(t, m1));
        }
        tm__sc_finish(&s, tm__sc_keep(&s, tm_mul(t, rstd)), ex, &gin[0]);
    }
    if (n->nin > 1 && n->edges[1].needed) {
        tm_tensor *gx = tm__sc_keep(&s, tm_mul(gc, xhat));
        tm__sc_finish(&s, gx ? tm__sc_sum_rows(&s, gx) : NULL, &n->edges[1], &gin[1]);
    }
    if (n->nin > 2 && n->edges[2].needed)
        tm__sc_finish(&s, gc ? tm__sc_sum_rows(&s, gc) : NULL, &n->edges[2], &gin[2]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_norm(tm_tensor *out, const tm_tensor *x,
                         const tm_tensor *weight, const tm_tensor *bias,
                         double eps, bool rms)
{
    const tm_tensor *ins[3] = {x, weight, bias};
    norm_args p = {eps, rms};
    tm__record r = {.name = rms ? "RmsNormBackward" : "LayerNormBackward",
                    .backward = norm_backward,
                    .nin = bias ? 3 : weight ? 2 : 1, .in = ins,
                    .save = {x, weight}, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
