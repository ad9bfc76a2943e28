"""diff_reorder.py — the "reorder" family of diff_ops.py: flip, roll,
diagonal, Tensor.unfold, nonzero, masked_select, take_along_dim,
repeat_interleave and view_dtype on random non-contiguous views, against
numpy (np.flip, np.roll, np.diagonal, sliding_window_view, np.argwhere,
boolean indexing, np.take_along_axis, np.repeat, ndarray.view).

Every op but einsum only moves elements, so results must match exactly;
einsum (against np.einsum in F64) has the tolerance stated in t_einsum.
Invalid arguments (drawn now and then on purpose) must fail with an
error.
"""
import numpy as np

from ftm import (ALL, CODE, FLOATS, NP, NULL, ULP, Mismatch, cast, compare,
                 ffi, i64s, ints)

OPS = ["flip", "roll", "diagonal", "unfold", "nonzero", "masked_select",
       "take_along_dim", "repeat_interleave", "view_dtype", "einsum"]

# einsum equations (ellipsis written as "." for one broadcast dim here)
EQUATIONS = ["ij,jk->ik", "ij,jk", "bij,bjk->bik", "bij,bkj->bki", "ij->ji",
             "ii->i", "ii", "ij->", "i,j->ij", "ij,ij->i", "iij->j",
             "...ij,...jk->...ik", "...i,...i", "ab,bc,ca->", "abc,cd->dba",
             "i,i->i", "ij,j"]


def _out(ctx, h, want, wdt, what):
    ctx.check(h, what)
    got, gdt = ctx.to_np(h)
    want = np.asarray(want)
    if gdt != wdt:
        raise Mismatch(f"{what}: dtype {gdt}, expected {wdt}")
    if got.shape != want.shape:
        raise Mismatch(f"{what}: shape {got.shape}, expected {want.shape}")
    same = (got == want) | ((got != got) & (want != want))
    if not np.all(same):
        raise Mismatch(f"{what}: values differ\n  expected={want.ravel()[:40]}"
                       f"\n  got     ={got.ravel()[:40]}")


def _fail(ctx, h, what):
    ctx.own(h)
    ctx.expect_fail(h, what)


def _shape(rng, lo=1):
    nd = int(rng.choice([0, 1, 2, 3, 3, 4]))
    return [int(rng.integers(0 if rng.random() < 0.1 else lo, 5))
            for _ in range(nd)]


def t_reorder(ctx):
    rng, lib = ctx.rng, ctx.lib
    op = str(rng.choice(OPS))
    if op == "einsum":
        return t_einsum(ctx)
    dt = str(rng.choice(ALL))
    sh = _shape(rng)
    x = ctx.node(sh, dt)
    xv, nd = x.v, len(sh)
    ctx.log.append(f"x: {x.describe()}\n  op={op}")
    if op == "flip":
        k = int(rng.integers(0, nd + 1))
        dims = [int(d) for d in rng.permutation(max(nd, 1))[:k]]
        dims = [d - nd if rng.random() < 0.5 else d for d in dims]
        dup = nd and dims and rng.random() < 0.05
        if dup:
            dims.append(dims[0])
        ctx.log.append(f"  dims={dims}")
        h = lib.tm_flip(x.t, ints(dims), len(dims))
        if dup:
            return _fail(ctx, h, op)
        axes = tuple(d % nd for d in dims) if nd else ()
        return _out(ctx, h, np.flip(xv, axes) if axes else xv, dt, op)
    if op == "roll":
        if nd == 0 or rng.random() < 0.3:
            s = int(rng.integers(-9, 10))
            ctx.log.append(f"  shift={s} (flattened)")
            h = lib.tm_roll(x.t, i64s([s]), 1, NULL, 0)
            return _out(ctx, h, np.roll(xv, s), dt, op)
        k = int(rng.integers(1, nd + 1))
        dims = [int(rng.integers(-nd, nd)) for _ in range(k)]
        shifts = [int(rng.integers(-9, 10)) for _ in range(k)]
        ctx.log.append(f"  shifts={shifts} dims={dims}")
        h = lib.tm_roll(x.t, i64s(shifts), k, ints(dims), k)
        return _out(ctx, h, np.roll(xv, shifts, [d % nd for d in dims]), dt,
                    op)
    if op == "diagonal":
        off = int(rng.integers(-5, 6))
        d1, d2 = (int(rng.integers(-nd, nd)) for _ in range(2)) if nd else \
            (0, 1)
        ctx.log.append(f"  offset={off} dim1={d1} dim2={d2}")
        h = lib.tm_diagonal(x.t, off, d1, d2)
        if nd < 2 or d1 % nd == d2 % nd:
            return _fail(ctx, h, op)
        return _out(ctx, h, np.diagonal(xv, off, d1 % nd, d2 % nd), dt, op)
    if op == "unfold":
        d = int(rng.integers(-nd, nd)) if nd else 0
        n = sh[d] if nd else 1
        size = int(rng.integers(0, n + 2))
        step = int(rng.integers(0 if rng.random() < 0.05 else 1, 4))
        ctx.log.append(f"  dim={d} size={size} step={step}")
        h = lib.tm_unfold(x.t, d, size, step)
        if size > n or step < 1:
            return _fail(ctx, h, op)
        v = xv.reshape(1) if nd == 0 else xv
        w = np.lib.stride_tricks.sliding_window_view(v, size, axis=d % max(nd, 1))
        w = np.take(w, range(0, n - size + 1, step), axis=d % max(nd, 1))
        if nd == 0:
            w = w.reshape(size)
        return _out(ctx, h, w, dt, op)
    if op == "nonzero":
        return _out(ctx, lib.tm_nonzero(x.t), np.argwhere(xv), "i64", op)
    if op == "masked_select":
        msh = [1 if rng.random() < 0.3 else s for s in sh]
        msh = msh[int(rng.integers(0, nd + 1)):] if rng.random() < 0.3 else msh
        mdt = "bool" if rng.random() < 0.9 else str(rng.choice(ALL))
        m = ctx.node(msh, mdt)
        ctx.log.append(f"mask: {m.describe()}")
        h = lib.tm_masked_select(x.t, m.t)
        if mdt != "bool":
            return _fail(ctx, h, op)
        a, b = np.broadcast_arrays(xv, m.v)
        return _out(ctx, h, a[b], dt, op)
    if op == "take_along_dim":
        if nd == 0 or rng.random() < 0.2:
            n = max(xv.size, 1)
            iv = rng.integers(-n, n, (int(rng.integers(0, 5)),))
            bad = xv.size == 0 and iv.size > 0
            ix = ctx.own(ctx.from_np(iv, "i64"))
            h = lib.tm_take_along_dim(x.t, ix, NULL)
            if bad:
                return _fail(ctx, h, op)
            return _out(ctx, h, xv.reshape(-1)[iv % n], dt, op)
        d = int(rng.integers(-nd, nd))
        n = sh[d]
        ish = [1 if rng.random() < 0.3 else s for s in sh]
        ish[d] = int(rng.integers(0, 5))
        iv = rng.integers(-n, n, ish) if n else np.zeros(ish, np.int64)
        ix = ctx.own(ctx.from_np(iv, str(rng.choice(["i64", "i32"]))))
        ctx.log.append(f"  dim={d} indices shape={ish}")
        h = lib.tm_take_along_dim(x.t, ix, ffi_int(d))
        if n == 0 and iv.size:
            return _fail(ctx, h, op)
        bshape = [(b if a == 1 else a) if i != d % nd else a
                  for i, (a, b) in enumerate(zip(sh, ish))]
        xb = np.broadcast_to(xv, bshape)
        ibs = list(bshape)
        ibs[d % nd] = ish[d]
        ib = np.broadcast_to(iv, ibs)
        return _out(ctx, h, np.take_along_axis(xb, ib % max(n, 1), d % nd),
                    dt, op)
    if op == "repeat_interleave":
        d = int(rng.integers(-nd, nd)) if nd and rng.random() < 0.7 else None
        n = sh[d] if d is not None else xv.size
        one = rng.random() < 0.3
        reps = rng.integers(0, 4, 1 if one else n)
        neg = reps.size and rng.random() < 0.05
        if neg:
            reps[0] = -1
        rdt = str(rng.choice(["i64", "i32"] if neg else ["i64", "i32", "u8"]))
        r = ctx.own(ctx.from_np(reps, rdt))
        ctx.log.append(f"  dim={d} repeats={reps.tolist()}")
        h = lib.tm_repeat_interleave(x.t, r, NULL if d is None else ffi_int(d),
                                     -1)
        if neg:
            return _fail(ctx, h, op)
        want = np.repeat(xv, reps[0] if one else reps,
                         axis=None if d is None else d % nd)
        return _out(ctx, h, want, dt, op)
    # view_dtype: the same bytes as another dtype (no bf16 in numpy)
    if dt == "bf16":
        return None
    to = str(rng.choice([a for a in ALL if a != "bf16"]))
    ctx.log.append(f"  to={to}")
    h = lib.tm_view_dtype(x.t, CODE[to])
    so, sn = np.dtype(NP[dt]).itemsize, np.dtype(NP[to]).itemsize
    st = [lib.tm_strides(x.t)[i] for i in range(nd)]
    off = lib.tm_offset(x.t)
    ok = so == sn or (nd > 0 and (st[-1] == 1 or sh[-1] == 1))
    if ok and sn > so:
        r = sn // so
        ok = sh[-1] % r == 0 and off % r == 0 and \
            all(s % r == 0 for s in st[:-1])
    if not ok:
        return _fail(ctx, h, op)
    want = np.ascontiguousarray(xv.astype(NP[dt])).view(NP[to]) if nd else \
        np.asarray(xv.astype(NP[dt])).view(NP[to])
    return _out(ctx, h, want.reshape(want.shape), to, op)


def ffi_int(d):
    return ffi.new("int *", d)


def t_einsum(ctx):
    """One equation on float operands of one dtype.  Tolerance: each
    result element is a sum of K products; F32 / F16 / BF16 contract in
    F32 and F64 in F64 (K ulp of the compute type times the sum of |terms|,
    the einsum of |operands|), plus 3 ulp of the dtype for the roundings
    between steps (diagonal, sum, one matmul per pair)."""
    rng = ctx.rng
    eq = str(rng.choice(EQUATIONS))
    dt = str(rng.choice(FLOATS))
    size = {c: int(rng.integers(0 if rng.random() < 0.1 else 1, 5))
            for c in "abcdijk"}
    ell = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
    terms = eq.split("->")[0].split(",")
    nodes = []
    for t in terms:
        sh = [size[c] for c in t.replace("...", "")]
        if "..." in t:
            e = ell[int(rng.integers(0, len(ell) + 1)):]
            e = [1 if rng.random() < 0.3 else d for d in e]
            sh = e + sh
        nodes.append(ctx.node(sh, dt, special=0))
    ctx.log.append(f"  eq={eq}")
    for n in nodes:
        ctx.log.append(f"operand: {n.describe()}")
    arr = ffi.new("tm_tensor *[]", [n.t for n in nodes])
    h = ctx.lib.tm_einsum(eq.encode(), arr, len(nodes))
    vals = [cast(n.v, dt).astype(np.float64) for n in nodes]
    want = np.einsum(eq, *vals)
    mag = np.einsum(eq, *[np.abs(v) for v in vals])
    letters = "".join(terms).replace(".", "")
    out = eq.split("->")[1] if "->" in eq else \
        "".join(c for c in letters if letters.count(c) == 1)
    k = 1  # the number of terms summed into each output element
    for c in set(letters) - set(out):
        k *= max(size[c], 1)
    comp = ULP["f64"] if dt == "f64" else ULP["f32"]
    at = (k * comp + 3 * ULP[dt]) * mag
    ctx.check(h, "tm_einsum")
    got, gdt = ctx.to_np(h)
    if gdt != dt:
        raise Mismatch(f"tm_einsum: dtype {gdt}, expected {dt}")
    msg = compare(got, cast(want, dt), ULP[dt], at)
    if msg:
        raise Mismatch(f"tm_einsum: {msg}")
