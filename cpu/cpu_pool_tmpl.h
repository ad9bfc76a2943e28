/*
 * cpu_pool_tmpl.h — the pooling loops of cpu_pool.c for one element type,
 * written once and included once per type.  The includer defines
 *   T     the element type (float or double)
 *   SUF   the suffix of the generated names (f32 or f64)
 * and provides pool_job, pool_window and pool_sel_SUF (k ? a : b on the
 * bits).  It defines the thread-pool range functions (planes [p0, p1))
 * pool_max_SUF, pool_max_backward_SUF, pool_avg_SUF and
 * pool_avg_backward_SUF (their contracts: the entries in cpu_pool.c);
 * the includer undefines T and SUF before the next type.
 */
#define POOL_CAT_(a, b) a##_##b
#define POOL_CAT(a, b) POOL_CAT_(a, b)
#define POOL_FN(name) POOL_CAT(name, SUF)

/* src x, dst y, argmax written. */
static void POOL_FN(pool_max)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t y0, y1, x0, x1, hw = q->h * q->w, L = q->oh * q->ow;
    bool k22 = q->kh == 2 && q->kw == 2 && q->sh == 2 && q->sw == 2 &&
               q->ph == 0 && q->pw == 0;
    for (int64_t p = p0; p < p1; p++) {
        const T *x = (const T *)jb->src + p * hw;
        T *y = (T *)jb->dst + p * L;
        int64_t *ix = jb->argmax + p * L;
        if (k22) { /* the common 2x2 / stride 2 window, unrolled */
            for (int64_t oy = 0; oy < q->oh; oy++)
                for (int64_t ox = 0; ox < q->ow; ox++) {
                    int64_t i0 = 2 * oy * q->w + 2 * ox;
                    int64_t at[4] = {i0, i0 + 1, i0 + q->w, i0 + q->w + 1};
                    T m = x[i0];
                    int64_t mi = i0;
                    /* a NaN first element keeps m NaN unless a later NaN
                     * takes its index (as below) */
                    for (int t = 1; t < 4; t++) {
                        T v = x[at[t]];
                        int64_t k = -(int64_t)((v > m) | (v != v));
                        m = POOL_FN(pool_sel)(k, v, m);
                        mi = (mi & ~k) | (at[t] & k);
                    }
                    y[oy * q->ow + ox] = m;
                    ix[oy * q->ow + ox] = mi;
                }
            continue;
        }
        for (int64_t oy = 0; oy < q->oh; oy++)
            for (int64_t ox = 0; ox < q->ow; ox++) {
                pool_window(q, oy, ox, &y0, &y1, &x0, &x1);
                T m = (T)-INFINITY;
                int64_t mi = y0 * q->w + x0;
                for (int64_t yy = y0; yy < y1; yy++)
                    for (int64_t xx = x0; xx < x1; xx++) {
                        T v = x[yy * q->w + xx];
                        /* bitwise selects, not branches: random data
                         * made a branch mispredict on most windows
                         * (20 ns an output at 2x2) */
                        int64_t k = -(int64_t)((v > m) | (v != v));
                        m = POOL_FN(pool_sel)(k, v, m);
                        mi = (mi & ~k) | ((yy * q->w + xx) & k);
                    }
                y[oy * q->ow + ox] = m;
                ix[oy * q->ow + ox] = mi;
            }
    }
}

/* src g, dst dx, argmax_in read. */
static void POOL_FN(pool_max_backward)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t hw = q->h * q->w, L = q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++) {
        const T *g = (const T *)jb->src + p * L;
        T *dx = (T *)jb->dst + p * hw;
        const int64_t *ix = jb->argmax_in + p * L;
        for (int64_t l = 0; l < L; l++) dx[ix[l]] += g[l];
    }
}

/* src x, dst y. */
static void POOL_FN(pool_avg)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t y0, y1, x0, x1, hw = q->h * q->w, L = q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++) {
        const T *x = (const T *)jb->src + p * hw;
        T *y = (T *)jb->dst + p * L;
        for (int64_t oy = 0; oy < q->oh; oy++)
            for (int64_t ox = 0; ox < q->ow; ox++) {
                int64_t div = pool_window(q, oy, ox, &y0, &y1, &x0, &x1);
                T acc = 0;
                for (int64_t yy = y0; yy < y1; yy++)
                    for (int64_t xx = x0; xx < x1; xx++)
                        acc += x[yy * q->w + xx];
                y[oy * q->ow + ox] = acc / (T)div;
            }
    }
}

/* src g, dst dx. */
static void POOL_FN(pool_avg_backward)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t y0, y1, x0, x1, hw = q->h * q->w, L = q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++) {
        const T *g = (const T *)jb->src + p * L;
        T *dx = (T *)jb->dst + p * hw;
        for (int64_t oy = 0; oy < q->oh; oy++)
            for (int64_t ox = 0; ox < q->ow; ox++) {
                int64_t div = pool_window(q, oy, ox, &y0, &y1, &x0, &x1);
                T v = g[oy * q->ow + ox] / (T)div;
                for (int64_t yy = y0; yy < y1; yy++)
                    for (int64_t xx = x0; xx < x1; xx++)
                        dx[yy * q->w + xx] += v;
            }
    }
}

#undef POOL_FN
#undef POOL_CAT
#undef POOL_CAT_
