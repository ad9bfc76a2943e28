/* qkern_select.c — which family of quantized kernels runs: the portable
 * one (the reference dot, row by row) and the pick for this CPU. */
#include "qact.h"
#include "qmatmul.h"

#include "../cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <stdatomic.h>
#endif

#define PORTABLE_ROWS(fn, dt)                                                 \
    static void fn(const void *w, const void *a, size_t as, int na,           \
                   int64_t nb, float *out)                                    \
    {                                                                         \
        int64_t n = nb * tm__qtraits_of(dt)->block;                           \
        for (int j = 0; j < na; j++)                                          \
            out[j] = tm__qdot_ref(dt, w, (const char *)a + (size_t)j * as, n);\
    }
PORTABLE_ROWS(rows_q8_0, TM_Q8_0)
PORTABLE_ROWS(rows_q4_0, TM_Q4_0)
PORTABLE_ROWS(rows_q4_1, TM_Q4_1)
PORTABLE_ROWS(rows_q5_0, TM_Q5_0)
PORTABLE_ROWS(rows_q5_1, TM_Q5_1)
PORTABLE_ROWS(rows_q4_k, TM_Q4_K)
PORTABLE_ROWS(rows_q5_k, TM_Q5_K)
PORTABLE_ROWS(rows_q6_k, TM_Q6_K)

#define SLOT(dt) [(dt) - TM_Q8_0]
static const tm__qkern portable = {
    .name = "portable",
    .rows = {SLOT(TM_Q8_0) = rows_q8_0, SLOT(TM_Q4_0) = rows_q4_0,
             SLOT(TM_Q4_1) = rows_q4_1, SLOT(TM_Q5_0) = rows_q5_0,
             SLOT(TM_Q5_1) = rows_q5_1, SLOT(TM_Q4_K) = rows_q4_k,
             SLOT(TM_Q5_K) = rows_q5_k, SLOT(TM_Q6_K) = rows_q6_k},
};

const tm__qkern *tm__qkern_portable(void) { return &portable; }

/* The x86 kernels also convert halves with F16C, which every AVX2 CPU
 * has in practice; checked all the same, once: CPUID traps to the
 * hypervisor in a virtual machine (tens of microseconds), and this is
 * asked on every quantized matmul. */
static bool x86_f16c(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static atomic_int known; /* 0: not asked yet, 1: no, 2: yes */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        /* CPUID leaf 1, ECX bit 29 (not every compiler's
         * __builtin_cpu_supports knows "f16c") */
        unsigned a, b, c, d;
        k = __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1) ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
#else
    return false;
#endif
}

const tm__qkern *tm__qkern_current(void)
{
    const tm__qkern *k = NULL;
    switch (tm__cpu_isa()) {
    case TM__ISA_AVX512:
        if (!x86_f16c()) break;
        if (tm__cpu_has_vnni()) k = tm__qkern_avx512vnni();
        if (!k) k = tm__qkern_avx2();
        break;
    case TM__ISA_AVX2:
        if (x86_f16c()) k = tm__qkern_avx2();
        break;
    case TM__ISA_NEON:
        if (tm__cpu_has_dotprod()) k = tm__qkern_neondot();
        if (!k) k = tm__qkern_neon();
        break;
    default: break;
    }
    return k ? k : &portable;
}

int tm__qkern_families(const tm__qkern **out)
{
    int n = 0;
    out[n++] = &portable;
    if (tm__isa_supported(TM__ISA_AVX2) && x86_f16c() && tm__qkern_avx2())
        out[n++] = tm__qkern_avx2();
    if (tm__isa_supported(TM__ISA_AVX512) && x86_f16c() &&
        tm__cpu_has_vnni() && tm__qkern_avx512vnni())
        out[n++] = tm__qkern_avx512vnni();
    if (tm__isa_supported(TM__ISA_NEON) && tm__qkern_neon())
        out[n++] = tm__qkern_neon();
    if (tm__isa_supported(TM__ISA_NEON) && tm__cpu_has_dotprod() &&
        tm__qkern_neondot())
        out[n++] = tm__qkern_neondot();
    return n;
}

tm__qrows_fn tm__qrows_for(tm_dtype wt)
{
    if (wt < TM_Q8_0 || wt > TM_Q8_K) return NULL;
    const tm__qkern *k = tm__qkern_current();
    tm__qrows_fn f = k->rows[wt - TM_Q8_0];
    return f ? f : portable.rows[wt - TM_Q8_0];
}

tm__qrows8_fn tm__qrows8_for(tm_dtype wt)
{
    if (wt < TM_Q8_0 || wt > TM_Q8_K) return NULL;
    return tm__qkern_current()->rows8[wt - TM_Q8_0];
}

tm__qaxpy_fn tm__qaxpy_current(void)
{
    switch (tm__cpu_isa()) {
#if defined(__x86_64__)
    case TM__ISA_AVX2:
    case TM__ISA_AVX512: return tm__qaxpy_avx2;
#endif
#if defined(__aarch64__)
    case TM__ISA_NEON: return tm__qaxpy_neon;
#endif
    default: return tm__qaxpy_portable;
    }
}

bool tm__qact_quantize(tm_dtype dt, const float *x, void *dst, int64_t n)
{
#if defined(__x86_64__)
    tm__isa isa = tm__cpu_isa();
    if ((isa == TM__ISA_AVX2 || isa == TM__ISA_AVX512) && x86_f16c()) {
        switch (dt) {
        case TM_Q8_0: tm__qact_q8_0_avx2(x, dst, n); return true;
        case TM_Q8_1: tm__qact_q8_1_avx2(x, dst, n); return true;
        case TM_Q8_K: tm__qact_q8_k_avx2(x, dst, n); return true;
        default: break;
        }
    }
#elif defined(__aarch64__)
    if (tm__cpu_isa() == TM__ISA_NEON) {
        switch (dt) {
        case TM_Q8_0: tm__qact_q8_0_neon(x, dst, n); return true;
        case TM_Q8_1: tm__qact_q8_1_neon(x, dst, n); return true;
        case TM_Q8_K: tm__qact_q8_k_neon(x, dst, n); return true;
        default: break;
        }
    }
#else
    (void)dt, (void)x, (void)dst, (void)n;
#endif
    return false;
}
