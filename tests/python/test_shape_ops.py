"""flip, roll, diag, diagonal, Tensor.unfold, nn.functional.unfold / fold,
repeat_interleave, nonzero, masked_select, take_along_dim and
Tensor.view(dtype), against PyTorch (values, shapes, dtypes, gradients and
errors).

Every op here moves or sums elements without arithmetic of its own, so
values must match exactly (fold adds overlapping blocks: exact for the
integer-valued inputs used where it matters, else within float rounding of
a few additions).
"""
import numpy as np
import pytest

import foundry
import foundry.nn.functional as F

DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def _data(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _same(r, s):
    """r (foundry) equals s (torch) in shape, dtype and every value."""
    a = np.asarray(r.detach().contiguous() if r.requires_grad else r)
    b = s.detach().numpy()
    assert tuple(r.shape) == tuple(s.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_array_equal(a, b)


def _pair(tch, a):
    return foundry.tensor(a), tch.tensor(a)


def _both_layouts(tch, a):
    x, t = _pair(tch, a)
    out = [(x, t)]
    if a.ndim >= 2:
        out.append((x.transpose(0, 1), t.transpose(0, 1)))
        out.append((x[:, ::2], t[:, ::2]))
    return out


def _grad_matches(tch, f, g, shapes, tol=1e-12):
    """Gradients of sum(f(xs) * w) in F64 match torch's (w random so every
    element matters).  Exact-order ops agree to rounding; tol 1e-12
    leaves room for one re-association of a few additions."""
    rng = np.random.default_rng(7)
    arrs = [rng.standard_normal(s) for s in shapes]
    xs = [foundry.tensor(a, requires_grad=True) for a in arrs]
    ts = [tch.tensor(a, requires_grad=True) for a in arrs]
    r, s = f(*xs), g(*ts)
    w = rng.standard_normal(tuple(s.shape))
    (r * foundry.tensor(w)).sum().backward()
    (s * tch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy(),
                                   rtol=tol, atol=tol)


# ------------------------------------------------------------------ flip

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims", [(0,), (1,), (-1,), (0, 2), (2, 0, 1), ()])
def test_flip_matches_torch(tch, rng, dtype, dims):
    a = _data(rng, (3, 4, 5), dtype)
    for x, t in _both_layouts(tch, a):
        _same(foundry.flip(x, dims), tch.flip(t, dims))
        _same(x.flip(*dims) if dims else x.flip(()), t.flip(dims))


def test_flip_of_0d_and_empty(tch):
    _same(foundry.tensor(3.5).flip(0), tch.tensor(3.5).flip(0))
    e = np.zeros((0, 3), np.float32)
    _same(foundry.tensor(e).flip(0, 1), tch.tensor(e).flip(0, 1))


def test_flip_is_a_copy():
    x = foundry.arange(4.0)
    y = x.flip(0)
    y[0] = 100.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_fliplr_flipud_match_torch(tch, rng, dtype):
    x, t = _pair(tch, _data(rng, (3, 4, 2), dtype))
    _same(foundry.fliplr(x), tch.fliplr(t))
    _same(x.flipud(), t.flipud())
    _same(x[0, :, 0].flipud(), t[0, :, 0].flipud())


def test_flip_errors():
    x = foundry.zeros(2, 3)
    with pytest.raises(ValueError, match="more than once"):
        x.flip(0, -2)
    with pytest.raises(foundry.FoundryError, match="out of range"):
        x.flip(2)
    with pytest.raises(RuntimeError, match=">= 2-d"):
        foundry.fliplr(foundry.zeros(3))
    with pytest.raises(RuntimeError, match=">= 1-d"):
        foundry.flipud(foundry.tensor(1.0))


# ------------------------------------------------------------------ roll

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shifts,dims", [(1, 0), (-1, 1), (7, -1),
                                         ((1, -2), (0, 2)), (3, None),
                                         (-13, None), ((2, 2), (1, 1)),
                                         (0, 0)])
def test_roll_matches_torch(tch, rng, dtype, shifts, dims):
    a = _data(rng, (3, 4, 5), dtype)
    for x, t in _both_layouts(tch, a):
        _same(foundry.roll(x, shifts, dims), tch.roll(t, shifts, dims))
        _same(x.roll(shifts, dims), t.roll(shifts, dims))


def test_roll_of_0d_and_empty(tch):
    _same(foundry.tensor(2.0).roll(3), tch.tensor(2.0).roll(3))
    with pytest.raises(foundry.FoundryError, match="out of range"):
        foundry.tensor(2.0).roll(1, 0)  # as torch: no dim to roll
    e = np.zeros((2, 0), np.float64)
    _same(foundry.tensor(e).roll(1, 1), tch.tensor(e).roll(1, 1))
    _same(foundry.tensor(e).roll(1), tch.tensor(e).roll(1))


def test_roll_errors():
    x = foundry.zeros(2, 3)
    with pytest.raises(ValueError, match="must align"):
        x.roll((1, 2), 0)
    with pytest.raises(ValueError, match="without dims"):
        x.roll((1, 2))
    with pytest.raises(foundry.FoundryError, match="out of range"):
        x.roll(1, 2)


# ------------------------------------------------------- diag / diagonal

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [0, 1, 2, -1, -3, 5])
def test_diag_matches_torch(tch, rng, dtype, k):
    v, tv = _pair(tch, _data(rng, (4,), dtype))
    _same(foundry.diag(v, k), tch.diag(tv, k))
    _same(v[::2].diag(k), tv[::2].diag(k))
    for x, t in _both_layouts(tch, _data(rng, (4, 6), dtype)):
        _same(foundry.diag(x, k), tch.diag(t, k))


def test_diag_of_empty_and_bad_ranks(tch):
    e = np.zeros((0,), np.float32)
    _same(foundry.diag(foundry.tensor(e)), tch.diag(tch.tensor(e)))
    _same(foundry.diag(foundry.tensor(e), 2), tch.diag(tch.tensor(e), 2))
    _same(foundry.diag(foundry.zeros(0, 3)), tch.diag(tch.zeros(0, 3)))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        foundry.diag(foundry.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        foundry.diag(foundry.tensor(1.0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (1, 0, 1),
                                              (-2, 0, 1), (1, 2, 0),
                                              (0, -1, -3), (9, 1, 2),
                                              (-9, 1, 2)])
def test_diagonal_matches_torch(tch, rng, dtype, offset, dim1, dim2):
    a = _data(rng, (3, 4, 5), dtype)
    for x, t in _both_layouts(tch, a):
        _same(foundry.diagonal(x, offset, dim1, dim2),
              tch.diagonal(t, offset, dim1, dim2))
        _same(x.diagonal(offset=offset, dim1=dim1, dim2=dim2),
              t.diagonal(offset=offset, dim1=dim1, dim2=dim2))


def test_diagonal_is_a_view_that_writes_through():
    x = foundry.zeros(3, 4)
    d = x.diagonal(1)
    assert d.shape == (3,)
    d.fill_(7.0)
    expect = np.zeros((3, 4), np.float32)
    expect[[0, 1, 2], [1, 2, 3]] = 7.0
    np.testing.assert_array_equal(np.asarray(x), expect)
    x[1, 2] = -1.0
    assert d.tolist() == [7.0, -1.0, 7.0]


def test_diagonal_errors():
    with pytest.raises(ValueError, match="at least 2 dims"):
        foundry.zeros(3).diagonal()
    with pytest.raises(ValueError, match="both dim 1"):
        foundry.zeros(3, 3).diagonal(0, 1, -1)


# --------------------------------------------------------- Tensor.unfold

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 3, 2), (-1, 5, 1),
                                           (2, 1, 3), (1, 0, 1), (2, 2, 9)])
def test_tensor_unfold_matches_torch(tch, rng, dtype, dim, size, step):
    a = _data(rng, (3, 4, 5), dtype)
    for x, t in _both_layouts(tch, a):
        if size > t.shape[dim]:
            continue
        _same(x.unfold(dim, size, step), t.unfold(dim, size, step))


def test_tensor_unfold_of_0d_and_empty(tch):
    _same(foundry.tensor(4.0).unfold(0, 1, 1), tch.tensor(4.0).unfold(0, 1, 1))
    e = np.zeros((0, 3), np.float32)
    _same(foundry.tensor(e).unfold(1, 2, 1), tch.tensor(e).unfold(1, 2, 1))


def test_tensor_unfold_is_a_view():
    x = foundry.arange(6.0)
    w = x.unfold(0, 2, 2)
    w[1, 0] = 50.0
    assert x.tolist() == [0.0, 1.0, 50.0, 3.0, 4.0, 5.0]


def test_tensor_unfold_errors():
    x = foundry.zeros(2, 3)
    with pytest.raises(ValueError, match="do not fit dim 1 of size 3"):
        x.unfold(1, 4, 1)
    with pytest.raises(ValueError, match="step 0"):
        x.unfold(1, 2, 0)
    with pytest.raises(ValueError, match="size -1"):
        x.unfold(0, -1, 1)


# ------------------------------------------- nn.functional unfold / fold

FOLD_CASES = [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=2),
              dict(kernel_size=3, padding=1),
              dict(kernel_size=(3, 2), dilation=(2, 1), padding=(1, 2),
                   stride=(1, 3)),
              dict(kernel_size=1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", FOLD_CASES)
def test_nn_unfold_and_fold_match_torch(tch, rng, dtype, kw):
    a = rng.integers(-4, 5, (2, 3, 6, 7)).astype(dtype)
    x, t = _pair(tch, a)
    cols_f = F.unfold(x, **kw)
    cols_t = tch.nn.functional.unfold(t, **kw)
    _same(cols_f, cols_t)
    _same(F.unfold(x[0], **kw), tch.nn.functional.unfold(t[0], **kw))
    _same(F.unfold(x.transpose(2, 3), **kw),
          tch.nn.functional.unfold(t.transpose(2, 3), **kw))
    c = cols_t.numpy()  # integer values: sums of overlaps are exact
    _same(F.fold(foundry.tensor(c), (6, 7), **kw),
          tch.nn.functional.fold(tch.tensor(c), (6, 7), **kw))
    _same(F.fold(foundry.tensor(c[1]), (6, 7), **kw),
          tch.nn.functional.fold(tch.tensor(c[1]), (6, 7), **kw))


def test_nn_unfold_and_fold_of_empty_batches(tch):
    e = np.zeros((0, 2, 4, 4), np.float32)
    _same(F.unfold(foundry.tensor(e), 2),
          tch.nn.functional.unfold(tch.tensor(e), 2))
    c = np.zeros((0, 8, 9), np.float32)
    _same(F.fold(foundry.tensor(c), 4, 2),
          tch.nn.functional.fold(tch.tensor(c), 4, 2))


@pytest.mark.parametrize("kw", FOLD_CASES[:4])
def test_nn_unfold_and_fold_gradients_match_torch(tch, kw):
    _grad_matches(tch, lambda x: F.unfold(x, **kw),
                  lambda x: tch.nn.functional.unfold(x, **kw), [(2, 2, 5, 6)])
    n = tch.nn.functional.unfold(tch.zeros(2, 2, 5, 6), **kw).shape
    _grad_matches(tch, lambda x: F.fold(x, (5, 6), **kw),
                  lambda x: tch.nn.functional.fold(x, (5, 6), **kw), [n])


def test_nn_unfold_records_fold_as_its_gradient():
    x = foundry.randn(1, 2, 4, 4, requires_grad=True)
    assert F.unfold(x, 2).grad_fn is not None
    c = foundry.randn(1, 8, 9, requires_grad=True)
    assert F.fold(c, 4, 2).grad_fn is not None


def test_unfold_fold_modules_match_functional(tch, rng):
    a = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    m = foundry.nn.Unfold(kernel_size=2, stride=1, padding=1)
    tm = tch.nn.Unfold(kernel_size=2, stride=1, padding=1)
    _same(m(foundry.tensor(a)), tm(tch.tensor(a)))
    c = rng.integers(-3, 4, (1, 8, 16)).astype(np.float32)
    f = foundry.nn.Fold(output_size=(5, 5), kernel_size=2)
    tf = tch.nn.Fold(output_size=(5, 5), kernel_size=2)
    _same(f(foundry.tensor(c)), tf(tch.tensor(c)))
    assert "kernel_size=2" in repr(f)


def test_nn_unfold_and_fold_errors():
    with pytest.raises(ValueError, match=r"\[N, C, H, W\]"):
        F.unfold(foundry.zeros(2, 3), 2)
    with pytest.raises(ValueError, match="no block fits"):
        F.unfold(foundry.zeros(1, 1, 2, 3), 3)
    with pytest.raises(ValueError, match="must be >= 1"):
        F.unfold(foundry.zeros(1, 1, 4, 4), 2, stride=0)
    with pytest.raises(ValueError, match="divisible by 4"):
        F.fold(foundry.zeros(1, 3, 2), (2, 3), 2)
    with pytest.raises(ValueError, match="must be the 4 blocks"):
        F.fold(foundry.zeros(1, 4, 3), (3, 3), 2)
    with pytest.raises(ValueError, match="pair"):
        F.fold(foundry.zeros(1, 4, 4), (3, 3, 3), 2)


# ----------------------------------------------------- repeat_interleave

@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_interleave_matches_torch(tch, rng, dtype):
    a = _data(rng, (3, 4), dtype)
    for x, t in _both_layouts(tch, a):
        _same(x.repeat_interleave(2), t.repeat_interleave(2))
        _same(foundry.repeat_interleave(x, 3, dim=0),
              tch.repeat_interleave(t, 3, dim=0))
        n = t.shape[1]
        r = np.arange(n) % 3
        _same(x.repeat_interleave(foundry.tensor(r), dim=-1),
              t.repeat_interleave(tch.tensor(r), dim=-1))
        _same(x.repeat_interleave(foundry.tensor([2]), dim=1),
              t.repeat_interleave(tch.tensor([2]), dim=1))
        _same(x.repeat_interleave(0, dim=1), t.repeat_interleave(0, dim=1))


def test_repeat_interleave_forms_and_output_size(tch):
    r = [1, 0, 3]
    _same(foundry.repeat_interleave(foundry.tensor(r)),
          tch.repeat_interleave(tch.tensor(r)))
    _same(foundry.repeat_interleave(foundry.tensor(r, dtype=foundry.int32)),
          tch.repeat_interleave(tch.tensor(r, dtype=tch.int32)))
    x, t = foundry.tensor([1.0, 2.0, 3.0]), tch.tensor([1.0, 2.0, 3.0])
    _same(x.repeat_interleave(foundry.tensor(r), dim=0, output_size=4),
          t.repeat_interleave(tch.tensor(r), dim=0, output_size=4))
    _same(foundry.tensor(5.0).repeat_interleave(3),
          tch.tensor(5.0).repeat_interleave(3))
    # torch rejects dim=0 for a 0-d input here; Foundry treats it as 1-D,
    # as torch does without a dim
    assert foundry.tensor(5.0).repeat_interleave(2, dim=0).tolist() == \
        [5.0, 5.0]
    e = np.zeros((0, 2), np.float32)
    _same(foundry.tensor(e).repeat_interleave(2, dim=1),
          tch.tensor(e).repeat_interleave(2, dim=1))


def test_repeat_interleave_errors():
    x = foundry.zeros(2, 3)
    with pytest.raises(ValueError, match="not be negative"):
        x.repeat_interleave(foundry.tensor([1, -1]), dim=0)
    with pytest.raises(ValueError, match="3 entries but dim 0 has size 2"):
        x.repeat_interleave(foundry.tensor([1, 1, 1]), dim=0)
    with pytest.raises(TypeError, match="integer tensor"):
        x.repeat_interleave(foundry.tensor([1.0, 1.0]), dim=0)
    with pytest.raises(ValueError, match="output_size = 4"):
        x.repeat_interleave(foundry.tensor([1, 2]), dim=0, output_size=4)
    with pytest.raises(ValueError, match="not be negative"):
        x.repeat_interleave(-1)
    with pytest.raises(foundry.FoundryError, match="out of range"):
        x.repeat_interleave(2, dim=2)


# ------------------------------------------- nonzero and masked_select

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4, 5), (7,), (), (0, 3), (2, 1)])
def test_nonzero_matches_torch(tch, rng, dtype, shape):
    a = _data(rng, shape, dtype)
    if dtype != "bool":
        a = a * (rng.random(shape) < 0.5)
    for x, t in _both_layouts(tch, np.asarray(a)):
        _same(foundry.nonzero(x), tch.nonzero(t))
        _same(foundry.argwhere(x), tch.argwhere(t))
        got, want = x.nonzero(as_tuple=True), t.nonzero(as_tuple=True)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g.contiguous(), w)


def test_nonzero_counts_nan_and_negative_zero_like_torch(tch):
    a = np.array([0.0, -0.0, np.nan, np.inf, 1e-30], np.float32)
    _same(foundry.tensor(a).nonzero(), tch.tensor(a).nonzero())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("xs,ms", [((3, 4), (3, 4)), ((3, 4), (4,)),
                                   ((4,), (3, 4)), ((3, 1), (1, 4)),
                                   ((), (2, 2)), ((2, 2), ()), ((0, 3), (3,))])
def test_masked_select_matches_torch(tch, rng, dtype, xs, ms):
    x, t = _pair(tch, _data(rng, xs, dtype))
    m, tm = _pair(tch, rng.random(ms) < 0.5)
    _same(foundry.masked_select(x, m), tch.masked_select(t, tm))
    _same(x.masked_select(m), t.masked_select(tm))


def test_masked_select_non_contiguous(tch, rng):
    a = _data(rng, (4, 6), "float32")
    mk = rng.random((6, 4)) < 0.5
    x, t = _pair(tch, a)
    m, tm = _pair(tch, mk)
    _same(x[:, ::2].masked_select(m[::2].transpose(0, 1)),
          t[:, ::2].masked_select(tm[::2].T))


def test_masked_select_errors():
    x = foundry.zeros(2, 3)
    with pytest.raises(TypeError, match="mask must be bool"):
        x.masked_select(x)
    with pytest.raises(ValueError, match="do not broadcast"):
        x.masked_select(foundry.ones(3, 2, dtype=foundry.bool))
    with pytest.raises(TypeError, match="foundry.Tensor"):
        x.masked_select([[True]])


# -------------------------------------------------------- take_along_dim

@pytest.mark.parametrize("dtype", DTYPES)
def test_take_along_dim_matches_torch(tch, rng, dtype):
    a = _data(rng, (3, 4, 5), dtype)
    x, t = _pair(tch, a)
    i = rng.integers(-5, 5, (3, 4, 2))
    _same(foundry.take_along_dim(x, foundry.tensor(i), -1),
          tch.take_along_dim(t, tch.tensor(i), -1))
    j = rng.integers(0, 3, (2, 1, 5))  # broadcasts over dim 1
    _same(x.take_along_dim(foundry.tensor(j), 0),
          t.take_along_dim(tch.tensor(j), 0))
    k = rng.integers(0, 4, (1, 6, 1))  # input broadcasts too
    _same(x[:1].take_along_dim(foundry.tensor(k), 1),
          t[:1].take_along_dim(tch.tensor(k), 1))
    f = rng.integers(0, 60, (2, 3))
    _same(foundry.take_along_dim(x, foundry.tensor(f)),
          tch.take_along_dim(t, tch.tensor(f)))
    xt, tt = x.transpose(0, 2), t.transpose(0, 2)
    i2 = rng.integers(0, 4, (5, 4, 3))
    _same(xt.take_along_dim(foundry.tensor(i2), 1),
          tt.take_along_dim(tch.tensor(i2), 1))


def test_take_along_dim_of_0d_and_empty(tch):
    x, t = foundry.tensor(3.0), tch.tensor(3.0)
    i, ti = foundry.tensor(0), tch.tensor(0)
    _same(x.take_along_dim(i), t.take_along_dim(ti))
    with pytest.raises(ValueError, match="0-d"):
        x.take_along_dim(i, 0)  # as torch: no dim to gather along
    e = np.zeros((2, 0), np.int64)
    y, ty = _pair(tch, np.ones((2, 3), np.float32))
    _same(y.take_along_dim(foundry.tensor(e), 1),
          ty.take_along_dim(tch.tensor(e), 1))


def test_take_along_dim_errors():
    x = foundry.zeros(2, 3)
    with pytest.raises(ValueError, match="same number of dims"):
        x.take_along_dim(foundry.zeros(2, dtype=foundry.int64), 0)
    with pytest.raises(TypeError, match="integer tensor"):
        x.take_along_dim(x, 1)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        x.take_along_dim(foundry.full((2, 1), 5, dtype=foundry.int64), 1)
    with pytest.raises(ValueError, match="do not broadcast"):
        x.take_along_dim(foundry.zeros(3, 1, dtype=foundry.int64), 1)


# ------------------------------------------------------- view(dtype)

VIEW_PAIRS = [("float32", "int32"), ("float32", "int16"), ("float32", "uint8"),
              ("int16", "float32"), ("uint8", "float64"), ("float64", "int64"),
              ("int64", "float32"), ("bool", "int8"), ("float32", "float32")]


@pytest.mark.parametrize("src,dst", VIEW_PAIRS)
def test_view_dtype_matches_torch(tch, rng, src, dst):
    a = _data(rng, (3, 8), src) if src != "uint8" else \
        rng.integers(0, 255, (3, 8)).astype("uint8")
    x, t = _pair(tch, a)
    _same(x.view(getattr(foundry, dst)), t.view(getattr(tch, dst)))
    _same(x[1:].view(getattr(foundry, dst)), t[1:].view(getattr(tch, dst)))


def test_view_dtype_of_empty_and_size_one_dims(tch):
    for shape in [(0, 4), (1, 4), (3, 0)]:
        x, t = foundry.zeros(*shape), tch.zeros(*shape)
        _same(x.view(foundry.int8), t.view(tch.int8))
    for shape in [(0, 4), (1, 4)]:
        x, t = foundry.zeros(*shape), tch.zeros(*shape)
        _same(x.view(foundry.float64), t.view(tch.float64))
    # torch's rule holds for empty tensors too: [2, 0] has strides (1, 1)
    with pytest.raises(RuntimeError):
        tch.zeros(2, 0).view(tch.float64)
    with pytest.raises(ValueError, match="divisible by 2"):
        foundry.zeros(2, 0).view(foundry.float64)
    # the second row alone: offset 4 floats, a size-1 leading dim
    x, t = foundry.zeros(2, 4), tch.zeros(2, 4)
    _same(x[1:].view(foundry.float64), t[1:].view(tch.float64))


def test_view_dtype_shares_memory():
    x = foundry.zeros(2, 2)
    v = x.view(foundry.int32)
    v[0, 1] = 0x3F800000  # the bits of 1.0f
    assert x.tolist() == [[0.0, 1.0], [0.0, 0.0]]
    assert x.view(foundry.uint8).shape == (2, 8)


def test_view_dtype_errors():
    x = foundry.zeros(3, 4)
    with pytest.raises(ValueError, match="stride must be 1"):
        x.t().view(foundry.int16)
    with pytest.raises(ValueError, match="0-d"):
        foundry.tensor(1.0).view(foundry.int16)
    with pytest.raises(ValueError, match="divisible by 2"):
        foundry.zeros(3, dtype=foundry.int16).view(foundry.float32)
    with pytest.raises(ValueError, match="divisible by 2"):
        foundry.zeros(3, 4, dtype=foundry.int16)[:, 1:3].view(foundry.float32)
    x.view(2, 6)  # the shape form still works
    with pytest.raises(ValueError):
        x.t().view(12)


# ------------------------------------------------------------ gradients

GRADS = [
    ("flip", lambda m, x: m.flip(x, (0, 2)), [(2, 3, 4)]),
    ("fliplr", lambda m, x: m.fliplr(x.transpose(0, 1)), [(3, 4)]),
    ("roll", lambda m, x: m.roll(x, (1, -2), (0, 1)), [(3, 4)]),
    ("roll_flat", lambda m, x: m.roll(x, 5), [(3, 4)]),
    ("diag_embed", lambda m, x: m.diag(x, -1), [(4,)]),
    ("diag_take", lambda m, x: m.diag(x, 1), [(3, 5)]),
    ("diagonal", lambda m, x: m.diagonal(x.transpose(0, 2), 1, 0, 2),
     [(3, 2, 4)]),
    ("unfold", lambda m, x: x.unfold(1, 3, 2), [(2, 7)]),
    ("unfold_overlap", lambda m, x: x.unfold(0, 3, 1), [(6,)]),
    ("repeat_interleave", lambda m, x: m.repeat_interleave(
        x, m.tensor([2, 0, 1]), dim=1), [(2, 3)]),
    ("masked_select", lambda m, x: m.masked_select(
        x, m.tensor([True, False, True])), [(2, 3)]),
    ("take_along_dim", lambda m, x: m.take_along_dim(
        x, m.tensor([[0, 0, 2], [1, 2, 2]]), 1), [(1, 3)]),
    ("take_along_flat", lambda m, x: m.take_along_dim(x, m.tensor([5, 5, 0])),
     [(2, 3)]),
]


@pytest.mark.parametrize("name,f,shapes", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_match_torch(tch, name, f, shapes):
    _grad_matches(tch, lambda *x: f(foundry, *x), lambda *x: f(tch, *x),
                  shapes)


# ------------------------------------------------------ the test device

def test_ops_run_on_the_test_device(test_device, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = foundry.tensor(a)
    d = x.to(test_device)
    m = foundry.tensor(a > 0)
    idx = foundry.tensor([[2, 0, 1, 3]] * 3)
    cases = [
        lambda t: t.flip(0, 1), lambda t: t.roll((1, 2), (0, 1)),
        lambda t: t.roll(-3), lambda t: t.diag(1), lambda t: t.diagonal(-1),
        lambda t: t.unfold(1, 2, 1), lambda t: t.repeat_interleave(2, dim=0),
        lambda t: t.repeat_interleave(
            foundry.tensor([1, 0, 2]).to(t.device), dim=0),
        lambda t: t.nonzero(),
        lambda t: t.masked_select(m.to(t.device)),
        lambda t: t.take_along_dim(idx.to(t.device), 1),
        lambda t: t.view(foundry.int32),
        lambda t: F.unfold(t.reshape(1, 1, 3, 4), 2),
        lambda t: F.fold(t.reshape(1, 4, 3), (2, 4), 2),
    ]
    for f in cases:
        r = f(d)
        assert r.device == test_device
        np.testing.assert_array_equal(np.asarray(r.to("cpu")),
                                      np.asarray(f(x)))


def test_gradients_on_the_test_device_match_the_cpu(test_device, rng):
    a = rng.standard_normal((3, 4))
    cases = [
        lambda t: t.flip(1), lambda t: t.roll(1, 0), lambda t: t.diagonal(1),
        lambda t: t.unfold(1, 2, 1), lambda t: t.diag(),
        lambda t: t.masked_select(t > 0),
        lambda t: t.repeat_interleave(2, dim=1),
        lambda t: foundry.einsum("ij,kj->ik", t, t),
        lambda t: F.fold(F.unfold(t.reshape(1, 1, 3, 4), 2), (3, 4), 2),
    ]
    for f in cases:
        grads = []
        for dev in ("cpu", test_device):
            x = foundry.tensor(a).to(dev).requires_grad_()
            f(x).sum().backward()
            grads.append(np.asarray(x.grad.to("cpu")))
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=0)
