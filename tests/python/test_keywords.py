"""numpy-style keyword aliases (axis= / keepdims=), Tensor.type, and
sort / argsort(stable=), each against PyTorch."""
import numpy as np
import pytest

import foundry as F


def _same(got, want):
    """got (foundry) equals want (torch): shape, and values to float32
    rounding (both compute in the same dtype; the accumulation order may
    differ, hence the tolerance)."""
    want = want.detach().numpy()
    got = np.asarray(got.detach())
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "logsumexp", "any",
              "all", "var", "std"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [0, -1, (0, 2), [1, 2]])
def test_axis_and_keepdims_match_torch(tch, rng, name, dtype, axis):
    a = rng.standard_normal((3, 4, 5)).astype(dtype)
    x, tx = F.tensor(a), tch.tensor(a)
    for kw in ({"axis": axis}, {"axis": axis, "keepdims": True},
               {"dim": axis, "keepdims": True}):
        tkw = dict(kw)
        if isinstance(axis, list):
            tkw = {k: tuple(v) if isinstance(v, list) else v
                   for k, v in tkw.items()}
        if name == "prod" and not isinstance(axis, int):
            # torch.prod takes one dim only; numpy is the reference there
            want = tch.tensor(np.prod(a, axis=tuple(axis),
                                      keepdims=bool(kw.get("keepdims"))))
        else:
            want = getattr(tch, name)(tx, **tkw)
            _same(getattr(x, name)(**kw), getattr(tx, name)(**tkw))
        _same(getattr(F, name)(x, **kw), want)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_axis_gives_values_and_indices(tch, rng, name):
    a = rng.standard_normal((3, 4)).astype("float32")
    x, tx = F.tensor(a).t(), tch.tensor(a).t()  # non-contiguous
    got = getattr(x, name)(axis=1, keepdims=True)
    want = getattr(tx, name)(axis=1, keepdims=True)
    _same(got.values, want.values)
    assert got.indices.tolist() == want.indices.tolist()


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_axis(tch, rng, name):
    a = rng.standard_normal((3, 4)).astype("float64")
    for kw in ({"axis": 0}, {"axis": -1, "keepdims": True}):
        got = getattr(F, name)(F.tensor(a), **kw)
        want = getattr(tch, name)(tch.tensor(a), **kw)
        assert got.tolist() == want.tolist()


def test_axis_on_row_ops_sort_and_scans(tch, rng):
    a = rng.standard_normal((3, 4)).astype("float32")
    x, tx = F.tensor(a), tch.tensor(a)
    for name in ["softmax", "log_softmax", "cumsum"]:
        _same(getattr(x, name)(axis=0), getattr(tx, name)(axis=0))
    assert x.argsort(axis=0).tolist() == tx.argsort(axis=0).tolist()
    assert x.sort(axis=0).indices.tolist() == tx.sort(axis=0).indices.tolist()
    assert x.topk(2, axis=0).indices.tolist() == \
        tx.topk(2, axis=0).indices.tolist()


def test_axis_on_0d_and_empty(tch):
    _same(F.tensor(2.5).sum(axis=0), tch.tensor(2.5).sum(axis=0))
    e, te = F.zeros(0, 3), tch.zeros(0, 3)
    _same(e.sum(axis=0, keepdims=True), te.sum(axis=0, keepdims=True))
    _same(e.mean(axis=1), te.mean(axis=1))


@pytest.mark.parametrize("call", [
    lambda m, x: m.sum(x, dim=0, axis=0),
    lambda m, x: m.sum(x, 0, axis=0),
    lambda m, x: m.mean(x, dim=0, keepdim=True, keepdims=True),
    lambda m, x: m.amax(x, dim=1, axis=1),
    lambda m, x: m.max(x, dim=0, axis=0),
    lambda m, x: m.var(x, 0, axis=0),
    lambda m, x: m.argmax(x, dim=0, axis=0),
    lambda m, x: m.argsort(x, dim=0, axis=0),
])
def test_both_spellings_is_a_type_error(tch, call):
    with pytest.raises(TypeError):
        call(tch, tch.ones(2, 3))
    with pytest.raises(TypeError, match="alias"):
        call(F, F.ones(2, 3))


def test_bad_axis_is_reported_as_the_dim():
    with pytest.raises(F.FoundryError, match="dim 2 is out of range"):
        F.ones(2, 3).sum(axis=2)


# ------------------------------------------------------------- type()
@pytest.mark.parametrize("dtype,name", [
    ("float32", "FloatTensor"), ("float64", "DoubleTensor"),
    ("float16", "HalfTensor"), ("int64", "LongTensor"),
    ("int32", "IntTensor"), ("int16", "ShortTensor"), ("int8", "CharTensor"),
    ("uint8", "ByteTensor"), ("bool", "BoolTensor")])
def test_type_names_follow_torch(tch, dtype, name):
    x = F.zeros(2, dtype=getattr(F, dtype))
    assert x.type() == "foundry." + name
    assert tch.zeros(2, dtype=getattr(tch, dtype)).type() == "torch." + name
    assert F.zeros(2).type("torch." + name).dtype == x.dtype
    assert F.zeros(2).type("foundry." + name).dtype == x.dtype


def test_type_converts_like_to(tch):
    a = np.array([[1.7, -2.5], [3.0, 0.0]])
    x = F.tensor(a).t()
    got = x.type(F.int32)
    assert got.dtype == F.int32
    assert got.tolist() == tch.tensor(a).t().type(tch.int32).tolist()
    assert x.type("float64") is x  # nothing to convert: self, as to()
    assert x.type(np.float32).dtype == F.float32
    assert F.tensor(1.5).type(F.float16).tolist() == 1.5
    assert F.zeros(0, 2).type("torch.LongTensor").shape == (0, 2)


def test_type_gradient_flows(tch):
    x = F.tensor([1.0, 2.0], dtype=F.float64, requires_grad=True)
    (x.type(F.float32) * 3).sum().backward()
    assert x.grad.dtype == F.float64 and x.grad.tolist() == [3.0, 3.0]


def test_type_bad_argument():
    with pytest.raises(ValueError, match="FloatTensor"):
        F.zeros(2).type("NoSuchTensor")
    with pytest.raises(TypeError):
        F.zeros(2).type(3)


def test_type_names_the_device(test_device):
    x = F.zeros(2, device=test_device)
    assert x.type() == "foundry.test.FloatTensor"
    assert x.type(F.float64).device == test_device


# ------------------------------------------------------- stable sorting
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_stable_sort_keeps_ties_in_input_order(tch, rng, descending, dtype):
    # few distinct values over long rows: many ties, longer than the
    # insertion-sort runs, so the merges must keep the order too
    a = rng.integers(0, 4, size=(3, 1000)).astype(dtype)
    if dtype != "int64":
        a[0, ::7] = np.nan
    x, tx = F.tensor(a), tch.tensor(a)
    for stable in (True, False):
        got = F.argsort(x, dim=1, descending=descending, stable=stable)
        want = tch.argsort(tx, dim=1, descending=descending, stable=True)
        assert got.tolist() == want.tolist()
        s = F.sort(x, 1, descending, stable=stable)
        ts = tch.sort(tx, dim=1, descending=descending, stable=True)
        assert s.indices.tolist() == ts.indices.tolist()
        np.testing.assert_array_equal(s.values.numpy(), ts.values.numpy())


def test_stable_sort_non_contiguous_and_dim0(tch, rng):
    a = rng.integers(0, 3, size=(50, 6)).astype("float32")
    x, tx = F.tensor(a).t(), tch.tensor(a).t()
    assert F.argsort(x, dim=0, stable=True).tolist() == \
        tch.argsort(tx, dim=0, stable=True).tolist()
    assert F.argsort(x, stable=True, descending=True).tolist() == \
        tch.argsort(tx, stable=True, descending=True).tolist()


def test_stable_is_keyword_only(tch):
    with pytest.raises(TypeError):
        tch.sort(tch.ones(3), 0, False, True)
    with pytest.raises(TypeError):
        F.sort(F.ones(3), 0, False, True)
    with pytest.raises(TypeError):
        F.argsort(F.ones(3), 0, False, True)


def test_sort_0d_and_empty(tch):
    assert F.argsort(F.tensor(3.0), stable=True).tolist() == \
        tch.argsort(tch.tensor(3.0), stable=True).tolist()
    assert F.sort(F.zeros(2, 0), stable=True).values.shape == (2, 0)


# ----------------------------------------------------- div(rounding_mode)
DIV_DTYPES = ["float32", "float64", "int64", "int32", "int16", "uint8"]


def _operands(rng, dtype, shape_a=(3, 4), shape_b=(4,)):
    if dtype.startswith("float"):
        a = rng.uniform(-10, 10, shape_a).astype(dtype)
        b = rng.uniform(-3, 3, shape_b).astype(dtype)
        b[b == 0] = 1
        a.flat[:4] = [7.0, -7.0, 6.0, -0.5]  # exact and signed-zero cases
    else:
        lo = 0 if dtype == "uint8" else -50
        a = rng.integers(lo, 50, shape_a).astype(dtype)
        b = rng.integers(1, 7, shape_b).astype(dtype)
        if dtype != "uint8":
            b[::2] *= -1
    return a, b


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", DIV_DTYPES)
def test_div_rounding_modes_match_torch(tch, rng, mode, dtype):
    a, b = _operands(rng, dtype)
    x, y = F.tensor(a), F.tensor(b)
    want = tch.div(tch.tensor(a), tch.tensor(b), rounding_mode=mode)
    for got in (F.div(x, y, rounding_mode=mode),
                x.div(y, rounding_mode=mode),
                F.divide(x, y, rounding_mode=mode),
                x.t().contiguous().t().div(y, rounding_mode=mode)):
        assert got.dtype == getattr(F, str(want.dtype).split(".")[1])
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("other", [2, -3, 2.5, -0.75])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_div_rounding_with_numbers(tch, rng, mode, other, dtype):
    a, _ = _operands(rng, dtype)
    got = F.div(F.tensor(a), other, rounding_mode=mode)
    want = tch.div(tch.tensor(a), other, rounding_mode=mode)
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_div_rounding_non_contiguous_broadcast_0d_empty(tch, rng):
    a = rng.uniform(-9, 9, (5, 3)).astype("float64")
    for mode in ("trunc", "floor"):
        x, tx = F.tensor(a).t(), tch.tensor(a).t()
        s, ts = F.tensor(-1.5, dtype=F.float64), tch.tensor(-1.5,
                                                           dtype=tch.float64)
        np.testing.assert_array_equal(
            F.div(x, s, rounding_mode=mode).numpy(),
            tch.div(tx, ts, rounding_mode=mode).numpy())
        np.testing.assert_array_equal(
            F.div(s, x[:, :1], rounding_mode=mode).numpy(),
            tch.div(ts, tx[:, :1], rounding_mode=mode).numpy())
        assert F.div(F.zeros(0, 3), F.ones(3),
                     rounding_mode=mode).shape == (0, 3)


def test_div_float_division_by_zero_is_inf_or_nan(tch):
    a = np.array([5.0, -5.0, 0.0], dtype="float32")
    for mode in ("trunc", "floor"):
        np.testing.assert_array_equal(
            F.div(F.tensor(a), 0.0, rounding_mode=mode).numpy(),
            tch.div(tch.tensor(a), 0.0, rounding_mode=mode).numpy())


def test_div_rounding_modes_have_zero_gradient(tch):
    a = np.array([1.5, -2.5, 3.0, 4.0])
    b = np.array([0.5, 1.0, 0.0, -3.0])
    for mode in ("trunc", "floor"):
        x = F.tensor(a, requires_grad=True)
        y = F.tensor(b, requires_grad=True)
        tx = tch.tensor(a, requires_grad=True)
        ty = tch.tensor(b, requires_grad=True)
        F.div(x, y, rounding_mode=mode).sum().backward()
        tch.div(tx, ty, rounding_mode=mode).sum().backward()
        assert x.grad.tolist() == tx.grad.tolist()
        assert y.grad.tolist() == ty.grad.tolist()  # zeros, not NaN at 0


def test_true_divide_and_true_division_gradient(tch):
    a, b = np.array([1.0, -2.0]), np.array([4.0, 0.5])
    assert F.true_divide(F.tensor([7, -7]), 2).tolist() == [3.5, -3.5]
    x = F.tensor(a, requires_grad=True)
    tx = tch.tensor(a, requires_grad=True)
    F.div(x, F.tensor(b)).sum().backward()
    tch.div(tx, tch.tensor(b)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)
    with pytest.raises(TypeError):
        F.true_divide(F.ones(2), 2, rounding_mode="floor")


def test_div_in_place_rounding(tch):
    a, b = [7, -7, 5, -5], [2, 2, -3, -3]
    for mode in ("trunc", "floor"):
        x, tx = F.tensor(a), tch.tensor(a)
        assert x.div_(F.tensor(b), rounding_mode=mode) is x
        tx.div_(tch.tensor(b), rounding_mode=mode)
        assert x.tolist() == tx.tolist() and x.dtype == F.int64
    x = F.tensor([7.0, -7.0])
    x.div_(2, rounding_mode="trunc")
    assert x.tolist() == [3.0, -3.0]
    with pytest.raises(TypeError):
        F.tensor([1, 2]).div_(2.5, rounding_mode="trunc")
    with pytest.raises(TypeError):
        F.tensor([1, 2]).div_(2)  # true division gives a float


def test_div_bad_rounding_mode_and_zero_division(tch):
    with pytest.raises(RuntimeError):
        tch.div(tch.ones(2), 2, rounding_mode="round")
    with pytest.raises(ValueError, match="rounding_mode"):
        F.div(F.ones(2), 2, rounding_mode="round")
    with pytest.raises(ValueError, match="rounding_mode"):
        F.ones(2).div_(2, rounding_mode="ceil")
    with pytest.raises(RuntimeError):
        tch.div(tch.tensor([1]), tch.tensor([0]), rounding_mode="trunc")
    for mode in ("trunc", "floor"):
        with pytest.raises(ValueError, match="division by zero"):
            F.div(F.tensor([1]), F.tensor([0]), rounding_mode=mode)
    with pytest.raises(TypeError):
        F.div(F.ones(2), "2", rounding_mode="floor")


# -------------------------------------------------------- count_nonzero
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_count_nonzero_matches_torch(tch, rng, dtype):
    a = rng.integers(-1, 2, (3, 4, 5)).astype(dtype)
    if dtype.startswith("float"):
        a[0, 0, :2] = [np.nan, -0.0]  # NaN counts, -0.0 does not
    x, tx = F.tensor(a), tch.tensor(a)
    for kw in ({}, {"dim": 1}, {"dim": (0, 2)}, {"axis": -1}):
        want = tch.count_nonzero(tx, **kw)
        for got in (F.count_nonzero(x, **kw), x.count_nonzero(**kw)):
            assert got.dtype == F.int64
            assert got.tolist() == want.tolist()
    xt, txt = F.tensor(a).permute(2, 0, 1), tch.tensor(a).permute(2, 0, 1)
    assert xt.count_nonzero(1).tolist() == txt.count_nonzero(1).tolist()


def test_count_nonzero_0d_empty_and_errors(tch):
    assert F.count_nonzero(F.tensor(2.0)).tolist() == \
        tch.count_nonzero(tch.tensor(2.0)).tolist()
    assert F.count_nonzero(F.zeros(0, 3), 0).tolist() == \
        tch.count_nonzero(tch.zeros(0, 3), 0).tolist()
    with pytest.raises(TypeError):
        tch.count_nonzero(tch.ones(2), dim=0, axis=0)
    with pytest.raises(TypeError, match="alias"):
        F.count_nonzero(F.ones(2), dim=0, axis=0)
    with pytest.raises(F.FoundryError, match="out of range"):
        F.count_nonzero(F.ones(2), 1)
