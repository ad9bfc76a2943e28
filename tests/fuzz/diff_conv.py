"""diff_conv.py — the conv family of diff_ops.py (tm_conv and
tm_conv_transpose against ftm_nn.ref_conv); diff_ops passes in its
outcheck."""
import numpy as np

from ftm import NULL, ULP, cast, ffi, lib
from ftm_nn import ref_conv


def t_conv(ctx, outcheck):
    """tm_conv / tm_conv_transpose over 1-3 spatial dims on random views;
    about 5% of the cases have groups that do not divide the channels
    and must fail, and so must transposed outputs of size <= 0.
    Tolerance as matmul's: K * ulp(compute) * (|x| conv |w| + |b|) + 1 ulp
    of the result dtype (K = the terms of one sum)."""
    rng = ctx.rng
    dt = str(rng.choice(["f32", "f64", "f32", "f64", "f16", "bf16"]))
    nd = int(rng.integers(1, 4))
    tr = bool(rng.random() < 0.5)
    g = int(rng.choice([1, 1, 2, 3]))
    n = int(rng.integers(0, 3))
    cin, cout = g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    s = [int(rng.integers(1, 3)) for _ in range(nd)]
    d = [int(rng.integers(1, 3)) for _ in range(nd)]
    p = [int(rng.integers(0, 2)) for _ in range(nd)]
    op = [int(rng.integers(0, max(s[i], d[i]))) for i in range(nd)]
    size = [int(rng.integers(1, 5)) + (0 if tr else d[i] * (k[i] - 1))
            for i in range(nd)]
    bad_groups = rng.random() < 0.05
    gg = g
    if bad_groups:
        gg = g + 1 if g > 1 else 2
        if g == 1:
            cin, cout = 3, 3
    # a transposed output of size <= 0 must fail too
    bad = bad_groups or (tr and any((size[i] - 1) * s[i] - 2 * p[i] +
                                    d[i] * (k[i] - 1) + op[i] + 1 <= 0
                                    for i in range(nd)))
    ws = [cin, cout // g] + k if tr else [cout, cin // g] + k
    x = ctx.node([n, cin] + size, dt, special=0)
    w = ctx.node(ws, dt, special=0)
    b = ctx.node([cout], dt, special=0) if rng.random() < 0.5 else None
    ctx.log.append(f"{'transpose' if tr else 'conv'} nd={nd} groups={gg} "
                   f"stride={s} padding={p} dilation={d} output_padding="
                   f"{op}\nx: {x.describe()}\nw: {w.describe()}")
    if tr:
        o = lib.tm_conv_transpose_defaults()
        o.output_padding = op + [0] * (3 - nd)
    else:
        o = lib.tm_conv_defaults()
    o.stride, o.padding = s + [1] * (3 - nd), p + [0] * (3 - nd)
    o.dilation, o.groups = d + [1] * (3 - nd), gg
    opts = ffi.new("tm_conv_transpose_opts *" if tr else "tm_conv_opts *", o)
    f = lib.tm_conv_transpose if tr else lib.tm_conv
    h = f(x.t, w.t, b.t if b else NULL, nd, opts)
    what = "tm_conv_transpose" if tr else "tm_conv"
    if bad:
        ctx.own(h)
        return ctx.expect_fail(h, what)
    X, W = cast(x.v, dt), cast(w.v, dt)
    B = cast(b.v, dt) if b else None
    want = ref_conv(X, W, B, s, p, d, g, tr, op)
    mag = ref_conv(np.abs(X), np.abs(W), np.abs(B) if b else None, s, p, d,
                   g, tr, op)
    terms = (cin // g) * int(np.prod(k)) + 1
    comp = "f64" if dt == "f64" else "f32"
    outcheck(ctx, h, cast(want, dt), dt, what, ULP[dt],
             terms * ULP[comp] * mag)
