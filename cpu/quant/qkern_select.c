/* qkern_select.c — which family of quantized kernels runs: the portable
 * one (the reference dot, row by row) and the pick for this CPU. */
#include "qmatmul.h"

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

const tm__qkern *tm__qkern_current(void) { return &portable; }

int tm__qkern_families(const tm__qkern **out)
{
    int n = 0;
    out[n++] = &portable;
    return n;
}

tm__qrows_fn tm__qrows_for(tm_dtype wt)
{
    if (wt < TM_Q8_0 || wt > TM_Q8_K) return NULL;
    const tm__qkern *k = tm__qkern_current();
    tm__qrows_fn f = k->rows[wt - TM_Q8_0];
    return f ? f : portable.rows[wt - TM_Q8_0];
}

tm__qaxpy_fn tm__qaxpy_current(void) { return tm__qaxpy_portable; }
