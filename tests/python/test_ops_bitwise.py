"""Bitwise ops (& | ^ ~ << >> and bitwise_*) against PyTorch: integer
dtypes are bitwise (not logical, as they were), bool is logical, floats
raise TypeError, shifts follow PyTorch for negative and oversized counts.
Integer results are exact, so every comparison is exact."""
import operator

import numpy as np
import pytest

import foundry as F

INTS = ["int8", "uint8", "int16", "int32", "int64"]
BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor"]
SHIFTS = ["bitwise_left_shift", "bitwise_right_shift"]
OPS = {"bitwise_and": operator.and_, "bitwise_or": operator.or_,
       "bitwise_xor": operator.xor, "bitwise_left_shift": operator.lshift,
       "bitwise_right_shift": operator.rshift}
IOPS = {"bitwise_and": operator.iand, "bitwise_or": operator.ior,
        "bitwise_xor": operator.ixor, "bitwise_left_shift": operator.ilshift,
        "bitwise_right_shift": operator.irshift}


def values(rng, dt, shape):
    info = np.iinfo(dt)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dt)


def counts(rng, shape):
    """Shift counts PyTorch defines, negative and past the width too."""
    return rng.integers(-3, 70, size=shape).astype(np.int64)


def same(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def pair(tch, x):
    return F.tensor(x), tch.tensor(x)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", BINARY)
def test_bitwise_on_integers_matches_torch(tch, rng, op, dt):
    x, y = values(rng, dt, (3, 4)), values(rng, dt, (3, 4))
    (a, ta), (b, tb) = pair(tch, x), pair(tch, y)
    same(getattr(F, op)(a, b), getattr(tch, op)(ta, tb))
    same(OPS[op](a, b), OPS[op](ta, tb))
    same(getattr(a, op)(b), getattr(ta, op)(tb))


@pytest.mark.parametrize("op", BINARY)
def test_bitwise_on_bool_is_logical_and_stays_bool(tch, op):
    x = np.array([True, True, False, False])
    y = np.array([True, False, True, False])
    (a, ta), (b, tb) = pair(tch, x), pair(tch, y)
    same(OPS[op](a, b), OPS[op](ta, tb))
    same(OPS[op](a, True), OPS[op](ta, True))
    same(OPS[op](a, 3), OPS[op](ta, 3))  # bool with an int: int64


def test_and_on_int_tensors_is_no_longer_logical():
    # Before: t & 3 was logical_and and gave bool [True, True, False].
    t = F.tensor([5, 6, 0])
    got = t & 3
    assert got.dtype is F.int64
    assert got.tolist() == [1, 2, 0]
    assert (~F.tensor([5])).tolist() == [-6]


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", SHIFTS)
def test_shifts_match_torch_for_every_count(tch, rng, op, dt):
    x = values(rng, dt, (5, 6))
    c = counts(rng, (5, 6)).astype(dt) if dt != "uint8" else \
        rng.integers(0, 255, size=(5, 6)).astype(dt)
    (a, ta), (b, tb) = pair(tch, x), pair(tch, c)
    same(getattr(F, op)(a, b), getattr(tch, op)(ta, tb))
    same(OPS[op](a, b), OPS[op](ta, tb))
    # int64 counts (promotes): negative and >= 64
    c64 = counts(rng, (5, 6))
    same(OPS[op](a, F.tensor(c64)), OPS[op](ta, tch.tensor(c64)))


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("s", [-1, 0, 1, 3, 7, 8, 9, 15, 16, 31, 33, 63,
                               64, 100])
def test_shift_by_a_python_int_matches_torch(tch, rng, dt, s):
    x = values(rng, dt, (7,))
    a, ta = pair(tch, x)
    same(a << s, ta << s)
    same(a >> s, ta >> s)


@pytest.mark.parametrize("dt", INTS)
def test_python_ints_on_either_side_keep_the_dtype(tch, rng, dt):
    x = values(rng, dt, (2, 3))
    a, ta = pair(tch, x)
    for s in (3, 1, 0, 5):
        same(a & s, ta & s)
        same(s & a, s & ta)
        same(a | s, ta | s)
        same(s | a, s | ta)
        same(a ^ s, ta ^ s)
        same(s ^ a, s ^ ta)
    small = F.tensor(np.array([0, 1, 2, 3], dtype=dt))
    tsmall = tch.tensor(np.array([0, 1, 2, 3], dtype=dt))
    same(3 << small, 3 << tsmall)
    same(100 >> small, 100 >> tsmall)


@pytest.mark.parametrize("op", BINARY + SHIFTS)
def test_in_place_forms_and_operators_write_into_self(tch, rng, op):
    x, y = values(rng, "int32", (3, 4)), rng.integers(0, 20, (4,)).astype(
        np.int32)
    a, ta = pair(tch, x)
    b, tb = pair(tch, y)  # broadcasts to a's shape
    ref = OPS[op](ta, tb)
    c = a.clone()
    assert getattr(c, op + "_")(b) is c
    same(c, ref)
    d = a.clone()
    d2 = IOPS[op](d, b)
    assert d2 is d
    same(d, ref)
    e = a.clone()
    e = IOPS[op](e, 2)
    same(e, OPS[op](ta, 2))


def test_invert_matches_torch(tch, rng):
    for dt in INTS:
        a, ta = pair(tch, values(rng, dt, (4,)))
        same(~a, ~ta)
        same(a.bitwise_not(), ta.bitwise_not())
        same(F.bitwise_not(a), tch.bitwise_not(ta))
    b, tb = pair(tch, np.array([True, False]))
    same(~b, ~tb)
    c = b.clone()
    assert c.bitwise_not_() is c
    same(c, ~tb)


def test_non_contiguous_broadcast_0d_and_empty(tch, rng):
    x = values(rng, "int16", (4, 6))
    a, ta = pair(tch, x)
    at, tat = a.t(), ta.t()  # [6, 4], strided
    row = values(rng, "int16", (4,))
    r, tr = pair(tch, row)
    same(at & r, tat & tr)
    same(at ^ a.t()[0:1], tat ^ ta.t()[0:1])
    z, tz = F.tensor(np.int16(5)), tch.tensor(np.int16(5))
    same(a | z, ta | tz)
    same(z | z, tz | tz)
    same(a[:, ::2] << 2, ta[:, ::2] << 2)
    e, te = F.zeros(0, 3, dtype=F.int32), tch.zeros(0, 3, dtype=tch.int32)
    same(e & e, te & te)
    same(~e, ~te)
    same(e >> 1, te >> 1)


@pytest.mark.parametrize("op", BINARY + SHIFTS)
def test_float_operands_raise_type_error(op):
    f, i = F.tensor([1.0, 2.0]), F.tensor([1, 2])
    with pytest.raises(TypeError, match="only defined on integer"):
        getattr(F, op)(f, i)
    with pytest.raises(TypeError):
        OPS[op](i, 2.0)  # a float number counts as a float
    with pytest.raises(TypeError):
        OPS[op](f, f)
    with pytest.raises(TypeError):
        getattr(i.clone(), op + "_")(f)
    with pytest.raises(RuntimeError):  # FoundryError, as torch's
        OPS[op](f, 1)


def test_invert_of_float_and_shift_of_bool_raise_type_error():
    with pytest.raises(TypeError, match="bitwise_not"):
        ~F.tensor([1.0])
    b = F.tensor([True])
    with pytest.raises(TypeError, match="shifts of bool"):
        b << b
    with pytest.raises(TypeError):
        F.bitwise_right_shift(b, b)


def test_other_types_are_not_operands():
    t = F.tensor([1, 2])
    with pytest.raises(TypeError):
        t & "x"
    with pytest.raises(TypeError):
        t.bitwise_and([1, 2])
