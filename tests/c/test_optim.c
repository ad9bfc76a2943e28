/*
 * test_optim.c — optimizers, schedules and clipping against PyTorch
 * (tests/data/optim.ref from tests/gen/gen_optim.py; tolerances are
 * stated and justified there), and the properties PyTorch cannot check:
 * bitwise equal results for every SIMD family (here, on every reference
 * step; resume and thread counts: test_optim_api.c).
 *
 * Optimizers are compared one step at a time from a shared state: each
 * case holds torch's parameters, gradients and state before one step and
 * its parameters and state after it.  Whole trajectories are not compared
 * with torch: they are ill-conditioned (a one-ulp difference can grow past
 * any ulp-level tolerance), see gen_optim.py.  The dispatcher of the
 * reference cases is in ref_dispatch_optim.c.
 */
#include "ref_dispatch.h"

#include <stdlib.h>

#include "../../cpu/cpu_features.h"

TEST(optim_steps_schedules_and_clipping_match_torch)
{
    tt_run_ref_file("optim.ref", tt_optim_dispatch);
}

/* Every reference step through every SIMD family this CPU runs: the
 * kernels must agree bitwise, which the tolerance of the file would hide,
 * so each family's result is also compared with the portable one's,
 * exactly. */
static bool same_bits(const tm_tensor *a, const tm_tensor *b)
{
    return tm_dtype_of(a) == tm_dtype_of(b) && tm_ndim(a) == tm_ndim(b) &&
           tm_numel(a) == tm_numel(b) && tm_is_contiguous(a) &&
           tm_is_contiguous(b) &&
           memcmp(tm_data(a), tm_data(b), tm_nbytes(a)) == 0;
}

static tm_status dispatch_vs_portable(const tt_refcase *c, tm_tensor **got,
                                      int *ngot)
{
    tm_status st = tt_optim_dispatch(c, got, ngot);
    tm__isa isa = tm__cpu_isa();
    if (st != TM_OK || strcmp(c->op, "optim_step") ||
        isa == TM__ISA_PORTABLE)
        return st;
    tm_tensor *ref[TT_REF_MAX_OUT] = {0};
    int nref = 0;
    tm__set_isa(TM__ISA_PORTABLE);
    tm_status sr = tt_optim_run_step(c, ref, &nref);
    tm__set_isa(isa);
    if (sr != TM_OK || nref != *ngot)
        tt_fail(__FILE__, __LINE__, "case %s: portable run failed (%s) or "
                "gave %d outputs, %s %d", c->name, tm_status_name(sr), nref,
                tm__isa_name(isa), *ngot);
    else
        for (int k = 0; k < nref; k++)
            if (!same_bits(got[k], ref[k]))
                tt_fail(__FILE__, __LINE__, "case %s output %d: %s differs "
                        "from portable", c->name, k, tm__isa_name(isa));
    for (int k = 0; k < nref; k++) tm_free(ref[k]);
    return st;
}

TEST(optim_ref_cases_under_every_kernel_family)
{
    tm__isa saved = tm__cpu_isa();
    for (int isa = 0; isa < TM__ISA_COUNT; isa++) {
        if (!tm__set_isa((tm__isa)isa)) continue;
        tt_run_ref_file("optim.ref", dispatch_vs_portable);
    }
    tm__set_isa(saved);
}
