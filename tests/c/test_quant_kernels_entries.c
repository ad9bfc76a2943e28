/* The CPU's quantized entries (cpu/quant/): quantize / dequantize row
 * loops over strided buffers, qmatmul against a double-precision loop
 * over the dequantized weight and the dequantized quantized activations,
 * qmatmul_backward against a double loop over the dequantized weight,
 * thread-count independence, memory, empty shapes and the errors.
 * Tolerances: quant_kernels_util.h. */
#include "quant_kernels_util.h"

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

/* Empty shapes: nothing read, y / dx zeroed when k / n is 0 (a sum of no
 * terms), left alone when accumulating or when there is nothing to write. */
TEST(quantized_entries_empty_shapes)
{
    float y[6] = {1, 2, 3, 4, 5, 6}, dx[64];
    char q[34] = {0};
    tm_buf yb = fbuf(y, 2, 3, 3), x0 = fbuf(y, 2, 0, 1);
    tm_buf w0 = qbuf(q, 0, TM_Q8_0, 3, 0, 0);
    CHECK_INT(tm__cpu_qmatmul(NULL, &yb, &x0, &w0, true), TM_OK);
    CHECK(y[0] == 1 && y[5] == 6);
    CHECK_INT(tm__cpu_qmatmul(NULL, &yb, &x0, &w0, false), TM_OK);
    for (int i = 0; i < 6; i++) CHECK(y[i] == 0.0f);
    tm_buf ye = fbuf(y, 0, 3, 3), xe = fbuf(dx, 0, 32, 32);
    tm_buf w1 = qbuf(q, 0, TM_Q8_0, 3, 32, 32);
    CHECK_INT(tm__cpu_qmatmul(NULL, &ye, &xe, &w1, false), TM_OK);
    for (int i = 0; i < 64; i++) dx[i] = 7.0f;
    tm_buf dxb = fbuf(dx, 2, 32, 32), dy0 = fbuf(y, 2, 0, 1);
    tm_buf wn = qbuf(q, 0, TM_Q8_0, 0, 32, 32);
    CHECK_INT(tm__cpu_qmatmul_backward(NULL, &dxb, &dy0, &wn, true), TM_OK);
    CHECK(dx[0] == 7.0f && dx[63] == 7.0f);
    CHECK_INT(tm__cpu_qmatmul_backward(NULL, &dxb, &dy0, &wn, false), TM_OK);
    for (int i = 0; i < 64; i++) CHECK(dx[i] == 0.0f);
    tm_buf qe = qbuf(q, 0, TM_Q4_K, 0, 256, 256), fe = fbuf(dx, 0, 256, 256);
    CHECK_INT(tm__cpu_quantize(NULL, &qe, &fe), TM_OK);
}

