"""Reference cases for the random generator (tests/c/test_random.c).

An independent pure-Python Philox4x32-10, written from the paper (Salmon,
Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11:
multipliers 0xD2511F53 and 0xCD9E8D57, key increments 0x9E3779B9 and
0xBB67AE85, 10 rounds) and checked below against the known-answer vectors
of the Random123 distribution (its tests/kat_vectors file), produces the
raw 32-bit outputs.  The transforms of foundry/random.h are then applied
in Python floats (IEEE doubles, so every +, -, * is the same rounding C
does):

- uniform and randint values are determined exactly by the integer draws,
  so they compare with tolerance 0 (f16 via numpy's correctly rounded
  double->half cast; bf16 via bf16_from_double below, also one rounding,
  like Foundry's);
- normals use math.log / math.cos / math.sin (CPython's libm) where Foundry
  uses its own log and sincos (random_impl.h): both are within about 1 ulp,
  so f64 normals compare with rtol 1e-14 (plus atol 1e-14 * std for values
  near zero, where mean + std*z cancels), and f32/f16/bf16 normals, which
  are those doubles rounded once, within one ulp of their dtype (rtol
  2^-23 ~ 1.2e-7, 2^-10, 2^-7): a few-ulp difference in double can only move
  the rounded value to a neighbour when it straddles a rounding boundary.
- the "exact_normal_*" cases (f64, f32) instead use a transcription of
  Foundry's own log / sincos / Box-Muller (exact_box_muller below) and
  compare with tolerance 0: the bit-for-bit check of random.h's "same seed,
  same numbers on every platform".

Seeds and counters are 64-bit; the .ref "arg" lines carry doubles, so they
are written as (low 32 bits, high 32 bits) pairs.
"""
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refgen import Case, Input, write  # noqa: E402

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
DT = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3, "i8": 4, "u8": 5, "i16": 6,
      "i32": 7, "i64": 8, "bool": 9}


def philox4x32_10(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & M32,
                          (p0 >> 32) ^ c3 ^ k1, p0 & M32)
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return (c0, c1, c2, c3)


# Random123 tests/kat_vectors, "philox4x32 10" lines: counter, key, output.
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((M32,) * 4, (M32,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
     (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]
for _ctr, _key, _want in KAT:
    assert philox4x32_10(_ctr, _key) == _want, "Philox known answer failed"


def block(key, b):
    """Foundry's layout: key words (lo, hi), counter words (lo, hi, 0, 0)."""
    b &= M64
    return philox4x32_10((b & M32, b >> 32, 0, 0), (key & M32, key >> 32))


def u64(x, j):
    return x[2 * j] | (x[2 * j + 1] << 32)


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def halves(v):
    return [v & M32, v >> 32]


def per_block(kind, dtype):
    return 2 if kind == "randint" or dtype == "f64" else 4


def nblocks(n, per):
    return (n + per - 1) // per


# ----------------------------------------------------------- rounding

def bf16_from_double(v):
    """v rounded to bfloat16 (nearest even) in one step, as a float."""
    if v == 0 or math.isinf(v) or math.isnan(v):
        return v
    m, e = math.frexp(abs(v))          # |v| = m 2^e, m in [0.5, 1)
    bits = 8                           # significant bits of bf16
    if e - 1 < -126:                   # subnormal: fewer bits
        bits = max(0, 8 - (-126 - (e - 1)))
    q = round(m * 2.0 ** bits)         # exact scaling; round half even
    r = math.ldexp(q, e - bits)
    if r >= 2.0 ** 128:
        r = math.inf
    return math.copysign(r, v)


def round_to(dtype, v):
    if dtype == "f64":
        return v
    if dtype == "f32":
        return float(np.float32(v))
    if dtype == "f16":
        return float(np.float16(v))
    return bf16_from_double(v)


def step_down(dtype, v):
    if dtype == "f64":
        return float(np.nextafter(v, -math.inf))
    if dtype == "f32":
        return float(np.nextafter(np.float32(v), np.float32(-np.inf)))
    if dtype == "f16":
        return float(np.nextafter(np.float16(v), np.float16(-np.inf)))
    bits = int(np.float32(v).view(np.uint32)) >> 16
    if bits & 0x7FFF == 0:
        bits = 0x8001
    elif bits & 0x8000:
        bits += 1
    else:
        bits -= 1
    return float(np.uint32(bits << 16).view(np.float32))


# ---------------------------------------------------------- the draws

def uniform_values(key, counter, n, dtype, low, high):
    per = per_block("uniform", dtype)
    lim = None
    if low < high:
        lim = round_to(dtype, high)
        while lim >= high:
            lim = step_down(dtype, lim)
        if lim < low:
            lim = round_to(dtype, low)
    out = []
    for i in range(n):
        x = block(key, counter + i // per)
        if per == 4:
            u = (x[i % 4] >> 8) * 2.0 ** -24
        else:
            u = (u64(x, i % 2) >> 11) * 2.0 ** -53
        v = low + (high - low) * u
        r = round_to(dtype, v)
        if lim is not None and r >= high:
            r = lim
        out.append(r)
    return out


def box_muller(u1, u2):
    r = math.sqrt(-2.0 * math.log(u1))
    t = 2.0 * math.pi * u2
    return r * math.cos(t), r * math.sin(t)


def normal_values(key, counter, n, dtype, mean, std):
    per = per_block("normal", dtype)
    out = []
    for i in range(n):
        x = block(key, counter + i // per)
        lane = i % per
        if per == 4:
            p = lane // 2
            u1 = ((x[2 * p] >> 8) + 1) * 2.0 ** -24
            u2 = (x[2 * p + 1] >> 8) * 2.0 ** -24
        else:
            u1 = ((u64(x, 0) >> 11) + 1) * 2.0 ** -53
            u2 = (u64(x, 1) >> 11) * 2.0 ** -53
        z = box_muller(u1, u2)[lane % 2]
        out.append(round_to(dtype, mean + std * z))
    return out


# ------------------------------------------- exact oracle for the normals
#
# A second implementation of the documented algorithm of
# tensor/core/random_impl.h (its log, sin(2 pi u) / cos(2 pi u) and Box-Muller),
# written from that specification -- same constants, same operation order,
# same branches -- and used as an exact oracle: the normals it gives are
# compared with tolerance 0 (the "exact_normal_*" cases below).
#
# Why this is exact: random_impl.h uses only integer/bit operations and
# IEEE-754 double + - * / and sqrt, each correctly rounded, evaluated in a
# fixed order (the Makefile builds with -ffp-contract=off, so no fused
# multiply-add).  Python floats are IEEE doubles with the same correctly
# rounded + - * / and math.sqrt, and Python evaluates a * b * c and
# a - b - c left to right exactly as C does, so a faithful transcription
# reproduces every bit.  The bit manipulation (exponent / mantissa split)
# goes through struct, and the final f32 rounding through numpy.float32
# (round to nearest even, like C's (float) cast).  If Foundry's result ever
# depended on libm, long double, contraction or the platform, these cases
# would differ on some machine -- which is the promise of foundry/random.h
# ("same seed -> same numbers on every platform") made testable.

def _dbits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _bitsd(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def rng_log(x):
    """tm__rng_log."""
    if not (x > 0) or x > 1.7976931348623157e308:
        return math.nan
    k = 0
    if x < 2.0 ** -1022:                 # subnormal: scale into range
        x *= 2.0 ** 54
        k = -54
    bits = _dbits(x)
    k += (bits >> 52) - 1023             # x > 0: no sign bit
    bits = (bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000
    m = _bitsd(bits)                     # [1, 2)
    if m >= float.fromhex("0x1.6a09e667f3bcdp0"):
        m *= 0.5
        k += 1
    ln2_hi = 6.93147180369123816490e-01
    ln2_lo = 1.90821492927058770002e-10
    assert _dbits(ln2_hi) == 0x3fe62e42fee00000
    assert _dbits(ln2_lo) == 0x3dea39ef35793c76
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    R = z * (0.6666666666666666 +
             z * (0.4 +
             z * (0.2857142857142857 +
             z * (0.2222222222222222 +
             z * (0.18181818181818182 +
             z * (0.15384615384615385 +
             z * (0.13333333333333333 +
             z * (0.11764705882352941 +
             z * (0.10526315789473684 +
             z * (0.09523809523809523 +
             z * 0.08695652173913043))))))))))
    hfsq = 0.5 * f * f                   # (0.5 * f) * f, as in C
    dk = float(k)
    return dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f)


def sin_kernel(x):
    """tm__sin_kernel."""
    z = x * x
    p = (-0.16666666666666666 +
         z * (0.008333333333333333 +
         z * (-0.0001984126984126984 +
         z * (2.7557319223985893e-06 +
         z * (-2.505210838544172e-08 +
         z * (1.6059043836821613e-10 +
         z * (-7.647163731819816e-13 +
         z * (2.8114572543455206e-15 +
         z * -8.22063524662433e-18))))))))
    return x + x * (z * p)


def cos_kernel(x):
    """tm__cos_kernel."""
    z = x * x
    p = (0.041666666666666664 +
         z * (-0.001388888888888889 +
         z * (2.48015873015873e-05 +
         z * (-2.755731922398589e-07 +
         z * (2.08767569878681e-09 +
         z * (-1.1470745597729725e-11 +
         z * (4.779477332387385e-14 +
         z * (-1.5619206968586225e-16 +
         z * 4.110317623312165e-19))))))))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + z * (z * p))


def rng_sincos2pi(u):
    """tm__rng_sincos2pi: (sin 2 pi u, cos 2 pi u) for u in [0, 1)."""
    u4 = u * 4.0
    q = int(u4)                          # C's (int) truncates; u4 >= 0
    t = u4 - float(q)
    pio2 = 1.5707963267948966
    if t <= 0.5:
        x = t * pio2
        a, b = sin_kernel(x), cos_kernel(x)
    else:
        x = (1.0 - t) * pio2
        a, b = cos_kernel(x), sin_kernel(x)
    q &= 3
    if q == 0:
        return a, b
    if q == 1:
        return b, -a
    if q == 2:
        return -a, -b
    return -b, a


def exact_box_muller(u1, u2):
    """tm__box_muller: (z0, z1) = r (cos, sin)(2 pi u2), with
    r = sqrt(-2 log u1)."""
    r = math.sqrt(-2.0 * rng_log(u1))
    s, c = rng_sincos2pi(u2)
    return r * c, r * s


def exact_normal_values(key, counter, n, dtype, mean, std):
    """The fill of cpu/cpu_random.c with the oracle above: f32
    takes two pairs per block from 24-bit draws, f64 one pair from the
    two 64-bit draws; mean + std * z in double, then rounded once."""
    assert dtype in ("f32", "f64")
    per = per_block("normal", dtype)
    out = []
    for i in range(n):
        x = block(key, counter + i // per)
        lane = i % per
        if per == 4:
            p = lane // 2
            u1 = float((x[2 * p] >> 8) + 1) * 2.0 ** -24
            u2 = float(x[2 * p + 1] >> 8) * 2.0 ** -24
        else:
            u1 = float((u64(x, 0) >> 11) + 1) * 2.0 ** -53
            u2 = float(u64(x, 1) >> 11) * 2.0 ** -53
        z = exact_box_muller(u1, u2)[lane % 2]
        out.append(round_to(dtype, mean + std * z))
    return out


def randint_values(key, counter, n, low, high):
    rng = high - low
    out = []
    for i in range(n):
        x = block(key, counter + i // 2)
        out.append(low + ((u64(x, i % 2) * rng) >> 64))
    return out


NORMAL_RTOL = {"f64": 1e-14, "f32": 1.2e-7, "f16": 2.0 ** -10,
               "bf16": 2.0 ** -7}
# absolute slack near zero: cancellation in mean + std*z (f64/f32) and the
# subnormal spacing of f16 (2^-24)
NORMAL_ATOL = {"f64": 1e-14, "f32": 1e-14, "f16": 2.0 ** -24,
               "bf16": 1e-14}


# ---------------------------------------------------------------- cases

def rng_args(seed, counter):
    return dict(seed=halves(seed), counter=halves(counter))


def counter_after(counter, kind, dtype, n):
    return (counter + nblocks(n, per_block(kind, dtype))) & M64


def fill_case(name, kind, dtype, shape, seed, counter, p, view=None,
              exact=False):
    """A fill of a new tensor of `shape` (or, with `view`, of a view of a
    zero tensor of `shape`), expected values in the view's row-major
    order, and the generator's counter afterwards.  exact: normals from
    the bit-exact oracle, compared with tolerance 0."""
    inputs = []
    vshape = tuple(shape)
    if view is not None:
        x = Input(np.zeros(shape), dtype, views=view)
        inputs = [x]
        vshape = x.value.shape
    n = int(np.prod(vshape))
    if kind == "uniform":
        vals = uniform_values(seed, counter, n, dtype, *p)
    elif kind == "normal" and exact:
        vals = exact_normal_values(seed, counter, n, dtype, *p)
    elif kind == "normal":
        vals = normal_values(seed, counter, n, dtype, *p)
    else:
        vals = randint_values(seed, counter, n, *p)
    args = rng_args(seed, counter)
    args.update(shape=list(vshape), dtype=DT[dtype], p=list(p))
    c = Case(name, kind, inputs, **args)
    vals = np.array(vals, dtype=np.float64 if dtype in ("f32", "f64", "f16",
                                                        "bf16") else np.int64)
    c.out(vals.reshape(vshape), dtype)
    c.out(np.array(halves(counter_after(counter, kind, dtype, n))), "i64")
    if kind == "normal" and not exact:
        c.tol(NORMAL_RTOL[dtype], NORMAL_ATOL[dtype] * max(1.0, p[1]))
    return c


def find_counter(pred, key, start=0):
    """First block counter >= start whose outputs satisfy pred."""
    b = start
    while not pred(block(key, b)):
        b += 1
    return b


def main():
    cases = []
    # raw outputs: partial blocks, counter wrap-around at 2^64
    for seed, counter, n in [(0, 0, 4), (0, 0, 10), (12345, 7, 9),
                             (0x0123456789ABCDEF, 1 << 40, 13),
                             (M64, M64 - 1, 12)]:
        vals = []
        for b in range(nblocks(n, 4)):
            vals.extend(block(seed, counter + b))
        c = Case(f"philox_u32_s{seed:x}_c{counter:x}_n{n}", "philox_u32",
                 [], n=n, **rng_args(seed, counter))
        c.out(np.array(vals[:n]), "i64")
        c.out(np.array(halves((counter + nblocks(n, 4)) & M64)), "i64")
        cases.append(c)

    # split: child key = mix64(key ^ mix64(counter + golden)), counter 0;
    # the parent advances one block
    for seed, counter in [(0, 0), (42, 3), (M64, M64)]:
        child = mix64(seed ^ mix64((counter + 0x9E3779B97F4A7C15) & M64))
        c = Case(f"split_s{seed:x}_c{counter:x}", "split", [],
                 **rng_args(seed, counter))
        c.out(np.array(halves(child) + [0, 0] +
                       halves((counter + 1) & M64)), "i64")
        cases.append(c)

    floats = ("f32", "f64", "f16", "bf16")
    for dt in floats:
        cases.append(fill_case(f"uniform01_{dt}", "uniform", dt, [2, 7],
                               7, 0, (0.0, 1.0)))
        cases.append(fill_case(f"uniform_m2_3_{dt}_0d", "uniform", dt, [],
                               99, 5, (-2.0, 3.0)))
        cases.append(fill_case(f"uniform_{dt}_empty", "uniform", dt, [3, 0],
                               1, 2, (0.0, 1.0)))
        cases.append(fill_case(f"uniform_{dt}_transposed", "uniform", dt,
                               [3, 5], 11, 1, (-1.0, 1.0),
                               view=[("transpose", 0, 1)]))
        cases.append(fill_case(f"uniform_{dt}_low_eq_high", "uniform", dt,
                               [5], 3, 0, (0.25, 0.25)))
        cases.append(fill_case(f"normal01_{dt}", "normal", dt, [3, 3],
                               2024, 0, (0.0, 1.0)))
        cases.append(fill_case(f"normal_m3_s05_{dt}_sliced", "normal", dt,
                               [4, 6], 5, 9, (3.0, 0.5),
                               view=[("slice", 1, 1, 6, 2)]))
        cases.append(fill_case(f"normal_std0_{dt}", "normal", dt, [5],
                               5, 0, (-1.5, 0.0)))

    # the guard against rounding up to `high`: counters whose first draw
    # rounds to high in the dtype
    # f16 [0, 1): 24-bit u >= 1 - 2^-12 rounds to 1.0 in f16
    b = find_counter(lambda x: (x[0] >> 8) >= (1 << 24) - (1 << 12), 77)
    cases.append(fill_case("uniform_f16_guard", "uniform", "f16", [6], 77, b,
                           (0.0, 1.0)))
    # f32 [1, 1 + 2^-10): 1 + u 2^-10 rounds up for u >= 1 - 2^-14
    b = find_counter(lambda x: (x[0] >> 8) >= (1 << 24) - (1 << 10), 78)
    cases.append(fill_case("uniform_f32_guard", "uniform", "f32", [6], 78, b,
                           (1.0, 1.0 + 2.0 ** -10)))
    # f64 [1, 1 + 2^-40): rounds up for u >= 1 - 2^-13
    b = find_counter(lambda x: (u64(x, 0) >> 11) >= (1 << 53) - (1 << 40),
                     79)
    cases.append(fill_case("uniform_f64_guard", "uniform", "f64", [4], 79, b,
                           (1.0, 1.0 + 2.0 ** -40)))
    # bf16 [0, 1): u >= 1 - 2^-9 rounds to 1.0
    b = find_counter(lambda x: (x[1] >> 8) >= (1 << 24) - (1 << 15), 80)
    cases.append(fill_case("uniform_bf16_guard", "uniform", "bf16", [5], 80,
                           b, (0.0, 1.0)))
    # an interval with no f16 value in it: low rounded
    cases.append(fill_case("uniform_f16_no_value", "uniform", "f16", [3], 1,
                           0, (1.0001, 1.0002)))

    for dt, lo, hi in [("i8", -128, 128), ("u8", 0, 256), ("i16", -5, 5),
                       ("i32", -1000000, 1000000),
                       ("i64", -(1 << 53), 1 << 53), ("i64", 0, 10),
                       ("bool", 0, 2), ("f32", -(1 << 24), (1 << 24) + 1),
                       ("f64", 0, 1 << 53), ("f16", -2048, 2049),
                       ("bf16", -256, 257), ("f32", 3, 4)]:
        cases.append(fill_case(f"randint_{dt}_{lo}_{hi}", "randint", dt,
                               [3, 5], 31337, 4, (lo, hi)))
    cases.append(fill_case("randint_i32_transposed", "randint", "i32",
                           [2, 3], 8, 0, (-3, 7),
                           view=[("transpose", 0, 1)]))
    cases.append(fill_case("randint_i64_0d", "randint", "i64", [], 8, 0,
                           (100, 1000)))

    # the front doors with the default generator (reseeded by the case)
    for op, kind, dt, p in [("rand", "uniform", "f32", (0.0, 1.0)),
                            ("rand", "uniform", "f64", (0.0, 1.0)),
                            ("randn", "normal", "f32", (0.0, 1.0)),
                            ("randn", "normal", "bf16", (0.0, 1.0)),
                            ("randint_new", "randint", "u8", (10, 20))]:
        c = fill_case(f"{op}_{dt}", kind, dt, [2, 3], 123, 0, p)
        c.op = op
        c.outs.pop()  # the default generator's counter is not visible
        cases.append(c)

    # errors
    err = [
        ("rand_i64", "rand", dict(shape=[2], dtype=DT["i64"]),
         "TM_EDTYPE", "tm_rand: dtype i64 is not a float dtype"),
        ("randn_bool", "randn", dict(shape=[2], dtype=DT["bool"]),
         "TM_EDTYPE", "tm_randn: dtype bool is not a float dtype"),
        ("rand_negative_shape", "rand", dict(shape=[2, -1], dtype=0),
         "TM_EINVAL", "tm_rand: shape [2,-1] has a negative size"),
        ("randint_empty_range", "randint_new",
         dict(shape=[2], dtype=DT["i64"], p=[5, 5]),
         "TM_EINVAL", "tm_randint: low 5 must be < high 5"),
        ("randint_u8_300", "randint_new",
         dict(shape=[2], dtype=DT["u8"], p=[0, 300]),
         "TM_EINVAL", "range [0, 300) does not fit dtype u8"),
        ("randint_bool_3", "randint_new",
         dict(shape=[2], dtype=DT["bool"], p=[0, 3]),
         "TM_EINVAL", "range [0, 3) does not fit dtype bool"),
        ("randint_f16_big", "randint_new",
         dict(shape=[2], dtype=DT["f16"], p=[0, 4096]),
         "TM_EINVAL", "which holds the integers in [-2048, 2048]"),
        ("normal_negative_std", "normal",
         dict(shape=[2], dtype=0, p=[0, -1], **rng_args(0, 0)),
         "TM_EINVAL", "tm_normal_: std -1 must be >= 0"),
        ("uniform_low_gt_high", "uniform",
         dict(shape=[2], dtype=0, p=[2, 1], **rng_args(0, 0)),
         "TM_EINVAL", "tm_uniform_: low 2 must be <= high 1"),
        ("uniform_i32", "uniform",
         dict(shape=[2], dtype=DT["i32"], p=[0, 1], **rng_args(0, 0)),
         "TM_EDTYPE", "tm_uniform_: dtype i32 is not a float dtype"),
        ("randint_inplace_range", "randint",
         dict(shape=[2], dtype=DT["i8"], p=[-200, 0], **rng_args(0, 0)),
         "TM_EINVAL", "tm_randint_: range [-200, 0) does not fit dtype i8"),
    ]
    for name, op, args, st, msg in err:
        cases.append(Case("err_" + name, op, [], **args).error(st, msg))

    # bit-exact normals (appended last so the cases above keep their data):
    # f64 and f32 fills compared with tolerance 0 against the oracle
    # (exact_normal_values), over seeds, counters (one wrapping 2^64),
    # odd sizes that end in partial blocks and a few mean/std.  Their own
    # generator, so the shared refgen.rng stream is not disturbed.
    xg = np.random.default_rng(0xB0C5_3A11)
    exact_sizes = {"f64": [1, 2, 3, 5, 9, 127, 301, 511],
                   "f32": [1, 2, 3, 5, 6, 7, 255, 509, 1021]}
    params = [(0.0, 1.0), (0.0, 1.0), (3.0, 0.5), (-1000.0, 2.5),
              (0.001, 1000.0)]
    for dt in ("f64", "f32"):
        for j, n in enumerate(exact_sizes[dt]):
            seed = int(xg.integers(0, 1 << 64, dtype=np.uint64))
            counter = int(xg.integers(0, 1 << 40))
            if j == 3:
                counter = M64 - 1        # the counter wraps mid-fill
            p = params[j % len(params)]
            cases.append(fill_case(f"exact_normal_{dt}_n{n}_s{seed:x}",
                                   "normal", dt, [n], seed, counter, p,
                                   exact=True))
        cases.append(fill_case(f"exact_normal_{dt}_2d", "normal", dt,
                               [7, 13], 2024, 0, (0.0, 1.0), exact=True))
        cases.append(fill_case(f"exact_normal_{dt}_sliced", "normal", dt,
                               [6, 9], 5, 9, (0.0, 1.0), exact=True,
                               view=[("slice", 1, 1, 8, 3)]))

    write("random.ref", cases, "gen_random.py")


if __name__ == "__main__":
    main()
