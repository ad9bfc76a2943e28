/* test_pool_max22.c — the vectorized 2x2 / stride-2 F32 max pooling
 * (cpu/cpu_pool_max22.c) against the definition the pool entry documents:
 * the window's first element, then each later one taken when greater or
 * NaN; argmax its flat index.  Values from a small set, so windows have
 * ties, and NaNs, at widths with and without a vector tail.  Exact: no
 * arithmetic, only selection. */
#include "harness.h"

#include "../../cpu/cpu_pool_max22.h"

#include <stdint.h>
#include <stdlib.h>

/* The depth (1, no padding), dilation (1) and divisor (none) of a 2-D
 * pooling. */
#define PLAIN_2D 1, 1, 1, 1, 0, 1, 1, 1, 0

TEST(pool_max22_matches_definition_with_ties_and_nans)
{
    const int64_t sizes[][2] = {{2, 2}, {4, 8}, {6, 9}, {28, 28}, {14, 14},
                                {5, 17}, {3, 31}, {8, 40}};
    unsigned s = 12345;
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        tm_pool_geom q = {3, sizes[c][0], sizes[c][1], sizes[c][0] / 2,
                          sizes[c][1] / 2, 2, 2, 2, 2, 0, 0, false,
                          PLAIN_2D};
        REQUIRE(tm__pool_max22_ok(&q));
        int64_t xn = q.planes * q.h * q.w, yn = q.planes * q.oh * q.ow;
        float *x = malloc(sizeof(float) * (size_t)xn);
        float *y = malloc(sizeof(float) * (size_t)yn);
        int64_t *ix = malloc(sizeof(int64_t) * (size_t)yn);
        REQUIRE(x && y && ix);
        for (int64_t i = 0; i < xn; i++) {
            s = s * 1664525u + 1013904223u;
            unsigned v = (s >> 16) % 7;
            x[i] = v == 6 ? NAN : (float)v - 2.5f;
        }
        tm__pool_max22_f32(&q, x, y, ix, 0, q.planes);
        for (int64_t p = 0; p < q.planes; p++)
            for (int64_t oy = 0; oy < q.oh; oy++)
                for (int64_t ox = 0; ox < q.ow; ox++) {
                    const float *xp = x + p * q.h * q.w;
                    int64_t i0 = 2 * oy * q.w + 2 * ox;
                    int64_t at[4] = {i0, i0 + 1, i0 + q.w, i0 + q.w + 1};
                    float m = xp[i0];
                    int64_t mi = i0;
                    for (int t = 1; t < 4; t++)
                        if (xp[at[t]] > m || isnan(xp[at[t]]))
                            m = xp[at[t]], mi = at[t];
                    int64_t o = (p * q.oh + oy) * q.ow + ox;
                    CHECK(isnan(m) ? isnan(y[o]) : y[o] == m);
                    CHECK_INT(ix[o], mi);
                }
        free(x), free(y), free(ix);
    }
}

TEST(pool_max22_declines_other_windows)
{
    tm_pool_geom q = {1, 8, 8, 4, 4, 2, 2, 2, 2, 0, 0, false, PLAIN_2D};
    CHECK(tm__pool_max22_ok(&q));
    q.ph = 1, q.oh = 5;
    CHECK(!tm__pool_max22_ok(&q));
    tm_pool_geom r = {1, 8, 8, 7, 7, 2, 2, 1, 1, 0, 0, false, PLAIN_2D};
    CHECK(!tm__pool_max22_ok(&r));
    /* ceil mode: the last window hangs over the edge */
    tm_pool_geom t = {1, 9, 9, 5, 5, 2, 2, 2, 2, 0, 0, false, PLAIN_2D};
    CHECK(!tm__pool_max22_ok(&t));
}
