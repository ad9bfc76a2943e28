/* test_gemm.c — tm_gemm and tm_linear against a reference loop in double,
 * for every GEMM kernel family this CPU runs (portable, avx2, avx512 on
 * x86-64; portable, neon on aarch64), forced in turn with tm__set_isa.
 *
 * Tolerance per element (u = unit roundoff of the dtype, 2^-24 / 2^-53):
 *   |got - want| <= 2 (k + 2) u (|alpha| sum_p |a_ip b_pj| + |beta c_ij|)
 * The GEMM sums each element's products in increasing p (an FMA per
 * product, or a product and a sum in the portable kernel: at most 2
 * roundings per step, hence c = 2), merges K blocks in order and applies
 * alpha and beta with one rounding each (cpu/gemm/gemm_driver.c).  Operand
 * values are multiples of 2^-11 in [-1, 1), exact in F32 and F64, so the
 * reference (in double, over the same values) only differs by rounding. */
#include "harness.h"

#include "../../cpu/cpu_features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t g_seed = 12345;

static double lcg_value(void)
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return (double)(g_seed >> 21) / 1024.0 - 1.0;
}

enum { STRIDED_A = 1, STRIDED_B = 2, STRIDED_C = 4 };

/* A tensor holding logical values v[nb][r][c] (nb == 0: a 2-D tensor),
 * stored transposed (the caller passes it with trans set) and/or with
 * every other column (a slice with step 2; the gaps hold `gap`). */
static tm_tensor *build(const double *v, int64_t nb, int64_t r, int64_t c,
                        bool trans, bool strided, double gap, tm_dtype dt)
{
    int64_t b = nb ? nb : 1;
    int64_t pr = trans ? c : r, pc = trans ? r : c, step = strided ? 2 : 1;
    int64_t n = b * pr * pc * step;
    double *phys = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!phys) return NULL;
    for (int64_t i = 0; i < n; i++) phys[i] = gap;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++) {
                int64_t pi = trans ? j : i, pj = trans ? i : j;
                phys[(bi * pr + pi) * pc * step + pj * step] =
                    v[(bi * r + i) * c + j];
            }
    int64_t shape[3] = {b, pr, pc * step};
    tm_tensor *t = nb ? tt_tensor(phys, shape, 3, dt)
                      : tt_tensor(phys, shape + 1, 2, dt);
    free(phys);
    if (!t || !strided) return t;
    tm_tensor *s = tm_slice(t, nb ? 2 : 1, 0, pc * step, 2);
    tm_free(t);
    return s;
}

/* Every value of t (any strides) as a malloc'ed row-major double array. */
static double *values(const tm_tensor *t)
{
    tm_tensor *d = tm_to_dtype(t, TM_F64);
    if (!d) return NULL;
    size_t bytes = sizeof(double) * (size_t)tm_numel(d);
    double *v = malloc(bytes ? bytes : 1);
    if (v) memcpy(v, tm_data(d), bytes);
    tm_free(d);
    return v;
}

static double *random_values(int64_t n)
{
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (v)
        for (int64_t i = 0; i < n; i++) v[i] = lcg_value();
    return v;
}

typedef struct {
    int64_t m, k, n;
    bool ta, tb;
    double alpha, beta;
    int strided;
    int64_t nb;       /* batches of c (0: 2-D) */
    int64_t nba, nbb; /* batches of a and b: nb, 1 (broadcast) or 0 */
} gemm_case;

/* Runs one case; returns the number of bad elements (and reports the
 * first few). */
static int check_case(const char *file, int line, const gemm_case *g,
                      tm_dtype dt)
{
    int64_t m = g->m, k = g->k, n = g->n, nb = g->nb ? g->nb : 1;
    int64_t nba = g->nba ? g->nba : 1, nbb = g->nbb ? g->nbb : 1;
    double *av = random_values(nba * m * k), *bv = random_values(nbb * k * n);
    double *cv = random_values(nb * m * n);
    tm_tensor *a = NULL, *b = NULL, *c = NULL;
    double *got = NULL;
    int bad = 0;
    if (!av || !bv || !cv) goto done;
    if (g->beta == 0)
        for (int64_t i = 0; i < nb * m * n; i++) cv[i] = NAN;
    a = build(av, g->nba, m, k, g->ta, g->strided & STRIDED_A, NAN, dt);
    b = build(bv, g->nbb, k, n, g->tb, g->strided & STRIDED_B, NAN, dt);
    c = build(cv, g->nb, m, n, false, g->strided & STRIDED_C, 7.0, dt);
    if (!a || !b || !c) {
        tt_fail(file, line, "setup failed: %s", tm_last_error());
        goto done;
    }
    tm_status st = tm_gemm(g->ta, g->tb, g->alpha, a, b, g->beta, c);
    if (st) {
        tt_fail(file, line, "tm_gemm failed: %s", tm_last_error());
        goto done;
    }
    got = values(c);
    if (!got) goto done;
    double u = dt == TM_F32 ? ldexp(1, -24) : ldexp(1, -53);
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                const double *ar = av + ((nba > 1 ? bi : 0) * m + i) * k;
                const double *bm = bv + (nbb > 1 ? bi : 0) * k * n;
                double s = 0, as = 0;
                for (int64_t p = 0; p < k; p++) {
                    s += ar[p] * bm[p * n + j];
                    as += fabs(ar[p] * bm[p * n + j]);
                }
                double c0 = cv[(bi * m + i) * n + j];
                double want = g->alpha * s, mag = fabs(g->alpha) * as;
                if (g->beta != 0) {
                    want += g->beta * c0;
                    mag += fabs(g->beta * c0);
                }
                double tol = 2.0 * (double)(k + 2) * u * mag;
                double x = got[(bi * m + i) * n + j];
                if (!(fabs(x - want) <= tol) && bad++ < 3)
                    tt_fail(file, line, "%s %s m=%lld k=%lld n=%lld %c%c "
                            "alpha=%g beta=%g strided=%d nb=%lld: "
                            "c[%lld,%lld,%lld] = %.17g, want %.17g (tol %g)",
                            tm__isa_name(tm__cpu_isa()), tm_dtype_name(dt),
                            (long long)m, (long long)k, (long long)n,
                            g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->alpha,
                            g->beta, g->strided, (long long)g->nb,
                            (long long)bi, (long long)i, (long long)j, x,
                            want, tol);
            }
    /* The gaps of a strided c are untouched. */
    if (g->strided & STRIDED_C) {
        const float *pf = tm_data(c);
        const double *pd = tm_data(c);
        for (int64_t e = 0; e < nb * m * n; e++) {
            double gap = dt == TM_F32 ? pf[2 * e + 1] : pd[2 * e + 1];
            if (gap != 7.0 && bad++ < 3)
                tt_fail(file, line, "gap %lld of c overwritten: %g",
                        (long long)e, gap);
        }
    }
done:
    free(got);
    free(av);
    free(bv);
    free(cv);
    tm_free(a);
    tm_free(b);
    tm_free(c);
    return bad;
}

#define CHECK_CASE(g, dt) check_case(__FILE__, __LINE__, (g), (dt))

/* The kernel families this build and CPU run. */
static int families(tm__isa *out)
{
    int n = 0;
    for (int i = 0; i < TM__ISA_COUNT; i++)
        if (tm__isa_supported((tm__isa)i)) out[n++] = (tm__isa)i;
    return n;
}

static const int64_t square_sizes[] = {1, 2, 3, 17, 63, 65, 127, 129};
static const int64_t rect_sizes[][3] = {
    {1, 300, 7}, {257, 1, 129}, {5, 1000, 3}, {33, 700, 45}, {8, 64, 32},
    {9, 5, 200}, {300, 17, 1}};

TEST(gemm_every_family_matches_reference_on_odd_sizes)
{
    tm__isa fam[TM__ISA_COUNT], best = tm__cpu_isa();
    int nf = families(fam);
    for (int f = 0; f < nf; f++) {
        REQUIRE(tm__set_isa(fam[f]));
        for (int d = 0; d < 2; d++) {
            tm_dtype dt = d ? TM_F64 : TM_F32;
            for (size_t s = 0; s < sizeof square_sizes / sizeof *square_sizes;
                 s++)
                for (int t = 0; t < 4; t++) {
                    int64_t z = square_sizes[s];
                    gemm_case g = {z, z, z, t & 1, t >> 1, 1, 0, 0, 0, 0, 0};
                    CHECK_CASE(&g, dt);
                }
            for (size_t s = 0; s < sizeof rect_sizes / sizeof *rect_sizes;
                 s++)
                for (int t = 0; t < 4; t++) {
                    gemm_case g = {rect_sizes[s][0], rect_sizes[s][1],
                                   rect_sizes[s][2], t & 1, t >> 1, 1, 0,
                                   0, 0, 0, 0};
                    CHECK_CASE(&g, dt);
                }
        }
    }
    tm__set_isa(best);
}

TEST(gemm_alpha_beta_and_strided_views)
{
    static const double ab[][2] = {{0, 0},   {0, 0.5}, {1, 1},   {-2.5, 0},
                                   {-2.5, 1}, {1, 0.5}, {-2.5, 0.5}};
    static const int64_t sizes[][3] = {{17, 65, 63}, {33, 700, 45},
                                       {1, 3, 129}};
    tm__isa fam[TM__ISA_COUNT], best = tm__cpu_isa();
    int nf = families(fam);
    for (int f = 0; f < nf; f++) {
        REQUIRE(tm__set_isa(fam[f]));
        for (int d = 0; d < 2; d++)
            for (size_t i = 0; i < sizeof ab / sizeof *ab; i++)
                for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                    for (int st = 0; st < 8; st += 3) {
                        /* st: 0 contiguous, 3 strided a and b, 6 strided b
                         * and c; the transposes vary with st. */
                        gemm_case g = {sizes[s][0], sizes[s][1], sizes[s][2],
                                       st == 3, st != 0, ab[i][0], ab[i][1],
                                       st, 0, 0, 0};
                        CHECK_CASE(&g, d ? TM_F64 : TM_F32);
                    }
    }
    tm__set_isa(best);
}

TEST(gemm_batched_and_broadcast_batches)
{
    tm__isa fam[TM__ISA_COUNT], best = tm__cpu_isa();
    int nf = families(fam);
    for (int f = 0; f < nf; f++) {
        REQUIRE(tm__set_isa(fam[f]));
        for (int d = 0; d < 2; d++) {
            tm_dtype dt = d ? TM_F64 : TM_F32;
            /* batched a and b; a broadcast (size 1 and absent); b
             * broadcast; with transposes, strides, alpha and beta */
            gemm_case cases[] = {
                {17, 33, 65, 0, 0, 1, 0, 0, 3, 3, 3},
                {17, 33, 65, 1, 1, -2.5, 0.5, STRIDED_A | STRIDED_C, 3, 1, 3},
                {40, 9, 70, 0, 1, 1, 1, STRIDED_B, 4, 0, 4},
                {63, 20, 5, 1, 0, 1, 0, 0, 2, 2, 1},
                {5, 300, 129, 0, 0, 1, 0, STRIDED_C, 5, 5, 0},
            };
            for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
                CHECK_CASE(&cases[i], dt);
        }
    }
    tm__set_isa(best);
}

/* Bits of c = op(a) op(b) with `threads` threads. */
static tm_tensor *run_threads(const tm_tensor *a, const tm_tensor *b,
                              bool ta, bool tb, const int64_t *cshape,
                              int cnd, int threads)
{
    tm_tensor *c = tm_full(cshape, cnd, 0.25, tm_dtype_of(a));
    if (!c) return NULL;
    tm_set_num_threads(threads);
    tm_status st = tm_gemm(ta, tb, -2.5, a, b, 0.5, c);
    tm_set_num_threads(0);
    if (st) {
        tm_free(c);
        return NULL;
    }
    return c;
}

TEST(gemm_is_bitwise_identical_for_1_2_3_threads)
{
    /* tall (split along M), wide (split along N), batched (split by batch
     * or, with 2 threads and 3 entries, inside each entry), K > KC */
    static const int64_t shapes[][4] = {
        {0, 300, 200, 270}, {0, 20, 300, 900}, {3, 150, 200, 120},
        {0, 130, 1000, 140}};
    tm__isa fam[TM__ISA_COUNT], best = tm__cpu_isa();
    int nf = families(fam);
    for (int f = 0; f < nf; f++) {
        REQUIRE(tm__set_isa(fam[f]));
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                tm_dtype dt = d ? TM_F64 : TM_F32;
                int64_t nb = shapes[s][0], m = shapes[s][1], k = shapes[s][2],
                        n = shapes[s][3];
                bool tb = s & 1;
                double *av = random_values((nb ? nb : 1) * m * k);
                double *bv = random_values(k * n);
                tm_tensor *a = av ? build(av, nb, m, k, false, false, 0, dt)
                                  : NULL;
                tm_tensor *b = bv ? build(bv, 0, k, n, tb, false, 0, dt)
                                  : NULL;
                free(av);
                free(bv);
                int64_t cs[3] = {nb, m, n};
                int cnd = nb ? 3 : 2;
                const int64_t *csh = nb ? cs : cs + 1;
                tm_tensor *c1 = a && b ? run_threads(a, b, false, tb, csh, cnd, 1)
                                       : NULL;
                tm_tensor *c2 = a && b ? run_threads(a, b, false, tb, csh, cnd, 2)
                                       : NULL;
                tm_tensor *c3 = a && b ? run_threads(a, b, false, tb, csh, cnd, 3)
                                       : NULL;
                CHECK(c1 && c2 && c3);
                if (c1 && c2 && c3) {
                    CHECK(memcmp(tm_data(c1), tm_data(c2), tm_nbytes(c1)) == 0);
                    CHECK(memcmp(tm_data(c1), tm_data(c3), tm_nbytes(c1)) == 0);
                }
                tm_free(c1);
                tm_free(c2);
                tm_free(c3);
                tm_free(a);
                tm_free(b);
            }
    }
    tm__set_isa(best);
}

/* y = x w^T + bias, checked against the reference loop. */
static void check_linear(const char *file, int line, const tm_tensor *x,
                         const tm_tensor *w, const tm_tensor *bias,
                         tm_dtype dt)
{
    tm_tensor *y = tm_linear(x, w, bias);
    if (!y) {
        tt_fail(file, line, "tm_linear failed: %s", tm_last_error());
        return;
    }
    int64_t in = tm_size(w, 1), out = tm_size(w, 0);
    int64_t rows = tm_numel(x) / (in ? in : 1);
    double *xv = values(x), *wv = values(w), *yv = values(y);
    double *bv = bias ? values(bias) : NULL;
    double u = dt == TM_F32 ? ldexp(1, -24) : ldexp(1, -53);
    int bad = 0;
    if (tm_numel(y) != rows * out)
        tt_fail(file, line, "y has %lld elements", (long long)tm_numel(y));
    else if (xv && wv && yv && (bv || !bias))
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < out; j++) {
                double s = bv ? bv[j] : 0, mag = bv ? fabs(bv[j]) : 0;
                for (int64_t p = 0; p < in; p++) {
                    s += xv[i * in + p] * wv[j * in + p];
                    mag += fabs(xv[i * in + p] * wv[j * in + p]);
                }
                double tol = 2.0 * (double)(in + 2) * u * mag;
                if (!(fabs(yv[i * out + j] - s) <= tol) && bad++ < 3)
                    tt_fail(file, line, "y[%lld,%lld] = %.17g, want %.17g",
                            (long long)i, (long long)j, yv[i * out + j], s);
            }
    free(xv);
    free(wv);
    free(yv);
    free(bv);
    tm_free(y);
}

TEST(linear_with_and_without_bias)
{
    for (int d = 0; d < 2; d++) {
        tm_dtype dt = d ? TM_F64 : TM_F32;
        double *xv = random_values(2 * 3 * 70), *wv = random_values(33 * 70);
        double *bv = random_values(33);
        REQUIRE(xv && wv && bv);
        tm_tensor *x = tt_tensor(xv, (int64_t[]){2, 3, 70}, 3, dt);
        tm_tensor *w = tt_tensor(wv, (int64_t[]){33, 70}, 2, dt);
        tm_tensor *bias = tt_tensor(bv, (int64_t[]){33}, 1, dt);
        tm_tensor *x1 = tt_tensor(xv, (int64_t[]){70}, 1, dt);
        /* not collapsible into rows: a transposed view */
        tm_tensor *xt = x ? tm_transpose(x, 0, 1) : NULL;
        free(xv);
        free(wv);
        free(bv);
        REQUIRE(x && w && bias && x1 && xt);
        check_linear(__FILE__, __LINE__, x, w, NULL, dt);
        check_linear(__FILE__, __LINE__, x, w, bias, dt);
        check_linear(__FILE__, __LINE__, x1, w, bias, dt);
        check_linear(__FILE__, __LINE__, xt, w, bias, dt);
        tm_tensor *y1 = tm_linear(x1, w, bias);
        REQUIRE(y1);
        CHECK_SHAPE(y1, 33);
        tm_free(y1);
        tm_tensor *yt = tm_linear(xt, w, NULL);
        REQUIRE(yt);
        CHECK_SHAPE(yt, 3, 2, 33);
        tm_free(yt);
        tm_free(x);
        tm_free(w);
        tm_free(bias);
        tm_free(x1);
        tm_free(xt);
    }
}

TEST(gemm_k0_and_empty_and_f16)
{
    /* k == 0: c = beta * c; beta == 0 clears NaN */
    tm_tensor *a = tm_zeros((int64_t[]){3, 0}, 2, TM_F32);
    tm_tensor *b = tm_zeros((int64_t[]){0, 2}, 2, TM_F32);
    tm_tensor *c = tm_full((int64_t[]){3, 2}, 2, NAN, TM_F32);
    tm_tensor *c2 = tm_full((int64_t[]){3, 2}, 2, 4, TM_F32);
    tm_tensor *e = tm_zeros((int64_t[]){0, 2}, 2, TM_F32);
    REQUIRE(a && b && c && c2 && e);
    double zeros[6] = {0}, twos[6] = {2, 2, 2, 2, 2, 2};
    CHECK_INT(tm_gemm(false, false, 1, a, b, 0, c), TM_OK);
    CHECK_VALUES(c, zeros, 6, 0, 0);
    CHECK_INT(tm_gemm(false, false, 1, a, b, 0.5, c2), TM_OK);
    CHECK_VALUES(c2, twos, 6, 0, 0);
    tm_tensor *a0 = tm_zeros((int64_t[]){0, 3}, 2, TM_F32);
    REQUIRE(a0);
    tm_tensor *b3 = tm_zeros((int64_t[]){3, 2}, 2, TM_F32);
    REQUIRE(b3);
    CHECK_INT(tm_gemm(false, false, 1, a0, b3, 0, e), TM_OK);
    /* F16 goes through the converting loop, with alpha and beta */
    tm_tensor *h = tm_full((int64_t[]){2, 3}, 2, 1, TM_F16);
    tm_tensor *hb = tm_full((int64_t[]){3, 2}, 2, 2, TM_F16);
    tm_tensor *hc = tm_full((int64_t[]){2, 2}, 2, 1, TM_F16);
    REQUIRE(h && hb && hc);
    CHECK_INT(tm_gemm(false, false, -2.5, h, hb, 0.5, hc), TM_OK);
    double want[4] = {-14.5, -14.5, -14.5, -14.5};
    CHECK_VALUES(hc, want, 4, 0, 0);
    tm_free(a);
    tm_free(b);
    tm_free(c);
    tm_free(c2);
    tm_free(e);
    tm_free(a0);
    tm_free(b3);
    tm_free(h);
    tm_free(hb);
    tm_free(hc);
}

TEST(gemm_errors_name_the_problem)
{
    tm_tensor *a = tm_zeros((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *b = tm_zeros((int64_t[]){5, 6}, 2, TM_F32);
    tm_tensor *b46 = tm_zeros((int64_t[]){4, 6}, 2, TM_F32);
    tm_tensor *c = tm_zeros((int64_t[]){3, 6}, 2, TM_F32);
    tm_tensor *c35 = tm_zeros((int64_t[]){3, 5}, 2, TM_F32);
    tm_tensor *d = tm_zeros((int64_t[]){4, 6}, 2, TM_F64);
    tm_tensor *i = tm_zeros((int64_t[]){3, 4}, 2, TM_I32);
    tm_tensor *v = tm_zeros((int64_t[]){4}, 1, TM_F32);
    tm_tensor *ba = tm_zeros((int64_t[]){2, 3, 4}, 3, TM_F32);
    tm_tensor *bc = tm_zeros((int64_t[]){3, 3, 6}, 3, TM_F32);
    tm_tensor *one = tm_zeros((int64_t[]){1, 6}, 2, TM_F32);
    tm_tensor *ex = one ? tm_expand(one, (int64_t[]){3, 6}, 2) : NULL;
    tm_tensor *big = tm_zeros((int64_t[]){4, 4}, 2, TM_F32);
    tm_tensor *ov = big ? tm_slice(big, 0, 0, 3, 1) : NULL;
    tm_tensor *ov2 = big ? tm_slice(big, 1, 0, 3, 1) : NULL;
    REQUIRE(a && b && b46 && c && c35 && d && i && v && ba && bc && ex &&
            ov && ov2);
    CHECK_STATUS(tm_gemm(false, false, 1, NULL, b46, 0, c), TM_EINVAL,
                 "tm_gemm: a is NULL");
    CHECK_STATUS(tm_gemm(false, false, 1, a, NULL, 0, c), TM_EINVAL,
                 "tm_gemm: b is NULL");
    CHECK_STATUS(tm_gemm(false, false, 1, a, b46, 0, NULL), TM_EINVAL,
                 "tm_gemm: c is NULL");
    CHECK_STATUS(tm_gemm(false, false, 1, a, b, 0, c), TM_ESHAPE,
                 "tm_gemm: op(a) [3,4] and op(b) [5,6] do not match: 4 != 5");
    CHECK_STATUS(tm_gemm(true, false, 1, a, b46, 0, c), TM_ESHAPE,
                 "op(a) [4,3] and op(b) [4,6] do not match: 3 != 4 (a [3,4] "
                 "transposed, b [4,6])");
    CHECK_STATUS(tm_gemm(false, false, 1, a, b46, 0, c35), TM_ESHAPE,
                 "tm_gemm: c has shape [3,5], expected [...,3,6]");
    CHECK_STATUS(tm_gemm(false, false, 1, a, d, 0, c), TM_EDTYPE,
                 "tm_gemm: a, b and c must have one dtype, got f32, f64 and "
                 "f32");
    CHECK_STATUS(tm_gemm(false, true, 1, i, i, 0, i), TM_EDTYPE,
                 "tm_gemm: dtype i32 is not supported");
    CHECK_STATUS(tm_gemm(false, false, 1, v, b46, 0, c), TM_EINVAL,
                 "tm_gemm: a, b and c need at least 2 dims, got shapes [4], "
                 "[4,6] and [3,6]");
    CHECK_STATUS(tm_gemm(false, false, 1, ba, b46, 0, bc), TM_ESHAPE,
                 "tm_gemm: batch dims of a [2,3,4] and b [4,6] do not "
                 "broadcast to those of c [3,3,6]");
    CHECK_STATUS(tm_gemm(false, false, 1, ba, b46, 0, c), TM_ESHAPE,
                 "do not broadcast");
    CHECK_STATUS(tm_gemm(false, false, 1, a, b46, 0, ex), TM_EINVAL,
                 "tm_gemm: cannot write in place into an expanded tensor");
    CHECK_STATUS(tm_gemm(false, false, 1, ov2, ov, 0, big), TM_EINVAL,
                 "tm_gemm: c overlaps a or b");
    /* tm_linear */
    tm_tensor *w = tm_zeros((int64_t[]){6, 4}, 2, TM_F32);
    tm_tensor *w5 = tm_zeros((int64_t[]){6, 5}, 2, TM_F32);
    tm_tensor *bias5 = tm_zeros((int64_t[]){5}, 1, TM_F32);
    tm_tensor *wd = tm_zeros((int64_t[]){6, 4}, 2, TM_F64);
    REQUIRE(w && w5 && bias5 && wd);
    CHECK_NULL_ERR(tm_linear(NULL, w, NULL), TM_EINVAL, "tm_linear: x is NULL");
    CHECK_NULL_ERR(tm_linear(a, NULL, NULL), TM_EINVAL, "tm_linear: w is NULL");
    CHECK_NULL_ERR(tm_linear(a, w5, NULL), TM_ESHAPE,
                   "tm_linear: x [3,4] and w [6,5] do not match: 4 input "
                   "features != 5");
    CHECK_NULL_ERR(tm_linear(a, w, bias5), TM_ESHAPE,
                   "tm_linear: bias has shape [5], expected [6] for w [6,4]");
    CHECK_NULL_ERR(tm_linear(a, wd, NULL), TM_EDTYPE,
                   "tm_linear: x, w and bias must have one dtype, got f32, "
                   "f64 and none");
    CHECK_NULL_ERR(tm_linear(a, v, NULL), TM_EINVAL,
                   "tm_linear: x needs at least 1 dim and w exactly 2");
    /* an allocation failure in the kernel is reported cleanly */
    tm_clear_error();
    tm_alloc_fail_after(1);
    tm_status st = tm_gemm(false, false, 1, a, b46, 0, c);
    tm_alloc_fail_after(0);
    CHECK_INT(st, TM_ENOMEM);
    tm_free(a);
    tm_free(b);
    tm_free(b46);
    tm_free(c);
    tm_free(c35);
    tm_free(d);
    tm_free(i);
    tm_free(v);
    tm_free(ba);
    tm_free(bc);
    tm_free(one);
    tm_free(ex);
    tm_free(ov);
    tm_free(ov2);
    tm_free(big);
    tm_free(w);
    tm_free(w5);
    tm_free(bias5);
    tm_free(wd);
}

/* True when the first `rows` rows of a, multiplied by b (op(b) = bᵀ when
 * tb) into those rows of c0 as 0.5 * a·b + 2 * c0, give exactly the bits
 * of those rows of `full` (the same product over all of a's rows). */
static bool prefix_rows_match(const tm_tensor *a, const tm_tensor *b, bool tb,
                              const tm_tensor *c0, const tm_tensor *full,
                              int64_t rows)
{
    tm_tensor *ar = tm_narrow(a, 0, 0, rows);
    tm_tensor *c0r = tm_narrow(c0, 0, 0, rows);
    tm_tensor *cr = c0r ? tm_clone(c0r) : NULL;
    tm_tensor *fr = tm_narrow(full, 0, 0, rows);
    tm_free(c0r);
    bool ok = ar && cr && fr && tm_gemm(false, tb, 0.5, ar, b, 2.0, cr) == TM_OK;
    tm_tensor *eq = ok ? tm_eq(cr, fr) : NULL;
    tm_tensor *all = eq ? tm_all(eq, NULL, 0, false) : NULL;
    int64_t same = 0;
    ok = all && tm_item_i64(all, &same) == TM_OK && same == 1;
    tm_free(all); tm_free(eq); tm_free(fr); tm_free(cr); tm_free(ar);
    return ok;
}

/* Rows of a ragged row edge (fewer than MR rows left) run through the
 * one-row kernel, which must give the same bits as the full-tile kernel:
 * the first rows of an 8-row product equal products of 1..3 rows, for
 * every family, with and without beta. */
TEST(gemm_ragged_rows_give_the_same_bits_as_full_tiles)
{
    tm__isa fam[TM__ISA_COUNT], best = tm__cpu_isa();
    int nf = families(fam);
    for (int f = 0; f < nf; f++) {
        REQUIRE(tm__set_isa(fam[f]));
        for (int d = 0; d < 2; d++) {
            tm_dtype dt = d ? TM_F64 : TM_F32;
            tm_tensor *a = tm_randn((int64_t[]){8, 77}, 2, dt);
            tm_tensor *b = tm_randn((int64_t[]){77, 96}, 2, dt);
            tm_tensor *full = tm_randn((int64_t[]){8, 96}, 2, dt);
            REQUIRE(a && b && full);
            tm_tensor *c0 = tm_clone(full);
            CHECK_INT(tm_gemm(false, false, 0.5, a, b, 2.0, full), TM_OK);
            for (int64_t rows = 1; rows <= 3; rows++)
                CHECK(prefix_rows_match(a, b, false, c0, full, rows));
            tm_free(c0); tm_free(full); tm_free(b); tm_free(a);
        }
    }
    tm__set_isa(best);
}

/* An A of a few panels against a row-major B reads B in place whatever its
 * width and depth, and runs the tiles B panel outer: the bits must equal
 * those rows of a product with enough rows to take the packed, A-outer
 * path; wide rows (> 1 KiB), K blocks (k > kc), column and row tails,
 * beta. */
TEST(gemm_a_few_rows_against_a_row_major_b_give_the_same_bits_as_many)
{
    static const int64_t shapes[][2] = {{1030, 300}, {384, 1536}, {77, 40}};
    static const int64_t few[] = {1, 2, 5, 13, 20, 24, 32};
    tm__isa fam[TM__ISA_COUNT], best = tm__cpu_isa();
    int nf = families(fam);
    for (int f = 0; f < nf; f++) {
        REQUIRE(tm__set_isa(fam[f]));
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            int64_t k = shapes[s][0], n = shapes[s][1];
            tm_tensor *a = tm_randn((int64_t[]){100, k}, 2, TM_F32);
            tm_tensor *b = tm_randn((int64_t[]){k, n}, 2, TM_F32);
            tm_tensor *full = tm_randn((int64_t[]){100, n}, 2, TM_F32);
            REQUIRE(a && b && full);
            tm_tensor *c0 = tm_clone(full);
            CHECK_INT(tm_gemm(false, false, 0.5, a, b, 2.0, full), TM_OK);
            for (size_t r = 0; r < sizeof few / sizeof *few; r++)
                if (!prefix_rows_match(a, b, false, c0, full, few[r]))
                    tt_fail(__FILE__, __LINE__, "family %d k %lld n %lld rows %lld differ", f,
                            (long long)k, (long long)n, (long long)few[r]);
            tm_free(c0); tm_free(full); tm_free(b); tm_free(a);
        }
    }
    tm__set_isa(best);
}

/* One or two rows against a transposed B (x · Wᵀ, decoding one token) skip
 * packing B in the x86 families: the bits must equal those rows of a
 * product with enough rows to take the packed path, across K blocks (k >
 * kc), column tails (n % 8) and depth tails (k % 8), with beta. */
TEST(gemm_few_rows_against_a_transposed_b_give_the_same_bits_as_full_tiles)
{
    static const int64_t shapes[][2] = {{77, 96}, {400, 37}, {1030, 131}, {8, 8}, {3, 5}, {33, 75}};
    tm__isa fam[TM__ISA_COUNT], best = tm__cpu_isa();
    int nf = families(fam);
    for (int f = 0; f < nf; f++) {
        REQUIRE(tm__set_isa(fam[f]));
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            int64_t k = shapes[s][0], n = shapes[s][1];
            tm_tensor *a = tm_randn((int64_t[]){16, k}, 2, TM_F32);
            tm_tensor *w = tm_randn((int64_t[]){n, k}, 2, TM_F32);
            tm_tensor *full = tm_randn((int64_t[]){16, n}, 2, TM_F32);
            REQUIRE(a && w && full);
            tm_tensor *c0 = tm_clone(full);
            CHECK_INT(tm_gemm(false, true, 0.5, a, w, 2.0, full), TM_OK);
            for (int64_t rows = 1; rows <= 3; rows++)
                if (!prefix_rows_match(a, w, true, c0, full, rows))
                    tt_fail(__FILE__, __LINE__, "family %d k %lld n %lld rows %lld differ", f,
                            (long long)k, (long long)n, (long long)rows);
            tm_free(c0); tm_free(full); tm_free(w); tm_free(a);
        }
    }
    tm__set_isa(best);
}
