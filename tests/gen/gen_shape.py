"""Reference cases for cat, stack, split, split_sizes, chunk, pad and repeat
(tests/c/test_shape.c runs them).  Expected values come from numpy:
np.concatenate, np.stack, slicing (split / split_sizes / chunk, with
torch.chunk's rule emulated below), np.pad in constant mode after slicing
away negative pads, and np.tile (repeat).

Tolerances: every case is exact (tol 0 0).  These ops only move elements;
the only conversions are cat/stack's dtype promotion, and the values here
are exactly representable in every promoted dtype.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refgen import small_values, ALL, FLOATS, NP, Case, Input, cast, write  # noqa: E402

rng = np.random.default_rng(2026_0003)  # this script's own stream


def values(shape, dt):
    return small_values(rng, shape, dt)


def small_ints(shape, dt):
    """Values every dtype holds exactly (for promotion cases)."""
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    lo = 0 if dt in ("u8",) else -8
    return cast(rng.integers(lo, 9, shape), dt)


# PyTorch's promotion (tm_promote_types): bool < integers < floats; within
# floats the wider wins and f16 with bf16 gives f32; within integers numpy's
# rule agrees with PyTorch's (u8 with i8 gives i16).
FLOAT_RANK = {"f16": 0, "bf16": 0, "f32": 1, "f64": 2}


def promote(a, b):
    if a == b:
        return a
    fa, fb = a in FLOATS, b in FLOATS
    if fa and fb:
        if {a, b} == {"f16", "bf16"}:
            return "f32"
        return a if FLOAT_RANK[a] > FLOAT_RANK[b] else b
    if fa or fb:
        return a if fa else b
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    r = np.result_type(NP[a], NP[b])
    return {np.dtype(v): k for k, v in NP.items() if k not in ("bf16",)}[r]


def chunk_ref(a, chunks, dim):
    n = a.shape[dim]
    step = -(-n // chunks)
    if n == 0:
        return [a] * chunks
    return [np.take(a, range(s, min(s + step, n)), axis=dim)
            for s in range(0, n, step)]


def pad_ref(a, pad, value, dt):
    nd = a.ndim
    widths = [(0, 0)] * nd
    for k in range(len(pad) // 2):
        d = nd - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        sl = [slice(None)] * nd
        sl[d] = slice(max(-lo, 0), a.shape[d] - max(-hi, 0))
        a = a[tuple(sl)]
        widths[d] = (max(lo, 0), max(hi, 0))
    fill = cast(np.array(value), dt)
    return np.pad(a, widths, mode="constant", constant_values=fill)


cases = []

# ------------------------------------------------------------------ cat
for k, dt in enumerate(ALL):
    dim = (0, 1, -1)[k % 3]
    shapes = [(2, 3), (2, 1), (2, 4)] if dim != 0 else [(1, 3), (3, 3), (2, 3)]
    ins = [Input(values(s, dt), dt) for s in shapes]
    cases.append(Case(f"cat_{dt}_dim{dim}", "cat", ins, dim=dim)
                 .out(np.concatenate([x.value for x in ins], axis=dim), dt))
# promotion
for a, b in (("f32", "i64"), ("i8", "u8"), ("f16", "bf16"), ("bool", "i32"),
             ("u8", "f16"), ("i16", "i64"), ("f64", "f32")):
    ins = [Input(small_ints((2, 2), a), a), Input(small_ints((1, 2), b), b)]
    pt = promote(a, b)
    cases.append(Case(f"cat_promotes_{a}_{b}", "cat", ins, dim=0)
                 .out(np.concatenate([cast(x.value, pt) for x in ins]), pt))
# non-contiguous inputs, 3-D, many inputs
ins = [Input(values((3, 2), "f32"), "f32", views=[("transpose", 0, 1)]),
       Input(values((2, 6), "f32"), "f32", views=[("slice", 1, 0, 6, 3)]),
       Input(values((1, 3), "f32"), "f32", views=[("expand", [2, 3])])]
cases.append(Case("cat_noncontiguous_inputs", "cat", ins, dim=1)
             .out(np.concatenate([x.value for x in ins], axis=1), "f32"))
ins = [Input(values((2, 3, 2), "i32"), "i32", views=[("permute", 1, 0, 2)]),
       Input(values((3, 1, 2), "i32"), "i32")]
cases.append(Case("cat_3d_permuted_dim1", "cat", ins, dim=1)
             .out(np.concatenate([x.value for x in ins], axis=1), "i32"))
ins = [Input(values((1, 2), "i64"), "i64") for _ in range(8)]
cases.append(Case("cat_eight_inputs", "cat", ins, dim=0)
             .out(np.concatenate([x.value for x in ins]), "i64"))
# empty pieces: [0] tensors are skipped, a 0-size piece along dim adds
# nothing, and [0] alone gives [0]
ins = [Input(np.zeros((0,)), "f64"), Input(values((2, 2), "f32"), "f32"),
       Input(np.zeros((2, 0)), "f32"), Input(values((2, 1), "f32"), "f32")]
cases.append(Case("cat_skips_empty_1d_and_promotes_with_it", "cat", ins,
                  dim=1)
             .out(np.concatenate([ins[1].value, ins[3].value], axis=1)
                  .astype(np.float64), "f64"))
ins = [Input(np.zeros((0,)), "i32"), Input(np.zeros((0,)), "i32")]
cases.append(Case("cat_only_empty_1d", "cat", ins, dim=0)
             .out(np.zeros((0,)), "i32"))
ins = [Input(np.zeros((0, 3)), "f32"), Input(np.zeros((0, 3)), "f32")]
cases.append(Case("cat_zero_rows", "cat", ins, dim=1)
             .out(np.zeros((0, 6)), "f32"))
cases.append(Case("cat_mismatched_shapes", "cat",
                  [Input(values((2, 3), "f32"), "f32"),
                   Input(values((2, 3), "f32"), "f32"),
                   Input(values((2, 4), "f32"), "f32")], dim=0)
             .error("TM_ESHAPE", "tensor 2 has shape [2,4], expected [*,3] "
                    "(as tensor 0): size 4 != 3 at dim 1"))

# ---------------------------------------------------------------- stack
for k, dt in enumerate(ALL):
    dim = (0, 1, 2, -1)[k % 4]
    ins = [Input(values((2, 3), dt), dt) for _ in range(3)]
    cases.append(Case(f"stack_{dt}_dim{dim}", "stack", ins, dim=dim)
                 .out(np.stack([x.value for x in ins], axis=dim), dt))
ins = [Input(values((3, 2), "f16"), "f16", views=[("transpose", 0, 1)]),
       Input(values((2, 3), "bf16"), "bf16")]
cases.append(Case("stack_noncontiguous_promoting", "stack", ins, dim=1)
             .out(np.stack([cast(x.value, "f32") for x in ins], axis=1),
                  "f32"))
ins = [Input(np.array(v), "i64") for v in (3, -1, 4)]
cases.append(Case("stack_scalars", "stack", ins, dim=0)
             .out(np.array([3, -1, 4]), "i64"))
ins = [Input(np.zeros((2, 0)), "f32") for _ in range(2)]
cases.append(Case("stack_empty", "stack", ins, dim=-1)
             .out(np.zeros((2, 0, 2)), "f32"))
cases.append(Case("stack_mismatched_shapes", "stack",
                  [Input(values((2, 3), "f32"), "f32"),
                   Input(values((3, 2), "f32"), "f32")], dim=0)
             .error("TM_ESHAPE", "tensor 1 has shape [3,2], expected [2,3]"))

# -------------------------------------------------- split / sizes / chunk
for k, dt in enumerate(ALL):
    a = values((5, 4), dt)
    dim = k % 2
    n = a.shape[dim]
    size = 2
    c = Case(f"split_{dt}_dim{dim}", "split", [Input(a, dt)], size=size,
             dim=dim)
    for s in range(0, n, size):
        c.out(np.take(a, range(s, min(s + size, n)), axis=dim), dt)
    cases.append(c)
a = Input(values((4, 6), "f32"), "f32", views=[("transpose", 0, 1)])  # [6,4]
c = Case("split_transposed_dim1", "split", [a], size=3, dim=-1)
c.out(a.value[:, :3], "f32").out(a.value[:, 3:], "f32")
cases.append(c)
c = Case("split_exact_fit", "split", [Input(values((6,), "i8"), "i8")],
         size=3, dim=0)
cases.append(c.out(c.inputs[0].value[:3], "i8").out(c.inputs[0].value[3:],
                                                     "i8"))
c = Case("split_larger_than_dim", "split", [Input(values((2, 3), "u8"), "u8")],
         size=10, dim=1)
cases.append(c.out(c.inputs[0].value, "u8"))
for size in (0, 2):
    cases.append(Case(f"split_empty_dim_size{size}", "split",
                      [Input(np.zeros((0, 3)), "f32")], size=size, dim=0)
                 .out(np.zeros((0, 3)), "f32"))
cases.append(Case("split_zero_size", "split",
                  [Input(values((3,), "f32"), "f32")], size=0, dim=0)
             .error("TM_EINVAL", "split size 0 must be positive"))

a = Input(values((3, 7), "bf16"), "bf16", views=[("slice", 1, 0, 7, 1)])
c = Case("split_sizes_bf16", "split_sizes", [a], sizes=[2, 0, 4, 1], dim=1)
for lo, hi in ((0, 2), (2, 2), (2, 6), (6, 7)):
    c.out(a.value[:, lo:hi], "bf16")
cases.append(c)
a = Input(values((4, 3), "i16"), "i16", views=[("transpose", 0, 1)])
c = Case("split_sizes_transposed_dim0", "split_sizes", [a], sizes=[1, 2],
         dim=0)
cases.append(c.out(a.value[:1], "i16").out(a.value[1:], "i16"))
cases.append(Case("split_sizes_wrong_sum", "split_sizes",
                  [Input(values((2, 6), "f32"), "f32")], sizes=[2, 3], dim=1)
             .error("TM_ESHAPE", "sizes add up to 5 but dim 1 has size 6"))

for n, chunks in ((6, 3), (5, 3), (6, 4), (4, 4), (3, 4), (2, 4), (1, 3),
                  (0, 3)):
    a = values((2, n), "f64")
    c = Case(f"chunk_{n}_into_{chunks}", "chunk", [Input(a, "f64")],
             chunks=chunks, dim=1)
    for p in chunk_ref(a, chunks, 1):
        c.out(p, "f64")
    cases.append(c)
a = Input(values((5, 2), "bool"), "bool", views=[("transpose", 0, 1)])
c = Case("chunk_bool_transposed", "chunk", [a], chunks=2, dim=-1)
for p in chunk_ref(a.value, 2, 1):
    c.out(p, "bool")
cases.append(c)
cases.append(Case("chunk_zero_chunks", "chunk",
                  [Input(values((3,), "f32"), "f32")], chunks=0, dim=0)
             .error("TM_EINVAL", "chunks = 0 must be positive"))

# ------------------------------------------------------------------ pad
for k, dt in enumerate(ALL):
    a = values((2, 3), dt)
    pad = [(1, 2), (0, 1, 2, 0), (2, 0, 1, 1)][k % 3]
    value = 1.0 if dt == "bool" else (7.0 if dt not in FLOATS else -1.5)
    cases.append(Case(f"pad_{dt}", "pad", [Input(a, dt)], pad=list(pad),
                      npad=len(pad), value=value)
                 .out(pad_ref(a, pad, value, dt), dt))
a = Input(values((4, 5), "f32"), "f32", views=[("transpose", 0, 1)])  # [5,4]
for pad in ((-1, 2), (1, -2, -1, 0), (-2, -2), (0, 0, -3, 1)):
    name = "_".join(str(p).replace("-", "m") for p in pad)
    cases.append(Case(f"pad_crop_transposed_{name}", "pad",
                      [Input(a.base, "f32", a.views)], pad=list(pad),
                      npad=len(pad), value=0.5)
                 .out(pad_ref(a.value, pad, 0.5, "f32"), "f32"))
a = values((2, 2, 3), "i32")
cases.append(Case("pad_3d_all_dims", "pad", [Input(a, "i32")],
                  pad=[1, 0, 0, 1, 2, 1], npad=6, value=-3)
             .out(pad_ref(a, (1, 0, 0, 1, 2, 1), -3, "i32"), "i32"))
cases.append(Case("pad_nothing_copies", "pad", [Input(a, "i32")], npad=0,
                  value=0).out(a, "i32"))
cases.append(Case("pad_0d", "pad", [Input(np.array(4.0), "f16")], npad=0,
                  value=0).out(np.array(4.0), "f16"))
cases.append(Case("pad_empty_dim", "pad", [Input(np.zeros((2, 0)), "f32")],
                  pad=[1, 1], npad=2, value=9)
             .out(np.full((2, 2), 9.0), "f32"))
cases.append(Case("pad_crop_to_zero", "pad", [Input(values((2, 3), "f32"),
                                                     "f32")],
                  pad=[-1, -2], npad=2, value=9)
             .out(np.zeros((2, 0)), "f32"))
cases.append(Case("pad_negative_size", "pad",
                  [Input(values((2, 3), "f32"), "f32")], pad=[-2, -2],
                  npad=2, value=0)
             .error("TM_EINVAL", "padding (-2, -2) of dim 1 of size 3"))
cases.append(Case("pad_odd_count", "pad", [Input(values((2, 3), "f32"),
                                                  "f32")],
                  pad=[1, 1, 1], npad=3, value=0)
             .error("TM_EINVAL", "npad = 3 must be even"))

# --------------------------------------------------------------- repeat
for k, dt in enumerate(ALL):
    a = values((2, 3), dt)
    reps = [(2, 1), (1, 3), (2, 2, 1), (3, 1, 2)][k % 4]
    cases.append(Case(f"repeat_{dt}", "repeat", [Input(a, dt)],
                      repeats=list(reps)).out(np.tile(a, reps), dt))
a = Input(values((3, 2), "f32"), "f32", views=[("transpose", 0, 1)])
cases.append(Case("repeat_transposed", "repeat", [a], repeats=[2, 2])
             .out(np.tile(a.value, (2, 2)), "f32"))
a = Input(values((1, 3), "i64"), "i64", views=[("expand", [2, 3])])
cases.append(Case("repeat_expanded_input", "repeat", [a], repeats=[1, 1, 2])
             .out(np.tile(a.value, (1, 1, 2)), "i64"))
cases.append(Case("repeat_0d", "repeat", [Input(np.array(5), "i8")],
                  repeats=[2, 3]).out(np.full((2, 3), 5), "i8"))
cases.append(Case("repeat_zero", "repeat", [Input(values((2, 3), "f32"),
                                                   "f32")],
                  repeats=[0, 2]).out(np.zeros((0, 6)), "f32"))
# five dims with repeats and sizes both > 1: ten interleaved dims, more
# than a view can have, so the block-doubling path runs
a = values((2, 3, 2, 2, 2), "f64")
reps = (2, 2, 3, 2, 2)
cases.append(Case("repeat_5d_many_dims", "repeat", [Input(a, "f64")],
                  repeats=list(reps)).out(np.tile(a, reps), "f64"))
a = Input(values((3, 2, 2, 2, 2), "bf16"), "bf16",
          views=[("permute", 1, 0, 2, 3, 4)])
reps = (3, 2, 1, 2, 5)
cases.append(Case("repeat_5d_permuted_many_dims", "repeat", [a],
                  repeats=list(reps)).out(np.tile(a.value, reps), "bf16"))
cases.append(Case("repeat_too_few", "repeat", [Input(values((2, 3), "f32"),
                                                      "f32")],
                  repeats=[2]).error("TM_EINVAL", "1 repeats for a 2-d tensor"))

write("shape.ref", cases, "tests/gen/gen_shape.py")
