"""foundry.einsum against torch.einsum: explicit and implicit outputs,
ellipsis, repeated labels (traces and diagonals), broadcasting of size-1
dims, sums, batch matmuls, the list form, gradients and errors.

Contractions run as matmuls whose summation order differs from torch's,
so floats compare with a tolerance: F32 within rtol 1e-5 (a few dozen
products of O(1) values, each rounding by 2^-24), F64 within 1e-12;
integers exactly.
"""
import numpy as np
import pytest

import foundry


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else \
        dict(rtol=1e-12, atol=1e-12)


def _close(r, s, dtype):
    assert tuple(r.shape) == tuple(s.shape), (tuple(r.shape), tuple(s.shape))
    a, b = np.asarray(r.detach()), s.detach().numpy()
    if dtype.startswith("int"):
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, **_tol(dtype))


CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iji->j", [(3, 2, 3)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->i", [(4,), (4,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("b...,b->...", [(2, 3, 4), (2,)]),
    ("...ij->...", [(2, 3, 4)]),
    ("i...->i", [(2, 3, 4)]),
    ("...,...->...", [(3, 1), (4,)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("ab,bc,ca->", [(3, 4), (4, 5), (5, 3)]),
    ("ab,cd->", [(2, 3), (4, 5)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("ij,ij->ij", [(3, 1), (1, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("Ab,bA", [(2, 3), (3, 2)]),
    ("bA", [(2, 3)]),
    ("iij,jkk->ik", [(3, 3, 4), (4, 2, 2)]),
    ("", [()]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    (" ij , jk -> ik ", [(3, 4), (4, 5)]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_torch(tch, rng, dtype, eq, shapes):
    arrs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    r = foundry.einsum(eq, *[foundry.tensor(a) for a in arrs])
    s = tch.einsum(eq, *[tch.tensor(a) for a in arrs])
    _close(r, s, dtype)
    assert r.dtype == getattr(foundry, dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_einsum_of_integers_matches_torch(tch, rng, dtype):
    a = rng.integers(-5, 6, (3, 4)).astype(dtype)
    b = rng.integers(-5, 6, (4, 2)).astype(dtype)
    for eq in ["ij,jk->ik", "ij->j", "ij,ij->", "ij->ji"]:
        ops = [a, b] if eq.startswith("ij,jk") else [a] if "," not in eq \
            else [a, a]
        r = foundry.einsum(eq, *[foundry.tensor(x) for x in ops])
        s = tch.einsum(eq, *[tch.tensor(x) for x in ops])
        _close(r, s, dtype)
        assert str(r.dtype).split(".")[-1] == str(s.dtype).split(".")[-1]


def test_einsum_of_non_contiguous_operands(tch, rng):
    a = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32)
    x, y = foundry.tensor(a).t(), foundry.tensor(b)[::2]
    tx, ty = tch.tensor(a).t(), tch.tensor(b)[::2]
    _close(foundry.einsum("ij,kj->ik", x, y), tch.einsum("ij,kj->ik", tx, ty),
           "float32")
    e = foundry.tensor(a)[:, :1].expand(5, 3)  # stride-0 operand
    te = tch.tensor(a)[:, :1].expand(5, 3)
    _close(foundry.einsum("ij,ik->jk", e, x.t()),
           tch.einsum("ij,ik->jk", te, tx.t()), "float32")


def test_einsum_list_form_and_views(tch, rng):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2))
    r = foundry.einsum("ij,jk", [foundry.tensor(a), foundry.tensor(b)])
    s = tch.einsum("ij,jk", [tch.tensor(a), tch.tensor(b)])
    _close(r, s, "float64")
    r = foundry.einsum("ij,jk", (foundry.tensor(a), foundry.tensor(b)))
    _close(r, s, "float64")


def test_einsum_sublist_form_matches_torch(tch, rng):
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal((4, 5))
    x, y, ta, tb = foundry.tensor(a), foundry.tensor(b), tch.tensor(a), \
        tch.tensor(b)
    _close(foundry.einsum(x, [0, 1, 2], y, [2, 30], [30, 0, 1]),
           tch.einsum(ta, [0, 1, 2], tb, [2, 30], [30, 0, 1]), "float64")
    _close(foundry.einsum(x, [..., 2], y, [2, 51]),
           tch.einsum(ta, [..., 2], tb, [2, 51]), "float64")
    with pytest.raises(ValueError, match="not in"):
        foundry.einsum(x, [0, 1, 52])


def test_large_einsum_runs_as_matmul(tch, rng):
    """A batched contraction of realistic size agrees with torch (it goes
    through one matmul per pair; F32 sums of 256 products)."""
    a = rng.standard_normal((8, 64, 256)).astype(np.float32)
    b = rng.standard_normal((8, 256, 96)).astype(np.float32)
    r = foundry.einsum("bmk,bkn->bnm", foundry.tensor(a), foundry.tensor(b))
    s = tch.einsum("bmk,bkn->bnm", tch.tensor(a), tch.tensor(b))
    np.testing.assert_allclose(np.asarray(r), s.numpy(), rtol=1e-4,
                               atol=1e-4)


GRAD_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bkj->bki", [(2, 3, 4), (2, 5, 4)]),
    ("ii->", [(4, 4)]),
    ("iji->ij", [(3, 2, 3)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ab,bc,ca->", [(3, 4), (4, 5), (5, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 1), (1, 4)]),
    ("abc->ca", [(2, 3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_einsum_gradients_match_torch(tch, rng, eq, shapes):
    arrs = [rng.standard_normal(s) for s in shapes]
    xs = [foundry.tensor(a, requires_grad=True) for a in arrs]
    ts = [tch.tensor(a, requires_grad=True) for a in arrs]
    r, s = foundry.einsum(eq, *xs), tch.einsum(eq, *ts)
    w = rng.standard_normal(tuple(s.shape))
    (r * foundry.tensor(w)).sum().backward()
    (s * tch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy(),
                                   rtol=1e-12, atol=1e-12)


ERRORS = [
    ("ij,jk", [(2, 3), (4, 5)], ValueError, "size 4 in operand 1"),
    ("ij", [(2, 3), (2,)], ValueError, "1 terms but 2 operands"),
    ("ij,j", [(2, 3)], ValueError, "more terms than the 1 operands"),
    ("i$", [(2, 3)], ValueError, "invalid subscript '\\$'"),
    ("i1", [(2, 3)], ValueError, "invalid subscript '1'"),
    ("ij->ii", [(2, 2)], ValueError, "appears more than once"),
    ("ij->k", [(2, 2)], ValueError, "does not appear in any input"),
    ("ijk", [(2, 2)], ValueError, "has 2 dims but its term has 3"),
    ("ij", [(2, 2, 2)], ValueError, "no ellipsis"),
    ("ii", [(2, 3)], ValueError, "does not broadcast"),
    ("ii", [(1, 3)], ValueError, "sizes 1 and 3"),
    ("i..j", [(2, 3)], ValueError, "bad ellipsis"),
    ("......", [(2, 3)], ValueError, "bad ellipsis"),
    ("ijk...", [(2, 3)], ValueError, "has 2 dims but its term has 3"),
]


@pytest.mark.parametrize("eq,shapes,exc,msg", ERRORS,
                         ids=[e[0] + "-" + e[3][:12] for e in ERRORS])
def test_einsum_errors(tch, eq, shapes, exc, msg):
    with pytest.raises(exc, match=msg):
        foundry.einsum(eq, *[foundry.zeros(*s) for s in shapes])
    with pytest.raises(RuntimeError):  # torch refuses it too
        tch.einsum(eq, *[tch.zeros(*s) for s in shapes])


def test_einsum_argument_errors():
    with pytest.raises(ValueError, match="at least one operand"):
        foundry.einsum("ij")
    with pytest.raises(TypeError, match="must be a str"):
        foundry.einsum(3, foundry.zeros(2))
    with pytest.raises(TypeError, match="foundry.Tensor"):
        foundry.einsum("i", [1.0, 2.0])


def test_einsum_on_the_test_device(test_device, rng):
    a = foundry.tensor(rng.standard_normal((2, 3, 4)).astype(np.float32))
    b = foundry.tensor(rng.standard_normal((2, 4, 5)).astype(np.float32))
    for eq in ["bij,bjk->bik", "bij->j", "bij,bjk"]:
        r = foundry.einsum(eq, a.to(test_device), b.to(test_device)) if \
            "," in eq else foundry.einsum(eq, a.to(test_device))
        want = foundry.einsum(eq, a, b) if "," in eq else \
            foundry.einsum(eq, a)
        assert r.device == test_device
        np.testing.assert_allclose(np.asarray(r.to("cpu")), np.asarray(want),
                                   rtol=1e-6, atol=1e-6)
