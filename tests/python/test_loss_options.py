"""Loss signatures and options against PyTorch: positional order, class
weights, pos_weight, element weights, legacy size_average / reduce, and
the modules' constructor arguments."""
import inspect
import warnings

import numpy as np
import pytest

import foundry as F
from foundry import nn

# Every loss here is either one fused kernel or a short composition of
# ops in the tensor's dtype; the sums over a few dozen terms differ from
# PyTorch's only by accumulation order: 1e-5 in float32, 1e-12 in float64.
TOL = {"float32": 1e-5, "float64": 1e-12}

LOSS_FNS = ["cross_entropy", "nll_loss", "binary_cross_entropy_with_logits",
            "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]
LOSS_MODULES = ["CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss",
                "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss"]


def _params(fn):
    return [(p.name, p.kind, p.default)
            for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", LOSS_FNS)
def test_functional_signature_is_torchs(tch, name):
    assert _params(getattr(nn.functional, name)) == \
        _params(getattr(tch.nn.functional, name))


@pytest.mark.parametrize("name", LOSS_MODULES)
def test_module_signature_is_torchs(tch, name):
    assert _params(getattr(nn, name).__init__)[1:] == \
        [p for p in _params(getattr(tch.nn, name).__init__)[1:]]


def _close(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got.detach()),
                               want.detach().numpy(), rtol=TOL[dtype],
                               atol=TOL[dtype])


def _ce_inputs(rng, dtype, shape=(6, 4), ignore=-100):
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    y.flat[1] = ignore
    w = rng.uniform(0.2, 2.0, shape[1]).astype(dtype)
    return x, y, w


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5), (4,)])
def test_nll_loss_with_weight(tch, rng, reduction, dtype, shape):
    x, y, w = _ce_inputs(rng, dtype, shape) if len(shape) > 1 else (
        rng.standard_normal(shape).astype(dtype), np.array(2),
        rng.uniform(0.2, 2, shape).astype(dtype))
    fx = F.tensor(x, requires_grad=True)
    tx = tch.tensor(x, requires_grad=True)
    got = nn.functional.nll_loss(fx, F.tensor(y), F.tensor(w),
                                 reduction=reduction)
    want = tch.nn.functional.nll_loss(tx, tch.tensor(y), tch.tensor(w),
                                      reduction=reduction)
    _close(got, want, dtype)
    got.sum().backward()
    want.sum().backward()
    _close(fx.grad, tx.grad, dtype)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5)])
def test_cross_entropy_with_weight(tch, rng, smoothing, reduction, dtype,
                                   shape):
    x, y, w = _ce_inputs(rng, dtype, shape)
    fx = F.tensor(x, requires_grad=True)
    tx = tch.tensor(x, requires_grad=True)
    got = nn.functional.cross_entropy(fx, F.tensor(y), F.tensor(w),
                                      reduction=reduction,
                                      label_smoothing=smoothing)
    want = tch.nn.functional.cross_entropy(tx, tch.tensor(y), tch.tensor(w),
                                           reduction=reduction,
                                           label_smoothing=smoothing)
    _close(got, want, dtype)
    got.sum().backward()
    want.sum().backward()
    _close(fx.grad, tx.grad, dtype)


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_weight_with_probability_target(tch, rng, smoothing):
    x = rng.standard_normal((5, 3))
    p = rng.dirichlet([1, 1, 1], 5)
    w = np.array([0.5, 2.0, 1.0])
    got = nn.functional.cross_entropy(F.tensor(x), F.tensor(p), F.tensor(w),
                                      label_smoothing=smoothing)
    want = tch.nn.functional.cross_entropy(tch.tensor(x), tch.tensor(p),
                                           tch.tensor(w),
                                           label_smoothing=smoothing)
    _close(got, want, "float64")


def test_positional_order_is_torchs(tch, rng):
    x, y, w = _ce_inputs(rng, "float64", ignore=3)
    # weight, size_average, ignore_index, reduce, reduction
    for fn in ("cross_entropy", "nll_loss"):
        got = getattr(nn.functional, fn)(F.tensor(x), F.tensor(y),
                                         F.tensor(w), None, 3, None, "sum")
        want = getattr(tch.nn.functional, fn)(tch.tensor(x), tch.tensor(y),
                                              tch.tensor(w), None, 3, None,
                                              "sum")
        _close(got, want, "float64")
    a, b = rng.standard_normal((2, 3, 4))
    for fn in ("mse_loss", "l1_loss", "smooth_l1_loss"):
        got = getattr(nn.functional, fn)(F.tensor(a), F.tensor(b), None,
                                         None, "sum")
        want = getattr(tch.nn.functional, fn)(tch.tensor(a), tch.tensor(b),
                                              None, None, "sum")
        _close(got, want, "float64")
    _close(nn.functional.huber_loss(F.tensor(a), F.tensor(b), "sum", 0.5),
           tch.nn.functional.huber_loss(tch.tensor(a), tch.tensor(b), "sum",
                                        0.5), "float64")


@pytest.mark.parametrize("size_average,reduce", [
    (None, False), (False, None), (True, True), (False, True), (True, False)])
def test_legacy_size_average_and_reduce(tch, rng, size_average, reduce):
    a, b = rng.standard_normal((2, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tch.nn.functional.mse_loss(tch.tensor(a), tch.tensor(b),
                                          size_average, reduce)
        with pytest.warns(UserWarning):
            got = nn.functional.mse_loss(F.tensor(a), F.tensor(b),
                                         size_average, reduce)
        _close(got, want, "float64")
        m = nn.L1Loss(size_average, reduce)
        tm = tch.nn.L1Loss(size_average, reduce)
    assert m.reduction == tm.reduction


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_weight", [False, True])
def test_bce_with_logits_pos_weight(tch, rng, reduction, dtype,
                                    with_weight):
    x = rng.standard_normal((4, 3)).astype(dtype) * 3
    x[0, 0] = 0.0  # softplus' gradient at 0 is -1/2, not 0
    y = rng.uniform(0, 1, (4, 3)).astype(dtype)
    pw = rng.uniform(0.5, 3, 3).astype(dtype)  # broadcast over the last dim
    w = rng.uniform(0.5, 2, (4, 1)).astype(dtype) if with_weight else None
    fx = F.tensor(x, requires_grad=True)
    fy = F.tensor(y, requires_grad=True)
    tx = tch.tensor(x, requires_grad=True)
    ty = tch.tensor(y, requires_grad=True)
    got = nn.functional.binary_cross_entropy_with_logits(
        fx, fy, None if w is None else F.tensor(w), reduction=reduction,
        pos_weight=F.tensor(pw))
    want = tch.nn.functional.binary_cross_entropy_with_logits(
        tx, ty, None if w is None else tch.tensor(w), reduction=reduction,
        pos_weight=tch.tensor(pw))
    _close(got, want, dtype)
    got.sum().backward()
    want.sum().backward()
    _close(fx.grad, tx.grad, dtype)
    _close(fy.grad, ty.grad, dtype)


def test_bce_with_logits_weight_non_contiguous(tch, rng):
    x = rng.standard_normal((3, 5))
    y = rng.uniform(0, 1, (3, 5))
    w = rng.uniform(0, 2, (5, 3))
    got = nn.functional.binary_cross_entropy_with_logits(
        F.tensor(x), F.tensor(y), F.tensor(w).t())
    want = tch.nn.functional.binary_cross_entropy_with_logits(
        tch.tensor(x), tch.tensor(y), tch.tensor(w).t())
    _close(got, want, "float64")


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pointwise_losses_with_weight(tch, rng, name, reduction):
    a, b, w = rng.standard_normal((3, 4, 5))
    w = np.abs(w)
    fa = F.tensor(a, requires_grad=True)
    ta = tch.tensor(a, requires_grad=True)
    got = getattr(nn.functional, name)(fa, F.tensor(b), reduction=reduction,
                                       weight=F.tensor(w))
    want = getattr(tch.nn.functional, name)(ta, tch.tensor(b),
                                            reduction=reduction,
                                            weight=tch.tensor(w))
    _close(got, want, "float64")
    got.sum().backward()
    want.sum().backward()
    _close(fa.grad, ta.grad, "float64")


def test_loss_modules_take_weights(tch, rng):
    x, y, w = _ce_inputs(rng, "float64", ignore=2)
    for name in ("CrossEntropyLoss", "NLLLoss"):
        m = getattr(nn, name)(weight=F.tensor(w), ignore_index=2)
        tm = getattr(tch.nn, name)(weight=tch.tensor(w), ignore_index=2)
        _close(m(F.tensor(x), F.tensor(y)), tm(tch.tensor(x), tch.tensor(y)),
               "float64")
        assert "weight" in m.state_dict()
    pw = np.array([1.0, 2.0, 3.0, 4.0])
    t = rng.uniform(0, 1, x.shape)
    m = nn.BCEWithLogitsLoss(pos_weight=F.tensor(pw), reduction="sum")
    tm = tch.nn.BCEWithLogitsLoss(pos_weight=tch.tensor(pw),
                                  reduction="sum")
    _close(m(F.tensor(x), F.tensor(t)), tm(tch.tensor(x), tch.tensor(t)),
           "float64")
    assert sorted(m.state_dict()) == sorted(tm.state_dict())


def test_all_ignored_mean_is_nan(tch):
    x = F.zeros(2, 3)
    y = F.tensor([-100, -100])
    w = F.ones(3)
    got = nn.functional.nll_loss(x, y, w)
    want = tch.nn.functional.nll_loss(tch.zeros(2, 3),
                                      tch.tensor([-100, -100]), tch.ones(3))
    assert np.isnan(got.item()) and np.isnan(want.item())


def test_empty_batch(tch):
    got = nn.functional.cross_entropy(F.zeros(0, 3), F.zeros(0,
                                      dtype=F.int64), F.ones(3),
                                      reduction="sum")
    assert got.item() == 0.0


def test_bad_weights_and_targets(tch):
    x, y = F.zeros(2, 3), F.tensor([0, 2])
    with pytest.raises(ValueError, match="weight"):
        nn.functional.nll_loss(x, y, F.ones(4))
    with pytest.raises(TypeError):
        nn.functional.nll_loss(x, y, [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="float"):
        nn.functional.cross_entropy(x, y, F.ones(3, dtype=F.int64))
    with pytest.raises(IndexError):
        tch.nn.functional.nll_loss(tch.zeros(2, 3), tch.tensor([0, 3]),
                                   tch.ones(3))
    with pytest.raises(IndexError):
        nn.functional.nll_loss(x, F.tensor([0, 3]), F.ones(3))
    with pytest.raises(IndexError, match="-1"):
        nn.functional.nll_loss(x, F.tensor([0, -1]), F.ones(3))
    with pytest.raises(ValueError, match="target shape"):
        nn.functional.nll_loss(x, F.tensor([0, 1, 2]), F.ones(3))
    with pytest.raises(ValueError, match="weight shape"):
        nn.functional.mse_loss(x, x, weight=F.ones(3))
    with pytest.raises(ValueError):
        nn.functional.binary_cross_entropy_with_logits(
            x, x, pos_weight=F.ones(4))
    with pytest.raises(ValueError, match="reduction"):
        nn.functional.nll_loss(x, y, F.ones(3), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.functional.cross_entropy(x, y, F.ones(3), label_smoothing=1.5)


def test_weighted_losses_on_the_test_device(tch, rng, test_device):
    x, y, w = _ce_inputs(rng, "float64")
    d = test_device
    for fn in ("cross_entropy", "nll_loss"):
        got = getattr(nn.functional, fn)(F.tensor(x, device=d),
                                         F.tensor(y, device=d),
                                         F.tensor(w, device=d),
                                         label_smoothing=0.1) \
            if fn == "cross_entropy" else \
            getattr(nn.functional, fn)(F.tensor(x, device=d),
                                       F.tensor(y, device=d),
                                       F.tensor(w, device=d))
        want = getattr(tch.nn.functional, fn)(
            tch.tensor(x), tch.tensor(y), tch.tensor(w),
            **({"label_smoothing": 0.1} if fn == "cross_entropy" else {}))
        assert got.device == d
        _close(got.cpu(), want, "float64")
    t = rng.uniform(0, 1, x.shape)
    pw = rng.uniform(0.5, 2, x.shape[1])
    got = nn.functional.binary_cross_entropy_with_logits(
        F.tensor(x, device=d), F.tensor(t, device=d),
        pos_weight=F.tensor(pw, device=d))
    want = tch.nn.functional.binary_cross_entropy_with_logits(
        tch.tensor(x), tch.tensor(t), pos_weight=tch.tensor(pw))
    _close(got.cpu(), want, "float64")
