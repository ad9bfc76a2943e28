/*
 * cpu_conv_tmpl.h — the convolution loops of cpu_conv.c for one element
 * type, written once and included once per type.  The includer defines
 *   T     the element type (float or double)
 *   SUF   the suffix of the generated names (f32 or f64)
 * and provides conv_job and conv_span.  It defines the thread-pool range
 * functions conv_im2col_SUF, conv_col2im_SUF, conv_bias_add_SUF and
 * conv_bias_grad_SUF (their contracts: tm__conv_* in cpu_nn.h), with the
 * helpers conv_add_scalar_SUF and conv_add_row_SUF; the includer
 * undefines T and SUF before the next type.
 */
#define CONV_CAT_(a, b) a##_##b
#define CONV_CAT(a, b) CONV_CAT_(a, b)
#define CONV_FN(name) CONV_CAT(name, SUF)

/* dst[l] += v (add_scalar) or += src[l] (add_row) for l < n, in blocks
 * of 8: -O2 vectorizes a loop only when it knows the trip count (and, for
 * two arrays, that they do not overlap: restrict), so the plain loop over
 * n stayed scalar, and its speed then depended on where it landed in the
 * instruction cache lines (measured up to 1.8x apart between builds).
 * Each element still gets exactly one add. */
static inline void CONV_FN(conv_add_scalar)(T *restrict dst, T v, int64_t n)
{
    int64_t l = 0;
    for (; l + 8 <= n; l += 8)
        for (int u = 0; u < 8; u++) dst[l + u] += v;
    for (; l < n; l++) dst[l] += v;
}

static inline void CONV_FN(conv_add_row)(T *restrict dst,
                                         const T *restrict src, int64_t n)
{
    int64_t l = 0;
    for (; l + 8 <= n; l += 8)
        for (int u = 0; u < 8; u++) dst[l + u] += src[l + u];
    for (; l < n; l++) dst[l] += src[l];
}

/* Rows p = b * R + r (image b, row r of R = C*KD*KH*KW) of cols. */
static void CONV_FN(conv_im2col)(int64_t p0, int64_t p1, void *vj)
{
    const conv_job *jb = vj;
    const tm_conv_geom *q = jb->q;
    int64_t R = q->c * q->kd * q->kh * q->kw, hw = q->h * q->w;
    for (int64_t p = p0; p < p1; p++) {
        int64_t b = p / R, r = p % R;
        int64_t j = r % q->kw, i = (r / q->kw) % q->kh;
        int64_t l = (r / (q->kw * q->kh)) % q->kd;
        int64_t c = r / (q->kw * q->kh * q->kd);
        const T *xc = (const T *)jb->src + (b * q->c + c) * q->d * hw;
        T *row = (T *)jb->dst + r * jb->ld + b * jb->bs;
        int64_t x0 = j * q->dw - q->pw, lo, hi;
        conv_span(x0, q->sw, q->w, q->ow, &lo, &hi);
        for (int64_t oz = 0; oz < q->od; oz++) {
            int64_t z = oz * q->sd - q->pd + l * q->dd;
            for (int64_t oy = 0; oy < q->oh; oy++) {
                int64_t y = oy * q->sh - q->ph + i * q->dh;
                T *o = row + (oz * q->oh + oy) * q->ow;
                if (z < 0 || z >= q->d || y < 0 || y >= q->h) {
                    for (int64_t ox = 0; ox < q->ow; ox++) o[ox] = 0;
                    continue;
                }
                const T *xr = xc + z * hw + y * q->w + x0;
                for (int64_t ox = 0; ox < lo; ox++) o[ox] = 0;
                /* unit stride as its own loop: a plain copy, vectorized */
                if (q->sw == 1)
                    for (int64_t ox = lo; ox < hi; ox++) o[ox] = xr[ox];
                else
                    for (int64_t ox = lo; ox < hi; ox++)
                        o[ox] = xr[ox * q->sw];
                for (int64_t ox = hi; ox < q->ow; ox++) o[ox] = 0;
            }
        }
    }
}

/* Volumes p = b * C + ch of dx. */
static void CONV_FN(conv_col2im)(int64_t p0, int64_t p1, void *vj)
{
    const conv_job *jb = vj;
    const tm_conv_geom *q = jb->q;
    int64_t hw = q->h * q->w;
    for (int64_t p = p0; p < p1; p++) {
        int64_t b = p / q->c, c = p % q->c;
        T *xc = (T *)jb->dst + p * q->d * hw;
        for (int64_t l = 0; l < q->kd; l++)
            for (int64_t i = 0; i < q->kh; i++)
                for (int64_t j = 0; j < q->kw; j++) {
                    const T *row =
                        (const T *)jb->src +
                        (((c * q->kd + l) * q->kh + i) * q->kw + j) * jb->ld +
                        b * jb->bs;
                    int64_t x0 = j * q->dw - q->pw, lo, hi;
                    conv_span(x0, q->sw, q->w, q->ow, &lo, &hi);
                    for (int64_t oz = 0; oz < q->od; oz++) {
                        int64_t z = oz * q->sd - q->pd + l * q->dd;
                        if (z < 0 || z >= q->d) continue;
                        for (int64_t oy = 0; oy < q->oh; oy++) {
                            int64_t y = oy * q->sh - q->ph + i * q->dh;
                            if (y < 0 || y >= q->h) continue;
                            T *xr = xc + z * hw + y * q->w + x0;
                            const T *o = row + (oz * q->oh + oy) * q->ow;
                            if (q->sw == 1)
                                CONV_FN(conv_add_row)(xr + lo, o + lo,
                                                      hi - lo);
                            else
                                for (int64_t ox = lo; ox < hi; ox++)
                                    xr[ox * q->sw] += o[ox];
                        }
                    }
                }
    }
}

/* Rows r = n * OC + o of y (dst) += bias[o] (src). */
static void CONV_FN(conv_bias_add)(int64_t r0, int64_t r1, void *vj)
{
    const conv_job *jb = vj;
    int64_t L = jb->q->od * jb->q->oh * jb->q->ow, oc = jb->q->oc;
    for (int64_t r = r0; r < r1; r++) {
        T *p = (T *)jb->dst + r * L;
        CONV_FN(conv_add_scalar)(p, ((const T *)jb->src)[r % oc], L);
    }
}

/* Channels o of db (dst) = the sum of g (src) over n and the row. */
static void CONV_FN(conv_bias_grad)(int64_t o0, int64_t o1, void *vj)
{
    const conv_job *jb = vj;
    int64_t L = jb->q->od * jb->q->oh * jb->q->ow, oc = jb->q->oc;
    for (int64_t o = o0; o < o1; o++) {
        double acc = 0;
        for (int64_t n = 0; n < jb->q->n; n++) {
            const T *row = (const T *)jb->src + (n * oc + o) * L;
            for (int64_t l = 0; l < L; l++) acc += row[l];
        }
        ((T *)jb->dst)[o] = (T)acc;
    }
}

#undef CONV_FN
#undef CONV_CAT
#undef CONV_CAT_
