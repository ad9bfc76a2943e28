"""diff_scan.py — the "scan" family of diff_ops.py: cumprod, cummax,
cummin and logcumsumexp, and "scatter_reduce", against the numpy
references of ftm_nn.py."""
import numpy as np

from diff_common import index_node, outcheck, rdt, rshape
from ftm import FLOATS, ULP, Mismatch, ffi
from ftm_nn import ref_scan, ref_scatter_reduce


def t_scan(ctx):
    """cumprod, cummax, cummin, logcumsumexp along a random dim."""
    rng = ctx.rng
    dt = rdt(rng)
    x = ctx.node(rshape(ctx), dt)
    nd = x.v.ndim
    op = str(rng.choice(["cumprod", "cummax", "cummin", "logcumsumexp"]))
    dim = int(rng.integers(-nd, nd)) if nd else int(rng.choice([0, -1]))
    ctx.log.append(f"x: {x.describe()}\n  op={op} dim={dim}")
    try:
        want, widx, od = ref_scan(op, x.v, dt, dim)
    except ValueError:
        want = None
    if op in ("cummax", "cummin"):
        vo, io = ffi.new("tm_tensor **"), ffi.new("tm_tensor **")
        fn = ctx.lib.tm_cummax if op == "cummax" else ctx.lib.tm_cummin
        st = fn(x.t, dim, vo, io)
        if st != 0:
            raise Mismatch(f"tm_{op} failed: {ctx.err()}")
        outcheck(ctx, vo[0], want, od, f"tm_{op} values")
        return outcheck(ctx, io[0], widx, "i64", f"tm_{op} indices")
    h = getattr(ctx.lib, "tm_" + op)(x.t, dim)
    if want is None:
        ctx.own(h)
        return ctx.expect_fail(h, "tm_" + op)
    # cumprod: the same F64 products in the same order, rounded once;
    # logcumsumexp: libm's log1p/exp against numpy's, a few F64 ulps of the
    # running value per step
    rt, at = 0.0, 0.0
    if od in FLOATS:
        rt = 2 * ULP[od]
        if op == "logcumsumexp":
            n = x.v.shape[dim] if nd else 1
            fin = np.abs(want.astype(np.float64))
            fin = fin[np.isfinite(fin)]
            at = 4 * n * 2.0**-52 * (float(fin.max()) if fin.size else 0.0)
    outcheck(ctx, h, want, od, "tm_" + op, rt, at)


def t_scatter_reduce(ctx):
    rng = ctx.rng
    kinds = ["sum", "prod", "mean", "amax", "amin"]
    k = int(rng.integers(0, 5))
    inc = bool(rng.random() < 0.5)
    dt = rdt(rng)
    nd = int(rng.integers(1, 4))
    sh = [int(rng.integers(1, 5)) for _ in range(nd)]
    x = ctx.node(sh, dt)
    d = int(rng.integers(-nd, nd))
    ish = [int(rng.integers(0, s + 1)) for s in sh]
    ish[d % nd] = int(rng.integers(0, 7))  # collisions along dim
    ix = index_node(ctx, ish, sh[d])
    src = ctx.node([s + int(rng.integers(0, 2)) for s in ish], dt)
    ctx.log.append(f"x: {x.describe()}\n  scatter_reduce {kinds[k]} dim={d} "
                   f"include_self={inc}\nindex: {ix.describe()}\n"
                   f"src: {src.describe()}")
    iv = ix.v.astype(np.int64)
    h = ctx.lib.tm_scatter_reduce(x.t, d, ix.t, src.t, k, inc)
    if ((iv < -sh[d]) | (iv >= sh[d])).any():
        ctx.own(h)
        return ctx.expect_fail(h, "scatter_reduce")
    want, rtol = ref_scatter_reduce(x.v, d, iv, src.v, kinds[k], inc, dt)
    if want is None:
        ctx.own(h)
        return ctx.expect_fail(h, "scatter_reduce")
    outcheck(ctx, h, want, dt, "scatter_reduce", rtol=rtol)
