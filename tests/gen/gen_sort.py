"""Reference cases for tm_sort, tm_argsort and tm_topk (tests/data/sort.ref).

Expected orders come from Python's sorted(), which is stable also with
reverse=True (equal keys keep their original order), on the key
(isnan(x), x): NaN is larger than every number, so it goes last ascending
and first descending; -0.0 == 0.0 keeps index order.  Ascending orders are
cross-checked against np.argsort(kind="stable").  topk is the first k of
the stable descending (largest) or ascending (smallest) order, so ties
keep the lower index first.  Sorting is exact: tolerance 0 everywhere.
"""
import math

import numpy as np

from refgen import Case, Input, rng, write, FLOATS, ALL


def key(v):
    v = float(v) if isinstance(v, (float, np.floating)) else int(v)
    if isinstance(v, float) and math.isnan(v):
        return (1, 0)
    return (0, v)


def stable_order(row, descending):
    order = sorted(range(len(row)), key=lambda i: key(row[i]),
                   reverse=descending)
    if not descending:
        want = np.argsort(np.asarray(row), kind="stable")
        assert list(want) == order, (row, order, want)
    return order


def sort_along(x, dim, descending):
    """(values, indices) of a stable sort of numpy array x along dim."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.int64)
    xm = np.moveaxis(x, dim, -1)
    idx = np.zeros(xm.shape, dtype=np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        idx[pos] = stable_order(list(xm[pos]), descending)
    vals = np.take_along_axis(xm, idx, axis=-1)
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


def data(shape, dt):
    """Values with many ties (and NaN, +-inf, -0.0 for floats)."""
    if dt == "bool":
        return rng.integers(0, 2, shape)
    if dt == "u8":
        return rng.choice([0, 1, 7, 200, 255], shape)
    if dt in FLOATS:
        pool = [0.0, -0.0, 1.5, -2.25, 3.0, math.nan, math.inf, -math.inf,
                0.5, 1.5, -2.25]
        return rng.choice(pool, shape)
    return rng.integers(-4, 5, shape)


def sort_case(name, x, dim, descending):
    v, i = sort_along(x.value, dim, descending)
    c = Case(name, "sort", [x], dim=dim, descending=int(descending))
    c.out(v, x.dtype).out(i, "i64")
    return c


def argsort_case(name, x, dim, descending):
    _, i = sort_along(x.value, dim, descending)
    c = Case(name, "argsort", [x], dim=dim, descending=int(descending))
    c.out(i, "i64")
    return c


def topk_case(name, x, k, dim, largest):
    v, i = sort_along(x.value, dim, largest)
    if x.value.ndim:
        v = np.take(v, range(k), axis=dim)
        i = np.take(i, range(k), axis=dim)
    c = Case(name, "topk", [x], k=k, dim=dim, largest=int(largest))
    c.out(v, x.dtype).out(i, "i64")
    return c


cases = []

# Every dtype, both directions, 2-D along the last and the first dim.
for dt in ALL:
    for desc in (False, True):
        d = "desc" if desc else "asc"
        cases.append(sort_case(f"{dt}_{d}_last", Input(data((3, 9), dt), dt),
                               -1, desc))
        cases.append(sort_case(f"{dt}_{d}_dim0", Input(data((7, 2), dt), dt),
                               0, desc))

# NaN placement, signed zeros and infinities, in a row of its own.
special = np.array([math.nan, 1.0, -0.0, math.inf, 0.0, -math.inf, math.nan,
                    1.0, -1.0, 0.0])
for dt in FLOATS:
    for desc in (False, True):
        d = "desc" if desc else "asc"
        cases.append(sort_case(f"special_{dt}_{d}", Input(special, dt), 0,
                               desc))

# Many equal keys: stability shows in the indices.
ties = rng.integers(0, 3, (2, 70)).astype(np.float64)
for desc in (False, True):
    d = "desc" if desc else "asc"
    cases.append(sort_case(f"ties_{d}", Input(ties, "f32"), 1, desc))
    cases.append(sort_case(f"ties_i64_{d}", Input(ties, "i64"), 1, desc))

# Large I64 values that double would merge: the order must stay exact.
big = np.array([2**62 + 3, 2**62 + 1, -2**63, 2**63 - 1, 2**62 + 2,
                2**62 + 1, -2**63 + 1], dtype=np.int64)
for desc in (False, True):
    cases.append(sort_case(f"i64_large_{int(desc)}", Input(big, "i64"), 0,
                           desc))

# Non-contiguous inputs and 3-D along the middle dim.
cases.append(sort_case("transposed", Input(data((5, 4), "f32"), "f32",
                                           [("transpose", 0, 1)]), 1, False))
cases.append(sort_case("sliced_step", Input(data((4, 11), "f64"), "f64",
                                            [("slice", 1, 1, 11, 3)]), -1,
                       True))
cases.append(sort_case("middle_dim_3d", Input(data((2, 5, 3), "i32"), "i32"),
                       1, False))
cases.append(sort_case("middle_dim_3d_permuted",
                       Input(data((3, 2, 5), "f16"), "f16",
                             [("permute", 1, 2, 0)]), -2, True))
cases.append(sort_case("expanded", Input(data((1, 6), "i16"), "i16",
                                         [("expand", [3, 6])]), 1, False))
cases.append(sort_case("expanded_sorted_dim",
                       Input(data((4, 1), "f32"), "f32",
                             [("expand", [4, 5])]), 1, True))

# 0-d and 0-size.
cases.append(sort_case("scalar", Input(np.array(2.5), "f32"), 0, False))
cases.append(sort_case("scalar_neg_dim", Input(np.array(7), "i32"), -1, True))
cases.append(sort_case("empty_1d", Input(np.zeros((0,)), "f32"), 0, False))
cases.append(sort_case("empty_rows", Input(np.zeros((0, 4)), "f32"), 1,
                       False))
cases.append(sort_case("empty_sorted_dim", Input(np.zeros((3, 0)), "i64"), 1,
                       True))
cases.append(sort_case("single", Input(np.array([4.0]), "bf16"), 0, True))

# argsort.
cases.append(argsort_case("argsort_f32", Input(data((3, 8), "f32"), "f32"),
                          1, False))
cases.append(argsort_case("argsort_desc_dim0",
                          Input(data((8, 3), "u8"), "u8"), 0, True))
cases.append(argsort_case("argsort_scalar", Input(np.array(1.0), "f64"), 0,
                          False))

# topk: largest and smallest, with ties and NaN, k at its limits.
for dt in ("f32", "i64", "bf16", "bool"):
    x = data((4, 9), dt)
    cases.append(topk_case(f"topk_{dt}_largest", Input(x, dt), 3, 1, True))
    cases.append(topk_case(f"topk_{dt}_smallest", Input(x, dt), 4, -1,
                           False))
x = data((6, 3), "f64")
cases.append(topk_case("topk_dim0", Input(x, "f64"), 2, 0, True))
cases.append(topk_case("topk_k0", Input(x, "f64"), 0, 0, True))
cases.append(topk_case("topk_all", Input(x, "f64"), 6, 0, False))
cases.append(topk_case("topk_special", Input(special, "f32"), 4, 0, True))
cases.append(topk_case("topk_special_smallest", Input(special, "f32"), 4, 0,
                       False))
cases.append(topk_case("topk_transposed",
                       Input(data((5, 3), "i8"), "i8", [("transpose", 0, 1)]),
                       2, 1, True))
cases.append(topk_case("topk_scalar", Input(np.array(3.0), "f32"), 1, 0,
                       True))
cases.append(Case("topk_k_too_big", "topk", [Input(np.zeros(3), "f32")],
                  k=5, dim=0, largest=1)
             .error("TM_EINVAL", "k 5 is out of range for dim 0 of size 3"))
cases.append(Case("sort_bad_dim", "sort", [Input(np.zeros((2, 3)), "f32")],
                  dim=2, descending=0)
             .error("TM_ERANGE", "dim 2 is out of range for a 2-d tensor"))

if __name__ == "__main__":
    write("sort.ref", cases, "tests/gen/gen_sort.py")
