"""scatter_reduce and scatter(reduce=) against PyTorch: values for every
reduction and dtype, include_self, ties, zeros, gradients, in-place forms,
the test device, and bad input."""
import numpy as np
import pytest

import foundry as F

KINDS = ["sum", "prod", "mean", "amax", "amin"]
# Reductions of a handful of values: float32 results differ from torch's
# only by summation order (mean divides once), hence 1e-6 relative.
RTOL = {"float32": 1e-6, "float64": 1e-13}


def _case(rng, dtype, shape=(4, 5), ishape=(6, 5), dim=0, src_extra=0):
    n = shape[dim]
    idx = rng.integers(0, n, ishape)
    sshape = tuple(s + src_extra for s in ishape)
    if dtype.startswith("float"):
        t = rng.integers(-3, 4, shape).astype(dtype)  # small ints: ties
        src = rng.integers(-3, 4, sshape).astype(dtype)
    elif dtype == "uint8":
        t = rng.integers(0, 6, shape).astype(dtype)
        src = rng.integers(0, 6, sshape).astype(dtype)
    else:
        t = rng.integers(-9, 10, shape).astype(dtype)
        src = rng.integers(-9, 10, sshape).astype(dtype)
    return t, idx, src


def _check(got, want, dtype):
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    if dtype.startswith("float"):
        np.testing.assert_allclose(got.numpy(), want.numpy(),
                                   rtol=RTOL[dtype], atol=0)
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32",
                                   "int16", "uint8"])
def test_values_match_torch(tch, rng, include_self, kind, dtype):
    for dim in (0, 1, -1):
        t, idx, src = _case(rng, dtype, dim=dim,
                            ishape=(4, 7) if dim else (6, 5))
        got = F.tensor(t).scatter_reduce(dim, F.tensor(idx), F.tensor(src),
                                         kind, include_self=include_self)
        want = tch.tensor(t).scatter_reduce(dim, tch.tensor(idx),
                                            tch.tensor(src), kind,
                                            include_self=include_self)
        _check(got, want, dtype)
        got = F.scatter_reduce(F.tensor(t), dim, F.tensor(idx),
                               F.tensor(src), kind,
                               include_self=include_self)
        _check(got, want, dtype)


@pytest.mark.parametrize("kind", KINDS)
def test_larger_src_and_index_non_contiguous(tch, rng, kind):
    # src larger than index: only its leading block is read; a transposed
    # self and index
    t, idx, src = _case(rng, "float64", shape=(5, 4), ishape=(3, 4),
                        src_extra=2)
    ft = F.tensor(np.ascontiguousarray(t.T)).t()
    fi = F.tensor(np.ascontiguousarray(idx.T)).t()
    assert not ft.is_contiguous() and not fi.is_contiguous()
    got = ft.scatter_reduce(0, fi, F.tensor(src), kind)
    want = tch.tensor(t).scatter_reduce(0, tch.tensor(idx), tch.tensor(src),
                                        kind)
    _check(got, want, "float64")


def test_max_and_min_are_aliases_as_in_torch(tch):
    x, i, s = F.tensor([1.0, 5.0]), F.tensor([0, 0]), F.tensor([3.0, -1.0])
    assert x.scatter_reduce(0, i, s, "max").tolist() == [3.0, 5.0]
    assert x.scatter_reduce(0, i, s, "min").tolist() == [-1.0, 5.0]


def test_nan_propagates_through_amax_amin(tch):
    t = np.array([1.0, 2.0, 3.0])
    src = np.array([np.nan, 5.0, -1.0])
    idx = np.array([0, 1, 1])
    for kind in ("amax", "amin"):
        for inc in (True, False):
            got = F.tensor(t).scatter_reduce(0, F.tensor(idx), F.tensor(src),
                                             kind, include_self=inc)
            want = tch.tensor(t).scatter_reduce(0, tch.tensor(idx),
                                                tch.tensor(src), kind,
                                                include_self=inc)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_0d_and_empty(tch):
    z = F.tensor(2.0).scatter_reduce(0, F.tensor(0), F.tensor(5.0), "prod")
    tz = tch.tensor(2.0).scatter_reduce(0, tch.tensor(0), tch.tensor(5.0),
                                        "prod")
    assert z.shape == () and z.item() == tz.item()
    e = F.ones(3, 2).scatter_reduce(0, F.zeros(0, 2, dtype=F.int64),
                                    F.zeros(0, 2), "amax",
                                    include_self=False)
    assert e.tolist() == [[1.0, 1.0]] * 3


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_gradients_match_torch(tch, rng, include_self, kind):
    t, idx, src = _case(rng, "float64")
    if kind == "prod":  # zeros: one zero alone at a place, two at another
        t[0, 0] = 0.0
        src[:, 2] = 1.5
        idx[:, 2] = 1
        src[0, 2] = 0.0
        idx[:3, 3] = 2
        src[:2, 3] = 0.0
    ft = F.tensor(t, requires_grad=True)
    fs = F.tensor(src, requires_grad=True)
    tt = tch.tensor(t, requires_grad=True)
    ts = tch.tensor(src, requires_grad=True)
    w = rng.standard_normal(t.shape)  # a non-uniform upstream gradient
    out = ft.scatter_reduce(0, F.tensor(idx), fs, kind,
                            include_self=include_self)
    tout = tt.scatter_reduce(0, tch.tensor(idx), ts, kind,
                             include_self=include_self)
    (out * F.tensor(w)).sum().backward()
    (tout * tch.tensor(w)).sum().backward()
    assert out.grad_fn is not None
    np.testing.assert_allclose(ft.grad.numpy(), tt.grad.numpy(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fs.grad.numpy(), ts.grad.numpy(),
                               rtol=1e-12, atol=1e-12)


def test_gradient_of_a_larger_src_is_zero_past_the_index(tch, rng):
    # torch's own backward fails for a src larger than index, so the
    # reference is torch's gradient with src cut to index's shape
    t, idx, src = _case(rng, "float64", src_extra=1)
    for kind in KINDS:
        fs = F.tensor(src, requires_grad=True)
        ts = tch.tensor(src[:6, :5], requires_grad=True)
        F.tensor(t).scatter_reduce(0, F.tensor(idx), fs, kind).sum() \
            .backward()
        tch.tensor(t).scatter_reduce(0, tch.tensor(idx), ts, kind).sum() \
            .backward()
        want = np.zeros_like(src)
        want[:6, :5] = ts.grad.numpy()
        np.testing.assert_allclose(fs.grad.numpy(), want, rtol=1e-12)


def test_amax_gradient_splits_evenly_among_ties(tch):
    t = F.tensor([3.0, 0.0], requires_grad=True)
    s = F.tensor([3.0, 3.0, 1.0], requires_grad=True)
    t.scatter_reduce(0, F.tensor([0, 0, 1]), s, "amax").sum().backward()
    assert t.grad.tolist() == pytest.approx([1 / 3, 0.0])
    assert s.grad.tolist() == pytest.approx([1 / 3, 1 / 3, 1.0])


def test_float32_gradient(tch, rng):
    t, idx, src = _case(rng, "float32")
    ft = F.tensor(t, requires_grad=True)
    tt = tch.tensor(t, requires_grad=True)
    ft.scatter_reduce(0, F.tensor(idx), F.tensor(src), "mean").sum() \
        .backward()
    tt.scatter_reduce(0, tch.tensor(idx), tch.tensor(src), "mean").sum() \
        .backward()
    np.testing.assert_allclose(ft.grad.numpy(), tt.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_in_place(tch, rng, kind):
    t, idx, src = _case(rng, "float32")
    x, tx = F.tensor(t), tch.tensor(t)
    assert x.scatter_reduce_(0, F.tensor(idx), F.tensor(src), kind,
                             include_self=False) is x
    tx.scatter_reduce_(0, tch.tensor(idx), tch.tensor(src), kind,
                       include_self=False)
    _check(x, tx, "float32")


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_legacy_reduce(tch, rng, reduce):
    t, idx, src = _case(rng, "float64")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates it for tensors
        want = tch.tensor(t).scatter(0, tch.tensor(idx), tch.tensor(src),
                                     reduce=reduce)
        wantv = tch.tensor(t).scatter(0, tch.tensor(idx), 1.5, reduce=reduce)
    _check(F.tensor(t).scatter(0, F.tensor(idx), F.tensor(src),
                               reduce=reduce), want, "float64")
    _check(F.tensor(t).scatter(0, F.tensor(idx), 1.5, reduce=reduce), wantv,
           "float64")
    x = F.tensor(t)
    x.scatter_(0, F.tensor(idx), 1.5, reduce=reduce)
    _check(x, wantv, "float64")
    x = F.tensor(t)
    x.scatter_(0, F.tensor(idx), F.tensor(src), reduce=reduce)
    _check(x, want, "float64")


def test_on_the_test_device(tch, rng, test_device):
    for kind in KINDS:
        t, idx, src = _case(rng, "float64")
        got = F.tensor(t, device=test_device).scatter_reduce(
            0, F.tensor(idx, device=test_device),
            F.tensor(src, device=test_device), kind, include_self=False)
        assert got.device == test_device
        want = tch.tensor(t).scatter_reduce(0, tch.tensor(idx),
                                            tch.tensor(src), kind,
                                            include_self=False)
        _check(got.cpu(), want, "float64")


def test_bad_input(tch):
    x, i, s = F.zeros(3), F.tensor([0, 1]), F.ones(2)
    with pytest.raises(RuntimeError):
        tch.zeros(3).scatter_reduce(0, tch.tensor([0, 1]), tch.ones(2),
                                    "bogus")
    with pytest.raises(ValueError, match="reduce must be"):
        x.scatter_reduce(0, i, s, "bogus")
    with pytest.raises(ValueError, match="reduce must be"):
        x.scatter(0, i, s, reduce="mean")
    with pytest.raises(IndexError, match="out of range"):
        x.scatter_reduce(0, F.tensor([0, 3]), s, "amax")
    with pytest.raises(TypeError, match="dtype"):
        x.scatter_reduce(0, i, F.ones(2, dtype=F.float64), "sum")
    with pytest.raises(TypeError):
        x.scatter_reduce(0, i, [1.0, 2.0], "sum")
    with pytest.raises(TypeError):
        x.scatter_reduce(0, i.float(), s, "sum")
    with pytest.raises(ValueError):
        x.scatter_reduce(0, F.tensor([[0, 1]]), s, "sum")
    y = F.tensor([1.0, 2.0, 3.0])
    with pytest.raises(IndexError):
        y.scatter_reduce_(0, F.tensor([0, 5]), s, "prod",
                          include_self=False)
    assert y.tolist() == [1.0, 2.0, 3.0]  # unchanged on failure
