/* The CPU's quantized entries (cpu/quant/): quantize / dequantize row
 * loops over strided buffers, qmatmul against a double-precision loop
 * over the dequantized weight and the dequantized quantized activations,
 * qmatmul_backward against a double loop over the dequantized weight,
 * every kernel family against tm__qdot_ref, thread-count independence,
 * and the errors.
 *
 * Tolerances.  A quantized dot product is exact in integers per block;
 * its F32 part is one or two roundings per block plus the running sum of
 * nb block results, so |y - exact| <= (nb + 8) * 2^-24 * sum |w_i x_i|
 * bounds it (first order), with sum |w_i x_i| over the dequantized
 * values.  Q4_1 / Q5_1 add the Q8_1 block's s = d * sum(q) rounded to a
 * half: |m| * |s| * 2^-11 per block.  Kernel families against the
 * reference differ only in F32 summation order: the same bound. */
#include "harness.h"

#include "../../cpu/cpu_features.h"
#include "../../cpu/quant/qkern.h"

#include <stdlib.h>

static const tm_dtype wfmts[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                 TM_Q5_1, TM_Q4_K, TM_Q5_K, TM_Q6_K};
#define NFMT ((int)(sizeof wfmts / sizeof wfmts[0]))

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}
static float grand(void)
{
    double u = urand() + 1e-12, v = urand();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static tm_buf fbuf(float *p, int64_t rows, int64_t cols, int64_t rs)
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

static tm_buf qbuf(void *p, size_t off, tm_dtype dt, int64_t rows,
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

static size_t rowbytes(tm_dtype dt, int64_t n)
{
    const tm__qtraits *q = tm__qtraits_of(dt);
    return (size_t)(n / q->block) * q->bytes;
}

/* Random weights with a spread of row scales; `kind` 1 makes every value
 * 0 (zero scales), 2 makes values of both signs at one magnitude (the
 * largest quants). */
static void fill(float *x, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        if (kind == 1) x[i] = 0.0f;
        else if (kind == 2) x[i] = (i * 7 + 3) % 5 < 2 ? -3.0f : 3.0f;
        else x[i] = grand() * (float)(0.25 + (i / 64 % 5));
    }
}

/* Bound on |y - exact| for one output (see the top). */
static double dot_bound(tm_dtype wt, const float *wd, const float *xd,
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

/* One qmatmul case: y [m, n] = x [m, k] . w [n, k]^T, with padded row
 * strides on every buffer and a byte offset on w. */
static void check_qmatmul(tm_dtype wt, int64_t m, int64_t n, int64_t k,
                          bool accumulate, int kind)
{
    const tm__qtraits *q = tm__qtraits_of(wt);
    tm_dtype at = q->act;
    int64_t xs = k + 3, ys = n + 1, wrs = 2 * k; /* w: every other row */
    size_t wrow = rowbytes(wt, k), arow = rowbytes(at, k);
    size_t woff = 3 * q->bytes;
    float *w = malloc(sizeof(float) * (size_t)(n * k + 1));
    float *wd = malloc(sizeof(float) * (size_t)(n * k + 1));
    float *x = malloc(sizeof(float) * (size_t)(m * xs + 1));
    float *xd = malloc(sizeof(float) * (size_t)(m * k + 1));
    float *y = malloc(sizeof(float) * (size_t)(m * ys + 1));
    char *wq = calloc(1, woff + 2 * wrow * (size_t)n + 1);
    char *xq = malloc(arow * (size_t)m + 1);
    REQUIRE(w && wd && x && xd && y && wq && xq);
    fill(w, n * k, kind);
    for (int64_t i = 0; i < m * xs; i++) x[i] = grand();
    for (int64_t r = 0; r < n; r++) {
        tm__quantize_row(wt, w + r * k, wq + woff + 2 * wrow * r, k);
        tm__dequantize_row(wt, wq + woff + 2 * wrow * r, wd + r * k, k);
    }
    for (int64_t i = 0; i < m; i++) {
        tm__quantize_row(at, x + i * xs, xq + arow * i, k);
        tm__dequantize_row(at, xq + arow * i, xd + i * k, k);
    }
    for (int64_t i = 0; i < m * ys; i++) y[i] = (float)(i % 3) - 1.0f;
    tm_buf yb = fbuf(y, m, n, ys), xb = fbuf(x, m, k, xs);
    tm_buf wb = qbuf(wq, woff, wt, n, k, wrs);
    CHECK_INT(tm__cpu_qmatmul(NULL, &yb, &xb, &wb, accumulate), TM_OK);
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t r = 0; r < n; r++) {
            double exact;
            double tol = dot_bound(wt, wd + r * k, xd + i * k,
                                   xq + arow * i, k, &exact);
            double before = accumulate ? (double)((i * ys + r) % 3) - 1.0 : 0;
            double got = y[i * ys + r];
            if (fabs(got - before - exact) > tol + fabs(before) * 0x1.0p-23 &&
                bad++ < 3)
                tt_fail(__FILE__, __LINE__, "%s m=%lld n=%lld k=%lld y[%lld,"
                        "%lld] = %.9g, expected %.9g (tol %.3g)", q->name,
                        (long long)m, (long long)n, (long long)k,
                        (long long)i, (long long)r, got, before + exact, tol);
        }
    /* The padding between rows stays untouched. */
    for (int64_t i = 0; i < m; i++)
        CHECK(y[i * ys + n] == (float)((i * ys + n) % 3) - 1.0f);
    free(w); free(wd); free(x); free(xd); free(y); free(wq); free(xq);
}

TEST(qmatmul_matches_double_loop_every_format)
{
    for (int f = 0; f < NFMT; f++) {
        int64_t blk = tm__qtraits_of(wfmts[f])->block;
        check_qmatmul(wfmts[f], 1, 5, blk, false, 0);
        check_qmatmul(wfmts[f], 3, 7, 4 * blk, false, 0);
        check_qmatmul(wfmts[f], 6, 9, 2 * blk, true, 0);
        check_qmatmul(wfmts[f], 5, 4, blk * (blk == 32 ? 40 : 5), false, 0);
    }
}

TEST(qmatmul_zero_and_max_magnitude_weights)
{
    for (int f = 0; f < NFMT; f++) {
        int64_t blk = tm__qtraits_of(wfmts[f])->block;
        check_qmatmul(wfmts[f], 2, 3, 2 * blk, false, 1);
        check_qmatmul(wfmts[f], 5, 3, 2 * blk, true, 2);
    }
}

/* dx [m, k] = dy [m, n] . w [n, k] against a double loop over the
 * dequantized w.  Each dx element is a sequential F32 sum of n products:
 * |dx - exact| <= (n + 2) * 2^-24 * sum |dy w|. */
static void check_backward(tm_dtype wt, int64_t m, int64_t n, int64_t k,
                           bool accumulate)
{
    int64_t dys = n + 2, dxs = k + 5;
    size_t wrow = rowbytes(wt, k);
    float *w = malloc(sizeof(float) * (size_t)(n * k + 1));
    float *wd = malloc(sizeof(float) * (size_t)(n * k + 1));
    float *dy = malloc(sizeof(float) * (size_t)(m * dys + 1));
    float *dx = malloc(sizeof(float) * (size_t)(m * dxs + 1));
    char *wq = malloc(wrow * (size_t)n + 1);
    REQUIRE(w && wd && dy && dx && wq);
    fill(w, n * k, 0);
    for (int64_t i = 0; i < m * dys; i++) dy[i] = grand();
    for (int64_t i = 0; i < m * dxs; i++) dx[i] = (float)(i % 5) * 0.5f;
    for (int64_t r = 0; r < n; r++) {
        tm__quantize_row(wt, w + r * k, wq + wrow * r, k);
        tm__dequantize_row(wt, wq + wrow * r, wd + r * k, k);
    }
    tm_buf dxb = fbuf(dx, m, k, dxs), dyb = fbuf(dy, m, n, dys);
    tm_buf wb = qbuf(wq, 0, wt, n, k, k);
    CHECK_INT(tm__cpu_qmatmul_backward(NULL, &dxb, &dyb, &wb, accumulate),
              TM_OK);
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < k; c++) {
            double e = accumulate ? (double)((i * dxs + c) % 5) * 0.5 : 0.0;
            double a = fabs(e);
            for (int64_t r = 0; r < n; r++) {
                e += (double)dy[i * dys + r] * wd[r * k + c];
                a += fabs((double)dy[i * dys + r] * wd[r * k + c]);
            }
            double tol = (double)(n + 2) * 0x1.0p-24 * a + 1e-30;
            if (fabs(dx[i * dxs + c] - e) > tol && bad++ < 3)
                tt_fail(__FILE__, __LINE__, "%s dx[%lld, %lld] = %.9g, "
                        "expected %.9g (tol %.3g)",
                        tm__qtraits_of(wt)->name, (long long)i, (long long)c,
                        dx[i * dxs + c], e, tol);
        }
    for (int64_t i = 0; i < m; i++)
        CHECK(dx[i * dxs + k] == (float)((i * dxs + k) % 5) * 0.5f);
    free(w); free(wd); free(dy); free(dx); free(wq);
}

TEST(qmatmul_backward_matches_double_loop_every_format)
{
    for (int f = 0; f < NFMT; f++) {
        int64_t blk = tm__qtraits_of(wfmts[f])->block;
        check_backward(wfmts[f], 1, 5, blk, false);
        check_backward(wfmts[f], 3, 6, 3 * blk, true);
        check_backward(wfmts[f], 7, 9, blk == 32 ? 640 : 768, false);
    }
}

/* The quantize entry, both ways, over strided buffers: the same bytes and
 * values as the row functions give on packed rows. */
TEST(quantize_entry_strided_rows_both_ways)
{
    static const tm_dtype all[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                   TM_Q5_1, TM_Q8_1, TM_Q4_K, TM_Q5_K,
                                   TM_Q6_K, TM_Q8_K};
    for (size_t f = 0; f < sizeof all / sizeof all[0]; f++) {
        tm_dtype dt = all[f];
        int64_t rows = 5, k = 2 * tm__qtraits_of(dt)->block, xs = k + 7;
        size_t rb = rowbytes(dt, k);
        const tm__qtraits *q = tm__qtraits_of(dt);
        float *x = malloc(sizeof(float) * (size_t)(rows * xs));
        float *back = malloc(sizeof(float) * (size_t)(rows * xs));
        float *want = malloc(sizeof(float) * (size_t)k);
        char *dst = calloc(1, q->bytes + 2 * rb * (size_t)rows);
        char *ref = malloc(rb);
        REQUIRE(x && back && want && dst && ref);
        for (int64_t i = 0; i < rows * xs; i++) x[i] = grand();
        tm_buf xb = fbuf(x, rows, k, xs);
        tm_buf qb = qbuf(dst, q->bytes, dt, rows, k, 2 * k);
        CHECK_INT(tm__cpu_quantize(NULL, &qb, &xb), TM_OK);
        for (int64_t i = 0; i < rows * xs; i++) back[i] = -7.0f;
        tm_buf bb = fbuf(back, rows, k, xs);
        CHECK_INT(tm__cpu_quantize(NULL, &bb, &qb), TM_OK);
        for (int64_t r = 0; r < rows; r++) {
            const char *got = dst + q->bytes + 2 * rb * (size_t)r;
            tm__quantize_row(dt, x + r * xs, ref, k);
            CHECK(memcmp(got, ref, rb) == 0);
            tm__dequantize_row(dt, ref, want, k);
            CHECK(memcmp(back + r * xs, want, sizeof(float) * (size_t)k) ==
                  0);
            CHECK(back[r * xs + k] == -7.0f);
        }
        free(x); free(back); free(want); free(dst); free(ref);
    }
}

/* Every kernel family this CPU runs (dot-product extensions on and off)
 * against tm__qdot_ref, for 1..TM__QNA activation rows at once. */
TEST(qdot_kernels_match_reference_every_family)
{
    const tm__qkern *fams[2 * TM__QKERN_MAX];
    int nfam = tm__qkern_families(fams);
    /* ...and those a CPU with the dot-product extensions switched off
     * runs (the same list where it has none). */
    tm__cpu_set_dot_ext(false);
    nfam += tm__qkern_families(fams + nfam);
    tm__cpu_set_dot_ext(true);
    for (int f = 0; f < NFMT; f++) {
        tm_dtype wt = wfmts[f];
        const tm__qtraits *q = tm__qtraits_of(wt);
        int64_t blocks[3] = {1, 3, q->block == 32 ? 67 : 9};
        for (int bi = 0; bi < 3; bi++) {
            int64_t k = blocks[bi] * q->block;
            size_t wrow = rowbytes(wt, k), arow = rowbytes(q->act, k);
            float *w = malloc(sizeof(float) * (size_t)k);
            float *x = malloc(sizeof(float) * (size_t)(k * TM__QNA));
            float *wd = malloc(sizeof(float) * (size_t)k);
            float *xd = malloc(sizeof(float) * (size_t)(k * TM__QNA));
            char *wq = malloc(wrow), *aq = malloc(arow * TM__QNA);
            REQUIRE(w && x && wd && xd && wq && aq);
            fill(w, k, bi == 0 ? 2 : 0);
            for (int64_t i = 0; i < k * TM__QNA; i++) x[i] = grand();
            tm__quantize_row(wt, w, wq, k);
            tm__dequantize_row(wt, wq, wd, k);
            for (int j = 0; j < TM__QNA; j++) {
                tm__quantize_row(q->act, x + j * k, aq + arow * j, k);
                tm__dequantize_row(q->act, aq + arow * j, xd + j * k, k);
            }
            for (int fam = 0; fam < nfam; fam++) {
                if (!fams[fam]->rows[wt - TM_Q8_0]) continue;
                for (int na = 1; na <= TM__QNA; na++) {
                    float out[TM__QNA];
                    fams[fam]->rows[wt - TM_Q8_0](wq, aq, arow, na,
                                                  k / q->block, out);
                    for (int j = 0; j < na; j++) {
                        double exact;
                        double tol = dot_bound(wt, wd, xd + j * k,
                                               aq + arow * j, k, &exact);
                        float ref = tm__qdot_ref(wt, wq, aq + arow * j, k);
                        if (!(fabs(out[j] - ref) <= tol))
                            tt_fail(__FILE__, __LINE__, "%s %s k=%lld na=%d "
                                    "row %d: %.9g, reference %.9g (tol %.3g)",
                                    fams[fam]->name, q->name, (long long)k, na,
                                    j, out[j], ref, tol);
                        CHECK(fabs(ref - exact) <= tol);
                    }
                }
            }
            free(w); free(x); free(wd); free(xd); free(wq); free(aq);
        }
    }
}

/* The same bits for 1, 2 and 3 threads, forward and backward. */
TEST(qmatmul_results_do_not_depend_on_thread_count)
{
    tm_dtype fmts[2] = {TM_Q4_0, TM_Q6_K};
    for (int f = 0; f < 2; f++) {
        tm_dtype wt = fmts[f];
        int64_t m = 9, n = 37, k = 1024;
        size_t wrow = rowbytes(wt, k);
        float *w = malloc(sizeof(float) * (size_t)(n * k));
        float *x = malloc(sizeof(float) * (size_t)(m * k));
        float *dy = malloc(sizeof(float) * (size_t)(m * n));
        float *y[3], *dx[3];
        char *wq = malloc(wrow * (size_t)n);
        REQUIRE(w && x && dy && wq);
        fill(w, n * k, 0);
        for (int64_t i = 0; i < m * k; i++) x[i] = grand();
        for (int64_t i = 0; i < m * n; i++) dy[i] = grand();
        for (int64_t r = 0; r < n; r++)
            tm__quantize_row(wt, w + r * k, wq + wrow * r, k);
        tm_buf wb = qbuf(wq, 0, wt, n, k, k);
        for (int t = 0; t < 3; t++) {
            tm_set_num_threads(t + 1);
            y[t] = malloc(sizeof(float) * (size_t)(m * n));
            dx[t] = malloc(sizeof(float) * (size_t)(m * k));
            tm_buf yb = fbuf(y[t], m, n, n), xb = fbuf(x, m, k, k);
            tm_buf dxb = fbuf(dx[t], m, k, k), dyb = fbuf(dy, m, n, n);
            CHECK_INT(tm__cpu_qmatmul(NULL, &yb, &xb, &wb, false), TM_OK);
            CHECK_INT(tm__cpu_qmatmul_backward(NULL, &dxb, &dyb, &wb, false),
                      TM_OK);
        }
        tm_set_num_threads(0);
        for (int t = 1; t < 3; t++) {
            CHECK(memcmp(y[0], y[t], sizeof(float) * (size_t)(m * n)) == 0);
            CHECK(memcmp(dx[0], dx[t], sizeof(float) * (size_t)(m * k)) == 0);
        }
        for (int t = 0; t < 3; t++) {
            free(y[t]);
            free(dx[t]);
        }
        free(w); free(x); free(dy); free(wq);
    }
}

TEST(quantized_entries_reject_bad_buffers)
{
    float f[64 * 4] = {0};
    char q[4 * 34 * 2] = {0};
    tm_buf y = fbuf(f, 2, 2, 2), x = fbuf(f, 2, 64, 64);
    tm_buf w = qbuf(q, 0, TM_Q8_0, 2, 64, 64);
    CHECK_STATUS(tm__cpu_qmatmul(NULL, &y, &x, &w, false), TM_OK, "");
    tm_buf wk = qbuf(q, 0, TM_Q8_K, 2, 256, 256);
    tm_buf xk = fbuf(f, 1, 256, 256), yk = fbuf(f, 1, 2, 2);
    CHECK_STATUS(tm__cpu_qmatmul(NULL, &yk, &xk, &wk, false), TM_EDTYPE,
                 "q8_k");
    tm_buf wodd = qbuf(q, 0, TM_Q8_0, 2, 48, 48);
    tm_buf xodd = fbuf(f, 2, 48, 48);
    CHECK_STATUS(tm__cpu_qmatmul(NULL, &y, &xodd, &wodd, false), TM_ESHAPE,
                 "48");
    tm_buf xs = fbuf(f, 2, 32, 32);
    CHECK_STATUS(tm__cpu_qmatmul(NULL, &y, &xs, &w, false), TM_ESHAPE,
                 "does not fit");
    tm_buf x64 = x;
    x64.dtype = TM_F64;
    CHECK_STATUS(tm__cpu_qmatmul(NULL, &y, &x64, &w, false), TM_EDTYPE,
                 "f64");
    tm_buf wstr = qbuf(q, 0, TM_Q8_0, 2, 32, 40);
    tm_buf y1 = fbuf(f, 2, 2, 2), x1 = fbuf(f, 2, 32, 32);
    CHECK_STATUS(tm__cpu_qmatmul(NULL, &y1, &x1, &wstr, false), TM_ESHAPE,
                 "row stride 40");
    tm_buf dx = fbuf(f, 2, 32, 32), dy = fbuf(f, 2, 3, 3);
    tm_buf w2 = qbuf(q, 0, TM_Q8_0, 2, 32, 32);
    CHECK_STATUS(tm__cpu_qmatmul_backward(NULL, &dx, &dy, &w2, false),
                 TM_ESHAPE, "does not fit");
    tm_buf src = fbuf(f, 2, 40, 40), dst = qbuf(q, 0, TM_Q4_0, 2, 40, 40);
    CHECK_STATUS(tm__cpu_quantize(NULL, &dst, &src), TM_ESHAPE, "40");
    tm_buf src2 = fbuf(f, 2, 64, 64), dst2 = qbuf(q, 0, TM_Q4_0, 1, 64, 64);
    CHECK_STATUS(tm__cpu_quantize(NULL, &dst2, &src2), TM_ESHAPE, "differ");
}
