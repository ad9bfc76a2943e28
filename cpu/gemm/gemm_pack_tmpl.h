/*
 * gemm_pack_tmpl.h — packing, merging and scaling of the GEMM driver
 * (gemm_driver.c), written once and instantiated for F32 and F64 (no
 * include guard).  The includer defines GM_T (the element type) and
 * GM_N(name) (this instantiation's function names).
 */

/* dst: ceil(mc/mr) panels of mr x kc, element [r, p] at p * mr + r;
 * rows past mc are zero. */
static void GM_N(gm_pack_a)(GM_T *restrict dst, const GM_T *src, int64_t sam,
                            int64_t sak, int64_t mc, int64_t kc, int mr)
{
    for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
        int64_t rows = mc - i0 < mr ? mc - i0 : mr;
        const GM_T *s = src + i0 * sam;
        if (sak == 1 && rows == mr) {
            for (int r = 0; r < mr; r++) {
                const GM_T *sr = s + r * sam;
                for (int64_t p = 0; p < kc; p++) dst[p * mr + r] = sr[p];
            }
            continue;
        }
        for (int64_t p = 0; p < kc; p++) {
            const GM_T *sp = s + p * sak;
            GM_T *d = dst + p * mr;
            int64_t r = 0;
            for (; r < rows; r++) d[r] = sp[r * sam];
            for (; r < mr; r++) d[r] = 0;
        }
    }
}

/* dst: ceil(nc/nr) panels of kc x nr, element [p, j] at p * nr + j;
 * columns past nc are zero. */
static void GM_N(gm_pack_b)(GM_T *restrict dst, const GM_T *src, int64_t sbk,
                            int64_t sbn, int64_t kc, int64_t nc, int nr)
{
    for (int64_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
        int64_t cols = nc - j0 < nr ? nc - j0 : nr;
        const GM_T *s = src + j0 * sbn;
        if (sbn == 1) {
            for (int64_t p = 0; p < kc; p++) {
                GM_T *d = dst + p * nr;
                memcpy(d, s + p * sbk, (size_t)cols * sizeof(GM_T));
                for (int64_t j = cols; j < nr; j++) d[j] = 0;
            }
        } else if (sbk == 1) {
            for (int64_t j = 0; j < cols; j++) {
                const GM_T *sj = s + j * sbn;
                for (int64_t p = 0; p < kc; p++) dst[p * nr + j] = sj[p];
            }
            for (int64_t p = 0; p < kc && cols < nr; p++)
                for (int64_t j = cols; j < nr; j++) dst[p * nr + j] = 0;
        } else {
            for (int64_t p = 0; p < kc; p++) {
                GM_T *d = dst + p * nr;
                int64_t j = 0;
                for (; j < cols; j++) d[j] = s[p * sbk + j * sbn];
                for (; j < nr; j++) d[j] = 0;
            }
        }
    }
}

/* c[rows x cols] = alpha * t + beta * c (beta 0: c not read), with t
 * a staged tile of row stride nr. */
static void GM_N(gm_merge)(GM_T *c, int64_t scm, int64_t scn, const GM_T *t,
                           int nr, int64_t rows, int64_t cols,
                           double alpha, double beta)
{
    const GM_T al = (GM_T)alpha, be = (GM_T)beta;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            GM_T *cp = c + i * scm + j * scn;
            GM_T v = al * t[i * nr + j];
            if (be != 0) v = v + be * *cp;
            *cp = v;
        }
}

/* c = beta * c (0 when beta == 0, NaN or not). */
static void GM_N(gm_scale)(GM_T *c, int64_t scm, int64_t scn, int64_t m,
                           int64_t n, double beta)
{
    const GM_T be = (GM_T)beta;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            GM_T *cp = c + i * scm + j * scn;
            *cp = be == 0 ? (GM_T)0 : be * *cp;
        }
}
