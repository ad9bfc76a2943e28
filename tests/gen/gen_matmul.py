"""Reference cases for tm_matmul (tests/data/matmul.ref).

Expected values: np.matmul in float64 on the inputs as Foundry holds them
(float32/f16/bf16 values widened exactly), then rounded to the result
dtype; integers exactly with Python ints, wrapped to the result dtype.

Tolerances (stated per case by `float_tol`):
- Foundry sums each output element over k in order, one product at a
  time, in the accumulation type (F32 for f32/f16/bf16, F64 for f64).
  Each step rounds once, so |err| <= k * eps * sum_k |a_ik||b_kj| with eps
  the unit roundoff (2^-24 for F32, 2^-53 for F64).  We allow twice that,
  taking the max of sum|a||b| over the case: atol = 2*k*eps*max(|a|@|b|).
- f16 / bf16 results are then rounded once from F32, while the reference
  rounds the exact value: the two may land one ulp apart, so rtol is one
  ulp of the format (2^-10 for f16, 2^-7 for bf16), plus 2^-24 absolute
  for f16 subnormals.
- Integers compare exactly (wrap-around included).
"""
import numpy as np

from refgen import Case, Input, cast, rng, write, FLOATS

EPS_ACC = {"f32": 2.0 ** -24, "f64": 2.0 ** -53, "f16": 2.0 ** -24,
           "bf16": 2.0 ** -24}
ULP = {"f32": 0.0, "f64": 0.0, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
INT_BITS = {"i8": 8, "u8": 8, "i16": 16, "i32": 32, "i64": 64}
SIGNED = {"i8": True, "u8": False, "i16": True, "i32": True, "i64": True}

# PyTorch promotion for the pairs used here (integers/bool/floats).
PROMOTE = {("i8", "u8"): "i16", ("u8", "i8"): "i16", ("f32", "i32"): "f32",
           ("bool", "f32"): "f32", ("i64", "i32"): "i64",
           ("f16", "bf16"): "f32", ("f32", "f64"): "f64", ("bool", "i16"):
           "i16"}


def promote(da, db):
    return da if da == db else PROMOTE[(da, db)]


def as_f64(x):
    return np.asarray(x).astype(np.float64)


def wrap(v, dt):
    bits = INT_BITS[dt]
    v = int(v) % (1 << bits)
    if SIGNED[dt] and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_matmul(a, b, dt):
    """Exact matmul with Python ints (object arrays), wrapped to dt."""
    r = np.matmul(np.asarray(a).astype(object), np.asarray(b).astype(object))
    if np.ndim(r) == 0:
        return np.array(wrap(r, dt), dtype=np.int64)
    return np.vectorize(lambda v: wrap(v, dt), otypes=[np.int64])(r)


def float_tol(a, b, dt):
    """(rtol, atol) for a float result, as the module docstring derives."""
    k = a.shape[-1]
    s = np.matmul(np.abs(as_f64(a)), np.abs(as_f64(b)))
    smax = float(np.max(s)) if s.size else 0.0
    atol = 2.0 * k * EPS_ACC[dt] * smax
    if dt == "f16":
        atol += 2.0 ** -24
    return ULP[dt], atol


def data(shape, dt, lo=-3, hi=4):
    if dt in FLOATS:
        return rng.standard_normal(shape)
    if dt == "bool":
        return rng.integers(0, 2, shape)
    if dt == "u8":
        return rng.integers(0, 256, shape)
    return rng.integers(lo, hi, shape)


def mm_case(name, a, b, out_dt=None):
    """A case for a @ b (Inputs a, b); the result dtype is promoted."""
    dt = out_dt or promote(a.dtype, b.dtype)
    c = Case(name, "matmul", [a, b])
    if dt in FLOATS:
        want = np.matmul(as_f64(a.value), as_f64(b.value))
        c.out(want, dt)
        c.tol(*float_tol(a.value, b.value, dt))
    else:
        c.out(int_matmul(a.value, b.value, dt), dt)
    return c


cases = []

# Every shape form, f32.
forms = [
    ("dot", (5,), (5,)),
    ("vec_mat", (4,), (4, 3)),
    ("mat_vec", (3, 4), (4,)),
    ("mat_mat", (3, 4), (4, 5)),
    ("batched", (2, 3, 4), (2, 4, 5)),
    ("bcast_batched", (2, 1, 3, 4), (5, 4, 2)),
    ("vec_batched", (4,), (2, 4, 3)),
    ("batched_vec", (2, 3, 4), (4,)),
    ("bcast_4d_1", (1, 3, 2, 3), (2, 1, 3, 2)),
    ("single_elems", (1, 1), (1, 1)),
]
for name, sa, sb in forms:
    cases.append(mm_case(f"{name}_f32", Input(data(sa, "f32"), "f32"),
                         Input(data(sb, "f32"), "f32")))

# Every dtype on a plain product and a broadcast batched one.
for dt in ("f64", "f16", "bf16", "i8", "u8", "i16", "i32", "i64"):
    cases.append(mm_case(f"mat_mat_{dt}", Input(data((3, 4), dt), dt),
                         Input(data((4, 5), dt), dt)))
    cases.append(mm_case(f"bcast_batched_{dt}",
                         Input(data((2, 1, 3, 4), dt), dt),
                         Input(data((3, 4, 2), dt), dt)))
    cases.append(mm_case(f"dot_{dt}", Input(data((7,), dt), dt),
                         Input(data((7,), dt), dt)))

# Integer wrap-around: i8 sums leave [-128, 127]; u8 leaves [0, 255];
# i32 and i64 products overflow.
cases.append(mm_case("wrap_i8", Input(rng.integers(-128, 128, (3, 6)), "i8"),
                     Input(rng.integers(-128, 128, (6, 2)), "i8")))
cases.append(mm_case("wrap_u8", Input(rng.integers(0, 256, (2, 5)), "u8"),
                     Input(rng.integers(0, 256, (5, 3)), "u8")))
cases.append(mm_case("wrap_i32",
                     Input(rng.integers(-2**31, 2**31, (2, 3)), "i32"),
                     Input(rng.integers(-2**31, 2**31, (3, 2)), "i32")))
cases.append(mm_case("wrap_i64",
                     Input(rng.integers(-2**62, 2**62, (2, 3)), "i64"),
                     Input(rng.integers(-2**62, 2**62, (3, 2)), "i64")))

# Mixed dtypes promote (PyTorch rules).
mixed = [("i8", "u8"), ("f32", "i32"), ("bool", "f32"), ("i64", "i32"),
         ("f16", "bf16"), ("f32", "f64"), ("bool", "i16")]
for da, db in mixed:
    cases.append(mm_case(f"mixed_{da}_{db}", Input(data((2, 3), da), da),
                         Input(data((3, 4), db), db)))

# Non-contiguous operands: transposes, slices with a step, expanded batch.
def f32in(shape, views=()):
    return Input(data(shape, "f32"), "f32", views)


cases.append(mm_case("a_transposed", f32in((4, 3), [("transpose", 0, 1)]),
                     f32in((4, 5))))
cases.append(mm_case("b_transposed", f32in((3, 4)),
                     f32in((5, 4), [("transpose", 0, 1)])))
cases.append(mm_case("both_transposed", f32in((4, 3), [("transpose", 0, 1)]),
                     f32in((5, 4), [("transpose", 1, 0)])))
cases.append(mm_case("sliced_step", f32in((7, 4), [("slice", 0, 0, 7, 2)]),
                     f32in((4, 10), [("slice", 1, 1, 10, 2)])))
cases.append(mm_case("batched_permuted",
                     f32in((4, 2, 3), [("permute", 1, 2, 0)]),
                     f32in((2, 5, 4), [("transpose", 1, 2)])))
cases.append(mm_case("batch_expanded",
                     f32in((1, 3, 4), [("expand", [2, 3, 4])]),
                     f32in((2, 4, 2))))
cases.append(mm_case("vec_strided_n0",
                     f32in((9,), [("slice", 0, 0, 9, 3)]),
                     f32in((3, 4), [("slice", 1, 3, 0, 1)])))
cases.append(mm_case("vec_strided_2", f32in((9,), [("slice", 0, 1, 9, 3)]),
                     f32in((4, 3), [("transpose", 0, 1)])))
cases.append(mm_case("transposed_f64",
                     Input(data((4, 3), "f64"), "f64", [("transpose", 0, 1)]),
                     Input(data((5, 4), "f64"), "f64", [("transpose", 0, 1)])))
cases.append(mm_case("transposed_i32",
                     Input(data((4, 3), "i32"), "i32", [("transpose", 0, 1)]),
                     Input(data((4, 6), "i32"), "i32", [("slice", 1, 0, 6, 2)])))
cases.append(mm_case("transposed_bf16",
                     Input(data((4, 3), "bf16"), "bf16", [("transpose", 0, 1)]),
                     Input(data((4, 2), "bf16"), "bf16")))

# Empty dims: k == 0 gives zeros; m, n or a batch dim of 0 give empties.
cases.append(mm_case("k0", f32in((3, 0)), f32in((0, 4))))
cases.append(mm_case("k0_dot", f32in((0,)), f32in((0,))))
cases.append(mm_case("k0_i32", Input(data((2, 0), "i32"), "i32"),
                     Input(data((0, 3), "i32"), "i32")))
cases.append(mm_case("m0", f32in((0, 4)), f32in((4, 3))))
cases.append(mm_case("n0", f32in((3, 4)), f32in((4, 0))))
cases.append(mm_case("batch0", f32in((0, 2, 3)), f32in((3, 4))))

# Sizes that are not multiples of anything: values j/8 with small j keep
# the file short (and make every sum exact, so the stated tolerance is
# generous here).
big_a = rng.integers(-16, 17, (67, 131)) / 8.0
big_b = rng.integers(-16, 17, (131, 45)) / 8.0
cases.append(mm_case("odd_67x131x45", Input(big_a, "f32"),
                     Input(big_b, "f32")))
cases.append(mm_case("odd_45x67x9_t",
                     Input(big_a[:, :45], "f32", [("transpose", 0, 1)]),
                     Input(rng.integers(-16, 17, (67, 9)) / 8.0, "f32")))

# Errors (plain C tests assert the rest of the messages).
cases.append(Case("err_inner", "matmul",
                  [f32in((3, 4)), f32in((5, 6))])
             .error("TM_ESHAPE", "shapes [3,4] and [5,6] do not match: 4 != 5"))
cases.append(Case("err_batch", "matmul",
                  [f32in((2, 3, 4)), f32in((3, 4, 5))])
             .error("TM_ESHAPE", "do not broadcast"))
cases.append(Case("err_0d", "matmul",
                  [Input(np.float32(2.0), "f32"), f32in((3,))])
             .error("TM_EINVAL", "at least 1 dim"))

if __name__ == "__main__":
    write("matmul.ref", cases, "tests/gen/gen_matmul.py")
