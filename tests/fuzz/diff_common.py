"""diff_common.py — the helpers every family of diff_ops.py shares: random
dtypes and shapes, and the comparison of a result with its reference."""
import numpy as np

from ftm import ALL, Mismatch, Node, compare


def rdt(rng, pool=ALL):
    return str(rng.choice(pool))


def rshape(ctx, nd=None, lo=0):
    rng = ctx.rng
    if nd is None:
        nd = int(rng.choice([0, 1, 2, 2, 3, 3, 4]))
    if ctx.big_ok and rng.random() < 0.04:
        s = [int(rng.choice([1, 2, 300])) for _ in range(max(nd, 2) - 1)] + [300]
        return [min(d, 3) for d in s[:-2]] + s[-2:]  # at most 90000 elements
    return [1 if rng.random() < 0.15 else int(rng.integers(lo, 7)) for _ in range(nd)]


def bcast_partner(ctx, shape):
    """A shape that broadcasts to `shape` (some dims 1, maybe fewer)."""
    rng = ctx.rng
    s = [1 if rng.random() < 0.25 else d for d in shape]
    return s[int(rng.integers(0, len(s) + 1)):] if rng.random() < 0.3 else s


def outcheck(ctx, h, want, wdt, what, rtol=0.0, atol=0.0):
    ctx.check(h, what)
    got, gdt = ctx.to_np(h)
    if gdt != wdt:
        raise Mismatch(f"{what}: dtype {gdt}, expected {wdt}")
    msg = compare(got, np.asarray(want), rtol, atol)
    if msg:
        raise Mismatch(f"{what}: {msg}\n  expected={fmt(want)}\n  got     ={fmt(got)}")
    return got


def fmt(a):
    return np.array2string(np.asarray(a).ravel(), threshold=60, max_line_width=150)


def ctx_node_from(ctx, v, dt):
    v = np.array(v, order="C")
    h = ctx.from_np(v, dt)
    return Node(h, v, h, v, [], dt)


def index_node(ctx, shape, size, bad=0.03):
    rng = ctx.rng
    v = rng.integers(-size, size, shape) if size > 0 else np.zeros(shape, np.int64)
    if rng.random() < bad and v.size:
        v.flat[int(rng.integers(v.size))] = size + int(rng.integers(0, 3))
    return ctx_node_from(ctx, v, str(rng.choice(["i64", "i32"])))
