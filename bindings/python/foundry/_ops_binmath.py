"""Bitwise ops and their operators (& | ^ ~ << >>), fmod, and the binary
maths of include/foundry/ops.h (atan2, logaddexp, logaddexp2, copysign,
hypot, lerp, isclose, allclose, nan_to_num): the _BinaryMath methods of
Tensor.

The rules of _ops_arith.py hold: operands broadcast, a Python number
promotes as PyTorch's (an int keeps an integer tensor's dtype, a float
gives float32), the operators return NotImplemented for other types.
"""
import math

from . import _tensor
from ._base import SCALAR, as_tensor_like, error
from ._c import BY_C, check, lib
from ._exports import export
from ._ops_arith import (_doc, _inplace, _method, _operator, _reflected,
                         scalar_kind)

_new = object.__new__

_BITS = ("integer and bool operands only (bool with bool is the logical "
         "op); a float operand raises TypeError.")
_SHIFT = ("integer operands only (bool or float raise TypeError); a count "
          "outside [0, 64) gives 0, or the sign fill for >>, as in PyTorch.")
_FLOAT = "integer and bool operands give float32."


def _wrap(p):
    if not p:
        raise error()
    t = _new(_tensor.Tensor)
    t._p = p
    return t


class _BinaryMath:
    """Bitwise ops, fmod and the binary maths functions."""

    __slots__ = ()

    # ---------------------------------------------------------- bitwise
    bitwise_and = export(_method(
        "bitwise_and", lib.TM_OP_BITWISE_AND, lib.tm_bitwise_and, _doc(
            "self & other, bitwise.", _BITS, "bitwise_and")))
    bitwise_or = export(_method(
        "bitwise_or", lib.TM_OP_BITWISE_OR, lib.tm_bitwise_or, _doc(
            "self | other, bitwise.", _BITS, "bitwise_or")))
    bitwise_xor = export(_method(
        "bitwise_xor", lib.TM_OP_BITWISE_XOR, lib.tm_bitwise_xor, _doc(
            "self ^ other, bitwise.", _BITS, "bitwise_xor")))
    bitwise_left_shift = export(_method(
        "bitwise_left_shift", lib.TM_OP_BITWISE_LEFT_SHIFT,
        lib.tm_bitwise_left_shift, _doc(
            "self << other: the bits of self moved left by other.", _SHIFT,
            "bitwise_left_shift")))
    bitwise_right_shift = export(_method(
        "bitwise_right_shift", lib.TM_OP_BITWISE_RIGHT_SHIFT,
        lib.tm_bitwise_right_shift, _doc(
            "self >> other: the bits of self moved right by other "
            "(arithmetic shift).", _SHIFT, "bitwise_right_shift")))

    @export
    def bitwise_not(self):
        """~self: every bit flipped on integers, logical not on bool.

        A float tensor raises TypeError.  Mirrors torch.bitwise_not and
        torch.Tensor.bitwise_not."""
        return _wrap(lib.tm_bitwise_not(self._p))

    def bitwise_not_(self):
        """In-place bitwise_not: writes ~self into self and returns self.
        Mirrors torch.Tensor.bitwise_not_."""
        check(lib.tm_bitwise_not_(self._p))
        return self

    def __invert__(self):
        """~self; see bitwise_not."""
        return _wrap(lib.tm_bitwise_not(self._p))

    bitwise_and_ = _inplace("bitwise_and_", lib.TM_OP_BITWISE_AND, True)
    bitwise_or_ = _inplace("bitwise_or_", lib.TM_OP_BITWISE_OR, True)
    bitwise_xor_ = _inplace("bitwise_xor_", lib.TM_OP_BITWISE_XOR, True)
    bitwise_left_shift_ = _inplace("bitwise_left_shift_",
                                   lib.TM_OP_BITWISE_LEFT_SHIFT, True)
    bitwise_right_shift_ = _inplace("bitwise_right_shift_",
                                    lib.TM_OP_BITWISE_RIGHT_SHIFT, True)

    __and__ = _operator("__and__", lib.TM_OP_BITWISE_AND, lib.tm_bitwise_and)
    __or__ = _operator("__or__", lib.TM_OP_BITWISE_OR, lib.tm_bitwise_or)
    __xor__ = _operator("__xor__", lib.TM_OP_BITWISE_XOR, lib.tm_bitwise_xor)
    __lshift__ = _operator("__lshift__", lib.TM_OP_BITWISE_LEFT_SHIFT,
                           lib.tm_bitwise_left_shift)
    __rshift__ = _operator("__rshift__", lib.TM_OP_BITWISE_RIGHT_SHIFT,
                           lib.tm_bitwise_right_shift)
    __rand__ = _reflected("__rand__", lib.TM_OP_BITWISE_AND,
                          lib.tm_bitwise_and)
    __ror__ = _reflected("__ror__", lib.TM_OP_BITWISE_OR, lib.tm_bitwise_or)
    __rxor__ = _reflected("__rxor__", lib.TM_OP_BITWISE_XOR,
                          lib.tm_bitwise_xor)
    __rlshift__ = _reflected("__rlshift__", lib.TM_OP_BITWISE_LEFT_SHIFT,
                             lib.tm_bitwise_left_shift)
    __rrshift__ = _reflected("__rrshift__", lib.TM_OP_BITWISE_RIGHT_SHIFT,
                             lib.tm_bitwise_right_shift)
    __iand__ = _inplace("__iand__", lib.TM_OP_BITWISE_AND, False)
    __ior__ = _inplace("__ior__", lib.TM_OP_BITWISE_OR, False)
    __ixor__ = _inplace("__ixor__", lib.TM_OP_BITWISE_XOR, False)
    __ilshift__ = _inplace("__ilshift__", lib.TM_OP_BITWISE_LEFT_SHIFT,
                           False)
    __irshift__ = _inplace("__irshift__", lib.TM_OP_BITWISE_RIGHT_SHIFT,
                           False)

    # ------------------------------------------------------ binary maths
    fmod = export(_method("fmod", lib.TM_OP_FMOD, lib.tm_fmod, _doc(
        "self - trunc(self / other) * other: the remainder with the sign of "
        "self (C's fmod; remainder has the sign of other).",
        "integer division by zero is an error.", "fmod")))
    atan2 = arctan2 = export("atan2", "arctan2")(_method(
        "atan2", lib.TM_OP_ATAN2, lib.tm_atan2, _doc(
            "The angle of the point (other, self) in radians, in [-pi, pi].",
            _FLOAT, "atan2 (also as arctan2)")))
    logaddexp = export(_method(
        "logaddexp", lib.TM_OP_LOGADDEXP, lib.tm_logaddexp, _doc(
            "log(exp(self) + exp(other)), without overflow.", _FLOAT,
            "logaddexp")))
    logaddexp2 = export(_method(
        "logaddexp2", lib.TM_OP_LOGADDEXP2, lib.tm_logaddexp2, _doc(
            "log2(2**self + 2**other), without overflow.", _FLOAT,
            "logaddexp2")))
    copysign = export(_method(
        "copysign", lib.TM_OP_COPYSIGN, lib.tm_copysign, _doc(
            "|self| with the sign of other (-0.0 counts as negative).",
            _FLOAT, "copysign")))
    hypot = export(_method("hypot", lib.TM_OP_HYPOT, lib.tm_hypot, _doc(
        "sqrt(self**2 + other**2), without overflow.", _FLOAT, "hypot")))

    fmod_ = _inplace("fmod_", lib.TM_OP_FMOD, True)
    atan2_ = arctan2_ = _inplace("atan2_", lib.TM_OP_ATAN2, True)
    logaddexp_ = _inplace("logaddexp_", lib.TM_OP_LOGADDEXP, True)
    logaddexp2_ = _inplace("logaddexp2_", lib.TM_OP_LOGADDEXP2, True)
    copysign_ = _inplace("copysign_", lib.TM_OP_COPYSIGN, True)
    hypot_ = _inplace("hypot_", lib.TM_OP_HYPOT, True)

    @export
    def lerp(self, end, weight):
        """self + weight * (end - self), exact at weight 0 and 1.

        self, end and weight (a tensor or a number) broadcast; the tensors
        must be float tensors of one dtype (TypeError otherwise).
        Differentiable in all three.  Mirrors torch.lerp and
        torch.Tensor.lerp."""
        if not isinstance(end, _tensor.Tensor):
            raise TypeError(f"lerp(): end must be a Tensor, not "
                            f"{type(end).__name__}")
        if isinstance(weight, _tensor.Tensor):
            return _wrap(lib.tm_lerp(self._p, end._p, weight._p))
        if isinstance(weight, SCALAR) and not isinstance(weight, complex):
            return _wrap(lib.tm_lerp_scalar(self._p, end._p, weight))
        raise TypeError(f"lerp(): weight must be a Tensor or a number, not "
                        f"{type(weight).__name__}")

    def lerp_(self, end, weight):
        """In-place lerp: writes lerp(self, end, weight) into self and
        returns self.  Mirrors torch.Tensor.lerp_."""
        r = _BinaryMath.lerp(self, end, weight)
        return self.copy_(r)

    @export
    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|self - other| <= atol + rtol * |other| (or equal), elementwise.

        Gives bool.  NaNs are close only with equal_nan; equal infinities
        are close.  self and other broadcast and must have one dtype
        (TypeError otherwise); integers compare exactly in float64.
        Mirrors torch.isclose and torch.Tensor.isclose."""
        if not isinstance(other, _tensor.Tensor):
            other = as_tensor_like(other, self)
        return _wrap(lib.tm_isclose(self._p, other._p, rtol, atol,
                                    bool(equal_nan)))

    @export
    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """True when isclose(self, other, ...) holds everywhere (a Python
        bool).  Mirrors torch.allclose and torch.Tensor.allclose."""
        return bool(_BinaryMath.isclose(self, other, rtol, atol,
                                        equal_nan).all().item())

    @export
    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """self with NaN, +inf and -inf replaced by numbers.

        posinf / neginf default to the dtype's largest / lowest finite
        value.  Integer and bool tensors are returned as a copy.  The
        gradient is 0 where an element was replaced.  Mirrors
        torch.nan_to_num and torch.Tensor.nan_to_num."""
        return _wrap(lib.tm_nan_to_num(
            self._p, nan, math.nan if posinf is None else posinf,
            math.nan if neginf is None else neginf))

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        """In-place nan_to_num: writes the result into self and returns
        self.  Mirrors torch.Tensor.nan_to_num_."""
        return self.copy_(_BinaryMath.nan_to_num(self, nan, posinf, neginf))


def _category(x):
    """0, 1 or 2 for a bool, an integer or a float (dtype code or
    number): PyTorch's promotion categories."""
    k = scalar_kind(x)
    return (0 if k == lib.TM_SCALAR_BOOL else
            1 if k == lib.TM_SCALAR_INT else 2)


_DEFAULT = (lib.TM_BOOL, lib.TM_I64, lib.TM_F32)


def where_operands(condition, input, other):
    """input and other of where(condition, input, other) as tensors, a
    number taking PyTorch's result dtype: with a tensor the wrapped-number
    rule (a number of a higher category, bool < integer < float, gives
    that category's default dtype, else the tensor's dtype wins); two
    numbers give the default dtype of the higher category (where(c, 4, 2)
    is int64, where(c, 4, 2.0) float32)."""
    from ._create import tensor
    Tensor = _tensor.Tensor
    ti, to = isinstance(input, Tensor), isinstance(other, Tensor)
    if ti and to:
        return input, other
    dev = (input if ti else other if to else condition).device
    if ti or to:
        t, x = (input, other) if ti else (other, input)
        c = lib.tm_dtype_of(t._p)
        tcat = (2 if lib.tm_dtype_is_float(c) else
                0 if c == lib.TM_BOOL else 1)
        dt = _DEFAULT[_category(x)] if _category(x) > tcat else c
    else:
        dt = _DEFAULT[max(_category(input), _category(other))]
    d = BY_C[dt]
    a = input if ti else tensor(input, dtype=d, device=dev)
    b = other if to else tensor(other, dtype=d, device=dev)
    return a, b
