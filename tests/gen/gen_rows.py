"""Reference cases for the row ops (tests/data/rows.ref): softmax and
log_softmax along a dim, layer_norm and rms_norm over the last dim.

Ops and arguments: softmax / log_softmax (arg dim), layer_norm (inputs x,
then weight if arg hasw, then bias if arg hasb; arg eps), rms_norm (x, then
weight if hasw; eps).

Expected values: numpy in float64 on the inputs as Foundry holds them
(f16/bf16/f32 values widen exactly), by the plain formulas
    softmax     e = exp(x - max), e / sum(e)
    log_softmax (x - max) - log(sum(exp(x - max)))
    layer_norm  (x - mean) / sqrt(var + eps) * w + b   (biased var)
    rms_norm    x / sqrt(mean(x^2) + eps) * w
then rounded once to the result dtype.  The plain formulas give what
Foundry (and PyTorch) give for special values: NaN anywhere, +inf, or a row
of only -inf makes the whole row NaN; -inf among finite values gives 0
(log: -inf).

Tolerances (`TOL`, by dtype; |got - want| <= atol + rtol * |want|):
- f32: Foundry computes elementwise steps in f32 and accumulates sums in
  f64.  Each output is a handful of f32 roundings away from the exact value
  (x - max, exp (<= 2 ulp, also for the vectorized exp), the scale or
  log-subtract, the norm's products): rtol 2e-6 (~16 ulp, generous for
  that).  atol: softmax's rounding of x - max gives an absolute error of at
  most |x - max| * 2^-24 * exp(x - max) <= 2.2e-8 (max of t e^-t), and
  layer_norm + bias can cancel to near 0 with an error of a few ulp of |b|
  (|b| < 5): atol 1e-6 for the norms, 1e-7 for softmax.
- f16 / bf16: computed in f32 and rounded once; the reference rounds the
  f64 value, so the two can differ by one ulp of the result:
  2^-10 < 1e-3 (f16), 2^-7 < 8e-3 (bf16) relative; atol covers subnormal
  and cancellation results.
- f64: glibc exp/log (< 1 ulp) and f64 sums in a different order:
  rtol 1e-12, atol 1e-13.
"""
import numpy as np

from refgen import Case, Input, cast, write

rng = np.random.default_rng(4004)

SM_TOL = {"f32": (2e-6, 1e-7), "f64": (1e-12, 1e-13), "f16": (1e-3, 1e-5),
          "bf16": (8e-3, 1e-5)}
NORM_TOL = {"f32": (2e-6, 1e-6), "f64": (1e-12, 1e-13),
            "f16": (1e-3, 1e-4), "bf16": (8e-3, 1e-4)}
DTYPES = ("f32", "f64", "f16", "bf16")

cases = []


def f64(x):
    return np.asarray(x).astype(np.float64)


def softmax_ref(x, axis, log):
    x = f64(x)
    if x.ndim == 0:
        return np.float64(0.0 if log else 1.0) + 0 * x
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        d = x - m
        s = np.sum(np.exp(d), axis=axis, keepdims=True)
        return d - np.log(s) if log else np.exp(d) / s


def layer_norm_ref(x, w, b, eps):
    x = f64(x)
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        # shifted by each row's first element (the same formula, but
        # exact for rows whose mean is far larger than their spread)
        d = x - x[..., :1]
        mean = d.mean(axis=-1, keepdims=True)
        var = ((d - mean) ** 2).mean(axis=-1, keepdims=True)
        y = (d - mean) / np.sqrt(var + eps)
        if w is not None:
            y = y * f64(w)
        if b is not None:
            y = y + f64(b)
    return y


def rms_norm_ref(x, w, eps):
    x = f64(x)
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
        if w is not None:
            y = y * f64(w)
    return y


def sm_case(name, x, dim, log=False):
    op = "log_softmax" if log else "softmax"
    c = Case(f"{op}_{name}", op, [x], dim=dim)
    c.out(softmax_ref(x.value, dim, log), x.dtype)
    c.tol(*SM_TOL[x.dtype])
    cases.append(c)


def both(name, x, dim):
    sm_case(name, x, dim, False)
    sm_case(name, x, dim, True)


def ln_case(name, x, w=None, b=None, eps=1e-5):
    ins = [x] + [p for p in (w, b) if p is not None]
    c = Case(f"layer_norm_{name}", "layer_norm", ins, eps=eps,
             hasw=int(w is not None), hasb=int(b is not None))
    c.out(layer_norm_ref(x.value, None if w is None else w.value,
                         None if b is None else b.value, eps), x.dtype)
    c.tol(*NORM_TOL[x.dtype])
    cases.append(c)


def rms_case(name, x, w=None, eps=1e-6):
    ins = [x] + ([w] if w is not None else [])
    c = Case(f"rms_norm_{name}", "rms_norm", ins, eps=eps,
             hasw=int(w is not None))
    c.out(rms_norm_ref(x.value, None if w is None else w.value, eps),
          x.dtype)
    c.tol(*NORM_TOL[x.dtype])
    cases.append(c)


def normal(shape, scale=2.0):
    return rng.standard_normal(shape) * scale


def short(x):
    """Multiples of 1/32 (exact in every dtype, short to print): long rows
    stay small in the .ref file."""
    return np.round(x * 32) / 32


# ------------------------------------------------------------- softmax
for dt in DTYPES:
    x = Input(normal((3, 4, 5)), dt)
    for dim in (0, 1, 2, -1, -2):
        both(f"{dt}_dim{dim}", x, dim)
    both(f"{dt}_0d", Input(np.array(1.5), dt), 0)
    both(f"{dt}_transposed", Input(normal((5, 4)), dt,
                                   views=[("transpose", 0, 1)]), -1)
    both(f"{dt}_sliced", Input(normal((4, 12)), dt,
                               views=[("slice", 1, 1, 12, 2)]), 1)
    both(f"{dt}_large", Input(np.array([[1e4, -1e4, 0.0, 9999.0],
                                        [-1e4, -1e4 + 8, -1e4, -1e4]]), dt),
         1)

for n in (1, 3, 17, 1030):
    rows = 1 if n > 100 else 2
    both(f"f32_len{n}", Input(short(normal((rows, n), 3.0)), "f32"), -1)
both("bf16_len1030", Input(short(normal((1, 1030), 3.0)), "bf16"), -1)
# strided rows: softmax along dim 0 of a [17, 3] tensor and of a view
both("f32_dim0_long", Input(normal((17, 3)), "f32"), 0)
both("f32_permuted", Input(normal((2, 3, 4)), "f32",
                           views=[("permute", 2, 0, 1)]), 1)
both("f32_expanded", Input(normal((1, 5)), "f32",
                           views=[("expand", [3, 5])]), 0)
inf, nan = np.inf, np.nan
both("f32_special", Input(np.array([
    [-inf, 1.0, 2.0, -inf],     # -inf among finite: 0 / -inf
    [-inf, -inf, -inf, -inf],   # all -inf: NaN
    [1.0, inf, 2.0, 3.0],       # +inf: NaN
    [1.0, nan, 2.0, 3.0],       # NaN: NaN
    [88.0, 89.0, -100.0, 0.0],  # exp(x) would overflow f32
]), "f32"), 1)
both("f64_special", Input(np.array([[-inf, 1.0, -inf], [-inf, -inf, -inf],
                                    [nan, 0.0, 1.0]]), "f64"), 1)
both("f32_empty_rows", Input(np.zeros((0, 3)), "f32"), 1)
both("f32_empty_dim", Input(np.zeros((3, 0)), "f32"), 1)
both("f32_empty_other", Input(np.zeros((0, 3)), "f32"), 0)

# ----------------------------------------------------------- layer_norm
for dt in DTYPES:
    x = Input(normal((4, 17)), dt)
    w = Input(normal((17,), 1.0), dt)
    b = Input(normal((17,), 1.0), dt)
    ln_case(f"{dt}", x)
    ln_case(f"{dt}_w", x, w)
    ln_case(f"{dt}_b", x, b=b)
    ln_case(f"{dt}_wb", x, w, b)
    ln_case(f"{dt}_3d_eps0.1", Input(normal((2, 3, 5)), dt), eps=0.1)
    ln_case(f"{dt}_transposed_wb", Input(normal((6, 3)), dt,
                                         views=[("transpose", 0, 1)]),
            Input(normal((6,), 1.0), dt), Input(normal((6,), 1.0), dt))
    rms_case(f"{dt}", x)
    rms_case(f"{dt}_w", x, w)
    rms_case(f"{dt}_3d_eps0.5", Input(normal((2, 3, 5)), dt), eps=0.5)
    rms_case(f"{dt}_sliced_w", Input(normal((3, 10)), dt,
                                     views=[("slice", 1, 0, 10, 2)]),
             Input(normal((5,), 1.0), dt))

for n in (1, 3, 17, 1030):
    rows = 1 if n > 100 else 2
    x = Input(short(normal((rows, n))), "f32")
    ln_case(f"f32_len{n}_wb", x, Input(short(normal((n,), 1.0)), "f32"),
            Input(short(normal((n,), 1.0)), "f32"))
    rms_case(f"f32_len{n}_w", x, Input(short(normal((n,), 1.0)), "f32"))
# strided weight and bias (views with step)
ln_case("f32_strided_params", Input(normal((3, 4)), "f32"),
        Input(normal((8,), 1.0), "f32", views=[("slice", 0, 0, 8, 2)]),
        Input(normal((12,), 1.0), "f32", views=[("slice", 0, 1, 12, 3)]))
# a large mean with a small spread: no cancellation in the variance
ln_case("f32_large_mean", Input(1000.0 + normal((3, 64), 0.01), "f32"),
        eps=0.0)
ln_case("f64_large_mean", Input(1e6 + normal((3, 64), 1e-3), "f64"),
        eps=0.0)
ln_case("f32_eps0", Input(normal((3, 8)), "f32"), eps=0.0)
ln_case("f32_constant_eps", Input(np.full((2, 5), 3.25), "f32"), eps=1e-5)
ln_case("f32_special", Input(np.array([[1.0, np.nan, 2.0],
                                       [1.0, np.inf, 2.0],
                                       [1.0, 2.0, 3.0]]), "f32"))
rms_case("f32_zero_row_eps", Input(np.zeros((2, 4)), "f32"), eps=1e-6)
rms_case("f32_eps0", Input(normal((3, 8)), "f32"), eps=0.0)
rms_case("f32_large", Input(normal((2, 9), 1e4), "f32"))
ln_case("f32_empty_rows", Input(np.zeros((0, 4)), "f32"),
        Input(normal((4,), 1.0), "f32"))
ln_case("f32_empty_dim", Input(np.zeros((3, 0)), "f32"))
rms_case("f32_empty_dim_w", Input(np.zeros((3, 0)), "f32"),
         Input(np.zeros((0,)), "f32"))

write("rows.ref", cases, "gen_rows.py")
