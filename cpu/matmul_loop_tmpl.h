/*
 * matmul_loop_tmpl.h — the cache-blocked loop of cpu_matmul.c for one
 * accumulation type, instantiated for float, double and uint64_t (no
 * include guard).  The includer defines MM_T (the type), MM_N(name) (this
 * instantiation's names) and NB (the full tile width).
 */

static inline void MM_N(row4)(MM_T *restrict c0, MM_T *restrict c1,
                               MM_T *restrict c2, MM_T *restrict c3,
                               const MM_T *restrict br, MM_T x0, MM_T x1, MM_T x2,
                               MM_T x3, int64_t nc)
{
    for (int64_t j = 0; j < nc; j++) {
        const MM_T y = br[j];
        c0[j] += x0 * y;
        c1[j] += x1 * y;
        c2[j] += x2 * y;
        c3[j] += x3 * y;
    }
}

static inline void MM_N(row1)(MM_T *restrict c0, const MM_T *restrict br,
                               MM_T x0, int64_t nc)
{
    for (int64_t j = 0; j < nc; j++) c0[j] += x0 * br[j];
}

static inline void MM_N(body)(MM_T *acc, const MM_T *ap, const MM_T *bp,
                               int64_t mc, int64_t kc, int64_t nc)
{
    int64_t i = 0;
    for (; i + 4 <= mc; i += 4) {
        MM_T *c = acc + i * nc;
        const MM_T *a = ap + i * kc;
        for (int64_t kk = 0; kk < kc; kk++)
            MM_N(row4)(c, c + nc, c + 2 * nc, c + 3 * nc, bp + kk * nc,
                        a[kk], a[kc + kk], a[2 * kc + kk],
                        a[3 * kc + kk], nc);
    }
    for (; i < mc; i++)
        for (int64_t kk = 0; kk < kc; kk++)
            MM_N(row1)(acc + i * nc, bp + kk * nc, ap[i * kc + kk], nc);
}

static void MM_N(loop)(MM_T *acc, const MM_T *ap, const MM_T *bp, int64_t mc,
                 int64_t kc, int64_t nc)
{
    if (nc == NB) MM_N(body)(acc, ap, bp, mc, kc, NB);
    else MM_N(body)(acc, ap, bp, mc, kc, nc);
}
