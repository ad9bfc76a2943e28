/*
 * gemm_kernel_tmpl.h — the x86 GEMM micro-kernel, written once for AVX2
 * (ymm) and AVX-512 (zmm) and one element type per inclusion (no include
 * guard).  The tile is MR rows x two vectors: per depth step two B vectors
 * are loaded and MR A values broadcast, 2 * MR FMAs; then C = alpha * tile
 * (+ beta * C).
 *
 * The includer defines
 *   GM_P(op)            the intrinsic prefix (_mm256_##op or _mm512_##op)
 *   GK_ROWS(X, A, B)    X(0, A, B) ... X(MR-1, A, B): the row unrolling
 *   GK_MR               rows of the tile
 *   GK_T, GK_VEC, GK_W  element type, vector type, lanes per vector
 *   GK_S                the intrinsics' type suffix (ps or pd)
 *   GK_NAME, GK_ROW     the names of the tile kernel and the one-row kernel
 * The row macros below only spell out straight-line code per row of the
 * tile (the accumulators c<r>0, c<r>1 must be separate variables to stay in
 * registers); every loop and branch is in the functions.
 */

/* GM_P(op_suffix) with the suffix expanded first. */
#define GM_OP(op, s) GM_OP_(op, s)
#define GM_OP_(op, s) GM_P(op##_##s)

#define GM_DECL(r, VEC, S)                                                    \
    VEC c##r##0 = GM_OP(setzero, S)(), c##r##1 = GM_OP(setzero, S)();
#define GM_FMA(r, VEC, S)                                                     \
    {                                                                         \
        const VEC x = GM_OP(set1, S)(a[r]);                                   \
        c##r##0 = GM_OP(fmadd, S)(x, b0, c##r##0);                            \
        c##r##1 = GM_OP(fmadd, S)(x, b1, c##r##1);                            \
    }
#define GM_STORE0(r, W, S)                                                    \
    GM_OP(storeu, S)(c + r * ldc, GM_OP(mul, S)(al, c##r##0));                \
    GM_OP(storeu, S)(c + r * ldc + W, GM_OP(mul, S)(al, c##r##1));
#define GM_STORE(r, W, S)                                                     \
    GM_OP(storeu, S)(c + r * ldc,                                             \
                     GM_OP(add, S)(GM_OP(mul, S)(al, c##r##0),                \
                                   GM_OP(mul, S)(be, GM_OP(loadu, S)(         \
                                                         c + r * ldc))));     \
    GM_OP(storeu, S)(c + r * ldc + W,                                         \
                     GM_OP(add, S)(GM_OP(mul, S)(al, c##r##1),                \
                                   GM_OP(mul, S)(be, GM_OP(loadu, S)(         \
                                                         c + r * ldc + W))));

static void GK_NAME(int64_t kc, const void *av, const void *bv, int64_t ldb,
                    void *cv, int64_t ldc, double alpha, double beta)
{
    const GK_T *a = av, *b = bv;
    GK_T *c = cv;
    GK_ROWS(GM_DECL, GK_VEC, GK_S)
    for (int64_t p = 0; p < kc; p++, a += GK_MR, b += ldb) {
        const GK_VEC b0 = GM_OP(loadu, GK_S)(b);
        const GK_VEC b1 = GM_OP(loadu, GK_S)(b + GK_W);
        GK_ROWS(GM_FMA, GK_VEC, GK_S)
    }
    const GK_VEC al = GM_OP(set1, GK_S)((GK_T)alpha);
    const GK_VEC be = GM_OP(set1, GK_S)((GK_T)beta);
    if ((GK_T)beta == 0) {
        GK_ROWS(GM_STORE0, GK_W, GK_S)
    } else {
        GK_ROWS(GM_STORE, GK_W, GK_S)
    }
}

/* The one-row kernel of the same family (see tm__gemm_ukr_row). */
static void GK_ROW(int64_t kc, const void *av, const void *bv, int64_t ldb,
                   void *cv, double alpha, double beta)
{
    const GK_T *a = av, *b = bv;
    GK_T *c = cv;
    const int64_t ldc = 0;
    GM_DECL(0, GK_VEC, GK_S)
    for (int64_t p = 0; p < kc; p++, a += GK_MR, b += ldb) {
        const GK_VEC b0 = GM_OP(loadu, GK_S)(b);
        const GK_VEC b1 = GM_OP(loadu, GK_S)(b + GK_W);
        GM_FMA(0, GK_VEC, GK_S)
    }
    const GK_VEC al = GM_OP(set1, GK_S)((GK_T)alpha);
    const GK_VEC be = GM_OP(set1, GK_S)((GK_T)beta);
    if ((GK_T)beta == 0) {
        GM_STORE0(0, GK_W, GK_S)
    } else {
        GM_STORE(0, GK_W, GK_S)
    }
    (void)ldc;
}

#undef GM_OP
#undef GM_OP_
#undef GM_DECL
#undef GM_FMA
#undef GM_STORE0
#undef GM_STORE
