/* test_conv_igemm.c — the implicit-GEMM F32 convolution (cpu/conv/):
 * forward, dx, dw and db against a direct F64 loop over the definition,
 * for many geometries (1-D to 3-D, padding, dilation, groups, depthwise,
 * 1x1, odd sizes, channel counts off the register tiles, a depth over one
 * K block, more images than dw chunks), with every kernel family this CPU
 * runs, and bitwise the same for any thread count.
 *
 * Tolerance: conv_ref.h's bound for F32 sums in another order. */
#include "conv_ref.h"
#include "harness.h"

#include "../../cpu/conv/conv_igemm.h"
#include "../../cpu/cpu_features.h"

#include <stdlib.h>

typedef struct gconf {
    int64_t n, c, d, h, w, oc, kd, kh, kw, pd, ph, pw, dd, dh, dw, g;
} gconf;

static tm_conv_geom geom(const gconf *k)
{
    tm_conv_geom q;
    memset(&q, 0, sizeof q);
    q.n = k->n, q.c = k->c, q.d = k->d, q.h = k->h, q.w = k->w;
    q.oc = k->oc, q.kd = k->kd, q.kh = k->kh, q.kw = k->kw;
    q.pd = k->pd, q.ph = k->ph, q.pw = k->pw;
    q.dd = k->dd, q.dh = k->dh, q.dw = k->dw;
    q.sd = q.sh = q.sw = 1, q.g = k->g;
    q.od = k->d + 2 * k->pd - k->dd * (k->kd - 1);
    q.oh = k->h + 2 * k->ph - k->dh * (k->kh - 1);
    q.ow = k->w + 2 * k->pw - k->dw * (k->kw - 1);
    return q;
}

/* Runs the forward and backward kernels on k and compares them with the
 * reference; also with 1 and 3 threads, bit for bit. */
static void check_conf(const gconf *k, unsigned seed)
{
    tm_conv_geom q = geom(k);
    int64_t xn = q.n * q.c * q.d * q.h * q.w;
    int64_t wn = q.oc * (q.c / q.g) * q.kd * q.kh * q.kw;
    int64_t yn = q.n * q.oc * q.od * q.oh * q.ow;
    int64_t L = q.od * q.oh * q.ow;
    bool dx_ok = tm__conv_igemm_bwd_ok(&q, TM_F32, true, true, true);
    CHECK(tm__conv_igemm_fwd_ok(&q, TM_F32));
    CHECK(tm__conv_igemm_bwd_ok(&q, TM_F32, false, true, true));
    float *x = malloc(sizeof(float) * (size_t)xn);
    float *w = malloc(sizeof(float) * (size_t)wn);
    float *b = malloc(sizeof(float) * (size_t)q.oc);
    float *g = malloc(sizeof(float) * (size_t)yn);
    float *out = malloc(sizeof(float) * (size_t)(2 * (yn + xn + wn + q.oc)));
    tt_conv_refs r;
    REQUIRE(x && w && b && g && out);
    tt_conv_fill(x, xn, seed), tt_conv_fill(w, wn, seed + 1);
    tt_conv_fill(b, q.oc, seed + 2), tt_conv_fill(g, yn, seed + 3);
    REQUIRE(tt_conv_reference(&q, x, w, b, g, &r));
    int64_t kv = q.kd * q.kh * q.kw;
    for (int rep = 0; rep < 2; rep++) {
        tm_set_num_threads(rep ? 3 : 1);
        float *y = out + rep * (yn + xn + wn + q.oc), *dx = y + yn;
        float *dw = dx + xn, *db = dw + wn;
        CHECK_INT(tm__conv_igemm_forward(&q, y, x, w, b), TM_OK);
        CHECK_INT(tm__conv_igemm_backward(&q, dx_ok ? dx : NULL, dw, db, g, x,
                                          w),
                  TM_OK);
        if (!dx_ok) memset(dx, 0, sizeof(float) * (size_t)xn);
        if (rep == 0) {
            tt_conv_compare("y", y, r.y, r.sy, yn,
                            (double)(q.c / q.g * kv + 1));
            if (dx_ok)
                tt_conv_compare("dx", dx, r.dx, r.sdx, xn,
                                (double)(q.oc / q.g * kv));
            tt_conv_compare("dw", dw, r.dw, r.sdw, wn, (double)(q.n * L));
            tt_conv_compare("db", db, r.db, r.sdb, q.oc, (double)(q.n * L));
        }
    }
    tm_set_num_threads(0);
    CHECK(memcmp(out, out + (yn + xn + wn + q.oc),
                 sizeof(float) * (size_t)(yn + xn + wn + q.oc)) == 0);
    free(x), free(w), free(b), free(g), free(out);
    tt_conv_refs_free(&r);
}

static const gconf confs[] = {
    /* n  c  d  h   w  oc kd kh kw pd ph pw dd dh dw g */
    {3, 1, 1, 28, 28, 16, 1, 3, 3, 0, 1, 1, 1, 1, 1, 1}, /* CNN layer 1 */
    {2, 16, 1, 14, 14, 32, 1, 3, 3, 0, 1, 1, 1, 1, 1, 1}, /* CNN layer 2 */
    {1, 5, 1, 7, 9, 11, 1, 3, 2, 0, 1, 0, 1, 2, 1, 1},  /* dilation, odd */
    {2, 6, 1, 9, 5, 9, 1, 3, 3, 0, 1, 1, 1, 1, 1, 3},   /* groups */
    {2, 8, 1, 6, 6, 8, 1, 3, 3, 0, 1, 1, 1, 1, 1, 8},   /* depthwise */
    {2, 20, 1, 5, 7, 37, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1}, /* 1x1, tails */
    {1, 40, 1, 5, 5, 70, 1, 3, 3, 0, 2, 2, 1, 1, 1, 1}, /* pad = k-1 */
    {1, 3, 1, 4, 6, 5, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1},   /* pad > k-1: no dx */
    {2, 3, 4, 5, 6, 5, 2, 3, 3, 1, 1, 0, 1, 2, 1, 1},   /* 3-D */
    {1, 2, 1, 1, 23, 3, 1, 1, 4, 0, 0, 2, 1, 1, 3, 1},  /* 1-D, dilated */
    {1, 48, 1, 18, 18, 9, 1, 3, 3, 0, 1, 1, 1, 1, 1, 1}, /* K > one block */
    {17, 2, 1, 4, 4, 3, 1, 2, 2, 0, 0, 1, 1, 1, 1, 1},  /* > 16 dw chunks */
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1},   /* 1 element */
    {1, 400, 1, 3, 5, 9, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1}, /* 1x1, K blocks */
    {3, 16, 1, 5, 40, 17, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1}, /* 1x1, wide */
};

TEST(conv_igemm_matches_definition_for_every_kernel_family)
{
    tm__isa isas[] = {TM__ISA_PORTABLE, TM__ISA_AVX2, TM__ISA_AVX512,
                      TM__ISA_NEON};
    tm__isa saved = tm__cpu_isa();
    for (size_t f = 0; f < sizeof isas / sizeof isas[0]; f++) {
        if (!tm__isa_supported(isas[f]) || !tm__set_isa(isas[f])) continue;
        for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++) {
            int before = tt_failures();
            check_conf(&confs[i], (unsigned)(i + 1));
            if (tt_failures() != before)
                tt_fail(__FILE__, __LINE__, "configuration %zu, family %d",
                        i, (int)isas[f]);
        }
    }
    tm__set_isa(saved);
}

TEST(conv_igemm_declines_what_it_does_not_cover)
{
    gconf k = {2, 4, 1, 8, 8, 4, 1, 3, 3, 0, 1, 1, 1, 1, 1, 1};
    tm_conv_geom q = geom(&k);
    CHECK(tm__conv_igemm_fwd_ok(&q, TM_F32));
    CHECK(!tm__conv_igemm_fwd_ok(&q, TM_F64)); /* F64: the im2col path */
    tm_conv_geom s = q;
    s.sw = 2, s.ow = 4;
    CHECK(!tm__conv_igemm_fwd_ok(&s, TM_F32)); /* strides: im2col path */
    s = q;
    s.n = 0;
    CHECK(!tm__conv_igemm_fwd_ok(&s, TM_F32)); /* empty */
    s = q;
    s.ph = 3, s.oh = 12;                       /* padding beyond K - 1 */
    CHECK(tm__conv_igemm_fwd_ok(&s, TM_F32));
    CHECK(!tm__conv_igemm_bwd_ok(&s, TM_F32, true, true, true));
    CHECK(tm__conv_igemm_bwd_ok(&s, TM_F32, false, true, true));
    CHECK(!tm__conv_igemm_bwd_ok(&q, TM_F32, false, false, false));
}
