#!/usr/bin/env python3
"""diff_ops.py — differential random testing of Foundry's tensor ops
against numpy.

    make difftest [SEED=S] [CASES=N]
    .venv/bin/python tests/fuzz/diff_ops.py [--seed S] [--cases N]
                                            [--case I] [--ops a,b] [--stop]

The library is the foundry package's (its cffi bindings, declared from the
public headers; see ftm.py), so it runs with the project's .venv.
Case i of seed s uses np.random.default_rng([s, i]), so `--seed s --case i`
reruns exactly one case.  Every case builds its inputs as random
non-contiguous views (permute, stepped slice, select, expand of size-1 dims)
mirrored in numpy, runs one op, compares with a numpy reference that follows
Foundry's documented rules (ops.h / tensor.h), checks that failures set
tm_last_error(), and that all memory is returned (tm_memory_stats).

Tolerances (|got - want| <= atol + rtol*|want|; integers and bool exact):
- binary ops, clamp, where, copies, conversions, sorting, indexing: exact
  (both sides do one correctly rounded op in the same type); pow allows a
  few ulp of the compute type (libm differences).
- unary transcendental ops: 4 ulp of the result dtype (f32: 2^-21, f64:
  2^-49) plus 1 ulp for f16/bf16 (double rounding of our f64 reference).
- reductions: 2 ulp of the result dtype plus n * 2^-50 * sum|x| (f64
  accumulation order); var/std relative 1e-9 of the result + that term.
- matmul: k * ulp(compute type) * (|a| @ |b|) + 1 ulp of the result dtype.
- conv (diff_conv.py): the same with |x| conv |w| and k the terms of a sum.
"""
import argparse
import math
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ftm import (BIN, BIN_OP, CODE, FLOATS, INTS, KEEP, NP,  # noqa: E402
                 NULL, RED, RED_OP, ULP, UN, UN_OP, Ctx, Mismatch, bin_tol,
                 can_cast, cast, compare, ffi, i64s, ints, lib, mem_stats,
                 promote, ref_binary, ref_reduce, ref_sort, ref_unary,
                 scalar_wrap, tensors)
from diff_common import (bcast_partner, ctx_node_from, index_node,  # noqa: E402
                         outcheck, rdt, rshape)
from diff_conv import t_conv  # noqa: E402
from diff_nn import t_activation, t_spatial  # noqa: E402
from diff_reorder import t_reorder  # noqa: E402
from diff_scan import t_scan, t_scatter_reduce  # noqa: E402


def root_check(ctx, node, newview_vals, what):
    """After an in-place write through `node`, its root must hold the root's
    old values with the view region replaced by `newview_vals`."""
    exp = np.array(node.rv)
    if newview_vals is not None:
        node.replay(exp)[...] = newview_vals
    got, _ = ctx.to_np(node.root)
    msg = compare(got, exp)
    if msg:
        raise Mismatch(f"{what}: root after in-place write: {msg}")


# ------------------------------------------------------------ binary

def bin_values(ctx, op, dt, shape, role):
    n = ctx.node(shape, dt, small=(op == "pow" and dt not in FLOATS))
    if op in ("floor_divide", "remainder", "fmod", "pow") and role == "b" and dt in INTS + ("bool",) \
            and ctx.rng.random() < 0.8:
        fix = np.abs(n.v.astype(np.int64)) if op == "pow" else np.where(n.v == 0, 1, n.v)
        return ctx_node_from(ctx, fix.astype(NP[dt]), dt)
    return n


def t_binary(ctx):
    rng = ctx.rng
    op = str(rng.choice(BIN))
    opc = BIN_OP[op]
    da = rdt(rng)
    full = rshape(ctx)
    mode = str(rng.choice(["tt", "tt", "ts", "st", "tt_", "ts_"]))
    sa = full if mode != "tt" or rng.random() < 0.3 else bcast_partner(ctx, full)
    if mode == "tt_" and rng.random() < 0.1:
        sa = bcast_partner(ctx, full)  # b does not fit into a: an error
    a = bin_values(ctx, op, da, sa, "a")
    ctx.log.append(f"a: {a.describe()}")
    if mode in ("ts", "st", "ts_"):
        s = float(rng.choice([0, 1, -1, 2, 3, 0.5, -2.5, 300, 1e10, -7, 2**40,
                              float("nan"), float("inf"), 0.1, 1e-3]))
        if op == "pow" and da not in FLOATS and s < 0 and rng.random() < 0.8:
            s = -s
        ctx.log.append(f"scalar: {s!r} mode={mode}")
        pt, sdt = scalar_wrap(da, s)
        if math.isnan(s) or math.isinf(s):
            if sdt == "i64":
                return
            pt, sdt = (da, da) if da in FLOATS else ("f32", "f32")
        S = cast(np.array(s), sdt)
        X = cast(a.v, pt)
        try:
            want, wd = ref_binary(op, S, X, pt, (da,)) if mode == "st" \
                else ref_binary(op, X, S, pt, (da,))
        except ValueError:
            want = None
        rt, at = bin_tol(op, pt)
        if mode == "ts_":
            if a.expanded is None:  # stride 0 only on size-1 dims: unspecified
                return
            st = ctx.lib.tm_binary_scalar_(opc, a.t, s)
            if want is None or a.expanded or not can_cast(wd, da):
                ctx.expect_fail(st == 0, f"tm_binary_scalar_({op})")
                root_check(ctx, a, None, "failed in-place must not write")
                return
            if st != 0:
                raise Mismatch(f"tm_binary_scalar_({op}) failed: {ctx.err()}")
            w = cast(want, da)
            outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(a.t)), w, da, op + "_", rt, at)
            root_check(ctx, a, w, op + "_") if rt == 0 else None
            return
        f = ctx.lib.tm_binary_rscalar if mode == "st" else ctx.lib.tm_binary_scalar
        h = f(opc, s, a.t) if mode == "st" else f(opc, a.t, s)
        if want is None:
            ctx.own(h)
            return ctx.expect_fail(h, f"scalar {op}")
        outcheck(ctx, h, want, wd, f"{op} {mode}", rt, at)
        return
    db = rdt(rng) if rng.random() < 0.6 else da
    b = bin_values(ctx, op, db, bcast_partner(ctx, full), "b")
    ctx.log.append(f"b: {b.describe()}")
    pt = promote(da, db)
    try:
        want, wd = ref_binary(op, cast(a.v, pt), cast(b.v, pt), pt, (da, db))
    except ValueError:
        want = None
    rt, at = bin_tol(op, pt)
    if mode == "tt_":
        if a.expanded is None:  # stride 0 only on size-1 dims: unspecified
            return
        st = ctx.lib.tm_binary_(opc, a.t, b.t)
        if want is None or a.expanded or not can_cast(wd, da) or want.shape != a.v.shape:
            ctx.expect_fail(st == 0, f"tm_binary_({op})")
            root_check(ctx, a, None, "failed in-place must not write")
            return
        if st != 0:
            raise Mismatch(f"tm_binary_({op}) failed: {ctx.err()}")
        w = cast(want, da)
        outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(a.t)), w, da, op + "_", rt, at)
        if rt == 0:
            root_check(ctx, a, w, op + "_")
        return
    h = ctx.lib.tm_binary(opc, a.t, b.t)
    if want is None:
        ctx.own(h)
        return ctx.expect_fail(h, f"tm_binary({op})")
    outcheck(ctx, h, want, wd, f"tm_binary({op})", rt, at)


# ------------------------------------------------------------ unary

def t_unary(ctx):
    rng = ctx.rng
    op = str(rng.choice(UN))
    dt = rdt(rng)
    a = ctx.node(rshape(ctx), dt)
    ctx.log.append(f"a: {a.describe()}")
    p0, p1 = (1.0 if op == "softplus" else 0.01), 20.0
    if op == "clamp":
        p0, p1 = float("nan"), float("nan")
    inplace = rng.random() < 0.25
    call = f"tm_unary({op})"
    if op == "leaky_relu" and not inplace and rng.random() < 0.5:
        p0 = float(rng.choice([0.2, -1.5, 0.0]))
        call = f"tm_leaky_relu(slope={p0})"
        h = ctx.lib.tm_leaky_relu(a.t, p0)
    elif op == "softplus" and not inplace and rng.random() < 0.5:
        p0, p1 = float(rng.choice([1, 2, 0.5])), float(rng.choice([20, 1, 5]))
        call = f"tm_softplus(beta={p0}, threshold={p1})"
        h = ctx.lib.tm_softplus(a.t, p0, p1)
    elif not inplace:
        h = ctx.lib.tm_unary(UN_OP[op], a.t)
    try:
        want, od = ref_unary(op, a.v, dt, p0, p1)
    except ValueError:
        want, od = None, None
    if od in FLOATS and op not in KEEP | {"reciprocal", "square"}:
        rt = 4 * (ULP["f32"] if od in ("f16", "bf16") else ULP[od]) + \
            (ULP[od] if od in ("f16", "bf16") else 0)
        at = 1e-300 if od == "f64" else 1e-37
        if op in ("gelu_tanh", "sin", "cos") and od == "f64":
            at = 1e-15
        if op in ("gelu", "gelu_tanh", "sigmoid", "silu", "softplus") and od == "f64":
            rt = 1e-12  # exp/erfc tails: relative error ~ x^2 ulp of x
    else:
        rt = at = 0.0
    if inplace:
        if a.expanded is None:  # stride 0 only on size-1 dims: unspecified
            return
        st = ctx.lib.tm_unary_(UN_OP[op], a.t)
        call = f"tm_unary_({op})"
        if want is None or od != dt or a.expanded:
            ctx.expect_fail(st == 0, call)
            return root_check(ctx, a, None, "failed in-place must not write")
        if st != 0:
            raise Mismatch(f"{call} failed: {ctx.err()}")
        got = outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(a.t)), want, od, call, rt, at)
        return root_check(ctx, a, got, call)
    if want is None:
        ctx.own(h)
        return ctx.expect_fail(h, call)
    outcheck(ctx, h, want, od, call, rt, at)


# ------------------------------------------------------------ where / clamp

def t_where(ctx):
    rng = ctx.rng
    sh = rshape(ctx)
    c = ctx.node(bcast_partner(ctx, sh), rdt(rng))
    a = ctx.node(bcast_partner(ctx, sh), rdt(rng))
    b = ctx.node(sh, rdt(rng))
    for n, x in zip("cab", (c, a, b)):
        ctx.log.append(f"{n}: {x.describe()}")
    pt = promote(a.dt, b.dt)
    want = np.where(c.v != 0, cast(a.v, pt), cast(b.v, pt))
    outcheck(ctx, ctx.lib.tm_where(c.t, a.t, b.t), want, pt, "tm_where")


def t_clamp(ctx):
    rng = ctx.rng
    dt = rdt(rng)
    sh = rshape(ctx)
    if rng.random() < 0.5:
        x = ctx.node(sh, dt)
        lo = float(rng.choice([-1, 0, 2, -0.5, float("nan"), 5, 1e9]))
        hi = float(rng.choice([1, 3, 0.5, float("nan"), -2, 100]))
        ctx.log.append(f"x: {x.describe()}\n  lo={lo} hi={hi}")
        integral = all(math.isnan(v) or v.is_integer() for v in (lo, hi))
        od = dt if dt in FLOATS else (("i64" if dt == "bool" else dt) if integral else "f32")
        if math.isnan(lo) and math.isnan(hi):
            od = dt  # no bounds: every dtype kept
        if od in INTS:  # integral bounds saturate to the dtype's range
            info = np.iinfo(NP[od])
            sat = lambda v: min(max(int(v), int(info.min)), int(info.max))  # noqa
            w = x.v.astype(np.int64)
            w = w if math.isnan(lo) else np.maximum(w, sat(lo))
            w = w if math.isnan(hi) else np.minimum(w, sat(hi))
        else:
            w = cast(x.v, od).astype(np.float64)
            with np.errstate(all="ignore"):
                w = w if math.isnan(lo) else np.where(np.isnan(w), w, np.maximum(w, lo))
                w = w if math.isnan(hi) else np.where(np.isnan(w), w, np.minimum(w, hi))
        w = cast(w, od)
        if rng.random() < 0.3:
            if x.expanded is None:  # stride 0 only on size-1 dims: unspecified
                return
            st = ctx.lib.tm_clamp_(x.t, lo, hi)
            if od != dt or x.expanded:
                ctx.expect_fail(st == 0, "tm_clamp_")
                return root_check(ctx, x, None, "failed tm_clamp_ must not write")
            if st != 0:
                raise Mismatch(f"tm_clamp_ failed: {ctx.err()}")
            outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(x.t)), w, od, "tm_clamp_")
            return root_check(ctx, x, w, "tm_clamp_")
        outcheck(ctx, ctx.lib.tm_clamp(x.t, lo, hi), w, od, "tm_clamp")
        return
    x = ctx.node(sh, dt)
    lo = ctx.node(bcast_partner(ctx, sh), rdt(rng)) if rng.random() < 0.8 else None
    hi = ctx.node(bcast_partner(ctx, sh), rdt(rng)) if rng.random() < 0.8 or lo is None else None
    pt = dt
    for n, v in (("x", x), ("lo", lo), ("hi", hi)):
        if v is not None:
            ctx.log.append(f"{n}: {v.describe()}")
            pt = promote(pt, v.dt)
    w = cast(x.v, pt)
    with np.errstate(all="ignore"):
        for bnd, f in ((lo, np.maximum), (hi, np.minimum)):
            if bnd is not None:
                w = f(w, cast(bnd.v, pt))  # np.maximum propagates NaN
    outcheck(ctx, ctx.lib.tm_clamp_tensor(x.t, lo.t if lo else NULL, hi.t if hi else NULL),
             cast(w, pt), pt, "tm_clamp_tensor")


# ------------------------------------------------------------ reductions

def t_reduce(ctx):
    rng = ctx.rng
    op = str(rng.choice(RED))
    dt = rdt(rng)
    x = ctx.node(rshape(ctx), dt)
    nd = x.v.ndim
    keep = bool(rng.random() < 0.5)
    if rng.random() < 0.25 or nd == 0:
        dims = [] if nd or rng.random() < 0.5 else [int(rng.choice([0, -1]))]
        axes = tuple(range(nd))
    else:
        k = int(rng.integers(1, nd + 1))
        ds = list(rng.permutation(nd)[:k])
        dims = [int(d) - nd if rng.random() < 0.3 else int(d) for d in ds]
        axes = tuple(sorted(int(d) for d in ds))
    p = 0.0
    if op in ("var", "std"):
        p = float(rng.choice([0, 1, 1, 2, 0.5]))
    if op == "norm":
        p = float(rng.choice([2, 2, 1, np.inf, -np.inf, 0, 3, 0.5]))
    ctx.log.append(f"x: {x.describe()}\n  dims={dims} keepdim={keep} p={p}")
    h = ctx.lib.tm_reduce(RED_OP[op], x.t, ints(dims) if dims else NULL, len(dims), p, keep)
    try:
        want, od = ref_reduce(op, x.v, dt, axes, keep, p)
    except ValueError:
        ctx.own(h)
        return ctx.expect_fail(h, f"tm_reduce({op})")
    if x.v.ndim == 0:
        want = np.asarray(want).reshape(())
    rt, at = 0.0, 0.0
    if od in FLOATS and op not in ("max", "min"):
        n = max(1, int(np.prod([x.v.shape[a] for a in axes])) if axes else 1)
        with np.errstate(all="ignore"):
            mag = np.abs(x.v.astype(np.float64))
            mag = np.where(np.isfinite(mag), mag, 0)
            s = float(np.max(np.sum(mag, axis=axes))) if mag.size else 0.0
            if op == "prod":
                s = 0.0
        rt = 2 * ULP[od] + (n * 2.0**-50 if op == "prod" else 0)
        at = n * 2.0**-50 * s
        if op in ("var", "std", "logsumexp", "norm", "mean"):
            rt += 1e-9 if od == "f64" else 2 * ULP["f32"]
            at = at * (s if op == "var" else 1) / (1 if op != "mean" else n)
    outcheck(ctx, h, want, od, f"tm_reduce({op})", rt, at)


def t_argcum(ctx):
    rng = ctx.rng
    dt = rdt(rng)
    x = ctx.node(rshape(ctx), dt)
    nd = x.v.ndim
    op = str(rng.choice(["argmax", "argmin", "argmax_all", "argmin_all", "cumsum", "cumsum"]))
    dim = int(rng.integers(-nd, nd)) if nd else int(rng.choice([0, -1]))
    keep = bool(rng.random() < 0.5)
    ctx.log.append(f"x: {x.describe()}\n  op={op} dim={dim} keepdim={keep}")
    v = x.v.astype(np.float64) if dt in FLOATS else x.v.astype(np.int64)
    if op == "cumsum":
        h = ctx.lib.tm_cumsum(x.t, dim)
        if nd == 0:
            want = v
        else:
            want = np.cumsum(v, axis=dim)
        od = dt if dt in FLOATS else "i64"
        n = x.v.shape[dim] if nd else 1
        s = float(np.sum(np.abs(np.where(np.isfinite(v), v, 0)))) if dt in FLOATS else 0
        return outcheck(ctx, h, cast(want, od), od, "tm_cumsum",
                        ULP.get(od, 0) * 2 if od in FLOATS else 0, n * 2.0**-50 * s)
    f = np.argmax if op.startswith("argmax") else np.argmin
    if op.endswith("_all"):
        h = (ctx.lib.tm_argmax_all if op == "argmax_all" else ctx.lib.tm_argmin_all)(x.t)
        if v.size == 0:
            ctx.own(h)
            return ctx.expect_fail(h, op)
        return outcheck(ctx, h, np.array(f(v.ravel()), dtype=np.int64), "i64", op)
    h = (ctx.lib.tm_argmax if op == "argmax" else ctx.lib.tm_argmin)(x.t, dim, keep)
    if nd and x.v.shape[dim] == 0:
        ctx.own(h)
        return ctx.expect_fail(h, op)
    want = f(v, axis=dim if nd else None, keepdims=keep if nd else False)
    outcheck(ctx, h, np.asarray(want, dtype=np.int64).reshape(np.shape(want)), "i64", op)


# ------------------------------------------------------------ matmul

def t_matmul(ctx):
    rng = ctx.rng
    da, db = rdt(rng), rdt(rng)
    m, k, n = (int(rng.integers(0, 6)) for _ in range(3))
    if ctx.big_ok and rng.random() < 0.05:
        m, k, n = 64, 300, 48
    form = str(rng.choice(["dot", "mm", "vm", "mv", "batch"]))
    batch = [int(rng.choice([1, 2, 3])) for _ in range(int(rng.integers(1, 3)))]
    sa = {"dot": [k], "mm": [m, k], "vm": [k], "mv": [m, k], "batch": batch + [m, k]}[form]
    sb = {"dot": [k], "mm": [k, n], "vm": [k, n], "mv": [k],
          "batch": bcast_partner(ctx, batch) + [k, n]}[form]
    if rng.random() < 0.5 and form == "batch":
        sa, sb = sa[int(rng.integers(0, len(batch) + 1)):], sb
    if rng.random() < 0.05:
        sb = list(sb)
        sb[-2 if len(sb) > 1 else 0] += 1  # inner mismatch
    a, b = ctx.node(sa, da, special=0), ctx.node(sb, db, special=0)
    ctx.log.append(f"a: {a.describe()}\nb: {b.describe()}")
    h = ctx.lib.tm_matmul(a.t, b.t)
    pt = promote(da, db)
    try:
        if pt == "bool":
            raise ValueError("bool")
        if pt in FLOATS:
            A, B = cast(a.v, pt).astype(np.float64), cast(b.v, pt).astype(np.float64)
        else:
            A, B = a.v.astype(np.int64), b.v.astype(np.int64)
        want = np.matmul(A, B)
        mag = np.matmul(np.abs(A), np.abs(B)) if pt in FLOATS else None
    except ValueError:
        ctx.own(h)
        return ctx.expect_fail(h, "tm_matmul")
    rt, at = 0.0, 0.0
    if pt in FLOATS:
        kk = a.v.shape[-1]
        at = kk * (ULP["f64"] if pt == "f64" else ULP["f32"]) * mag
        rt = ULP[pt]
    outcheck(ctx, h, cast(want, pt), pt, "tm_matmul", rt, at)


# ------------------------------------------------------------ indexing

def t_index(ctx):
    rng = ctx.rng
    op = str(rng.choice(["gather", "scatter", "scatter_add", "index_select",
                         "masked_fill", "scatter_", "scatter_add_", "masked_fill_"]))
    dt = rdt(rng)
    nd = int(rng.integers(1, 4))
    sh = [int(rng.integers(0 if op == "masked_fill" else 1, 5)) for _ in range(nd)]
    x = ctx.node(sh, dt)
    d = int(rng.integers(-nd, nd))
    ctx.log.append(f"x: {x.describe()}\n  op={op} dim={d}")
    xv = x.v
    if op.startswith("masked_fill"):
        mdt = "bool" if rng.random() < 0.9 else rdt(rng)
        mk = ctx.node(bcast_partner(ctx, sh), mdt)
        val = float(rng.choice([0, -1.5, 7, float("nan"), 1e5, float("-inf")]))
        ctx.log.append(f"mask: {mk.describe()}\n  value={val}")
        try:
            if mdt != "bool":
                raise ValueError
            want = np.where(mk.v, cast(np.array(val), dt), xv)
            if want.shape != xv.shape:
                raise ValueError
        except ValueError:
            want = None
        if op.endswith("_"):
            if x.expanded is None:  # stride 0 only on size-1 dims: unspecified
                return
            st = ctx.lib.tm_masked_fill_(x.t, mk.t, val)
            if want is None or x.expanded:
                ctx.expect_fail(st == 0, op)
                return root_check(ctx, x, None, op)
            if st:
                raise Mismatch(f"{op} failed: {ctx.err()}")
            outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(x.t)), want, dt, op)
            return root_check(ctx, x, want, op)
        h = ctx.lib.tm_masked_fill(x.t, mk.t, val)
        if want is None:
            ctx.own(h)
            return ctx.expect_fail(h, op)
        return outcheck(ctx, h, want, dt, op)
    size = sh[d]
    if op == "index_select":
        ish = [] if rng.random() < 0.2 else [int(rng.integers(0, 6))]
        ix = index_node(ctx, ish, size)
        ctx.log.append(f"index: {ix.describe()}")
        h = ctx.lib.tm_index_select(x.t, d, ix.t)
        iv = ix.v.reshape(-1).astype(np.int64)
        if ((iv < -size) | (iv >= size)).any():
            ctx.own(h)
            return ctx.expect_fail(h, op)
        return outcheck(ctx, h, np.take(xv, iv % max(size, 1), axis=d), dt, op)
    ish = [int(rng.integers(0, s + 1)) for s in sh]
    ix = index_node(ctx, ish, size)
    iv = ix.v.astype(np.int64)
    ctx.log.append(f"index: {ix.describe()}")
    oob = ((iv < -size) | (iv >= size)).any()
    if op == "gather":
        h = ctx.lib.tm_gather(x.t, d, ix.t)
        if oob:
            ctx.own(h)
            return ctx.expect_fail(h, op)
        sub = xv[tuple(slice(0, s) if i != d % nd else slice(None) for i, s in enumerate(ish))]
        return outcheck(ctx, h, np.take_along_axis(sub, iv % size, axis=d), dt, op)
    ssh = [s + int(rng.integers(0, 2)) for s in ish]
    src = ctx.node(ssh, dt)
    ctx.log.append(f"src: {src.describe()}")
    want = xv.copy()
    add = op.startswith("scatter_add")
    for pos in np.ndindex(*iv.shape):
        tgt = list(pos)
        tgt[d % nd] = int(iv[pos]) % max(size, 1)
        tgt = tuple(tgt)
        sv = src.v[pos]
        if not add:
            want[tgt] = sv
        elif dt == "bool":
            want[tgt] = want[tgt] or sv
        elif dt in FLOATS:
            want[tgt] = cast(np.float64(want[tgt]) + np.float64(sv), dt)
        else:
            want[tgt] = cast(np.array(int(want[tgt]) + int(sv)), dt)
    fn = {"scatter": ctx.lib.tm_scatter, "scatter_add": ctx.lib.tm_scatter_add,
          "scatter_": ctx.lib.tm_scatter_, "scatter_add_": ctx.lib.tm_scatter_add_}[op]
    if x.expanded is None:  # stride 0 only on size-1 dims: unspecified
        return
    r = fn(x.t, d, ix.t, src.t)
    if op.endswith("_"):
        if oob or x.expanded:
            ctx.expect_fail(r == 0, op)
            return root_check(ctx, x, None, op)
        if r:
            raise Mismatch(f"{op} failed: {ctx.err()}")
        outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(x.t)), want, dt, op)
        return root_check(ctx, x, want, op)
    if oob:
        ctx.own(r)
        return ctx.expect_fail(r, op)
    outcheck(ctx, r, want, dt, op)


# ------------------------------------------------------------ shaping

def t_shape(ctx):
    rng = ctx.rng
    op = str(rng.choice(["cat", "stack", "split", "chunk", "pad", "repeat",
                         "tril", "triu", "tril_", "triu_", "to_dtype",
                         "reshape", "flatten", "copy_"]))
    dt = rdt(rng)
    sh = rshape(ctx, lo=0)
    nd = len(sh)
    if op in ("cat", "stack"):
        nt = int(rng.integers(1, 4))
        d = int(rng.integers(-nd - (op == "stack"), nd + (op == "stack"))) if nd or op == "stack" else 0
        nodes = []
        for i in range(nt):
            s = list(sh)
            if op == "cat" and nd:
                s[d] = int(rng.integers(0, 4))
            if op == "cat" and rng.random() < 0.1:
                s = [0]
            nodes.append(ctx.node(s, rdt(rng) if rng.random() < 0.3 else dt))
            ctx.log.append(f"t{i}: {nodes[-1].describe()}")
        ctx.log.append(f"  dim={d}")
        arr = ffi.new("tm_tensor *[]", [n.t for n in nodes])
        h = (ctx.lib.tm_cat if op == "cat" else ctx.lib.tm_stack)(arr, nt, d)
        pt = nodes[0].dt
        for n in nodes[1:]:
            pt = promote(pt, n.dt)
        vs = [cast(n.v, pt) for n in nodes]
        try:
            if op == "cat":
                keep = [v for v in vs if v.shape != (0,)]
                want = np.concatenate(keep, axis=d) if keep else vs[0]
            else:
                want = np.stack(vs, axis=d)
        except (ValueError, np.exceptions.AxisError):
            ctx.own(h)
            return ctx.expect_fail(h, op)
        return outcheck(ctx, h, want, pt, op)
    x = ctx.node(sh, dt)
    ctx.log.append(f"x: {x.describe()}")
    xv = x.v
    if op in ("split", "chunk"):
        if nd == 0:
            return
        d = int(rng.integers(-nd, nd))
        n = sh[d]
        out = tensors(512)
        if op == "split":
            size = int(rng.integers(0 if n == 0 else 1, 5))
            cnt = ctx.lib.tm_split(x.t, size, d, out, 512)
            pieces = [max(0, min(size, n - i)) for i in range(0, n, size)] if n else [0]
        else:
            chunks = int(rng.integers(1, 5))
            cnt = ctx.lib.tm_chunk(x.t, chunks, d, out, 512)
            cs = -(-n // chunks)
            pieces = [min(cs, n - i) for i in range(0, n, cs)] if n else [0] * chunks
        ctx.log.append(f"  {op} dim={d} arg={size if op == 'split' else chunks}")
        if cnt < 0:
            raise Mismatch(f"{op} failed: {ctx.err()}")
        for i in range(cnt):
            ctx.own(out[i])
        if cnt != len(pieces):
            raise Mismatch(f"{op}: {cnt} pieces, expected {len(pieces)} {pieces}")
        off = 0
        for i, p in enumerate(pieces):
            want = np.take(xv, range(off, off + p), axis=d)
            outcheck(ctx, out[i], want, dt, f"{op} piece {i}")
            off += p
        return
    if op == "pad":
        npad = 2 * int(rng.integers(0, nd + 1))
        pad = [int(rng.integers(-2, 4)) for _ in range(npad)]
        val = float(rng.choice([0, 1.5, -3, float("nan")]))
        ctx.log.append(f"  pad={pad} value={val}")
        h = ctx.lib.tm_pad(x.t, i64s(pad), npad, val)
        want = xv
        for i in range(npad // 2):  # out[j] = in[j - before] where in range
            ax = nd - 1 - i
            b, a = pad[2 * i], pad[2 * i + 1]
            n = want.shape[ax]
            if n + a + b < 0:
                ctx.own(h)
                return ctx.expect_fail(h, "tm_pad")
            src = np.arange(n + a + b) - b
            ok = (src >= 0) & (src < n)
            got = np.take(want, np.clip(src, 0, max(n - 1, 0)), axis=ax) if n else \
                np.zeros(want.shape[:ax] + (n + a + b,) + want.shape[ax + 1:], want.dtype)
            m = ok.reshape((-1,) + (1,) * (nd - 1 - ax))
            want = np.where(m, got, cast(np.array(val), dt))
        return outcheck(ctx, h, want, dt, "tm_pad")
    if op == "repeat":
        reps = [int(rng.integers(0, 4)) for _ in range(nd + int(rng.integers(0, 2)))]
        ctx.log.append(f"  repeats={reps}")
        return outcheck(ctx, ctx.lib.tm_repeat(x.t, i64s(reps), len(reps)),
                        np.tile(xv, reps) if reps else xv, dt, "tm_repeat")
    if op.startswith("tri"):
        k = int(rng.integers(-4, 5))
        ctx.log.append(f"  diagonal={k}")
        f = np.tril if op.startswith("tril") else np.triu
        if op.endswith("_"):
            if x.expanded is None:  # stride 0 only on size-1 dims: unspecified
                return
            st = getattr(ctx.lib, "tm_" + op)(x.t, k)
            if nd < 2 or x.expanded:
                ctx.expect_fail(st == 0, op)
                return root_check(ctx, x, None, op)
            if st:
                raise Mismatch(f"{op} failed: {ctx.err()}")
            outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(x.t)), f(xv, k), dt, op)
            return root_check(ctx, x, f(xv, k), op)
        h = getattr(ctx.lib, "tm_" + op)(x.t, k)
        if nd < 2:
            ctx.own(h)
            return ctx.expect_fail(h, op)
        return outcheck(ctx, h, f(xv, k), dt, op)
    if op == "to_dtype":
        od = rdt(rng)
        ctx.log.append(f"  to {od}")
        return outcheck(ctx, ctx.lib.tm_to_dtype(x.t, CODE[od]), cast(xv, od), od, "tm_to_dtype")
    if op == "copy_":
        src = ctx.node(bcast_partner(ctx, sh), rdt(rng))
        ctx.log.append(f"src: {src.describe()}")
        if x.expanded is None:  # stride 0 only on size-1 dims: unspecified
            return
        st = ctx.lib.tm_copy_(x.t, src.t)
        try:
            want = np.broadcast_to(cast(src.v, dt), xv.shape)
        except ValueError:
            want = None
        if want is None or x.expanded:
            ctx.expect_fail(st == 0, "tm_copy_")
            return root_check(ctx, x, None, "tm_copy_")
        if st:
            raise Mismatch(f"tm_copy_ failed: {ctx.err()}")
        outcheck(ctx, ctx.own(ctx.lib.tm_contiguous(x.t)), want, dt, "tm_copy_")
        return root_check(ctx, x, want, "tm_copy_")
    if op == "flatten":
        if nd == 0:
            s, e = 0, 0
            want = xv.reshape(1)
        else:
            s = int(rng.integers(0, nd))
            e = int(rng.integers(s, nd))
            want = xv.reshape(sh[:s] + [int(np.prod(sh[s:e + 1]))] + sh[e + 1:])
        ctx.log.append(f"  flatten {s}..{e}")
        return outcheck(ctx, ctx.lib.tm_flatten(x.t, s, e), want, dt, "tm_flatten")
    n = xv.size
    new = [n] if n else [0, 2]
    if n and rng.random() < 0.7:
        divs = [q for q in range(1, n + 1) if n % q == 0]
        q = int(rng.choice(divs))
        new = [q, n // q] if rng.random() < 0.5 else [q, -1]
    ctx.log.append(f"  reshape {new}")
    want = xv.reshape(new)
    outcheck(ctx, ctx.lib.tm_reshape(x.t, i64s(new), len(new)), want, dt, "tm_reshape")
    hv = ctx.own(ctx.lib.tm_view(x.t, i64s(new), len(new)))
    if hv:
        outcheck(ctx, hv, want, dt, "tm_view")
    elif not ctx.err():
        raise Mismatch("tm_view failed without an error")


# ------------------------------------------------------------ sorting

def t_sort(ctx):
    rng = ctx.rng
    dt = rdt(rng)
    x = ctx.node(rshape(ctx), dt)
    nd = x.v.ndim
    dim = int(rng.integers(-nd, nd)) if nd else int(rng.choice([0, -1]))
    desc = bool(rng.random() < 0.5)
    op = str(rng.choice(["sort", "argsort", "topk"]))
    ctx.log.append(f"x: {x.describe()}\n  op={op} dim={dim} descending/largest={desc}")
    vals, idx = ref_sort(x.v, dt, dim, desc)
    vo, io = ffi.new("tm_tensor **"), ffi.new("tm_tensor **")
    if op == "sort":
        st = ctx.lib.tm_sort(x.t, dim, desc, vo, io)
    elif op == "argsort":
        return outcheck(ctx, ctx.lib.tm_argsort(x.t, dim, desc), idx, "i64", "tm_argsort")
    else:
        n = x.v.shape[dim] if nd else 1
        k = int(rng.integers(0 if nd else 1, n + 1)) if rng.random() < 0.9 else n + 1
        if not nd and rng.random() < 0.1:
            k = 0  # k == 1 for a 0-d tensor
        ctx.log.append(f"  k={k}")
        st = ctx.lib.tm_topk(x.t, k, dim, desc, vo, io)
        if k > n or (not nd and k != 1):
            ctx.own(vo[0])
            ctx.own(io[0])
            return ctx.expect_fail(st == 0, "tm_topk")
        if nd:
            if not desc:  # smallest first: ascending order
                vals, idx = ref_sort(x.v, dt, dim, False)
            vals, idx = (np.take(a, range(k), axis=dim) for a in (vals, idx))
    if st != 0:
        raise Mismatch(f"{op} failed: {ctx.err()}")
    outcheck(ctx, vo[0], vals, dt, op + " values")
    outcheck(ctx, io[0], idx, "i64", op + " indices")


FAMILIES = {"binary": (t_binary, 6), "unary": (t_unary, 4), "where": (t_where, 1),
            "clamp": (t_clamp, 1), "reduce": (t_reduce, 4), "argcum": (t_argcum, 2),
            "matmul": (t_matmul, 2), "index": (t_index, 3), "shape": (t_shape, 4),
            "sort": (t_sort, 2),
            "scan": (t_scan, 2),
            "conv": (lambda ctx: t_conv(ctx, outcheck), 1),
            "activation": (t_activation, 2),
            "scatter_reduce": (t_scatter_reduce, 1),
            "reorder": (t_reorder, 3),
            "spatial": (t_spatial, 2),
            }


def run_case(lib, seed, i, fams, verbose=False):
    rng = np.random.default_rng([seed, i])
    fam = str(rng.choice(fams, p=np.array([FAMILIES[f][1] for f in fams]) / sum(FAMILIES[f][1] for f in fams)))
    threads = int(rng.choice([1, 2, 3, 4, 7]))
    lib.tm_set_num_threads(threads)
    ctx = Ctx(lib, rng)
    m0 = mem_stats()
    lib.tm_clear_error()
    err = None
    try:
        FAMILIES[fam][0](ctx)
    except Mismatch as e:
        err = str(e)
    except Exception:
        err = "python exception in the harness:\n" + traceback.format_exc()
    ctx.free_all()
    m1 = mem_stats()
    if err is None and m1.current_bytes != m0.current_bytes:
        err = f"memory leak: current_bytes {m0.current_bytes} -> {m1.current_bytes}"
    if err:
        print(f"=== MISMATCH seed={seed} case={i} family={fam} threads={threads}")
        for line in ctx.log:
            print("  " + line)
        print("  " + err.replace("\n", "\n  "))
        print(f"  rerun: {sys.argv[0]} --seed {seed} --case {i}")
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--case", type=int, default=None, help="run only this case")
    ap.add_argument("--ops", default=",".join(FAMILIES), help="families")
    ap.add_argument("--stop", action="store_true", help="stop at the first mismatch")
    a = ap.parse_args()
    # NaN and overflow in the numpy references are expected inputs here
    np.seterr(all="ignore")
    fams = a.ops.split(",")
    t0 = time.time()
    cases = [a.case] if a.case is not None else range(a.cases)
    fails = 0
    for i in cases:
        if not run_case(lib, a.seed, i, fams):
            fails += 1
            if a.stop:
                break
    print(f"diff_ops: seed {a.seed}: {len(cases)} cases, {fails} mismatches, "
          f"{time.time() - t0:.1f} s")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
