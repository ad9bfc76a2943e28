"""Reference cases for gather, scatter, scatter_add, index_select, one_hot
(tests/c/test_index.c runs them).  Expected values come from numpy:
np.take_along_axis (gather), np.take (index_select), np.eye (one_hot) and
explicit Python loops in row-major order of the index (scatter: the last
write wins; scatter_add: adds applied one at a time in that order).

Tolerances: every case is exact (tol 0 0).  Gather, scatter and
index_select only move elements.  scatter_add rounds once per add in the
tensor's dtype (f16/bf16: the f32 sum of the two operands rounded to
f16/bf16, as numpy's float16 add does; integers wrap), and the loops below
do the same adds in the same order, so results are bitwise equal.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refgen import (small_values, ALL, FLOATS, NP, Case, Input, bf16_round,  # noqa: E402
                    cast, write)

# A generator of this script's own, so its data do not depend on which
# other scripts ran before it (gen_all.py runs them in one process).
rng = np.random.default_rng(2026_0002)

BITS = {"i8": 8, "u8": 8, "i16": 16, "i32": 32, "i64": 64}


def values(shape, dt):
    return small_values(rng, shape, dt)


def indices(shape, size, dt="i64", negative=True):
    lo = -size if negative else 0
    return rng.integers(lo, size, shape).astype(NP[dt])


def wrap(i, size):
    return int(i) + size if int(i) < 0 else int(i)


def add_one(a, b, dt):
    """a + b as Foundry's scatter_add computes it in dtype dt."""
    if dt == "f32":
        return np.float32(np.float32(a) + np.float32(b))
    if dt == "f64":
        return np.float64(a) + np.float64(b)
    if dt == "f16":
        return np.float16(np.float32(a) + np.float32(b))
    if dt == "bf16":
        return bf16_round(np.float32(a) + np.float32(b))
    if dt == "bool":
        return bool(a) or bool(b)
    bits = BITS[dt]
    v = (int(a) + int(b)) % (1 << bits)
    if dt != "u8" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def scatter_ref(t, dim, idx, src, dt, add=False):
    out = np.array(t, copy=True)
    if out.ndim == 0:
        out = out.reshape(1)
        idx, src = np.asarray(idx).reshape(1), np.asarray(src).reshape(1)
        dim = 0
        scalar = True
    else:
        scalar = False
    for p in np.ndindex(idx.shape):
        q = list(p)
        q[dim] = wrap(idx[p], out.shape[dim])
        q = tuple(q)
        s = src[p] if np.ndim(src) else src
        out[q] = add_one(out[q], s, dt) if add else s
    return out.reshape(()) if scalar else out


def gather_ref(t, dim, idx):
    if t.ndim == 0:
        return np.array(t, copy=True)
    sub = t[tuple(slice(0, idx.shape[d]) if d != dim else slice(None)
                  for d in range(t.ndim))]
    return np.take_along_axis(sub, np.where(idx < 0, idx + t.shape[dim], idx),
                              axis=dim)


cases = []

# --------------------------------------------------------------- gather
for k, dt in enumerate(ALL):
    dim = k % 2
    t = Input(values((3, 5), dt), dt)
    ishape = (2, 4) if dim == 1 else (5, 4)
    idx = Input(indices(ishape, 5 if dim == 1 else 3,
                        "i64" if k % 3 else "i32"), "i64" if k % 3 else "i32")
    cases.append(Case(f"gather_{dt}_dim{dim}", "gather", [t, idx], dim=dim)
                 .out(gather_ref(t.value, dim, idx.value), dt))

# non-contiguous tensor and index, negative dim, 3-D
t = Input(values((4, 3), "f32"), "f32", views=[("transpose", 0, 1)])  # [3,4]
idx = Input(indices((5, 3), 4), "i64", views=[("transpose", 0, 1)])   # [3,5]
cases.append(Case("gather_f32_transposed_t_and_index", "gather", [t, idx],
                  dim=-1).out(gather_ref(t.value, 1, idx.value), "f32"))
t = Input(values((6, 4), "f64"), "f64", views=[("slice", 0, 0, 6, 2)])  # [3,4]
idx = Input(indices((2, 8), 3, "i32"), "i32", views=[("slice", 1, 1, 8, 2)])
cases.append(Case("gather_f64_strided_dim0_i32", "gather", [t, idx], dim=0)
             .out(gather_ref(t.value, 0, idx.value), "f64"))
t = Input(values((2, 3, 4), "bf16"), "bf16", views=[("permute", 2, 0, 1)])
idx = Input(indices((4, 2, 5), 3), "i64")
cases.append(Case("gather_bf16_3d_permuted_dim2", "gather", [t, idx], dim=2)
             .out(gather_ref(t.value, 2, idx.value), "bf16"))
t = Input(values((2, 3, 4), "i16"), "i16")
idx = Input(indices((2, 3, 1), 3), "i64", views=[("expand", [2, 3, 4])])
cases.append(Case("gather_i16_expanded_index_dim1", "gather", [t, idx], dim=1)
             .out(gather_ref(t.value, 1, idx.value), "i16"))
# large enough for the thread pool (rows x 32 > TM__GRAIN is not needed for
# correctness; this one checks a long single row with the row-copy path off)
t = Input(values((3, 40), "f32"), "f32")
idx = Input(indices((3, 40), 3), "i64")
cases.append(Case("gather_f32_dim0_long_rows", "gather", [t, idx], dim=0)
             .out(gather_ref(t.value, 0, idx.value), "f32"))
# 0-d and 0-size
t = Input(np.array(2.5), "f32")
cases.append(Case("gather_0d", "gather", [t, Input(np.array(-1), "i64")],
                  dim=0).out(np.array(2.5, np.float32), "f32"))
t = Input(values((3, 4), "f32"), "f32")
cases.append(Case("gather_empty_index", "gather",
                  [t, Input(np.zeros((0, 4), np.int64), "i64")], dim=0)
             .out(np.zeros((0, 4), np.float32), "f32"))
cases.append(Case("gather_from_empty_dim_with_empty_index", "gather",
                  [Input(np.zeros((2, 0), np.float32), "f32"),
                   Input(np.zeros((2, 0), np.int64), "i64")], dim=1)
             .out(np.zeros((2, 0), np.float32), "f32"))
cases.append(Case("gather_out_of_range", "gather",
                  [Input(values((2, 5), "f32"), "f32"),
                   Input(np.array([[0, 1], [7, 2]]), "i64")], dim=1)
             .error("TM_ERANGE", "index 7 is out of range for dim 1 of size 5"))
cases.append(Case("gather_negative_out_of_range", "gather",
                  [Input(values((2, 5), "f32"), "f32"),
                   Input(np.array([[0, -6]]), "i32")], dim=1)
             .error("TM_ERANGE",
                    "index -6 is out of range for dim 1 of size 5"))

# -------------------------------------------------------------- scatter
for k, dt in enumerate(ALL):
    dim = k % 2
    t = values((4, 5), dt)
    ishape = (3, 4) if dim == 0 else (4, 3)
    idx = indices(ishape, 4 if dim == 0 else 5, "i32" if k % 4 == 3 else "i64")
    src = values((4, 5), dt)  # larger than the index: only a corner is read
    idt = "i32" if k % 4 == 3 else "i64"
    ins = [Input(t, dt), Input(idx, idt), Input(src, dt)]
    cases.append(Case(f"scatter_{dt}_dim{dim}", "scatter", ins, dim=dim)
                 .out(scatter_ref(t, dim, idx, src, dt), dt))
    ins = [Input(t, dt), Input(idx, idt), Input(src, dt)]
    cases.append(Case(f"scatter_add_{dt}_dim{dim}", "scatter_add", ins,
                      dim=dim)
                 .out(scatter_ref(t, dim, idx, src, dt, add=True), dt))
    val = 1.0 if dt == "bool" else 3.0 if dt not in FLOATS else -2.5
    cases.append(Case(f"scatter_value_{dt}_dim{dim}", "scatter_value",
                      [Input(t, dt), Input(idx, idt)], dim=dim, value=val)
                 .out(scatter_ref(t, dim, idx, cast(np.array(val), dt), dt),
                      dt))

# collisions: last write wins, adds accumulate in row-major order
t = np.zeros((3,), np.float32)
idx = np.array([1, 1, 0, 1, -1, 2])
src = np.array([1, 2, 3, 4, 5, 6], np.float32)
cases.append(Case("scatter_collisions_last_wins", "scatter",
                  [Input(t, "f32"), Input(idx, "i64"), Input(src, "f32")],
                  dim=0).out(scatter_ref(t, 0, idx, src, "f32"), "f32"))
src16 = np.array([0.1, 1000, 0.2, 3, 1e-3, 7], np.float16)
cases.append(Case("scatter_add_f16_rounds_per_add", "scatter_add",
                  [Input(t, "f16"), Input(idx, "i64"), Input(src16, "f16")],
                  dim=0).out(scatter_ref(t.astype(np.float16), 0, idx, src16,
                                         "f16", add=True), "f16"))
ti8 = np.array([120, -120, 0], np.int8)
src8 = np.array([10, 20, -30, 40, -50, 60], np.int8)
cases.append(Case("scatter_add_i8_wraps", "scatter_add",
                  [Input(ti8, "i8"), Input(idx, "i64"), Input(src8, "i8")],
                  dim=0).out(scatter_ref(ti8, 0, idx, src8, "i8", add=True),
                             "i8"))

# non-contiguous target, index and source
tb = values((5, 4), "f32")
ib = indices((4, 6), 5)
sb = values((4, 6), "f32")
tv = Input(tb, "f32", views=[("transpose", 0, 1)])        # [4,5]
iv = Input(ib, "i64", views=[("slice", 1, 0, 6, 2)])      # [4,3]
sv = Input(sb, "f32", views=[("slice", 1, 1, 6, 1)])      # [4,5]
for op, add in (("scatter", False), ("scatter_add", True)):
    cases.append(Case(f"{op}_noncontiguous_all", op,
                      [Input(tb, "f32", tv.views), Input(ib, "i64", iv.views),
                       Input(sb, "f32", sv.views)], dim=1)
                 .out(scatter_ref(tv.value, 1, iv.value, sv.value, "f32",
                                  add), "f32"))
    # in place, into the transposed view itself
    cases.append(Case(f"{op}__inplace_noncontiguous", op + "_",
                      [Input(tb, "f32", tv.views), Input(ib, "i64", iv.views),
                       Input(sb, "f32", sv.views)], dim=1)
                 .out(scatter_ref(tv.value, 1, iv.value, sv.value, "f32",
                                  add), "f32"))
# 3-D, dim 1, i32 index, f64 and bf16
for dt in ("f64", "bf16"):
    t = values((2, 3, 4), dt)
    idx = indices((2, 5, 3), 3, "i32")
    src = values((2, 5, 4), dt)
    for op, add in (("scatter", False), ("scatter_add", True)):
        cases.append(Case(f"{op}_{dt}_3d_dim1", op,
                          [Input(t, dt), Input(idx, "i32"), Input(src, dt)],
                          dim=1)
                     .out(scatter_ref(t, 1, idx, src, dt, add), dt))
# 0-d and 0-size
cases.append(Case("scatter_0d", "scatter",
                  [Input(np.array(1.5), "f32"), Input(np.array(0), "i64"),
                   Input(np.array(-4.0), "f32")], dim=0)
             .out(np.array(-4.0), "f32"))
cases.append(Case("scatter_add_0d", "scatter_add",
                  [Input(np.array(1.5), "f64"), Input(np.array(-1), "i64"),
                   Input(np.array(-4.0), "f64")], dim=-1)
             .out(np.array(-2.5), "f64"))
t = values((3, 2), "i32")
cases.append(Case("scatter_empty_index", "scatter",
                  [Input(t, "i32"), Input(np.zeros((0, 2), np.int64), "i64"),
                   Input(np.zeros((0, 2), np.int32), "i32")], dim=0)
             .out(t, "i32"))
cases.append(Case("scatter_out_of_range", "scatter",
                  [Input(values((2, 3), "f32"), "f32"),
                   Input(np.array([[0, 1, 1], [3, 0, 0]]), "i64"),
                   Input(values((2, 3), "f32"), "f32")], dim=0)
             .error("TM_ERANGE", "index 3 is out of range for dim 0 of size 2"))

# --------------------------------------------------------- index_select
for k, dt in enumerate(ALL):
    dim = k % 3 - 1  # -1, 0, 1
    t = Input(values((3, 4), dt), dt)
    n = t.value.shape[dim]
    idt = "i32" if k % 2 else "i64"
    idx = Input(indices((5,), n, idt), idt)
    cases.append(Case(f"index_select_{dt}_dim{dim}", "index_select", [t, idx],
                      dim=dim)
                 .out(np.take(t.value, np.where(idx.value < 0, idx.value + n,
                                                idx.value), axis=dim), dt))
t = Input(values((4, 3, 2), "f16"), "f16", views=[("permute", 1, 2, 0)])
idx = Input(indices((6,), 4), "i64", views=[("slice", 0, 0, 6, 2)])
cases.append(Case("index_select_f16_permuted_strided_index", "index_select",
                  [t, idx], dim=2)
             .out(np.take(t.value, np.where(idx.value < 0, idx.value + 4,
                                            idx.value), axis=2), "f16"))
t = Input(values((5, 6), "f32"), "f32", views=[("slice", 1, 0, 6, 2)])
idx = Input(np.array([4, -1, 0, 2, 2]), "i64")
cases.append(Case("index_select_rows_of_strided_matrix", "index_select",
                  [t, idx], dim=0)
             .out(np.take(t.value, [4, 4, 0, 2, 2], axis=0), "f32"))
t = Input(values((3, 4), "i64"), "i64")
cases.append(Case("index_select_0d_index_keeps_dim", "index_select",
                  [t, Input(np.array(-2), "i64")], dim=1)
             .out(np.take(t.value, [2], axis=1), "i64"))
cases.append(Case("index_select_0d_tensor", "index_select",
                  [Input(np.array(7), "i32"), Input(np.array([0]), "i64")],
                  dim=0).out(np.array(7), "i32"))
cases.append(Case("index_select_empty_index", "index_select",
                  [Input(values((3, 4), "f32"), "f32"),
                   Input(np.zeros((0,), np.int64), "i64")], dim=1)
             .out(np.zeros((3, 0)), "f32"))
cases.append(Case("index_select_out_of_range", "index_select",
                  [Input(values((3, 4), "f32"), "f32"),
                   Input(np.array([0, 3, -5]), "i64")], dim=1)
             .error("TM_ERANGE",
                    "index -5 is out of range for dim 1 of size 4"))

# -------------------------------------------------------------- one_hot
for dt in ("i64", "i32", "i16", "i8", "u8"):
    idx = rng.integers(0, 4, (2, 3)).astype(NP[dt])
    cases.append(Case(f"one_hot_{dt}", "one_hot", [Input(idx, dt)],
                      num_classes=5).out(np.eye(5, dtype=np.int64)[idx], "i64"))
idx = np.array([3, 0, 1, 3])
cases.append(Case("one_hot_inferred_classes", "one_hot", [Input(idx, "i64")],
                  num_classes=-1).out(np.eye(4, dtype=np.int64)[idx], "i64"))
ib = rng.integers(0, 3, (3, 4))
iv = Input(ib, "i64", views=[("transpose", 0, 1)])
cases.append(Case("one_hot_transposed_index", "one_hot", [iv],
                  num_classes=3)
             .out(np.eye(3, dtype=np.int64)[iv.value], "i64"))
cases.append(Case("one_hot_0d", "one_hot", [Input(np.array(2), "i64")],
                  num_classes=-1).out(np.array([0, 0, 1]), "i64"))
cases.append(Case("one_hot_empty", "one_hot",
                  [Input(np.zeros((0, 2), np.int64), "i64")], num_classes=3)
             .out(np.zeros((0, 2, 3)), "i64"))
cases.append(Case("one_hot_too_large", "one_hot",
                  [Input(np.array([0, 3]), "i64")], num_classes=3)
             .error("TM_ERANGE", "index value 3 is out of range for 3 classes"))
cases.append(Case("one_hot_negative", "one_hot",
                  [Input(np.array([0, -1]), "i32")], num_classes=3)
             .error("TM_ERANGE", "index value -1 is negative"))

# ------------------------------------------------------- scatter_reduce
# Appended with their own generator, so the cases above stay
# byte-identical.  The reference replays the kernel: the identity written
# first without include_self, then one reduction step per index position
# in row-major order, each rounded to the dtype (sum as scatter_add; prod,
# amax, amin computed in f64 and rounded once; NaN propagates), and mean
# as that sum divided by the count in f64, rounded once.
rng_sr = np.random.default_rng(2026_0102)
KINDS = ["sum", "prod", "mean", "amax", "amin"]
IDENT = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767),
         "i32": (-2 ** 31, 2 ** 31 - 1), "i64": (-2 ** 63, 2 ** 63 - 1),
         "bool": (0, 1)}


def reduce_one(a, b, kind, dt):
    if kind in ("sum", "mean"):
        return add_one(a, b, dt)
    if dt == "bool":
        return {"prod": bool(a) and bool(b), "amax": bool(a) or bool(b),
                "amin": bool(a) and bool(b)}[kind]
    if dt in FLOATS:
        x, y = np.float64(a), np.float64(b)
        if kind == "prod":
            r = x * y
        elif np.isnan(x) or np.isnan(y):
            r = x if np.isnan(x) else y
        else:
            r = max(x, y) if kind == "amax" else min(x, y)
        return cast(np.array(r), dt)
    if kind == "prod":
        bits = BITS[dt]
        v = (int(a) * int(b)) % (1 << bits)
        return v - (1 << bits) if dt != "u8" and v >= 1 << (bits - 1) else v
    return max(int(a), int(b)) if kind == "amax" else min(int(a), int(b))


def scatter_reduce_ref(t, dim, idx, src, kind, include_self, dt):
    out = t.copy()
    places = []
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = wrap(idx[pos], t.shape[dim])
        places.append((tuple(tgt), pos))
    if not include_self:
        for tgt, _ in places:
            if kind in ("sum", "mean"):
                v = 0
            elif kind == "prod":
                v = 1
            elif dt in FLOATS:
                v = -np.inf if kind == "amax" else np.inf
            else:
                v = IDENT[dt][0 if kind == "amax" else 1]
            out[tgt] = v
    count = {}
    for tgt, pos in places:
        out[tgt] = reduce_one(out[tgt], src[pos], kind, dt)
        count[tgt] = count.get(tgt, 1 if include_self else 0) + 1
    if kind == "mean":
        for tgt, c in count.items():
            out[tgt] = (cast(np.array(np.float64(out[tgt]) / c), dt)
                        if dt in FLOATS else int(out[tgt]) // c)
    return out


for k, (dt, kind) in enumerate([(d, kd) for d in ("f32", "f64", "f16",
                                                  "i32", "i8", "bool")
                                for kd in KINDS
                                if not (d == "bool" and kd == "mean")]):
    inc = k % 2 == 0
    dim = k % 2
    t = small_values(rng_sr, (3, 4), dt)
    ishape = (5, 4) if dim == 0 else (3, 6)
    n = 3 if dim == 0 else 4
    idx = rng_sr.integers(-n, n, ishape)
    src = small_values(rng_sr, (5, 6), dt)  # only the index-shaped corner
    cases.append(Case(f"scatter_reduce_{kind}_{dt}_dim{dim}_self{int(inc)}",
                      "scatter_reduce",
                      [Input(t, dt), Input(idx, "i64"), Input(src, dt)],
                      dim=dim, kind=KINDS.index(kind), include_self=int(inc))
                 .out(scatter_reduce_ref(t, dim, idx, src, kind, inc, dt),
                      dt))
tb = small_values(rng_sr, (5, 4), "f32")
ib = rng_sr.integers(0, 5, (4, 6))
sb = small_values(rng_sr, (4, 6), "f32")
tv = Input(tb, "f32", views=[("transpose", 0, 1)])        # [4,5]
iv = Input(ib, "i64", views=[("slice", 1, 0, 6, 2)])      # [4,3]
sv = Input(sb, "f32", views=[("slice", 1, 1, 6, 1)])      # [4,5]
for kind in KINDS:
    cases.append(Case(f"scatter_reduce_{kind}_noncontiguous_all",
                      "scatter_reduce", [tv, iv, sv], dim=1,
                      kind=KINDS.index(kind), include_self=0)
                 .out(scatter_reduce_ref(tv.value, 1, iv.value, sv.value,
                                         kind, False, "f32"), "f32"))
cases.append(Case("scatter_reduce_out_of_range", "scatter_reduce",
                  [Input(small_values(rng_sr, (2, 3), "f32"), "f32"),
                   Input(np.array([[0, 1, 1], [2, 0, 0]]), "i64"),
                   Input(small_values(rng_sr, (2, 3), "f32"), "f32")],
                  dim=0, kind=3, include_self=1)
             .error("TM_ERANGE",
                    "index 2 is out of range for dim 0 of size 2"))

write("index.ref", cases, "tests/gen/gen_index.py")
