/* test_conv_depthwise.c — the direct F32 depthwise convolution
 * (cpu/conv/conv_depthwise.c): forward, dx, dw and db against a direct F64
 * loop over the definition, for many geometries (1-D to 3-D, strides 1
 * and 2, padding 0 to 2 and beyond the kernel, dilation, kernels 1, 3 and
 * 5, odd sizes, rows shorter and longer than a block, batch 1 and 3,
 * output sizes beyond the padding's, several outputs per input channel),
 * and bitwise the same for 1 and 3 threads and for the gradients asked
 * together or one at a time.
 *
 * Tolerance: conv_ref.h's bound for F32 sums in another order. */
#include "conv_ref.h"
#include "harness.h"

#include "../../cpu/conv/conv_depthwise.h"

#include <stdlib.h>

typedef struct gconf {
    int64_t n, c, d, h, w, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw;
    int64_t extra; /* output columns beyond the padding's (read as 0) */
    int64_t m;     /* output channels per input channel (0: 1) */
} gconf;

static int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t p,
                        int64_t d)
{
    return (n + 2 * p - d * (k - 1) - 1) / s + 1;
}

static tm_conv_geom geom(const gconf *k)
{
    tm_conv_geom q;
    memset(&q, 0, sizeof q);
    q.n = k->n, q.c = k->c, q.d = k->d, q.h = k->h, q.w = k->w;
    q.oc = k->c * (k->m ? k->m : 1), q.g = k->c;
    q.kd = k->kd, q.kh = k->kh, q.kw = k->kw;
    q.sd = k->sd, q.sh = k->sh, q.sw = k->sw;
    q.pd = k->pd, q.ph = k->ph, q.pw = k->pw;
    q.dd = k->dd, q.dh = k->dh, q.dw = k->dw;
    q.od = out_size(k->d, k->kd, k->sd, k->pd, k->dd);
    q.oh = out_size(k->h, k->kh, k->sh, k->ph, k->dh);
    q.ow = out_size(k->w, k->kw, k->sw, k->pw, k->dw) + k->extra;
    return q;
}

/* Runs the forward and backward kernels on k and compares them with the
 * reference; also with 1 and 3 threads, bit for bit. */
static void check_conf(const gconf *k, unsigned seed)
{
    tm_conv_geom q = geom(k);
    int64_t xn = q.n * q.c * q.d * q.h * q.w;
    int64_t kv = q.kd * q.kh * q.kw, wn = q.oc * kv, M = q.oc / q.c;
    int64_t L = q.od * q.oh * q.ow, yn = q.n * q.oc * L;
    int64_t all = yn + xn + wn + q.oc;
    REQUIRE(tm__conv_dw_ok(&q, TM_F32, true));
    CHECK(tm__conv_dw_ok(&q, TM_F32, false) == (M == 1));
    float *x = malloc(sizeof(float) * (size_t)xn);
    float *w = malloc(sizeof(float) * (size_t)wn);
    float *b = malloc(sizeof(float) * (size_t)q.oc);
    float *g = malloc(sizeof(float) * (size_t)yn);
    float *out = malloc(sizeof(float) * (size_t)(3 * all));
    tt_conv_refs r;
    REQUIRE(x && w && b && g && out);
    tt_conv_fill(x, xn, seed), tt_conv_fill(w, wn, seed + 1);
    tt_conv_fill(b, q.oc, seed + 2), tt_conv_fill(g, yn, seed + 3);
    REQUIRE(tt_conv_reference(&q, x, w, b, g, &r));
    /* rep 0, 1: 1 and 3 threads; rep 2: db alone, dx alone */
    for (int rep = 0; rep < 3; rep++) {
        tm_set_num_threads(rep == 1 ? 3 : 1);
        float *y = out + rep * all, *dx = y + yn, *dw = dx + xn;
        float *db = dw + wn;
        for (int64_t i = 0; i < all; i++) y[i] = NAN; /* all overwritten */
        CHECK_INT(tm__conv_dw_forward(&q, y, x, w, b), TM_OK);
        if (rep < 2) {
            CHECK_INT(tm__conv_dw_backward(&q, dx, dw, db, g, x, w), TM_OK);
        } else {
            CHECK_INT(tm__conv_dw_backward(&q, dx, NULL, NULL, g, NULL, w),
                      TM_OK);
            CHECK_INT(tm__conv_dw_backward(&q, NULL, NULL, db, g, NULL, NULL),
                      TM_OK);
            CHECK_INT(tm__conv_dw_backward(&q, NULL, dw, NULL, g, x, NULL),
                      TM_OK);
        }
        if (rep == 0) {
            tt_conv_compare("y", y, r.y, r.sy, yn, (double)(kv + 1));
            tt_conv_compare("dx", dx, r.dx, r.sdx, xn, (double)(M * kv));
            tt_conv_compare("dw", dw, r.dw, r.sdw, wn, (double)(q.n * L));
            tt_conv_compare("db", db, r.db, r.sdb, q.oc, (double)(q.n * L));
        }
    }
    tm_set_num_threads(0);
    CHECK(memcmp(out, out + all, sizeof(float) * (size_t)all) == 0);
    CHECK(memcmp(out, out + 2 * all, sizeof(float) * (size_t)all) == 0);
    free(x), free(w), free(b), free(g), free(out);
    tt_conv_refs_free(&r);
}

static const gconf confs[] = {
    /* n c  d  h   w kd kh kw sd sh sw pd ph pw dd dh dw extra m */
    {3, 4, 1, 9, 9, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1}, /* 3x3 same */
    {1, 3, 1, 19, 37, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1}, /* > block */
    {3, 2, 1, 11, 13, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, 0, 1}, /* stride 2 */
    {1, 5, 1, 12, 33, 1, 3, 3, 1, 2, 2, 0, 0, 0, 1, 1, 1, 0, 1}, /* s2 p0 */
    {3, 3, 1, 10, 17, 1, 5, 5, 1, 1, 1, 0, 2, 2, 1, 1, 1, 0, 1}, /* 5x5 */
    {1, 2, 1, 15, 21, 1, 5, 5, 1, 2, 2, 0, 2, 1, 1, 2, 2, 0, 1}, /* s2 d2 */
    {3, 3, 1, 9, 11, 1, 3, 3, 1, 1, 1, 0, 2, 2, 1, 2, 2, 0, 1}, /* dilation */
    {1, 3, 1, 7, 8, 1, 3, 3, 1, 1, 2, 0, 2, 2, 1, 1, 1, 0, 1}, /* pad 2 > */
    {3, 2, 1, 6, 7, 1, 1, 1, 1, 1, 1, 0, 1, 2, 1, 1, 1, 0, 1}, /* 1x1 pad */
    {1, 4, 1, 5, 9, 1, 1, 1, 1, 2, 2, 0, 0, 0, 1, 1, 1, 0, 1}, /* 1x1 s2 */
    {1, 3, 1, 8, 8, 1, 2, 2, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1}, /* 'same' */
    {3, 2, 1, 5, 6, 1, 3, 3, 1, 2, 1, 0, 1, 1, 1, 1, 1, 3, 1}, /* far */
    {1, 3, 1, 1, 41, 1, 1, 3, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1}, /* 1-D */
    {3, 2, 1, 1, 29, 1, 1, 5, 1, 1, 2, 0, 0, 2, 1, 1, 2, 0, 1}, /* 1-D s2 */
    {1, 2, 5, 6, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1}, /* 3-D */
    {3, 2, 7, 5, 9, 3, 3, 3, 2, 1, 2, 1, 0, 2, 2, 1, 1, 0, 1}, /* 3-D s2 */
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1}, /* 1 elt */
    {1, 2, 1, 3, 3, 1, 3, 3, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1}, /* 1 output */
    /* channel multipliers: C_in = 1 with few outputs, 3 outputs a channel */
    {3, 1, 1, 12, 19, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 4},
    {1, 2, 1, 9, 17, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, 0, 3},
    {3, 2, 3, 4, 5, 2, 3, 3, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 2},
    {1, 1, 1, 1, 30, 1, 1, 5, 1, 1, 3, 0, 0, 2, 1, 1, 2, 1, 2},
};

TEST(conv_depthwise_matches_definition)
{
    for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++) {
        int before = tt_failures();
        check_conf(&confs[i], (unsigned)(i + 1));
        if (tt_failures() != before)
            tt_fail(__FILE__, __LINE__, "configuration %zu", i);
    }
}

TEST(conv_depthwise_declines_what_it_does_not_cover)
{
    gconf k = {2, 4, 1, 8, 8, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1};
    tm_conv_geom q = geom(&k);
    CHECK(tm__conv_dw_ok(&q, TM_F32, true));
    CHECK(!tm__conv_dw_ok(&q, TM_F64, true)); /* F64: the other paths */
    tm_conv_geom s = q;
    s.g = 2; /* grouped, 2 channels a group */
    CHECK(!tm__conv_dw_ok(&s, TM_F32, true));
    s = q;
    s.oc = 8; /* two outputs a channel: the backward only */
    CHECK(tm__conv_dw_ok(&s, TM_F32, true));
    CHECK(!tm__conv_dw_ok(&s, TM_F32, false));
    s.oc = 6; /* not a multiple of C */
    CHECK(!tm__conv_dw_ok(&s, TM_F32, true));
    s.oc = 4 * 5; /* more outputs a channel than the backward takes */
    CHECK(!tm__conv_dw_ok(&s, TM_F32, true));
    s = q;
    s.n = 0;
    CHECK(!tm__conv_dw_ok(&s, TM_F32, true)); /* empty */
    s = q;
    s.w = 1 << 23, s.ow = s.w; /* a frame too large */
    CHECK(!tm__conv_dw_ok(&s, TM_F32, true));
}
