/* cpu_conv_entry.c — the CPU's conv and conv_backward entries (contracts
 * in foundry/backend.h): the chunking of the images, the matrix products
 * through the CPU's gemm kernel, and the loops of cpu_conv.c (im2col /
 * col2im, the bias and its gradient, the regrouping of G).
 *
 * Images are processed in chunks of B (cv_chunk: as many as keep the
 * im2col scratch in L2), so each product is one GEMM call for the
 * whole chunk instead of one small GEMM per image (measured: 2x faster
 * for the 16->32 channel 3x3 layer of a 64-image MNIST batch).  With
 * K = C_in/groups * kD * kH * kW, L = OD * OH * OW and g the group (2-D
 * and 1-D convolutions are the D = KD = OD = 1 case, 1-D also H = 1):
 *   cols[b, g]  [K, L]        = im2col of image b
 *   y[b, g]     [C_out/G, L]  = w[g] · cols[b, g]    (batched over b, g;
 *                               w broadcast over b; y written in place)
 * Backward, with G = dL/dy:
 *   dcols[b, g] = w[g]ᵀ · G[b, g]  (batched)     dx = col2im(dcols)
 *   dw[g]      += G[g] · cols[g]ᵀ over the chunk: one product with the
 *                 chunk's images side by side ([C_out/G, B*L] · [B*L, K]),
 *                 G copied into that order (tm__conv_regroup)
 *   db = sum of G over N, OD, OH, OW
 * The loops split their work so that every output element has one writer
 * and a fixed summation order, and the chunk size depends only on the
 * shapes, so results do not depend on the thread count.  The scratch
 * (cols, the regrouped G) is host memory of the entry's own. */
#include "conv/conv_depthwise.h"
#include "conv/conv_igemm.h"
#include "cpu_impl.h"
#include "cpu_nn.h"

#include <string.h>

/* Images per chunk: the im2col scratch holds about 2^17 elements (512 KiB
 * of F32), so it is still in L2 when the GEMM reads it (measured on the
 * 16->32 channel 3x3 layer, 64 images, forward + backward: 7.3 ms at 2^21,
 * 6.1 ms at 2^17, 9.4 ms at 2^16 and below); at least one image. */
static int64_t cv_chunk(const tm_conv_geom *q)
{
    int64_t per = q->c * q->kd * q->kh * q->kw * q->od * q->oh * q->ow;
    int64_t b = per > 0 ? ((int64_t)1 << 17) / per : q->n;
    return b < 1 ? 1 : b > q->n ? q->n : b;
}

/* Host scratch of n[0] * n[1] * ... (k factors, each >= 0) elements of
 * es bytes; NULL with TM_EOVERFLOW or TM_ENOMEM set. */
static void *cv_scratch(const char *fn, const int64_t *n, int k, size_t es)
{
    size_t total = es;
    for (int i = 0; i < k; i++) {
        if (n[i] != 0 && total > SIZE_MAX / (size_t)n[i]) {
            tm__errf(TM_EOVERFLOW, fn, "the convolution's scratch does not "
                     "fit in memory");
            return NULL;
        }
        total *= (size_t)n[i];
    }
    return tm__alloc(total, fn);
}

/* A view of nd (3 or 4) dims of the dense array `off` elements after
 * base's first element, in the form tm_gemm hands its operands to the
 * entry: an operand's batch dims (all but the last two) of size 1 get
 * stride 0, and `trans` swaps its last two dims. */
static tm_buf cv_mat(const tm_buf *base, int64_t off, int nd,
                     const int64_t *shape, const int64_t *strides,
                     bool operand, bool trans)
{
    tm_buf b;
    memset(&b, 0, sizeof b);
    b.handle = base->handle;
    b.offset = base->offset + (size_t)off * tm_dtype_size(base->dtype);
    b.dtype = base->dtype;
    b.ndim = nd;
    for (int i = 0; i < nd; i++) {
        b.shape[i] = shape[i];
        b.strides[i] =
            operand && i < nd - 2 && shape[i] == 1 ? 0 : strides[i];
    }
    if (trans) {
        int64_t s = b.shape[nd - 2], t = b.strides[nd - 2];
        b.shape[nd - 2] = b.shape[nd - 1], b.strides[nd - 2] = b.strides[nd - 1];
        b.shape[nd - 1] = s, b.strides[nd - 1] = t;
    }
    return b;
}

/* c = a · b (beta 0) or c += a · b (beta 1); nothing for an empty c. */
static tm_status cv_gemm(tm_ctx *ctx, const tm_buf *c, const tm_buf *a,
                         const tm_buf *b, double beta)
{
    for (int i = 0; i < c->ndim; i++)
        if (c->shape[i] == 0) return TM_OK;
    return tm__cpu_gemm(ctx, c, a, b, 1.0, beta);
}

/* [d0, d1, d2, d3] with the first dim's stride s0 (0: the same block for
 * every index, a broadcast), the rest dense. */
#define CV_SHAPE4(d0, d1, d2, d3) ((int64_t[]){(d0), (d1), (d2), (d3)})
#define CV_STRIDES4(s0, d1, d2, d3) ((int64_t[]){(s0), (d2) * (d3), (d3), 1})
/* Dense [d0, d1, d2]. */
#define CV_SHAPE3(d0, d1, d2) ((int64_t[]){(d0), (d1), (d2)})
#define CV_STRIDES3(d0, d1, d2) ((int64_t[]){(d1) * (d2), (d2), 1})

tm_status tm__cpu_conv(tm_ctx *ctx, const tm_buf *y, const tm_buf *x,
                       const tm_buf *weight, const tm_buf *bias,
                       const tm_conv_geom *q)
{
    const char *fn = "conv";
    tm_dtype dt = y->dtype;
    /* F32 depthwise: the direct kernel (cpu/conv/conv_depthwise.h) */
    if (tm__conv_dw_ok(q, dt, false))
        return tm__conv_dw_forward(q, tm__ptr(y), tm__ptr(x), tm__ptr(weight),
                                   bias && bias->handle ? tm__ptr(bias)
                                                        : NULL);
    /* unit-stride F32: the implicit GEMM (cpu/conv/conv_igemm.h) */
    if (tm__conv_igemm_fwd_ok(q, dt))
        return tm__conv_igemm_forward(q, tm__ptr(y), tm__ptr(x),
                                      tm__ptr(weight),
                                      bias ? tm__ptr(bias) : NULL);
    size_t es = tm_dtype_size(dt);
    int64_t G = q->g, ocg = q->oc / G, L = q->od * q->oh * q->ow;
    int64_t K = q->c / G * q->kd * q->kh * q->kw, B = cv_chunk(q);
    int64_t xn = q->c * q->d * q->h * q->w;
    if (q->n == 0 || q->oc == 0 || L == 0) return TM_OK;
    tm_status st = TM_OK;
    void *cp = cv_scratch(fn, (int64_t[]){B, G, K, L}, 4, es);
    if (!cp) return tm_last_status();
    tm_buf cols = {.handle = cp, .dtype = dt};
    /* One GEMM per chunk, batched over its images: y[b] (a view of y's
     * rows) = w · cols[b], w broadcast; small rows of cols are read in
     * place by the GEMM, and nothing is copied back. */
    for (int64_t n0 = 0; n0 < q->n && !st; n0 += B) {
        int64_t nb = q->n - n0 < B ? q->n - n0 : B;
        tm__conv_im2col(q, dt, (const char *)tm__ptr(x) + n0 * xn * (int64_t)es,
                        cp, nb, false);
        tm_buf a = cv_mat(weight, 0, 4, CV_SHAPE4(nb, G, ocg, K),
                          CV_STRIDES4(0, G, ocg, K), true, false);
        tm_buf b = cv_mat(&cols, 0, 4, CV_SHAPE4(nb, G, K, L),
                          CV_STRIDES4(G * K * L, G, K, L), true, false);
        tm_buf c = cv_mat(y, n0 * q->oc * L, 4, CV_SHAPE4(nb, G, ocg, L),
                          CV_STRIDES4(q->oc * L, G, ocg, L), false, false);
        st = cv_gemm(ctx, &c, &a, &b, 0.0);
    }
    if (!st && bias && bias->handle)
        tm__conv_bias_add(q, dt, tm__ptr(y), tm__ptr(bias));
    tm__dealloc(cp);
    return st;
}

tm_status tm__cpu_conv_backward(tm_ctx *ctx, const tm_buf *dx,
                                const tm_buf *dweight, const tm_buf *dbias,
                                const tm_buf *g, const tm_buf *x,
                                const tm_buf *weight, const tm_conv_geom *q)
{
    const char *fn = "conv_backward";
    bool want_dx = dx && dx->handle, want_dw = dweight && dweight->handle;
    bool want_db = dbias && dbias->handle;
    tm_dtype dt = g->dtype;
    /* F32 depthwise: the direct kernel (cpu/conv/conv_depthwise.h) */
    if ((want_dx || want_dw || want_db) && tm__conv_dw_ok(q, dt, true))
        return tm__conv_dw_backward(
            q, want_dx ? tm__ptr(dx) : NULL, want_dw ? tm__ptr(dweight) : NULL,
            want_db ? tm__ptr(dbias) : NULL, tm__ptr(g),
            want_dw ? tm__ptr(x) : NULL, want_dx ? tm__ptr(weight) : NULL);
    /* unit-stride F32: the implicit GEMM (cpu/conv/conv_igemm.h) */
    if (tm__conv_igemm_bwd_ok(q, dt, want_dx, want_dw, want_db))
        return tm__conv_igemm_backward(
            q, want_dx ? tm__ptr(dx) : NULL, want_dw ? tm__ptr(dweight) : NULL,
            want_db ? tm__ptr(dbias) : NULL, tm__ptr(g),
            want_dw ? tm__ptr(x) : NULL, want_dx ? tm__ptr(weight) : NULL);
    size_t es = tm_dtype_size(dt);
    int64_t G = q->g, ocg = q->oc / G, L = q->od * q->oh * q->ow;
    int64_t K = q->c / G * q->kd * q->kh * q->kw;
    int64_t xn = q->c * q->d * q->h * q->w;
    int64_t B = cv_chunk(q);
    void *cp = NULL, *gp = NULL;
    tm_status st = TM_OK;
    /* dx and dw are sums over the chunks, from zero */
    if (want_dx && q->n * xn > 0)
        memset(tm__ptr(dx), 0, (size_t)(q->n * xn) * es);
    if (want_dw && q->oc * K > 0)
        memset(tm__ptr(dweight), 0, (size_t)(q->oc * K) * es);
    if (want_dx || want_dw) { /* im2col / dcols scratch */
        if (!(cp = cv_scratch(fn, (int64_t[]){B, G, K, L}, 4, es)))
            return tm_last_status();
    }
    if (want_dw) { /* G in the [oc, nb*L] order of the dw product */
        if (!(gp = cv_scratch(fn, (int64_t[]){q->oc, B, L}, 3, es))) {
            tm__dealloc(cp);
            return tm_last_status();
        }
    }
    tm_buf cols = {.handle = cp, .dtype = dt};
    tm_buf gm = {.handle = gp, .dtype = dt};
    const char *gb = tm__ptr(g);
    for (int64_t n0 = 0; !st && (want_dx || want_dw) && n0 < q->n;
         n0 += B) {
        int64_t nb = q->n - n0 < B ? q->n - n0 : B;
        if (want_dx) { /* dcols[b] = wᵀ · G[b] (batched), then col2im */
            tm_buf a = cv_mat(weight, 0, 4, CV_SHAPE4(nb, G, ocg, K),
                              CV_STRIDES4(0, G, ocg, K), true, true);
            tm_buf b = cv_mat(g, n0 * q->oc * L, 4, CV_SHAPE4(nb, G, ocg, L),
                              CV_STRIDES4(q->oc * L, G, ocg, L), true, false);
            tm_buf c = cv_mat(&cols, 0, 4, CV_SHAPE4(nb, G, K, L),
                              CV_STRIDES4(G * K * L, G, K, L), false, false);
            if ((st = cv_gemm(ctx, &c, &a, &b, 0.0))) break;
            tm__conv_col2im(q, dt, cp,
                            (char *)tm__ptr(dx) + n0 * xn * (int64_t)es, nb);
        }
        if (want_dw) { /* dw += G · colsᵀ over the chunk's images: one GEMM */
            tm__conv_regroup(gb + n0 * q->oc * L * (int64_t)es, gp, nb, q->oc,
                             L, es);
            tm__conv_im2col(q, dt,
                            (const char *)tm__ptr(x) + n0 * xn * (int64_t)es,
                            cp, nb, true);
            tm_buf a = cv_mat(&gm, 0, 3, CV_SHAPE3(G, ocg, nb * L),
                              CV_STRIDES3(G, ocg, nb * L), true, false);
            tm_buf b = cv_mat(&cols, 0, 3, CV_SHAPE3(G, K, nb * L),
                              CV_STRIDES3(G, K, nb * L), true, true);
            tm_buf c = cv_mat(dweight, 0, 3, CV_SHAPE3(G, ocg, K),
                              CV_STRIDES3(G, ocg, K), false, false);
            if ((st = cv_gemm(ctx, &c, &a, &b, 1.0))) break;
        }
    }
    if (!st && want_db) tm__conv_bias_grad(q, dt, gb, tm__ptr(dbias));
    tm__dealloc(cp);
    tm__dealloc(gp);
    return st;
}
