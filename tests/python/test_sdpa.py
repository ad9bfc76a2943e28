"""foundry.nn.functional.scaled_dot_product_attention against PyTorch's:
the output and the gradients of query, key and value over head sizes,
Dv != D, lengths that are not a multiple of the kernels' tiles, Tq != Tk,
MHA / GQA / MQA, causal, bool and float masks broadcast from fewer dims,
the sliding window and causal offset (against torch with the equivalent
bool mask), fully masked rows, dropout (statistics, reproducibility, and
the gradients with the mask it drew), and the errors PyTorch raises.

Inputs are drawn in F64, rounded to the dtype under test, and the same
rounded values go to torch in F64, so the comparison measures only
foundry's arithmetic.  Tolerances, as max |foundry - torch64| /
max |torch64| per tensor: F32 1e-5 (each weight and output element is a
sum of at most ~200 products rounded in F32, a relative error of a few
1e-7 in any summation order, well inside 1e-5); F64 1e-12 (the same sums
in F64)."""
import math

import numpy as np
import pytest

import foundry
import foundry.nn.functional as F

TOL = {"float32": 1e-5, "float64": 1e-12}


def _rel(a, ref):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    ref = ref.detach().numpy()
    assert a.shape == ref.shape
    if ref.size == 0:
        return 0.0
    scale = np.abs(ref).max()
    return np.abs(a.astype(np.float64) - ref).max() / (scale if scale else 1)


def _inputs(rng, tch, shapes, dtype):
    """(foundry tensors in dtype, torch F64 tensors of the same rounded
    values), all requiring grad."""
    fs, ts = [], []
    for s in shapes:
        a = rng.standard_normal(s).astype(dtype).astype(np.float64)
        f = foundry.tensor(a, dtype=getattr(foundry, dtype))
        fs.append(f.requires_grad_(True))
        ts.append(tch.tensor(a, dtype=tch.float64, requires_grad=True))
    return fs, ts


def _mask_pair(tch, m):
    """A numpy mask as (foundry, torch F64 or bool) tensors."""
    if m is None:
        return None, None
    if m.dtype == np.bool_:
        return foundry.tensor(m), tch.tensor(m)
    return foundry.tensor(m, dtype=foundry.float32), \
        tch.tensor(m, dtype=tch.float64)


def _compare(tch, rng, qs, ks, vs, dtype="float32", mask=None,
             torch_mask="same", grads=True, **kw):
    """F.sdpa on foundry tensors against torch's on F64 copies: the output
    and (grads) the three gradients from one random upstream gradient.
    torch_mask: the mask torch gets ("same": mask; or an explicit one
    standing for foundry-only options)."""
    (q, k, v), (tq, tk, tv) = _inputs(rng, tch, (qs, ks, vs), dtype)
    fm, tm = _mask_pair(tch, mask)
    if isinstance(torch_mask, str):
        tmask = tm
    else:
        tmask = _mask_pair(tch, torch_mask)[1]
    fkw = {k_: v_ for k_, v_ in kw.items()}
    tkw = {k_: v_ for k_, v_ in kw.items()
           if k_ not in ("window", "causal_offset", "_impl")}
    if not isinstance(torch_mask, str):
        tkw.pop("is_causal", None)
    tq_in = tq
    if (tkw.get("scale") or 0) < 0:
        # torch's F64 (math) path scales q and k by sqrt(scale): NaN for a
        # negative scale; the same scores from q * scale
        tq_in, tkw["scale"] = tq * tkw["scale"], 1.0
    out = F.scaled_dot_product_attention(q, k, v, fm, **fkw)
    ref = tch.nn.functional.scaled_dot_product_attention(tq_in, tk, tv,
                                                         tmask, **tkw)
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.dtype == getattr(foundry, dtype)
    tol = TOL[dtype]
    errs = {"out": _rel(out, ref)}
    if grads:
        g = rng.standard_normal(tuple(ref.shape)).astype(dtype)
        out.backward(foundry.tensor(g, dtype=getattr(foundry, dtype)))
        ref.backward(tch.tensor(g.astype(np.float64)))
        for name, a, b in (("dq", q, tq), ("dk", k, tk), ("dv", v, tv)):
            assert a.grad is not None, name
            errs[name] = _rel(a.grad, b.grad)
    bad = {n: e for n, e in errs.items() if not e <= tol}
    assert not bad, f"relative errors above {tol}: {bad}"
    return out, ref


# ---------------------------------------------------- the acceptance matrix

@pytest.mark.parametrize("d", [8, 16, 32, 64, 80, 96, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_head_sizes(tch, rng, d, causal):
    # 67 keys: not a multiple of any tile size the kernels use
    _compare(tch, rng, (2, 2, 67, d), (2, 2, 67, d), (2, 2, 67, d),
             is_causal=causal)


@pytest.mark.parametrize("case", [
    # (H, Hkv, Tq, Tk, D, Dv, is_causal, scale, enable_gqa)
    (2, 2, 33, 33, 32, 48, False, None, False),    # Dv > D
    (2, 2, 33, 70, 64, 16, True, None, False),     # Dv < D, Tq < Tk causal
    (2, 2, 70, 33, 16, 16, True, None, False),     # Tq > Tk causal
    (2, 2, 1, 90, 64, 64, False, None, False),     # one query (decode)
    (4, 2, 45, 45, 32, 32, True, None, True),      # GQA
    (4, 1, 45, 50, 32, 24, False, None, True),     # MQA
    (8, 2, 20, 129, 16, 16, True, 0.37, True),     # GQA, scale, Tk > 128
    (2, 2, 40, 40, 32, 32, False, 0.05, False),    # small scale
    (2, 2, 40, 40, 32, 32, True, -0.3, False),     # negative scale
], ids=lambda c: "H{}Hkv{}_Tq{}Tk{}_D{}Dv{}_c{}_s{}".format(*c[:8]))
def test_shapes(tch, rng, case):
    h, hkv, tq, tk, d, dv, causal, scale, gqa = case
    _compare(tch, rng, (2, h, tq, d), (2, hkv, tk, d), (2, hkv, tk, dv),
             is_causal=causal, scale=scale, enable_gqa=gqa)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_f64_tight_and_f32(tch, rng, dtype_name):
    _compare(tch, rng, (1, 4, 50, 40), (1, 2, 50, 40), (1, 2, 50, 24),
             dtype=dtype_name, is_causal=True, enable_gqa=True)


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("mshape", [(2, 3, 37, 41), (37, 41), (2, 1, 37, 41),
                                    (3, 1, 41), (1, 41), (1, 37, 1)],
                         ids=str)
def test_masks(tch, rng, kind, mshape):
    """Masks broadcast from fewer dims; bool True = the key takes part."""
    if kind == "bool":
        m = rng.random(mshape) < 0.7
        if len(mshape) >= 2 and mshape[-1] > 1:  # rows keep one key
            m[..., 0] = True
    else:
        m = (rng.standard_normal(mshape) * 2).astype(np.float32)
    _compare(tch, rng, (2, 3, 37, 32), (2, 3, 41, 32), (2, 3, 41, 20),
             mask=m)


def test_float_mask_with_minus_inf(tch, rng):
    m = np.where(rng.random((37, 41)) < 0.4, -np.inf, 0.5).astype(np.float32)
    m[:, 3] = 0.0
    _compare(tch, rng, (2, 2, 37, 16), (2, 2, 41, 16), (2, 2, 41, 16),
             mask=m)


def test_f64_float_mask(tch, rng):
    m = rng.standard_normal((1, 2, 30, 30))
    (q, k, v), (tq, tk, tv) = _inputs(rng, tch, [(1, 2, 30, 8)] * 3,
                                      "float64")
    out = F.scaled_dot_product_attention(q, k, v, foundry.tensor(m))
    ref = tch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, tch.tensor(m))
    assert _rel(out, ref) <= TOL["float64"]


def test_fully_masked_rows_give_zeros(tch, rng):
    """A row that sees no key: torch's output there is 0, and so are the
    gradients through it."""
    m = rng.random((2, 1, 20, 30)) < 0.6
    m[:, :, 3] = False
    m[1, :, 17] = False
    out, ref = _compare(tch, rng, (2, 2, 20, 16), (2, 2, 30, 16),
                        (2, 2, 30, 16), mask=m)
    assert np.all(out.detach().numpy()[:, :, 3] == 0)
    assert np.all(ref.detach().numpy()[:, :, 3] == 0)


def test_causal_more_queries_than_keys_top_left(tch, rng):
    # top-left: query i sees keys 0..i; all of 30 keys from row 29 on
    _compare(tch, rng, (1, 2, 45, 16), (1, 2, 30, 16), (1, 2, 30, 16),
             is_causal=True)


# ------------------------------------------- foundry's own masking options

def _band(tq, tk, offset, window, causal):
    i = np.arange(tq)[:, None]
    j = np.arange(tk)[None, :]
    m = np.ones((tq, tk), bool)
    if causal:
        m &= j <= i + offset
    if window:
        m &= j > i + offset - window
    return m


@pytest.mark.parametrize("tq,tk,offset,window,causal", [
    (50, 50, 0, 8, True),       # sliding window, causal
    (50, 50, 0, 17, False),     # window alone: keys j > i - W, any later
    (12, 60, 48, 16, True),     # new queries after a cache, windowed
    (12, 60, 48, 0, True),      # bottom-right causal
    (30, 40, 5, 0, True),       # an offset in between
    (30, 30, -3, 0, True),      # negative offset: first rows see nothing
])
def test_window_and_offset(tch, rng, tq, tk, offset, window, causal):
    m = _band(tq, tk, offset, window, causal)
    _compare(tch, rng, (2, 2, tq, 32), (2, 2, tk, 32), (2, 2, tk, 32),
             torch_mask=m, is_causal=causal, window=window,
             causal_offset=offset)


def test_window_with_mask(tch, rng):
    mask = rng.random((30, 30)) < 0.8
    mask[:, 0] = True
    band = _band(30, 30, 0, 6, False)
    _compare(tch, rng, (1, 2, 30, 16), (1, 2, 30, 16), (1, 2, 30, 16),
             mask=mask, torch_mask=mask & band, window=6)


# --------------------------------------------------------- ranks, layouts

@pytest.mark.parametrize("qs,ks,vs", [
    ((20, 16), (25, 16), (25, 8)),                     # 2-d
    ((3, 20, 16), (3, 25, 16), (3, 25, 8)),            # 3-d
    ((2, 2, 3, 20, 16), (2, 2, 3, 25, 16), (2, 2, 3, 25, 8)),  # 5-d
    ((2, 3, 20, 16), (1, 3, 25, 16), (2, 3, 25, 8)),   # key broadcast
    ((2, 4, 20, 16), (2, 1, 25, 16), (2, 1, 25, 8)),   # one head, no gqa
], ids=["2d", "3d", "5d", "bcast_batch", "bcast_head"])
def test_ranks_and_broadcast(tch, rng, qs, ks, vs):
    _compare(tch, rng, qs, ks, vs, is_causal=True)


def test_gqa_key_and_value_heads_differ(tch, rng):
    _compare(tch, rng, (2, 4, 20, 16), (2, 1, 25, 16), (2, 2, 25, 8),
             enable_gqa=True)


def test_non_contiguous_inputs(tch, rng):
    a = [rng.standard_normal((2, 30, 3, 16)).astype(np.float32)
         for _ in range(3)]
    f = [foundry.tensor(x).transpose(1, 2) for x in a]
    t = [tch.tensor(x.astype(np.float64)).transpose(1, 2) for x in a]
    assert not f[0].is_contiguous()
    out = F.scaled_dot_product_attention(*f, is_causal=True)
    ref = tch.nn.functional.scaled_dot_product_attention(*t, is_causal=True)
    assert _rel(out, ref) <= TOL["float32"]


@pytest.mark.parametrize("impl", ["fused", "composed"])
def test_forced_implementations(tch, rng, impl):
    m = rng.random((40, 40)) < 0.8
    m[:, 0] = True
    _compare(tch, rng, (1, 2, 40, 32), (1, 2, 40, 32), (1, 2, 40, 32),
             mask=m, _impl=impl)


def test_scale_zero_is_uniform(tch, rng):
    _compare(tch, rng, (1, 2, 10, 8), (1, 2, 12, 8), (1, 2, 12, 8),
             scale=0.0)


def test_narrow_dtypes_run_in_f32(tch, rng):
    (q, k, v), (tq, tk, tv) = _inputs(rng, tch, [(1, 2, 24, 16)] * 3,
                                      "float32")
    h = [x.detach().to(foundry.float16) for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*h, is_causal=True)
    assert out.dtype == foundry.float16
    ref = tch.nn.functional.scaled_dot_product_attention(
        *(x.detach().half().double() for x in (tq, tk, tv)), is_causal=True)
    # F16 inputs and output: the result is rounded once to F16 (2^-11)
    assert _rel(out.float(), ref) <= 2e-3



@pytest.mark.parametrize("kw", [
    dict(is_causal=True, enable_gqa=True),
    dict(enable_gqa=True, window=3, causal_offset=1, is_causal=True),
    dict(enable_gqa=True, scale=0.7, _mask=True),
], ids=["causal_gqa", "window_offset", "mask_scale"])
def test_f64_finite_differences(rng, kw):
    """F64 gradients against central differences of sum(out * g), step
    1e-6: truncation ~1e-12 and rounding ~1e-10 relative, so 1e-7."""
    kw = dict(kw)
    shapes = [(1, 2, 5, 4), (1, 1, 6, 4), (1, 1, 6, 3)]
    xs = [rng.standard_normal(s) for s in shapes]
    if kw.pop("_mask", False):
        m = rng.random((5, 6)) < 0.7
        m[:, 2] = True
        kw["attn_mask"] = foundry.tensor(m)
    g = rng.standard_normal((1, 2, 5, 3))

    def loss(arrays):
        out = F.scaled_dot_product_attention(
            *(foundry.tensor(a) for a in arrays), **kw)
        return float((out.numpy() * g).sum())

    ts = [foundry.tensor(a).requires_grad_(True) for a in xs]
    F.scaled_dot_product_attention(*ts, **kw).backward(foundry.tensor(g))
    h = 1e-6
    for n, t in enumerate(ts):
        num = np.zeros(xs[n].size)
        for e in range(xs[n].size):
            hi = [a.copy() for a in xs]
            lo = [a.copy() for a in xs]
            hi[n].flat[e] += h
            lo[n].flat[e] -= h
            num[e] = (loss(hi) - loss(lo)) / (2 * h)
        ana = t.grad.numpy().ravel()
        assert np.abs(ana - num).max() <= 1e-7 * max(1.0, np.abs(num).max())



@pytest.mark.parametrize("qs,ks,vs", [
    ((2, 2, 5, 8), (2, 2, 0, 8), (2, 2, 0, 6)),   # no keys: zeros
    ((2, 2, 0, 8), (2, 2, 7, 8), (2, 2, 7, 6)),   # no queries
    ((0, 2, 5, 8), (0, 2, 7, 8), (0, 2, 7, 6)),   # empty batch
    ((2, 2, 5, 0), (2, 2, 7, 0), (2, 2, 7, 6)),   # E = 0: uniform weights
    ((2, 2, 5, 8), (2, 2, 7, 8), (2, 2, 7, 0)),   # Ev = 0
], ids=["Tk0", "Tq0", "B0", "E0", "Ev0"])
def test_empty_dims(tch, rng, qs, ks, vs):
    _compare(tch, rng, qs, ks, vs)


# ---------------------------------------------------------------- dropout

def _dropout_mask(shape, p, seed, impl="fused"):
    """The keep mask (B, H, Tq, Tk) dropout draws for `seed`, read through
    v = identity and q = 0: every weight is 1 / Tk before dropout, so
    out[..., i, j] is keep_ij / (Tk (1 - p))."""
    b, h, tq, tk = shape
    q = foundry.zeros(b, h, tq, 8)
    k = foundry.randn(b, h, tk, 8)
    v = foundry.eye(tk).expand(b, h, tk, tk)
    foundry.manual_seed(seed)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, _impl=impl)
    o = out.numpy()
    return o != 0, o


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_fraction(p):
    """The fraction of weights dropped is p within 5 standard deviations
    of a binomial over the 32768 weights (a false failure ~6e-7), and
    the kept ones are scaled by 1 / (1 - p)."""
    keep, o = _dropout_mask((2, 4, 64, 64), p, 11)
    n = keep.size
    dropped = 1 - keep.mean()
    assert abs(dropped - p) <= 5 * math.sqrt(p * (1 - p) / n), dropped
    np.testing.assert_allclose(o[keep], 1 / (64 * (1 - p)), rtol=1e-6)


def test_dropout_reproducible_from_the_seed(rng):
    q, k, v = (foundry.tensor(rng.standard_normal((1, 2, 30, 16)),
                              dtype=foundry.float32) for _ in range(3))
    foundry.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy()
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy()
    foundry.manual_seed(3)
    c = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)  # the generator moved on
    g = foundry.Generator().manual_seed(3)
    foundry.manual_seed(3)
    d = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3,
                                       generator=g).numpy()
    np.testing.assert_array_equal(a, d)  # same seed, own stream
    e = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy()
    np.testing.assert_array_equal(a, e)  # the default was not moved


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_dropout_gradients_with_its_mask(tch, rng, dtype_name):
    """With the mask the seed draws (read by _dropout_mask), the output
    and gradients equal torch's softmax(q k^T s) * keep / (1 - p) @ v."""
    p, seed, shape = 0.25, 21, (1, 2, 33, 40)
    keep, _ = _dropout_mask(shape, p, seed)
    (q, k, v), (tq, tk, tv) = _inputs(
        rng, tch, [(1, 2, 33, 16), (1, 2, 40, 16), (1, 2, 40, 24)],
        dtype_name)
    foundry.manual_seed(seed)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p,
                                         _impl="fused")
    w = (tq @ tk.transpose(-1, -2) / 4.0).softmax(-1)
    ref = (w * tch.tensor(keep, dtype=tch.float64) / (1 - p)) @ tv
    g = rng.standard_normal(tuple(ref.shape))
    out.backward(foundry.tensor(g, dtype=getattr(foundry, dtype_name)))
    ref.backward(tch.tensor(g))
    tol = TOL[dtype_name]
    assert _rel(out, ref) <= tol
    for a, b in ((q, tq), (k, tk), (v, tv)):
        assert _rel(a.grad, b.grad) <= tol


def test_dropout_p_one_and_negative(tch, rng):
    """PyTorch: p = 1 drops everything (zeros); p < 0 is no dropout."""
    (q, k, v), (tq, tk, tv) = _inputs(rng, tch, [(1, 2, 10, 8)] * 3,
                                      "float32")
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert np.all(out.detach().numpy() == 0)
    ref = tch.nn.functional.scaled_dot_product_attention(tq, tk, tv,
                                                         dropout_p=1.0)
    assert np.all(ref.detach().numpy() == 0)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=-0.5)
    ref = tch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    assert _rel(out, ref) <= TOL["float32"]


# ----------------------------------------------------------------- errors

def _both(shapes, dtypes=("float32",) * 3):
    fs = [foundry.zeros(*s, dtype=getattr(foundry, d))
          for s, d in zip(shapes, dtypes)]
    return fs


_ERRORS = [
    # (id, shapes, kwargs, foundry exception class beyond RuntimeError)
    ("gqa_without_flag", [(2, 4, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8)], {},
     ValueError),
    ("gqa_heads_not_divisor", [(2, 3, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8)],
     {"enable_gqa": True}, ValueError),
    # Dv != D in these two: torch's CPU flash path (D == Dv) checks
    # neither and returns a result; its documented (math) path raises
    ("mask_and_causal", [(2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 6)],
     {"attn_mask": (5, 7), "is_causal": True}, ValueError),
    ("head_dim_mismatch", [(2, 4, 5, 8), (2, 4, 7, 9), (2, 4, 7, 8)], {},
     ValueError),
    ("key_value_length", [(2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 6, 6)], {},
     ValueError),
    ("batch_mismatch", [(2, 4, 5, 8), (3, 4, 7, 8), (3, 4, 7, 8)], {},
     ValueError),
    ("one_dim", [(8,), (8,), (8,)], {}, ValueError),
    ("mask_shape", [(2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 8)],
     {"attn_mask": (5, 6)}, ValueError),
    ("mask_more_dims", [(2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 8)],
     {"attn_mask": (1, 2, 4, 5, 7)}, ValueError),
    ("dropout_above_one", [(2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 8)],
     {"dropout_p": 1.5}, ValueError),
]


@pytest.mark.parametrize("name,shapes,kw,cls", _ERRORS,
                         ids=[e[0] for e in _ERRORS])
def test_errors_match_torch(tch, name, shapes, kw, cls):
    """Where torch raises RuntimeError, foundry raises a FoundryError (a
    RuntimeError) that is also the ValueError of bad shapes and
    settings."""
    fkw, tkw = dict(kw), dict(kw)
    if "attn_mask" in kw:
        fkw["attn_mask"] = foundry.ones(*kw["attn_mask"], dtype=foundry.bool)
        tkw["attn_mask"] = tch.ones(*kw["attn_mask"], dtype=tch.bool)
    with pytest.raises(RuntimeError):
        tch.nn.functional.scaled_dot_product_attention(
            *(tch.zeros(s) for s in shapes), **tkw)
    with pytest.raises(RuntimeError) as e:
        F.scaled_dot_product_attention(*_both(shapes), **fkw)
    assert isinstance(e.value, cls), e.value
    assert "scaled_dot_product_attention" in str(e.value)


def test_dtype_errors(tch):
    s = [(1, 2, 5, 8)] * 3
    with pytest.raises(RuntimeError):
        tch.nn.functional.scaled_dot_product_attention(
            tch.zeros(s[0]), tch.zeros(s[1], dtype=tch.float64),
            tch.zeros(s[2]))
    with pytest.raises(TypeError, match="same dtype"):
        F.scaled_dot_product_attention(
            *_both(s, ("float32", "float64", "float32")))
    for bad in ("int64", "float16"):  # a mask neither bool nor float32
        with pytest.raises(RuntimeError):
            tch.nn.functional.scaled_dot_product_attention(
                *(tch.zeros(x) for x in s),
                attn_mask=tch.zeros(5, 5, dtype=getattr(tch, bad)))
        with pytest.raises(TypeError, match="attn_mask dtype"):
            F.scaled_dot_product_attention(
                *_both(s), attn_mask=foundry.zeros(
                    5, 5, dtype=getattr(foundry, bad)))
    with pytest.raises(IndexError):  # a 1-d mask, as torch
        F.scaled_dot_product_attention(*_both(s), attn_mask=foundry.ones(
            5, dtype=foundry.bool))
    with pytest.raises(IndexError):  # enable_gqa without a heads dim
        F.scaled_dot_product_attention(*_both([(5, 8)] * 3),
                                       enable_gqa=True)
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(np.zeros((2, 5, 8)),
                                       *_both([(2, 5, 8)] * 2))
    with pytest.raises(ValueError, match="window"):
        F.scaled_dot_product_attention(*_both(s), window=-1)


def test_on_the_test_device_matches_the_cpu(test_device, rng):
    """The test device runs the CPU's entries on a worker thread: results
    and gradients bit-equal to the CPU's, through masks, GQA and
    dropout."""
    shapes = [(2, 4, 19, 16), (2, 2, 23, 16), (2, 2, 23, 12)]
    mask = foundry.tensor(rng.random((19, 23)) < 0.8)
    for kw in (dict(is_causal=True, enable_gqa=True),
               dict(attn_mask=mask, enable_gqa=True, dropout_p=0.2),
               dict(enable_gqa=True, window=5, _impl="composed")):
        cpu = [foundry.tensor(rng.standard_normal(s), dtype=foundry.float32,
                              requires_grad=True) for s in shapes]
        dev = [t.detach().to(test_device).requires_grad_(True) for t in cpu]
        dkw = dict(kw)
        if "attn_mask" in kw:
            dkw["attn_mask"] = mask.to(test_device)
        foundry.manual_seed(4)
        yc = F.scaled_dot_product_attention(*cpu, **kw)
        foundry.manual_seed(4)
        yd = F.scaled_dot_product_attention(*dev, **dkw)
        assert yd.device == test_device
        assert yd.tolist() == yc.tolist()
        g = foundry.tensor(rng.standard_normal(tuple(yc.shape)),
                           dtype=foundry.float32)
        yc.backward(g)
        yd.backward(g.to(test_device))
        for a, b in zip(cpu, dev):
            assert b.grad.tolist() == a.grad.tolist()
