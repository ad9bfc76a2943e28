"""diff_nn.py — the "activation" and "spatial" families of diff_ops.py:
the activations of nn_functional.h, and the pad modes and 1-D max pooling,
against the numpy references of ftm_nn.py."""
import numpy as np

from diff_common import outcheck, rdt, rshape
from ftm import NULL, ULP, ffi, i64s, lib
from ftm_nn import ACT, ref_activation, ref_max_pool1d, ref_pad_mode


def t_activation(ctx):
    """One activation of nn_functional.h on a random layout.  Tolerance:
    the compositions round once per step (up to five steps, F16/BF16
    intermediates included), so 16 ulp of the dtype relative, plus 16 ulp
    of |x| absolute for results that cancel (tanhshrink, softshrink and
    hardswish near their zeros)."""
    rng = ctx.rng
    op = str(rng.choice(sorted(ACT)))
    ps = [float(rng.choice(c)) for c in ACT[op]]
    if op == "rrelu" and ps[0] > ps[1]:
        ps.reverse()
    dt = rdt(rng)
    a = ctx.node(rshape(ctx), dt)
    ctx.log.append(f"a: {a.describe()}")
    call = f"tm_{op}({', '.join(map(str, ps))})"
    args = ps + ([False, NULL] if op == "rrelu" else [])
    h = getattr(ctx.lib, f"tm_{op}")(a.t, *args)
    try:
        want, od = ref_activation(op, a.v, dt, ps)
    except ValueError:
        ctx.own(h)
        return ctx.expect_fail(h, call)
    u = 16 * ULP[od]
    at = u * np.abs(a.v.astype(np.float64)) + (1e-300 if od == "f64" else 1e-37)
    outcheck(ctx, h, want, od, call, u, at)


def t_spatial(ctx):
    """tm_pad_mode (reflect / replicate / circular, every dtype) and
    tm_max_pool_nd over one dim (values and indices), exact."""
    rng = ctx.rng
    dt = rdt(rng)
    op = str(rng.choice(["pad", "max_pool1d"]))
    if op == "pad":
        mode = str(rng.choice(["reflect", "replicate", "circular"]))
        k = int(rng.integers(1, 4))
        nd = k + int(rng.integers(0, 3))  # k-1 (an error), k+1 or k+2 dims
        sh = [int(rng.integers(1, 6)) for _ in range(nd)]
        pad = [int(rng.integers(-2, 5)) for _ in range(2 * k)]
        x = ctx.node(sh, dt)
        ctx.log.append(f"x: {x.describe()}\n  mode={mode} pad={pad}")
        code = {"reflect": lib.TM_PAD_REFLECT,
                "replicate": lib.TM_PAD_REPLICATE,
                "circular": lib.TM_PAD_CIRCULAR}[mode]
        h = ctx.lib.tm_pad_mode(x.t, i64s(pad), 2 * k, code, 0.0)
        ok = nd in (k + 1, k + 2)
        for i in range(k):
            n, a, b = sh[nd - 1 - i] if ok else 1, pad[2 * i], pad[2 * i + 1]
            ok = ok and n + a + b >= 1 and not (
                mode == "reflect" and (a >= n or b >= n)) and not (
                mode == "circular" and (a > n or b > n or
                                        n - max(-a, 0) - max(-b, 0) < 1))
        if not ok:
            ctx.own(h)
            return ctx.expect_fail(h, "tm_pad_mode")
        return outcheck(ctx, h, ref_pad_mode(x.v, pad, mode), dt,
                        "tm_pad_mode")
    if dt == "bool":
        dt = "i32"
    sh = [int(rng.integers(0, 3)), int(rng.integers(1, 4)),
          int(rng.integers(1, 12))]
    k, s = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    p, d = int(rng.integers(0, k // 2 + 1)), int(rng.integers(1, 3))
    ceil = bool(rng.random() < 0.5)
    x = ctx.node(sh, dt)
    ctx.log.append(f"x: {x.describe()}\n  k={k} s={s} p={p} d={d} "
                   f"ceil={ceil}")
    o = lib.tm_pool_defaults()
    o.kernel[0], o.stride[0], o.padding[0], o.dilation[0] = k, s, p, d
    o.ceil_mode = ceil
    io = ffi.new("tm_tensor **")
    h = ctx.lib.tm_max_pool_nd(x.t, 1, ffi.new("tm_pool_opts *", o), io)
    vals, idx, n_out = ref_max_pool1d(x.v, k, s, p, d, ceil)
    if n_out < 1:
        ctx.own(h)
        ctx.own(io[0])
        return ctx.expect_fail(h, "tm_max_pool_nd")
    outcheck(ctx, h, vals, dt, "tm_max_pool_nd values")
    outcheck(ctx, io[0], idx, "i64", "tm_max_pool_nd indices")
