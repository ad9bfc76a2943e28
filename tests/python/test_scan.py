"""cumprod, cummax, cummin, logcumsumexp, std_mean and var_mean against
PyTorch: values and dtypes in F32, F64 and integer dtypes, every dim,
non-contiguous, broadcast (expanded), 0-d and empty inputs, ties and NaN,
gradients (zeros in cumprod's input, ties in cummax) and bad input.

Tolerances: cumprod and logcumsumexp accumulate in float64 in both
libraries and round once, so F64 agrees to 1e-12 relative (different
log1p/exp orders) and F32 to 1e-6 (one rounding plus torch's float
exp/log); cummax / cummin copy elements, so they compare exactly.
Gradients in F64 at 1e-10."""
import numpy as np
import pytest

import foundry as F

FLOAT_TOL = {"float32": 1e-6, "float64": 1e-12}


def same(got, want, tol=0.0):
    w = want.detach().numpy()
    assert got.dtype.name == str(want.dtype).split(".")[1]
    assert tuple(got.shape) == tuple(w.shape)
    if tol == 0.0:
        np.testing.assert_array_equal(got.numpy(), w)
    else:
        np.testing.assert_allclose(got.numpy(), w, rtol=tol, atol=tol * 1e-3,
                                   equal_nan=True)


def layouts(f, t):
    """The same data as several views: as is, transposed, strided, a
    broadcast (stride 0) view, 0-d and empty."""
    return [(f, t), (f.transpose(0, 1), t.transpose(0, 1)),
            (f[:, ::2], t[:, ::2]), (f[:1].expand(3, f.shape[1], f.shape[2]),
                                     t[:1].expand(3, t.shape[1], t.shape[2])),
            (f[0, 0, 0], t[0, 0, 0]), (f[:, :0], t[:, :0])]


@pytest.mark.parametrize("name", ["cumprod", "logcumsumexp"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_scans_match_torch(name, dtype, tch, rng):
    a = (rng.standard_normal((2, 3, 5)) * 1.5).astype(dtype)
    for fv, tv in layouts(F.tensor(a), tch.tensor(a)):
        for dim in range(-max(fv.ndim, 1), max(fv.ndim, 1)):
            same(getattr(fv, name)(dim), getattr(tv, name)(dim),
                 FLOAT_TOL[dtype])
            same(getattr(F, name)(fv, dim), getattr(tch, name)(tv, dim),
                 FLOAT_TOL[dtype])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8",
                                   "uint8", "bool"])
def test_cummax_cummin_match_torch_with_ties(name, dtype, tch, rng):
    # few distinct values, so ties are everywhere
    a = rng.integers(0, 3, (2, 3, 6)).astype(dtype)
    for fv, tv in layouts(F.tensor(a), tch.tensor(a)):
        for dim in range(-max(fv.ndim, 1), max(fv.ndim, 1)):
            fr, tr = getattr(fv, name)(dim), getattr(tv, name)(dim)
            same(fr.values, tr.values)
            same(fr.indices, tr.indices)
            fr = getattr(F, name)(fv, dim)
            assert fr._fields == ("values", "indices")
            same(fr[0], tr[0])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_nan_and_infinities(name, tch):
    a = np.array([1.0, 3.0, np.nan, 5.0, -np.inf, np.nan, np.inf, 0.0])
    fr, tr = getattr(F.tensor(a), name)(0), getattr(tch.tensor(a), name)(0)
    same(fr.values, tr.values)
    same(fr.indices, tr.indices)


def test_cumprod_integers_give_int64_and_wrap(tch):
    a = np.array([[3, -2, 100, 7, 5, 9] * 4], dtype=np.int32)
    for dt in ("int32", "int8", "uint8", "bool", "int64"):
        x = a.astype(dt)
        same(F.tensor(x).cumprod(1), tch.tensor(x).cumprod(1))
    same(F.tensor(a).cumprod(1, dtype=F.float64),
         tch.tensor(a).cumprod(1, dtype=tch.float64))
    same(F.tensor(a).cumprod(1, dtype=F.int16),
         tch.tensor(a).cumprod(1, dtype=tch.int16))


def test_logcumsumexp_is_stable_and_handles_infinities(tch):
    a = np.array([1000.0, 1000.0, -1000.0, -np.inf, 5.0, np.inf, 3.0])
    same(F.tensor(a).logcumsumexp(0), tch.tensor(a).logcumsumexp(0), 1e-12)
    b = np.array([-np.inf, -np.inf, 2.0, np.nan, 1.0])
    same(F.tensor(b).logcumsumexp(0), tch.tensor(b).logcumsumexp(0), 1e-12)
    c = np.array([[88.0, 89.0, 90.0]], np.float32)  # exp overflows in f32
    same(F.tensor(c).logcumsumexp(1), tch.tensor(c).logcumsumexp(1), 1e-6)


def test_long_lines_cross_the_kernel_chunks(tch, rng):
    a = rng.uniform(0.9, 1.1, (3, 1000))
    same(F.tensor(a).cumprod(1), tch.tensor(a).cumprod(1), 1e-12)
    same(F.tensor(a).logcumsumexp(1), tch.tensor(a).logcumsumexp(1), 1e-12)
    v = rng.integers(0, 50, (2, 700))
    fr, tr = F.tensor(v).cummax(1), tch.tensor(v).cummax(1)
    same(fr.indices, tr.indices)


def grad_pair(tch, a):
    f = F.tensor(a, dtype=F.float64, requires_grad=True)
    t = tch.tensor(a, dtype=tch.float64, requires_grad=True)
    return f, t


def check_grad(tch, a, fn, rng, dim=1):
    f, t = grad_pair(tch, a)
    fo, to = fn(f, dim), fn(t, dim)
    g = rng.standard_normal(to.shape)
    fo.backward(F.tensor(g))
    to.backward(tch.tensor(g))
    np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
def test_cumprod_gradient_with_zeros_matches_torch(zeros, tch, rng):
    a = rng.standard_normal((3, 7))
    for k in range(zeros):  # zeros, also two in one line
        a[k % 3, [1, 4, 5][k]] = 0.0
    a[2, 0] = 0.0 if zeros == 3 else a[2, 0]  # a zero first in its line
    check_grad(tch, a, lambda x, d: x.cumprod(d), rng)
    check_grad(tch, a.T.copy(), lambda x, d: x.T.cumprod(d), rng)
    check_grad(tch, a, lambda x, d: x.cumprod(0), rng)


def test_logcumsumexp_gradient_matches_torch(tch, rng):
    a = rng.standard_normal((3, 6)) * 3
    a[0, 2] = 50.0  # a dominating element
    check_grad(tch, a, lambda x, d: x.logcumsumexp(d), rng)
    check_grad(tch, a, lambda x, d: x.logcumsumexp(0), rng)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_gradient_goes_to_the_indices(name, tch, rng):
    a = rng.integers(0, 3, (3, 6)).astype(np.float64)  # ties
    check_grad(tch, a, lambda x, d: getattr(x, name)(d).values, rng)
    check_grad(tch, a, lambda x, d: getattr(x, name)(d)[0], rng, dim=0)


def test_scans_of_0d_and_empty_tensors_have_gradients(tch):
    for name in ("cumprod", "logcumsumexp"):
        f = F.tensor(2.0, dtype=F.float64, requires_grad=True)
        t = tch.tensor(2.0, dtype=tch.float64, requires_grad=True)
        getattr(f, name)(0).backward()
        getattr(t, name)(0).backward()
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy())
    f = F.tensor(2.0, requires_grad=True)
    f.cummax(-1).values.backward()
    assert f.grad.item() == 1.0
    e = F.zeros(2, 0, requires_grad=True)
    e.cumprod(1).sum().backward()
    assert tuple(e.grad.shape) == (2, 0)


def test_bad_dims_and_dtypes_raise_like_torch(tch):
    x = F.ones(2, 3)
    for name in ("cumprod", "logcumsumexp", "cummax", "cummin"):
        with pytest.raises(IndexError):
            getattr(tch.ones(2, 3), name)(2)
        with pytest.raises(IndexError, match="dim 2"):
            getattr(x, name)(2)
        with pytest.raises(IndexError, match="dim"):
            getattr(F.tensor(1.0), name)(1)
    with pytest.raises(NotImplementedError):
        tch.tensor([1, 2]).logcumsumexp(0)
    with pytest.raises(TypeError, match="logcumsumexp.*float"):
        F.tensor([1, 2]).logcumsumexp(0)
    with pytest.raises(TypeError):
        x.cumprod("a")


# torch warns about the 0-d and empty cases (count <= correction)
@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_std_mean_var_mean_match_torch(name, dtype, tch, rng):
    a = rng.standard_normal((3, 4, 5)).astype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    f, t = F.tensor(a), tch.tensor(a)
    fn, tn = getattr(F, name), getattr(tch, name)
    calls = [((), {}), ((1,), {}), (((0, 2),), {"keepdim": True}),
             ((-1,), {"correction": 0}), ((None,), {"correction": 2}),
             ((1, False), {}), ((1, True, True), {}), ((False,), {}),
             ((), {"dim": 2, "keepdim": True, "correction": 1})]
    for args, kw in calls:
        for fv, tv in ((f, t), (f.transpose(0, 2), t.transpose(0, 2))):
            fr, tr = fn(fv, *args, **kw), tn(tv, *args, **kw)
            assert isinstance(fr, tuple) and len(fr) == 2
            same(fr[0], tr[0], tol)
            same(fr[1], tr[1], tol)
    for fv, tv in ((f[0, 0, 0], t[0, 0, 0]), (f[:0], t[:0])):  # 0-d, empty
        for i in range(2):
            same(fn(fv, correction=0)[i], tn(tv, correction=0)[i], tol)


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
def test_std_mean_var_mean_gradients_match_torch(name, tch, rng):
    a = rng.standard_normal((3, 4))
    f, t = grad_pair(tch, a)
    fs, fm = getattr(F, name)(f, 1, correction=0)
    ts, tm = getattr(tch, name)(t, 1, correction=0)
    (fs * 2 + fm ** 2).sum().backward()
    (ts * 2 + tm ** 2).sum().backward()
    np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_std_mean_bad_arguments(tch):
    with pytest.raises(TypeError):
        F.var_mean(F.ones(3), 0, True, correction=1)
    with pytest.raises(TypeError):
        tch.var_mean(tch.ones(3), 0, True, correction=1)
    with pytest.raises(TypeError, match="float"):
        F.std_mean(F.tensor([1, 2]))
    with pytest.raises(RuntimeError):
        tch.std_mean(tch.tensor([1, 2]))
    with pytest.raises(IndexError, match="dim"):
        F.var_mean(F.ones(2, 2), 5)
    with pytest.raises(TypeError, match="Tensor"):
        F.var_mean([1.0, 2.0])
    with pytest.raises(TypeError):
        tch.var_mean([1.0, 2.0])


def test_cumprod_in_place_keeps_the_dtype_and_refuses_tracked_tensors(tch):
    for dt in ("int32", "float32", "float64"):
        a = np.array([[1, 2, 3], [4, -1, 2]]).astype(dt)
        f, t = F.tensor(a), tch.tensor(a)
        v = f[:, 1:]
        assert v.cumprod_(1) is v
        t[:, 1:].cumprod_(1)
        same(f, t)
    x = F.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        x.cumprod_(0)
    with pytest.raises(RuntimeError):
        tch.tensor([1.0, 2.0], requires_grad=True).cumprod_(0)
