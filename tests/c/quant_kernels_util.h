/*
 * quant_kernels_util.h — helpers of the quantized-kernel tests
 * (test_quant_kernels*.c): data, buffers over host memory, and the bound
 * on a quantized dot product's F32 error.
 *
 * Tolerances.  A quantized dot product is exact in integers per block;
 * its F32 part is one or two roundings per block plus the running sum of
 * nb block results, so |y - exact| <= (nb + 8) * 2^-24 * sum |w_i x_i|
 * bounds it (first order), with sum |w_i x_i| over the dequantized
 * values.  Q4_1 / Q5_1 add the Q8_1 block's s = d * sum(q) rounded to a
 * half: |m| * |s| * 2^-11 per block (2^-10 here, for |m| bounded by the
 * block's max |value|).  Kernel families against the reference differ
 * only in F32 rounding and summation order: the same bound.
 */
#ifndef FOUNDRY_TEST_QUANT_KERNELS_UTIL_H
#define FOUNDRY_TEST_QUANT_KERNELS_UTIL_H

#include "harness.h"

#include "../../cpu/cpu_features.h"
#include "../../cpu/quant/qkern.h"

#include <stdlib.h>

static const tm_dtype wfmts[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                 TM_Q5_1, TM_Q4_K, TM_Q5_K, TM_Q6_K};
#define NFMT ((int)(sizeof wfmts / sizeof wfmts[0]))

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static inline double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}
static inline float grand(void)
{
    double u = urand() + 1e-12, v = urand();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static inline tm_buf fbuf(float *p, int64_t rows, int64_t cols, int64_t rs)
{
    tm_buf b = {0};
    b.handle = p;
    b.dtype = TM_F32;
    b.ndim = 2;
    b.shape[0] = rows;
    b.shape[1] = cols;
    b.strides[0] = rs;
    b.strides[1] = 1;
    return b;
}

static inline tm_buf qbuf(void *p, size_t off, tm_dtype dt, int64_t rows,
                   int64_t cols, int64_t rs)
{
    tm_buf b = {0};
    b.handle = p;
    b.offset = off;
    b.dtype = dt;
    b.ndim = 2;
    b.shape[0] = rows;
    b.shape[1] = cols;
    b.strides[0] = rs;
    b.strides[1] = 1;
    return b;
}

static inline size_t rowbytes(tm_dtype dt, int64_t n)
{
    const tm__qtraits *q = tm__qtraits_of(dt);
    return (size_t)(n / q->block) * q->bytes;
}

/* Random weights with a spread of row scales; `kind` 1 makes every value
 * 0 (zero scales), 2 makes values of both signs at one magnitude (the
 * largest quants). */
static inline void fill(float *x, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        if (kind == 1) x[i] = 0.0f;
        else if (kind == 2) x[i] = (i * 7 + 3) % 5 < 2 ? -3.0f : 3.0f;
        else x[i] = grand() * (float)(0.25 + (i / 64 % 5));
    }
}

/* Bound on |y - exact| for one output (see the top). */
static inline double dot_bound(tm_dtype wt, const float *wd, const float *xd,
                        const void *xq, int64_t k, double *exact)
{
    double e = 0.0, a = 0.0;
    for (int64_t i = 0; i < k; i++) {
        e += (double)wd[i] * xd[i];
        a += fabs((double)wd[i] * xd[i]);
    }
    const tm__qtraits *q = tm__qtraits_of(wt);
    int64_t nb = k / q->block;
    double tol = (double)(nb + 8) * 0x1.0p-24 * a;
    if (wt == TM_Q4_1 || wt == TM_Q5_1) {
        /* m of each weight block is bounded by the block's max |value|. */
        const tm__block_q8_1 *ab = xq;
        for (int64_t b = 0; b < nb; b++) {
            double mx = 0.0;
            for (int i = 0; i < 32; i++)
                if (fabs(wd[32 * b + i]) > mx) mx = fabs(wd[32 * b + i]);
            tol += mx * fabs(tm__half_to_f32(ab[b].s)) * 0x1.0p-10;
        }
    }
    *exact = e;
    return tol + 1e-30;
}


#endif
