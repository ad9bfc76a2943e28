"""normalize, binary_cross_entropy, kl_div, cosine_similarity,
pairwise_distance, triplet_margin_loss and their modules against PyTorch:
values and gradients in F32 and F64, broadcast, non-contiguous, 0-d and
empty inputs, the legacy size_average / reduce mapping, and bad input.

Tolerances: F64 to 1e-10 relative (compositions of a few ops round
differently from PyTorch's kernels), F32 to 2e-5 relative / 1e-6
absolute; losses reduced over many elements add their summation order's
rounding, covered by the same bounds at these sizes."""
import warnings

import numpy as np
import pytest

import foundry
import foundry.nn as fnn
import foundry.nn.functional as F

TOL = {"float32": dict(rtol=2e-5, atol=1e-6),
       "float64": dict(rtol=1e-10, atol=1e-12)}


def _compare(tch, fcall, tcall, arrays, dtype, grads=None, transpose=()):
    """fcall(*foundry tensors) against tcall(torch, *torch tensors): the
    value, then the gradients of sum(out * cot) for the inputs listed in
    grads (default all)."""
    grads = range(len(arrays)) if grads is None else grads
    fx, tx = [], []
    for i, a in enumerate(arrays):
        rg = i in grads
        f = foundry.tensor(a, dtype=getattr(foundry, dtype), requires_grad=rg)
        t = tch.tensor(a, dtype=getattr(tch, dtype), requires_grad=rg)
        fx.append(f)
        tx.append(t)
    fi = [f.transpose(0, 1) if i in transpose else f for i, f in enumerate(fx)]
    ti = [t.transpose(0, 1) if i in transpose else t for i, t in enumerate(tx)]
    y, ty = fcall(*fi), tcall(tch, *ti)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(),
                               **TOL[dtype])
    cot = np.random.default_rng(7).standard_normal(tuple(ty.shape))
    (y * foundry.tensor(cot, dtype=y.dtype)).sum().backward()
    (ty * tch.tensor(cot, dtype=ty.dtype)).sum().backward()
    for i in grads:
        np.testing.assert_allclose(fx[i].grad.numpy(), tx[i].grad.numpy(),
                                   **TOL[dtype], err_msg=f"input {i}")


DT = pytest.mark.parametrize("dtype", ["float32", "float64"])
RED = pytest.mark.parametrize("reduction", ["mean", "sum", "none"])


# ------------------------------------------------------------- normalize

@DT
def test_normalize_matches_torch(tch, rng, dtype):
    a = rng.standard_normal((3, 4, 2))
    a[1, :, 0] = 0.0  # a zero vector: the eps clamp, gradient through it
    for p, dim in ((2.0, 1), (1.0, -1), (3.0, 0), (float("inf"), 1)):
        _compare(tch, lambda x: F.normalize(x, p, dim),
                 lambda t, x: t.nn.functional.normalize(x, p, dim),
                 [a], dtype)
    _compare(tch, lambda x: F.normalize(x, dim=0),
             lambda t, x: t.nn.functional.normalize(x, dim=0),
             [rng.standard_normal((4, 3))], dtype, transpose=(0,))


def test_normalize_zero_d_empty_and_bad(tch):
    _compare(tch, lambda x: F.normalize(x, dim=0),
             lambda t, x: t.nn.functional.normalize(x, dim=0),
             [np.array(-2.5)], "float64")
    _compare(tch, F.normalize, lambda t, x: t.nn.functional.normalize(x),
             [np.zeros((0, 3))], "float64")
    with pytest.raises(IndexError, match="dim"):
        F.normalize(foundry.zeros(2, 3), dim=2)
    with pytest.raises(TypeError):
        F.normalize(foundry.zeros(2, 3, dtype=foundry.int64))


# --------------------------------------------------------------- bce

@DT
@RED
def test_binary_cross_entropy_matches_torch(tch, rng, dtype, reduction):
    x = rng.uniform(0.02, 0.98, (4, 3))
    y = rng.uniform(0, 1, (4, 3))
    _compare(tch, lambda a, b: F.binary_cross_entropy(
        a, b, reduction=reduction), lambda t, a, b:
        t.nn.functional.binary_cross_entropy(a, b, reduction=reduction),
        [x, y], dtype)
    w = rng.uniform(0.5, 2, (3,))
    _compare(tch, lambda a, b: F.binary_cross_entropy(
        a, b, foundry.tensor(w, dtype=a.dtype), reduction=reduction),
        lambda t, a, b: t.nn.functional.binary_cross_entropy(
            a, b, t.tensor(w, dtype=a.dtype), reduction=reduction),
        [x, y], dtype, transpose=())


def test_binary_cross_entropy_clamps_log_at_minus_100(tch):
    # x of exactly 0 and 1: the log terms are -100, and the gradient stays
    # finite (PyTorch's rule divides by max(x (1 - x), 1e-12))
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.5])
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.3])
    _compare(tch, lambda a, b: F.binary_cross_entropy(a, b, reduction="none"),
             lambda t, a, b: t.nn.functional.binary_cross_entropy(
                 a, b, reduction="none"), [x, y], "float64", grads=[0])


def test_binary_cross_entropy_non_contiguous_zero_d_empty(tch, rng):
    x = rng.uniform(0.05, 0.95, (3, 4))
    y = rng.uniform(0, 1, (3, 4))
    _compare(tch, F.binary_cross_entropy,
             lambda t, a, b: t.nn.functional.binary_cross_entropy(a, b),
             [x, y], "float64", transpose=(0, 1))
    _compare(tch, F.binary_cross_entropy,
             lambda t, a, b: t.nn.functional.binary_cross_entropy(a, b),
             [np.array(0.3), np.array(0.6)], "float64")
    _compare(tch, lambda a, b: F.binary_cross_entropy(a, b, reduction="sum"),
             lambda t, a, b: t.nn.functional.binary_cross_entropy(
                 a, b, reduction="sum"),
             [np.zeros((0, 2)), np.zeros((0, 2))], "float64")


def test_binary_cross_entropy_bad_input(tch):
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(foundry.tensor([1.5]), foundry.tensor([1.0]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(foundry.tensor([float("nan")]),
                               foundry.tensor([1.0]))
    with pytest.raises(ValueError, match="target size"):
        F.binary_cross_entropy(foundry.full((3,), 0.5), foundry.zeros(1))
    with pytest.raises(ValueError):
        tch.nn.functional.binary_cross_entropy(tch.full((3,), 0.5),
                                               tch.zeros(1))
    with pytest.raises(ValueError, match="weight"):
        F.binary_cross_entropy(foundry.full((3,), 0.5), foundry.zeros(3),
                               foundry.ones(2, 3))
    with pytest.raises(ValueError, match="reduction"):
        F.binary_cross_entropy(foundry.full((3,), 0.5), foundry.zeros(3),
                               reduction="batchmean")


def test_legacy_size_average_and_reduce_map_as_torch(tch, rng):
    x = rng.uniform(0.1, 0.9, (4,))
    y = rng.uniform(0, 1, (4,))
    for sa, rd in ((None, False), (False, None), (True, True), (False, True),
                   (None, True)):
        with pytest.warns(UserWarning, match="size_average"):
            r = F.binary_cross_entropy(foundry.tensor(x), foundry.tensor(y),
                                       size_average=sa, reduce=rd)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = tch.nn.functional.binary_cross_entropy(
                tch.tensor(x), tch.tensor(y), size_average=sa, reduce=rd)
        np.testing.assert_allclose(r.numpy(), tr.numpy(), rtol=1e-12)
    with pytest.warns(UserWarning):
        m = fnn.BCELoss(reduce=False)
    assert m.reduction == "none"


# --------------------------------------------------------------- kl_div

@DT
@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(tch, rng, dtype, reduction, log_target):
    x = np.log(rng.dirichlet(np.ones(5), size=3))
    y = rng.dirichlet(np.ones(5), size=3)
    y[0, 1] = 0.0  # y log y is 0 there
    if log_target:
        y = np.log(y + 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'mean' warns in both
        _compare(tch, lambda a, b: F.kl_div(a, b, reduction=reduction,
                                            log_target=log_target),
                 lambda t, a, b: t.nn.functional.kl_div(
                     a, b, reduction=reduction, log_target=log_target),
                 [x, y], dtype, grads=[0] if not log_target else None)


def test_kl_div_target_gradient_away_from_zero(tch, rng):
    x = np.log(rng.dirichlet(np.ones(4), size=2))
    y = rng.dirichlet(np.ones(4), size=2)
    _compare(tch, lambda a, b: F.kl_div(a, b, reduction="batchmean"),
             lambda t, a, b: t.nn.functional.kl_div(a, b,
                                                    reduction="batchmean"),
             [x, y], "float64")


def test_kl_div_broadcast_zero_d_empty_and_bad(tch, rng):
    x = np.log(rng.dirichlet(np.ones(3), size=2))
    y = rng.dirichlet(np.ones(3))
    _compare(tch, lambda a, b: F.kl_div(a, b, reduction="sum"),
             lambda t, a, b: t.nn.functional.kl_div(a, b, reduction="sum"),
             [x, y], "float64")
    _compare(tch, lambda a, b: F.kl_div(a, b, reduction="batchmean"),
             lambda t, a, b: t.nn.functional.kl_div(
                 a, b, reduction="batchmean"),
             [np.array(-0.5), np.array(0.3)], "float64")
    _compare(tch, lambda a, b: F.kl_div(a, b, reduction="sum"),
             lambda t, a, b: t.nn.functional.kl_div(a, b, reduction="sum"),
             [np.zeros((0, 3)), np.zeros((0, 3))], "float64")
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(foundry.zeros(2), foundry.zeros(2))
    with pytest.raises(ValueError, match="reduction"):
        F.kl_div(foundry.zeros(2), foundry.zeros(2), reduction="avg")
    with pytest.raises(ValueError, match="broadcast"):
        F.kl_div(foundry.zeros(2), foundry.zeros(3), reduction="sum")


# ----------------------------------------------------- distances, triplet

@DT
def test_cosine_similarity_matches_torch(tch, rng, dtype):
    a = rng.standard_normal((3, 5))
    b = rng.standard_normal((3, 5))
    a[0] *= 1e-10  # below eps: the clamped norm, straight-through gradient
    for dim in (1, 0, -1):
        _compare(tch, lambda x, y: F.cosine_similarity(x, y, dim),
                 lambda t, x, y: t.nn.functional.cosine_similarity(x, y, dim),
                 [a, b], dtype)
    _compare(tch, lambda x, y: F.cosine_similarity(x, y, dim=-1),
             lambda t, x, y: t.nn.functional.cosine_similarity(x, y, dim=-1),
             [rng.standard_normal((2, 4)), rng.standard_normal(4)], dtype)
    _compare(tch, lambda x, y: F.cosine_similarity(x, y, 0, eps=0.5),
             lambda t, x, y: t.nn.functional.cosine_similarity(x, y, 0,
                                                               eps=0.5),
             [rng.standard_normal((5, 3)), rng.standard_normal((5, 3))],
             dtype, transpose=(0, 1))


def test_cosine_similarity_zero_d_empty_and_bad(tch, rng):
    _compare(tch, lambda x, y: F.cosine_similarity(x, y, 0),
             lambda t, x, y: t.nn.functional.cosine_similarity(x, y, 0),
             [np.array(-2.0), np.array(3.0)], "float64")
    _compare(tch, F.cosine_similarity,
             lambda t, x, y: t.nn.functional.cosine_similarity(x, y),
             [np.zeros((0, 3)), np.zeros((0, 3))], "float64")
    with pytest.raises(ValueError, match="broadcast"):
        F.cosine_similarity(foundry.zeros(2, 3), foundry.zeros(2, 4))
    with pytest.raises(IndexError, match="dim"):
        F.cosine_similarity(foundry.zeros(2, 3), foundry.zeros(2, 3), 2)


@DT
def test_pairwise_distance_matches_torch(tch, rng, dtype):
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal((4, 3))
    for p in (2.0, 1.0, 3.0, float("inf"), 0.5):
        for keepdim in (False, True):
            _compare(tch, lambda x, y: F.pairwise_distance(
                x, y, p, keepdim=keepdim), lambda t, x, y:
                t.nn.functional.pairwise_distance(x, y, p, keepdim=keepdim),
                [a, b], dtype)
    _compare(tch, F.pairwise_distance, lambda t, x, y:
             t.nn.functional.pairwise_distance(x, y),
             [rng.standard_normal((2, 3)), rng.standard_normal(3)], dtype)
    _compare(tch, F.pairwise_distance, lambda t, x, y:
             t.nn.functional.pairwise_distance(x, y),
             [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))],
             dtype, transpose=(0, 1))


def test_pairwise_distance_zero_d_and_empty(tch, rng):
    for shapes in (((), ()), ((4,), (4,)), ((0, 3), (0, 3)), ((2, 0), (2, 0))):
        _compare(tch, F.pairwise_distance, lambda t, x, y:
                 t.nn.functional.pairwise_distance(x, y),
                 [rng.standard_normal(s) for s in shapes], "float64")


@DT
@RED
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_loss_matches_torch(tch, rng, dtype, reduction, swap):
    a, p, n = (rng.standard_normal((6, 4)) for _ in range(3))
    _compare(tch, lambda x, y, z: F.triplet_margin_loss(
        x, y, z, margin=2.0, swap=swap, reduction=reduction),
        lambda t, x, y, z: t.nn.functional.triplet_margin_loss(
            x, y, z, margin=2.0, swap=swap, reduction=reduction),
        [a, p, n], dtype)
    _compare(tch, lambda x, y, z: F.triplet_margin_loss(x, y, z, p=1),
             lambda t, x, y, z: t.nn.functional.triplet_margin_loss(
                 x, y, z, p=1), [a, p, n], dtype)


def test_triplet_margin_loss_bad_input(tch):
    z2, z1 = foundry.zeros(2, 3), foundry.zeros(3)
    with pytest.raises(ValueError, match="same number of dimensions"):
        F.triplet_margin_loss(z2, z1, z2)
    with pytest.raises(ValueError, match="margin"):
        F.triplet_margin_loss(z2, z2, z2, margin=-1.0)
    with pytest.raises(ValueError, match="margin"):
        fnn.TripletMarginLoss(margin=0.0)


# ---------------------------------------------------------------- modules

def test_modules_match_torch(tch, rng):
    x = rng.uniform(0.1, 0.9, (3, 4))
    y = rng.uniform(0, 1, (3, 4))
    w = rng.uniform(0.5, 1.5, (4,))
    cases = [
        ("BCELoss", dict(reduction="sum"), (x, y)),
        ("KLDivLoss", dict(reduction="batchmean"), (np.log(x), y)),
        ("KLDivLoss", dict(reduction="sum", log_target=True),
         (np.log(x), np.log(y))),
        ("CosineSimilarity", dict(dim=0, eps=1e-6), (x, y)),
        ("PairwiseDistance", dict(p=1.5, keepdim=True), (x, y)),
        ("TripletMarginLoss", dict(margin=0.5, swap=True), (x, y, y[::-1])),
    ]
    for name, kw, args in cases:
        r = getattr(fnn, name)(**kw)(*[foundry.tensor(np.ascontiguousarray(a))
                                       for a in args])
        tr = getattr(tch.nn, name)(**kw)(*[tch.tensor(a.copy())
                                           for a in args])
        np.testing.assert_allclose(r.numpy(), tr.numpy(), rtol=1e-10,
                                   err_msg=name)
    r = fnn.BCELoss(weight=foundry.tensor(w))(foundry.tensor(x),
                                              foundry.tensor(y))
    tr = tch.nn.BCELoss(weight=tch.tensor(w))(tch.tensor(x), tch.tensor(y))
    np.testing.assert_allclose(r.numpy(), tr.numpy(), rtol=1e-10)


def test_top_level_distances_as_torch(tch, rng):
    a, b = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    np.testing.assert_allclose(
        foundry.cosine_similarity(foundry.tensor(a), foundry.tensor(b)).numpy(),
        tch.cosine_similarity(tch.tensor(a), tch.tensor(b)).numpy(),
        rtol=1e-12)
    np.testing.assert_allclose(
        foundry.pairwise_distance(foundry.tensor(a), foundry.tensor(b),
                                  1.0).numpy(),
        tch.pairwise_distance(tch.tensor(a), tch.tensor(b), 1.0).numpy(),
        rtol=1e-12)


# ------------------------------------------------- margin and count losses

def _pm1(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


@DT
@RED
def test_margin_losses_match_torch(tch, rng, dtype, reduction):
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    y = _pm1(rng, (5, 3))
    _compare(tch, lambda x1, x2, t: F.margin_ranking_loss(
        x1, x2, t, 0.3, reduction=reduction), lambda tc, x1, x2, t:
        tc.nn.functional.margin_ranking_loss(x1, x2, t, 0.3,
                                             reduction=reduction),
        [a, b, y], dtype, grads=[0, 1])
    _compare(tch, lambda x1, x2, t: F.margin_ranking_loss(
        x1, x2, t, reduction=reduction), lambda tc, x1, x2, t:
        tc.nn.functional.margin_ranking_loss(x1, x2, t, reduction=reduction),
        [a, b[:1], y], dtype, grads=[0, 1])
    yh = y.copy()
    yh[0, 0] = 0.5  # neither 1 nor -1: both terms, as PyTorch
    _compare(tch, lambda x, t: F.hinge_embedding_loss(
        x, t, 0.8, reduction=reduction), lambda tc, x, t:
        tc.nn.functional.hinge_embedding_loss(x, t, 0.8,
                                              reduction=reduction),
        [a, yh], dtype, grads=[0])
    _compare(tch, lambda x, t: F.soft_margin_loss(x, t, reduction=reduction),
             lambda tc, x, t: tc.nn.functional.soft_margin_loss(
                 x, t, reduction=reduction), [a * 3, y], dtype, grads=[0])
    _compare(tch, lambda x1, x2, t: F.cosine_embedding_loss(
        x1, x2, t, 0.2, reduction=reduction), lambda tc, x1, x2, t:
        tc.nn.functional.cosine_embedding_loss(x1, x2, t, 0.2,
                                               reduction=reduction),
        [a, b, _pm1(rng, 5)], dtype, grads=[0, 1])
    _compare(tch, lambda x1, x2, t: F.cosine_embedding_loss(
        x1, x2, t, reduction=reduction), lambda tc, x1, x2, t:
        tc.nn.functional.cosine_embedding_loss(x1, x2, t,
                                               reduction=reduction),
        [a[0], b[0], np.array(-1.0)], dtype, grads=[0, 1])


@DT
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss_matches_torch(tch, rng, dtype, log_input, full):
    x = rng.standard_normal((4, 3)) if log_input else \
        rng.uniform(0.1, 3, (4, 3))
    y = rng.poisson(2.0, (4, 3)).astype(np.float64)
    y[0, 0] = 1.0  # the Stirling term's boundary (excluded: y > 1)
    for reduction in ("mean", "sum", "none"):
        _compare(tch, lambda a, b: F.poisson_nll_loss(
            a, b, log_input, full, reduction=reduction), lambda t, a, b:
            t.nn.functional.poisson_nll_loss(a, b, log_input, full,
                                             reduction=reduction),
            [x, y], dtype, grads=[0])


def test_margin_losses_non_contiguous_empty_and_bad(tch, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    y = _pm1(rng, (3, 4))
    _compare(tch, F.soft_margin_loss,
             lambda t, x, z: t.nn.functional.soft_margin_loss(x, z),
             [a, y], "float64", grads=[0], transpose=(0, 1))
    _compare(tch, lambda x1, x2, t: F.margin_ranking_loss(
        x1, x2, t, reduction="sum"), lambda tc, x1, x2, t:
        tc.nn.functional.margin_ranking_loss(x1, x2, t, reduction="sum"),
        [np.zeros((0, 2))] * 3, "float64", grads=[0, 1])
    with pytest.raises(ValueError, match="same number of dims"):
        F.margin_ranking_loss(foundry.zeros(3), foundry.zeros(3, 1),
                              foundry.zeros(3))
    with pytest.raises(ValueError, match="multi-target"):
        F.cosine_embedding_loss(foundry.zeros(2, 3), foundry.zeros(2, 3),
                                foundry.ones(2, 1))
    with pytest.raises(ValueError, match="2-d inputs"):
        F.cosine_embedding_loss(foundry.zeros(2, 3, 4),
                                foundry.zeros(2, 3, 4), foundry.ones(2))
    with pytest.raises(TypeError, match="float"):
        F.soft_margin_loss(foundry.zeros(3), foundry.ones(3,
                                                          dtype=foundry.int64))


def test_soft_margin_loss_finite_past_exp_range():
    # PyTorch's log1p(exp(100)) is inf in float32; the loss is 100
    r = F.soft_margin_loss(foundry.tensor([-100.0]), foundry.tensor([1.0]))
    np.testing.assert_allclose(r.numpy(), 100.0, rtol=1e-7)


def test_margin_loss_modules_match_torch(tch, rng):
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    y = _pm1(rng, (4, 3))
    cases = [("MarginRankingLoss", dict(margin=0.1), (a, b, y)),
             ("HingeEmbeddingLoss", dict(margin=0.5), (a, y)),
             ("SoftMarginLoss", dict(reduction="sum"), (a, y)),
             ("CosineEmbeddingLoss", dict(margin=0.1), (a, b, y[:, 0])),
             ("PoissonNLLLoss", dict(full=True), (a, np.abs(b) * 3))]
    for name, kw, args in cases:
        r = getattr(fnn, name)(**kw)(*[foundry.tensor(np.ascontiguousarray(x))
                                       for x in args])
        tr = getattr(tch.nn, name)(**kw)(*[tch.tensor(x.copy())
                                           for x in args])
        np.testing.assert_allclose(r.numpy(), tr.numpy(), rtol=1e-10,
                                   err_msg=name)


def test_on_the_test_device_equal_the_cpu(test_device, rng):
    # composed of recorded ops, so a device runs the CPU's kernels in the
    # same order: results and gradients are bitwise the CPU's
    a = rng.standard_normal((3, 4))
    b = rng.uniform(0.1, 0.9, (3, 4))
    w = rng.standard_normal(4)
    calls = [lambda x, y: F.mish(x), lambda x, y: F.hardswish(x),
             lambda x, y: F.logsigmoid(x), lambda x, y: F.glu(x),
             lambda x, y: F.elu(x), lambda x, y: F.softmin(x, 0),
             lambda x, y: F.prelu(x.reshape(3, 4, 1),
                                  foundry.tensor(w).to(x.device)),
             lambda x, y: F.rrelu(x), lambda x, y: F.normalize(x),
             lambda x, y: F.binary_cross_entropy(y, y.detach()),
             lambda x, y: F.kl_div(x, y, reduction="batchmean"),
             lambda x, y: F.cosine_similarity(x, y),
             lambda x, y: F.triplet_margin_loss(x, y, x * 2),
             lambda x, y: F.cosine_embedding_loss(x, y, x[:, 0].sign()),
             lambda x, y: F.poisson_nll_loss(x, y, full=True)]
    for i, f in enumerate(calls):
        out = []
        for dev in ("cpu", test_device):
            x = foundry.tensor(a).to(dev).requires_grad_()
            y = foundry.tensor(b).to(dev).requires_grad_()
            r = f(x, y)
            r.sum().backward()
            out.append([r.detach().cpu().numpy()] +
                       [None if t.grad is None else t.grad.cpu().numpy()
                        for t in (x, y)])
        assert out[0][1] is not None or out[0][2] is not None
        for u, v in zip(*out):
            assert (u is None) == (v is None)
            if u is not None:
                np.testing.assert_array_equal(u, v, err_msg=f"call {i}")


@DT
@RED
def test_gaussian_nll_loss_matches_torch(tch, rng, dtype, reduction):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    v = rng.uniform(0.2, 2.0, (3, 4))
    v[0, 0] = 1e-9  # below eps: the clamped value, var's own gradient
    for full in (False, True):
        for var in (v, v[:, 0], v[:, :1], v[:1]):
            _compare(tch, lambda a, b, c: F.gaussian_nll_loss(
                a, b, c, full, reduction=reduction), lambda t, a, b, c:
                t.nn.functional.gaussian_nll_loss(a, b, c, full,
                                                  reduction=reduction),
                [x, y, np.ascontiguousarray(var)], dtype)
    r = F.gaussian_nll_loss(foundry.tensor(x), foundry.tensor(y), 0.5)
    tr = tch.nn.functional.gaussian_nll_loss(tch.tensor(x), tch.tensor(y),
                                             0.5)
    np.testing.assert_allclose(r.numpy(), tr.numpy(), rtol=1e-12)


def test_gaussian_nll_loss_bad_input(tch):
    x = foundry.zeros(3, 4)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, x, -foundry.ones(3, 4))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(x, x, foundry.ones(2, 4))
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(x, x, foundry.ones(1, 1))
    with pytest.raises(ValueError):
        tch.nn.functional.gaussian_nll_loss(tch.zeros(3, 4), tch.zeros(3, 4),
                                            tch.ones(1, 1))
    m = fnn.GaussianNLLLoss(full=True, reduction="sum")
    tm_ = tch.nn.GaussianNLLLoss(full=True, reduction="sum")
    v = np.full((3, 4), 0.7)
    np.testing.assert_allclose(
        m(x, x + 1, foundry.tensor(v, dtype=foundry.float32)).numpy(),
        tm_(tch.zeros(3, 4), tch.ones(3, 4), tch.tensor(v,
                                                       dtype=tch.float32)),
        rtol=1e-6)
