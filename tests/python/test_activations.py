"""The activations of foundry.nn.functional (_functional_act.py) and their
modules against PyTorch: values and gradients in F32 and F64, on
non-contiguous, 0-d and empty inputs, and the errors of bad input.

Tolerances: F64 results agree to 1e-10 relative (the compositions round
differently from PyTorch's fused kernels, a few ulps per step); F32 to
2e-5 relative / 1e-6 absolute (F32 ulps through up to five ops)."""
import numpy as np
import pytest

import foundry
import foundry.nn as fnn
import foundry.nn.functional as F

TOL = {"float32": dict(rtol=2e-5, atol=1e-6),
       "float64": dict(rtol=1e-10, atol=1e-12)}

# name -> (foundry call, torch call); x is the only tensor argument.
ACTS = {
    "elu": (lambda x: F.elu(x), None),
    "elu_alpha": (lambda x: F.elu(x, 0.7), lambda t, x: t.nn.functional.elu(
        x, 0.7)),
    "selu": (F.selu, None),
    # alpha 0.5: PyTorch's celu backward rounds 1 / alpha to float, so an
    # alpha whose reciprocal is exact keeps its F64 gradient comparable
    "celu": (lambda x: F.celu(x, alpha=0.5), lambda t, x:
             t.nn.functional.celu(x, alpha=0.5)),
    "relu6": (F.relu6, None),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda t, x:
                 t.nn.functional.hardtanh(x, -0.5, 2.0)),
    "hardsigmoid": (F.hardsigmoid, None),
    "hardswish": (F.hardswish, None),
    "mish": (F.mish, None),
    "softsign": (F.softsign, None),
    "logsigmoid": (F.logsigmoid, None),
    "softmin": (lambda x: F.softmin(x, dim=-1), lambda t, x:
                t.nn.functional.softmin(x, dim=-1)),
    "glu": (lambda x: F.glu(x, 0), lambda t, x: t.nn.functional.glu(x, 0)),
    "rrelu": (lambda x: F.rrelu(x, 0.1, 0.3), lambda t, x:
              t.nn.functional.rrelu(x, 0.1, 0.3)),
    "threshold": (lambda x: F.threshold(x, 0.2, -4.0), lambda t, x:
                  t.nn.functional.threshold(x, 0.2, -4.0)),
    "tanhshrink": (F.tanhshrink, None),
    "softshrink": (lambda x: F.softshrink(x, 0.7), lambda t, x:
                   t.nn.functional.softshrink(x, 0.7)),
    "hardshrink": (lambda x: F.hardshrink(x, lambd=0.3), lambda t, x:
                   t.nn.functional.hardshrink(x, lambd=0.3)),
}


# PyTorch's F64 hardsigmoid backward multiplies by 1/6 rounded to float
# (relative error 3e-8), so its gradient is compared at float precision.
GRAD_TOL = {"hardsigmoid": dict(rtol=1e-7, atol=1e-12)}


def _torch_fn(name):
    f, tf = ACTS[name]
    if tf is None:
        return lambda t, x: getattr(t.nn.functional, name)(x)
    return tf


def _pair(tch, a, dtype):
    x = foundry.tensor(a, dtype=getattr(foundry, dtype), requires_grad=True)
    tx = tch.tensor(a, dtype=getattr(tch, dtype), requires_grad=True)
    return x, tx


def _compare(tch, fcall, tcall, a, dtype, transpose=False, gtol=None):
    x, tx = _pair(tch, a, dtype)
    xi, txi = (x.transpose(0, 1), tx.transpose(0, 1)) if transpose else \
        (x, tx)
    y, ty = fcall(xi), tcall(tch, txi)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(),
                               **TOL[dtype])
    cot = np.random.default_rng(7).standard_normal(tuple(ty.shape))
    (y * foundry.tensor(cot, dtype=y.dtype)).sum().backward()
    (ty * tch.tensor(cot, dtype=ty.dtype)).sum().backward()
    tol = gtol if gtol and dtype == "float64" else TOL[dtype]
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_matches_torch(tch, rng, name, dtype):
    # values spread over every branch: |x| up to ~9 covers relu6's 6 and
    # the hard* corners; exact corners (measure zero) are excluded below
    a = rng.standard_normal((6, 4)) * 3
    a[0, :4] = [0.05, -30.0, 40.0, -0.01]
    _compare(tch, ACTS[name][0], _torch_fn(name), a, dtype,
             gtol=GRAD_TOL.get(name))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_non_contiguous(tch, rng, name, dtype):
    a = rng.standard_normal((4, 6)) * 3
    _compare(tch, ACTS[name][0], _torch_fn(name), a, dtype, transpose=True,
             gtol=GRAD_TOL.get(name))


@pytest.mark.parametrize("name", sorted(set(ACTS) - {"glu"}))
def test_activation_zero_d_and_empty(tch, name):
    _compare(tch, ACTS[name][0], _torch_fn(name), np.array(-0.75),
             "float64", gtol=GRAD_TOL.get(name))
    _compare(tch, ACTS[name][0], _torch_fn(name), np.zeros((0, 3)),
             "float64")


def test_glu_empty_and_odd(tch):
    _compare(tch, ACTS["glu"][0], _torch_fn("glu"), np.zeros((4, 0)),
             "float64")
    with pytest.raises(ValueError, match="even"):
        F.glu(foundry.zeros(3), 0)
    with pytest.raises(ValueError, match="0-d"):
        F.glu(foundry.tensor(1.0))


def test_large_inputs_stay_finite(tch):
    # logsigmoid(-200) is -200 (log(sigmoid) would give -inf); mish,
    # softplus-based, of 1e4 is 1e4; elu/selu/celu of 1e4 do not overflow
    # into their gradients
    a = np.array([-200.0, -50.0, 50.0, 1e4])
    for name in ("logsigmoid", "mish", "elu", "selu", "celu", "softsign"):
        _compare(tch, ACTS[name][0], _torch_fn(name), a, "float32")
        _compare(tch, ACTS[name][0], _torch_fn(name), a, "float64")


def test_nan_propagates_as_in_torch(tch):
    a = np.array([np.nan, 1.0, -1.0])
    for name in sorted(set(ACTS) - {"glu", "softmin"}):
        y = ACTS[name][0](foundry.tensor(a)).numpy()
        ty = _torch_fn(name)(tch, tch.tensor(a)).numpy()
        np.testing.assert_array_equal(np.isnan(y), np.isnan(ty), err_msg=name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_prelu_matches_torch(tch, rng, dtype):
    for shape, k in (((2, 3, 4), 3), ((2, 3, 4), 1), ((5,), 1), ((), 1),
                     ((2, 3), 3), ((0, 3), 3)):
        a = rng.standard_normal(shape)
        w = rng.standard_normal(k)
        x, tx = _pair(tch, a, dtype)
        wf, tw = _pair(tch, w, dtype)
        y, ty = F.prelu(x, wf), tch.nn.functional.prelu(tx, tw)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(),
                                   **TOL[dtype])
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(),
                                   **TOL[dtype])
        np.testing.assert_allclose(wf.grad.numpy(), tw.grad.numpy(),
                                   **TOL[dtype])


def test_prelu_bad_weight():
    with pytest.raises(ValueError, match="channel size 3"):
        F.prelu(foundry.zeros(2, 3), foundry.zeros(2))
    with pytest.raises(ValueError, match="channel size 1"):
        F.prelu(foundry.zeros(5), foundry.zeros(5))
    with pytest.raises(TypeError):
        F.prelu(foundry.zeros(2, 3), foundry.zeros(3, dtype=foundry.float64))


def test_bad_parameters_raise_like_torch(tch):
    x = foundry.zeros(3)
    with pytest.raises(ValueError, match="min_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(ValueError):
        tch.nn.functional.hardtanh(tch.zeros(3), 2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha"):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="lambd"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="lower"):
        F.rrelu(x, 0.5, 0.1)
    with pytest.raises(TypeError, match="float"):
        F.elu(foundry.zeros(3, dtype=foundry.int64))
    with pytest.raises(TypeError):
        F.mish([1.0])
    with pytest.raises(IndexError, match="dim"):
        F.softmin(x, 3)


def test_rrelu_training_draws_slopes_in_range():
    foundry.manual_seed(3)
    x = -foundry.ones(1000, dtype=foundry.float64)
    y = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    slopes = -y
    assert slopes.min() >= 0.1 and slopes.max() < 0.3
    assert slopes.std() > 0.03  # drawn per element, not one value
    g = foundry.Generator().manual_seed(5)
    a = F.rrelu(x, 0.1, 0.3, True, generator=g).numpy()
    g = foundry.Generator().manual_seed(5)
    b = F.rrelu(x, 0.1, 0.3, True, generator=g).numpy()
    np.testing.assert_array_equal(a, b)
    pos = foundry.ones(4)
    np.testing.assert_array_equal(F.rrelu(pos, training=True).numpy(),
                                  np.ones(4))


def test_rrelu_training_gradient_is_the_slope():
    x = foundry.tensor(-np.ones(50), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy() / -1.0)


def test_inplace_writes_into_input(tch, rng):
    a = rng.standard_normal(8)
    for name in ("elu", "selu", "celu", "relu6", "hardtanh", "hardsigmoid",
                 "hardswish", "mish"):
        x = foundry.tensor(a)
        r = getattr(F, name)(x, inplace=True)
        assert r is x
        ref = getattr(tch.nn.functional, name)(tch.tensor(a))
        np.testing.assert_allclose(x.numpy(), ref.numpy(), rtol=1e-12)
    x = foundry.tensor(a)
    assert F.threshold(x, 0.0, 9.0, inplace=True) is x
    np.testing.assert_array_equal(x.numpy(), np.where(a <= 0, 9.0, a))
    leaf = foundry.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError):
        F.elu(leaf, inplace=True)


def test_softmin_implicit_dim_warns(tch, rng):
    a = rng.standard_normal((2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        y = F.softmin(foundry.tensor(a))
    ref = tch.nn.functional.softmin(tch.tensor(a), dim=1)
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-12)
    y = F.softmin(foundry.tensor(a, dtype=foundry.float32), 0,
                  dtype=foundry.float64)
    assert y.dtype is foundry.float64


MODULES = [("ELU", dict(alpha=0.5)), ("SELU", {}), ("CELU", dict(alpha=2.)),
           ("ReLU6", {}), ("Hardtanh", dict(min_val=-2., max_val=0.5)),
           ("Hardsigmoid", {}), ("Hardswish", {}), ("Mish", {}),
           ("Softsign", {}), ("LogSigmoid", {}), ("Softmin", dict(dim=1)),
           ("GLU", dict(dim=1)), ("Tanhshrink", {}),
           ("Threshold", dict(threshold=0.1, value=2.)),
           ("Softshrink", dict(lambd=0.2)), ("Hardshrink", dict(lambd=0.2))]


@pytest.mark.parametrize("name,kw", MODULES)
def test_modules_match_torch(tch, rng, name, kw):
    a = rng.standard_normal((3, 4)) * 3
    y = getattr(fnn, name)(**kw)(foundry.tensor(a))
    ty = getattr(tch.nn, name)(**kw)(tch.tensor(a))
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-10)


def test_prelu_module_learns_its_weight(tch, rng):
    m = fnn.PReLU(3, init=0.1)
    tm_ = tch.nn.PReLU(3, init=0.1)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    a = rng.standard_normal((2, 3, 5)).astype(np.float32)
    y = m(foundry.tensor(a))
    ty = tm_(tch.tensor(a))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(),
                               rtol=1e-6)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(),
                               tm_.weight.grad.numpy(), rtol=1e-5)


def test_rrelu_module_eval_and_train(tch, rng):
    a = rng.standard_normal(20)
    m = fnn.RReLU(0.1, 0.2).eval()
    np.testing.assert_allclose(m(foundry.tensor(a)).numpy(),
                               tch.nn.RReLU(0.1, 0.2).eval()(
                                   tch.tensor(a)).numpy(), rtol=1e-12)
    m.train()
    y = m(foundry.tensor(-np.abs(a))).numpy()
    assert np.all((y <= -0.1 * np.abs(a) + 1e-12) &
                  (y >= -0.2 * np.abs(a) - 1e-12))


def test_top_level_names_and_methods_as_torch(tch, rng):
    a = rng.standard_normal((2, 3))
    w = rng.standard_normal(3)
    x, tx = foundry.tensor(a), tch.tensor(a)
    for f, tf in ((lambda x: x.hardshrink(0.4), lambda x: x.hardshrink(0.4)),
                  (lambda x: x.prelu(foundry.tensor(w)),
                   lambda x: x.prelu(tch.tensor(w))),
                  (lambda x: foundry.selu(x), tch.selu),
                  (lambda x: foundry.celu(x, 0.5), lambda x: tch.celu(x, 0.5)),
                  (lambda x: foundry.threshold(x, 0.1, 3.0),
                   lambda x: tch.threshold(x, 0.1, 3.0)),
                  (lambda x: foundry.hardshrink(x), tch.hardshrink),
                  (lambda x: foundry.prelu(x, foundry.tensor(w)),
                   lambda x: tch.prelu(x, tch.tensor(w)))):
        np.testing.assert_allclose(f(x).numpy(), tf(tx).numpy(), rtol=1e-12)


def test_underscore_forms_write_into_the_input(tch, rng):
    a = rng.standard_normal(6) * 3
    for name, args in (("elu_", (0.5,)), ("selu_", ()), ("celu_", (2.0,)),
                       ("hardtanh_", (-0.5, 0.5)), ("rrelu_", (0.1, 0.2)),
                       ("threshold_", (0.3, -1.0))):
        x = foundry.tensor(a)
        assert getattr(F, name)(x, *args) is x
        ref = getattr(tch.nn.functional, name)(tch.tensor(a), *args)
        np.testing.assert_allclose(x.numpy(), ref.numpy(), rtol=1e-12,
                                   err_msg=name)
