"""gen_binary.py — reference cases for the binary elementwise family:
a OP b (tensor/tensor, tensor/scalar, scalar/tensor, in place), where,
clamp_tensor, masked_fill and tril/triu.  Run by tests/c/test_binary.c.

Expected values follow PyTorch's semantics, computed here with numpy and
Python integers (never with Foundry):
- Result dtype: PyTorch's promote_types; comparisons and logical ops give
  bool; div of integers/bool gives f32.
- Operands are first converted to the promoted dtype (so an i32 added to an
  f16 is rounded to f16 first, as PyTorch does), then the op is computed in
  the compute type: f64 for f64; f32 for f32, f16 and bf16 (rounded once to
  f16/bf16 at the end); int64 for integers and bool, wrapped to 64 bits and
  narrowed to the result dtype with wrap-around.
- Scalars are Python numbers ("wrapped numbers"): they do not widen a float
  tensor and are rounded to its dtype first (f16 * 0.1 uses f16(0.1)); an
  integral scalar keeps an integer tensor's dtype (computed exactly in
  int64, then wrapped: i8 1 + 300 gives 45) and gives i64 with a bool
  tensor; a non-integral scalar with an integer/bool tensor gives f32.
- bool + bool is logical or (PyTorch: the sum is stored into bool as != 0);
  bool - bool is an error, as in PyTorch and numpy.
- floor_divide / remainder on floats follow numpy's npy_divmod (Python's
  semantics: the remainder has the divisor's sign); integer division by
  zero and integer pow with a negative exponent are errors.

Tolerances (|got - want| <= atol + rtol * |want|):
- Every op except pow is computed in the same IEEE type with one correctly
  rounded operation (or an exact one: max/min/compare/fmod) on both sides,
  so results should be identical: f64 rtol 1e-15, f32 rtol 1e-7 (the
  brief's figures, well above 0 ulp), f16/bf16 0 (one rounding of the same
  f32 value on both sides).  Integer and bool outputs compare exactly.
- pow goes through libm (powf/pow) here and there, possibly different
  implementations (numpy may use SIMD versions): f64 rtol 4e-15, f32 rtol
  1e-6 (a few ulp), f16 rtol 1e-3 and bf16 rtol 8e-3 (one ulp of the
  rounded result, should the f32 values straddle a rounding boundary).
"""
import math
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refgen import (Case, Input, write, cast, promote, NP, FLOATS,  # noqa: E402
                    INTS, ALL)

# Casts of special values overflow on purpose (1e30 to f16 is inf; integers
# wrap when narrowed).
warnings.filterwarnings("ignore", category=RuntimeWarning)
# A generator of our own: refgen's shared one would make this file depend
# on which other scripts ran before it in the same process (gen_all.py).
rng = np.random.default_rng(20261129)

OPS = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne",
       "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
       "floor_divide", "remainder"]
PRED = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
        "logical_xor"}


# ------------------------------------------------------------ semantics


# ops computed in f32 for integer and bool operands (FLOAT class)
FLOAT_BIN = {"div", "atan2", "logaddexp", "logaddexp2", "copysign", "hypot"}
BITS = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
        "bitwise_right_shift"}


def result_dtype(op, pt):
    if op in PRED:
        return "bool"
    if op in FLOAT_BIN and pt not in FLOATS:
        return "f32"
    return pt


def compute_dtype(op, pt):
    if pt == "f64":
        return "f64"
    if pt in FLOATS or op in FLOAT_BIN:
        return "f32"
    return "i64"


def wrapped(tdt, s):
    """(promoted dtype, dtype the scalar is held in) for tensor OP scalar."""
    if tdt in FLOATS:
        return tdt, tdt
    if float(s).is_integer():
        return ("i64" if tdt == "bool" else tdt), "i64"
    return "f32", "f32"


class OpError(Exception):
    pass


class BoolSubError(Exception):
    """PyTorch refuses subtraction with any bool operand (TM_EDTYPE)."""


BOOL_SUB = "subtraction with a bool operand"


def wrap64(v):
    return ((int(v) + 2**63) % 2**64) - 2**63


def int_op(op, a, b):
    a, b = int(a), int(b)
    if op == "add":
        return wrap64(a + b)
    if op == "sub":
        return wrap64(a - b)
    if op == "mul":
        return wrap64(a * b)
    if op == "pow":
        if b < 0:
            raise OpError("negative exponent")
        return wrap64(pow(a % 2**64, b, 2**64))
    if op == "maximum":
        return max(a, b)
    if op == "minimum":
        return min(a, b)
    if op in ("floor_divide", "remainder"):
        if b == 0:
            raise OpError("division by zero")
        return wrap64(a // b if op == "floor_divide" else a % b)
    if op == "fmod":  # C's %: truncated, the sign of a
        if b == 0:
            raise OpError("division by zero")
        return wrap64(int(math.fmod(a, b)) if abs(a) < 2**53 else
                      (abs(a) % abs(b)) * (1 if a >= 0 else -1))
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        return {"bitwise_and": a & b, "bitwise_or": a | b,
                "bitwise_xor": a ^ b}[op]
    if op == "bitwise_left_shift":  # PyTorch: counts outside [0, 64) give 0
        return 0 if b < 0 or b >= 64 else wrap64(a << b)
    if op == "bitwise_right_shift":  # ... or the sign fill
        return (-1 if a < 0 else 0) if b < 0 or b >= 64 else a >> b
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b,
            "gt": a > b, "ge": a >= b,
            "logical_and": bool(a) and bool(b),
            "logical_or": bool(a) or bool(b),
            "logical_xor": bool(a) != bool(b)}[op]


def float_op(op, A, B):
    with np.errstate(all="ignore"):
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "div": np.divide, "pow": np.power, "maximum": np.maximum,
             "minimum": np.minimum, "floor_divide": np.floor_divide,
             "remainder": np.remainder, "eq": np.equal, "ne": np.not_equal,
             "lt": np.less, "le": np.less_equal, "gt": np.greater,
             "ge": np.greater_equal, "fmod": np.fmod, "atan2": np.arctan2,
             "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
             "copysign": np.copysign, "hypot": np.hypot}
        if op in f:
            return f[op](A, B)
        za, zb = A != 0, B != 0  # NaN counts as true
        return {"logical_and": za & zb, "logical_or": za | zb,
                "logical_xor": za ^ zb}[op]


def apply(op, X, Y, pt):
    """op on operands already held as the kernel sees them (X, Y converted
    to pt, or a scalar in its wrapped dtype); returns (values, dtype)."""
    ct, rdt = compute_dtype(op, pt), result_dtype(op, pt)
    X, Y = np.broadcast_arrays(np.asarray(X), np.asarray(Y))
    if ct == "i64":
        flat = [int_op(op, a, b) for a, b in
                zip(X.astype(np.int64).ravel(), Y.astype(np.int64).ravel())]
        R = np.array(flat, dtype=np.bool_ if op in PRED else np.int64)
        R = R.reshape(X.shape)
        if rdt != "bool":
            R = R.astype(NP[rdt])  # narrowing wraps
        else:
            R = R != 0
    else:
        R = float_op(op, X.astype(NP[ct]), Y.astype(NP[ct]))
        R = cast(R, rdt)
    return R, rdt


def tensor_op(op, x, xdt, y, ydt):
    if op == "sub" and "bool" in (xdt, ydt):
        raise BoolSubError()
    pt = promote(xdt, ydt)
    return apply(op, cast(x, pt), cast(y, pt), pt)


def scalar_op(op, x, xdt, s, rev):
    if op == "sub" and xdt == "bool":
        raise BoolSubError()
    pt, sdt = wrapped(xdt, s)
    S = cast(np.array(s, dtype=np.float64), sdt)
    X = cast(x, pt)
    return apply(op, S, X, pt) if rev else apply(op, X, S, pt)


def tol(dt, op):
    if dt in ("bool",) + INTS:
        return (0.0, 0.0)
    if op in ("pow", "atan2", "logaddexp", "logaddexp2", "hypot"):
        return {"f64": (4e-15, 0.0), "f32": (1e-6, 0.0), "f16": (1e-3, 0.0),
                "bf16": (8e-3, 0.0)}[dt]
    return {"f64": (1e-15, 0.0), "f32": (1e-7, 0.0), "f16": (0.0, 0.0),
            "bf16": (0.0, 0.0)}[dt]


# --------------------------------------------------------------- inputs

def values(dt, shape, op="add", role="a"):
    """Random values of dtype dt suited to op (no integer division by zero,
    no negative integer exponent, positive float bases for pow)."""
    n = int(np.prod(shape)) if len(shape) else 1
    if dt in FLOATS:
        v = rng.standard_normal(n) * 3
        if op == "pow":
            v = (np.abs(v) + 0.25) if role == "a" else rng.uniform(-2, 3, n)
        if op in ("floor_divide", "remainder") and role == "b":
            v = np.where(np.abs(v) < 0.1, 0.5, v)
        if op in ("eq", "ne", "le", "ge") and role == "b" and n > 2:
            v[::3] = 0  # some equal pairs (a gets zeros at the same spots)
        if op in ("eq", "ne", "le", "ge") and role == "a" and n > 2:
            v[::3] = 0
        return v.reshape(shape)
    if dt == "bool":
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    lo, hi = {"i8": (-20, 21), "u8": (0, 40), "i16": (-300, 301),
              "i32": (-5000, 5001), "i64": (-100000, 100001)}[dt]
    if op == "pow":
        lo, hi = ((-5, 6) if dt != "u8" else (0, 6)) if role == "a" else (0, 6)
    if op in ("floor_divide", "remainder") and role == "b":
        lo, hi = (-7, 8) if dt != "u8" else (1, 9)
    v = rng.integers(lo, hi, n)
    if op in ("floor_divide", "remainder") and role == "b":
        v = np.where(v == 0, 3, v)
    if op in ("eq", "ne", "le", "ge") and n > 2:
        v[::3] = 1
    return v.reshape(shape)


cases = []


def binop_case(name, op, a, b, variant=""):
    """a, b: Inputs.  variant "" (a OP b) or "_" (a OP= b)."""
    try:
        R, rdt = tensor_op(op, a.value, a.dtype, b.value, b.dtype)
    except OpError as e:
        c = Case(name, op + variant, [a, b]).error("TM_EINVAL", str(e))
        cases.append(c)
        return c
    except BoolSubError:
        c = Case(name, op + variant, [a, b]).error("TM_EDTYPE", BOOL_SUB)
        cases.append(c)
        return c
    if variant == "_":
        R, rdt = cast(R, a.dtype), a.dtype
    c = Case(name, op + variant, [a, b]).out(R, rdt)
    c.tol(*tol(rdt, op))
    cases.append(c)
    return c


def scalar_case(name, op, a, s, rev=False, inplace=False):
    try:
        R, rdt = scalar_op(op, a.value, a.dtype, s, rev)
    except (OpError, BoolSubError) as e:
        status, msg = ("TM_EINVAL", str(e)) if isinstance(e, OpError) else \
            ("TM_EDTYPE", BOOL_SUB)
        c = Case(name, op + ("_rs" if rev else "_s") + ("_" if inplace else ""),
                 [a], s=s).error(status, msg)
        cases.append(c)
        return c
    if inplace:
        R, rdt = cast(R, a.dtype), a.dtype
    c = Case(name, op + ("_rs" if rev else "_s") + ("_" if inplace else ""),
             [a], s=s).out(R, rdt)
    c.tol(*tol(rdt, op))
    cases.append(c)
    return c


def inp(dt, shape, op="add", role="a", views=()):
    return Input(values(dt, shape, op, role), dt, views)


# ------------------------------------------------ every op x every dtype

for op in OPS:
    for dt in ALL:
        if dt == "bool" and op in ("pow", "floor_divide", "remainder"):
            continue  # division by false is an error; pow on bool is odd
        if dt == "bool" and op == "sub":
            cases.append(Case("sub_bool_is_an_error", "sub",
                              [inp("bool", [3]), inp("bool", [3])])
                         .error("TM_EDTYPE", BOOL_SUB))
            continue
        binop_case(f"{op}_{dt}", op, inp(dt, [3, 4], op, "a"),
                   inp(dt, [3, 4], op, "b"))

# --------------------------------- non-contiguous views and broadcasting

for op in ("add", "sub", "mul", "div", "maximum", "lt", "floor_divide",
           "remainder", "pow", "logical_xor"):
    for dt in ("f32", "f16", "i32", "f64", "bf16"):
        # a: transpose of [4,3]; b: every other column of [3,8]
        a = Input(values(dt, [4, 3], op, "a"), dt, [("transpose", 0, 1)])
        b = Input(values(dt, [3, 8], op, "b"), dt, [("slice", 1, 0, 8, 2)])
        binop_case(f"{op}_{dt}_noncontig", op, a, b)
    binop_case(f"{op}_bcast_col_row", op, inp("f32", [3, 1], op, "a"),
               inp("f32", [4], op, "b"))
    binop_case(f"{op}_bcast_3d", op, inp("i32", [2, 1, 4], op, "a"),
               inp("i32", [3, 1], op, "b"))
    binop_case(f"{op}_bcast_ndims", op, inp("f64", [5], op, "a"),
               inp("f64", [2, 3, 5], op, "b"))

binop_case("add_permute_3d", "add",
           Input(values("f32", [2, 3, 4]), "f32", [("permute", 2, 0, 1)]),
           Input(values("f32", [4, 3, 1]), "f32", [("transpose", 1, 2)]))
binop_case("mul_expand_view", "mul",
           Input(values("f16", [3, 1]), "f16", [("expand", [3, 5])]),
           Input(values("f16", [2, 5]), "f16", [("select", 0, 1)]))
binop_case("sub_slice_negative_step_free", "sub",
           Input(values("i64", [10]), "i64", [("slice", 0, 1, 10, 3)]),
           Input(values("i64", [3]), "i64"))

# ------------------------------------------------------- 0-d and 0-size

binop_case("add_0d_0d", "add", inp("f32", []), inp("f32", []))
binop_case("mul_0d_vec", "mul", inp("i16", []), inp("i16", [3]))
binop_case("div_vec_0d", "div", inp("f16", [3]), inp("f16", []))
binop_case("add_empty_rows", "add", inp("f32", [0, 3]), inp("f32", [3]))
binop_case("lt_empty_0d", "lt", inp("i32", [0]), inp("i32", []))
binop_case("mul_empty_bcast", "mul", inp("f64", [2, 0]), inp("f64", [1, 0]))
binop_case("floor_divide_empty", "floor_divide", inp("i64", [0, 2]),
           inp("i64", [2], "floor_divide", "b"))

# ------------------------------------------------------ mixed promotion

MIXED = [("u8", "i8"), ("i32", "f16"), ("f16", "bf16"), ("i64", "f32"),
         ("bool", "f16"), ("i8", "i64"), ("u8", "bool"), ("f64", "f16"),
         ("i16", "bf16"), ("bool", "i32"), ("u8", "i16"), ("f32", "bf16")]
for x, y in MIXED:
    for op in ("add", "mul", "div", "maximum", "gt", "sub"):
        binop_case(f"{op}_{x}_{y}", op, inp(x, [2, 3], op, "a"),
                   inp(y, [3], op, "b"))

# an i32 too wide for f16 is rounded to f16 before the add (PyTorch)
binop_case("add_i32_f16_rounds_int_first", "add",
           Input(np.array([2049, 4097, 3, -2049]), "i32"),
           Input(np.array([0.5, 0.5, 0.5, -0.5]), "f16"))
# compared in the promoted type: i64 16777217 becomes f32 16777216
binop_case("eq_i64_f32_compares_in_f32", "eq",
           Input(np.array([16777217, 5, -1]), "i64"),
           Input(np.array([16777216.0, 5.0, 1.0]), "f32"))
binop_case("div_i32_i32_gives_f32", "div",
           Input(np.array([7, -7, 0, 1]), "i32"),
           Input(np.array([2, 2, 0, 3]), "i32"))
binop_case("add_bool_bool_is_or", "add",
           Input(np.array([True, True, False, False]), "bool"),
           Input(np.array([True, False, True, False]), "bool"))
binop_case("mul_bool_bool_is_and", "mul",
           Input(np.array([True, True, False, False]), "bool"),
           Input(np.array([True, False, True, False]), "bool"))

# ------------------------------------------------------- special values

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.5, -3.0, 1e30]
sa = np.array(SPECIAL)
sb = np.array([1.0, np.nan, 2.0, 0.0, -0.0, np.inf, -np.inf, -0.5, 0.0, -1e-30])
for dt in FLOATS:
    for op in OPS:
        binop_case(f"{op}_{dt}_special", op, Input(sa, dt), Input(sb, dt))
        # and the other way round
        binop_case(f"{op}_{dt}_special_rev", op, Input(sb, dt), Input(sa, dt))

binop_case("add_f16_overflow_to_inf", "add", Input(np.array([60000.0, -60000.0]), "f16"),
           Input(np.array([60000.0, -60000.0]), "f16"))
I32MAX, I64MAX = 2**31 - 1, 2**63 - 1
binop_case("add_i8_wraps", "add", Input(np.array([127, -128, 100]), "i8"),
           Input(np.array([1, -1, 100]), "i8"))
binop_case("sub_u8_wraps", "sub", Input(np.array([0, 3, 255]), "u8"),
           Input(np.array([1, 5, 255]), "u8"))
binop_case("add_i32_wraps", "add", Input(np.array([I32MAX, -I32MAX - 1]), "i32"),
           Input(np.array([1, -1]), "i32"))
binop_case("mul_i32_wraps", "mul", Input(np.array([65536, 123456789]), "i32"),
           Input(np.array([65536, 1000]), "i32"))
binop_case("add_i64_wraps", "add", Input(np.array([I64MAX, -I64MAX - 1]), "i64"),
           Input(np.array([1, -1]), "i64"))
binop_case("mul_i64_wraps", "mul", Input(np.array([2**62, 3037000500]), "i64"),
           Input(np.array([4, 3037000500]), "i64"))
binop_case("floor_divide_i64_min_by_minus_one", "floor_divide",
           Input(np.array([-I64MAX - 1, 7, -7, 7, -7]), "i64"),
           Input(np.array([-1, 2, 2, -2, -2]), "i64"))
binop_case("remainder_i64_min_by_minus_one", "remainder",
           Input(np.array([-I64MAX - 1, 7, -7, 7, -7]), "i64"),
           Input(np.array([-1, 2, 2, -2, -2]), "i64"))
binop_case("floor_divide_i8_min_by_minus_one", "floor_divide",
           Input(np.array([-128, -128, 127]), "i8"),
           Input(np.array([-1, 3, -3]), "i8"))
binop_case("pow_i8_wraps", "pow", Input(np.array([3, 2, -2, 0, 1, -1]), "i8"),
           Input(np.array([5, 7, 7, 0, 100, 101]), "i8"))
binop_case("pow_i64_wraps", "pow", Input(np.array([3, 7, -1]), "i64"),
           Input(np.array([41, 40, 2**40 + 1]), "i64"))
binop_case("pow_f32_negative_base", "pow",
           Input(np.array([-2.0, -2.0, -8.0, -0.0]), "f32"),
           Input(np.array([3.0, 0.5, 1.0 / 3.0, -1.0]), "f32"))
binop_case("floor_divide_i32_by_zero", "floor_divide",
           Input(np.array([1, 2, 3]), "i32"), Input(np.array([1, 0, 1]), "i32"))
binop_case("remainder_u8_by_zero", "remainder",
           Input(np.array([1, 2]), "u8"), Input(np.array([0, 1]), "u8"))
binop_case("pow_i64_negative_exponent", "pow",
           Input(np.array([2, 2]), "i64"), Input(np.array([1, -1]), "i64"))
binop_case("maximum_i64_extremes", "maximum",
           Input(np.array([I64MAX, -I64MAX - 1]), "i64"),
           Input(np.array([-I64MAX - 1, I64MAX]), "i64"))

# --------------------------------------------------------------- scalars

SCALARS = [
    ("f32", 1.5), ("f32", -0.001), ("f64", 0.1), ("f16", 2.5), ("f16", 0.1),
    ("bf16", 0.3), ("bf16", -7.0), ("i32", 3), ("i32", 2.5), ("i32", -2),
    ("i8", 300), ("u8", 5), ("bool", 1), ("bool", 0.5), ("i64", -7),
    ("i16", 1e-3),
]
for dt, s in SCALARS:
    for op in ("add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne",
               "lt", "le", "gt", "ge", "logical_and", "logical_or",
               "logical_xor"):
        a = inp(dt, [2, 3], op)
        scalar_case(f"{op}_s_{dt}_{s}", op, a, s)
        scalar_case(f"{op}_rs_{dt}_{s}", op, a, s, rev=True)
    for op in ("floor_divide", "remainder"):
        if s != 0 and dt != "bool":
            scalar_case(f"{op}_s_{dt}_{s}", op, inp(dt, [2, 3], op), s)
            scalar_case(f"{op}_rs_{dt}_{s}", op,
                        inp(dt, [2, 3], op, "b"), s, rev=True)

scalar_case("pow_s_f32_2", "pow", inp("f32", [2, 3], "pow"), 2.0)
scalar_case("pow_s_f16_half", "pow", inp("f16", [2, 3], "pow"), 0.5)
scalar_case("pow_s_bf16_3", "pow", inp("bf16", [2, 3], "pow"), 3.0)
scalar_case("pow_s_i32_2", "pow", inp("i32", [2, 3], "pow"), 2)
scalar_case("pow_s_i32_half_gives_f32", "pow",
            Input(np.array([1, 4, 9, 2]), "i32"), 0.5)
scalar_case("pow_s_i32_negative_exponent", "pow", inp("i32", [3], "pow"), -1)
scalar_case("pow_s_f32_negative_exponent", "pow", inp("f32", [3], "pow"), -1)
scalar_case("pow_rs_f32", "pow", inp("f32", [2, 3], "pow", "b"), 2.0, rev=True)
scalar_case("pow_rs_i64", "pow", inp("i64", [2, 3], "pow", "b"), 3, rev=True)
scalar_case("lt_s_i8_out_of_range", "lt", Input(np.array([-128, 0, 127]), "i8"),
            300)
scalar_case("eq_s_f16_rounded_scalar", "eq",
            Input(np.array([0.1, 0.2]), "f16"), 0.1)
scalar_case("add_s_i8_wraps", "add", Input(np.array([1, 127, -128]), "i8"), 300)
scalar_case("sub_s_u8_wraps", "sub", Input(np.array([3, 200]), "u8"), 5)
scalar_case("mul_s_0d", "mul", inp("f32", []), 4.0)
scalar_case("add_s_empty", "add", inp("i32", [0, 2]), 1)
scalar_case("div_s_noncontig", "div",
            Input(values("f32", [4, 3]), "f32", [("transpose", 0, 1)]), 3.0)
scalar_case("add_s_nan", "add", inp("f32", [3]), float("nan"))
scalar_case("mul_s_inf_int_gives_f32", "mul", Input(np.array([1, 0, -2]), "i32"),
            float("inf"))

# --------------------------------------------------------------- in place

binop_case("add_inplace_bcast", "add", inp("f32", [3, 4]), inp("f32", [4]), "_")
binop_case("add_inplace_noncontig_target", "add",
           Input(values("f32", [4, 3]), "f32", [("transpose", 0, 1)]),
           inp("f32", [3, 1]), "_")
binop_case("sub_inplace_i32_i8", "sub", inp("i32", [2, 3]), inp("i8", [2, 3]),
           "_")
binop_case("mul_inplace_f16_f32", "mul", inp("f16", [2, 3]), inp("f32", [3]),
           "_")
binop_case("div_inplace_f32_i32", "div", inp("f32", [2, 3]),
           Input(np.array([1, 2, 4]), "i32"), "_")
binop_case("add_inplace_f16_i32_rounds", "add",
           Input(np.array([0.5, 0.5]), "f16"), Input(np.array([2049, 4097]), "i32"),
           "_")
binop_case("add_inplace_f32_f64", "add", inp("f32", [5]), inp("f64", [5]), "_")
binop_case("maximum_inplace_i64", "maximum", inp("i64", [2, 3]),
           inp("i64", [1, 3]), "_")
binop_case("eq_inplace_into_f32", "eq", inp("f32", [2, 3], "eq", "a"),
           inp("f32", [2, 3], "eq", "b"), "_")
binop_case("floor_divide_inplace_i16", "floor_divide", inp("i16", [2, 3]),
           inp("i16", [3], "floor_divide", "b"), "_")
binop_case("logical_or_inplace_bool", "logical_or", inp("bool", [4]),
           inp("bool", [4]), "_")
binop_case("add_inplace_0d", "add", inp("f64", []), inp("f64", []), "_")
binop_case("mul_inplace_empty", "mul", inp("f32", [0, 3]), inp("f32", [3]), "_")
scalar_case("add_scalar_inplace_i32", "add", inp("i32", [2, 3]), 3,
            inplace=True)
scalar_case("mul_scalar_inplace_f16", "mul", inp("f16", [2, 3]), 0.1,
            inplace=True)
scalar_case("floor_divide_scalar_inplace_i64", "floor_divide",
            inp("i64", [2, 3]), -3, inplace=True)
scalar_case("sub_scalar_inplace_u8_wraps", "sub",
            Input(np.array([1, 10]), "u8"), 3, inplace=True)

cases.append(Case("div_inplace_int_is_an_error", "div_",
                  [inp("i64", [3]), inp("i64", [3], "floor_divide", "b")])
             .error("TM_EDTYPE", "result type f32 can't be cast to the output "
                    "dtype i64"))
cases.append(Case("add_scalar_inplace_float_into_int_is_an_error", "add_s_",
                  [inp("i32", [3])], s=2.5)
             .error("TM_EDTYPE", "result type f32 can't be cast to the output "
                    "dtype i32"))
cases.append(Case("add_inplace_int_into_bool_is_an_error", "add_",
                  [inp("bool", [3]), inp("i8", [3])])
             .error("TM_EDTYPE", "result type i8 can't be cast to the output "
                    "dtype bool"))
cases.append(Case("add_scalar_inplace_bool_is_an_error", "add_s_",
                  [inp("bool", [3])], s=1)
             .error("TM_EDTYPE", "result type i64 can't be cast"))
cases.append(Case("add_inplace_target_must_hold_broadcast", "add_",
                  [inp("f32", [3]), inp("f32", [2, 3])])
             .error("TM_ESHAPE", "does not broadcast to the shape [3] of a"))
cases.append(Case("add_shape_mismatch", "add",
                  [inp("f32", [2, 3]), inp("f32", [4])])
             .error("TM_ESHAPE", "shapes [2,3] and [4] do not broadcast"))

# ------------------------------------------------------------------ where


def where_case(name, c, a, b):
    pt = promote(a.dtype, b.dtype)
    cnd = cast(c.value, "f64") != 0  # NaN is true
    R = np.where(cnd, cast(a.value, pt), cast(b.value, pt))
    cases.append(Case(name, "where", [c, a, b]).out(R, pt))


where_case("where_bcast", Input(rng.integers(0, 2, (3, 1)) == 1, "bool"),
           inp("f32", [4]), inp("f32", []))
where_case("where_float_cond_nan_and_negzero",
           Input(np.array([np.nan, -0.0, 0.0, 0.5, -2.0]), "f32"),
           Input(np.array([1, 2, 3, 4, 5]), "i32"),
           Input(np.array([-1.5, -2.5, -3.5, -4.5, -5.5]), "f16"))
where_case("where_int_cond_noncontig_u8_i8",
           Input(rng.integers(-2, 3, (4, 3)), "i64", [("transpose", 0, 1)]),
           inp("u8", [3, 4]), Input(values("i8", [3, 8]), "i8",
                                    [("slice", 1, 0, 8, 2)]))
where_case("where_f64_3d", Input(rng.integers(0, 2, (2, 1, 4)) == 1, "bool"),
           inp("f64", [3, 1]), inp("f64", [2, 3, 4]))
where_case("where_bf16", Input(rng.integers(0, 2, (5,)) == 1, "bool"),
           inp("bf16", [5]), inp("bf16", [5]))
where_case("where_bool_values", Input(rng.integers(0, 2, (6,)) == 1, "bool"),
           inp("bool", [6]), inp("bool", [1]))
where_case("where_i32_f16_rounds", Input(np.array([True, False]), "bool"),
           Input(np.array([2049, 7]), "i32"), Input(np.array([0.5, 1.5]), "f16"))
where_case("where_0d", Input(np.array(True), "bool"), inp("i16", []),
           inp("i16", []))
where_case("where_empty", Input(np.zeros((0, 2)) == 1, "bool"),
           inp("f32", [2]), inp("f32", [0, 1]))
cases.append(Case("where_shapes_do_not_broadcast", "where",
                  [Input(np.array([True, False]), "bool"), inp("f32", [3]),
                   inp("f32", [3])])
             .error("TM_ESHAPE", "do not broadcast"))

# ----------------------------------------------------------- clamp_tensor


def clamp_case(name, t, lo=None, hi=None):
    # both steps run in the dtype promoted over all three operands
    pt = t.dtype
    for b in (lo, hi):
        if b is not None:
            pt = promote(pt, b.dtype)
    R, dt = cast(t.value, pt), pt
    if lo is not None:
        R, dt = tensor_op("maximum", R, dt, lo.value, lo.dtype)
    if hi is not None:
        R, dt = tensor_op("minimum", R, dt, hi.value, hi.dtype)
    ins = [t] + [x for x in (lo, hi) if x is not None]
    c = Case(name, "clamp_tensor", ins, has_lo=int(lo is not None),
             has_hi=int(hi is not None)).out(R, dt)
    cases.append(c)


clamp_case("clamp_tensor_both_bcast",
           Input(np.array([[np.nan, -5, 0.5, 9], [1, 2, 3, 4], [-1, -2, 7, 0]]),
                 "f32"),
           Input(np.array([-1.0, 0.0, 1.0, 2.0]), "f32"),
           Input(np.array([[3.0], [2.5], [-5.0]]), "f32"))  # row 3: lo > hi
clamp_case("clamp_tensor_lo_only_i32_f32", inp("i32", [2, 3]),
           Input(np.array([0.5, -100.0, 3.25]), "f32"))
clamp_case("clamp_tensor_hi_only_f16", inp("f16", [2, 3]), None,
           inp("f16", [2, 1]))
clamp_case("clamp_tensor_nan_bound", Input(np.array([1.0, 2.0, 3.0]), "f64"),
           Input(np.array([np.nan, 0.0, 0.0]), "f64"),
           Input(np.array([5.0, np.nan, 5.0]), "f64"))
clamp_case("clamp_tensor_noncontig_i64",
           Input(values("i64", [4, 3]), "i64", [("transpose", 0, 1)]),
           Input(np.array(-1000), "i64"), Input(np.array(1000), "i64"))
clamp_case("clamp_tensor_bf16_0d", inp("bf16", []), inp("bf16", []),
           inp("bf16", []))

# ------------------------------------------------------------ masked_fill


def masked_case(name, t, mask, value, inplace=False):
    R = t.value.copy()
    v = cast(np.array(value), t.dtype) if t.dtype in FLOATS else None
    if t.dtype not in FLOATS:  # float -> int truncates, -> bool is != 0
        v = np.array(np.trunc(value)).astype(NP[t.dtype]) if t.dtype != "bool" \
            else np.array(value != 0)
    R = np.where(np.broadcast_to(mask.value, R.shape), v, R)
    cases.append(Case(name, "masked_fill" + ("_" if inplace else ""),
                      [t, mask], value=value).out(cast(R, t.dtype), t.dtype))


masked_case("masked_fill_f32_bcast", inp("f32", [3, 4]),
            Input(rng.integers(0, 2, (4,)) == 1, "bool"), -1.5)
masked_case("masked_fill_i32_truncates", inp("i32", [2, 3]),
            Input(rng.integers(0, 2, (2, 1)) == 1, "bool"), 2.7)
masked_case("masked_fill_f16_rounds", inp("f16", [5]),
            Input(np.array([True, False, True, False, True]), "bool"), 0.1)
masked_case("masked_fill_bool", inp("bool", [4]),
            Input(np.array([True, False, True, True]), "bool"), 1)
masked_case("masked_fill_nan", inp("f64", [2, 2]),
            Input(np.array([[True, False], [False, True]]), "bool"),
            float("nan"))
masked_case("masked_fill_noncontig",
            Input(values("bf16", [4, 3]), "bf16", [("transpose", 0, 1)]),
            Input(rng.integers(0, 2, (3, 4)) == 1, "bool"), 7)
masked_case("masked_fill_0d", inp("i64", []), Input(np.array(True), "bool"), -3)
masked_case("masked_fill_empty", inp("f32", [0, 3]),
            Input(np.array([True, False, True]), "bool"), 1)
masked_case("masked_fill_inplace_noncontig",
            Input(values("f32", [4, 3]), "f32", [("transpose", 0, 1)]),
            Input(rng.integers(0, 2, (3, 1)) == 1, "bool"), 9, inplace=True)
masked_case("masked_fill_inplace_u8", inp("u8", [2, 3]),
            Input(rng.integers(0, 2, (2, 3)) == 1, "bool"), 255, inplace=True)
cases.append(Case("masked_fill_mask_must_be_bool", "masked_fill",
                  [inp("f32", [3]), inp("u8", [3])], value=0)
             .error("TM_EDTYPE", "mask must have dtype bool, not u8"))
cases.append(Case("masked_fill_mask_does_not_broadcast_back", "masked_fill",
                  [inp("f32", [3]), Input(np.ones((2, 3)) == 1, "bool")],
                  value=0)
             .error("TM_ESHAPE", "mask of shape [2,3] does not broadcast to "
                    "the tensor's shape [3]"))

# -------------------------------------------------------------- tril/triu


def tri_case(name, op, t, k):
    f = np.tril if op.startswith("tril") else np.triu
    cases.append(Case(name, op, [t], k=k).out(f(t.value, k), t.dtype))


for k in (0, 1, -2, 10, -10):
    tri_case(f"tril_f32_k{k}", "tril", inp("f32", [4, 5]), k)
    tri_case(f"triu_f32_k{k}", "triu", inp("f32", [4, 5]), k)
tri_case("tril_batched_i32", "tril", inp("i32", [2, 3, 4]), 0)
tri_case("triu_batched_f16", "triu", inp("f16", [2, 4, 3]), -1)
tri_case("tril_noncontig_f64", "tril",
         Input(values("f64", [5, 3]), "f64", [("transpose", 0, 1)]), 1)
tri_case("triu_bool", "triu", inp("bool", [3, 3]), 0)
tri_case("tril_bf16", "tril", inp("bf16", [3, 2]), 0)
tri_case("tril_empty", "tril", inp("f32", [0, 3]), 0)
tri_case("triu_inplace_noncontig", "triu_",
         Input(values("i64", [4, 4]), "i64", [("transpose", 0, 1)]), 1)
tri_case("tril_inplace_batched", "tril_", inp("f32", [2, 3, 3]), -1)
cases.append(Case("tril_needs_2_dims", "tril", [inp("f32", [4])], k=0)
             .error("TM_EINVAL", "at least 2 dims"))

# --------------------------------------------------- appended regressions
# Cases found by tests/fuzz/diff_ops.py; a generator of their own, so the
# data above does not change.
rng_fuzz = np.random.default_rng(20270101)

# i32 with a bf16 lo and an f64 hi: max(t, lo) used to run in bf16 and round
# t (-281 -> -280, 257 -> 256) although the result dtype is f64.
clamp_case("clamp_tensor_i32_bf16_lo_f64_hi",
           Input(np.array([[-281, 257, 3], [1001, -7, 255]]), "i32"),
           Input(np.array([-300.0, 0.5, 2.0]), "bf16"),
           Input(rng_fuzz.integers(300, 2000, (2, 1)).astype(np.float64),
                 "f64"))
# f16 t, i32 lo, f64 hi: the kernel picks its compute type from its two
# operands, so max(t, lo) ran in f32 (937392860 -> 937392832).
clamp_case("clamp_tensor_f16_i32_lo_f64_hi",
           Input(np.array([[1.5, -2.0, np.nan], [65504.0, np.inf, -0.0]]),
                 "f16"),
           Input(np.array([[937392861], [-16777217]]), "i32"),
           Input(np.array([1e300, 2e9, 1.0]), "f64"))
clamp_case("clamp_tensor_u8_f16_lo_i64_hi",
           Input(rng_fuzz.integers(0, 256, (3, 4)), "u8",
                 [("transpose", 0, 1)]),
           Input(np.array(100.5), "f16"),
           Input(np.array([[250], [300], [2], [255]]), "i64"))

# In place, an integer a meeting an f16/bf16 b is rounded to that dtype
# first, as out of place: i32 2027171362 becomes f16 inf (== inf), 2049
# becomes 2048.  The in-place kernel used to compare a's raw values.
for bdt in ("f16", "bf16"):
    binop_case(f"eq_inplace_i32_{bdt}_rounds_a", "eq",
               Input(np.array([[2027171362, 2049, 5], [-70000, 257, 0]]),
                     "i32", [("transpose", 0, 1)]),
               Input(np.array([[np.inf], [2048.0], [5.0]]), bdt), "_")
    odd = rng_fuzz.integers(1024, 2048, (3, 4)) * 2 + 1  # not exact in f16
    binop_case(f"gt_inplace_i64_{bdt}_rounds_a", "gt", Input(odd, "i64"),
               Input(odd[0] - 1.0, bdt), "_")

# ------------------------------------- ops appended to TM_BINARY_OPS later
# Drawn after every case above, so those stay byte-identical.  Shift counts
# and integer operands are small, with negative and >= 64 counts; fmod's
# divisors avoid 0 (the division-by-zero case has its own row).

LATER = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
         "bitwise_right_shift", "fmod", "atan2", "logaddexp", "logaddexp2",
         "copysign", "hypot"]


def later_values(op, dt, shape, role):
    if op in BITS and role == "b" and "shift" in op:
        return rng.integers(-3, 70 if dt == "i64" else 9, shape)
    if op == "fmod" and role == "b" and dt not in FLOATS:
        v = rng.integers(-7, 8, shape)
        return np.where(v == 0, 3, v)
    return values(dt, shape, op, role)


for op in LATER:
    dts = ("i8", "u8", "i16", "i32", "i64") if op in BITS else \
        ("f32", "f64", "f16", "bf16", "i32", "i64")
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        dts += ("bool",)
    for dt in dts:
        binop_case(f"{op}_{dt}", op,
                   Input(later_values(op, dt, [3, 4], "a"), dt),
                   Input(later_values(op, dt, [3, 4], "b"), dt))
    dt = dts[0]
    binop_case(f"{op}_{dt}_noncontig_bcast", op,
               Input(later_values(op, dt, [4, 3], "a"), dt,
                     [("transpose", 0, 1)]),
               Input(later_values(op, dt, [4], "b"), dt))
    binop_case(f"{op}_{dt}_inplace", op,
               Input(later_values(op, dt, [2, 3], "a"), dt),
               Input(later_values(op, dt, [3], "b"), dt), "_")
    binop_case(f"{op}_0d_empty", op, Input(later_values(op, dt, [], "a"), dt),
               Input(later_values(op, dt, [0, 2], "b"), dt))
    for s in (3, -2, 1.5):
        if op in BITS and s == 1.5:
            continue
        scalar_case(f"{op}_s_{dt}_{s}", op, Input(later_values(
            op, dt, [2, 3], "a"), dt), s)
        scalar_case(f"{op}_rs_{dt}_{s}", op, Input(later_values(
            op, dt, [2, 3], "b"), dt), s, rev=True)
for op in sorted(BITS):
    c = Case(f"{op}_f32_is_an_error", op, [Input(values("f32", [3]), "f32"),
                                           Input(values("i32", [3]), "i32")])
    cases.append(c.error("TM_EDTYPE", "only defined on integer and bool"))
for op in ("bitwise_left_shift", "bitwise_right_shift"):
    cases.append(Case(f"{op}_bool_is_an_error", op,
                      [Input(values("bool", [3]), "bool")] * 2)
                 .error("TM_EDTYPE", "shifts of bool tensors"))
binop_case("fmod_i32_by_zero", "fmod", Input(np.array([1, 2]), "i32"),
           Input(np.array([1, 0]), "i32"))
binop_case("fmod_sign_of_dividend", "fmod",
           Input(np.array([7.0, -7.0, 7.0, -7.0, -0.0, np.inf, 1.0]), "f64"),
           Input(np.array([3.0, 3.0, -3.0, -3.0, 2.0, 2.0, np.inf]), "f64"))
binop_case("fmod_i64_extremes", "fmod",
           Input(np.array([-2**63, -2**63, 2**63 - 1, -7]), "i64"),
           Input(np.array([-1, 3, -2, 2]), "i64"))

write("binary.ref", cases, "gen_binary.py: binary ops, where, clamp_tensor, "
      "masked_fill, tril/triu")
