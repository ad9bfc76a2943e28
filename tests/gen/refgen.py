"""refgen — writes reference cases for tests/c/refcase.c (format documented
in tests/c/refcase.h).  Expected values come from numpy, never from Foundry.

Usage in a generator script:

    from refgen import Case, Input, write, rng
    x = Input(rng.standard_normal((3, 4)), "f32", views=[("transpose", 0, 1)])
    c = Case("add_f32_t", "add", [x, Input(...)])
    c.out(np.add(x.value, ...), "f32"); c.tol(1e-6, 1e-7)
    write("binary.ref", [c, ...])

bf16 has no numpy dtype: its values are carried as float32 arrays rounded
to bfloat16 (round to nearest even) with `bf16_round`.
"""
import os
import numpy as np

DATA_DIR = os.path.join(os.path.dirname(__file__), "..", "data")

def new_rng():
    return np.random.default_rng(20261129)


# Seeded, so regenerating is reproducible; gen_all.py gives every script a
# fresh one, so a script's data does not depend on which ran before it.
rng = new_rng()

NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
      "bf16": np.float32, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "bool": np.bool_}
FLOATS = ("f32", "f64", "f16", "bf16")
INTS = ("i8", "u8", "i16", "i32", "i64")
ALL = FLOATS + INTS + ("bool",)


def promote(a, b):
    """tm_promote_types (PyTorch's rules) on Foundry dtype names."""
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    fa, fb = a in FLOATS, b in FLOATS
    if fa != fb:
        return a if fa else b
    if fa:
        return "f64" if "f64" in (a, b) else "f32"
    if "u8" in (a, b):
        o = b if a == "u8" else a
        return "i16" if o == "i8" else o
    bits = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}
    return a if bits[a] >= bits[b] else b


def bf16_round(x):
    """float32 values rounded to bfloat16 (nearest even), NaN kept."""
    a = np.asarray(x, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, out).astype(np.float32)


def cast(x, dtype):
    """numpy array `x` as Foundry dtype `dtype` holds it (bf16 rounded)."""
    x = np.asarray(x)
    if dtype == "bf16":
        return bf16_round(x.astype(np.float32))
    return x.astype(NP[dtype])


def small_values(gen, shape, dtype):
    """Values of `dtype` that every dtype holds exactly (two decimals times
    a few units for floats, small integers), drawn from generator `gen`."""
    if dtype in FLOATS:
        return cast(np.round(gen.standard_normal(shape) * 4, 2), dtype)
    if dtype == "bool":
        return gen.integers(0, 2, shape).astype(np.bool_)
    lo, hi = (0, 200) if dtype == "u8" else (-100, 100)
    return gen.integers(lo, hi, shape).astype(NP[dtype])


def apply_view(a, view):
    kind, args = view[0], view[1:]
    if kind == "transpose":
        return np.swapaxes(a, args[0], args[1])
    if kind == "permute":
        return np.transpose(a, args)
    if kind == "slice":
        d, start, stop, step = args
        idx = [slice(None)] * a.ndim
        idx[d] = slice(start, stop, step)
        return a[tuple(idx)]
    if kind == "expand":
        return np.broadcast_to(a, tuple(args[0]))
    if kind == "select":
        return np.take(a, args[1], axis=args[0])
    if kind == "unsqueeze":
        return np.expand_dims(a, args[0])
    raise ValueError(kind)


class Input:
    """A base array of `dtype` plus views applied by the C side too;
    `.value` is the numpy view as the op sees it."""

    def __init__(self, base, dtype, views=()):
        self.dtype = dtype
        self.base = cast(base, dtype)
        self.views = list(views)
        v = self.base
        for view in self.views:
            v = apply_view(v, view)
        self.value = v


def fmt_values(a, dtype):
    flat = np.asarray(a).reshape(-1)
    if dtype in FLOATS:
        return " ".join(repr(float(v)) for v in flat)
    return " ".join(str(int(v)) for v in flat)


def fmt_shape(shape):
    return "[" + ",".join(str(int(s)) for s in shape) + "]"


def fmt_view(view):
    parts = []
    for a in view[1:]:
        parts.append(fmt_shape(a) if isinstance(a, (list, tuple)) else str(a))
    return " ".join([view[0]] + parts)


class Case:
    def __init__(self, name, op, inputs=(), **args):
        self.name, self.op = name, op
        self.inputs = list(inputs)
        self.args = dict(args)
        self.outs = []
        self.rtol, self.atol = 0.0, 0.0
        self.err = None

    def out(self, value, dtype):
        self.outs.append((cast(value, dtype), dtype))
        return self

    def tol(self, rtol, atol):
        self.rtol, self.atol = rtol, atol
        return self

    def error(self, status, substring):
        self.err = (status, substring)
        return self

    def lines(self):
        yield f"case {self.name}"
        yield f"op {self.op}"
        for x in self.inputs:
            yield (f"in {x.dtype} {fmt_shape(x.base.shape)} "
                   f"{fmt_values(x.base, x.dtype)}").rstrip()
            for v in x.views:
                yield f"view {fmt_view(v)}"
        for k, v in self.args.items():
            vals = v if isinstance(v, (list, tuple)) else [v]
            yield f"arg {k} " + " ".join(repr(float(a)) for a in vals)
        for value, dtype in self.outs:
            yield (f"out {dtype} {fmt_shape(value.shape)} "
                   f"{fmt_values(value, dtype)}").rstrip()
        yield f"tol {self.rtol!r} {self.atol!r}"
        if self.err:
            yield f"err {self.err[0]} {self.err[1]}"
        yield "end"


def write(filename, cases, header=""):
    path = os.path.join(DATA_DIR, filename)
    with open(path, "w") as f:
        f.write(f"# generated by tests/gen — do not edit; {header}\n")
        for c in cases:
            for line in c.lines():
                f.write(line + "\n")
    print(f"wrote {len(cases)} cases to {os.path.relpath(path)}")
