/*
 * test_conf_quant.c — quantized tensors on the test devices against the
 * CPU: transfers of quantized tensors, tm_quantize / tm_dequantize (the
 * `quantize` entry), tm_linear forward and backward (`qmatmul`,
 * `qmatmul_backward`), tm_matmul(W, X) and tm_embedding with a quantized
 * weight, all equal to the CPU's bit for bit, on test:0 and on test:1
 * (which declines dtypes other than F32 / I64 where staging applies), and
 * the devices' memory back where it was afterwards.
 */
#include "../c/harness.h"
#include "testdev.h"

#include "foundry/quantize.h"

static const tm_dtype qfmt[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                TM_Q5_1, TM_Q4_K, TM_Q5_K, TM_Q6_K,
                                TM_Q8_1, TM_Q8_K};
#define NQ ((int)(sizeof qfmt / sizeof qfmt[0]))
#define NWEIGHT 8 /* the first 8 are weight formats */

/* a (on any device) holds the same bytes as the CPU tensor b. */
static bool same_bytes(const tm_tensor *a, const tm_tensor *b)
{
    tm_tensor *h = tm_to(a, TM_CPU);
    bool ok = h && b && tm_dtype_of(h) == tm_dtype_of(b) &&
              tm_nbytes(h) == tm_nbytes(b) && tm_is_contiguous(h) &&
              tm_is_contiguous(b) &&
              memcmp(tm_data(h), tm_data(b), tm_nbytes(b)) == 0;
    tm_free(h);
    return ok;
}

static void check_device(tm_device dev)
{
    enum { R = 3, IN = 512, OUT = 7 };
    tm_manual_seed(21);
    tm_tensor *x = tm_randn((int64_t[]){R, IN}, 2, TM_F32);
    tm_tensor *xd = x ? tm_to(x, dev) : NULL;
    REQUIRE(xd);
    for (int f = 0; f < NQ; f++) {
        tm_dtype qt = qfmt[f];
        tm_tensor *q = tm_quantize(x, qt);
        tm_tensor *qd = tm_quantize(xd, qt);
        REQUIRE(q && qd);
        CHECK(tm_device_eq(tm_device_of(qd), dev));
        if (!same_bytes(qd, q))
            tt_fail(__FILE__, __LINE__, "%s: quantize on %s differs",
                    tm_dtype_name(qt), tm_device_name(dev));
        /* a CPU tensor sent over and back, and a row view's copy */
        tm_tensor *sent = tm_to(q, dev);
        CHECK(sent && same_bytes(sent, q));
        tm_tensor *row = sent ? tm_narrow(sent, 0, 1, 2) : NULL;
        tm_tensor *rowc = row ? tm_clone(row) : NULL;
        tm_tensor *hrow = tm_narrow(q, 0, 1, 2);
        tm_tensor *hrowc = hrow ? tm_contiguous(hrow) : NULL;
        CHECK(rowc && hrowc && same_bytes(rowc, hrowc));
        tm_tensor *d = tm_dequantize(q, TM_F32);
        tm_tensor *dd = tm_dequantize(qd, TM_F32);
        CHECK(d && dd && tt_same_bits(d, dd));
        tm_quant_error e = {0}, ed = {0};
        CHECK(tm_quant_error_of(x, q, &e) == TM_OK);
        CHECK(tm_quant_error_of(xd, qd, &ed) == TM_OK);
        /* test:0 sums in F64 as the CPU does: the same bits; test:1
         * declines F64, so its sums are staged through F32: 1536 squares
         * summed in F32 are within 1536 * 2^-24 relative, 1e-4 */
        double tol = dev.index == 0 ? 0 : 1e-4;
        CHECK_NEAR(ed.rmse, e.rmse, tol * e.rmse);
        CHECK_NEAR(ed.ref_rms, e.ref_rms, tol * e.ref_rms);
        CHECK_NEAR(ed.max_abs, e.max_abs, tol * e.max_abs);
        CHECK_INT(ed.count, e.count);
        tm_free(dd);
        tm_free(d);
        tm_free(hrowc);
        tm_free(hrow);
        tm_free(rowc);
        tm_free(row);
        tm_free(sent);
        tm_free(qd);
        tm_free(q);
    }
    tm_tensor *gy = tm_randn((int64_t[]){R, OUT}, 2, TM_F32);
    tm_tensor *gyd = gy ? tm_to(gy, dev) : NULL;
    tm_tensor *w = tm_randn((int64_t[]){OUT, IN}, 2, TM_F32);
    tm_tensor *b = tm_randn((int64_t[]){OUT}, 1, TM_F32);
    tm_tensor *bd = b ? tm_to(b, dev) : NULL;
    REQUIRE(gyd && w && bd);
    for (int f = 0; f < NWEIGHT; f++) {
        tm_dtype qt = qfmt[f];
        tm_tensor *wq = tm_quantize(w, qt);
        tm_tensor *wqd = wq ? tm_to(wq, dev) : NULL;
        tm_tensor *xc = tm_clone(x), *xdc = tm_clone(xd);
        REQUIRE(wqd && xc && xdc);
        CHECK(tm_requires_grad_(xc, true) == TM_OK);
        CHECK(tm_requires_grad_(xdc, true) == TM_OK);
        tm_tensor *y = tm_linear(xc, wq, b);
        tm_tensor *yd = tm_linear(xdc, wqd, bd);
        REQUIRE(y && yd);
        CHECK(tm_device_eq(tm_device_of(yd), dev));
        if (!tt_same_bits(y, yd))
            tt_fail(__FILE__, __LINE__, "%s: linear on %s differs",
                    tm_dtype_name(qt), tm_device_name(dev));
        CHECK(tm_backward_ex(y, gy, false) == TM_OK);
        CHECK(tm_backward_ex(yd, gyd, false) == TM_OK);
        if (!tt_same_bits(tm_grad(xc), tm_grad(xdc)))
            tt_fail(__FILE__, __LINE__, "%s: dx on %s differs",
                    tm_dtype_name(qt), tm_device_name(dev));
        /* W · Xᵀ-shaped input */
        tm_tensor *xt = tm_transpose(x, 0, 1), *xtd = tm_transpose(xd, 0, 1);
        tm_tensor *m = xt ? tm_matmul(wq, xt) : NULL;
        tm_tensor *md = xtd ? tm_matmul(wqd, xtd) : NULL;
        CHECK(m && md && tt_same_bits(m, md));
        /* embedding rows of the quantized weight */
        int64_t iv[4] = {6, 0, 3, 6};
        tm_tensor *ix = tm_from_buffer(iv, (int64_t[]){4}, 1, TM_I64);
        tm_tensor *ixd = ix ? tm_to(ix, dev) : NULL;
        tm_tensor *e = ix ? tm_embedding(wq, ix) : NULL;
        tm_tensor *ed = ixd ? tm_embedding(wqd, ixd) : NULL;
        if (!(e && ed && tt_same_bits(e, ed)))
            tt_fail(__FILE__, __LINE__, "%s: embedding on %s differs (%s)",
                    tm_dtype_name(qt), tm_device_name(dev), tm_last_error());
        tm_free(ed);
        tm_free(e);
        tm_free(ixd);
        tm_free(ix);
        tm_free(md);
        tm_free(m);
        tm_free(xtd);
        tm_free(xt);
        tm_free(yd);
        tm_free(y);
        tm_free(xdc);
        tm_free(xc);
        tm_free(wqd);
        tm_free(wq);
    }
    tm_free(bd);
    tm_free(b);
    tm_free(w);
    tm_free(gyd);
    tm_free(gy);
    tm_free(xd);
    tm_free(x);
}

TEST(conformance_quant_matches_the_cpu)
{
    REQUIRE(tt_testdev_register() == 0);
    CHECK_INT(tm_device_empty_cache(TT_TEST0), TM_OK);
    CHECK_INT(tm_device_empty_cache(TT_TEST1), TM_OK);
    CHECK(tm_synchronize(TT_TEST0) == TM_OK);
    CHECK(tm_synchronize(TT_TEST1) == TM_OK);
    size_t before = tt_testdev_bytes_in_use();
    check_device(TT_TEST0);
    check_device(TT_TEST1);
    /* cached blocks go back, then the frees they queue run */
    CHECK_INT(tm_device_empty_cache(TT_TEST0), TM_OK);
    CHECK_INT(tm_device_empty_cache(TT_TEST1), TM_OK);
    CHECK(tm_synchronize(TT_TEST0) == TM_OK);
    CHECK(tm_synchronize(TT_TEST1) == TM_OK);
    CHECK_INT(tt_testdev_bytes_in_use(), before);
}
