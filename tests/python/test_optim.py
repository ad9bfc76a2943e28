"""foundry.optim against torch.optim.

Optimizers are compared one step at a time from a shared state: before
every step Foundry gets torch's current parameters, the very same gradients
and torch's optimizer state, and after it both new parameters and every
state tensor are compared.  The comparison is at ulp level, not bitwise:
Foundry follows PyTorch's per-element operations and fusions, but
PyTorch's vectorized sqrt is not correctly rounded while ours is, so a
step's result may differ by a few roundings.  Comparing whole free-running
trajectories instead would measure the problem, not the optimizer: near
the optimum a sign-of-a-tiny-gradient step can amplify a one-ulp difference
by 1e5 within 20 steps (RMSprop, alpha 0.9, weight decay 0.05, here), and
even the well-behaved configurations amplify a one-ulp nudge of the start
tenfold over 100 steps, to the very edge of a 1e-6 tolerance.  From a shared
state the errors cannot compound, whatever the trajectory does.  That a run
of many steps is the same run whatever it is cut into is checked bitwise
against Foundry itself (resume tests below, and tests/c/test_optim_api.c).

Schedules are closed forms of PyTorch's recursions: 1e-12 relative."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import foundry as F

STEPS = 100
# One step of one element, Foundry against torch, may differ by this many
# ulps of the largest magnitude that element had or took (before, after,
# the update itself; so also where it crosses zero): the one-ulp sqrt
# difference, carried through a division and an add, is at most about 3;
# measured: 2.
ULPS = 4


def problem(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((16, 8)).astype(np.float32),
            rng.standard_normal((16, 3)).astype(np.float32),
            rng.standard_normal((3, 8)).astype(np.float32) * 0.5,
            rng.standard_normal((3,)).astype(np.float32) * 0.1)


def gradients(x, y, w, b):
    """d/dw, d/db of mean((x w^T + b - y)^2), in float32 numpy: both
    libraries get the very same gradients, so only the optimizers are
    compared (not their matmul summation orders)."""
    r = (x @ w.T + b - y) * np.float32(2 / y.size)
    return (r.T @ x).astype(np.float32), r.sum(0).astype(np.float32)


def run(lib, make_opt, wrap, steps=STEPS, groups=None, clip=None):
    """A free-running trajectory (used only to compare Foundry with
    itself, bitwise)."""
    x, y, w0, b0 = problem()
    w, b = lib.nn.Parameter(wrap(w0)), lib.nn.Parameter(wrap(b0))
    opt = make_opt(groups(w, b) if groups else [w, b])
    for _ in range(steps):
        opt.zero_grad()
        gw, gb = gradients(x, y, w.detach().numpy(), b.detach().numpy())
        w.grad, b.grad = wrap(gw), wrap(gb)
        if clip:
            lib.nn.utils.clip_grad_norm_([w, b], clip)
        opt.step()
    return w.detach().numpy().copy(), b.detach().numpy().copy()


def run_foundry(cls, kw, **opts):
    return run(F, lambda p: cls(p, **kw), F.tensor, **opts)


# torch.optim's per-parameter state key -> the key in Foundry's state dict
# ("state.<i>.<key>", i = the parameter's position across groups, as in
# torch's state_dict()).  Besides these, every optimizer but SGD keeps
# "step": torch as a 0-d float tensor, Foundry as a 0-d int64.
STATE_KEYS = {
    "SGD": {"momentum_buffer": "momentum_buffer"},
    "Adam": {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq",
             "max_exp_avg_sq": "max_exp_avg_sq"},
    "AdamW": {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq",
              "max_exp_avg_sq": "max_exp_avg_sq"},
    "RMSprop": {"square_avg": "square_avg", "grad_avg": "grad_avg",
                "momentum_buffer": "momentum_buffer"},
    "Adagrad": {"sum": "sum"},
}


def torch_state(name, opt, params):
    """torch's state under Foundry's names, as numpy arrays (copies); the
    step as an int."""
    out = {}
    for i, p in enumerate(params):
        for k, v in opt.state[p].items():
            if k == "step":
                out[f"state.{i}.step"] = int(v.item())
            else:
                out[f"state.{i}.{STATE_KEYS[name][k]}"] = \
                    v.detach().numpy().copy()
    return out


def foundry_state(opt):
    out = {}
    for k, v in opt.state_dict()["state"].items():
        out[k] = int(v.item()) if k.endswith(".step") else v.numpy().copy()
    return out


def assert_ulp_close(got, want, before, what):
    """|got - want| <= ULPS ulps of max(|before|, |want|, |want - before|),
    elementwise (ulps of want's dtype), and within 1e-6 relative + 1e-7
    absolute as well."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    g, w, b = (np.asarray(a, np.float64) for a in (got, want, before))
    scale = np.maximum(np.maximum(np.abs(b), np.abs(w)), np.abs(w - b))
    tol = ULPS * np.spacing(scale.astype(want.dtype)).astype(np.float64)
    err = np.abs(g - w)
    if not (err <= tol).all():
        i = tuple(int(j) for j in
                  np.unravel_index(np.argmax(err / tol), err.shape))
        pytest.fail(f"{what}: element {list(i)}: got {float(g[i])!r}, torch "
                    f"{float(w[i])!r} (before the step {float(b[i])!r}): "
                    f"{err[i] / (tol[i] / ULPS):.1f} ulps apart, at most "
                    f"{ULPS}")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7,
                               err_msg=what)


def compare_steps(torch, name, kw, steps=STEPS, groups=None, clip=None):
    """torch runs `steps` steps; before each, Foundry's optimizer is given
    torch's parameters (copied in), gradients and state (load_state_dict;
    at the first step both start from their own fresh state), takes the
    same step, and its parameters and state are compared with torch's."""
    x, y, w0, b0 = problem()
    tw = torch.nn.Parameter(torch.tensor(w0))
    tb = torch.nn.Parameter(torch.tensor(b0))
    fw, fb = F.nn.Parameter(F.tensor(w0)), F.nn.Parameter(F.tensor(b0))
    topt = getattr(torch.optim, name)(groups(tw, tb) if groups else [tw, tb],
                                      foreach=False, **kw)
    fopt = getattr(F.optim, name)(groups(fw, fb) if groups else [fw, fb],
                                  **kw)
    tps = [p for g in topt.param_groups for p in g["params"]]
    fps = [p for g in fopt.param_groups for p in g["params"]]
    for step in range(1, steps + 1):
        at = f"{name} step {step}"
        p_before = [p.detach().numpy().copy() for p in tps]
        s_before = torch_state(name, topt, tps)
        if step > 1:
            with F.no_grad():
                for fp, p in zip(fps, p_before):
                    fp.copy_(F.tensor(p))
            fopt.load_state_dict({"state": {
                k: F.tensor(np.array(v, np.int64) if k.endswith(".step")
                            else v) for k, v in s_before.items()}})
        gw, gb = gradients(x, y, tw.detach().numpy(), tb.detach().numpy())
        tw.grad, tb.grad = torch.tensor(gw), torch.tensor(gb)
        fw.grad, fb.grad = F.tensor(gw), F.tensor(gb)
        if clip:
            torch.nn.utils.clip_grad_norm_([tw, tb], clip)
            F.nn.utils.clip_grad_norm_([fw, fb], clip)
            for what, fp, tp in (("w", fw, tw), ("b", fb, tb)):
                want = tp.grad.numpy()
                assert_ulp_close(fp.grad.numpy(), want, want,
                                 f"{at}: clipped gradient of {what}")
                fp.grad = F.tensor(tp.grad.numpy())  # the same gradients
        topt.step()
        fopt.step()
        for i, (fp, tp) in enumerate(zip(fps, tps)):
            assert_ulp_close(fp.detach().numpy(), tp.detach().numpy(),
                             p_before[i], f"{at}: parameter {i}")
        want, got = torch_state(name, topt, tps), foundry_state(fopt)
        assert sorted(got) == sorted(want), at
        for k, v in want.items():
            if k.endswith(".step"):
                assert got[k] == v, f"{at}: {k}"
            else:
                assert_ulp_close(got[k], v, s_before.get(k, np.zeros_like(v)),
                                 f"{at}: {k}")


GRID = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True,
             "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "eps": 1e-6}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True}),
    ("RMSprop", {"lr": 0.005}),
    ("RMSprop", {"lr": 0.005, "momentum": 0.9, "centered": True}),
    ("RMSprop", {"lr": 0.005, "alpha": 0.9, "weight_decay": 0.05}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.02,
                 "initial_accumulator_value": 0.1}),
]


@pytest.mark.parametrize("name,kw", GRID, ids=[f"{n}-{i}" for i, (n, _) in
                                               enumerate(GRID)])
def test_each_step_matches_torch_from_a_shared_state(name, kw, tch):
    compare_steps(tch, name, kw)


def test_groups_no_decay_and_clipping_match_torch(tch):
    """Per-group lr and weight decay, and clip_grad_norm_ before each step:
    the clipped gradients are compared too (torch sums an F32 norm in
    float32, Foundry in double: a few ulps), then both optimizers step on
    torch's."""
    def groups(w, b):
        return [{"params": [w], "lr": 0.02, "weight_decay": 0.5},
                {"params": [b], "weight_decay": 0.0}]
    compare_steps(tch, "AdamW", {"lr": 0.01}, groups=groups, clip=0.5)
    # a "no_decay" group is the same as weight_decay 0 for it: Foundry
    # against itself, the whole run, bitwise
    def nd(w, b):
        return [{"params": [w], "lr": 0.02, "weight_decay": 0.5},
                {"params": [b], "weight_decay": 0.5, "no_decay": True}]
    kw = {"lr": 0.01}
    fw, fb = run_foundry(F.optim.AdamW, kw, groups=groups, clip=0.5)
    gw, gb = run_foundry(F.optim.AdamW, kw, groups=nd, clip=0.5)
    np.testing.assert_array_equal(gb, fb)
    np.testing.assert_array_equal(gw, fw)


def test_clip_grad_norm_returns_the_norm_like_torch(tch, rng):
    g = [rng.standard_normal(s) for s in ((3, 4), (5,))]
    fp = [F.zeros(*a.shape, dtype=F.float64, requires_grad=True) for a in g]
    tp = [tch.zeros(a.shape, dtype=tch.float64, requires_grad=True)
          for a in g]
    for p, q, a in zip(fp, tp, g):
        p.grad = F.tensor(a)
        q.grad = tch.tensor(a)
    for norm in (2.0, 1.0, float("inf")):
        n1 = F.nn.utils.clip_grad_norm_(fp, 0.7, norm)
        n2 = tch.nn.utils.clip_grad_norm_(tp, 0.7, norm)
        assert n1 == pytest.approx(n2.item(), rel=1e-12)
        for p, q in zip(fp, tp):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(),
                                       rtol=1e-12)
    F.nn.utils.clip_grad_value_(fp, 0.01)
    assert max(p.grad.abs().max().item() for p in fp) <= 0.01


SCHEDS = [
    ("StepLR", {"step_size": 7, "gamma": 0.5}),
    ("ExponentialLR", {"gamma": 0.97}),
    ("CosineAnnealingLR", {"T_max": 40, "eta_min": 0.001}),
    ("LinearLR", {"start_factor": 0.1, "end_factor": 0.8, "total_iters": 30}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 100}),
]


@pytest.mark.parametrize("name,kw", SCHEDS, ids=[s for s, _ in SCHEDS])
def test_schedules_match_torch(name, kw, tch):
    fo = F.optim.SGD([F.nn.Parameter(F.ones(1))], lr=0.1)
    to = tch.optim.SGD([tch.nn.Parameter(tch.ones(1))], lr=0.1)
    fs = getattr(F.optim.lr_scheduler, name)(fo, **kw)
    ts = getattr(tch.optim.lr_scheduler, name)(to, **kw)
    for step in range(99):
        assert fo.param_groups[0]["lr"] == pytest.approx(
            to.param_groups[0]["lr"], rel=1e-12, abs=1e-15), step
        to.step()
        ts.step()
        fs.step()


def test_cosine_with_warmup_matches_torch_sequential(tch):
    fo = F.optim.SGD([F.nn.Parameter(F.ones(1))], lr=0.3)
    to = tch.optim.SGD([tch.nn.Parameter(tch.ones(1))], lr=0.3)
    fs = F.optim.lr_scheduler.CosineWithWarmup(fo, 10, 50, 0.01, 0.2)
    S = tch.optim.lr_scheduler
    ts = S.SequentialLR(to, [S.LinearLR(to, 0.2, 1.0, 10),
                             S.CosineAnnealingLR(to, 50, 0.01)], [10])
    for step in range(60):
        assert fo.param_groups[0]["lr"] == pytest.approx(
            to.param_groups[0]["lr"], rel=1e-12), step
        to.step()
        ts.step()
        fs.step()


RESUME = r"""
import sys, json
import foundry as F
path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
F.manual_seed(0)
model = F.nn.Sequential(F.nn.Linear(6, 16), F.nn.Tanh(), F.nn.Linear(16, 2))
opt = F.optim.{opt}(model.parameters(), lr=0.01)
x, y = F.randn(32, 6), F.randn(32, 2)
if mode == "resume":
    model.load_state_dict(F.load_file(path + ".model"))
    sd = F.load_file(path + ".optim")
    opt.load_state_dict({{"state": sd}})
for _ in range(n):
    opt.zero_grad()
    F.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
if mode == "save":
    F.save_file(model.state_dict(), path + ".model")
    F.save_file(opt.state_dict()["state"], path + ".optim")
print(json.dumps([p.detach().tolist() for p in model.parameters()]))
"""


@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW", "RMSprop",
                                 "Adagrad"])
def test_resume_in_a_fresh_process_is_bit_exact(opt, tmp_path):
    """N steps, save (safetensors), reload in a new process, M more steps
    == N + M steps straight, bit for bit (compared as exact floats)."""
    script = tmp_path / "train.py"
    script.write_text(RESUME.format(opt=opt))
    p = str(tmp_path / "ckpt")

    def run(*args):
        out = subprocess.run([sys.executable, str(script), p, *args],
                             capture_output=True, text=True, check=True,
                             env=dict(os.environ))
        return json.loads(out.stdout)
    run("save", "30")
    resumed = run("resume", "20")
    straight = run("straight", "50")
    assert resumed == straight


def test_optimizer_errors():
    p = F.nn.Parameter(F.ones(2))
    with pytest.raises(ValueError):
        F.optim.SGD([p], lr=-1)
    with pytest.raises(ValueError):
        F.optim.Adam([p], betas=(1.5, 0.9))
    with pytest.raises(ValueError):
        F.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(TypeError):
        F.optim.SGD([p], lr=0.1, bogus=1)
    with pytest.raises(TypeError):
        F.optim.SGD(["w"], lr=0.1)
    with pytest.raises(ValueError):
        F.optim.SGD([], lr=0.1)
    opt = F.optim.Adam([p])
    with pytest.raises(ValueError):
        opt.load_state_dict({"state": {"state.0.exp_avg": F.ones(3)}})
    opt.step()  # no gradient yet: nothing happens
    assert p.tolist() == [1.0, 1.0]
