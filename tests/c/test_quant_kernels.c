/* The CPU's quantized kernels (cpu/quant/): every kernel family this CPU
 * runs (the dot-product extensions on and off) against tm__qdot_ref, the
 * wide kernels, which family the backend picks, the activation quantizers
 * byte for byte, and the backward's bits on every family.  Tolerances:
 * quant_kernels_util.h. */
#include "quant_kernels_util.h"

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

