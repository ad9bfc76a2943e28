/* cpu_features.c — run-time choice of the SIMD kernel family. */
#include "cpu_features.h"

#include "../tensor/core/tensor_impl.h"

#include <stdlib.h>
#include <string.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

static const char *const tm__isa_names[TM__ISA_COUNT] = {
    [TM__ISA_PORTABLE] = "portable", [TM__ISA_AVX2] = "avx2",
    [TM__ISA_AVX512] = "avx512", [TM__ISA_NEON] = "neon"};

static _Atomic int tm__isa_current = -1;

const char *tm__isa_name(tm__isa isa)
{
    return (unsigned)isa < TM__ISA_COUNT ? tm__isa_names[isa] : "invalid";
}

bool tm__isa_supported(tm__isa isa)
{
    switch (isa) {
    case TM__ISA_PORTABLE: return true;
#if defined(__x86_64__) && defined(__GNUC__)
    case TM__ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case TM__ISA_AVX512:
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#if defined(__aarch64__)
    case TM__ISA_NEON: return true; /* part of the aarch64 baseline */
#endif
    default: return false;
    }
}

static tm__isa tm__best_isa(void)
{
    for (int i = TM__ISA_COUNT - 1; i > 0; i--)
        if (tm__isa_supported((tm__isa)i)) return (tm__isa)i;
    return TM__ISA_PORTABLE;
}

tm__isa tm__cpu_isa(void)
{
    int cur = atomic_load(&tm__isa_current);
    if (cur >= 0) return (tm__isa)cur;
    tm__isa pick = tm__best_isa();
    const char *e = getenv("FOUNDRY_KERNEL");
    if (e && *e) {
        int want = -1;
        for (int i = 0; i < TM__ISA_COUNT; i++)
            if (!strcmp(e, tm__isa_names[i])) want = i;
        if (want >= 0 && tm__isa_supported((tm__isa)want))
            pick = (tm__isa)want;
        else
            tm_logf(TM_LOG_WARN, "FOUNDRY_KERNEL='%s' is not a kernel family "
                    "this CPU runs; using %s", e, tm__isa_names[pick]);
    }
    int expected = -1;
    atomic_compare_exchange_strong(&tm__isa_current, &expected, (int)pick);
    return (tm__isa)atomic_load(&tm__isa_current);
}

bool tm__set_isa(tm__isa isa)
{
    if (!tm__isa_supported(isa)) return false;
    atomic_store(&tm__isa_current, (int)isa);
    return true;
}

static _Atomic bool tm__dot_ext_off;

void tm__cpu_set_dot_ext(bool enabled) { atomic_store(&tm__dot_ext_off, !enabled); }

bool tm__cpu_has_vnni(void)
{
    if (atomic_load(&tm__dot_ext_off)) return false;
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

bool tm__cpu_has_dotprod(void)
{
    if (atomic_load(&tm__dot_ext_off)) return false;
#if defined(__aarch64__) && defined(__linux__)
    /* HWCAP_ASIMDDP: bit 20 of AT_HWCAP on Linux/aarch64. */
    return (getauxval(AT_HWCAP) & (1UL << 20)) != 0;
#else
    return false;
#endif
}
