/*
 * cpu_pool_nd_tmpl.h — the general pooling loops of cpu_pool.c (depth,
 * dilation, ceil-mode windows, divisor override) for one element type,
 * written once and included once per type.  The includer defines
 *   T     the element type (float or double)
 *   SUF   the suffix of the generated names (f32, f64 or i64)
 *   LOWEST the value of a window with no tap inside x
 *   PND_MAX_ONLY (optional) only the max loops (integer types), whose
 *         values are never NaN
 * and provides pool_job and pool_avg_window.  It defines the thread-pool range
 * functions (planes [p0, p1)) pool_nd_max_SUF, pool_nd_max_backward_SUF,
 * pool_nd_avg_SUF and pool_nd_avg_backward_SUF; the includer undefines T,
 * SUF and LOWEST before the next type.
 */
#define PND_CAT_(a, b) a##_##b
#define PND_CAT(a, b) PND_CAT_(a, b)
#define PND_FN(name) PND_CAT(name, SUF)
#ifdef PND_MAX_ONLY
#define PND_ISNAN(v) 0
#else
#define PND_ISNAN(v) ((v) != (v))
#endif

/* x (P, D, H, W) -> y, argmax (P, OD, OH, OW): the max over the in-bounds
 * taps of each window (the first maximum, a later NaN replacing it, as
 * PyTorch scans). */
static void PND_FN(pool_nd_max)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t vol = q->d * q->h * q->w, L = q->od * q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++) {
        const T *x = (const T *)jb->src + p * vol;
        T *y = (T *)jb->dst + p * L;
        int64_t *ix = jb->argmax + p * L, l = 0;
        for (int64_t oz = 0; oz < q->od; oz++)
            for (int64_t oy = 0; oy < q->oh; oy++)
                for (int64_t ox = 0; ox < q->ow; ox++, l++) {
                    int64_t zs = oz * q->sd - q->pd, ys = oy * q->sh - q->ph;
                    int64_t xs = ox * q->sw - q->pw;
                    T m = LOWEST;
                    int64_t mi = -1;
                    for (int64_t a = 0; a < q->kd; a++) {
                        int64_t zz = zs + a * q->dd;
                        if (zz < 0 || zz >= q->d) continue;
                        for (int64_t b = 0; b < q->kh; b++) {
                            int64_t yy = ys + b * q->dh;
                            if (yy < 0 || yy >= q->h) continue;
                            for (int64_t c = 0; c < q->kw; c++) {
                                int64_t xx = xs + c * q->dw;
                                if (xx < 0 || xx >= q->w) continue;
                                int64_t at = (zz * q->h + yy) * q->w + xx;
                                T v = x[at];
                                if (mi < 0 || v > m || PND_ISNAN(v)) m = v, mi = at;
                            }
                        }
                    }
                    /* a window with no tap inside x (possible only with
                     * dilation) keeps LOWEST and points at element 0 so
                     * that backward stays in bounds */
                    y[l] = m;
                    ix[l] = mi < 0 ? 0 : mi;
                }
    }
}

#ifndef PND_MAX_ONLY
/* g, argmax (P, OD, OH, OW) -> dx (P, D, H, W), zeroed by the caller. */
static void PND_FN(pool_nd_max_backward)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t vol = q->d * q->h * q->w, L = q->od * q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++) {
        const T *g = (const T *)jb->src + p * L;
        T *dx = (T *)jb->dst + p * vol;
        const int64_t *ix = jb->argmax_in + p * L;
        for (int64_t l = 0; l < L; l++) dx[ix[l]] += g[l];
    }
}

/* x (P, D, H, W) -> y (P, OD, OH, OW): window sums / divisor. */
static void PND_FN(pool_nd_avg)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t vol = q->d * q->h * q->w, L = q->od * q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++) {
        const T *x = (const T *)jb->src + p * vol;
        T *y = (T *)jb->dst + p * L;
        int64_t l = 0;
        for (int64_t oz = 0; oz < q->od; oz++)
            for (int64_t oy = 0; oy < q->oh; oy++)
                for (int64_t ox = 0; ox < q->ow; ox++, l++) {
                    int64_t r[6], div = pool_avg_window(q, oz, oy, ox, r);
                    int64_t z0 = r[0], z1 = r[1], y0 = r[2], y1 = r[3];
                    int64_t x0 = r[4], x1 = r[5];
                    T acc = 0;
                    for (int64_t zz = z0; zz < z1; zz++)
                        for (int64_t yy = y0; yy < y1; yy++)
                            for (int64_t xx = x0; xx < x1; xx++)
                                acc += x[(zz * q->h + yy) * q->w + xx];
                    /* an empty window (x clipped away) averages to 0 */
                    y[l] = div > 0 ? acc / (T)div : (T)0;
                }
    }
}

/* g (P, OD, OH, OW) -> dx (P, D, H, W), zeroed by the caller. */
static void PND_FN(pool_nd_avg_backward)(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    const tm_pool_geom *q = jb->q;
    int64_t vol = q->d * q->h * q->w, L = q->od * q->oh * q->ow;
    for (int64_t p = p0; p < p1; p++) {
        const T *g = (const T *)jb->src + p * L;
        T *dx = (T *)jb->dst + p * vol;
        int64_t l = 0;
        for (int64_t oz = 0; oz < q->od; oz++)
            for (int64_t oy = 0; oy < q->oh; oy++)
                for (int64_t ox = 0; ox < q->ow; ox++, l++) {
                    int64_t r[6], div = pool_avg_window(q, oz, oy, ox, r);
                    int64_t z0 = r[0], z1 = r[1], y0 = r[2], y1 = r[3];
                    int64_t x0 = r[4], x1 = r[5];
                    if (div <= 0) continue;
                    T v = g[l] / (T)div;
                    for (int64_t zz = z0; zz < z1; zz++)
                        for (int64_t yy = y0; yy < y1; yy++)
                            for (int64_t xx = x0; xx < x1; xx++)
                                dx[(zz * q->h + yy) * q->w + xx] += v;
                }
    }
}

#endif /* PND_MAX_ONLY */

#undef PND_ISNAN
#undef PND_FN
#undef PND_CAT
#undef PND_CAT_
