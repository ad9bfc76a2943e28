/* test_quant_front.c — tm_quantize / tm_dequantize / tm_quant_error_of and
 * the quantized paths of tm_linear, tm_matmul and tm_embedding, with
 * their autograd (dX only), against double-precision loops over the
 * dequantized weight.  (Byte compatibility with ggml is checked against
 * the gguf package in tests/python/test_quantize.py and by the formats'
 * own tests.) */
#include "harness.h"

#include "foundry/quantize.h"
#include "../../quantize/quant_impl.h"

#include <stdlib.h>

static const tm_dtype wfmt[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                TM_Q5_1, TM_Q4_K, TM_Q5_K, TM_Q6_K};
#define NW ((int)(sizeof wfmt / sizeof wfmt[0]))

/* The activation block of weight format w (Q8_0 / Q8_1: 32, Q8_K: 256). */
static int64_t act_block(tm_dtype w)
{
    return (w == TM_Q4_K || w == TM_Q5_K || w == TM_Q6_K) ? 256 : 32;
}

static const float *f32(const tm_tensor *t) { return tm_data(t); }

TEST(quant_quantize_errors)
{
    tm_tensor *x = tm_randn((int64_t[]){4, 64}, 2, TM_F32);
    tm_tensor *i = tm_zeros((int64_t[]){4, 64}, 2, TM_I32);
    tm_tensor *s = tm_scalar(1.0, TM_F32);
    tm_tensor *odd = tm_randn((int64_t[]){4, 48}, 2, TM_F32);
    REQUIRE(x && i && s && odd);
    CHECK_NULL_ERR(tm_quantize(x, TM_F16), TM_EDTYPE, "not a quantized");
    CHECK_NULL_ERR(tm_quantize(i, TM_Q8_0), TM_EDTYPE, "i32");
    CHECK_NULL_ERR(tm_quantize(s, TM_Q8_0), TM_EINVAL, "0-d");
    CHECK_NULL_ERR(tm_quantize(odd, TM_Q4_0), TM_ESHAPE, "48");
    CHECK_NULL_ERR(tm_quantize(x, TM_Q4_K), TM_ESHAPE, "256");
    CHECK_NULL_ERR(tm_quantize(NULL, TM_Q8_0), TM_EINVAL, "NULL");
    tm_tensor *bad = tm_clone(x);
    REQUIRE(bad);
    CHECK(tm_set(bad, (int64_t[]){2, 5}, INFINITY) == TM_OK);
    CHECK_NULL_ERR(tm_quantize(bad, TM_Q8_0), TM_EINVAL, "NaN");
    CHECK(tm_set(bad, (int64_t[]){2, 5}, NAN) == TM_OK);
    CHECK_NULL_ERR(tm_quantize(bad, TM_Q4_1), TM_EINVAL, "infinite");
    tm_tensor *q = tm_quantize(x, TM_Q8_0);
    REQUIRE(q);
    CHECK_NULL_ERR(tm_quantize(q, TM_Q4_0), TM_EDTYPE, "dequantize it first");
    CHECK_NULL_ERR(tm_dequantize(x, TM_F32), TM_EDTYPE, "not a quantized");
    CHECK_NULL_ERR(tm_dequantize(q, TM_I32), TM_EDTYPE, "float dtype");
    tm_free(q);
    tm_free(bad);
    tm_free(odd);
    tm_free(s);
    tm_free(i);
    tm_free(x);
}

/* tm_quantize's bytes are the reference quantizer's, row by row (the
 * backend entry is plumbing around it), for F32 / F16 and strided input;
 * tm_dequantize's values are the reference dequantizer's. */
TEST(quant_quantize_matches_rows)
{
    tm_manual_seed(7);
    enum { R = 3, N = 512 };
    const tm_dtype all[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0, TM_Q5_1,
                            TM_Q8_1, TM_Q4_K, TM_Q5_K, TM_Q6_K, TM_Q8_K};
    tm_tensor *x = tm_randn((int64_t[]){R, N}, 2, TM_F32);
    REQUIRE(x);
    float *deq = malloc(sizeof(float) * R * N);
    unsigned char *raw = malloc(R * 292 * 2);
    REQUIRE(deq && raw);
    for (int f = 0; f < 10; f++) {
        tm_dtype qt = all[f];
        tm_tensor *q = tm_quantize(x, qt);
        REQUIRE(q);
        CHECK(tm_dtype_of(q) == qt && tm_is_contiguous(q));
        CHECK_SHAPE(q, R, N);
        size_t rb = tm_quant_row_bytes(qt, N);
        CHECK_INT(tm_nbytes(q), R * rb);
        const tm__qtraits *tr = tm__qtraits_of(qt);
        REQUIRE(tr);
        for (int r = 0; r < R; r++) {
            tr->quantize_ref(f32(x) + r * N, raw + r * rb, N);
            tr->dequantize_ref(raw + r * rb, deq + r * N, N);
        }
        CHECK(memcmp(tm_data(q), raw, R * rb) == 0);
        /* and the raw-row API's, the converters' path */
        unsigned char *rows = malloc(R * rb);
        REQUIRE(rows);
        CHECK(tm_quantize_rows(qt, f32(x), rows, R, N) == TM_OK);
        CHECK(memcmp(rows, raw, R * rb) == 0);
        free(rows);
        tm_tensor *d = tm_dequantize(q, TM_F32);
        REQUIRE(d);
        CHECK(memcmp(tm_data(d), deq, sizeof(float) * R * N) == 0);
        /* F64 and F16 outputs are the F32 values converted */
        tm_tensor *d64 = tm_dequantize(q, TM_F64);
        tm_tensor *d16 = tm_dequantize(q, TM_F16);
        tm_tensor *c16 = tm_to_dtype(d, TM_F16);
        REQUIRE(d64 && d16 && c16);
        CHECK(tm_dtype_of(d64) == TM_F64);
        int bad = 0;
        for (int k = 0; k < R * N; k++)
            bad += ((const double *)tm_data(d64))[k] != (double)deq[k];
        CHECK_INT(bad, 0);
        CHECK(memcmp(tm_data(d16), tm_data(c16), 2 * R * N) == 0);
        tm_free(c16);
        tm_free(d16);
        tm_free(d64);
        tm_free(d);
        tm_free(q);
    }
    /* an F16 input is quantized from its F32 values */
    tm_tensor *h = tm_to_dtype(x, TM_F16);
    tm_tensor *hf = h ? tm_to_dtype(h, TM_F32) : NULL;
    tm_tensor *qh = h ? tm_quantize(h, TM_Q4_K) : NULL;
    tm_tensor *qhf = hf ? tm_quantize(hf, TM_Q4_K) : NULL;
    REQUIRE(qh && qhf);
    CHECK(memcmp(tm_data(qh), tm_data(qhf), tm_nbytes(qh)) == 0);
    /* a strided input is quantized from its values in order */
    tm_tensor *big = tm_randn((int64_t[]){N, R}, 2, TM_F32);
    tm_tensor *tr = big ? tm_transpose(big, 0, 1) : NULL;
    tm_tensor *trc = tr ? tm_contiguous(tr) : NULL;
    tm_tensor *q1 = tr ? tm_quantize(tr, TM_Q5_0) : NULL;
    tm_tensor *q2 = trc ? tm_quantize(trc, TM_Q5_0) : NULL;
    REQUIRE(q1 && q2);
    CHECK(memcmp(tm_data(q1), tm_data(q2), tm_nbytes(q1)) == 0);
    /* dequantizing a transposed view gives the transposed values */
    tm_tensor *qt = tm_transpose(q2, 0, 1);
    tm_tensor *dq = qt ? tm_dequantize(qt, TM_F32) : NULL;
    tm_tensor *dd = tm_dequantize(q2, TM_F32);
    REQUIRE(dq && dd);
    CHECK_SHAPE(dq, N, R);
    int bad = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < N; c++)
            bad += f32(dq)[c * R + r] != f32(dd)[r * N + c];
    CHECK_INT(bad, 0);
    tm_free(dd);
    tm_free(dq);
    tm_free(qt);
    tm_free(q2);
    tm_free(q1);
    tm_free(trc);
    tm_free(tr);
    tm_free(big);
    tm_free(qhf);
    tm_free(qh);
    tm_free(hf);
    tm_free(h);
    free(raw);
    free(deq);
    tm_free(x);
}

TEST(quant_error_of)
{
    tm_manual_seed(11);
    tm_tensor *x = tm_randn((int64_t[]){4, 256}, 2, TM_F32);
    tm_tensor *q = x ? tm_quantize(x, TM_Q4_0) : NULL;
    tm_tensor *d = q ? tm_dequantize(q, TM_F32) : NULL;
    REQUIRE(d);
    double se = 0, mx = 0, rs = 0;
    for (int k = 0; k < 1024; k++) {
        double e = (double)f32(x)[k] - (double)f32(d)[k];
        se += e * e;
        mx = fabs(e) > mx ? fabs(e) : mx;
        rs += (double)f32(x)[k] * f32(x)[k];
    }
    tm_quant_error qe;
    REQUIRE(tm_quant_error_of(x, q, &qe) == TM_OK);
    CHECK_INT(qe.count, 1024);
    /* F64 sums of the same terms in another order: 1e-12 relative */
    CHECK_NEAR(qe.rmse, sqrt(se / 1024), 1e-12 * sqrt(se / 1024));
    CHECK_NEAR(qe.max_abs, mx, 0);
    CHECK_NEAR(qe.ref_rms, sqrt(rs / 1024), 1e-12 * sqrt(rs / 1024));
    /* Q4_0's rounding error is at most half a step, d = amax / 8 */
    CHECK(qe.max_abs > 0 && qe.rmse < qe.ref_rms / 4);
    tm_quant_error same;
    REQUIRE(tm_quant_error_of(x, d, &same) == TM_OK);
    CHECK_NEAR(same.rmse, qe.rmse, 1e-12 * qe.rmse);
    tm_tensor *y = tm_randn((int64_t[]){4, 128}, 2, TM_F32);
    CHECK_STATUS(tm_quant_error_of(y, q, &qe), TM_ESHAPE, "differ");
    CHECK_STATUS(tm_quant_error_of(q, q, &qe), TM_EDTYPE, "ref");
    CHECK_STATUS(tm_quant_error_of(x, q, NULL), TM_EINVAL, "out");
    tm_free(y);
    tm_free(d);
    tm_free(q);
    tm_free(x);
}

/* The bound on |y - x·wdᵀ| from quantizing x's rows to the activation
 * type: per value |x - x'| <= d (1/2 + 127 * 2^-11) with d = amax / 127
 * of its block (the rounding, plus the scale stored as a half for Q8_0 /
 * Q8_1), so per output sum over blocks of that times sum |wd| over the
 * block; plus F32 summation, 1e-5 relative to sum |wd x|. */
static double fwd_tol(const float *x, const float *wd, int64_t in,
                      int64_t ab)
{
    double t = 0, mag = 0;
    for (int64_t b0 = 0; b0 < in; b0 += ab) {
        double amax = 0, sw = 0;
        for (int64_t i = b0; i < b0 + ab; i++) {
            amax = fabs(x[i]) > amax ? fabs(x[i]) : amax;
            sw += fabs(wd[i]);
            mag += fabs(wd[i] * x[i]);
        }
        t += amax / 127 * (0.5 + 127.0 / 2048) * sw;
    }
    return t + 1e-5 * mag + 1e-6;
}

TEST(quant_linear_forward_backward_every_format)
{
    tm_manual_seed(3);
    enum { R = 3, IN = 512, OUT = 9 };
    for (int f = 0; f < NW; f++) {
        tm_dtype qt = wfmt[f];
        tm_tensor *w = tm_randn((int64_t[]){OUT, IN}, 2, TM_F32);
        tm_tensor *x = tm_randn((int64_t[]){R, IN}, 2, TM_F32);
        tm_tensor *b = tm_randn((int64_t[]){OUT}, 1, TM_F32);
        tm_tensor *gy = tm_randn((int64_t[]){R, OUT}, 2, TM_F32);
        REQUIRE(w && x && b && gy);
        tm_tensor *wq = tm_quantize(w, qt);
        tm_tensor *wd = wq ? tm_dequantize(wq, TM_F32) : NULL;
        REQUIRE(wd);
        CHECK(tm_requires_grad_(x, true) == TM_OK);
        CHECK(tm_requires_grad_(b, true) == TM_OK);
        tm_tensor *y = tm_linear(x, wq, b);
        REQUIRE(y);
        CHECK_SHAPE(y, R, OUT);
        CHECK(tm_dtype_of(y) == TM_F32);
        CHECK(strcmp(tm_grad_fn_name(y), "QLinearBackward") == 0);
        int bad = 0;
        for (int r = 0; r < R; r++)
            for (int o = 0; o < OUT; o++) {
                double ref = f32(b)[o];
                for (int i = 0; i < IN; i++)
                    ref += (double)f32(wd)[o * IN + i] * f32(x)[r * IN + i];
                double tol = fwd_tol(f32(x) + r * IN, f32(wd) + o * IN, IN,
                                     act_block(qt));
                if (fabs(f32(y)[r * OUT + o] - ref) > tol) bad++;
            }
        if (bad) tt_fail(__FILE__, __LINE__, "%s: %d outputs off",
                         tm_dtype_name(qt), bad);
        REQUIRE(tm_backward_ex(y, gy, false) == TM_OK);
        const tm_tensor *gx = tm_grad(x), *gb = tm_grad(b);
        REQUIRE(gx && gb);
        /* dx = gy · wd exactly up to F32 summation order over OUT terms */
        bad = 0;
        for (int r = 0; r < R; r++)
            for (int i = 0; i < IN; i++) {
                double ref = 0, mag = 0;
                for (int o = 0; o < OUT; o++) {
                    double t = (double)f32(gy)[r * OUT + o] *
                               f32(wd)[o * IN + i];
                    ref += t;
                    mag += fabs(t);
                }
                if (fabs(f32(gx)[r * IN + i] - ref) > 1e-6 * mag + 1e-30)
                    bad++;
            }
        if (bad) tt_fail(__FILE__, __LINE__, "%s: %d dx values off",
                         tm_dtype_name(qt), bad);
        for (int o = 0; o < OUT; o++) {
            double ref = 0;
            for (int r = 0; r < R; r++) ref += f32(gy)[r * OUT + o];
            CHECK_NEAR(f32(gb)[o], ref, 1e-6);
        }
        /* the dequantize-then-F32 linear's dx: the same products */
        tm_tensor *x2 = tm_detach(x);
        CHECK(x2 && tm_requires_grad_(x2, true) == TM_OK);
        tm_tensor *y2 = tm_linear(x2, wd, NULL);
        REQUIRE(y2 && tm_backward_ex(y2, gy, false) == TM_OK);
        const tm_tensor *gx2 = tm_grad(x2);
        REQUIRE(gx2);
        bad = 0;
        for (int k = 0; k < R * IN; k++) {
            double mag = 0;
            for (int o = 0; o < OUT; o++)
                mag += fabs((double)f32(gy)[(k / IN) * OUT + o] *
                            f32(wd)[o * IN + k % IN]);
            if (fabs(f32(gx)[k] - f32(gx2)[k]) > 2e-6 * mag + 1e-30) bad++;
        }
        CHECK_INT(bad, 0);
        tm_free(y2);
        tm_free(x2);
        tm_free(y);
        tm_free(wd);
        tm_free(wq);
        tm_free(gy);
        tm_free(b);
        tm_free(x);
        tm_free(w);
    }
}

TEST(quant_linear_dtypes_and_shapes)
{
    tm_manual_seed(5);
    tm_tensor *w = tm_randn((int64_t[]){6, 64}, 2, TM_F32);
    tm_tensor *wq = w ? tm_quantize(w, TM_Q8_0) : NULL;
    tm_tensor *x = tm_randn((int64_t[]){2, 3, 64}, 3, TM_F32);
    REQUIRE(wq && x);
    tm_tensor *y = tm_linear(x, wq, NULL);
    REQUIRE(y);
    CHECK_SHAPE(y, 2, 3, 6);
    /* each row alone gives the same bits: rows are independent */
    tm_tensor *xa = tm_select(x, 0, 1);
    tm_tensor *xr = xa ? tm_select(xa, 0, 2) : NULL;
    tm_tensor *y1 = xr ? tm_linear(xr, wq, NULL) : NULL;
    REQUIRE(y1);
    CHECK_SHAPE(y1, 6);
    CHECK(memcmp(tm_data(y1), f32(y) + 5 * 6, 6 * sizeof(float)) == 0);
    /* F16 / BF16 / F64 x: computed from x's F32 values, returned in x's
     * dtype; an F32 bias works with any of them */
    const tm_dtype dts[] = {TM_F16, TM_BF16, TM_F64};
    tm_tensor *b = tm_randn((int64_t[]){6}, 1, TM_F32);
    for (int k = 0; k < 3; k++) {
        tm_tensor *xh = tm_to_dtype(x, dts[k]);
        tm_tensor *xf = xh ? tm_to_dtype(xh, TM_F32) : NULL;
        tm_tensor *yh = xh ? tm_linear(xh, wq, b) : NULL;
        tm_tensor *yf = xf ? tm_linear(xf, wq, b) : NULL;
        tm_tensor *yfc = yf ? tm_to_dtype(yf, dts[k]) : NULL;
        REQUIRE(yh && yfc);
        CHECK(tm_dtype_of(yh) == dts[k]);
        CHECK(memcmp(tm_data(yh), tm_data(yfc), tm_nbytes(yh)) == 0);
        tm_tensor *bh = tm_to_dtype(b, dts[k]);
        tm_tensor *yb = bh ? tm_linear(xh, wq, bh) : NULL;
        CHECK(yb && tm_dtype_of(yb) == dts[k]);
        tm_free(yb);
        tm_free(bh);
        tm_free(yfc);
        tm_free(yf);
        tm_free(yh);
        tm_free(xf);
        tm_free(xh);
    }
    /* gradients come back in x's dtype: an F64 x's dx is the F32 x's dx
     * (computed in F32) converted, and a 1-D x gets a 1-D dx */
    tm_tensor *x64 = tm_to_dtype(x, TM_F64);
    tm_tensor *x32 = tm_clone(x);
    REQUIRE(x64 && x32);
    CHECK(tm_requires_grad_(x64, true) == TM_OK);
    CHECK(tm_requires_grad_(x32, true) == TM_OK);
    tm_tensor *l64 = tm_linear(x64, wq, NULL);
    tm_tensor *s64 = l64 ? tm_sum(l64, NULL, 0, false) : NULL;
    tm_tensor *l32 = tm_linear(x32, wq, NULL);
    tm_tensor *s32 = l32 ? tm_sum(l32, NULL, 0, false) : NULL;
    REQUIRE(s64 && s32);
    CHECK(tm_backward(s64) == TM_OK && tm_backward(s32) == TM_OK);
    tm_tensor *g64 = tm_grad(x64), *g32 = tm_grad(x32);
    REQUIRE(g64 && g32);
    CHECK(tm_dtype_of(g64) == TM_F64);
    tm_tensor *g32d = tm_to_dtype(g32, TM_F64);
    CHECK(g32d && memcmp(tm_data(g32d), tm_data(g64), tm_nbytes(g64)) == 0);
    tm_free(g32d);
    tm_tensor *v1 = tm_randn((int64_t[]){64}, 1, TM_F32);
    CHECK(v1 && tm_requires_grad_(v1, true) == TM_OK);
    tm_tensor *yv = v1 ? tm_linear(v1, wq, NULL) : NULL;
    tm_tensor *sv = yv ? tm_sum(yv, NULL, 0, false) : NULL;
    REQUIRE(sv && tm_backward(sv) == TM_OK);
    CHECK(tm_grad(v1) && tm_ndim(tm_grad(v1)) == 1);
    tm_free(sv);
    tm_free(yv);
    tm_free(v1);
    tm_free(s32);
    tm_free(l32);
    tm_free(s64);
    tm_free(l64);
    tm_free(x32);
    tm_free(x64);
    tm_tensor *xw = tm_randn((int64_t[]){2, 32}, 2, TM_F32);
    CHECK_NULL_ERR(tm_linear(xw, wq, NULL), TM_ESHAPE, "64 input features");
    tm_tensor *xi = tm_zeros((int64_t[]){2, 64}, 2, TM_I32);
    CHECK_NULL_ERR(tm_linear(xi, wq, NULL), TM_EDTYPE, "float");
    tm_tensor *b7 = tm_zeros((int64_t[]){7}, 1, TM_F32);
    CHECK_NULL_ERR(tm_linear(x, wq, b7), TM_ESHAPE, "expected [6]");
    tm_tensor *bi = tm_zeros((int64_t[]){6}, 1, TM_F16);
    CHECK_NULL_ERR(tm_linear(x, wq, bi), TM_EDTYPE, "bias");
    CHECK_NULL_ERR(tm_linear(wq, wq, NULL), TM_EDTYPE, "dequantize");
    tm_tensor *a8 = tm_quantize(w, TM_Q8_1);
    CHECK_NULL_ERR(tm_linear(x, a8, NULL), TM_EDTYPE, "activation format");
    tm_tensor *wt = tm_transpose(wq, 0, 1);
    CHECK_NULL_ERR(tm_linear(x, wt, NULL), TM_ESHAPE, "blocks along in");
    /* a quantized weight never requires grad, and nothing needs it */
    CHECK_STATUS(tm_requires_grad_(wq, true), TM_EDTYPE, "frozen");
    tm_free(wt);
    tm_free(a8);
    tm_free(bi);
    tm_free(b7);
    tm_free(xi);
    tm_free(xw);
    tm_free(b);
    tm_free(y1);
    tm_free(xr);
    tm_free(xa);
    tm_free(y);
    tm_free(x);
    tm_free(wq);
    tm_free(w);
}

TEST(quant_matmul_forms)
{
    tm_manual_seed(9);
    enum { K = 256, M = 5, N = 3 };
    tm_tensor *w = tm_randn((int64_t[]){M, K}, 2, TM_F32);
    tm_tensor *wq = w ? tm_quantize(w, TM_Q4_K) : NULL;
    tm_tensor *wt = wq ? tm_transpose(wq, 0, 1) : NULL;
    tm_tensor *x = tm_randn((int64_t[]){N, K}, 2, TM_F32);
    REQUIRE(wt && x);
    tm_tensor *y = tm_linear(x, wq, NULL);
    /* x · Wᵀ */
    tm_tensor *m1 = tm_matmul(x, wt);
    REQUIRE(y && m1);
    CHECK_SHAPE(m1, N, M);
    CHECK(memcmp(tm_data(m1), tm_data(y), tm_nbytes(y)) == 0);
    /* W · v and v · Wᵀ (v 1-D), and W · X (X [K, N]) */
    tm_tensor *v = tm_select(x, 0, 1);
    tm_tensor *mv = v ? tm_matmul(wq, v) : NULL;
    tm_tensor *vm = v ? tm_matmul(v, wt) : NULL;
    REQUIRE(mv && vm);
    CHECK_SHAPE(mv, M);
    CHECK_SHAPE(vm, M);
    CHECK(memcmp(tm_data(mv), f32(y) + M, M * sizeof(float)) == 0);
    CHECK(memcmp(tm_data(vm), f32(y) + M, M * sizeof(float)) == 0);
    tm_free(vm);
    tm_tensor *xtv = tm_transpose(x, 0, 1);
    tm_tensor *xt = xtv ? tm_contiguous(xtv) : NULL;
    tm_free(xtv);
    REQUIRE(xt);
    tm_tensor *mm = tm_matmul(wq, xt);
    REQUIRE(mm);
    CHECK_SHAPE(mm, M, N);
    tm_tensor *mmc = tm_contiguous(mm);
    int bad = 0;
    for (int r = 0; r < N; r++)
        for (int o = 0; o < M; o++)
            bad += f32(mmc)[o * N + r] != f32(y)[r * M + o];
    CHECK_INT(bad, 0);
    /* batched X [2, K, N] */
    tm_tensor *xb = tm_stack((tm_tensor *[]){xt, xt}, 2, 0);
    tm_tensor *mb = xb ? tm_matmul(wq, xb) : NULL;
    REQUIRE(mb);
    CHECK_SHAPE(mb, 2, M, N);
    /* gradient to X through W · X */
    tm_tensor *xg = tm_detach(xt);
    CHECK(tm_requires_grad_(xg, true) == TM_OK);
    tm_tensor *mg = tm_matmul(wq, xg);
    tm_tensor *s = mg ? tm_sum(mg, NULL, 0, false) : NULL;
    REQUIRE(s && tm_backward(s) == TM_OK);
    tm_tensor *wd = tm_dequantize(wq, TM_F32);
    const tm_tensor *g = tm_grad(xg);
    REQUIRE(g && wd);
    bad = 0;
    for (int i = 0; i < K; i++) {
        double ref = 0, mag = 0;
        for (int o = 0; o < M; o++) {
            ref += f32(wd)[o * K + i];
            mag += fabs(f32(wd)[o * K + i]);
        }
        for (int c = 0; c < N; c++)
            bad += fabs(f32(g)[i * N + c] - ref) > 1e-6 * mag + 1e-30;
    }
    CHECK_INT(bad, 0);
    CHECK_NULL_ERR(tm_matmul(x, wq), TM_ESHAPE, "tm_transpose(wq, 0, 1)");
    CHECK_NULL_ERR(tm_matmul(wq, wt), TM_EDTYPE, "both operands");
    tm_tensor *w3 = tm_unsqueeze(wq, 0);
    CHECK_NULL_ERR(tm_matmul(w3, xt), TM_ESHAPE, "2-D");
    tm_free(w3);
    tm_free(wd);
    tm_free(s);
    tm_free(mg);
    tm_free(xg);
    tm_free(mb);
    tm_free(xb);
    tm_free(mmc);
    tm_free(mm);
    tm_free(xt);
    tm_free(mv);
    tm_free(v);
    tm_free(m1);
    tm_free(y);
    tm_free(x);
    tm_free(wt);
    tm_free(wq);
    tm_free(w);
}

/* Backward through a quantized W never makes an F32 copy of it: the peak
 * allocation during backward stays far below W's F32 bytes (16 MiB). */
TEST(quant_backward_has_no_f32_copy_of_w)
{
    enum { OUT = 1024, IN = 4096 };
    tm_manual_seed(13);
    tm_tensor *w = tm_randn((int64_t[]){OUT, IN}, 2, TM_F32);
    tm_tensor *wq = w ? tm_quantize(w, TM_Q8_0) : NULL;
    tm_free(w);
    tm_tensor *x = tm_randn((int64_t[]){2, IN}, 2, TM_F32);
    REQUIRE(wq && x);
    CHECK(tm_requires_grad_(x, true) == TM_OK);
    tm_tensor *y = tm_linear(x, wq, NULL);
    tm_tensor *s = y ? tm_sum(y, NULL, 0, false) : NULL;
    REQUIRE(s);
    tm_mem_stats before, after;
    tm_memory_stats(&before);
    tm_memory_reset_peak();
    REQUIRE(tm_backward(s) == TM_OK);
    tm_memory_stats(&after);
    size_t f32_w = (size_t)OUT * IN * sizeof(float);
    size_t extra = after.peak_bytes - before.current_bytes;
    if (extra >= f32_w / 4)
        tt_fail(__FILE__, __LINE__, "backward peaked %zu bytes above its "
                "start (W in F32 is %zu)", extra, f32_w);
    CHECK(tm_grad(x) != NULL);
    tm_free(s);
    tm_free(y);
    tm_free(x);
    tm_free(wq);
}

TEST(quant_embedding)
{
    tm_manual_seed(17);
    enum { V = 10, D = 64 };
    tm_tensor *w = tm_randn((int64_t[]){V, D}, 2, TM_F32);
    tm_tensor *wq = w ? tm_quantize(w, TM_Q5_1) : NULL;
    tm_tensor *wd = wq ? tm_dequantize(wq, TM_F32) : NULL;
    int64_t iv[6] = {3, 0, 9, 3, 7, 1};
    tm_tensor *idx = tm_from_buffer(iv, (int64_t[]){2, 3}, 2, TM_I64);
    REQUIRE(wd && idx);
    tm_tensor *e = tm_embedding(wq, idx);
    REQUIRE(e);
    CHECK_SHAPE(e, 2, 3, D);
    CHECK(tm_dtype_of(e) == TM_F32);
    int bad = 0;
    for (int k = 0; k < 6; k++)
        bad += memcmp(f32(e) + k * D, f32(wd) + iv[k] * D,
                      D * sizeof(float)) != 0;
    CHECK_INT(bad, 0);
    CHECK(tm_grad_fn_name(e) == NULL);
    int64_t bv[2] = {2, 10};
    tm_tensor *bi = tm_from_buffer(bv, (int64_t[]){2}, 1, TM_I64);
    CHECK_NULL_ERR(tm_embedding(wq, bi), TM_ERANGE, "10");
    tm_free(bi);
    tm_free(e);
    tm_free(idx);
    tm_free(wd);
    tm_free(wq);
    tm_free(w);
}
