"""Reference cases for the scans beyond cumsum (tests/data/scan.ref):
cumprod, cummax, cummin (values and indices) and logcumsumexp.

Expected values: numpy in float64 on the inputs as Foundry holds them,
rounded once to the result dtype; integer products in int64 (numpy wraps
like Foundry); cummax/cummin by PyTorch's rule written out below (the
latest position wins ties; a NaN is taken when seen and then kept, each
later NaN moving the index); logcumsumexp as np.logaddexp.accumulate.

Tolerances (by result dtype), as for the reductions (gen_reduce.py):
both sides accumulate in double and round once, so the rounded results
are equal or one ulp apart — rtol 2e-7 for f32, 1e-3 for f16, 8e-3 for
bf16; f64 keeps the difference of the double computations themselves:
products and log-add-exps in the same order, with libm's log1p/exp
against numpy's (a few ulps per step over at most 300 steps), rtol 1e-13.
cummax/cummin copy elements and compare exactly, as do integers.
"""
import numpy as np

from refgen import Case, Input, write, FLOATS, INTS

rng = np.random.default_rng(5150)
# inf - inf inside logaddexp.accumulate gives the NaN we want
np.seterr(invalid="ignore")
nan, inf = np.nan, np.inf

TOL = {"f32": (2e-7, 1e-30), "f64": (1e-13, 1e-300), "f16": (1e-3, 1e-7),
       "bf16": (8e-3, 1e-30)}

cases = []


def f64(x):
    return np.asarray(x).astype(np.float64)


def along(v, dim, fn, nout=1):
    """fn applied to every line of v along dim (v 0-d: one line of 1);
    fn returns nout arrays of the line's length."""
    if v.ndim == 0:
        v, dim = v.reshape(1), 0
        shape = ()
    else:
        shape = v.shape
    m = np.moveaxis(v, dim, -1)
    flat = m.reshape(-1, m.shape[-1]) if m.size else None
    res = []
    for j in range(nout):
        a = np.zeros(m.shape)
        if flat is not None:
            rows = [fn(r) for r in flat]
            a = np.array([r[j] if nout > 1 else r for r in rows]
                         ).reshape(m.shape)
        res.append(np.moveaxis(a, -1, dim).reshape(shape))
    return tuple(res) if nout > 1 else res[0]


def cumext(row, is_max):
    vals, idx = [], []
    acc, at = None, 0
    for i, x in enumerate(row):
        xf = float(x)
        if acc is None or np.isnan(xf) or (
                not np.isnan(acc) and (xf >= acc if is_max else xf <= acc)):
            acc, at = xf, i
        vals.append(acc)
        idx.append(at)
    return np.array(vals), np.array(idx, dtype=np.int64)


def scan_case(name, op, x, dim):
    v = x.value
    c = Case(name, op, [x], dim=dim)
    fl = x.dtype in FLOATS
    if op == "cumprod":
        if fl:
            c.out(along(f64(v), dim, np.cumprod), x.dtype)
        else:
            c.out(along(np.asarray(v).astype(np.int64), dim, np.cumprod),
                  "i64")
    elif op == "logcumsumexp":
        c.out(along(f64(v), dim, np.logaddexp.accumulate), x.dtype)
    else:
        vals, idx = along(f64(v) if fl else np.asarray(v).astype(np.int64),
                          dim, lambda r: cumext(r, op == "cummax"), 2)
        c.out(vals, x.dtype)
        c.out(idx, "i64")
    if fl and op in ("cumprod", "logcumsumexp"):
        c.tol(*TOL[x.dtype])
    cases.append(c)


def data(shape, dt, op):
    if dt in FLOATS:
        if op == "cumprod":
            return rng.uniform(0.6, 1.5, shape) * rng.choice([-1, 1], shape)
        if op in ("cummax", "cummin"):  # few values: ties
            return rng.integers(-2, 3, shape).astype(np.float64) / 2
        return rng.standard_normal(shape) * 3
    if dt == "bool":
        return rng.integers(0, 2, shape)
    if dt == "u8":
        return rng.integers(0, 256, shape)
    return rng.integers(-5, 6, shape)


OPS = ("cumprod", "cummax", "cummin", "logcumsumexp")

# every dtype the op takes, every dim
for op in OPS:
    dts = FLOATS if op == "logcumsumexp" else FLOATS + INTS + ("bool",)
    for dt in dts:
        x = data((3, 4), dt, op)
        for dim in (0, 1, -1):
            scan_case(f"{op}_{dt}_d{dim}", op, Input(x, dt), dim)

# non-contiguous views: transposed, stepped, expanded (stride 0), 3-d
for op in OPS:
    for dt in ("f32", "f64", "f16") if op == "logcumsumexp" else (
            "f32", "f64", "i8"):
        scan_case(f"{op}_{dt}_t", op, Input(data((3, 5), dt, op), dt,
                                            [("transpose", 0, 1)]), 0)
        scan_case(f"{op}_{dt}_step", op, Input(data((4, 6), dt, op), dt,
                                               [("slice", 1, 1, 6, 2)]), 1)
        scan_case(f"{op}_{dt}_exp", op, Input(data((1, 3), dt, op), dt,
                                              [("expand", [4, 3])]), 0)
        scan_case(f"{op}_{dt}_3d", op, Input(data((2, 3, 4), dt, op), dt),
                  1)

# NaN, infinities, zeros
SPECIAL = np.array([[1.0, nan, 3.0, -2.0, 5.0],
                    [inf, 1.0, -1.0, 0.0, 2.0],
                    [-inf, -inf, -inf, -inf, 1.0],
                    [inf, -inf, 2.0, 5.0, inf],
                    [nan, inf, -inf, 1.0, nan],
                    [0.0, 0.0, 3.0, 0.0, -0.0],
                    [2.0, 2.0, 1.0, 2.0, 2.0]])
for op in OPS:
    for dt in FLOATS:
        scan_case(f"{op}_{dt}_special", op, Input(SPECIAL, dt), 1)
scan_case("logcumsumexp_f32_large", "logcumsumexp",
          Input(np.array([[1000.0, 1000.0, -1000.0, 88.0],
                          [88.0, 89.0, 90.0, -1e30]]), "f32"), 1)

# 0-d and empty
for op in OPS:
    for dt in ("f32", "f64") if op == "logcumsumexp" else ("f32", "i32",
                                                           "bool"):
        x0 = Input(np.array(0.75 if dt in FLOATS else 1), dt)
        scan_case(f"{op}_{dt}_0d", op, x0, 0)
        scan_case(f"{op}_{dt}_0d_m1", op, x0, -1)
        scan_case(f"{op}_{dt}_empty", op, Input(np.zeros((0, 3)), dt), 1)
        scan_case(f"{op}_{dt}_empty_d0", op, Input(np.zeros((2, 0)), dt), 1)

# integer wrap, long lines (more than one 256-element chunk)
scan_case("cumprod_i64_wraps", "cumprod",
          Input(np.array([2 ** 40, 2 ** 30, 3, -1], dtype=np.int64), "i64"),
          0)
scan_case("cumprod_i8_to_i64", "cumprod",
          Input(np.array([100, 100, 100, -128], dtype=np.int8), "i8"), 0)
long = np.round(rng.uniform(0.97, 1.03, (2, 300)), 2)
scan_case("cumprod_long", "cumprod", Input(long, "f64"), 1)
scan_case("logcumsumexp_long", "logcumsumexp",
          Input(np.round(rng.standard_normal((2, 300)), 2), "f64"), 1)
for op in ("cummax", "cummin"):
    scan_case(f"{op}_long_i16", op,
              Input(rng.integers(-30, 30, (2, 300)), "i16"), 1)

# argument errors
x = Input(data((2, 3), "f32", "cumprod"), "f32")
for op in OPS:
    c = Case(f"{op}_bad_dim", op, [x], dim=2)
    cases.append(c.error("TM_ERANGE",
                         "dim 2 is out of range for a 2-d tensor"))
    c = Case(f"{op}_0d_bad_dim", op, [Input(np.array(1.0), "f32")], dim=1)
    cases.append(c.error("TM_ERANGE", "dim 1 is out of range"))
for dt in ("i32", "bool"):
    c = Case(f"logcumsumexp_{dt}_refused", "logcumsumexp",
             [Input(np.array([1, 0, 1]), dt)], dim=0)
    cases.append(c.error("TM_EDTYPE", "logcumsumexp takes a float tensor"))

write("scan.ref", cases, "tests/gen/gen_scan.py")
