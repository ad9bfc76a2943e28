"""div / divide / true_divide and div_ with PyTorch's rounding_mode, used
by the _Arithmetic class (_ops_arith.py).

rounding_mode=None is true division (integers give float32).  'floor'
is floor_divide (rounded toward -inf, Python's //, computed as numpy's
divmod for floats).  'trunc' rounds toward zero: for floats it is
trunc(self / other), as PyTorch computes it; for integers it is exact
integer division, derived from floor division and the remainder.  Both
rounding modes keep the promoted dtype of the operands (integers stay
integers) and, as in PyTorch, have a zero gradient (the result is
piecewise constant).  Integer division by zero is an error.
"""
from . import _c, _tensor
from ._base import SCALAR, error, scalar_kind
from ._c import check, lib

_new = object.__new__


def _bin(c_fn, op, a, b, name):
    """a <op> b for a Tensor and a Tensor or a number, either side (a
    number promotes by its kind, as in the other arithmetic ops)."""
    if not isinstance(a, _tensor.Tensor):
        if not (isinstance(a, SCALAR) and isinstance(b, _tensor.Tensor)):
            raise TypeError(f"{name}(): expected a Tensor or a number, got "
                            f"{type(a).__name__}")
        p = lib.tm_binary_rscalar_as(op, a, b._p, scalar_kind(a))
    elif isinstance(b, _tensor.Tensor):
        p = c_fn(a._p, b._p)
    elif isinstance(b, SCALAR):
        p = lib.tm_binary_scalar_as(op, a._p, b, scalar_kind(b))
    else:
        raise TypeError(f"{name}(): expected a Tensor or a number, got "
                        f"{type(b).__name__}")
    if not p:
        raise error()
    t = _new(_tensor.Tensor)
    t._p = p
    return t


def _bad_mode(name, mode):
    return _c.error_class(lib.TM_EINVAL)(
        f"{name}(): rounding_mode must be None, 'trunc' or 'floor', not "
        f"{mode!r}")


def _tracked(*xs):
    return lib.tm_grad_enabled() and any(
        isinstance(x, _tensor.Tensor) and x.requires_grad for x in xs)


def _trunc(self, other):
    q = _bin(lib.tm_floor_divide, lib.TM_OP_FLOOR_DIVIDE, self, other,
             "div")
    if not q.is_floating_point():
        # integers: floor and trunc differ by one where the division is
        # inexact (remainder != 0) and the operands' signs differ
        r = _bin(lib.tm_remainder, lib.TM_OP_REMAINDER, self, other, "div")
        neg = (self < 0) != (other < 0)
        return q + ((r != 0) & neg).to(q.dtype)
    t = _bin(lib.tm_div, lib.TM_OP_DIV, self.detach(),
             other.detach() if isinstance(other, _tensor.Tensor) else other,
             "div").trunc().to(q.dtype)
    if not _tracked(self, other):
        return t
    # The value is trunc(self / other); the graph is floor_divide's, whose
    # gradient is zero for both operands (through a where that always
    # takes t).  Differentiating trunc(self / other) itself would give
    # NaN for other where other == 0 (0 * inf).
    from ._create import tensor
    from ._ops_unary import where
    return where(tensor(True, device=t.device), t, q)


def div(self, other, *, rounding_mode=None):
    """self / other: true division, or rounded with rounding_mode.

    rounding_mode None (true division; integer and bool operands give
    float32), 'trunc' (toward zero) or 'floor' (toward -inf, as
    floor_divide).  The rounding modes keep the operands' promoted dtype,
    so integers stay integers, and have a zero gradient, as in PyTorch.
    Broadcasts; other is a Tensor or a number.  Integer division by zero
    is an error.  Mirrors torch.div and torch.Tensor.div (also as
    divide)."""
    if rounding_mode is None:
        return _bin(lib.tm_div, lib.TM_OP_DIV, self, other, "div")
    if rounding_mode == "floor":
        return _bin(lib.tm_floor_divide, lib.TM_OP_FLOOR_DIVIDE, self,
                    other, "div")
    if rounding_mode == "trunc":
        return _trunc(self, other)
    raise _bad_mode("div", rounding_mode)


def true_divide(self, other):
    """self / other, true division (div with rounding_mode=None): integer
    and bool operands give float32.  Broadcasts.  Mirrors
    torch.true_divide and torch.Tensor.true_divide."""
    return _bin(lib.tm_div, lib.TM_OP_DIV, self, other, "true_divide")


def div_(self, other, *, rounding_mode=None):
    """In-place div: writes self / other (rounded with rounding_mode) into
    self and returns self.

    The result must broadcast to self's shape and be castable to self's
    dtype: an integer self takes rounding_mode 'trunc' or 'floor' with an
    integer other.  Mirrors torch.Tensor.div_."""
    if not isinstance(other, (_tensor.Tensor,) + SCALAR):
        raise TypeError(f"div_(): expected a Tensor or a number, got "
                        f"{type(other).__name__}")
    if rounding_mode is None or rounding_mode == "floor":
        op = lib.TM_OP_DIV if rounding_mode is None else \
            lib.TM_OP_FLOOR_DIVIDE
        if isinstance(other, _tensor.Tensor):
            check(lib.tm_binary_(op, self._p, other._p))
        else:
            check(lib.tm_binary_scalar_as_(op, self._p, other,
                                           scalar_kind(other)))
        return self
    if rounding_mode != "trunc":
        raise _bad_mode("div_", rounding_mode)
    r = _trunc(self, other)
    if r.is_floating_point() and not self.is_floating_point():
        raise _c.error_class(lib.TM_EDTYPE)(
            f"div_(rounding_mode='trunc'): the result type {r.dtype} "
            f"cannot be written into self of type {self.dtype}")
    return self.copy_(r)
