"""Every tensor op against numpy (float64 references).

Tolerances: float32 results are compared at rtol 2e-6 / atol 1e-6 for
single roundings (arithmetic) and 1e-5 for the vectorized transcendental
kernels (documented max errors are below 1e-6 relative, plus the float32
rounding of the input); float64 at 1e-12.  Reductions accumulate in double
(include/foundry/ops.h), so 1e-6 relative holds for float32 sums of a few
hundred terms."""
import math

import numpy as np
import pytest

import foundry as F

SHAPES = [(), (5,), (3, 4), (2, 3, 4)]


def ref(a):
    return a.detach().numpy() if isinstance(a, F.Tensor) else a


def close(got, want, rtol=2e-6, atol=1e-6):
    g = ref(got)
    np.testing.assert_allclose(g, want, rtol=rtol, atol=atol,
                               equal_nan=True)
    assert tuple(g.shape) == tuple(np.shape(want))


def make(rng, shape, dtype=np.float32, positive=False):
    a = rng.standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.1
    return np.asarray(a, dtype=dtype)


def erf(x):
    return np.vectorize(math.erf)(x)


UNARY = {
    "neg": (np.negative, False), "abs": (np.abs, False),
    "sign": (np.sign, False), "exp": (np.exp, False),
    "log": (np.log, True), "log1p": (np.log1p, True),
    "expm1": (np.expm1, False), "sqrt": (np.sqrt, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), True), "sin": (np.sin, False),
    "cos": (np.cos, False), "tanh": (np.tanh, False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), False),
    "relu": (lambda x: np.maximum(x, 0), False),
    "silu": (lambda x: x / (1 + np.exp(-x)), False),
    "gelu": (lambda x: x * 0.5 * (1 + erf(x / np.sqrt(2))), False),
    "floor": (np.floor, False), "ceil": (np.ceil, False),
    "round": (np.round, False), "trunc": (np.trunc, False),
    "reciprocal": (np.reciprocal, True), "square": (np.square, False),
    "erf": (erf, False), "log2": (np.log2, True),
    "exp2": (np.exp2, False),
    # inverse functions on their domains: positive inputs are |x| + 0.1,
    # so asin/acos/atanh get tanh of them and acosh 1 + them (see make_for)
    "tan": (np.tan, False), "atan": (np.arctan, False),
    "asin": (np.arcsin, "unit"), "acos": (np.arccos, "unit"),
    "atanh": (np.arctanh, "unit"), "arcsin": (np.arcsin, "unit"),
    "arccos": (np.arccos, "unit"), "arctanh": (np.arctanh, "unit"),
    "arctan": (np.arctan, False),
    "sinh": (np.sinh, False), "cosh": (np.cosh, False),
    "asinh": (np.arcsinh, False), "arcsinh": (np.arcsinh, False),
    "acosh": (np.arccosh, "gt1"), "arccosh": (np.arccosh, "gt1"),
    "log10": (np.log10, True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_unary(name, dtype, shape, rng):
    fn, positive = UNARY[name]
    a = make(rng, shape, dtype, positive is True)
    if positive == "unit":
        a = np.asarray(np.tanh(a), dtype)
    elif positive == "gt1":
        a = np.asarray(np.abs(a) + 1.1, dtype)
    want = fn(a.astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    t = F.from_numpy(a)
    close(getattr(t, name)(), want, tol, tol)
    if name in F.__dict__:
        close(getattr(F, name)(t), want, tol, tol)
    # the in-place form writes into the tensor
    if name != "gelu":
        c = F.tensor(a)
        assert getattr(c, name + "_")() is c
        close(c, want, tol, tol)


def test_unary_on_a_transposed_view(rng):
    a = make(rng, (4, 6))
    t = F.from_numpy(a).T
    close(t.exp(), np.exp(a.T.astype(np.float64)), 1e-5, 1e-6)


def test_predicates_and_integer_dtypes():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    t = F.from_numpy(a)
    for name, fn in (("isnan", np.isnan), ("isinf", np.isinf),
                     ("isfinite", np.isfinite)):
        r = getattr(t, name)()
        assert r.dtype is F.bool
        np.testing.assert_array_equal(r.numpy(), fn(a))
    i = F.tensor([-3, 0, 5])
    assert i.abs().dtype is F.int64 and i.abs().tolist() == [3, 0, 5]
    assert i.exp().dtype is F.float32  # integer inputs give float32
    assert (~F.tensor([True, False])).tolist() == [False, True]


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": np.divide, "maximum": np.maximum, "minimum": np.minimum,
    "pow": np.power,
}
BCAST = [((3, 4), (3, 4)), ((3, 1), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)),
         ((5,), ())]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BCAST)
def test_binary_broadcasts_like_numpy(name, shapes, rng):
    a = make(rng, shapes[0], positive=name == "pow")
    b = make(rng, shapes[1])
    want = BINARY[name](a.astype(np.float64), b.astype(np.float64))
    close(getattr(F.tensor(a), name)(F.tensor(b)), want, 1e-5, 1e-6)
    close(getattr(F, name)(F.tensor(a), F.tensor(b)), want, 1e-5, 1e-6)


def test_operators_match_numpy(rng):
    a, b = make(rng, (3, 4)), make(rng, (4,), positive=True)
    ta, tb = F.tensor(a), F.tensor(b)
    A, B = a.astype(np.float64), b.astype(np.float64)
    close(ta + tb, A + B)
    close(ta - tb, A - B)
    close(ta * tb, A * B)
    close(ta / tb, A / B, 1e-6)
    close(tb ** 2, B ** 2)
    close(2 ** tb, 2 ** B, 1e-6)
    close(3 - ta, 3 - A)
    close(1 / tb, 1 / B, 1e-6)
    close(-ta, -A)
    close(ta // tb, np.floor_divide(A, B))
    close(ta % tb, np.mod(A, B), 1e-5, 1e-5)
    close(ta @ ta.T, A @ A.T, 1e-5, 1e-5)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        np.testing.assert_array_equal(getattr(ta, op)(tb).numpy(),
                                      getattr(a, op)(b))
        np.testing.assert_array_equal(getattr(ta, op)(0.5).numpy(),
                                      getattr(a, op)(np.float32(0.5)))
    np.testing.assert_array_equal((0.5 < ta).numpy(), 0.5 < a)


def test_in_place_operators_write_into_the_tensor(rng):
    a = make(rng, (3, 4))
    t = F.tensor(a)
    same = t
    t += 1
    t *= F.tensor([1.0, 2.0, 3.0, 4.0])
    t -= 0.5
    t /= 2
    assert t is same
    want = ((a.astype(np.float64) + 1) * [1, 2, 3, 4] - 0.5) / 2
    close(t, want, 1e-6)
    i = F.tensor([1, 2, 3])
    with pytest.raises(TypeError):  # float result into an int tensor
        i /= 2


def test_dtype_promotion_follows_pytorch():
    f32, f64 = F.ones(2), F.ones(2, dtype=F.float64)
    i64, i32, u8 = F.ones(2, dtype=F.int64), F.ones(2, dtype=F.int32), \
        F.ones(2, dtype=F.uint8)
    assert (f32 + f64).dtype is F.float64
    assert (i64 + f32).dtype is F.float32
    assert (i32 + i64).dtype is F.int64
    assert (u8 + F.ones(2, dtype=F.int8)).dtype is F.int16
    assert (i64 + 2).dtype is F.int64  # python int keeps int dtype
    assert (i64 + 2.5).dtype is F.float32
    assert (f32 * 2.0).dtype is F.float32  # python float does not widen
    assert (F.ones(2, dtype=F.float16) + F.ones(2, dtype=F.bfloat16)
            ).dtype is F.float32
    assert (i64 / 2).dtype is F.float32


REDUCE = {"sum": np.sum, "mean": np.mean, "prod": np.prod,
          "amax": np.max, "amin": np.min, "logsumexp": None}


@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False),
                                         (1, True), ((0, 2), False),
                                         (-1, True)])
def test_reductions(name, dim, keepdim, rng):
    a = make(rng, (3, 4, 5))
    A = a.astype(np.float64)
    axis = dim if not isinstance(dim, list) else tuple(dim)
    if name == "logsumexp":
        m = np.max(A, axis=axis, keepdims=True)
        want = np.log(np.sum(np.exp(A - m), axis=axis, keepdims=True)) + m
        if not keepdim:
            want = np.squeeze(want, axis=axis) if axis is not None else \
                want.reshape(())
    else:
        want = REDUCE[name](A, axis=axis, keepdims=keepdim)
    got = getattr(F.tensor(a), name)(dim=dim, keepdim=keepdim)
    close(got, want, 1e-6, 1e-6)


def test_var_std_norm_and_arg_reductions(rng):
    a = make(rng, (4, 6))
    A = a.astype(np.float64)
    t = F.tensor(a)
    close(t.var(), A.var(ddof=1), 1e-6)
    close(t.var(1, unbiased=False), A.var(axis=1), 1e-6)
    close(t.std(0, correction=0), A.std(axis=0), 1e-6)
    close(t.norm(), np.linalg.norm(A), 1e-6)
    close(t.norm(1, dim=1), np.abs(A).sum(axis=1), 1e-6)
    close(t.norm(float("inf")), np.abs(A).max(), 1e-6)
    assert t.argmax().item() == A.argmax()
    np.testing.assert_array_equal(t.argmin(1).numpy(), A.argmin(axis=1))
    v, i = t.max(dim=1)
    close(v, A.max(axis=1))
    np.testing.assert_array_equal(i.numpy(), A.argmax(axis=1))
    v, i = F.min(t, 0, keepdim=True)
    assert tuple(v.shape) == (1, 6)
    close(t.cumsum(1), np.cumsum(A, axis=1), 1e-6, 1e-6)
    b = F.tensor([[True, False], [True, True]])
    assert b.all(1).tolist() == [False, True] and b.any().item() is True
    assert F.tensor([1, 2, 3]).sum().dtype is F.int64


def test_sort_topk_and_argsort(rng):
    a = make(rng, (3, 7))
    t = F.tensor(a)
    v, i = t.sort(dim=1)
    np.testing.assert_array_equal(v.numpy(), np.sort(a, axis=1))
    np.testing.assert_array_equal(i.numpy(), np.argsort(a, axis=1,
                                                         kind="stable"))
    v, i = t.sort(0, descending=True)
    np.testing.assert_array_equal(v.numpy(), -np.sort(-a, axis=0))
    v, i = t.topk(2)
    np.testing.assert_array_equal(v.numpy(), -np.sort(-a, axis=1)[:, :2])
    np.testing.assert_array_equal(t.argsort(1).numpy(),
                                  np.argsort(a, 1, kind="stable"))


def test_matmul_shapes_like_numpy(rng):
    for sa, sb in [((3, 4), (4, 5)), ((4,), (4,)), ((2, 3, 4), (4, 2)),
                   ((4,), (4, 3)), ((3, 4), (4,)), ((2, 1, 3, 4),
                                                    (5, 4, 2))]:
        a, b = make(rng, sa), make(rng, sb)
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        close(F.tensor(a) @ F.tensor(b), want, 1e-5, 1e-5)
        close(F.matmul(F.tensor(a), F.tensor(b)), want, 1e-5, 1e-5)


def test_shape_ops_match_numpy(rng):
    a = make(rng, (2, 3, 4))
    t = F.tensor(a)
    np.testing.assert_array_equal(t.reshape(4, 6).numpy(), a.reshape(4, 6))
    np.testing.assert_array_equal(t.view(-1, 4).numpy(), a.reshape(-1, 4))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(),
                                  a.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.permute(1, 2, 0).numpy(),
                                  a.transpose(1, 2, 0))
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t.unsqueeze(1).numpy(), a[:, None])
    np.testing.assert_array_equal(t[:, :1].squeeze(1).numpy(), a[:, 0])
    np.testing.assert_array_equal(t.flatten(1).numpy(), a.reshape(2, 12))
    np.testing.assert_array_equal(t[:, :1].expand(2, 3, 4).numpy(),
                                  np.broadcast_to(a[:, :1], (2, 3, 4)))
    np.testing.assert_array_equal(t.repeat(2, 1, 1).numpy(),
                                  np.tile(a, (2, 1, 1)))
    assert not t.transpose(0, 1).is_contiguous()
    assert t.transpose(0, 1).contiguous().is_contiguous()
    np.testing.assert_array_equal(F.cat([t, t], 1).numpy(),
                                  np.concatenate([a, a], 1))
    np.testing.assert_array_equal(F.stack([t, t], 0).numpy(),
                                  np.stack([a, a]))
    parts = t.split(2, dim=2)
    assert [tuple(p.shape) for p in parts] == [(2, 3, 2), (2, 3, 2)]
    parts = t.split([1, 3], dim=2)
    np.testing.assert_array_equal(parts[1].numpy(), a[:, :, 1:])
    assert len(t.chunk(3, 1)) == 3
    np.testing.assert_array_equal(t.narrow(1, 1, 2).numpy(), a[:, 1:3])
    np.testing.assert_array_equal(t.select(2, -1).numpy(), a[:, :, -1])
    m = make(rng, (4, 4))
    np.testing.assert_array_equal(F.tensor(m).tril(-1).numpy(),
                                  np.tril(m, -1))
    np.testing.assert_array_equal(F.tensor(m).triu(1).numpy(),
                                  np.triu(m, 1))
    assert [u.tolist() for u in F.tensor([[1, 2], [3, 4]]).unbind(1)] == \
        [[1, 3], [2, 4]]


def test_indexing_ops_match_numpy(rng):
    a = make(rng, (3, 5))
    t = F.tensor(a)
    idx = np.array([[0, 4, 1], [2, 2, 3], [4, 0, 0]])
    np.testing.assert_array_equal(t.gather(1, F.tensor(idx)).numpy(),
                                  np.take_along_axis(a, idx, 1))
    np.testing.assert_array_equal(
        t.index_select(1, F.tensor([4, 0])).numpy(), a[:, [4, 0]])
    mask = a > 0
    np.testing.assert_array_equal(
        t.masked_fill(F.tensor(mask), -1).numpy(), np.where(mask, -1, a))
    np.testing.assert_array_equal(
        F.where(F.tensor(mask), t, 0.0).numpy(), np.where(mask, a, 0))
    # a float condition is read as != 0 (NaN true, -0.0 false), with a
    # tensor or a broadcast scalar on the false side
    c = np.array([0.0, -0.0, np.nan, 2.0, -1.0], np.float32)
    va = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(
        F.where(F.tensor(c), F.tensor(va), 0.0).numpy(),
        np.where(c != 0, va, 0))
    np.testing.assert_array_equal(
        F.where(F.tensor(c), F.tensor(va), F.tensor(-va)).numpy(),
        np.where(c != 0, va, -va))
    np.testing.assert_array_equal(t.clamp(-0.5, 0.5).numpy(),
                                  np.clip(a, -0.5, 0.5))
    np.testing.assert_array_equal(t.clamp(min=0).numpy(), np.maximum(a, 0))
    z = F.zeros(3, 5)
    src = F.ones(3, 3)
    want = np.zeros((3, 5))
    np.put_along_axis(want, idx, 1, 1)
    np.testing.assert_array_equal(z.scatter(1, F.tensor(idx), src).numpy(),
                                  want)
    add = F.zeros(5).scatter_add(0, F.tensor([0, 0, 3]), F.ones(3))
    assert add.tolist() == [2, 0, 0, 1, 0]
    oh = F.nn.functional.one_hot(F.tensor([0, 2]), 3)
    assert oh.tolist() == [[1, 0, 0], [0, 0, 1]]
    p = F.nn.functional.pad(F.ones(2, 2), (1, 0, 0, 1), value=7)
    np.testing.assert_array_equal(p.numpy(), np.pad(np.ones((2, 2)),
                                                    ((0, 1), (1, 0)),
                                                    constant_values=7))


def test_softmax_rows(rng):
    a = make(rng, (3, 6))
    A = a.astype(np.float64)
    e = np.exp(A - A.max(1, keepdims=True))
    close(F.tensor(a).softmax(1), e / e.sum(1, keepdims=True), 1e-6, 1e-7)
    close(F.tensor(a).log_softmax(-1),
          np.log(e / e.sum(1, keepdims=True)), 1e-5, 1e-6)


def test_creation_matches_numpy():
    np.testing.assert_array_equal(F.arange(5).numpy(), np.arange(5))
    assert F.arange(5).dtype is F.int64
    assert F.arange(0, 1, 0.25).dtype is F.float32
    np.testing.assert_allclose(F.linspace(0, 1, 5).numpy(),
                               np.linspace(0, 1, 5))
    np.testing.assert_array_equal(F.eye(3, 4).numpy(), np.eye(3, 4))
    assert F.full((2, 2), 7).dtype is F.int64
    assert F.full((2, 2), 7.0).tolist() == [[7.0, 7.0], [7.0, 7.0]]
    assert F.zeros(2, 3).shape == (2, 3) and F.ones((4,)).sum().item() == 4
    assert F.zeros_like(F.ones(2, dtype=F.int8)).dtype is F.int8
    assert F.full_like(F.ones(2), 3).tolist() == [3.0, 3.0]
    assert F.empty(0, 3).numel() == 0


def test_random_is_seeded_and_in_range():
    F.manual_seed(7)
    a = F.rand(1000)
    F.manual_seed(7)
    assert F.equal(a, F.rand(1000))
    assert 0 <= a.min().item() and a.max().item() < 1
    r = F.randint(3, 9, (2000,))
    assert r.dtype is F.int64 and r.min().item() == 3 and \
        r.max().item() == 8
    n = F.randn(20000)
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1) < 0.05
