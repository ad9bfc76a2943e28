"""Reference steps of torch.optim, values of torch.optim.lr_scheduler and
results of torch.nn.utils.clip_grad_{norm,value}_ (tests/data/optim.ref,
used by tests/c/test_optim.c).  Needs torch; expected values come from
PyTorch, never from Foundry.

Optimizer cases ("optim_step"): two parameters, p1 [19] (one AVX-512
vector plus a tail) and p2 [3,4], each in its own group (group 2 has
lr * lr2, and weight decay 0 when nd2 is set: Foundry's no-decay flag).
The single-tensor (foreach=False) implementation runs 100 steps on the loss
whose gradient is, elementwise in the parameter's dtype,
    grad = a * (p - t) + 0.01 * (p * p)
and steps 1, 2, 10 and 100 are recorded, one case each: what torch had
before the step (parameter, gradient, state) and after it (parameter,
state, step count).  The C test loads the "before" into a Foundry
optimizer (at step 1 both start from their own fresh state), takes that one
step and compares.  One step at a time, because whole trajectories are
ill-conditioned: in torch alone, a one-ulp nudge of the start moves the
parameters by 13 times the 1e-6 tolerance within 10 steps
(rmsprop_low_alpha_centered), 5 times over 100 (adam_low_betas), and by
0.2 to 1.6 times it in the other F32 cases, so comparing them would measure
the problem and the machine, not the optimizer; from a shared state errors
cannot compound.

Each parameter is one tensor per side, its rows stacked on a new first
dim:
    in   p, grad, then (steps > 1) the state before, in SLOTS order
    out  p, then the state after, in SLOTS order
    out  (all but SGD) i64 [2]: each parameter's step count after
arg slots says which of the kind's SLOTS are kept (1) for this case.
"""
import numpy as np
import torch

from refgen import Case, Input, rng, write

STEPS = 100
RECORDED = (1, 2, 10, 100)
KINDS = {"sgd": 0, "adam": 1, "adamw": 2, "rmsprop": 3, "adagrad": 4}
CLS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam,
       "adamw": torch.optim.AdamW, "rmsprop": torch.optim.RMSprop,
       "adagrad": torch.optim.Adagrad}
# Foundry's state names (tm_optim_state_dict: "state.<i>.<name>", in this
# order) -> torch.optim's per-parameter state keys.  Both also keep "step"
# (all but SGD): torch as a 0-d float tensor, Foundry as a 0-d int64.
SLOTS = {
    "sgd": {"momentum_buffer": "momentum_buffer"},
    "adam": {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq",
             "max_exp_avg_sq": "max_exp_avg_sq"},
    "adamw": {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq",
              "max_exp_avg_sq": "max_exp_avg_sq"},
    "rmsprop": {"square_avg": "square_avg", "grad_avg": "grad_avg",
                "momentum_buffer": "momentum_buffer"},
    "adagrad": {"sum": "sum"},
}
# The C test's bound for one step of one element: |Foundry - torch| <= 4
# ulps (of the dtype) of the largest magnitude the element had or took
# (before, after, the update: so also where it crosses zero).  Foundry
# runs PyTorch's operations in PyTorch's order with the same fused
# multiply-adds, but PyTorch's vectorized sqrt is not correctly rounded
# (ours is): a one-ulp difference there, through a division and an add,
# is at most about 3 ulps of the result; measured: 2.  This assumes
# PyTorch's vectorized CPU kernels (its AVX2 and AVX-512 ones fuse the
# same multiply-adds: generated with either, this file comes out the same).
# Its scalar fallback (ATEN_CPU_CAPABILITY=default) does not fuse, and
# where a sum cancels (the L2-decayed gradient near the optimum) one
# rounding more is many ulps of the result: do not generate with it.
ULPS = 4


def state_rows(kind, state):
    """The kind's SLOTS kept in torch's `state` (one parameter's), as
    (mask, arrays), and the step count (None for SGD)."""
    keys = set(state) - {"step"}
    mask = [int(t in keys) for t in SLOTS[kind].values()]
    assert keys == {t for t, m in zip(SLOTS[kind].values(), mask) if m}, keys
    rows = [state[t].detach().numpy().copy()
            for t, m in zip(SLOTS[kind].values(), mask) if m]
    step = int(state["step"].item()) if "step" in state else None
    return mask, rows, step


def optim_case(name, kind, dtype="f32", lr2=1.0, nd2=False, **hp):
    npdt = np.float32 if dtype == "f32" else np.float64
    tdt = torch.float32 if dtype == "f32" else torch.float64
    shapes = [(19,), (3, 4)]
    p0 = [rng.standard_normal(s).astype(npdt) for s in shapes]
    tg = [rng.standard_normal(s).astype(npdt) for s in shapes]
    a = [rng.uniform(0.2, 2.0, s).astype(npdt) for s in shapes]
    params = [torch.tensor(x, dtype=tdt) for x in p0]
    at = [torch.tensor(x) for x in a]
    tt = [torch.tensor(x) for x in tg]
    g1 = dict(hp)
    g2 = dict(hp)
    g2["lr"] = hp["lr"] * lr2
    if nd2:
        g2["weight_decay"] = 0.0
    # hp also goes to the constructor: Adagrad creates its state there,
    # from the constructor's initial_accumulator_value
    opt = CLS[kind]([dict(params=[params[0]], **g1),
                     dict(params=[params[1]], **g2)], foreach=False, **hp)
    # the arguments Foundry gets are the group's actual values, PyTorch's
    # defaults included
    grp = opt.param_groups[0]
    args = dict(kind=KINDS[kind], lr=grp["lr"],
                wd=grp.get("weight_decay", 0.0),
                momentum=grp.get("momentum", 0.0),
                dampening=grp.get("dampening", 0.0),
                betas=list(grp.get("betas", (0.9, 0.999))),
                eps=grp.get("eps", -1.0),
                alpha=grp.get("alpha", 0.99),
                lr_decay=grp.get("lr_decay", 0.0),
                init_acc=grp.get("initial_accumulator_value", 0.0),
                flags=[grp.get("nesterov", False),
                       grp.get("centered", False),
                       grp.get("amsgrad", False),
                       grp.get("maximize", False), nd2],
                lr2=lr2)
    cases = []
    for step in range(1, STEPS + 1):
        before = [p.detach().numpy().copy() for p in params]
        state0 = [state_rows(kind, opt.state[p]) for p in params]
        for p, ai, ti in zip(params, at, tt):
            p.grad = ai * (p.detach() - ti) + 0.01 * (p.detach() * p.detach())
        grads = [p.grad.numpy().copy() for p in params]
        opt.step()
        if step not in RECORDED:
            continue
        state1 = [state_rows(kind, opt.state[p]) for p in params]
        ins = []
        for x, g, (_, rows, _) in zip(before, grads, state0):
            # at step 1 both libraries start from their own fresh state
            ins.append(Input(np.stack([x, g] + (rows if step > 1 else [])),
                             dtype))
        c = Case(f"{name}_step{step}", "optim_step", ins, **args, step=step,
                 slots=state1[0][0], ulps=ULPS)
        for p, (mask, rows, _) in zip(params, state1):
            assert mask == state1[0][0]
            c.out(np.stack([p.detach().numpy()] + rows), dtype)
        if kind != "sgd":
            c.out(np.array([n for _, _, n in state1], np.int64), "i64")
        # ULPS is the bound (checked by the C test); the file's tolerance,
        # checked as well, is the one of 1e-6 relative (about 8 ulps of
        # F32) with an absolute floor of 1e-7; F64: 1e-12, 1e-14.
        cases.append(c.tol(1e-6, 1e-7) if dtype == "f32"
                     else c.tol(1e-12, 1e-14))
    return cases


def optim_cases():
    return [c for cases in [
        optim_case("sgd_plain", "sgd", lr=0.1),
        optim_case("sgd_momentum", "sgd", lr=0.05, momentum=0.9),
        optim_case("sgd_dampening_wd", "sgd", lr=0.05, momentum=0.9,
                   dampening=0.1, weight_decay=0.01),
        optim_case("sgd_nesterov_wd", "sgd", lr=0.05, momentum=0.9,
                   nesterov=True, weight_decay=1e-3),
        optim_case("sgd_maximize", "sgd", lr=1e-3, momentum=0.5,
                   maximize=True),
        optim_case("sgd_groups_nodecay", "sgd", lr=0.1, weight_decay=0.1,
                   momentum=0.3, lr2=0.2, nd2=True),
        optim_case("sgd_nesterov_f64", "sgd", "f64", lr=0.05, momentum=0.9,
                   nesterov=True, weight_decay=0.01),
        optim_case("adam_default", "adam", lr=0.01),
        optim_case("adam_amsgrad", "adam", lr=0.01, amsgrad=True),
        optim_case("adam_l2", "adam", lr=0.01, weight_decay=0.1),
        optim_case("adam_low_betas", "adam", lr=0.01, betas=(0.3, 0.8),
                   eps=1e-6),
        optim_case("adam_maximize", "adam", lr=1e-3, maximize=True),
        optim_case("adam_groups_nodecay", "adam", lr=0.02, weight_decay=0.05,
                   lr2=0.5, nd2=True),
        optim_case("adam_amsgrad_f64", "adam", "f64", lr=0.01, amsgrad=True,
                   weight_decay=0.01),
        optim_case("adamw_default", "adamw", lr=0.01),
        optim_case("adamw_amsgrad_wd", "adamw", lr=0.01, weight_decay=0.1,
                   amsgrad=True),
        optim_case("adamw_groups_nodecay", "adamw", lr=0.01,
                   weight_decay=0.2, lr2=3.0, nd2=True),
        optim_case("rmsprop_default", "rmsprop", lr=0.01),
        optim_case("rmsprop_centered", "rmsprop", lr=0.01, centered=True),
        optim_case("rmsprop_momentum", "rmsprop", lr=0.005, momentum=0.9),
        optim_case("rmsprop_centered_momentum_wd", "rmsprop", lr=0.005,
                   centered=True, momentum=0.5, weight_decay=0.01),
        optim_case("rmsprop_low_alpha_centered", "rmsprop", lr=0.01,
                   alpha=0.3, centered=True),
        optim_case("rmsprop_centered_momentum_f64", "rmsprop", "f64",
                   lr=0.005, centered=True, momentum=0.9),
        optim_case("adagrad_default", "adagrad", lr=0.1),
        optim_case("adagrad_decay_wd", "adagrad", lr=0.1, lr_decay=0.01,
                   weight_decay=0.01),
        optim_case("adagrad_init_acc", "adagrad", lr=0.1,
                   initial_accumulator_value=0.1, eps=1e-6),
        optim_case("adagrad_maximize_f64", "adagrad", "f64", lr=0.01,
                   maximize=True),
    ] for c in cases]


SCHED = {"constant": 0, "step": 1, "exponential": 2, "cosine": 3,
         "linear": 4, "one_cycle": 5}


def sched_case(name, kind, n, base_lr, make, **fields):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base_lr)
    s = make(opt)
    lrs = []
    for _ in range(n):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        s.step()
    c = Case(name, "sched", [], kind=SCHED[kind], base_lr=base_lr, n=n,
             **fields)
    c.out(np.array(lrs), "f64")
    # PyTorch updates most schedules recursively (lr *= factor); Foundry
    # uses the closed forms: equal up to accumulated rounding, far below
    # 1e-12 relative; the absolute floor covers values that reach 0.
    return c.tol(1e-12, 1e-15)


def sched_cases():
    L = torch.optim.lr_scheduler
    return [
        sched_case("constant", "constant", 20, 0.1,
                   lambda o: L.ConstantLR(o, factor=1.0, total_iters=0)),
        sched_case("step", "step", 100, 0.1,
                   lambda o: L.StepLR(o, step_size=7, gamma=0.5),
                   step_size=7, gamma=0.5),
        sched_case("exponential", "exponential", 100, 0.05,
                   lambda o: L.ExponentialLR(o, gamma=0.97), gamma=0.97),
        sched_case("cosine_warmup", "cosine", 120, 0.1,
                   lambda o: L.SequentialLR(o, [
                       L.LinearLR(o, start_factor=0.1, end_factor=1.0,
                                  total_iters=10),
                       L.CosineAnnealingLR(o, T_max=90, eta_min=1e-5)],
                       milestones=[10]),
                   warmup=10, start_factor=0.1, t_max=90, eta_min=1e-5),
        sched_case("cosine_plain", "cosine", 100, 0.01,
                   lambda o: L.CosineAnnealingLR(o, T_max=50),
                   warmup=0, t_max=50, eta_min=0.0),
        sched_case("linear_warmup", "linear", 40, 0.1,
                   lambda o: L.LinearLR(o, start_factor=0.25, end_factor=1.0,
                                        total_iters=20),
                   start_factor=0.25, end_factor=1.0, total=20),
        sched_case("linear_decay", "linear", 110, 0.1,
                   lambda o: L.LinearLR(o, start_factor=1.0, end_factor=0.0,
                                        total_iters=100),
                   start_factor=1.0, end_factor=0.0, total=100),
        sched_case("one_cycle", "one_cycle", 100, 0.1,
                   lambda o: L.OneCycleLR(o, max_lr=0.1, total_steps=100,
                                          cycle_momentum=False),
                   total=100, pct_start=0.3, div=25.0, final_div=1e4),
        sched_case("one_cycle_custom", "one_cycle", 80, 0.5,
                   lambda o: L.OneCycleLR(o, max_lr=0.5, total_steps=80,
                                          pct_start=0.25, div_factor=10.0,
                                          final_div_factor=100.0,
                                          cycle_momentum=False),
                   total=80, pct_start=0.25, div=10.0, final_div=100.0),
    ]


def clip_case(name, max_norm, norm_type, dtype="f32", scale=1.0,
              value=None):
    npdt = np.float32 if dtype == "f32" else np.float64
    gs = [(rng.standard_normal(s) * scale).astype(npdt)
          for s in [(19,), (3, 4)]]
    ps = [torch.zeros(g.shape, dtype=torch.tensor(g).dtype,
                      requires_grad=True) for g in gs]
    for p, g in zip(ps, gs):
        p.grad = torch.tensor(g.copy())
    ins = [Input(g, dtype) for g in gs]
    if value is not None:
        torch.nn.utils.clip_grad_value_(ps, value, foreach=False)
        c = Case(name, "clip_value", ins, value=value)
    else:
        total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type,
                                               foreach=False)
        c = Case(name, "clip_norm", ins, max_norm=max_norm,
                 norm_type=norm_type)
        c.out(np.array(float(total)), "f64")
    for p in ps:
        c.out(p.grad.numpy(), dtype)
    # PyTorch sums an F32 norm in float32, Foundry in double: 1e-6.
    return c.tol(1e-6, 1e-7) if dtype == "f32" else c.tol(1e-12, 1e-14)


def clip_cases():
    return [
        clip_case("clip_l2", 1.0, 2.0),
        clip_case("clip_l2_noop", 100.0, 2.0),
        clip_case("clip_inf", 0.5, float("inf")),
        clip_case("clip_l1", 2.0, 1.0),
        clip_case("clip_l3", 0.7, 3.0),
        clip_case("clip_l2_f64", 1.0, 2.0, "f64", scale=3.0),
        clip_case("clip_value", None, None, value=0.5),
    ]


if __name__ == "__main__":
    torch.set_num_threads(1)
    write("optim.ref", optim_cases() + sched_cases() + clip_cases(),
          "torch " + torch.__version__)
