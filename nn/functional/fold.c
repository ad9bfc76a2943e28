/* fold.c — tm_im2col and tm_col2im (torch.nn.functional.unfold / fold).
 *
 * One index, computed on the host from the geometry alone, maps each
 * (kernel tap, block) pair to its position in the zero-padded image; the
 * index travels to x's device once.  im2col is a gather through it and
 * col2im a scatter-add, so the recorded gradient of each is the other,
 * and both run on every device with gather and scatter-add. */
#include "foundry/nn_functional.h"

#include "../../tensor/ops/compose_impl.h"

tm_fold_opts tm_fold_defaults(void)
{
    tm_fold_opts o = {{1, 1}, {1, 1}, {0, 0}, {1, 1}};
    return o;
}

/* The padded image [hp, wp], the block grid [oh, ow] of image [h, w]. */
typedef struct {
    int64_t h, w, hp, wp, oh, ow, taps;
} fold_geom;

static tm_status fold_geometry(const char *fn, const tm_fold_opts *o,
                               int64_t h, int64_t w, fold_geom *g)
{
    for (int i = 0; i < 2; i++) {
        int64_t k = o->kernel[i], d = o->dilation[i], p = o->padding[i];
        int64_t s = o->stride[i];
        const int64_t lim = (int64_t)1 << 30;
        if (k < 1 || d < 1 || s < 1 || p < 0 || k > lim || d > lim ||
            p > lim || s > lim)
            return tm__errf(TM_EINVAL, fn, "kernel %lld, dilation %lld, "
                            "padding %lld and stride %lld of spatial dim %d "
                            "must be >= 1 (padding >= 0) and below 2^30",
                            (long long)k, (long long)d, (long long)p,
                            (long long)s, i);
    }
    g->h = h;
    g->w = w;
    g->hp = h + 2 * o->padding[0];
    g->wp = w + 2 * o->padding[1];
    int64_t eh = o->dilation[0] * (o->kernel[0] - 1) + 1;
    int64_t ew = o->dilation[1] * (o->kernel[1] - 1) + 1;
    if (g->hp < eh || g->wp < ew)
        return tm__errf(TM_ESHAPE, fn, "the padded input [%lld, %lld] is "
                        "smaller than the dilated kernel [%lld, %lld]: no "
                        "block fits", (long long)g->hp, (long long)g->wp,
                        (long long)eh, (long long)ew);
    g->oh = (g->hp - eh) / o->stride[0] + 1;
    g->ow = (g->wp - ew) / o->stride[1] + 1;
    g->taps = o->kernel[0] * o->kernel[1];
    return TM_OK;
}

/* [1, 1, taps * L]: the padded-image position of tap (ki, kj) of block
 * (bi, bj), in the order (ki, kj, bi, bj), on like's device. */
static tm_tensor *fold_index(const tm_fold_opts *o, const fold_geom *g,
                             const tm_tensor *like)
{
    int64_t n = g->taps * g->oh * g->ow, k = 0;
    int64_t *v = tm__alloc(sizeof(int64_t) * (size_t)(n ? n : 1), "fold");
    if (!v) return NULL;
    for (int64_t ki = 0; ki < o->kernel[0]; ki++)
        for (int64_t kj = 0; kj < o->kernel[1]; kj++)
            for (int64_t bi = 0; bi < g->oh; bi++)
                for (int64_t bj = 0; bj < g->ow; bj++)
                    v[k++] = (bi * o->stride[0] + ki * o->dilation[0]) *
                                 g->wp +
                             bj * o->stride[1] + kj * o->dilation[1];
    tm_tensor *flat = tm__index_like(v, n, like);
    tm__dealloc(v);
    tm_tensor *r = flat ? tm_view(flat, (int64_t[]){1, 1, n}, 3) : NULL;
    tm_free(flat);
    return r;
}

tm_tensor *tm_im2col(const tm_tensor *x, const tm_fold_opts *opts)
{
    char a[TM_SHAPE_BUF];
    tm_fold_opts o = opts ? *opts : tm_fold_defaults();
    fold_geom g;
    if (tm__check_tensor(__func__, x, "x")) return NULL;
    if (x->ndim != 3 && x->ndim != 4) {
        TM_ERR(TM_ESHAPE, "expects x [N, C, H, W] or [C, H, W], got %s",
               tm__fmt_shape(x->shape, x->ndim, a, sizeof a));
        return NULL;
    }
    int b = x->ndim == 4;
    int64_t nb = b ? x->shape[0] : 1, c = x->shape[b];
    if (fold_geometry(__func__, &o, x->shape[b + 1], x->shape[b + 2], &g))
        return NULL;
    int64_t l = g.oh * g.ow, plane = g.hp * g.wp;
    tm_tensor *x4 = NULL, *xp = NULL, *flat = NULL, *idx = NULL, *ie = NULL,
              *cols = NULL, *r = NULL;
    if (!(x4 = tm_reshape(x, (int64_t[]){nb, c, g.h, g.w}, 4)) ||
        !(xp = tm_pad(x4, (int64_t[]){o.padding[1], o.padding[1],
                                      o.padding[0], o.padding[0]},
                      4, 0.0)) ||
        !(flat = tm_reshape(xp, (int64_t[]){nb, c, plane}, 3)) ||
        !(idx = fold_index(&o, &g, x)) ||
        !(ie = tm_expand(idx, (int64_t[]){nb, c, g.taps * l}, 3)) ||
        !(cols = tm_gather(flat, 2, ie)))
        goto fail;
    r = b ? tm_reshape(cols, (int64_t[]){nb, c * g.taps, l}, 3)
          : tm_reshape(cols, (int64_t[]){c * g.taps, l}, 2);
fail:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(x4);
    tm_free(xp);
    tm_free(flat);
    tm_free(idx);
    tm_free(ie);
    tm_free(cols);
    return r;
}

tm_tensor *tm_col2im(const tm_tensor *x, const int64_t *output_size,
                     const tm_fold_opts *opts)
{
    char a[TM_SHAPE_BUF];
    tm_fold_opts o = opts ? *opts : tm_fold_defaults();
    fold_geom g;
    if (tm__check_tensor(__func__, x, "x")) return NULL;
    if (!output_size) {
        TM_ERR(TM_EINVAL, "output_size is NULL");
        return NULL;
    }
    if (x->ndim != 2 && x->ndim != 3) {
        TM_ERR(TM_ESHAPE, "expects x [N, C*kH*kW, L] or [C*kH*kW, L], got "
               "%s", tm__fmt_shape(x->shape, x->ndim, a, sizeof a));
        return NULL;
    }
    if (output_size[0] < 0 || output_size[1] < 0) {
        TM_ERR(TM_EINVAL, "output_size (%lld, %lld) must not be negative",
               (long long)output_size[0], (long long)output_size[1]);
        return NULL;
    }
    if (fold_geometry(__func__, &o, output_size[0], output_size[1], &g))
        return NULL;
    int b = x->ndim == 3;
    int64_t nb = b ? x->shape[0] : 1, ck = x->shape[b], l = x->shape[b + 1];
    if (ck % g.taps || l != g.oh * g.ow) {
        TM_ERR(TM_ESHAPE, "x %s does not fit kernel [%lld, %lld] and "
               "output_size (%lld, %lld): dim %d must be divisible by %lld "
               "and dim %d must be the %lld blocks",
               tm__fmt_shape(x->shape, x->ndim, a, sizeof a),
               (long long)o.kernel[0], (long long)o.kernel[1],
               (long long)g.h, (long long)g.w, b, (long long)g.taps, b + 1,
               (long long)(g.oh * g.ow));
        return NULL;
    }
    int64_t c = ck / g.taps, plane = g.hp * g.wp;
    tm_tensor *x3 = NULL, *z = NULL, *idx = NULL, *ie = NULL, *sum = NULL,
              *img = NULL, *crop = NULL, *r = NULL;
    if (!(x3 = tm_reshape(x, (int64_t[]){nb, c, g.taps * l}, 3)) ||
        !(z = tm_full_on((int64_t[]){nb, c, plane}, 3, 0.0, x->dtype,
                         tm_device_of(x))) ||
        !(idx = fold_index(&o, &g, x)) ||
        !(ie = tm_expand(idx, (int64_t[]){nb, c, g.taps * l}, 3)) ||
        !(sum = tm_scatter_add(z, 2, ie, x3)) ||
        !(img = tm_reshape(sum, (int64_t[]){nb, c, g.hp, g.wp}, 4)) ||
        !(crop = tm_pad(img, (int64_t[]){-o.padding[1], -o.padding[1],
                                         -o.padding[0], -o.padding[0]},
                        4, 0.0)))
        goto fail;
    r = b ? tm_retain(crop)
          : tm_reshape(crop, (int64_t[]){c, g.h, g.w}, 3);
fail:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(x3);
    tm_free(z);
    tm_free(idx);
    tm_free(ie);
    tm_free(sum);
    tm_free(img);
    tm_free(crop);
    return r;
}
