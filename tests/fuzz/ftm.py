"""ftm.py — the C library through the foundry package's cffi bindings,
and the numpy side of Foundry's dtype rules, for tests/fuzz/diff_ops.py.

The declarations come from the public headers (bindings/python builds
them), so nothing here repeats a C signature, and the op lists are the C
op enums themselves: an op added in C is drawn here at once (and fails
until it has a numpy reference below).  Run with the project's .venv,
which has the package: `make difftest`.

A Node is a Foundry tensor built as a (possibly non-contiguous) view of a
fresh root tensor, mirrored exactly by a numpy view of a numpy root array,
so in-place writes through the view can be checked on the root too.
"""
import math
import os
import sys

import numpy as np

try:
    from foundry._c import ffi, lib, op_names
except ImportError:
    sys.exit("ftm: the foundry package is missing; run `make difftest` (it "
             "builds and uses .venv)")

# the reference generators' dtype rules (tests/gen/refgen.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "gen"))
from refgen import ALL, FLOATS, INTS, NP, bf16_round, promote  # noqa: E402,F401

CODE = {"f32": lib.TM_F32, "f64": lib.TM_F64, "f16": lib.TM_F16,
        "bf16": lib.TM_BF16, "i8": lib.TM_I8, "u8": lib.TM_U8,
        "i16": lib.TM_I16, "i32": lib.TM_I32, "i64": lib.TM_I64,
        "bool": lib.TM_BOOL}
NAME = {v: k for k, v in CODE.items()}
NULL = ffi.NULL


def mem_stats():
    s = ffi.new("tm_mem_stats *")
    lib.tm_memory_stats(s)
    return s


def tensors(n):
    """A C array of n tensor pointers (tm_tensor *[n])."""
    return ffi.new("tm_tensor *[]", max(1, n))


def i64s(xs):
    return ffi.new("int64_t[]", [int(x) for x in xs] or [0])


def ints(xs):
    return ffi.new("int[]", [int(x) for x in xs] or [0])


# ------------------------------------------------------------ numpy rules


def f64_to_bf16(x):
    """One rounding f64 -> bf16: round to odd into f32 first, then RNE."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        f = x.astype(np.float32)
        over = np.abs(f.astype(np.float64)) > np.abs(x)
        f = np.where(over, np.nextafter(f, np.float32(0)), f)
        inexact = (f.astype(np.float64) != x) & np.isfinite(x)
        bits = f.view(np.uint32) | inexact.astype(np.uint32)
    return bf16_round(bits.view(np.float32).reshape(x.shape))


def cast(x, dt):
    """Foundry's tm_to_dtype on numpy values (saturating float->int)."""
    x = np.asarray(x)
    if dt == "bool":
        return x != 0
    if dt == "bf16":
        if x.dtype in (np.float32, np.float16) or x.dtype.kind in "biu":
            return bf16_round(x.astype(np.float64).astype(np.float32)) \
                if x.dtype.kind in "biu" else bf16_round(x.astype(np.float32))
        return f64_to_bf16(x)
    if dt in FLOATS:
        with np.errstate(all="ignore"):
            return x.astype(np.float64).astype(NP[dt]) if x.dtype.kind in "biu" \
                else x.astype(NP[dt])
    if x.dtype.kind == "f":
        info = np.iinfo(NP[dt])
        with np.errstate(all="ignore"):
            t = np.trunc(x.astype(np.float64))
            t = np.where(np.isnan(t), 0, t)
            hi = t >= float(info.max)
            lo = t <= float(info.min)
            mid = np.clip(t, -2.0**62, 2.0**62).astype(np.int64)
            r = np.where(hi, info.max, np.where(lo, info.min, mid))
        return r.astype(NP[dt])
    return x.astype(np.int64).astype(NP[dt]) if x.dtype != np.uint64 else x.astype(NP[dt])



def compute_np(dt):
    """numpy dtype the kernels compute a float dtype in."""
    return np.float64 if dt == "f64" else np.float32


# ------------------------------------------------------------ values

def rand_values(rng, dt, shape, special=0.1, small=False):
    n = int(np.prod(shape)) if len(shape) else 1
    if dt == "bool":
        v = rng.integers(0, 2, n) == 1
    elif dt in FLOATS:
        v = rng.standard_normal(n) * (2 if small else rng.choice([1, 3, 100]))
        if rng.random() < 0.3:
            v = np.round(v)  # ties, equal values, exact integers
        if special and n:
            m = rng.random(n) < special
            sp = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30,
                           65504.0, 70000.0, 0.5, 2.5])
            v = np.where(m, rng.choice(sp, n), v)
    else:
        info = np.iinfo(NP[dt])
        if small:
            lo, hi = (0, 6) if dt == "u8" else (-5, 6)
        else:
            lo, hi = max(int(info.min), -300), min(int(info.max), 300)
        v = rng.integers(lo, hi, n, endpoint=True)
        if special and n and rng.random() < 0.3:
            m = rng.random(n) < special
            ext = rng.integers(int(info.min), int(info.max), n, endpoint=True,
                               dtype=np.int64 if dt != "u8" else np.int64)
            v = np.where(m, ext, v)
    return np.asarray(cast(np.asarray(v).reshape(shape), dt))


class Mismatch(Exception):
    pass


class Ctx:
    """One case: owns every tensor it creates; describes inputs for a
    reproduction."""

    def __init__(self, lib, rng, big_ok=True):
        self.lib, self.rng, self.owned, self.log = lib, rng, [], []
        self.big_ok = big_ok

    def own(self, h):
        if h:
            self.owned.append(h)
        return h

    def free_all(self):
        for h in reversed(self.owned):
            self.lib.tm_free(h)
        self.owned = []

    def err(self):
        e = self.lib.tm_last_error()
        return ffi.string(e).decode() if e else ""

    def check(self, h, what):
        """A NULL result must come with an error message."""
        if not h:
            msg = self.err()
            if not msg:
                raise Mismatch(f"{what}: NULL without tm_last_error()")
            raise Mismatch(f"{what} failed unexpectedly: {msg}")
        return self.own(h)

    def expect_fail(self, ok, what):
        if ok:
            raise Mismatch(f"{what}: expected failure, got success")
        if not self.err():
            raise Mismatch(f"{what}: failed without tm_last_error()")

    # -------------------------------------------------- tensors

    def from_np(self, a, dt):
        a = np.array(a, order="C")  # ascontiguousarray makes 0-d 1-d
        store = "f32" if dt == "bf16" else dt
        buf = np.array(a.astype(NP[store]), order="C")
        sh = i64s(a.shape)
        h = self.lib.tm_from_buffer(ffi.cast("void *", buf.ctypes.data), sh,
                                    a.ndim, CODE[store])
        self.check(h, "tm_from_buffer")
        if dt == "bf16":
            h = self.check(self.lib.tm_to_dtype(h, CODE["bf16"]), "to bf16")
        return h

    def to_np(self, h):
        lib = self.lib
        nd = lib.tm_ndim(h)
        sp = lib.tm_shape(h)
        shape = tuple(sp[i] for i in range(nd))
        dt = NAME[lib.tm_dtype_of(h)]
        store = "f32" if dt == "bf16" else dt
        out = np.empty(shape, dtype=NP[store])
        st = lib.tm_copy_to_buffer(h, ffi.cast("void *", out.ctypes.data),
                                   max(1, out.nbytes), CODE[store])
        if st != 0:
            raise Mismatch(f"tm_copy_to_buffer failed: {self.err()}")
        return out, dt

    def node(self, shape, dt, depth=0, expand=True, **kw):
        """Random layout of `shape`: a Node whose .t / .v are the Foundry and
        numpy views and .root / .rv their roots."""
        rng = self.rng
        shape = tuple(shape)
        kinds = ["plain"]
        if depth < 2:
            kinds += ["perm", "slice", "select"] * 2
            if expand and any(s != 1 for s in shape):
                kinds.append("expand")
        kind = rng.choice(kinds) if rng.random() < 0.75 else "plain"
        nd = len(shape)
        if kind == "plain":
            v = rand_values(rng, dt, shape, **kw)
            h = self.from_np(v, dt)
            return Node(h, v, h, v, [], dt)
        if kind == "perm" and nd >= 2:
            p = list(rng.permutation(nd))
            inv = list(np.argsort(p))
            src = self.node([shape[i] for i in p], dt, depth + 1, expand, **kw)
            h = self.check(self.lib.tm_permute(src.t, ints(inv), nd), "permute")
            return src.derive(h, np.transpose(src.v, inv), ("permute", inv))
        if kind == "slice" and nd >= 1:
            d = int(rng.integers(nd))
            step = int(rng.integers(1, 4))
            start = int(rng.integers(0, 3))
            full = start + shape[d] * step + int(rng.integers(0, 2))
            s2 = list(shape)
            s2[d] = full
            src = self.node(s2, dt, depth + 1, expand, **kw)
            stop = start + shape[d] * step
            h = self.check(self.lib.tm_slice(src.t, d, start, stop, step), "slice")
            idx = [slice(None)] * nd
            idx[d] = slice(start, stop, step)
            return src.derive(h, src.v[tuple(idx)], ("slice", d, start, stop, step))
        if kind == "select":
            d = int(rng.integers(nd + 1))
            m = int(rng.integers(1, 4))
            i = int(rng.integers(-m, m))
            s2 = list(shape)
            s2.insert(d, m)
            src = self.node(s2, dt, depth + 1, expand, **kw)
            h = self.check(self.lib.tm_select(src.t, d, i), "select")
            idx = [slice(None)] * (nd + 1)
            idx[d] = i
            return src.derive(h, src.v[tuple(idx)], ("select", d, i))
        if kind == "expand":
            s2 = [1 if (s != 1 and rng.random() < 0.5) else s for s in shape]
            lead = int(rng.integers(0, nd + 1)) if rng.random() < 0.3 else 0
            s2 = s2[lead:]
            src = self.node(s2, dt, depth + 1, False, **kw)
            h = self.check(self.lib.tm_expand(src.t, i64s(shape), nd), "expand")
            return src.derive(h, np.broadcast_to(src.v, shape), ("expand", shape))
        return self.node(shape, dt, 2, expand, **kw)


class Node:
    def __init__(self, t, v, root, rv, views, dt):
        self.t, self.v, self.root, self.rv, self.views, self.dt = \
            t, v, root, rv, views, dt

    def derive(self, h, v, view):
        return Node(h, v, self.root, self.rv, self.views + [view], self.dt)

    @property
    def expanded(self):
        """True when some dim of size > 1 has stride 0 (an in-place write
        must fail), None when unclear (stride 0 only on size-1 dims, or no
        elements), False otherwise."""
        st = [s == 0 and n > 1 for s, n in zip(self.v.strides, self.v.shape)]
        if any(st) and self.v.size:
            return True
        if any(s == 0 for s in self.v.strides) and any(e[0] == "expand" for e in self.views):
            return None
        return False

    def replay(self, arr):
        """The same view chain applied to numpy array `arr` (a root copy)."""
        for v in self.views:
            if v[0] == "permute":
                arr = np.transpose(arr, v[1])
            elif v[0] == "slice":
                idx = [slice(None)] * arr.ndim
                idx[v[1]] = slice(v[2], v[3], v[4])
                arr = arr[tuple(idx)]
            elif v[0] == "select":
                idx = [slice(None)] * arr.ndim
                idx[v[1]] = v[2]
                arr = arr[tuple(idx) + (Ellipsis,)]  # a 0-d view, not a copy
            else:  # a writable broadcast view
                shp = tuple(v[1])
                lead = len(shp) - arr.ndim
                st = [0] * lead + [0 if (n == 1 and m != 1) else s for n, m, s in
                                   zip(arr.shape, shp[lead:], arr.strides)]
                arr = np.lib.stride_tricks.as_strided(arr, shp, st)
        return arr

    def describe(self):
        return (f"{self.dt} root{list(self.rv.shape)} views={self.views}\n"
                f"      root values={np.array2string(np.asarray(self.rv, dtype=object if self.dt == 'i64' else None).ravel(), threshold=200, max_line_width=150)}")


# ------------------------------------------------------------ comparison

def compare(got, want, rtol=0.0, atol=0.0, nan_any=False):
    """None if equal within tolerance, else a message.  Floats: NaN where
    NaN (NaN sign ignored), infs equal, |g-w| <= atol + rtol*|w|."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if got.size == 0:
        return None
    if want.dtype.kind == "f" or got.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        gn, wn = np.isnan(g), np.isnan(w)
        bad = gn != wn
        both = ~gn & ~wn
        with np.errstate(all="ignore"):
            inf = both & (np.isinf(g) | np.isinf(w))
            bad |= inf & (g != w)
            fin = both & ~inf
            bad |= fin & ~(np.abs(g - w) <= atol + rtol * np.abs(w))
    else:
        bad = got.astype(np.int64) != want.astype(np.int64) if want.dtype != np.bool_ \
            else got != want
    if bad.any():
        i = np.argwhere(bad)[0]
        i = tuple(int(x) for x in i)
        return (f"{int(bad.sum())} of {bad.size} differ; first at {i}: "
                f"got {got[i]!r} want {want[i]!r}")
    return None


ULP = {"f64": 2.0**-52, "f32": 2.0**-23, "f16": 2.0**-10, "bf16": 2.0**-7}


# ------------------------------------------------------------ references
# numpy references following Foundry's documented rules (ops.h); they
# raise ValueError where Foundry must fail.

# name -> C value of every op, in value order (the draws below pick from
# these lists, so a given seed draws the same cases while the enums stay).
BIN_OP = {n: v for v, n in op_names("tm_binary_op").items()}
UN_OP = {n: v for v, n in op_names("tm_unary_op").items()}
RED_OP = {n: v for v, n in op_names("tm_reduce_op").items()}
BIN, UN, RED = list(BIN_OP), list(UN_OP), list(RED_OP)
PRED = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
        "logical_xor"}  # binary ops that give bool
KEEP = {"neg", "abs", "sign", "relu", "square", "floor", "ceil", "round",
        "trunc", "clamp"}
TOBOOL = {"logical_not", "isnan", "isinf", "isfinite"}


FLOAT_BIN = {"div", "atan2", "logaddexp", "logaddexp2", "copysign", "hypot"}
BITS = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
        "bitwise_right_shift"}  # integer and bool operands only


def _shift(op, A, B):
    """PyTorch's shifts in int64: counts outside [0, 64) give 0 (left) or
    the sign fill (right)."""
    out = (B < 0) | (B >= 64)
    c = np.clip(B, 0, 63).astype(np.uint64)
    if op == "bitwise_left_shift":
        R = (A.astype(np.uint64) << c).astype(np.int64)
        return np.where(out, 0, R)
    return np.where(out, np.where(A < 0, -1, 0), A >> c.astype(np.int64))


def ref_binary(op, X, Y, pt, dts=()):
    """dts: the operands' own dtypes (a bool operand of sub is an error)."""
    ct = "f64" if pt == "f64" else ("f32" if pt in FLOATS or op in FLOAT_BIN else "i64")
    rd = "bool" if op in PRED else ("f32" if op in FLOAT_BIN and pt not in FLOATS else pt)
    X, Y = np.broadcast_arrays(np.asarray(X), np.asarray(Y))
    if op == "sub" and "bool" in dts:
        raise ValueError("sub with a bool operand")
    if op in BITS and pt in FLOATS:
        raise ValueError("bitwise op on floats")
    if pt == "bool" and op in ("floor_divide", "remainder", "fmod",
                               "bitwise_left_shift", "bitwise_right_shift"):
        raise ValueError(f"{op} of bools")
    with np.errstate(all="ignore"):
        if ct == "i64":
            A, B = X.astype(np.int64), Y.astype(np.int64)
            if op == "sub" and pt == "bool":
                raise ValueError("bool - bool")
            if op == "pow" and (B < 0).any():
                raise ValueError("negative exponent")
            if op in ("floor_divide", "remainder", "fmod") and (B == 0).any():
                raise ValueError("division by zero")
            if op == "fmod":  # C's %, and INT64_MIN % -1 is 0
                return cast(np.where(B == -1, 0, np.fmod(A, np.where(
                    B == -1, 1, B))), rd), rd
            if op in ("bitwise_left_shift", "bitwise_right_shift"):
                return cast(_shift(op, A, B), rd), rd
        else:
            A, B = X.astype(NP[ct]), Y.astype(NP[ct])
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "div": np.divide, "pow": np.power, "maximum": np.maximum,
             "minimum": np.minimum, "floor_divide": np.floor_divide,
             "remainder": np.remainder, "eq": np.equal, "ne": np.not_equal,
             "lt": np.less, "le": np.less_equal, "gt": np.greater,
             "ge": np.greater_equal, "fmod": np.fmod, "atan2": np.arctan2,
             "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
             "copysign": np.copysign, "hypot": np.hypot,
             "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
             "bitwise_xor": np.bitwise_xor}
        if op in f:
            R = f[op](A, B)
        else:
            za, zb = A != 0, B != 0
            R = {"logical_and": za & zb, "logical_or": za | zb,
                 "logical_xor": za ^ zb}[op]
    return cast(R, rd), rd


def bin_tol(op, dt):
    if op in FLOAT_BIN and dt not in FLOATS:
        dt = "f32"  # integer operands compute in f32
    if dt not in FLOATS:
        return 0.0, 0.0
    if op in ("pow", "atan2", "logaddexp", "logaddexp2", "hypot"):
        # libm and numpy's (possibly vectorized) versions differ by ulps
        return {"f64": 4e-15, "f32": 1e-6, "f16": 1e-3, "bf16": 8e-3}[dt], 0.0
    return 0.0, 0.0


def can_cast(src, dst):
    if src in FLOATS and dst not in FLOATS:
        return False
    return not (src in INTS and dst == "bool")


def scalar_wrap(tdt, s):
    if tdt in FLOATS:
        return tdt, tdt
    if float(s).is_integer():
        return ("i64" if tdt == "bool" else tdt), "i64"
    return "f32", "f32"


def ref_unary(op, x, dt, p0, p1):
    if op in TOBOOL:
        if op == "logical_not":
            return x == 0, "bool"
        xf = x.astype(np.float64)
        return {"isnan": np.isnan, "isinf": np.isinf,
                "isfinite": np.isfinite}[op](xf), "bool"
    if op in KEEP and dt not in FLOATS:
        if op == "neg" and dt == "bool":
            raise ValueError("neg bool")
        xi = x.astype(np.int64)
        if op == "clamp":
            if math.isnan(p0) and math.isnan(p1):
                return x, dt  # no bounds: every dtype kept
            od = "i64" if dt == "bool" else dt
            info = np.iinfo(NP[od])  # bounds saturate to the dtype's range
            r = xi
            if not math.isnan(p0):
                r = np.maximum(r, min(max(int(p0), int(info.min)), int(info.max)))
            if not math.isnan(p1):
                r = np.minimum(r, min(max(int(p1), int(info.min)), int(info.max)))
            return cast(r, od), od
        r = {"neg": -xi, "abs": np.abs(xi), "sign": np.sign(xi),
             "relu": np.maximum(xi, 0), "square": xi * xi}.get(op, xi)
        od = "i64" if (op == "square" and dt == "bool") else dt
        return cast(r, od), od
    od = dt if dt in FLOATS else "f32"
    xf = cast(x, od).astype(np.float64)
    with np.errstate(all="ignore"):
        erf = np.vectorize(math.erf, otypes=[np.float64])
        erfc = np.vectorize(math.erfc, otypes=[np.float64])
        sig = lambda z: np.where(z >= 0, 1 / (1 + np.exp(-z)), np.exp(z) / (1 + np.exp(z)))  # noqa
        if op == "clamp":
            r = xf
            if not math.isnan(p0):
                r = np.where(np.isnan(r), r, np.maximum(r, p0))
            if not math.isnan(p1):
                r = np.where(np.isnan(r), r, np.minimum(r, p1))
        elif op == "softplus":
            bz = p0 * xf
            r = np.where(bz > p1, xf, np.logaddexp(0, bz) / p0)
        else:
            r = {"neg": lambda z: -z, "abs": np.abs, "sign": np.sign,
                 "exp": np.exp, "log": np.log, "log1p": np.log1p,
                 "expm1": np.expm1, "sqrt": np.sqrt,
                 "rsqrt": lambda z: 1 / np.sqrt(z), "sin": np.sin,
                 "cos": np.cos, "tanh": np.tanh, "sigmoid": sig,
                 "relu": lambda z: np.where(z > 0, z, np.where(np.isnan(z), z, 0.0)),
                 "leaky_relu": lambda z: np.where(z > 0, z, z * p0),
                 "gelu": lambda z: z * 0.5 * erfc(-z / math.sqrt(2)),
                 "gelu_tanh": lambda z: z * sig(2 * math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)),
                 "silu": lambda z: z * sig(z), "floor": np.floor,
                 "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
                 "reciprocal": lambda z: 1 / z, "square": np.square,
                 "erf": erf, "log2": np.log2, "exp2": np.exp2,
                 "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
                 "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
                 "asinh": np.arcsinh, "acosh": np.arccosh,
                 "atanh": np.arctanh, "log10": np.log10}[op](xf)
    return cast(r, od), od


def ref_reduce(op, x, dt, axes, keep, p):
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    if op in ("any", "all"):
        f = np.any if op == "any" else np.all
        return f(x != 0, axis=axes, keepdims=keep), "bool"
    if op in ("max", "min"):
        if n == 0:
            raise ValueError("empty")
        f = np.max if op == "max" else np.min
        if dt in FLOATS:
            return cast(f(x.astype(np.float64), axis=axes, keepdims=keep), dt), dt
        return f(x, axis=axes, keepdims=keep), dt
    if op in ("sum", "prod") and dt not in FLOATS:
        f = np.sum if op == "sum" else np.prod
        return f(x.astype(np.int64), axis=axes, keepdims=keep), "i64"
    od = dt if dt in FLOATS else "f32"
    xf = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if op == "sum":
            r = np.sum(xf, axis=axes, keepdims=keep)
        elif op == "prod":
            r = np.prod(xf, axis=axes, keepdims=keep)
        elif op == "mean":
            r = np.sum(xf, axis=axes, keepdims=keep) / n
        elif op in ("var", "std"):
            m = np.sum(xf, axis=axes, keepdims=True) / n
            r = np.sum((xf - m) ** 2, axis=axes, keepdims=keep) / max(0.0, n - p)
            r = np.sqrt(r) if op == "std" else r
        elif op == "logsumexp":
            m = np.max(xf, axis=axes, keepdims=True, initial=-np.inf)
            ms = np.where(np.isfinite(m), m, 0)
            r = np.log(np.sum(np.exp(xf - ms), axis=axes, keepdims=True)) + ms
            r = np.where(np.isnan(xf).any(axis=axes, keepdims=True), np.nan, r)
            r = r if keep else np.squeeze(r, axis=axes)
        else:  # norm
            ax = np.abs(xf)
            nan = np.isnan(xf).any(axis=axes, keepdims=keep)
            if p == np.inf:
                r = np.max(ax, axis=axes, keepdims=keep, initial=0)
            elif p == -np.inf:
                r = np.min(ax, axis=axes, keepdims=keep, initial=np.inf)
            elif p == 0:  # NaN != 0 counts as non-zero, as in PyTorch (see report)
                r = np.sum(ax != 0, axis=axes, keepdims=keep).astype(np.float64)
                nan = False
            else:
                r = np.sum(ax ** p, axis=axes, keepdims=keep) ** (1 / p)
            r = np.where(nan, np.nan, r)
    return cast(r, od), od


def sort_keys(v, dt, desc):
    if dt in FLOATS:
        f = v.astype(np.float64)
        nan = np.isnan(f).astype(np.int8)
        f = np.where(np.isnan(f), 0, f) + 0.0  # -0.0 == 0.0
        return (-f, -nan) if desc else (f, nan)
    i = v.astype(np.int64)
    return (~i,) if desc else (i,)


def ref_sort(v, dt, dim, desc):
    if v.ndim == 0:
        return v, np.zeros((), np.int64)
    m = np.moveaxis(v, dim, -1)
    flat = m.reshape(-1, m.shape[-1]) if m.size else m.reshape(0, m.shape[-1])
    idx = np.empty(flat.shape, np.int64)
    for r in range(flat.shape[0]):
        idx[r] = np.lexsort(sort_keys(flat[r], dt, desc))
    idx = idx.reshape(m.shape)
    vals = np.take_along_axis(m, idx, -1)
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)
