"""Reference cases for dtype conversion (tm_to_dtype) between all dense
dtypes, including F16/BF16 rounding ties, overflow, subnormals and NaN/Inf.

Expected values follow the rules documented at tm_to_dtype in
include/foundry/tensor.h, computed here independently:
- float -> float: numpy's astype (round to nearest even) for f32/f64/f16;
  bf16 by exact round-half-even on the float64 value (bf16_from_f64 below),
  so f64 -> bf16 is rounded once (not via f32).
- float -> integer: truncate toward zero, saturate at the type's range,
  NaN -> 0 (numpy's astype is undefined there, so it is not used).
- integer -> integer: two's-complement wrap (numpy's astype wraps).
- anything -> bool: x != 0 (NaN is true); bool -> anything: 0 or 1.
Conversions are exact functions of their input: tolerance 0.
"""
import math
import numpy as np
from refgen import Case, Input, write, ALL, FLOATS, INTS, NP

BF16_MAX = (2 - 2 ** -7) * 2.0 ** 127
# tm_dtype enum order (include/foundry/tensor.h)
DTYPE_ENUM = ["f32", "f64", "f16", "bf16", "i8", "u8", "i16", "i32", "i64",
              "bool"]
np.seterr(over="ignore")  # overflow to inf is what is being tested


def bf16_from_f64(x):
    x = float(x)
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    m, e = math.frexp(abs(x))          # |x| = m * 2^e, m in [0.5, 1)
    q = max(e - 8, -133)               # quantum: 8 significant bits, or
    r = round(abs(x) / 2.0 ** q)       # the subnormal step 2^-133
    v = r * 2.0 ** q                   # round() is half-to-even, exact here
    if v > BF16_MAX:
        v = math.inf
    return math.copysign(v, x)


def int_info(dt):
    return np.iinfo(NP[dt])


def expected(values, src, dst):
    out = []
    for v in values:
        if dst == "bool":
            out.append(int(v != 0 or (src in FLOATS and math.isnan(v))))
        elif dst in INTS:
            if src in FLOATS:
                if math.isnan(v):
                    r = 0
                else:
                    info = int_info(dst)
                    r = min(max(math.trunc(v) if not math.isinf(v)
                                else (info.max if v > 0 else info.min),
                                int(info.min)), int(info.max))
            else:
                bits = np.iinfo(NP[dst]).bits
                r = int(v) & ((1 << bits) - 1)
                if dst != "u8" and r >= 1 << (bits - 1):
                    r -= 1 << bits
            out.append(r)
        else:
            if src in INTS or src == "bool":
                fv = float(int(v))
            else:
                fv = float(v)
            if dst == "bf16":
                out.append(bf16_from_f64(fv))
            elif src in INTS and dst == "f32":
                out.append(float(np.float32(int(v))))
            else:
                out.append(float(np.array(fv, np.float64).astype(NP[dst])))
    return out


FLOAT_VALUES = {
    "f64": [0.0, -0.0, 1.5, -2.5, 0.1, 65504.0, 65519.99, 65520.0, 1e5,
            2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 1e-30, 3.4e38, 3.5e38,
            1e300, -1e300, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8,
            1 + 2.0 ** -8 + 2.0 ** -40, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
            127.9, -128.5, 255.5, 2.0 ** 31, -2.0 ** 31 - 1, 2.0 ** 63,
            -2.0 ** 64, 40000.7, -40000.7, math.nan, math.inf, -math.inf,
            9.2e-41, 1e-45],
}
FLOAT_VALUES["f32"] = [float(np.float32(v)) for v in FLOAT_VALUES["f64"]]
FLOAT_VALUES["f16"] = [float(np.float16(v)) for v in
                       [0.0, -0.0, 1.5, -2.5, 0.1, 65504, 2 ** -24, 1e-5,
                        1 + 2 ** -8, 1 + 3 * 2 ** -8, 255.5, -128.5, 300,
                        math.nan, math.inf, -math.inf, 1000.5]]
FLOAT_VALUES["bf16"] = [bf16_from_f64(v) for v in
                        [0.0, -0.0, 1.5, -2.5, 0.1, 3.38e38, 2 ** -133,
                         1e-39, 255.5, 256.0, -129.0, 40000.0, 2.0 ** 40,
                         math.nan, math.inf, -math.inf]]
INT_VALUES = {}
for dt in INTS:
    info = int_info(dt)
    base = [0, 1, -1, 2, 127, 128, 255, 256, -129, 300, 32767, 32768,
            -32769, 65535, 2 ** 31 - 1, -2 ** 31, 2 ** 24 + 1, 2 ** 53 + 1,
            2 ** 63 - 1, -2 ** 63]
    INT_VALUES[dt] = sorted({v for v in base if info.min <= v <= info.max})
INT_VALUES["bool"] = [0, 1, 1, 0]

cases = []
for src in ALL:
    vals = FLOAT_VALUES.get(src) or INT_VALUES[src]
    for dst in ALL:
        x = Input(np.array(vals, dtype=np.float64 if src in FLOATS
                           else np.int64), src)
        c = Case(f"convert_{src}_to_{dst}", "to_dtype", [x],
                 dtype=DTYPE_ENUM.index(dst))
        want = expected(vals, src, dst)
        c.out(np.array(want, dtype=np.float64 if dst in FLOATS
                       else np.int64), dst)
        cases.append(c)

# Conversion through non-contiguous views and into 0-d / 0-size tensors.
base = np.arange(24, dtype=np.float64).reshape(4, 6) * 1.25 - 7
for src, dst in [("f32", "f16"), ("f64", "bf16"), ("i32", "f32"),
                 ("f16", "i8")]:
    x = Input(base, src, views=[("transpose", 0, 1), ("slice", 0, 1, 6, 2)])
    vals = x.value.reshape(-1).astype(np.float64)
    c = Case(f"convert_view_{src}_to_{dst}", "to_dtype", [x],
             dtype=DTYPE_ENUM.index(dst))
    c.out(np.array(expected(vals, src, dst)).reshape(x.value.shape), dst)
    cases.append(c)
c = Case("convert_0d", "to_dtype", [Input(np.array(2.75), "f64")], dtype=5)
c.out(np.array(2), "u8")
cases.append(c)
c = Case("convert_0size", "to_dtype", [Input(np.zeros((0, 3)), "f32")],
         dtype=3)
c.out(np.zeros((0, 3)), "bf16")
cases.append(c)

write("convert.ref", cases, "dtype conversions (tests/gen/gen_convert.py)")
