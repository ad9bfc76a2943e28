"""Binary elementwise ops (tm_binary_op), their operators and in-place
forms, and matmul: the _Arithmetic methods of Tensor.

Common rules (include/foundry/ops.h): operands broadcast by numpy rules;
the result dtype is PyTorch's promotion of the operands' dtypes, and a
Python number does not widen a float tensor's dtype; comparisons and
logical ops give bool.  `other` is a Tensor or a Python / numpy number;
anything else raises TypeError (the operators return NotImplemented, so
Python raises it).  In-place forms (name ending in `_`) write into self,
whose shape and dtype the result must fit.
"""
from . import _ops_div, _tensor
from ._base import SCALAR, error, named, scalar_kind
from ._c import check, lib
from ._exports import export

_new = object.__new__


def _scalar(op, p, s):
    return lib.tm_binary_scalar_as(op, p, s, scalar_kind(s))


def _rscalar(op, s, p):
    return lib.tm_binary_rscalar_as(op, s, p, scalar_kind(s))


def _type_error(name, other):
    return TypeError(f"{name}(): expected a Tensor or a number, got "
                     f"{type(other).__name__}")


def _method(name, op, c_fn, doc):
    """self.<name>(other): one C call, TypeError for other types."""
    def method(self, other):
        if not isinstance(self, _tensor.Tensor):
            # foundry.<name>(2, t), as torch.<name> takes a number first
            if not (isinstance(self, SCALAR) and
                    isinstance(other, _tensor.Tensor)):
                raise _type_error(name, self)
            p = _rscalar(op, self, other._p)
        elif isinstance(other, _tensor.Tensor):
            p = c_fn(self._p, other._p)
        elif isinstance(other, SCALAR):
            p = _scalar(op, self._p, other)
        else:
            raise _type_error(name, other)
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t
    return named(method, name, doc)


def _operator(name, op, c_fn):
    """self <op> other (NotImplemented for other types, as Python wants)."""
    def operator(self, other):
        if isinstance(other, _tensor.Tensor):
            p = c_fn(self._p, other._p)
        elif isinstance(other, SCALAR):
            p = _scalar(op, self._p, other)
        else:
            return NotImplemented
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t
    return named(operator, name, f"self {name.strip('_')} other; see the "
                                 f"method of the same op.")


def _reflected(name, op, c_fn):
    """other <op> self, for a number (or tensor) on the left."""
    def reflected(self, other):
        if isinstance(other, SCALAR):
            p = _rscalar(op, other, self._p)
        elif isinstance(other, _tensor.Tensor):
            p = c_fn(other._p, self._p)
        else:
            return NotImplemented
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t
    return named(reflected, name, "other OP self, with the number on the "
                                  "left (reflected operator).")


def _inplace(name, op, strict):
    """self.<name>_(other) / self <op>= other: writes into self."""
    def inplace(self, other):
        if isinstance(other, _tensor.Tensor):
            check(lib.tm_binary_(op, self._p, other._p))
        elif isinstance(other, SCALAR):
            check(lib.tm_binary_scalar_as_(op, self._p, other,
                                           scalar_kind(other)))
        elif strict:
            raise _type_error(name, other)
        else:
            return NotImplemented
        return self
    doc = (f"In-place {name.rstrip('_')}: writes the result into self and "
           f"returns self.\n\nThe result must broadcast to self's shape and "
           f"be castable to self's dtype.  Mirrors torch.Tensor.{name}."
           if strict else "self OP= other, in place (see the `_` method).")
    return named(inplace, name, doc)


def _doc(summary, rules, torch_name):
    return (f"{summary}\n\nBroadcasts; {rules}  Mirrors torch.{torch_name} "
            f"and torch.Tensor.{torch_name}.")


_NUM = "the dtype is the promoted dtype of the operands."
_BOOL = "the result is bool."

_mul = _method("mul", lib.TM_OP_MUL, lib.tm_mul, _doc(
    "self * other, elementwise.", _NUM, "mul"))
# add and sub take alpha, so their methods are Python functions over these.
_add = _method("add", lib.TM_OP_ADD, lib.tm_add, "self + other.")
_sub = _method("sub", lib.TM_OP_SUB, lib.tm_sub, "self - other.")
_add_ = _inplace("add_", lib.TM_OP_ADD, True)
_sub_ = _inplace("sub_", lib.TM_OP_SUB, True)


class _Arithmetic:
    """Binary elementwise ops, operators and matmul."""

    __slots__ = ()

    # ---------------------------------------------------------- arithmetic
    @export
    def add(self, other, alpha=1):
        """self + alpha * other, elementwise.

        Broadcasts; the dtype is the promoted dtype of the operands
        (bool + bool is logical or).  Mirrors torch.add and
        torch.Tensor.add."""
        if alpha != 1:
            other = other * alpha
        return _add(self, other)

    @export("sub", "subtract")
    def sub(self, other, alpha=1):
        """self - alpha * other, elementwise.

        Broadcasts; the dtype is the promoted dtype of the operands
        (bool - bool is an error).  Mirrors torch.sub and torch.Tensor.sub
        (also as subtract)."""
        if alpha != 1:
            other = other * alpha
        return _sub(self, other)

    subtract = sub
    mul = multiply = export("mul", "multiply")(_mul)
    div = divide = export("div", "divide")(_ops_div.div)
    true_divide = export(_ops_div.true_divide)
    pow = export(_method("pow", lib.TM_OP_POW, lib.tm_pow, _doc(
        "self ** other, elementwise.",
        "integers with a negative exponent are an error, as in PyTorch.",
        "pow")))
    floor_divide = export(_method(
        "floor_divide", lib.TM_OP_FLOOR_DIVIDE, lib.tm_floor_divide, _doc(
            "self // other, rounded toward -inf.",
            "integer division by zero is an error.", "floor_divide")))
    remainder = export(_method(
        "remainder", lib.TM_OP_REMAINDER, lib.tm_remainder, _doc(
            "self % other with the sign of the divisor (Python's %).",
            "integer division by zero is an error.", "remainder")))
    maximum = export(_method(
        "maximum", lib.TM_OP_MAXIMUM, lib.tm_maximum, _doc(
            "The larger of self and other, elementwise.",
            "NaN propagates; " + _NUM, "maximum")))
    minimum = export(_method(
        "minimum", lib.TM_OP_MINIMUM, lib.tm_minimum, _doc(
            "The smaller of self and other, elementwise.",
            "NaN propagates; " + _NUM, "minimum")))

    # --------------------------------------------------------- comparisons
    eq = export(_method("eq", lib.TM_OP_EQ, lib.tm_eq, _doc(
        "self == other, elementwise.", _BOOL, "eq")))
    ne = export(_method("ne", lib.TM_OP_NE, lib.tm_ne, _doc(
        "self != other, elementwise.", _BOOL, "ne")))
    lt = export(_method("lt", lib.TM_OP_LT, lib.tm_lt, _doc(
        "self < other, elementwise.", _BOOL, "lt")))
    le = export(_method("le", lib.TM_OP_LE, lib.tm_le, _doc(
        "self <= other, elementwise.", _BOOL, "le")))
    gt = export(_method("gt", lib.TM_OP_GT, lib.tm_gt, _doc(
        "self > other, elementwise.", _BOOL, "gt")))
    ge = export(_method("ge", lib.TM_OP_GE, lib.tm_ge, _doc(
        "self >= other, elementwise.", _BOOL, "ge")))

    # ----------------------------------------------------------- logical
    logical_and = export(_method(
        "logical_and", lib.TM_OP_LOGICAL_AND, lib.tm_logical_and, _doc(
            "(self != 0) and (other != 0), elementwise.", _BOOL,
            "logical_and")))
    logical_or = export(_method(
        "logical_or", lib.TM_OP_LOGICAL_OR, lib.tm_logical_or, _doc(
            "(self != 0) or (other != 0), elementwise.", _BOOL,
            "logical_or")))
    logical_xor = export(_method(
        "logical_xor", lib.TM_OP_LOGICAL_XOR, lib.tm_logical_xor, _doc(
            "(self != 0) xor (other != 0), elementwise.", _BOOL,
            "logical_xor")))

    # ------------------------------------------------------- in-place forms
    def add_(self, other, alpha=1):
        """In-place add: self += alpha * other; returns self.

        other must broadcast to self's shape, and the result be castable
        to self's dtype.  Mirrors torch.Tensor.add_."""
        if alpha != 1:
            other = other * alpha
        return _add_(self, other)

    def sub_(self, other, alpha=1):
        """In-place sub: self -= alpha * other; returns self.

        other must broadcast to self's shape, and the result be castable
        to self's dtype.  Mirrors torch.Tensor.sub_."""
        if alpha != 1:
            other = other * alpha
        return _sub_(self, other)

    mul_ = _inplace("mul_", lib.TM_OP_MUL, True)
    div_ = divide_ = _ops_div.div_
    true_divide_ = _inplace("true_divide_", lib.TM_OP_DIV, True)
    pow_ = _inplace("pow_", lib.TM_OP_POW, True)
    floor_divide_ = _inplace("floor_divide_", lib.TM_OP_FLOOR_DIVIDE, True)
    remainder_ = _inplace("remainder_", lib.TM_OP_REMAINDER, True)
    maximum_ = _inplace("maximum_", lib.TM_OP_MAXIMUM, True)
    minimum_ = _inplace("minimum_", lib.TM_OP_MINIMUM, True)
    eq_ = _inplace("eq_", lib.TM_OP_EQ, True)
    ne_ = _inplace("ne_", lib.TM_OP_NE, True)
    lt_ = _inplace("lt_", lib.TM_OP_LT, True)
    le_ = _inplace("le_", lib.TM_OP_LE, True)
    gt_ = _inplace("gt_", lib.TM_OP_GT, True)
    ge_ = _inplace("ge_", lib.TM_OP_GE, True)
    logical_and_ = _inplace("logical_and_", lib.TM_OP_LOGICAL_AND, True)
    logical_or_ = _inplace("logical_or_", lib.TM_OP_LOGICAL_OR, True)
    logical_xor_ = _inplace("logical_xor_", lib.TM_OP_LOGICAL_XOR, True)

    # ------------------------------------------------------------ operators
    __add__ = _operator("__add__", lib.TM_OP_ADD, lib.tm_add)
    __sub__ = _operator("__sub__", lib.TM_OP_SUB, lib.tm_sub)
    __mul__ = _operator("__mul__", lib.TM_OP_MUL, lib.tm_mul)
    __truediv__ = _operator("__truediv__", lib.TM_OP_DIV, lib.tm_div)
    __pow__ = _operator("__pow__", lib.TM_OP_POW, lib.tm_pow)
    __floordiv__ = _operator("__floordiv__", lib.TM_OP_FLOOR_DIVIDE,
                             lib.tm_floor_divide)
    __mod__ = _operator("__mod__", lib.TM_OP_REMAINDER, lib.tm_remainder)
    __eq__ = _operator("__eq__", lib.TM_OP_EQ, lib.tm_eq)
    __ne__ = _operator("__ne__", lib.TM_OP_NE, lib.tm_ne)
    __lt__ = _operator("__lt__", lib.TM_OP_LT, lib.tm_lt)
    __le__ = _operator("__le__", lib.TM_OP_LE, lib.tm_le)
    __gt__ = _operator("__gt__", lib.TM_OP_GT, lib.tm_gt)
    __ge__ = _operator("__ge__", lib.TM_OP_GE, lib.tm_ge)
    # 2 < t needs no reflection: Python asks t.__gt__(2).
    __radd__ = _reflected("__radd__", lib.TM_OP_ADD, lib.tm_add)
    __rsub__ = _reflected("__rsub__", lib.TM_OP_SUB, lib.tm_sub)
    __rmul__ = _reflected("__rmul__", lib.TM_OP_MUL, lib.tm_mul)
    __rtruediv__ = _reflected("__rtruediv__", lib.TM_OP_DIV, lib.tm_div)
    __rpow__ = _reflected("__rpow__", lib.TM_OP_POW, lib.tm_pow)
    __rfloordiv__ = _reflected("__rfloordiv__", lib.TM_OP_FLOOR_DIVIDE,
                               lib.tm_floor_divide)
    __rmod__ = _reflected("__rmod__", lib.TM_OP_REMAINDER, lib.tm_remainder)
    __iadd__ = _inplace("__iadd__", lib.TM_OP_ADD, False)
    __isub__ = _inplace("__isub__", lib.TM_OP_SUB, False)
    __imul__ = _inplace("__imul__", lib.TM_OP_MUL, False)
    __itruediv__ = _inplace("__itruediv__", lib.TM_OP_DIV, False)
    __ipow__ = _inplace("__ipow__", lib.TM_OP_POW, False)
    __ifloordiv__ = _inplace("__ifloordiv__", lib.TM_OP_FLOOR_DIVIDE, False)
    __imod__ = _inplace("__imod__", lib.TM_OP_REMAINDER, False)

    # --------------------------------------------------------------- matmul
    def __matmul__(self, other):
        """self @ other; see matmul."""
        if not isinstance(other, _tensor.Tensor):
            return NotImplemented
        p = lib.tm_matmul(self._p, other._p)
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t

    def __rmatmul__(self, other):
        """other @ self; see matmul."""
        if not isinstance(other, _tensor.Tensor):
            return NotImplemented
        return _Arithmetic.__matmul__(other, self)

    @export("matmul", "mm", "bmm", "dot")
    def matmul(self, other):
        """Matrix product with numpy's rules.

        1-D x 1-D is a dot product (0-d result); [m, k] x [k, n] -> [m, n];
        a 1-D left operand is a row vector, a 1-D right operand a column
        vector; more dims are batches that broadcast: [b, 1, m, k] x
        [c, k, n] -> [b, c, m, n].  The dtype is promoted (bool x bool is
        an error).  Mirrors torch.matmul; mm, bmm and dot are the same
        function (they accept every shape matmul does)."""
        if not isinstance(other, _tensor.Tensor):
            raise _type_error("matmul", other)
        return _Arithmetic.__matmul__(self, other)

    mm = bmm = dot = matmul
