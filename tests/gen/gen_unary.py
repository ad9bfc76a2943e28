"""Reference cases for the unary elementwise family (tests/c/test_unary.c):
tm_neg ... tm_log2, tm_exp2, tm_tan ... tm_log10, tm_leaky_relu, tm_softplus, tm_clamp, tm_unary and the
in-place tm_unary_ / tm_clamp_.

Expected values are computed by numpy (and math.erf / math.erfc) in float64
from the input values exactly as the tensor holds them, then cast once to
the result dtype (f32 via astype, f16 via astype, bf16 via refgen.cast).

Result dtypes (PyTorch's rules): float ops on integer/bool give f32;
neg/abs/sign/relu/square/floor/ceil/round/trunc/clamp keep integer dtypes
(bool square gives i64; clamp with a non-integral bound gives f32);
logical_not/isnan/isinf/isfinite give bool.

Tolerances, |got - want| <= atol + rtol * |want|:
- f64: glibc's double functions are within ~1 ulp and numpy's within a few,
  so rtol 1e-14 (~45 ulps).  The compositions (sigmoid, silu, gelu,
  gelu_tanh, softplus) get 1e-13: erfc(z) and exp(z) amplify the rounding
  of their argument by ~2z^2 resp. |z| ulps (z up to ~7 and ~17 here), in
  the reference as much as in Foundry.  atol 1e-300 only matters for
  results that underflow.
- f32: computed in f32 with the float libm (within a few ulps; gelu,
  gelu_tanh and softplus in double and rounded once), so rtol 2e-6 (~17
  ulps).  atol 2^-126 (the smallest normal f32): subnormal results (exp of
  -100, sigmoid(-100), ...) carry an absolute error of a subnormal ulp, not
  a relative one.
- f16: an f32 value (a few f32 ulps off) rounded once to f16 lands within
  one f16 ulp of the correctly rounded value: 2^-10 relative < rtol 1e-3;
  atol 2^-24 is one f16 subnormal step.
- bf16: same argument with 8 mantissa bits: one ulp is 2^-7 < rtol 8e-3;
  atol 2^-126 as for f32 (bf16 has f32's range).
- integer and bool results compare exactly.
No extra atol is needed at zero crossings (sin(pi), log(1)): the inputs are
exact, so the libm result is relatively accurate even near a root.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refgen import Case, Input, write, rng, FLOATS, INTS  # noqa: E402

TOL = {"f64": (1e-14, 1e-300), "f32": (2e-6, 2.0 ** -126),
       "f16": (1e-3, 2.0 ** -24), "bf16": (8e-3, 2.0 ** -126)}
COMPOSED = ("sigmoid", "silu", "gelu", "gelu_tanh", "softplus")

erf = np.vectorize(math.erf, otypes=[np.float64])
erfc = np.vectorize(math.erfc, otypes=[np.float64])
SQRT_2_PI = math.sqrt(2.0 / math.pi)


def sigmoid(x):
    # 1/(1+exp(-x)) overflows exp for x << 0 (harmlessly giving 0); the
    # split keeps every result relatively accurate.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def gelu(x):
    # x*(1+erf(x/sqrt2))/2 written with erfc, which is the same function but
    # does not cancel to 0 for x << 0.
    return 0.5 * x * erfc(-x / math.sqrt(2.0))


def gelu_tanh(x):
    # 0.5*x*(1+tanh(u)) with 1+tanh(u) = 2/(1+exp(-2u)): no cancellation.
    u = SQRT_2_PI * (x + 0.044715 * x ** 3)
    return x / (1.0 + np.exp(-2.0 * u))


def softplus(x, beta=1.0, threshold=20.0):
    z = beta * x
    return np.where(z > threshold, x, np.logaddexp(0.0, z) / beta)


def leaky_relu(x, slope=0.01):
    return np.where(x > 0, x, x * slope)


def clamp(x, lo=math.nan, hi=math.nan):
    # PyTorch's min(max(x, lo), hi) with NaN bounds ignored; NaN x stays.
    if not math.isnan(lo):
        x = np.where(x < lo, lo, x)
    if not math.isnan(hi):
        x = np.where(x > hi, hi, x)
    return x


# name -> f64 function (taking the f64 input and the case's args)
FLOAT_OPS = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "sigmoid": sigmoid, "gelu": gelu,
    "gelu_tanh": gelu_tanh, "silu": lambda x: x * sigmoid(x),
    "softplus": softplus, "leaky_relu": leaky_relu, "erf": erf,
    "log2": np.log2, "reciprocal": lambda x: 1.0 / x,
}
KEEP_OPS = {
    "neg": np.negative, "abs": np.abs, "sign": np.sign,
    "relu": lambda x: np.maximum(x, 0), "square": lambda x: x * x,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint,
    "trunc": np.trunc, "clamp": clamp,
}
PRED_OPS = {"logical_not": lambda x: x == 0, "isnan": np.isnan,
            "isinf": np.isinf, "isfinite": np.isfinite}

SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0]


def values_for(op):
    """Input values (f64) that exercise op: its domain, its edges, large
    |x| where stability matters, tiny x where cancellation would show."""
    r = rng.standard_normal
    if op in ("log", "log2", "sqrt", "rsqrt"):
        v = [1.0, 2.0, 0.5, 1e-3, 1e4, 3e7, -1.0] + list(np.exp(2 * r(8)))
    elif op == "log1p":
        v = [1e-10, -1e-10, 1e-5, -1e-5, -0.5, -1.0, -2.0, 1e6] + \
            list(np.abs(r(6)))
    elif op == "expm1":
        v = [1e-10, -1e-10, 1e-5, -1e-5, 100.0, -100.0] + list(3 * r(8))
    elif op == "exp":
        v = [100.0, -100.0, -1000.0, 10.0, -10.0, 1.0] + list(3 * r(8))
    elif op in ("sin", "cos"):
        v = [math.pi, -math.pi, math.pi / 2, 2 * math.pi, 100.0] + \
            list(4 * r(9))
    elif op in ("tanh", "sigmoid", "silu", "softplus", "erf"):
        v = [100.0, -100.0, 30.0, -30.0, 15.0, -15.0, 1e-6, -1e-6] + \
            list(4 * r(6))
    elif op in ("gelu", "gelu_tanh"):
        v = [10.0, -10.0, 5.0, -5.0, 3.0, -3.0, 1e-4, -1e-4] + \
            list(2 * r(6))
    elif op in ("floor", "ceil", "round", "trunc"):
        v = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.49, -2.51, 1e7 + 0.5] + \
            list(5 * r(5))
    elif op == "reciprocal":
        v = [2.0, -4.0, 1e-3, 3.0] + list(r(10))
    else:
        v = [1.0, -1.0, 0.5, -0.5, 2.0, -3.0] + list(3 * r(8))
    return np.array(v + SPECIAL, dtype=np.float64)


def filler(v, n):
    """n arbitrary values of v's numpy dtype (the elements a view skips)."""
    if v.dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if v.dtype.kind in "iu":
        return rng.integers(0, 100, n).astype(v.dtype)
    return rng.standard_normal(n)


def layout(v, dtype, k):
    """The values v as the view of a base tensor; k picks the layout:
    0 contiguous [n], 1 transpose of [r,c] (n padded), 2 step-2 slice of
    [2n], 3 step-3 slice on dim 1 of a 2-d base."""
    v = np.asarray(v)
    n = len(v)
    k %= 4
    if k == 0:
        return Input(v, dtype)
    if k == 1:
        cols = 4
        rows = -(-n // cols)
        pad = np.concatenate([v, filler(v, rows * cols - n)])
        # base [cols, rows] whose transpose is [rows, cols] = pad in order
        return Input(pad.reshape(rows, cols).T.copy(), dtype,
                     [("transpose", 0, 1)])
    if k == 2:
        base = filler(v, 2 * n)
        base[0::2] = v
        return Input(base, dtype, [("slice", 0, 0, 2 * n, 2)])
    rows = 2
    cols = -(-n // rows)
    pad = np.concatenate([v, filler(v, rows * cols - n)])
    base = filler(v, rows * 3 * cols).reshape(rows, 3 * cols)
    base[:, 0::3] = pad.reshape(rows, cols)
    return Input(base, dtype, [("slice", 1, 0, 3 * cols, 3)])


def f64_of(x):
    return np.asarray(x.value, dtype=np.float64)


def float_result(op, x, args):
    with np.errstate(all="ignore"):
        f = FLOAT_OPS.get(op) or KEEP_OPS.get(op)
        return f(f64_of(x), **args)


def tol_for(op, dt):
    rt, at = TOL[dt]
    if dt == "f64" and op in COMPOSED:
        rt = 1e-13
    return rt, at


def int_result(op, x, args):
    a = np.asarray(x.value).astype(np.int64)
    with np.errstate(all="ignore"):
        if op == "neg":
            return -a
        if op == "abs":
            return np.abs(a)
        if op == "sign":
            return np.sign(a)
        if op == "relu":
            return np.maximum(a, 0)
        if op == "square":
            return a * a
        if op == "clamp":
            return clamp(a, **args).astype(np.int64)
        return a  # floor, ceil, round, trunc


INT_RANGE = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767),
             "i32": (-2 ** 31, 2 ** 31 - 1), "i64": (-2 ** 63, 2 ** 63 - 1)}

OP_ARGS = {"leaky_relu": [dict(slope=0.01), dict(slope=0.2),
                          dict(slope=-0.5)],
           "softplus": [dict(beta=1.0, threshold=20.0),
                        dict(beta=2.0, threshold=10.0),
                        dict(beta=0.5, threshold=20.0)],
           "clamp": [dict(lo=-1.0, hi=1.0), dict(lo=math.nan, hi=0.5),
                     dict(lo=-0.5, hi=math.nan), dict(lo=1.0, hi=-1.0),
                     dict(lo=math.nan, hi=math.nan)]}


def argsuffix(args):
    return "".join(f"_{k}{v:g}" for k, v in args.items())


def main():
    cases = []
    k = 0
    # ---- every float op x every float dtype, several layouts and params
    for op in list(FLOAT_OPS) + list(KEEP_OPS) + list(PRED_OPS):
        for dt in FLOATS:
            for args in OP_ARGS.get(op, [{}]):
                k += 1
                x = layout(values_for(op), dt, k)
                c = Case(f"{op}{argsuffix(args)}_{dt}_l{k % 4}", op, [x],
                         **args)
                if op in PRED_OPS:
                    c.out(PRED_OPS[op](f64_of(x)), "bool")
                else:
                    c.out(float_result(op, x, args), dt)
                    c.tol(*tol_for(op, dt))
                cases.append(c)

    # ---- integer dtypes: integer ops exactly (wrapping at the extremes)
    for dt in INTS:
        lo, hi = INT_RANGE[dt]
        base = [lo, hi, lo + 1, hi - 1, 0, 1, 2, 7]
        if lo < 0:
            base += [-1, -2, -7]
        ints = np.array(base + list(rng.integers(max(lo, -1000),
                                                 min(hi, 1000), 6)),
                        dtype=np.int64)
        for op in ("neg", "abs", "sign", "relu", "square", "floor", "ceil",
                   "round", "trunc", "clamp"):
            arglist = [{}]
            if op == "clamp":
                arglist = [dict(lo=-5.0, hi=100.0), dict(lo=math.nan, hi=3.0),
                           dict(lo=10.0, hi=2.0)]
            for args in arglist:
                k += 1
                x = layout(ints, dt, k)
                c = Case(f"{op}{argsuffix(args)}_{dt}_l{k % 4}", op, [x],
                         **args)
                c.out(int_result(op, x, args), dt)
                cases.append(c)
        for op in PRED_OPS:
            k += 1
            x = layout(ints, dt, k)
            c = Case(f"{op}_{dt}", op, [x])
            c.out(PRED_OPS[op](np.asarray(x.value)), "bool")
            cases.append(c)

    # ---- float ops on integers give f32 (small values: exact in f32)
    small = np.array([0, 1, -1, 2, -3, 5, 10, -10, 100, 7], dtype=np.int64)
    for i, op in enumerate(FLOAT_OPS):
        dt = ("i32", "i8", "i16", "i64", "u8")[i % 5]
        vals = np.abs(small) if dt == "u8" else small
        k += 1
        x = layout(vals, dt, k)
        args = OP_ARGS.get(op, [{}])[0]
        c = Case(f"{op}_{dt}_to_f32", op, [x], **args)
        c.out(float_result(op, x, args), "f32").tol(*TOL["f32"])
        cases.append(c)
    # clamp with a non-integral bound makes an integer tensor f32
    x = Input(small, "i32")
    c = Case("clamp_i32_frac_bound_to_f32", "clamp", [x], lo=-2.5, hi=4.0)
    c.out(clamp(small.astype(np.float64), -2.5, 4.0), "f32")
    cases.append(c.tol(*TOL["f32"]))

    # ---- bool inputs
    b = np.array([True, False, True, True, False, False])
    for op, out_dt in (("abs", "bool"), ("sign", "bool"), ("relu", "bool"),
                       ("floor", "bool"), ("round", "bool"),
                       ("square", "i64"), ("logical_not", "bool"),
                       ("isnan", "bool"), ("isinf", "bool"),
                       ("isfinite", "bool")):
        x = Input(b, "bool", [("slice", 0, 1, 6, 1)])
        v = np.asarray(x.value)
        want = {"logical_not": ~v, "isnan": v & False, "isinf": v & False,
                "isfinite": v | True, "square": v.astype(np.int64)}.get(op, v)
        cases.append(Case(f"{op}_bool", op, [x]).out(want, out_dt))
    x = Input(b, "bool")
    cases.append(Case("clamp_bool_to_i64", "clamp", [x], lo=math.nan, hi=0.0)
                 .out(np.zeros(6), "i64"))
    cases.append(Case("clamp_bool_unbounded_keeps_bool", "clamp", [x],
                      lo=math.nan, hi=math.nan).out(b, "bool"))
    for op in ("exp", "sigmoid", "sqrt"):
        c = Case(f"{op}_bool_to_f32", op, [x])
        c.out(float_result(op, x, {}), "f32").tol(*TOL["f32"])
        cases.append(c)
    cases.append(Case("neg_bool_is_an_error", "neg", [x])
                 .error("TM_EDTYPE", "tm_neg: negation of a bool tensor"))

    # ---- 0-d, 0-size, broadcast (expand) inputs
    for op, dt in (("exp", "f32"), ("gelu", "f64"), ("neg", "i32"),
                   ("isnan", "f16"), ("sigmoid", "bf16")):
        v = np.array(0.75 if dt[0] in "fb" else -3)
        x = Input(v, dt)
        c = Case(f"{op}_{dt}_0d", op, [x])
        if op == "isnan":
            c.out(np.isnan(f64_of(x)), "bool")
        elif op == "neg":
            c.out(-np.asarray(x.value), dt)
        else:
            c.out(float_result(op, x, {}), dt).tol(*TOL[dt])
        cases.append(c)
    for op, dt, out_dt in (("exp", "f32", "f32"), ("tanh", "f16", "f16"),
                           ("sqrt", "i32", "f32"), ("isinf", "f64", "bool"),
                           ("abs", "i8", "i8"), ("clamp", "bf16", "bf16")):
        for shape in ((0,), (2, 0, 3)):
            x = Input(np.zeros(shape), dt)
            name = "x".join(str(s) for s in shape)
            cases.append(Case(f"{op}_{dt}_empty_{name}", op, [x])
                         .out(np.zeros(shape), out_dt))
    x = Input(rng.standard_normal((1, 5)), "f32", [("expand", [3, 5])])
    c = Case("silu_f32_expanded", "silu", [x])
    c.out(float_result("silu", x, {}), "f32").tol(*TOL["f32"])
    cases.append(c)

    # ---- tm_unary with default parameters ("u.<op>")
    for op, dt in (("leaky_relu", "f32"), ("softplus", "f64"),
                   ("clamp", "f32"), ("gelu_tanh", "bf16"), ("neg", "i16")):
        x = layout(values_for(op) if dt[0] in "fb" else small, dt, 1)
        c = Case(f"unary_{op}_{dt}_defaults", "u." + op, [x])
        if dt == "i16":
            c.out(-np.asarray(x.value).astype(np.int64), dt)
        else:
            c.out(float_result(op, x, {}), dt).tol(*tol_for(op, dt))
        cases.append(c)

    # ---- in place ("<op>_"): writes through non-contiguous views
    for i, (op, dt) in enumerate((("exp", "f32"), ("gelu", "f16"),
                                  ("tanh", "bf16"), ("sigmoid", "f64"),
                                  ("neg", "i32"), ("abs", "i64"),
                                  ("square", "u8"), ("round", "f32"),
                                  ("isnan", "bool"),
                                  ("logical_not", "bool"),
                                  ("relu", "f16"), ("softplus", "f32"))):
        if dt == "bool":
            vals = b
        elif dt in INTS:
            vals = ints if dt != "u8" else np.abs(small)
        else:
            vals = values_for(op)
        x = layout(vals, dt, 1 + i % 3)
        c = Case(f"{op}_inplace_{dt}", op + "_", [x])
        if dt == "bool":
            v = np.asarray(x.value)
            c.out(~v if op == "logical_not" else v & False, "bool")
        elif dt in INTS:
            c.out(int_result(op, x, {}), dt)
        else:
            c.out(float_result(op, x, {}), dt).tol(*tol_for(op, dt))
        cases.append(c)
    for args in (dict(lo=-1.0, hi=0.5), dict(lo=math.nan, hi=-2.0)):
        x = layout(values_for("clamp"), "f32", 2)
        c = Case(f"clamp_inplace_f32{argsuffix(args)}", "clamp_", [x], **args)
        c.out(float_result("clamp", x, args), "f32").tol(*TOL["f32"])
        cases.append(c)
    x = layout(ints, "i64", 3)
    c = Case("clamp_inplace_i64", "clamp_", [x], lo=-3.0, hi=3.0)
    cases.append(c.out(int_result("clamp", x, dict(lo=-3.0, hi=3.0)), "i64"))
    x = Input(small, "i32")
    cases.append(Case("exp_inplace_i32_is_an_error", "exp_", [x])
                 .error("TM_EDTYPE", "exp of a i32 tensor gives f32"))
    cases.append(Case("clamp_inplace_i32_frac_is_an_error", "clamp_", [x],
                      lo=0.5, hi=math.nan)
                 .error("TM_EDTYPE", "tm_clamp_: clamp of a i32 tensor"))
    x = Input(rng.standard_normal(4), "f32")
    cases.append(Case("isnan_inplace_f32_is_an_error", "isnan_", [x])
                 .error("TM_EDTYPE", "isnan of a f32 tensor gives bool"))

    # integral clamp bounds beyond an integer dtype saturate to its range
    srng = np.random.default_rng(31)
    for dt, lo, hi in (("i16", 1e9, math.nan), ("u8", math.nan, -2.0),
                       ("i8", -1000.0, 1000.0), ("i32", -3e10, 5.0)):
        x = Input(srng.integers(*INT_RANGE[dt], (3, 4), endpoint=True), dt)
        rlo, rhi = INT_RANGE[dt]
        sat = dict(lo=lo if math.isnan(lo) else min(max(lo, rlo), rhi),
                   hi=hi if math.isnan(hi) else min(max(hi, rlo), rhi))
        for name, op in (("", "clamp"), ("_inplace", "clamp_")):
            c = Case(f"clamp{name}_{dt}_saturating_bounds", op, [x],
                     lo=lo, hi=hi)
            cases.append(c.out(clamp(x.value.astype(np.int64), **sat)
                               .astype(np.int64), dt))

    cases += later_ops()
    write("unary.ref", cases, "tests/gen/gen_unary.py")


# Ops added after the cases above were first written.  Each has its own
# generator, so adding one leaves every earlier case's values as they are.
LATER_FLOAT_OPS = {"exp2": (np.exp2, 33), "tan": (np.tan, 34),
                   "asin": (np.arcsin, 35), "acos": (np.arccos, 36),
                   "atan": (np.arctan, 37), "sinh": (np.sinh, 38),
                   "cosh": (np.cosh, 39), "asinh": (np.arcsinh, 40),
                   "acosh": (np.arccosh, 41), "atanh": (np.arctanh, 42),
                   "log10": (np.log10, 43)}

# Fixed inputs per op: its domain's edges (NaN just outside), where it
# overflows in f32 / f64, tiny x where it must not cancel.
UNIT = [0.0, 0.5, -0.5, 1.0, -1.0, 0.999, -0.999, 1e-8, -1e-8, 1.5, -2.0]
LATER_FIXED = {
    # exact powers, both ends of f32's range (128 overflows, -149 is
    # the last subnormal, -150 rounds to 0) and of f64's (1024)
    "exp2": [0.0, 1.0, -1.0, 0.5, 10.0, -10.0, 127.0, 128.0, -126.0,
             -149.0, -150.0, 1023.0, 1024.0, -1074.0],
    "tan": [0.0, 0.785, -0.785, 1.0, 1.5, -1.5, 1.57, 10.0, -100.0, 1e-8],
    "asin": UNIT, "acos": UNIT, "atanh": UNIT,
    "atan": [0.0, 1.0, -1.0, 10.0, -10.0, 1e10, -1e10, 1e-8, 1e300],
    # f32 overflows past ~89.4, f64 past ~710.5
    "sinh": [0.0, 1.0, -1.0, 10.0, -10.0, 88.0, -89.5, 700.0, -711.0,
             1e-8],
    "cosh": [0.0, 1.0, -1.0, 10.0, -10.0, 88.0, -89.5, 700.0, -711.0,
             1e-8],
    "asinh": [0.0, 1.0, -1.0, 1e-8, -1e-8, 1e10, -1e10, 1e300, -1e300],
    "acosh": [1.0, 1.0000001, 2.0, 10.0, 1e10, 1e300, 0.5, -1.0, 0.0],
    "log10": [1.0, 10.0, 100.0, 0.1, 1e-30, 1e30, 1e300, 1e-310, 0.0,
              -1.0],
}


def later_ops():
    cases = []
    for op, (f, seed) in LATER_FLOAT_OPS.items():
        orng = np.random.default_rng(seed)
        r = orng.standard_normal(10)
        if op in ("asin", "acos", "atanh"):
            r = np.tanh(r)
        elif op in ("acosh", "log10"):
            r = 1.0 + np.exp(r * 2) if op == "acosh" else np.exp(r * 5)
        else:
            r = r * 5
        v = np.array(LATER_FIXED[op] + list(r) + SPECIAL)
        for k, dt in enumerate(FLOATS):
            x = layout(v, dt, k + 1)
            c = Case(f"{op}_{dt}_l{(k + 1) % 4}", op, [x])
            c.out(f(f64_of(x)), dt).tol(*TOL[dt])
            cases.append(c)
        x = Input(np.array([0, 1, -1, 2, -3, 5, 10, -10, 100, 7]), "i32")
        c = Case(f"{op}_i32_to_f32", op, [x])
        cases.append(c.out(f(f64_of(x)), "f32").tol(*TOL["f32"]))
        x = layout(v, "f32", 2)
        c = Case(f"{op}_inplace_f32", op + "_", [x])
        cases.append(c.out(f(f64_of(x)), "f32").tol(*TOL["f32"]))
    return cases


if __name__ == "__main__":
    # Casting results to f32/f16 overflows to inf on purpose (exp(100)).
    # Domain errors (asin(2), log10(-1)) give NaN on purpose too.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        main()
