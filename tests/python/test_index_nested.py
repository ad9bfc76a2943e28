"""Indexing with nested tuples and lists, mixed with ints, slices, None,
Ellipsis, arrays and tensors, reading and writing, against PyTorch."""
import warnings

import numpy as np
import pytest

import foundry as F

S = slice
CASES = [
    ((0,),), ((0,), 1), ([0, 1], [1, 2]), [[0, 1]], [[[0, 1]]],
    [[0, 1], [1, 2]], [0, S(None)], [0, None], [0, Ellipsis], [1, S(1, 3)],
    ((0, 1),), (0, 1), ((0, 1), (1, 2)), (S(None), (0, 2)), (Ellipsis, (1,)),
    (None, (0, 1), None, [1, 2]), ([[0], [1]], S(1, 3), [0, 2]),
    ([0, 1], Ellipsis, [1, 2]), (0, [0, 2], S(None), [1, 3]),
    ([[0, 1], [1, 0]],), [[0, 1], [1, 0], [2, 2]], ((1,), (2,), (3,)),
    ([True, False],), ((True, False), 1), (np.array([[1, 0]]), None, (0, 2)),
    [[0]], [[[0]]], [[[0, 1], [1, 0]]], ([[[0, 1]]],), ((),), ([],),
    [[], []], (S(None), []), ([0, 1], [[0], [2]]),
    ((0, 1), [[0], [2]], S(None, 2)), ([1, -1], (0, -1)),
    (S(None), S(None), ((0, 1), (2, 3))), ((-1, 0), Ellipsis, None),
    ("T", [1, 0]), ([0, "T0"],), ("T", S(None), (0, 2)), ("Tb",),
    (1, "T0", [0, 2]),
]


def _key(k, lib, n):
    """The case with "T" a tensor [1, 2], "Tb" a bool mask of dim 0 and
    "T0" a 0-d tensor (1), made by `lib` (foundry or torch)."""
    if isinstance(k, str):
        return {"T": lib.tensor([1, 0]), "Tb": lib.tensor([False, True]),
                "T0": lib.tensor(1)}[k]
    if isinstance(k, tuple):
        return tuple(_key(i, lib, n) for i in k)
    if isinstance(k, list):
        return [_key(i, lib, n) for i in k]
    return k


def _ids(cases):
    return [repr(c) for c in cases]


@pytest.fixture
def arrays():
    return np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)


def _torch_get(tch, tx, key):
    with warnings.catch_warnings():  # torch's note on list-as-tuple keys
        warnings.simplefilter("ignore")
        return tx[key]


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_getitem_matches_torch(tch, arrays, case):
    x, tx = F.tensor(arrays), tch.tensor(arrays)
    want = _torch_get(tch, tx, _key(case, tch, 0))
    got = x[_key(case, F, 0)]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_getitem_non_contiguous_and_f32(tch, arrays, case):
    a = np.ascontiguousarray(arrays.transpose(0, 1, 3, 2)).astype("float32")
    a = a.transpose(0, 1, 3, 2)  # same shape, non-contiguous strides
    x = F.tensor(np.ascontiguousarray(a.transpose(0, 1, 3, 2))) \
        .permute(0, 1, 3, 2)
    tx = tch.tensor(np.ascontiguousarray(a))
    assert not x.is_contiguous()
    want = _torch_get(tch, tx, _key(case, tch, 0))
    got = x[_key(case, F, 0)]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# Keys without repeated positions, so writes have one answer.
SET_CASES = [c for c in CASES if c not in ([[0, 1], [1, 0], [2, 2]],)]


@pytest.mark.parametrize("case", SET_CASES, ids=_ids(SET_CASES))
def test_setitem_matches_torch(tch, arrays, rng, case):
    x, tx = F.tensor(arrays), tch.tensor(arrays)
    shape = tuple(_torch_get(tch, tx, _key(case, tch, 0)).shape)
    v = rng.standard_normal(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tx[_key(case, tch, 0)] = tch.tensor(v)
    x[_key(case, F, 0)] = F.tensor(v)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    # a number broadcast to the indexed places
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tx[_key(case, tch, 0)] = -7.0
    x[_key(case, F, 0)] = -7.0
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_setitem_through_a_view_writes_the_base(tch, arrays):
    x, tx = F.tensor(arrays), tch.tensor(arrays)
    v, tv = x[1], tx[1]
    v[(0, 2), [[1], [3]]] = 100.0
    tv[(0, 2), [[1], [3]]] = 100.0
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_nested_index_gradient_matches_torch(tch, arrays):
    x = F.tensor(arrays, requires_grad=True)
    tx = tch.tensor(arrays, requires_grad=True)
    for k in (((0, 1), [[0], [2]], S(None, 2)), [[1, 1], [0, 0]],
              ((1,), Ellipsis, (0, 0))):  # repeated picks accumulate
        y = x[k]
        ty = _torch_get(tch, tx, k)
        (y * y).sum().backward()
        (ty * ty).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_0d_and_empty_tensors(tch):
    z, tz = F.tensor(3.0), tch.tensor(3.0)
    for k in ((None,), (Ellipsis,), (None, Ellipsis, None)):
        assert tuple(z[k].shape) == tuple(tz[k].shape)
    e, te = F.zeros(0, 3), tch.zeros(0, 3)
    for k in ((S(None), (0, 2)), ([],), ((), S(None))):
        assert tuple(e[k].shape) == tuple(_torch_get(tch, te, k).shape)


@pytest.mark.parametrize("case", [
    ((0, 5),), ([0, 1], (0, 9)), ((0,), (0,), (0,), (0,), (0,)), ((-3,),),
    (1, "T0", (0,), 0, 0)])
def test_bad_nested_keys_raise_index_error(tch, arrays, case):
    with pytest.raises(IndexError):
        _torch_get(tch, tch.tensor(arrays[:2]), _key(case, tch, 0))
    with pytest.raises(IndexError):
        F.tensor(arrays[:2])[_key(case, F, 0)]


def test_ragged_nested_key_is_a_value_error(tch, arrays):
    with pytest.raises(ValueError):
        _torch_get(tch, tch.tensor(arrays), ([[0, 1], [0]],))
    with pytest.raises(ValueError):
        F.tensor(arrays)[([[0, 1], [0]],)]


def test_where_foundry_is_stricter_than_torch(arrays):
    # torch truncates float entries of a nested tuple ((0.5,) picks row 0)
    # and accepts several Ellipses; numpy refuses both, and so does Foundry
    with pytest.raises(IndexError, match="float"):
        F.tensor(arrays)[((0.5,),)]
    with pytest.raises(IndexError, match="ellipsis"):
        F.tensor(arrays)[..., ...]


# ------------------------------------------------------ the 8-dim limit
def test_tensors_have_at_most_8_dims():
    assert F._c.lib.TM_MAX_DIMS == 8
    x = F.zeros(*([1] * 8))
    calls = {
        "unsqueeze": lambda: x.unsqueeze(0),
        "None index": lambda: x[None],
        "None write": lambda: x.__setitem__((None, None), 1.0),
        "view": lambda: F.zeros(2).view(*([1] * 8 + [2])),
        "reshape": lambda: F.zeros(2).reshape([1] * 8 + [2]),
        "expand": lambda: x.expand([1] * 9),
        "broadcast_to": lambda: x.broadcast_to([1] * 9),
        "zeros": lambda: F.zeros(*([1] * 9)),
        "tensor": lambda: F.tensor(np.zeros([1] * 9)),
        "from_numpy": lambda: F.from_numpy(np.zeros([1] * 9)),
        "stack": lambda: F.stack([x, x]),
        "repeat": lambda: x.repeat(*([1] * 9)),
        "unflatten": lambda: F.zeros(4).unflatten(0, (1,) * 8 + (4,)),
        "one_hot": lambda: F.nn.functional.one_hot(
            F.zeros(*([1] * 8), dtype=F.int64), 3),
        "new_zeros": lambda: F.zeros(2).new_zeros([1] * 9),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match="8") as e:
            call()
        assert "dim" in str(e.value), name
    assert x[0].unsqueeze(0).ndim == 8  # one dim fewer still works


@pytest.mark.parametrize("key", [
    (F.zeros(1, 1, dtype=F.int64),),          # 2 + 7 dims
    ([[[[[[[[0]]]]]]]],),                      # an 8-d index: 8 + 7
    (F.zeros(1, 1, 1, dtype=F.int64), Ellipsis, [0]),
])
def test_advanced_index_past_8_dims_names_the_limit(key):
    x = F.zeros(1, 1, 1, 1, 1, 1, 1, 2)
    with pytest.raises(ValueError, match="at most 8 dims"):
        x[key]
    with pytest.raises(ValueError, match="at most 8 dims"):
        x[key] = 1.0


def test_advanced_index_at_8_dims_works(tch):
    a = np.arange(16.0).reshape(1, 1, 1, 1, 1, 1, 2, 8)
    k = (np.zeros((1, 1), dtype=np.int64), Ellipsis, [1, 0])
    got = F.tensor(a)[(F.tensor(k[0]), k[1], k[2])]
    want = tch.tensor(a)[(tch.tensor(k[0]), k[1], k[2])]
    assert got.ndim == 8
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_nested_keys_on_the_test_device(tch, arrays, test_device):
    x = F.tensor(arrays, device=test_device)
    tx = tch.tensor(arrays)
    for k in (((0, 1), [[0], [2]]), [[1, 0], (2,)], (Ellipsis, (1, 3))):
        got = x[k]
        assert got.device == test_device
        np.testing.assert_array_equal(got.cpu().numpy(),
                                      _torch_get(tch, tx, k).numpy())
    x[(1,), (0, 2)] = 5.0
    tx[(1,), (0, 2)] = 5.0
    np.testing.assert_array_equal(x.cpu().numpy(), tx.numpy())
