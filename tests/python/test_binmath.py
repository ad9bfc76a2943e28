"""atan2 (arctan2), logaddexp, logaddexp2, copysign, hypot, lerp,
isclose, allclose and nan_to_num against PyTorch: values, dtypes,
gradients, layouts and errors.

Tolerances: float64 results to 1e-12 relative (the libm functions agree to
a few ulps), float32 to 2e-6 (a few float32 ulps: torch's vectorized
kernels round differently from libm), gradients the same with an absolute
floor for values near zero."""
import math

import numpy as np
import pytest

import foundry as F

BINARY = ["atan2", "logaddexp", "logaddexp2", "copysign", "hypot"]
TOL = {"float32": 2e-6, "float64": 1e-12}


def close(got, want, dt):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                               rtol=TOL[dt], atol=TOL[dt])


def operands(rng, dt, sa, sb):
    x = (rng.normal(size=sa) * 3).astype(dt)
    y = (rng.normal(size=sb) * 3).astype(dt)
    return x, y


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", BINARY)
def test_values_and_gradients_match_torch_with_broadcasting(tch, rng, name,
                                                           dt):
    x, y = operands(rng, dt, (3, 4), (4,))
    a = F.tensor(x, requires_grad=True)
    b = F.tensor(y, requires_grad=True)
    ta = tch.tensor(x, requires_grad=True)
    tb = tch.tensor(y, requires_grad=True)
    r, tr = getattr(F, name)(a, b), getattr(tch, name)(ta, tb)
    close(r, tr, dt)
    g = rng.normal(size=(3, 4)).astype(dt)
    (r * F.tensor(g)).sum().backward()
    (tr * tch.tensor(g)).sum().backward()
    close(a.grad, ta.grad, dt)
    close(b.grad, tb.grad, dt)


@pytest.mark.parametrize("name", BINARY)
def test_methods_numbers_and_in_place_forms(tch, rng, name):
    x, y = operands(rng, "float64", (2, 3), (2, 3))
    a, b, ta, tb = F.tensor(x), F.tensor(y), tch.tensor(x), tch.tensor(y)
    close(getattr(a, name)(b), getattr(ta, name)(tb), "float64")
    close(getattr(a, name)(1.5), getattr(tch, name)(ta, tch.tensor(1.5,
          dtype=tch.float64)), "float64")
    c = a.clone()
    assert getattr(c, name + "_")(b) is c
    close(c, getattr(tch, name)(ta, tb), "float64")


@pytest.mark.parametrize("name", BINARY)
def test_non_contiguous_0d_and_empty(tch, rng, name):
    x, y = operands(rng, "float32", (4, 5), (5, 4))
    a, b, ta, tb = F.tensor(x), F.tensor(y), tch.tensor(x), tch.tensor(y)
    fn, tfn = getattr(F, name), getattr(tch, name)
    close(fn(a.t(), b), tfn(ta.t(), tb), "float32")
    close(fn(a[::2], b.t()[1:3]), tfn(ta[::2], tb.t()[1:3]), "float32")
    s, ts = F.tensor(np.float32(0.7)), tch.tensor(np.float32(0.7))
    close(fn(s, s), tfn(ts, ts), "float32")
    close(fn(a, s), tfn(ta, ts), "float32")
    e = F.zeros(0, 5)
    assert fn(e, a[0]).shape == (0, 5)


def test_integer_operands_give_float32(tch):
    i, j = F.tensor([3, -1, 0]), F.tensor([4, 2, 5])
    ti, tj = tch.tensor([3, -1, 0]), tch.tensor([4, 2, 5])
    for name in ("atan2", "copysign"):
        close(getattr(F, name)(i, j), getattr(tch, name)(ti, tj), "float32")
    assert F.hypot(i, j).dtype is F.float32
    assert F.hypot(i, j).tolist() == [5.0, float(np.float32(math.hypot(
        1, 2))), 5.0]


def test_special_values_match_torch(tch):
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 2.0])
    x, y = np.meshgrid(v, v)
    a, b, ta, tb = F.tensor(x), F.tensor(y), tch.tensor(x), tch.tensor(y)
    for name in BINARY:
        got = getattr(F, name)(a, b).numpy()
        want = getattr(tch, name)(ta, tb).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
        # the sign of zeros too (copysign(x, -0.0), atan2(-0.0, ...)); a
        # NaN's sign bit is not specified
        num = ~np.isnan(want)
        assert (np.signbit(got) == np.signbit(want))[num].all(), name


def test_arctan2_is_atan2():
    assert F.arctan2 is F.atan2
    assert F.Tensor.arctan2 is F.Tensor.atan2


# ------------------------------------------------------------------ lerp

@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_lerp_tensor_weight_matches_torch_with_gradients(tch, rng, dt):
    x = rng.normal(size=(3, 4)).astype(dt)
    e = rng.normal(size=(4,)).astype(dt)
    w = rng.uniform(-0.5, 1.5, size=(3, 1)).astype(dt)
    fs = [F.tensor(v, requires_grad=True) for v in (x, e, w)]
    ts = [tch.tensor(v, requires_grad=True) for v in (x, e, w)]
    r, tr = F.lerp(*fs), tch.lerp(*ts)
    close(r, tr, dt)
    r.sum().backward()
    tr.sum().backward()
    for f, t in zip(fs, ts):
        close(f.grad, t.grad, dt)


@pytest.mark.parametrize("w", [0.0, 0.25, 0.5, 1.0, -2.0, 3.0])
def test_lerp_number_weight_and_endpoints(tch, rng, w):
    x = rng.normal(size=(5,))
    e = rng.normal(size=(5,))
    a, b = F.tensor(x, requires_grad=True), F.tensor(e, requires_grad=True)
    ta = tch.tensor(x, requires_grad=True)
    tb = tch.tensor(e, requires_grad=True)
    r, tr = a.lerp(b, w), tch.lerp(ta, tb, w)
    close(r, tr, "float64")
    if w == 1.0:  # exact at the end point
        np.testing.assert_array_equal(r.detach().numpy(), e)
    r.sum().backward()
    tr.sum().backward()
    close(a.grad, ta.grad, "float64")
    close(b.grad, tb.grad, "float64")
    c = F.tensor(x)
    assert c.lerp_(F.tensor(e), w) is c
    close(c, tr, "float64")


def test_lerp_refuses_mixed_and_integer_dtypes():
    a = F.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="end has dtype f64"):
        F.lerp(a, F.tensor([1.0, 2.0], dtype=F.float64), 0.5)
    with pytest.raises(TypeError, match="must be a float tensor"):
        F.lerp(F.tensor([1, 2]), F.tensor([1, 2]), 0.5)
    with pytest.raises(TypeError):
        F.lerp(a, a, "x")
    with pytest.raises(ValueError, match="do not broadcast"):
        F.lerp(a, F.zeros(3), 0.5)


# ------------------------------------------------------- isclose, allclose

def test_isclose_matches_torch(tch):
    x = np.array([1.0, 1.0, np.nan, np.inf, np.inf, -np.inf, 0.0, 1e-9, 100])
    y = np.array([1.0 + 1e-6, 1.1, np.nan, np.inf, -np.inf, 1.0, 1e-9, 0.0,
                  100.1])
    for dt in ("float32", "float64"):
        a, b = F.tensor(x.astype(dt)), F.tensor(y.astype(dt))
        ta, tb = tch.tensor(x.astype(dt)), tch.tensor(y.astype(dt))
        for kw in ({}, {"rtol": 0.01}, {"atol": 1e-3}, {"equal_nan": True},
                   {"rtol": 0, "atol": 0}):
            got, want = F.isclose(a, b, **kw), tch.isclose(ta, tb, **kw)
            assert got.dtype is F.bool
            np.testing.assert_array_equal(got.numpy(), want.numpy())
            assert F.allclose(a, b, **kw) == tch.allclose(ta, tb, **kw)
            assert a.isclose(b, **kw).tolist() == want.tolist()


def test_isclose_integers_broadcast_and_python_bool(tch):
    a, b = F.tensor([[1, 2, 3]]), F.tensor([[1], [3]])
    ta, tb = tch.tensor([[1, 2, 3]]), tch.tensor([[1], [3]])
    np.testing.assert_array_equal(F.isclose(a, b).numpy(),
                                  tch.isclose(ta, tb).numpy())
    np.testing.assert_array_equal(F.isclose(a, b, rtol=0.5).numpy(),
                                  tch.isclose(ta, tb, rtol=0.5).numpy())
    assert F.allclose(a, a) is True
    assert F.allclose(F.tensor([1.0]), F.tensor([1.1])) is False
    assert F.allclose(F.zeros(0), F.zeros(0)) is True


def test_isclose_errors():
    with pytest.raises(TypeError, match="b has dtype f64, expected f32"):
        F.isclose(F.tensor([1.0]), F.tensor([1.0], dtype=F.float64))
    with pytest.raises(ValueError, match="must be >= 0"):
        F.isclose(F.tensor([1.0]), F.tensor([1.0]), rtol=-1)
    with pytest.raises(ValueError, match="do not broadcast"):
        F.allclose(F.zeros(2), F.zeros(3))


# ------------------------------------------------------------ nan_to_num

@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_nan_to_num_matches_torch(tch, dt):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0]).astype(dt)
    a, ta = F.tensor(x), tch.tensor(x)
    for kw in ({}, {"nan": 2.0}, {"posinf": 7.0}, {"neginf": -7.0},
               {"nan": -1.0, "posinf": 1e3, "neginf": -1e3}):
        got, want = F.nan_to_num(a, **kw), tch.nan_to_num(ta, **kw)
        assert str(got.dtype).split(".")[-1] == dt
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    c = a.clone()
    assert c.nan_to_num_() is c
    np.testing.assert_array_equal(c.numpy(), tch.nan_to_num(ta).numpy())


def test_nan_to_num_integers_copy_and_gradient(tch):
    i = F.tensor([1, 2])
    r = F.nan_to_num(i)
    assert r.dtype is F.int64 and r.tolist() == [1, 2]
    x = np.array([np.nan, 2.0, np.inf, -3.0])
    a = F.tensor(x, requires_grad=True)
    ta = tch.tensor(x, requires_grad=True)
    (F.nan_to_num(a) * 3).sum().backward()
    (tch.nan_to_num(ta) * 3).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    nc = F.tensor(np.array([[np.nan, 1.0], [np.inf, 2.0]])).t()
    np.testing.assert_array_equal(
        F.nan_to_num(nc).numpy(),
        tch.nan_to_num(tch.tensor(np.array([[np.nan, 1.0],
                                            [np.inf, 2.0]])).t()).numpy())
