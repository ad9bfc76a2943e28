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
        /* whole groups of 8 rows (the wide kernels) and a remainder */
        check_qmatmul(wfmts[f], 8, 3, 2 * blk, false, 0);
        check_qmatmul(wfmts[f], 19, 5, 3 * blk, true, 0);
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

static bool has_family(const char *name)
{
    const tm__qkern *fams[TM__QKERN_MAX];
    int n = tm__qkern_families(fams);
    for (int i = 0; i < n; i++)
        if (!strcmp(fams[i]->name, name)) return true;
    return false;
}

/* The families the kernel test above runs are every one this CPU has,
 * and the backend picks the best (VNNI / dotprod only while switched on). */
TEST(qdot_families_cover_this_cpu)
{
    CHECK(has_family("portable"));
    if (tm__isa_supported(TM__ISA_AVX2)) CHECK(has_family("avx2"));
    if (tm__cpu_has_vnni()) CHECK(has_family("avx512vnni"));
    if (tm__isa_supported(TM__ISA_NEON)) CHECK(has_family("neon"));
    if (tm__cpu_has_dotprod()) CHECK(has_family("neondot"));
    tm__isa saved = tm__cpu_isa();
    if (tm__set_isa(TM__ISA_AVX512) && tm__cpu_has_vnni())
        CHECK(!strcmp(tm__qkern_current()->name, "avx512vnni"));
    tm__cpu_set_dot_ext(false);
    CHECK(!tm__cpu_has_vnni() && !tm__cpu_has_dotprod());
    if (tm__set_isa(TM__ISA_AVX512))
        CHECK(!strcmp(tm__qkern_current()->name, "avx2"));
    if (tm__set_isa(TM__ISA_NEON))
        CHECK(!strcmp(tm__qkern_current()->name, "neon"));
    tm__cpu_set_dot_ext(true);
    if (tm__set_isa(TM__ISA_PORTABLE))
        CHECK(!strcmp(tm__qkern_current()->name, "portable"));
    tm__set_isa(saved);
}

/* The backward's vector sums take the portable loop's operations in its
 * order (no FMA): the same bits on every family. */
TEST(qmatmul_backward_same_bits_on_every_family)
{
    int64_t m = 5, n = 11, k = 512;
    size_t wrow = rowbytes(TM_Q5_K, k);
    float *w = malloc(sizeof(float) * (size_t)(n * k));
    float *dy = malloc(sizeof(float) * (size_t)(m * n));
    float *dx0 = malloc(sizeof(float) * (size_t)(m * k));
    float *dx1 = malloc(sizeof(float) * (size_t)(m * k));
    char *wq = malloc(wrow * (size_t)n);
    REQUIRE(w && dy && dx0 && dx1 && wq);
    fill(w, n * k, 0);
    for (int64_t i = 0; i < m * n; i++) dy[i] = grand();
    for (int64_t r = 0; r < n; r++)
        tm__quantize_row(TM_Q5_K, w + r * k, wq + wrow * r, k);
    tm_buf wb = qbuf(wq, 0, TM_Q5_K, n, k, k), dyb = fbuf(dy, m, n, n);
    tm_buf d0 = fbuf(dx0, m, k, k), d1 = fbuf(dx1, m, k, k);
    tm__isa saved = tm__cpu_isa();
    tm__set_isa(TM__ISA_PORTABLE);
    CHECK_INT(tm__cpu_qmatmul_backward(NULL, &d0, &dyb, &wb, false), TM_OK);
    for (int isa = 1; isa < TM__ISA_COUNT; isa++) {
        if (!tm__set_isa((tm__isa)isa)) continue;
        memset(dx1, 0xff, sizeof(float) * (size_t)(m * k));
        CHECK_INT(tm__cpu_qmatmul_backward(NULL, &d1, &dyb, &wb, false),
                  TM_OK);
        CHECK(memcmp(dx0, dx1, sizeof(float) * (size_t)(m * k)) == 0);
    }
    tm__set_isa(saved);
    free(w); free(dy); free(dx0); free(dx1); free(wq);
}

/* The activation quantizers tm__quantize_row uses (SIMD where the family
 * has one) give the reference's bytes on every family: random rows,
 * values landing exactly on .5 after scaling (the rounding mode), zero
 * blocks, ties of |max| with both signs, and non-finite values. */
TEST(activation_quantizers_byte_identical_every_family)
{
    static const tm_dtype acts[] = {TM_Q8_0, TM_Q8_1, TM_Q8_K};
    int64_t n = 1024;
    float *x = malloc(sizeof(float) * (size_t)n);
    char *got = malloc(292 * 4), *want = malloc(292 * 4);
    REQUIRE(x && got && want);
    tm__isa saved = tm__cpu_isa();
    for (int kind = 0; kind < 6; kind++) {
        for (int64_t i = 0; i < n; i++) {
            switch (kind) {
            case 0: x[i] = grand() * 3.0f; break;
            /* max 127 -> d = 1: the others land on halves */
            case 1: x[i] = i % 32 == 0 ? 127.0f
                                       : (float)(i % 255 - 127) + 0.5f; break;
            case 2: x[i] = i < 512 ? 0.0f : grand(); break;
            case 3: x[i] = i % 7 == 0 ? (i % 2 ? -2.0f : 2.0f) : grand(); break;
            case 4: x[i] = i == 40 ? NAN : i == 300 ? INFINITY : grand(); break;
            default: x[i] = (float)(i % 17) * 1e-30f; break;
            }
        }
        for (int a = 0; a < 3; a++) {
            tm_dtype at = acts[a];
            size_t rb = rowbytes(at, n);
            tm__qtraits_of(at)->quantize_ref(x, want, n);
            for (int isa = 0; isa < TM__ISA_COUNT; isa++) {
                if (!tm__set_isa((tm__isa)isa)) continue;
                memset(got, 0x5a, rb);
                tm__quantize_row(at, x, got, n);
                if (memcmp(got, want, rb) != 0)
                    tt_fail(__FILE__, __LINE__, "%s on %s, data kind %d: "
                            "bytes differ from the reference",
                            tm__qtraits_of(at)->name,
                            tm__isa_name((tm__isa)isa), kind);
            }
        }
    }
    tm__set_isa(saved);
    free(x); free(got); free(want);
}

/* Acceptance 5 at the kernel level: the backward allocates nothing from
 * the library allocator (no F32 copy of w, no n x k floats: its buffers
 * are on the stack), and the forward only its one activation scratch
 * (m rows of the activation type, here far below an F32 w). */
TEST(qmatmul_peak_memory_has_no_f32_weight_copy)
{
    int64_t m = 2, n = 256, k = 1024;
    size_t wrow = rowbytes(TM_Q4_K, k), arow = rowbytes(TM_Q8_K, k);
    float *w = malloc(sizeof(float) * (size_t)(n * k));
    float *x = malloc(sizeof(float) * (size_t)(m * k));
    float *y = malloc(sizeof(float) * (size_t)(m * n));
    char *wq = malloc(wrow * (size_t)n);
    REQUIRE(w && x && y && wq);
    fill(w, n * k, 0);
    for (int64_t i = 0; i < m * k; i++) x[i] = grand();
    for (int64_t r = 0; r < n; r++)
        tm__quantize_row(TM_Q4_K, w + r * k, wq + wrow * r, k);
    tm_buf wb = qbuf(wq, 0, TM_Q4_K, n, k, k), xb = fbuf(x, m, k, k);
    tm_buf yb = fbuf(y, m, n, n);
    tm_mem_stats s0, s1;
    tm_memory_stats(&s0);
    tm_memory_reset_peak();
    CHECK_INT(tm__cpu_qmatmul_backward(NULL, &xb, &yb, &wb, false), TM_OK);
    tm_memory_stats(&s1);
    CHECK(s1.peak_bytes == s0.current_bytes);
    tm_memory_reset_peak();
    CHECK_INT(tm__cpu_qmatmul(NULL, &yb, &xb, &wb, false), TM_OK);
    tm_memory_stats(&s1);
    /* one scratch of m activation rows, rounded up to a size class */
    CHECK(s1.peak_bytes - s0.current_bytes <= 2 * arow * (size_t)m + 4096);
    CHECK(s1.peak_bytes - s0.current_bytes < sizeof(float) * (size_t)(n * k) / 8);
    free(w); free(x); free(y); free(wq);
}

/* The wide kernels (8 activation rows, F32 scales passed in) of every
 * family against tm__qdot_ref, with the same bound. */
TEST(qdot_wide_kernels_match_reference_every_family)
{
    const tm__qkern *fams[2 * TM__QKERN_MAX];
    int nfam = tm__qkern_families(fams);
    tm__cpu_set_dot_ext(false);
    nfam += tm__qkern_families(fams + nfam);
    tm__cpu_set_dot_ext(true);
    int tested = 0;
    for (int f = 0; f < NFMT; f++) {
        tm_dtype wt = wfmts[f];
        const tm__qtraits *q = tm__qtraits_of(wt);
        int64_t k = 37 * q->block, nb = 37;
        size_t wrow = rowbytes(wt, k), arow = rowbytes(q->act, k);
        float *w = malloc(sizeof(float) * (size_t)k);
        float *x = malloc(sizeof(float) * (size_t)(k * TM__QNA8));
        float *wd = malloc(sizeof(float) * (size_t)k);
        float *xd = malloc(sizeof(float) * (size_t)(k * TM__QNA8));
        float *da = malloc(sizeof(float) * (size_t)(nb * TM__QNA8));
        float *sa = malloc(sizeof(float) * (size_t)(nb * TM__QNA8));
        char *wq = malloc(wrow), *aq = malloc(arow * TM__QNA8);
        REQUIRE(w && x && wd && xd && da && sa && wq && aq);
        fill(w, k, 0);
        for (int64_t i = 0; i < k * TM__QNA8; i++) x[i] = grand();
        tm__quantize_row(wt, w, wq, k);
        tm__dequantize_row(wt, wq, wd, k);
        for (int j = 0; j < TM__QNA8; j++) {
            tm__quantize_row(q->act, x + j * k, aq + arow * j, k);
            tm__dequantize_row(q->act, aq + arow * j, xd + j * k, k);
            for (int64_t b = 0; b < nb; b++) {
                const char *blk = aq + arow * j + (size_t)b * tm__qtraits_of(q->act)->bytes;
                uint16_t h[2];
                memcpy(h, blk, sizeof h);
                da[b * TM__QNA8 + j] = tm__half_to_f32(h[0]);
                sa[b * TM__QNA8 + j] = tm__half_to_f32(h[1]);
            }
        }
        for (int fam = 0; fam < nfam; fam++) {
            tm__qrows8_fn f8 = fams[fam]->rows8[wt - TM_Q8_0];
            if (!f8) continue;
            tested++;
            float out[TM__QNA8];
            f8(wq, aq, arow, nb, da, q->act == TM_Q8_1 ? sa : NULL, out);
            for (int j = 0; j < TM__QNA8; j++) {
                double exact;
                double tol = dot_bound(wt, wd, xd + j * k, aq + arow * j, k,
                                       &exact);
                float ref = tm__qdot_ref(wt, wq, aq + arow * j, k);
                if (!(fabs(out[j] - ref) <= tol))
                    tt_fail(__FILE__, __LINE__, "%s %s wide row %d: %.9g, "
                            "reference %.9g (tol %.3g)", fams[fam]->name,
                            q->name, j, out[j], ref, tol);
            }
        }
        free(w); free(x); free(wd); free(xd); free(da); free(sa); free(wq);
        free(aq);
    }
    /* x86 families with AVX2 have them for the five 32-value formats */
    if (tm__isa_supported(TM__ISA_AVX2)) CHECK(tested >= 5);
}
