"""t[key] and t[key] = v against numpy, for every kind of index."""
import numpy as np
import pytest

import foundry as F

A = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

KEYS = [
    1, -1, (1, 2), (0, -1, 3, 4), slice(None), slice(1, None),
    (slice(None), slice(0, 3, 2)), (Ellipsis, 1), (1, Ellipsis, 2),
    (None, 1), (slice(None), None, 2), (Ellipsis, None),
    (0, slice(None, None, 3), Ellipsis), slice(5, 9), slice(-100, 100),
    [1, 0], ([0, 1, 1],), (slice(None), [2, 0]), (1, [0, 2], slice(1, 3)),
    (slice(None), [0, 2], [1, 3]), ([0, 1], slice(None), [1, 3]),
    (Ellipsis, [[0, 1], [3, 4]]), (slice(None), [[0], [2]], [1, 3]),
    ([-1, 0],), (0, 1, [3, 0, -4]), (slice(None), [0, 2], None),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_matches_numpy(key):
    t = F.from_numpy(A)
    want = A[key]
    got = t[key]
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_basic_indexing_returns_views():
    t = F.from_numpy(A.copy())
    v = t[0, 1:, ::2]
    v.fill_(-1)
    assert (t.numpy()[0, 1:, ::2] == -1).all()


def test_bool_masks_and_integer_tensors():
    t = F.from_numpy(A)
    m = A[..., 0] > 30
    np.testing.assert_array_equal(t[F.tensor(m)].numpy(), A[m])
    np.testing.assert_array_equal(t[t > 100].numpy(), A[A > 100])
    np.testing.assert_array_equal(t[:, F.tensor([2, 0])].numpy(),
                                  A[:, [2, 0]])
    np.testing.assert_array_equal(t[F.tensor(1)].numpy(), A[1])
    np.testing.assert_array_equal(t[np.array([1, 0])].numpy(), A[[1, 0]])


SET_KEYS = [1, (0, slice(1, 3)), (Ellipsis, 2), ([1, 0],),
            (slice(None), [2, 0], [1, 3]), (0, [0, 2], slice(None), 1),
            (slice(None), slice(None), [0, 3])]


@pytest.mark.parametrize("key", SET_KEYS, ids=[repr(k) for k in SET_KEYS])
def test_setitem_matches_numpy(key):
    want = A.copy()
    want[key] = -7
    t = F.from_numpy(A.copy())
    t[key] = -7
    np.testing.assert_array_equal(t.numpy(), want)
    # a tensor value broadcast into place
    want = A.copy()
    shape = want[key].shape
    val = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 0.5
    want[key] = val
    t = F.from_numpy(A.copy())
    t[key] = F.tensor(val)
    np.testing.assert_array_equal(t.numpy(), want)


def test_setitem_with_masks_and_non_mergeable_views():
    a = A.copy()
    t = F.from_numpy(a.copy())
    t[t > 50] = 0
    a[a > 50] = 0
    np.testing.assert_array_equal(t.numpy(), a)
    b = np.arange(24, dtype=np.float32).reshape(4, 6)
    tb = F.from_numpy(b.copy()).T  # advanced dims not mergeable as a view
    want = b.T.copy()
    want[[1, 3], [0, 2]] = 9
    tb[[1, 3], [0, 2]] = 9
    np.testing.assert_array_equal(tb.numpy(), want)


def test_index_errors_are_index_errors():
    t = F.zeros(3, 4)
    with pytest.raises(IndexError, match="out of range"):
        t[3]
    with pytest.raises(IndexError):
        t[F.tensor([0, 5])]
    with pytest.raises(IndexError, match="out of bounds"):
        t[[0, 1], [0, 9]]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError):
        t[0.5]
    with pytest.raises(IndexError):
        t["a"]
    with pytest.raises(IndexError):
        t[F.tensor([0.5])]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(ValueError, match="positive"):
        t[::-1]
    with pytest.raises(IndexError, match="mask"):
        t[F.tensor([True, False])]
