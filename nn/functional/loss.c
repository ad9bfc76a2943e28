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
 * The element loops (cpu/cpu_loss.c: the target check, the rows, the
 * reduction) read contiguous F32 (F16/BF16 are converted first) or F64;
 * sums run in double.  Rows are independent, so results do not depend on
 * the thread count; the reduction adds rows in order.  There is no
 * backend-table entry for them yet, so only CPU tensors are accepted.
 */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"
#include "../../cpu/cpu_loss.h"

#include <math.h>

enum {
    K_CE_INDEX = TM__LOSS_CE_INDEX,
    K_CE_PROB = TM__LOSS_CE_PROB,
    K_NLL = TM__LOSS_NLL
};

tm_cross_entropy_opts tm_cross_entropy_defaults(void)
{
    tm_cross_entropy_opts o = {TM_REDUCTION_MEAN, -100, 0.0};
    return o;
}

/* t converted to a contiguous tensor of dtype cd (new reference). */
static tm_tensor *as_rows(const tm_tensor *t, tm_dtype cd)
{
    return tm_dtype_of(t) == cd ? tm_contiguous(t) : tm_to_dtype(t, cd);
}

static tm_dtype compute_dtype(tm_dtype dt)
{
    return dt == TM_F64 ? TM_F64 : TM_F32;
}

/* ------------------------------------------------------------- backward */

/* A loss node's parameters.  Saved: x [M, C] (slot 0), target (slot 1:
 * I64 [M] contiguous, or probabilities [M, C]), lse (slot 2, F64 [M],
 * cross entropy only). */
typedef struct {
    int kind;              /* K_CE_INDEX, K_CE_PROB or K_NLL */
    tm_reduction reduction;
    int64_t ignore_index;
    double label_smoothing;
    double count;          /* the mean's divisor */
} loss_args;

static tm_status rows_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    const loss_args *p = TM__AG_ARGS(n, loss_args);
    tm__scratch s = {0};
    int kind = p->kind;
    tm_reduction red = p->reduction;
    const tm__edge *ex = &n->edges[0], *ey = &n->edges[1];
    tm_dtype cd = compute_dtype(ex->dtype);
    int64_t m = ex->shape[0], c = ex->shape[1];
    tm_tensor *x = tm__sc_keep(&s, as_rows(tm__ag_saved(n, 0), cd));
    tm_tensor *gd = tm__sc_keep(&s, tm_to_dtype(g, TM_F64));
    tm_tensor *tg = (tm_tensor *)tm__ag_saved(n, 1), *prob = NULL;
    tm_tensor *gx = NULL, *gy = NULL;
    if (kind == K_CE_PROB) prob = tm__sc_keep(&s, as_rows(tg, cd));
    if (ex->needed) gx = tm__sc_keep(&s, tm_empty(ex->shape, 2, cd));
    if (kind == K_CE_PROB && ey->needed)
        gy = tm__sc_keep(&s, tm_empty(ey->shape, 2, cd));
    if (s.st) return tm__sc_done(&s, n->name);
    tm__loss_rows rc = {
        .kind = kind, .f64 = cd == TM_F64, .m = m, .c = c, .x = tm_data(x),
        .prob = prob ? tm_data(prob) : NULL,
        .tgt = kind == K_CE_PROB ? NULL : tm_data(tg),
        .ignore = p->ignore_index, .eps = p->label_smoothing,
        .lse = kind == K_NLL ? NULL : tm_data(tm__ag_saved(n, 2)),
        .g = tm_data(gd), .reduction = red, .count = p->count,
        .gx = gx ? tm_data(gx) : NULL, .gy = gy ? tm_data(gy) : NULL};
    tm__loss_rows_run(&rc, false);
    if (gx) gin[0] = tm__sc_as(gx, ex->dtype);
    if (gy) gin[1] = tm__sc_as(gy, ey->dtype);
    if ((gx && !gin[0]) || (gy && !gin[1])) tm__sc_keep(&s, NULL);
    return tm__sc_done(&s, n->name);
}

/* -------------------------------------------------------------- forward */

/* Per-row losses of x2 [M, C] and the reduction.  tgt: I64 [M] contiguous
 * (index kinds) or probabilities [M, C] (any dtype/strides). */
static tm_tensor *rows_loss(const char *fn, int kind, const tm_tensor *x2,
                            const tm_tensor *tgt, tm_reduction red,
                            int64_t ignore, double eps)
{
    tm_dtype dt = tm_dtype_of(x2), cd = compute_dtype(dt);
    int64_t m = tm_size(x2, 0), c = tm_size(x2, 1), count = m;
    tm_tensor *x = NULL, *prob = NULL, *lse = NULL, *out = NULL;
    double *loss = NULL;
    bool prev = tm_no_grad_begin();
    if (kind != K_CE_PROB) {
        const int64_t *tv = tm_data(tgt);
        int64_t bad = tm__loss_check_targets(tv, m, c, ignore, &count);
        if (bad >= 0) {
            tm__errf(TM_ERANGE, fn, "target %lld at position %lld is out of "
                     "range for %lld classes", (long long)tv[bad],
                     (long long)bad, (long long)c);
            goto fail;
        }
    }
    x = as_rows(x2, cd);
    if (!x) goto fail;
    if (kind == K_CE_PROB && !(prob = as_rows(tgt, cd))) goto fail;
    if (kind != K_NLL &&
        !(lse = tm__tensor_new(fn, (int64_t[]){m}, 1, TM_F64, TM_CPU)))
        goto fail;
    loss = tm__alloc((size_t)(m > 0 ? m : 1) * sizeof(double), fn);
    if (!loss) goto fail;
    tm__loss_rows rc = {.kind = kind, .f64 = cd == TM_F64, .m = m, .c = c,
                   .x = tm_data(x), .prob = prob ? tm_data(prob) : NULL,
                   .tgt = kind == K_CE_PROB ? NULL : tm_data(tgt),
                   .ignore = ignore, .eps = eps,
                   .lse = lse ? tm_data(lse) : NULL, .loss = loss};
    tm__loss_rows_run(&rc, true);
    if (red == TM_REDUCTION_NONE) {
        if (!(out = tm__tensor_new(fn, (int64_t[]){m}, 1, dt, TM_CPU)))
            goto fail;
        tm__loss_store_rows(tm_data(out), dt, loss, m);
    } else {
        double total = tm__loss_reduce(loss, m, red, count);
        if (!(out = tm__scalar_on(fn, total, dt, TM_CPU))) goto fail;
    }
    tm_no_grad_end(prev);
    const tm_tensor *ins[2] = {x2, kind == K_CE_PROB ? tgt : NULL};
    loss_args p = {kind, red, ignore, eps, (double)count};
    tm__record r = {.name = kind == K_NLL ? "NllLossBackward"
                                          : "CrossEntropyLossBackward",
                    .backward = rows_backward, .nin = 2, .in = ins,
                    .save = {x2, tgt, lse}, .args = &p,
                    .args_size = sizeof p};
    if (tm__ag_record(&r, out)) goto fail_rec;
    tm_free(x);
    tm_free(prob);
    tm_free(lse);
    tm__dealloc(loss);
    return out;
fail:
    tm_no_grad_end(prev);
fail_rec:
    tm_free(out);
    tm_free(x);
    tm_free(prob);
    tm_free(lse);
    tm__dealloc(loss);
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
    if (!tm__on_cpu(x)) {
        tm__errf(TM_EUNSUPPORTED, fn, "only CPU tensors are supported");
        return NULL;
    }
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
    int kind = nll ? K_NLL : prob ? K_CE_PROB : K_CE_INDEX;
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
    r = rows_loss(fn, kind, x2, t2, red, ignore, eps);
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
