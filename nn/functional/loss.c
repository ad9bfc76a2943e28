/*
 * loss.c — cross entropy (fused with log_softmax) and nll_loss.
 *
 * Both work on rows: logits [N, C, d1, ...] are moved to [M, C] with
 * M = N * d1 * ... (a recorded permute + reshape, so their gradient flows
 * back through those ops), then one node computes the per-row losses and
 * the reduction.  Cross entropy saves only the [M, C] logits (an alias)
 * and the per-row logsumexp [M]; backward writes (softmax * Q - q) * s in
 * one pass over each row, where q is the target distribution, Q its sum
 * and s the row's share of the upstream gradient.
 *
 * This file checks arguments, works out shapes, makes the operands
 * contiguous with table ops and allocates results on x's device; the row
 * loops, the class-index range check and the reduction are the backend's
 * `loss` and `loss_backward` entries (foundry/backend.h; the CPU's are in
 * cpu/cpu_loss.c), so no element is read here and any device works.  The
 * mean's divisor (the rows not ignored) is counted by the kernels from
 * the targets, forward and backward alike, so it never travels to the
 * host.  A class index out of range is found by the kernel: on the CPU
 * the call fails at once; an asynchronous device reports it at its next
 * synchronization.
 */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

#include <math.h>
#include <string.h>

tm_cross_entropy_opts tm_cross_entropy_defaults(void)
{
    tm_cross_entropy_opts o = {TM_REDUCTION_MEAN, -100, 0.0};
    return o;
}

/* tm__buf of t, or an absent operand for NULL. */
static tm_buf buf_or_absent(const tm_tensor *t)
{
    tm_buf b;
    memset(&b, 0, sizeof b);
    if (t) b = tm__buf(t);
    return b;
}

/* ------------------------------------------------------------- backward */

/* A loss node's arguments are its tm_loss_params.  Saved: x [M, C] (slot
 * 0), target (slot 1: I64 [M] contiguous, or probabilities [M, C]), lse
 * (slot 2, F64 [M], cross entropy only). */
static tm_status rows_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    const tm_loss_params *lp = TM__AG_ARGS(n, tm_loss_params);
    static const char *fn = "loss_backward";
    tm__scratch s = {0};
    const tm__edge *ex = &n->edges[0], *ey = &n->edges[1];
    bool prob = lp->kind == TM_LOSS_CE_PROB;
    const tm_tensor *x0 = tm__ag_saved(n, 0);
    tm_device dev = tm_device_of(x0);
    tm_tensor *x = tm__sc_keep(&s, tm_contiguous(x0));
    tm_tensor *gd = tm__sc_keep(&s, tm_to_dtype(g, TM_F64));
    tm_tensor *tg = tm__sc_keep(&s, tm_contiguous(tm__ag_saved(n, 1)));
    tm_tensor *gx = NULL, *gy = NULL;
    if (ex->needed)
        gx = tm__sc_keep(&s, tm__tensor_new(fn, ex->shape, 2, ex->dtype,
                                            dev));
    if (prob && ey->needed)
        gy = tm__sc_keep(&s, tm__tensor_new(fn, ey->shape, 2, ey->dtype,
                                            dev));
    if (s.st) return tm__sc_done(&s, n->name);
    tm_buf bgx = buf_or_absent(gx), bgy = buf_or_absent(gy);
    tm_buf bg = tm__buf(gd), bx = tm__buf(x), bt = tm__buf(tg);
    tm_buf bl = buf_or_absent(lp->kind == TM_LOSS_NLL
                                  ? NULL
                                  : tm__ag_saved(n, 2));
    tm_ctx *cx = tm__ctx(x);
    tm__stage sg = {0};
    tm__stage_out(&sg, &bgx);
    tm__stage_out(&sg, &bgy);
    tm__stage_in(&sg, &bg);
    tm__stage_in(&sg, &bx);
    tm__stage_in(&sg, &bt);
    tm__stage_in(&sg, &bl);
    if (TM__CALL_STAGED(fn, cx, &sg, LOSS_BACKWARD, (int)lp->kind,
                        loss_backward, &bgx, &bgy, &bg, &bx, &bt, &bl,
                        lp)) {
        tm__sc_keep(&s, NULL);
        return tm__sc_done(&s, n->name);
    }
    if (gx) gin[0] = tm_retain(gx);
    if (gy) gin[1] = tm_retain(gy);
    return tm__sc_done(&s, n->name);
}

/* -------------------------------------------------------------- forward */

/* Per-row losses of x2 [M, C] and the reduction, by the backend's `loss`
 * entry.  tgt: I64 [M] contiguous (index kinds) or probabilities [M, C]
 * (any dtype/strides). */
static tm_tensor *rows_loss(const char *fn, const tm_loss_params *lp,
                            const tm_tensor *x2, const tm_tensor *tgt)
{
    tm_dtype dt = tm_dtype_of(x2);
    tm_device dev = tm_device_of(x2);
    int64_t m = tm_size(x2, 0);
    bool prob = lp->kind == TM_LOSS_CE_PROB;
    tm_tensor *x = NULL, *tc = NULL, *lse = NULL, *out = NULL;
    bool prev = tm_no_grad_begin();
    x = tm_contiguous(x2);
    if (!x) goto fail;
    if (!(tc = tm_contiguous(tgt))) goto fail;
    if (lp->kind != TM_LOSS_NLL &&
        !(lse = tm__tensor_new(fn, (int64_t[]){m}, 1, TM_F64, dev)))
        goto fail;
    out = lp->reduction == TM_REDUCTION_NONE
              ? tm__tensor_new(fn, (int64_t[]){m}, 1, dt, dev)
              : tm__tensor_new(fn, NULL, 0, dt, dev);
    if (!out) goto fail;
    tm_buf bo = tm__buf(out), bl = buf_or_absent(lse), bx = tm__buf(x),
           bt = tm__buf(tc);
    tm_ctx *cx = tm__ctx(x);
    tm__stage sg = {0};
    tm__stage_out(&sg, &bo);
    tm__stage_out(&sg, &bl);
    tm__stage_in(&sg, &bx);
    tm__stage_in(&sg, &bt);
    if (TM__CALL_STAGED(fn, cx, &sg, LOSS, (int)lp->kind, loss, &bo, &bl,
                        &bx, &bt, lp)) {
        tm__relabel_error(fn, tm_last_status());
        goto fail;
    }
    tm_no_grad_end(prev);
    const tm_tensor *ins[2] = {x2, prob ? tgt : NULL};
    tm__record r = {.name = lp->kind == TM_LOSS_NLL
                                ? "NllLossBackward"
                                : "CrossEntropyLossBackward",
                    .backward = rows_backward, .nin = 2, .in = ins,
                    .save = {x2, tgt, lse}, .args = lp,
                    .args_size = sizeof *lp};
    if (tm__ag_record(&r, out)) goto fail_rec;
    tm_free(x);
    tm_free(tc);
    tm_free(lse);
    return out;
fail:
    tm_no_grad_end(prev);
fail_rec:
    tm_free(out);
    tm_free(x);
    tm_free(tc);
    tm_free(lse);
    return NULL;
}

/* x [N, C, d...] -> [M, C] (class dim last, recorded for autograd); [C]
 * gives [1, C] and [N, C] itself.  New reference. */
static tm_tensor *to_rows(const tm_tensor *x)
{
    int nd = tm_ndim(x), cdim = nd == 1 ? 0 : 1;
    int64_t rows[2] = {1, tm_shape(x)[cdim]};
    for (int i = 0; i < nd; i++) /* not -1: C may be 0 */
        if (i != cdim) rows[0] *= tm_shape(x)[i];
    if (nd <= 2) return tm_reshape(x, rows, 2);
    int perm[TM_MAX_DIMS];
    perm[0] = 0;
    for (int i = 2; i < nd; i++) perm[i - 1] = i;
    perm[nd - 1] = 1;
    tm_tensor *p = tm_permute(x, perm, nd);
    if (!p) return NULL;
    tm_tensor *r = tm_reshape(p, rows, 2);
    tm_free(p);
    return r;
}

/* Shared front end of cross entropy and nll_loss. */
static tm_tensor *loss_front(const char *fn, bool nll, const tm_tensor *x,
                             const tm_tensor *target, tm_reduction red,
                             int64_t ignore, double eps)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF], sc[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, x, "input") ||
        tm__check_tensor(fn, target, "target"))
        return NULL;
    const tm_tensor *both[2] = {x, target};
    if (tm__check_same_device(fn, both, 2)) return NULL;
    tm_dtype dt = tm_dtype_of(x), tdt = tm_dtype_of(target);
    if (!tm_dtype_is_float(dt)) {
        tm__errf(TM_EDTYPE, fn, "input must be a float tensor, got %s",
                 tm_dtype_name(dt));
        return NULL;
    }
    if (red != TM_REDUCTION_MEAN && red != TM_REDUCTION_SUM &&
        red != TM_REDUCTION_NONE) {
        tm__errf(TM_EINVAL, fn, "invalid reduction %d", (int)red);
        return NULL;
    }
    if (!(eps >= 0.0 && eps <= 1.0)) {
        tm__errf(TM_EINVAL, fn, "label_smoothing must be in [0, 1], got %g",
                 eps);
        return NULL;
    }
    bool prob = tm_dtype_is_float(tdt);
    if (nll && prob) {
        tm__errf(TM_EDTYPE, fn, "target must be I64 or I32, got %s",
                 tm_dtype_name(tdt));
        return NULL;
    }
    if (!prob && tdt != TM_I64 && tdt != TM_I32) {
        tm__errf(TM_EDTYPE, fn, "target must be I64 or I32 class indices "
                 "or float probabilities, got %s", tm_dtype_name(tdt));
        return NULL;
    }
    int nd = tm_ndim(x);
    if (nd == 0) {
        tm__errf(TM_ESHAPE, fn, "input must have at least 1 dim (classes)");
        return NULL;
    }
    /* the target's expected shape: x's without the class dim (prob: x's) */
    int64_t want[TM_MAX_DIMS];
    int wn = 0, cdim = nd == 1 ? 0 : 1;
    for (int i = 0; i < nd; i++)
        if (prob || i != cdim) want[wn++] = tm_shape(x)[i];
    bool ok = tm_ndim(target) == wn;
    for (int i = 0; ok && i < wn; i++) ok = tm_shape(target)[i] == want[i];
    if (!ok) {
        tm__errf(TM_ESHAPE, fn, "target shape %s does not match input "
                 "shape %s (expected %s)",
                 tm__fmt_shape(tm_shape(target), tm_ndim(target), sa,
                               sizeof sa),
                 tm__fmt_shape(tm_shape(x), nd, sb, sizeof sb),
                 tm__fmt_shape(want, wn, sc, sizeof sc));
        return NULL;
    }
    tm_tensor *x2 = NULL, *t2 = NULL, *r = NULL, *out = NULL;
    tm_loss_params lp = {.kind = nll    ? TM_LOSS_NLL
                                 : prob ? TM_LOSS_CE_PROB
                                        : TM_LOSS_CE_INDEX,
                         .reduction = red, .ignore_index = ignore,
                         .label_smoothing = eps};
    x2 = to_rows(x);
    if (!x2) goto done;
    if (prob) {
        t2 = to_rows(target);
    } else {
        bool prev = tm_no_grad_begin();
        t2 = tm_to_dtype(target, TM_I64); /* contiguous, row order = x2's */
        tm_no_grad_end(prev);
    }
    if (!t2) goto done;
    r = rows_loss(fn, &lp, x2, t2);
    if (!r) goto done;
    if (red != TM_REDUCTION_NONE) {
        out = tm_retain(r);
    } else {
        /* per-sample shape: x's without the class dim */
        int sn = 0;
        for (int i = 0; i < nd; i++)
            if (i != cdim) want[sn++] = tm_shape(x)[i];
        out = tm_reshape(r, want, sn);
    }
done:
    tm_free(x2);
    tm_free(t2);
    tm_free(r);
    return out;
}

tm_tensor *tm_cross_entropy(const tm_tensor *logits, const tm_tensor *target,
                            const tm_cross_entropy_opts *opts)
{
    tm_cross_entropy_opts o = opts ? *opts : tm_cross_entropy_defaults();
    return loss_front(__func__, false, logits, target, o.reduction,
                      o.ignore_index, o.label_smoothing);
}

tm_tensor *tm_nll_loss(const tm_tensor *logp, const tm_tensor *target,
                       tm_reduction reduction, int64_t ignore_index)
{
    return loss_front(__func__, true, logp, target, reduction, ignore_index,
                      0.0);
}
