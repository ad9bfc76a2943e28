"""inplace=True: the result is written into the input, which is returned.

As in PyTorch: the write goes through the input's memory (views write into
their base), the version counter moves (a value saved for backward and
overwritten afterwards makes backward fail, never a silent wrong
gradient), and a leaf that requires grad is refused.  Where Foundry
differs: a tensor in the autograd graph (a non-leaf that requires grad)
cannot be written in place by the C library, so inplace=True raises
NotImplementedError there instead of rebasing its history.

Values are compared exactly with the out-of-place form (the same C
kernels run); float64 gradients against PyTorch at 1e-12."""
import numpy as np
import pytest

import foundry as F
from foundry import nn
from foundry.nn import functional as NF

# name -> (foundry call with inplace, the same op out of place)
CASES = {
    "relu": (lambda x: NF.relu(x, inplace=True), lambda x: NF.relu(x)),
    "silu": (lambda x: NF.silu(x, inplace=True), lambda x: NF.silu(x)),
    "leaky_relu": (lambda x: NF.leaky_relu(x, inplace=True),
                   lambda x: NF.leaky_relu(x)),
    "leaky_relu(0.2)": (lambda x: NF.leaky_relu(x, 0.2, True),
                        lambda x: NF.leaky_relu(x, 0.2)),
    "dropout": (lambda x: NF.dropout(
        x, 0.5, inplace=True, generator=F.Generator().manual_seed(1)),
        lambda x: NF.dropout(x, 0.5, generator=F.Generator().manual_seed(1))),
    "ReLU": (nn.ReLU(inplace=True), nn.ReLU()),
    "SiLU": (nn.SiLU(inplace=True), nn.SiLU()),
    "LeakyReLU": (nn.LeakyReLU(0.3, inplace=True), nn.LeakyReLU(0.3)),
    "Sigmoid": (nn.Sigmoid(inplace=True), nn.Sigmoid()),
    "Tanh": (nn.Tanh(inplace=True), nn.Tanh()),
    "Dropout": (lambda x: nn.Dropout(0.5, inplace=True)(x),
                lambda x: nn.Dropout(0.5)(x)),
}


def data(rng, shape=(4, 6)):
    return rng.standard_normal(shape)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_result_is_written_into_the_input(name, rng):
    inplace, plain = CASES[name]
    a = data(rng)
    if name == "Dropout":
        F.manual_seed(4)
    want = plain(F.tensor(a)).numpy()
    if name == "Dropout":
        F.manual_seed(4)
    x = F.tensor(a)
    addr = x.data_ptr()
    assert inplace(x) is x
    assert x.data_ptr() == addr
    np.testing.assert_array_equal(x.numpy(), want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_view_writes_into_its_base(name, rng):
    inplace, plain = CASES[name]
    a = data(rng)
    base = F.tensor(a)
    if name == "Dropout":
        F.manual_seed(4)
    want = a.copy()
    want[:, 1:5:2] = plain(F.tensor(a)[:, 1:5:2]).numpy()
    if name == "Dropout":
        F.manual_seed(4)
    view = base[:, 1:5:2]  # not contiguous
    assert inplace(view) is view
    np.testing.assert_array_equal(base.numpy(), want)


def test_modules_show_inplace_in_their_repr():
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.ReLU()) == "ReLU()"
    assert "inplace=True" in repr(nn.Dropout(0.1, inplace=True))


def test_an_overwritten_saved_value_makes_backward_fail(tch, rng):
    a, b = data(rng), data(rng)
    for lib, error in ((F, F.FoundryError), (tch, RuntimeError)):
        fn = lib.nn.functional
        x = lib.tensor(a)
        w = lib.tensor(b, requires_grad=True)
        z = x * w  # saves x for w's gradient
        fn.relu(x, inplace=True)
        with pytest.raises(error, match="modified"):
            z.sum().backward()


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "silu"])
def test_gradients_through_values_computed_in_place_match_torch(name, tch,
                                                                rng):
    # The activation runs in place on a tensor autograd does not track;
    # its result then feeds a graph whose gradients must match PyTorch's.
    a, b = data(rng), data(rng, (6, 3))
    results = []
    for lib in (F, tch):
        fn = lib.nn.functional
        x = lib.tensor(a)
        w = lib.tensor(b, requires_grad=True)
        if name == "leaky_relu":
            h = fn.leaky_relu(x, 0.2, inplace=True)
        else:
            h = getattr(fn, name)(x, inplace=True)
        assert h is x
        loss = ((h @ w) ** 2).sum()
        loss.backward()
        results.append((x.numpy(), w.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_parameters_can_be_updated_in_place_under_no_grad(tch, rng):
    a = data(rng)
    for lib in (F, tch):
        p = lib.tensor(a, requires_grad=True)
        with lib.no_grad():
            assert lib.nn.functional.relu(p, inplace=True) is p
        np.testing.assert_array_equal(p.detach().numpy(), np.maximum(a, 0))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_leaf_that_requires_grad_is_refused(name, tch, rng):
    inplace, _ = CASES[name]
    a = data(rng)
    x = F.tensor(a, requires_grad=True)
    with pytest.raises(F.FoundryError, match="leaf"):
        inplace(x)
    np.testing.assert_array_equal(x.detach().numpy(), a)  # untouched
    with pytest.raises(RuntimeError, match="leaf"):
        tch.nn.functional.relu(tch.tensor(a, requires_grad=True),
                               inplace=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_tensor_in_the_autograd_graph_is_refused(name, rng):
    # PyTorch writes and rebases the tensor's history; the C library has
    # no way to, so this raises instead of computing out of place.
    inplace, _ = CASES[name]
    w = F.tensor(data(rng), requires_grad=True)
    h = w * 2
    with pytest.raises(NotImplementedError, match="inplace=True"):
        inplace(h)
    np.testing.assert_array_equal(h.detach().numpy(), w.detach().numpy() * 2)


def test_nothing_to_write_returns_the_input():
    x = F.ones(5, requires_grad=True)
    assert NF.dropout(x, 0.5, training=False, inplace=True) is x
    assert NF.dropout(x, 0.0, inplace=True) is x
    assert nn.Dropout(0.5, inplace=True).eval()(x) is x


def test_a_result_of_another_dtype_is_not_written():
    x = F.tensor([-2, 3])
    with pytest.raises(TypeError):
        NF.leaky_relu(x, 0.5, inplace=True)  # float result, int input
    with pytest.raises(TypeError):
        NF.silu(x, inplace=True)
    assert x.tolist() == [-2, 3]
    assert NF.relu(x, inplace=True).tolist() == [0, 3]  # relu keeps ints


def test_in_place_writes_from_a_tensor_that_requires_grad_are_refused():
    # In-place ops record no gradient; PyTorch would carry w's, so Foundry
    # refuses rather than drop it silently.
    w = F.ones(3, requires_grad=True)
    a = F.zeros(3)
    with pytest.raises(NotImplementedError, match="requires grad"):
        a[:] = w
    with pytest.raises(NotImplementedError, match="requires grad"):
        a.copy_(w)
    with pytest.raises(NotImplementedError, match="requires grad"):
        a += w
    assert a.tolist() == [0.0, 0.0, 0.0]
    with F.no_grad():
        a[:] = w
    assert a.tolist() == [1.0, 1.0, 1.0]
