/*
 * gemm_portable_tmpl.h — the portable C micro-kernel (gemm_portable.c)
 * for one element type and tile, instantiated for F32 4 x 8 and F64 4 x 4
 * (no include guard).  The includer defines GP_NAME, GP_T, GP_MR, GP_NR.
 */

static void GP_NAME(int64_t kc, const void *av, const void *bv,
                 int64_t ldb, void *cv, int64_t ldc, double alpha,
                 double beta)
{
    const GP_T *restrict a = av;
    const GP_T *restrict b = bv;
    GP_T *c = cv;
    GP_T acc[GP_MR][GP_NR];
    for (int r = 0; r < GP_MR; r++)
        for (int j = 0; j < GP_NR; j++) acc[r][j] = 0;
    for (int64_t p = 0; p < kc; p++, a += GP_MR, b += ldb)
        for (int r = 0; r < GP_MR; r++) {
            const GP_T x = a[r];
            for (int j = 0; j < GP_NR; j++) acc[r][j] += x * b[j];
        }
    const GP_T al = (GP_T)alpha, be = (GP_T)beta;
    for (int r = 0; r < GP_MR; r++)
        for (int j = 0; j < GP_NR; j++) {
            GP_T v = al * acc[r][j];
            if (be != 0) v = v + be * c[r * ldc + j];
            c[r * ldc + j] = v;
        }
}
