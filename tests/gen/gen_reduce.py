"""Reference cases for the reductions (tests/data/reduce.ref): sum, mean,
prod, max, min, var, std, logsumexp, norm, any, all, argmax/argmin (with
and without a dim), max_dim/min_dim and cumsum.

Expected values: numpy in float64 on the inputs as Foundry holds them
(f32/f16/bf16 values widen exactly), rounded once to the result dtype;
integer sums/products in int64 (numpy wraps like Foundry); max/min/argmax
exactly (numpy's max propagates NaN and its argmax returns the first NaN,
the rule Foundry follows); var with ddof=correction (numpy, like PyTorch,
divides by max(0, n - ddof), giving inf or nan when that is 0).

Tolerances (`TOL`, by result dtype):
- Foundry accumulates every float reduction in double and rounds once, as
  the reference does; the two double results differ only by summation
  order (~1e-15 relative for these small, well-conditioned inputs), so the
  rounded results are equal or one ulp apart: rtol is one ulp of the
  result format — 2^-23 < 2e-7 for f32, 2^-10 < 1e-3 for f16, 2^-7 < 8e-3
  for bf16 (the reference rounds bf16 through f32, which can also move it
  by one ulp).  f64 keeps the order difference itself: rtol 1e-13.
- atol covers results that are exactly 0 in one and ~1e-17 in the other
  (var of a constant: the mean rounds differently): tiny for every dtype.
- Integer and bool results compare exactly.
"""
import math
import warnings

import numpy as np

from refgen import Case, Input, cast, write, FLOATS, INTS

rng = np.random.default_rng(2262)
# numpy warns on empty means and ddof >= n; the values are what we want
warnings.simplefilter("ignore", RuntimeWarning)

TOL = {"f32": (2e-7, 1e-12), "f64": (1e-13, 1e-13), "f16": (1e-3, 1e-6),
       "bf16": (8e-3, 1e-6)}

cases = []


def f64(x):
    return np.asarray(x).astype(np.float64)


def data(shape, dt, kind="normal"):
    if dt in FLOATS:
        if kind == "prod":
            return rng.uniform(0.6, 1.5, shape)
        return rng.standard_normal(shape)
    if dt == "bool":
        return rng.integers(0, 2, shape)
    if dt == "u8":
        return rng.integers(0, 256, shape)
    return rng.integers(-5, 6, shape)


def axes(dims, ndim):
    if dims is None:
        return None
    return tuple(sorted(d % max(ndim, 1) for d in dims)) if ndim else None


def keep(r, v, ax, keepdim):
    """Reference result r (reduced over ax of v) with keepdim applied."""
    r = np.asarray(r)
    if keepdim and v.ndim:
        for a in sorted(range(v.ndim) if ax is None else ax):
            r = np.expand_dims(r, a)
    return r


def lse(x, ax):
    if x.size == 0 or (ax is not None and
                       any(x.shape[a] == 0 for a in ax)):
        shape = [s for i, s in enumerate(x.shape)
                 if ax is not None and i not in ax]
        return np.full(shape, -np.inf)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=ax, keepdims=True)
        ms = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.sum(np.exp(x - ms), axis=ax, keepdims=True)) + ms
    return np.squeeze(r, axis=ax) if ax is not None else r.reshape(())


def norm(x, p, ax):
    a = np.abs(x)
    with np.errstate(all="ignore"):
        if p == 2:
            return np.sqrt(np.sum(a * a, axis=ax))
        if p == np.inf:
            return np.max(a, axis=ax, initial=0.0)
        if p == -np.inf:
            return np.min(a, axis=ax, initial=np.inf)
        if p == 0:
            return np.sum(x != 0, axis=ax).astype(np.float64)
        if p == 1:
            return np.sum(a, axis=ax)
        return np.sum(a ** p, axis=ax) ** (1.0 / p)


def out_dtype(op, dt):
    if op in ("sum", "prod"):
        return dt if dt in FLOATS else "i64"
    if op in ("max", "min"):
        return dt
    if op in ("any", "all"):
        return "bool"
    return dt if dt in FLOATS else "f32"


def reference(op, v, dt, ax, p):
    x = f64(v)
    with np.errstate(all="ignore"):
        if op == "sum":
            return x.sum(axis=ax) if dt in FLOATS else \
                np.asarray(v).astype(np.int64).sum(axis=ax)
        if op == "prod":
            return x.prod(axis=ax) if dt in FLOATS else \
                np.asarray(v).astype(np.int64).prod(axis=ax)
        if op == "mean":
            return x.mean(axis=ax)
        if op == "max":
            return np.max(v, axis=ax)
        if op == "min":
            return np.min(v, axis=ax)
        if op == "var":
            return x.var(axis=ax, ddof=p)
        if op == "std":
            return np.sqrt(x.var(axis=ax, ddof=p))
        if op == "logsumexp":
            return lse(x, ax)
        if op == "norm":
            return norm(x, p, ax)
        if op == "any":
            return np.any(x != 0, axis=ax)
        if op == "all":
            return np.all(x != 0, axis=ax)
    raise ValueError(op)


def tol(c, odt):
    if odt in TOL:
        c.tol(*TOL[odt])


def reduce_case(name, op, x, dims=None, keepdim=False, p=None, want=None):
    """One reduction case on Input x; dims None means all dims; `want`
    overrides the numpy reference."""
    v = x.value
    ax = axes(dims, v.ndim)
    args = {}
    if dims is not None:
        args["dims"] = list(dims)
    args["keepdim"] = int(keepdim)
    if p is not None:
        args["p"] = p
    c = Case(name, op, [x], **args)
    odt = out_dtype(op, x.dtype)
    r = reference(op, v, x.dtype, ax, 0.0 if p is None else p) \
        if want is None else np.asarray(want)
    c.out(keep(r, v, ax, keepdim), odt)
    tol(c, odt)
    cases.append(c)


def arg_case(name, op, x, dim=None, keepdim=False):
    """argmax/argmin (dim None: *_all), max_dim/min_dim."""
    v = x.value
    args = {}
    if dim is not None:
        args["dim"] = dim
        args["keepdim"] = int(keepdim)
    c = Case(name, op, [x], **args)
    is_max = op.startswith("argmax") or op == "max_dim"
    fn = np.argmax if is_max else np.argmin
    if dim is None or v.ndim == 0:
        idx = np.asarray(fn(v.reshape(-1)) if v.ndim else 0)
    else:
        idx = fn(v, axis=dim)
    if op in ("max_dim", "min_dim"):
        if v.ndim == 0:
            vals = v
        else:
            vals = np.take_along_axis(v, np.expand_dims(idx, dim),
                                      axis=dim).squeeze(dim)
        ax = None if v.ndim == 0 else (dim % v.ndim,)
        c.out(keep(vals, v, ax, keepdim), x.dtype)
        c.out(keep(idx, v, ax, keepdim), "i64")
        tol(c, x.dtype)
    else:
        ax = None if (dim is None or v.ndim == 0) else (dim % v.ndim,)
        c.out(keep(idx, v, ax, keepdim and dim is not None), "i64")
    cases.append(c)


def cumsum_case(name, x, dim):
    v = x.value
    c = Case(name, "cumsum", [x], dim=dim)
    if x.dtype in FLOATS:
        r = np.cumsum(f64(v), axis=dim if v.ndim else None).reshape(v.shape)
        c.out(r, x.dtype)
        tol(c, x.dtype)
    else:
        r = np.cumsum(np.asarray(v).astype(np.int64),
                      axis=dim if v.ndim else None).reshape(v.shape)
        c.out(r, "i64")
    cases.append(c)


def err_case(name, op, x, status, msg, **args):
    c = Case(name, op, [x], **args)
    c.error(status, msg)
    cases.append(c)


FLOAT_OPS = ["sum", "mean", "prod", "max", "min", "var", "std", "logsumexp",
             "norm", "any", "all"]
DIMS = [(None, False, "all"), ([1], False, "d1"), ([0, 2], False, "d02"),
        ([-1], True, "dm1_keep"), ([2, 0], True, "d20_keep"),
        (None, True, "all_keep")]

# every op x every float dtype x dims (all, one, non-adjacent, negative,
# keepdim)
for op in FLOAT_OPS:
    for dt in FLOATS:
        for dims, kd, tag in DIMS:
            x = Input(data((2, 3, 4), dt, "prod" if op == "prod" else ""),
                      dt)
            p = 1.0 if op in ("var", "std") else (2.0 if op == "norm"
                                                  else None)
            reduce_case(f"{op}_{dt}_{tag}", op, x, dims, kd, p)

# integer and bool inputs
for dt in INTS + ("bool",):
    for op in ["sum", "prod", "max", "min", "mean", "var", "norm", "any",
               "all"]:
        for dims, kd, tag in [(None, False, "all"), ([1], True, "d1_keep")]:
            x = Input(data((3, 4), dt), dt)
            p = 1.0 if op == "var" else (2.0 if op == "norm" else None)
            reduce_case(f"{op}_{dt}_{tag}", op, x, dims, kd, p)
# integer sums wrap like two's complement
big = np.array([2 ** 62, 2 ** 62, 2 ** 62, -5], dtype=np.int64)
reduce_case("sum_i64_wraps", "sum", Input(big, "i64"))
reduce_case("prod_i64_wraps", "prod",
            Input(np.array([2 ** 40, 2 ** 30, 3], dtype=np.int64), "i64"))
reduce_case("max_i64_exact", "max",
            Input(np.array([2 ** 62 + 1, 2 ** 62, -2 ** 63], dtype=np.int64),
                  "i64"))

# non-contiguous inputs: transpose, slice with step, expand (stride 0)
VIEWS = [("t", [("transpose", 0, 2)], (4, 3, 2)),
         ("step", [("slice", 1, 0, 6, 2)], (2, 6, 4)),
         ("neg", [("permute", 2, 0, 1)], (3, 2, 4)),
         ("exp", [("expand", [2, 3, 4])], (1, 3, 1))]
for vtag, views, base in VIEWS:
    for op in ["sum", "mean", "max", "var", "logsumexp", "norm", "prod",
               "any"]:
        for dt in ("f32", "f64", "bf16"):
            for dims, kd, tag in [(None, False, "all"), ([0, 2], True, "d02"),
                                  ([1], False, "d1")]:
                # multiples of 1/16: short in the file, exact in bf16
                x = Input(np.round(16 * data(base, dt, "prod" if op == "prod"
                                             else "")) / 16, dt, views)
                p = 1.0 if op == "var" else (2.0 if op == "norm" else None)
                reduce_case(f"{op}_{dt}_{vtag}_{tag}", op, x, dims, kd, p)
    x = Input(data(base, "i32"), "i32", views)
    reduce_case(f"sum_i32_{vtag}_d1", "sum", x, [1])
    reduce_case(f"min_i32_{vtag}_d02", "min", x, [0, 2], True)

# norm orders
for p in (1.0, 2.0, np.inf, -np.inf, 0.0, 3.0, 0.5, -1.0):
    for dt in ("f32", "f64", "f16"):
        x = np.round(8 * data((3, 5), dt)) / 8
        x[0, 1] = 0.0
        reduce_case(f"norm_p{p}_{dt}_d1", "norm", Input(x, dt), [1], False, p)
        reduce_case(f"norm_p{p}_{dt}_all", "norm", Input(x, dt), None, False,
                    p)
# the 2-norm neither overflows nor underflows where squares would (numpy's
# sum of squares would: the reference is math.hypot, which scales)
for vals in ([3e200, 4e200, -1e199], [3e-200, 4e-200]):
    reduce_case(f"norm_f64_scaled_{vals[0]:g}", "norm",
                Input(np.array(vals), "f64"), None, False, 2.0,
                want=math.hypot(*vals))

# corrections, including n - correction <= 0 (inf, or nan for 0/0)
for corr in (0.0, 1.0, 2.0, 1.5, 4.0, 5.0):
    for op in ("var", "std"):
        x = Input(data((3, 4), "f64"), "f64")
        reduce_case(f"{op}_c{corr}_d1", op, x, [1], False, corr)
reduce_case("var_c1_single", "var", Input(np.array([[2.0], [3.0]]), "f32"),
            [1], False, 1.0)
reduce_case("var_const_f32", "var",
            Input(np.full((1, 1), 0.1), "f32", [("expand", [5, 7])]),
            None, False, 1.0)
reduce_case("var_large_offset_f32", "var",
            Input(1e4 + data((50,), "f32"), "f32"), None, False, 0.0)

# special values: NaN and inf
nan, inf = np.nan, np.inf
SPECIAL = np.array([[1.0, nan, 3.0, -2.0],
                    [inf, 1.0, -1.0, 0.0],
                    [-inf, -inf, -inf, -inf],
                    [inf, -inf, 2.0, 5.0],
                    [nan, inf, -inf, 1.0],
                    [0.0, 0.0, 0.0, 0.0]])
for dt in FLOATS:
    for op in FLOAT_OPS:
        p = 1.0 if op in ("var", "std") else (2.0 if op == "norm" else None)
        reduce_case(f"{op}_{dt}_special", op, Input(SPECIAL, dt), [1], False,
                    p)
    for op in ("argmax", "argmin"):
        arg_case(f"{op}_{dt}_special", op, Input(SPECIAL, dt), 1)
    for op in ("max_dim", "min_dim"):
        arg_case(f"{op}_{dt}_special", op, Input(SPECIAL, dt), 1, True)
    cumsum_case(f"cumsum_{dt}_special", Input(SPECIAL, dt), 1)
for p in (1.0, np.inf, -np.inf, 0.0, 3.0):
    reduce_case(f"norm_p{p}_special", "norm", Input(SPECIAL, "f32"), [1],
                False, p)
arg_case("argmax_all_nan", "argmax_all",
         Input(np.array([[1.0, 2.0], [nan, 7.0], [nan, 1.0]]), "f32"))
arg_case("argmin_all_nan", "argmin_all",
         Input(np.array([[1.0, 2.0], [3.0, nan]]), "f64"))
reduce_case("lse_f32_large", "logsumexp",
            Input(np.array([[1000.0, 1000.0, -1000.0], [-1e30, 88.0, 89.0]]),
                  "f32"), [1])

# 0-d tensors: all dims, dim 0 and dim -1
for dt in ("f32", "f64", "i32", "bool"):
    x0 = Input(np.array(0.75 if dt in FLOATS else 1), dt)
    for op in FLOAT_OPS:
        p = 0.0 if op in ("var", "std") else (2.0 if op == "norm" else None)
        for dims, tag in [(None, "all"), ([0], "d0"), ([-1], "dm1")]:
            reduce_case(f"{op}_{dt}_0d_{tag}", op, x0, dims, tag == "d0", p)
    for op in ("argmax", "argmin"):
        arg_case(f"{op}_{dt}_0d", op, x0, 0, True)
        arg_case(f"{op}_all_{dt}_0d", op + "_all", x0)
    arg_case(f"max_dim_{dt}_0d", "max_dim", x0, -1, False)
    cumsum_case(f"cumsum_{dt}_0d", x0, 0)

# 0-size tensors: [0,3] over dim 0, dim 1 and all dims
for dt in ("f32", "i32"):
    for op in ["sum", "prod", "mean", "var", "std", "logsumexp", "norm",
               "any", "all"]:
        p = 1.0 if op in ("var", "std") else (2.0 if op == "norm" else None)
        for dims, tag in [([0], "d0"), ([1], "d1"), (None, "all")]:
            x = Input(np.zeros((0, 3)), dt)
            reduce_case(f"{op}_{dt}_empty_{tag}", op, x, dims, tag == "d1", p)
    x = Input(np.zeros((0, 3)), dt)
    reduce_case(f"max_{dt}_empty_d1", "max", x, [1])
    arg_case(f"argmin_{dt}_empty_d1", "argmin", x, 1)
    err_case(f"max_{dt}_empty_d0", "max", x, "TM_EINVAL",
             "cannot reduce 0 elements: dim 0 of shape [0,3] is empty",
             dims=[0], keepdim=0)
    err_case(f"min_{dt}_empty_all", "min", x, "TM_EINVAL",
             "cannot reduce 0 elements", keepdim=0)
    err_case(f"argmax_{dt}_empty_d0", "argmax", x, "TM_EINVAL",
             "dim 0 of shape [0,3] is empty", dim=0, keepdim=0)
    err_case(f"argmax_all_{dt}_empty", "argmax_all", x, "TM_EINVAL",
             "cannot reduce 0 elements")
    cumsum_case(f"cumsum_{dt}_empty", x, 1)

# arg reductions: dims, keepdim, dtypes, ties (first occurrence wins)
for dt in FLOATS + INTS + ("bool",):
    x = np.round(data((3, 4, 5), dt), 0) if dt in FLOATS else data((3, 4, 5),
                                                                  dt)
    for op in ("argmax", "argmin"):
        for dim, kd in [(0, False), (1, True), (-1, False)]:
            arg_case(f"{op}_{dt}_d{dim}_{int(kd)}", op, Input(x, dt), dim, kd)
        arg_case(f"{op}_all_{dt}", op + "_all", Input(x, dt))
    for op in ("max_dim", "min_dim"):
        arg_case(f"{op}_{dt}_d1", op, Input(x, dt), 1, False)
        arg_case(f"{op}_{dt}_dm1_keep", op, Input(x, dt), -1, True)
ties = np.array([[3, 1, 3, 1], [2, 2, 2, 2], [0, 5, 5, 0]])
for op in ("argmax", "argmin"):
    arg_case(f"{op}_ties_i16", op, Input(ties, "i16"), 1)
    arg_case(f"{op}_ties_f32_t", op,
             Input(ties, "f32", [("transpose", 0, 1)]), 0)
    arg_case(f"{op}_all_ties_step", op + "_all",
             Input(ties, "f64", [("slice", 1, 0, 4, 2)]))
    arg_case(f"{op}_expand", op,
             Input(np.array([[4.0], [1.0]]), "f32", [("expand", [2, 3])]), 1)

# cumsum: every dtype, dims, non-contiguous, integer wrap
for dt in FLOATS + INTS + ("bool",):
    x = data((3, 4), dt)
    for dim in (0, 1, -1):
        cumsum_case(f"cumsum_{dt}_d{dim}", Input(x, dt), dim)
for dt in ("f32", "f16", "i8"):
    cumsum_case(f"cumsum_{dt}_t", Input(data((3, 5), dt), dt,
                                        [("transpose", 0, 1)]), 0)
    cumsum_case(f"cumsum_{dt}_step", Input(data((4, 6), dt), dt,
                                           [("slice", 1, 1, 6, 2)]), 1)
    cumsum_case(f"cumsum_{dt}_exp", Input(data((1, 3), dt), dt,
                                          [("expand", [4, 3])]), 0)
cumsum_case("cumsum_i64_wraps",
            Input(np.array([2 ** 62, 2 ** 62, 2 ** 62, 7], dtype=np.int64),
                  "i64"), 0)
cumsum_case("cumsum_i8_to_i64",
            Input(np.array([100, 100, 100, -128], dtype=np.int8), "i8"), 0)

# reductions longer than one chunk (256 elements), so chunk partials are
# merged: short decimal f64 values keep the file small
long = np.round(rng.standard_normal((2, 300)), 2)
long_p = np.round(rng.uniform(0.97, 1.03, (2, 300)), 2)
long_nan = long.copy()
long_nan[0, 270] = np.nan
long_nan[0, 290] = 50.0
long_nan[1, 280] = -7.0
for op in FLOAT_OPS:
    p = 1.0 if op in ("var", "std") else (2.0 if op == "norm" else None)
    reduce_case(f"{op}_long", op,
                Input(long_p if op == "prod" else long, "f64"), [1], False, p)
for p in (1.0, 3.0, np.inf, 0.0):
    reduce_case(f"norm_p{p}_long", "norm", Input(long, "f64"), [1], False, p)
reduce_case("max_long_nan", "max", Input(long_nan, "f64"), [1])
reduce_case("var_long_f32_t", "var",
            Input(long + 100.0, "f32", [("transpose", 0, 1)]), [0], True, 0.0)
for op in ("argmax", "argmin"):
    arg_case(f"{op}_long_nan", op, Input(long_nan, "f64"), 1)
    arg_case(f"{op}_all_long", op + "_all", Input(long, "f64"))
ilong = rng.integers(-30000, 30000, (2, 300))
ilong[1, 299] = 31000
for op in ("sum", "max", "min"):
    reduce_case(f"{op}_long_i16", op, Input(ilong, "i16"), [1])
arg_case("argmax_long_i16", "argmax", Input(ilong, "i16"), 1)
cumsum_case("cumsum_long", Input(long, "f64"), 1)

# argument errors
x = Input(data((2, 3), "f32"), "f32")
err_case("sum_bad_dim", "sum", x, "TM_ERANGE",
         "dim 2 is out of range for a 2-d tensor", dims=[2], keepdim=0)
err_case("mean_dup_dim", "mean", x, "TM_EINVAL", "dim 1 appears twice",
         dims=[1, -1], keepdim=0)
err_case("argmax_bad_dim", "argmax", x, "TM_ERANGE",
         "dim -3 is out of range", dim=-3, keepdim=0)
err_case("cumsum_bad_dim", "cumsum", x, "TM_ERANGE",
         "dim 5 is out of range", dim=5)
err_case("sum_0d_bad_dim", "sum", Input(np.array(1.0), "f32"), "TM_ERANGE",
         "dim 1 is out of range for a 0-d tensor", dims=[1], keepdim=0)

# F32 sum/mean over leading dims with a contiguous kept row of >= 8
# elements take the column path (cpu_reduce_cols.c): whole rows are added
# into double accumulators.  Same tolerance as every F32 reduction.
crng = np.random.default_rng(7)
cols = np.round(crng.standard_normal((5, 3, 20)), 3)
cols_nan = cols.copy()
cols_nan[2, 1, 7] = np.nan
cols_nan[4, 0, 3] = np.inf
for op in ("sum", "mean"):
    reduce_case(f"{op}_cols_d0", op, Input(cols, "f32"), [0], False)
    reduce_case(f"{op}_cols_d01_keep", op, Input(cols, "f32"), [0, 1], True)
    reduce_case(f"{op}_cols_step", op,
                Input(cols, "f32", [("slice", 0, 0, 5, 2)]), [0], False)
    reduce_case(f"{op}_cols_nan", op, Input(cols_nan, "f32"), [1, 0], False)
    reduce_case(f"{op}_cols_t", op,
                Input(cols, "f32", [("permute", 1, 0, 2)]), [1], False)
reduce_case("sum_cols_empty", "sum",
            Input(np.zeros((0, 10)), "f32"), [0], False)
reduce_case("mean_cols_empty", "mean",
            Input(np.zeros((0, 10)), "f32"), [0], False)

write("reduce.ref", cases, "tests/gen/gen_reduce.py")
