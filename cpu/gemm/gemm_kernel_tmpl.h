/*
 * gemm_kernel_tmpl.h — the x86 GEMM micro-kernel, written once for AVX2
 * (ymm) and AVX-512 (zmm).  The including file defines GM_P(op) as the
 * intrinsic prefix (_mm256_##op or _mm512_##op) and GM_ROWS<MR> lists, then
 * instantiates GM_KERNEL(name, MR, element type, vector type, lanes, ps/pd).
 * The tile is MR rows x two vectors: per depth step two B vectors are loaded
 * and MR A values broadcast, 2 * MR FMAs; then C = alpha * tile (+ beta * C).
 */
#ifndef FOUNDRY_GEMM_KERNEL_TMPL_H
#define FOUNDRY_GEMM_KERNEL_TMPL_H

/* T elements, VEC vectors of W lanes, intrinsics suffix S (ps / pd). */
#define GM_KERNEL(NAME, MR_, T, VEC, W, S)                                    \
    static void NAME(int64_t kc, const void *av, const void *bv,           \
                     int64_t ldb, void *cv, int64_t ldc, double alpha,       \
                     double beta)                                            \
    {                                                                         \
        const T *a = av, *b = bv;                                              \
        T *c = cv;                                                             \
        GM_ROWS##MR_(GM_DECL, VEC, S)                                          \
        for (int64_t p = 0; p < kc; p++, a += MR_, b += ldb) {                \
            const VEC b0 = GM_P(loadu_##S)(b), b1 = GM_P(loadu_##S)(b + W);  \
            GM_ROWS##MR_(GM_FMA, VEC, S)                                       \
        }                                                                     \
        const VEC al = GM_P(set1_##S)((T)alpha);                              \
        const VEC be = GM_P(set1_##S)((T)beta);                               \
        if ((T)beta == 0) {                                                   \
            GM_ROWS##MR_(GM_STORE0, W, S)                                      \
        } else {                                                              \
            GM_ROWS##MR_(GM_STORE, W, S)                                       \
        }                                                                     \
    }

/* The one-row kernel of the same family (see tm__gemm_ukr_row). */
#define GM_KERNEL_ROW(NAME, MR_, T, VEC, W, S)                                \
    static void NAME(int64_t kc, const void *av, const void *bv,           \
                     int64_t ldb, void *cv, double alpha, double beta)       \
    {                                                                         \
        const T *a = av, *b = bv;                                              \
        T *c = cv;                                                             \
        const int64_t ldc = 0;                                                 \
        GM_DECL(0, VEC, S)                                                     \
        for (int64_t p = 0; p < kc; p++, a += MR_, b += ldb) {                \
            const VEC b0 = GM_P(loadu_##S)(b), b1 = GM_P(loadu_##S)(b + W);  \
            GM_FMA(0, VEC, S)                                                  \
        }                                                                     \
        const VEC al = GM_P(set1_##S)((T)alpha);                              \
        const VEC be = GM_P(set1_##S)((T)beta);                               \
        if ((T)beta == 0) {                                                   \
            GM_STORE0(0, W, S)                                                 \
        } else {                                                              \
            GM_STORE(0, W, S)                                                  \
        }                                                                     \
        (void)ldc;                                                             \
    }

#define GM_DECL(r, VEC, S)                                                    \
    VEC c##r##0 = GM_P(setzero_##S)(), c##r##1 = GM_P(setzero_##S)();
#define GM_FMA(r, VEC, S)                                                     \
    {                                                                         \
        const VEC x = GM_P(set1_##S)(a[r]);                                   \
        c##r##0 = GM_P(fmadd_##S)(x, b0, c##r##0);                            \
        c##r##1 = GM_P(fmadd_##S)(x, b1, c##r##1);                            \
    }
#define GM_STORE0(r, W, S)                                                    \
    GM_P(storeu_##S)(c + r * ldc, GM_P(mul_##S)(al, c##r##0));             \
    GM_P(storeu_##S)(c + r * ldc + W, GM_P(mul_##S)(al, c##r##1));
#define GM_STORE(r, W, S)                                                     \
    GM_P(storeu_##S)(c + r * ldc,                                            \
                    GM_P(add_##S)(GM_P(mul_##S)(al, c##r##0),             \
                                 GM_P(mul_##S)(be, GM_P(loadu_##S)(       \
                                                    c + r * ldc))));          \
    GM_P(storeu_##S)(c + r * ldc + W,                                        \
                    GM_P(add_##S)(GM_P(mul_##S)(al, c##r##1),             \
                                 GM_P(mul_##S)(be, GM_P(loadu_##S)(       \
                                                    c + r * ldc + W))));

#endif
