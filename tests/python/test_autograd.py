"""Autograd against PyTorch: the same expression, the same inputs, the
same gradients.  float64 throughout, so the comparison is at 1e-10
(different but exact-in-double formulas agree to a few ulps)."""
import numpy as np
import pytest

import foundry as F

TOL = 1e-10


def pair(tch, a, requires_grad=True):
    f = F.tensor(a, dtype=F.float64, requires_grad=requires_grad)
    t = tch.tensor(a, dtype=tch.float64, requires_grad=requires_grad)
    return f, t


EXPRS = {
    "poly": lambda m, x, y: ((x * y + x ** 2) / (y * y + 1)).sum(),
    "exp_log": lambda m, x, y: (m.exp(x) * m.log(y.abs() + 1)).mean(),
    "tanh_sigmoid": lambda m, x, y: (m.tanh(x) - m.sigmoid(y)).pow(2).sum(),
    "matmul": lambda m, x, y: (x @ y.T).relu().sum(),
    "broadcast": lambda m, x, y: (x[:, :1] * y[0]).sum(),
    "reductions": lambda m, x, y: (x.max(1).values + y.mean(0).sum() +
                                   x.std() + m.logsumexp(y, 1).sum()).sum(),
    "views": lambda m, x, y: (x.T.reshape(-1)[1::2] *
                              y.permute(1, 0).flatten()[:6]).sum(),
    "softmax_ce": lambda m, x, y: -(x.log_softmax(1) * y.softmax(1)).sum(),
    "where": lambda m, x, y: m.where(x > 0, x * 3, y).sum(),
    "cat_stack": lambda m, x, y: (m.cat([x, y], 0) ** 2).sum() +
    m.stack([x, y]).prod(0).sum(),
    "index": lambda m, x, y: (x[[0, 2, 2]] * y[1:4]).sum(),
    "norms": lambda m, x, y: x.norm() + y.norm(1, dim=1).sum(),
    "clamp_gelu": lambda m, x, y: (x.clamp(-0.5, 0.5) +
                                   m.nn.functional.gelu(y)).sum(),
}


@pytest.mark.parametrize("name", sorted(EXPRS))
def test_gradients_match_pytorch(name, tch, rng):
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal((4, 3))
    fx, tx = pair(tch, a)
    fy, ty = pair(tch, b)
    fl = EXPRS[name](F, fx, fy)
    tl = EXPRS[name](tch, tx, ty)
    np.testing.assert_allclose(fl.item(), tl.item(), rtol=TOL)
    fl.backward()
    tl.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=TOL,
                               atol=TOL)
    np.testing.assert_allclose(fy.grad.numpy(), ty.grad.numpy(), rtol=TOL,
                               atol=TOL)


def test_backward_with_gradient_and_retain_graph(tch, rng):
    a = rng.standard_normal((3, 2))
    fx, tx = pair(tch, a)
    g = rng.standard_normal((3, 2))
    fy, ty = fx * fx, tx * tx
    fy.backward(F.tensor(g), retain_graph=True)
    ty.backward(tch.tensor(g), retain_graph=True)
    fy.backward(F.tensor(g))
    ty.backward(tch.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=TOL)
    with pytest.raises(F.FoundryError):
        fy.backward(F.tensor(g))  # the graph was released


def test_retain_grad_and_grad_fn():
    x = F.ones(3, requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.grad_fn is not None and y.grad_fn.name() == "MulBackward"
    assert not y.is_leaf and x.is_leaf
    y.sum().backward()
    assert y.grad.tolist() == [1, 1, 1] and x.grad.tolist() == [2, 2, 2]
    x.grad = None
    assert x.grad is None
    x.grad = F.full((3,), 5.0)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [6, 6, 6]
    with pytest.raises(ValueError):
        x.grad = F.ones(4)


def test_no_grad_as_context_and_decorator():
    x = F.ones(2, requires_grad=True)
    with F.no_grad():
        assert not F.is_grad_enabled()
        y = x * 2
        with F.enable_grad():
            assert (x * 2).requires_grad
    assert F.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None

    @F.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad and F.is_grad_enabled()
    with F.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert F.is_grad_enabled()
    try:
        with F.no_grad():
            raise KeyError
    except KeyError:
        pass
    assert F.is_grad_enabled()  # restored on exceptions too


def test_in_place_rules_follow_pytorch():
    w = F.ones(3, requires_grad=True)
    with pytest.raises(F.FoundryError, match="requires grad"):
        w.add_(1)
    with F.no_grad():
        w.add_(1)  # parameter updates go through no_grad
    assert w.tolist() == [2, 2, 2]
    a = F.ones(3, requires_grad=True)
    b = a * 1
    c = b * b  # saves b for backward
    b2 = b.detach()
    b2.add_(1)  # modifies what mul saved
    with pytest.raises(F.FoundryError, match="modified"):
        c.sum().backward()
    with pytest.raises(F.FoundryError):
        F.ones(2, dtype=F.int64).requires_grad_()
    with pytest.raises(F.FoundryError, match="numpy"):
        F.ones(2, requires_grad=True).numpy()
    assert F.ones(2, requires_grad=True).detach().numpy().tolist() == [1, 1]


def test_gradient_accumulates_over_micro_batches(tch, rng):
    x = rng.standard_normal((8, 4))
    w0 = rng.standard_normal((4,))
    w = F.tensor(w0, requires_grad=True)
    for half in (x[:4], x[4:]):
        ((F.tensor(half) @ w) ** 2).sum().backward()
    full = F.tensor(w0, requires_grad=True)
    ((F.tensor(x) @ full) ** 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), full.grad.numpy(), rtol=1e-12)
