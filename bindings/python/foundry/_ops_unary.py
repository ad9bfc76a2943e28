"""Unary elementwise ops (tm_unary_op) and their in-place forms, clamp and
where: the _Elementwise methods of Tensor.

Result dtypes (include/foundry/ops.h, PyTorch's rules):
- "float" ops keep a float tensor's dtype; integer and bool inputs give
  float32.
- "keep" ops keep every dtype (integer neg/abs/square wrap; neg of bool is
  an error; square of bool gives int64).
- predicates give bool.
An in-place form (name ending in `_`) writes into self and fails with
TypeError when the result dtype is not self's (exp_ of an integer tensor).
"""
from . import _tensor
from ._base import as_tensor_like, error, named, ptr
from ._c import check, error_class, ffi, lib
from ._exports import export
from ._ops_binmath import where_operands

_new = object.__new__

_FLOAT = ("float tensors keep their dtype; integer and bool inputs give "
          "float32.")
_KEEP = "every dtype is kept."
_PRED = "the result is bool."


def _unary(name, c_fn, summary, rule):
    """self.<name>(): one C call."""
    def method(self):
        p = c_fn(self._p)
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t
    return named(method, name, f"{summary}\n\nAny shape; {rule}  Mirrors "
                 f"torch.{name} and torch.Tensor.{name}.")


def _unary_(name, op):
    """self.<name>_(): tm_unary_ in place."""
    def method(self):
        check(lib.tm_unary_(op, self._p))
        return self
    return named(method, name + "_", f"In-place {name}: writes into self "
                 f"and returns self.\n\nThe result dtype must be self's.  "
                 f"Mirrors torch.Tensor.{name}_.")


def _neg(self):
    """-self (see neg)."""
    p = lib.tm_neg(self._p)
    if not p:
        raise error()
    t = _new(_tensor.Tensor)
    t._p = p
    return t


class _Elementwise:
    """Unary elementwise ops, clamp and where."""

    __slots__ = ()

    neg = negative = export("neg", "negative")(named(
        _neg, "neg", "-self, elementwise.\n\nAny shape; every dtype but bool "
        "is kept (integers wrap).  Mirrors torch.neg and torch.Tensor.neg "
        "(also as negative)."))
    abs = absolute = export("abs", "absolute")(_unary(
        "abs", lib.tm_abs, "|self|, elementwise (also as absolute).",
        _KEEP + " Integers wrap: abs of the most negative value is itself."))
    sign = export(_unary("sign", lib.tm_sign,
                         "-1, 0 or 1 by the sign of each element.",
                         _KEEP + " sign(NaN) is NaN."))
    exp = export(_unary("exp", lib.tm_exp, "e ** self, elementwise.",
                        _FLOAT))
    exp2 = export(_unary("exp2", lib.tm_exp2, "2 ** self, elementwise.",
                         _FLOAT))
    log = export(_unary("log", lib.tm_log, "Natural logarithm, elementwise.",
                        _FLOAT))
    log1p = export(_unary("log1p", lib.tm_log1p,
                          "log(1 + self), accurate near 0.", _FLOAT))
    expm1 = export(_unary("expm1", lib.tm_expm1,
                          "exp(self) - 1, accurate near 0.", _FLOAT))
    sqrt = export(_unary("sqrt", lib.tm_sqrt, "Square root, elementwise.",
                         _FLOAT))
    rsqrt = export(_unary("rsqrt", lib.tm_rsqrt, "1 / sqrt(self).",
                          _FLOAT))
    sin = export(_unary("sin", lib.tm_sin, "Sine (radians).", _FLOAT))
    cos = export(_unary("cos", lib.tm_cos, "Cosine (radians).", _FLOAT))
    tanh = export(_unary("tanh", lib.tm_tanh, "Hyperbolic tangent.",
                         _FLOAT))
    sigmoid = export(_unary("sigmoid", lib.tm_sigmoid,
                            "1 / (1 + exp(-self)), stable for large |x|.",
                            _FLOAT))
    relu = export(_unary("relu", lib.tm_relu, "max(self, 0), elementwise.",
                         _KEEP))
    silu = export(named(_unary("silu", lib.tm_silu, "", ""), "silu",
                        "self * sigmoid(self) (swish).\n\nAny shape; " +
                        _FLOAT + "  Mirrors torch.nn.functional.silu."))
    logical_not = export(_unary("logical_not", lib.tm_logical_not,
                                "self == 0, elementwise.", _PRED))
    floor = export(_unary("floor", lib.tm_floor, "Rounds toward -inf.",
                          _KEEP + " Integers are unchanged."))
    ceil = export(_unary("ceil", lib.tm_ceil, "Rounds toward +inf.",
                         _KEEP + " Integers are unchanged."))
    round = export(_unary("round", lib.tm_round,
                          "Rounds to the nearest integer, half to even.",
                          _KEEP + " Integers are unchanged."))
    trunc = export(_unary("trunc", lib.tm_trunc, "Rounds toward 0.",
                          _KEEP + " Integers are unchanged."))
    reciprocal = export(_unary("reciprocal", lib.tm_reciprocal,
                               "1 / self, elementwise.", _FLOAT))
    square = export(_unary("square", lib.tm_square,
                           "self * self, elementwise.",
                           _KEEP + " Integers wrap; bool gives int64."))
    erf = export(_unary("erf", lib.tm_erf, "The error function.", _FLOAT))
    log2 = export(_unary("log2", lib.tm_log2, "Base-2 logarithm.", _FLOAT))
    log10 = export(_unary("log10", lib.tm_log10, "Base-10 logarithm.",
                          _FLOAT))
    tan = export(_unary("tan", lib.tm_tan, "Tangent (radians).", _FLOAT))
    asin = arcsin = export("asin", "arcsin")(_unary(
        "asin", lib.tm_asin, "Arcsine (also as arcsin); NaN outside "
        "[-1, 1].", _FLOAT))
    acos = arccos = export("acos", "arccos")(_unary(
        "acos", lib.tm_acos, "Arccosine (also as arccos); NaN outside "
        "[-1, 1].", _FLOAT))
    atan = arctan = export("atan", "arctan")(_unary(
        "atan", lib.tm_atan, "Arctangent (also as arctan).", _FLOAT))
    sinh = export(_unary("sinh", lib.tm_sinh, "Hyperbolic sine.", _FLOAT))
    cosh = export(_unary("cosh", lib.tm_cosh, "Hyperbolic cosine.",
                         _FLOAT))
    asinh = arcsinh = export("asinh", "arcsinh")(_unary(
        "asinh", lib.tm_asinh, "Inverse hyperbolic sine (also as "
        "arcsinh).", _FLOAT))
    acosh = arccosh = export("acosh", "arccosh")(_unary(
        "acosh", lib.tm_acosh, "Inverse hyperbolic cosine (also as "
        "arccosh); NaN below 1.", _FLOAT))
    atanh = arctanh = export("atanh", "arctanh")(_unary(
        "atanh", lib.tm_atanh, "Inverse hyperbolic tangent (also as "
        "arctanh); +-inf at +-1, NaN outside [-1, 1].", _FLOAT))
    isnan = export(_unary("isnan", lib.tm_isnan, "True where NaN.", _PRED))
    isinf = export(_unary("isinf", lib.tm_isinf, "True where +-inf.",
                          _PRED))
    isfinite = export(_unary("isfinite", lib.tm_isfinite,
                             "True where neither NaN nor +-inf.", _PRED))

    neg_ = negative_ = _unary_("neg", lib.TM_OP_NEG)
    abs_ = absolute_ = _unary_("abs", lib.TM_OP_ABS)
    sign_ = _unary_("sign", lib.TM_OP_SIGN)
    exp_ = _unary_("exp", lib.TM_OP_EXP)
    exp2_ = _unary_("exp2", lib.TM_OP_EXP2)
    log_ = _unary_("log", lib.TM_OP_LOG)
    log1p_ = _unary_("log1p", lib.TM_OP_LOG1P)
    expm1_ = _unary_("expm1", lib.TM_OP_EXPM1)
    sqrt_ = _unary_("sqrt", lib.TM_OP_SQRT)
    rsqrt_ = _unary_("rsqrt", lib.TM_OP_RSQRT)
    sin_ = _unary_("sin", lib.TM_OP_SIN)
    cos_ = _unary_("cos", lib.TM_OP_COS)
    tanh_ = _unary_("tanh", lib.TM_OP_TANH)
    sigmoid_ = _unary_("sigmoid", lib.TM_OP_SIGMOID)
    relu_ = _unary_("relu", lib.TM_OP_RELU)
    silu_ = named(_unary_("silu", lib.TM_OP_SILU), "silu_",
                  "In-place silu: writes into self and returns self.\n\n"
                  "The result dtype must be self's.  Mirrors "
                  "torch.nn.functional.silu(x, inplace=True).")
    logical_not_ = _unary_("logical_not", lib.TM_OP_LOGICAL_NOT)
    floor_ = _unary_("floor", lib.TM_OP_FLOOR)
    ceil_ = _unary_("ceil", lib.TM_OP_CEIL)
    round_ = _unary_("round", lib.TM_OP_ROUND)
    trunc_ = _unary_("trunc", lib.TM_OP_TRUNC)
    reciprocal_ = _unary_("reciprocal", lib.TM_OP_RECIPROCAL)
    square_ = _unary_("square", lib.TM_OP_SQUARE)
    erf_ = _unary_("erf", lib.TM_OP_ERF)
    log2_ = _unary_("log2", lib.TM_OP_LOG2)
    log10_ = _unary_("log10", lib.TM_OP_LOG10)
    tan_ = _unary_("tan", lib.TM_OP_TAN)
    asin_ = arcsin_ = _unary_("asin", lib.TM_OP_ASIN)
    acos_ = arccos_ = _unary_("acos", lib.TM_OP_ACOS)
    atan_ = arctan_ = _unary_("atan", lib.TM_OP_ATAN)
    sinh_ = _unary_("sinh", lib.TM_OP_SINH)
    cosh_ = _unary_("cosh", lib.TM_OP_COSH)
    asinh_ = arcsinh_ = _unary_("asinh", lib.TM_OP_ASINH)
    acosh_ = arccosh_ = _unary_("acosh", lib.TM_OP_ACOSH)
    atanh_ = arctanh_ = _unary_("atanh", lib.TM_OP_ATANH)
    isnan_ = _unary_("isnan", lib.TM_OP_ISNAN)
    isinf_ = _unary_("isinf", lib.TM_OP_ISINF)
    isfinite_ = _unary_("isfinite", lib.TM_OP_ISFINITE)

    __neg__ = _neg

    def __pos__(self):
        """+self: self itself."""
        return self

    def __abs__(self):
        """abs(self); see abs."""
        return _Elementwise.abs(self)

    # ------------------------------------------------- ops with parameters
    @export
    def gelu(self, approximate="none"):
        """x * Phi(x), the Gaussian error linear unit.

        approximate="none" uses erf (C op gelu), "tanh" the tanh
        approximation (C op gelu_tanh).  Any shape; float tensors keep
        their dtype, integers give float32.  Mirrors
        torch.nn.functional.gelu."""
        if approximate == "none":
            p = lib.tm_gelu(self._p)
        elif approximate == "tanh":
            p = lib.tm_gelu_tanh(self._p)
        else:
            raise ValueError(f"approximate must be 'none' or 'tanh', not "
                             f"{approximate!r}")
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t

    @export
    def leaky_relu(self, negative_slope=0.01):
        """self where self > 0, else negative_slope * self.

        Any shape; float tensors keep their dtype, integers give float32.
        Mirrors torch.nn.functional.leaky_relu."""
        p = lib.tm_leaky_relu(self._p, negative_slope)
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t

    @export
    def softplus(self, beta=1.0, threshold=20.0):
        """log(1 + exp(beta * self)) / beta, and self where beta * self >
        threshold.

        Any shape; float tensors keep their dtype, integers give float32.
        Mirrors torch.nn.functional.softplus."""
        p = lib.tm_softplus(self._p, beta, threshold)
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t

    @export
    def hardshrink(self, lambd=0.5):
        """0 where |self| <= lambd, else self.

        Any shape; float tensors only.  Mirrors torch.Tensor.hardshrink."""
        p = lib.tm_hardshrink(self._p, float(lambd))
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t

    @export
    def prelu(self, weight):
        """self where self > 0, else weight * self; weight has 1 element
        or one per channel (dim 1).  Mirrors torch.Tensor.prelu."""
        p = lib.tm_prelu(self._p, ptr(weight, "weight"))
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t

    @export("clamp", "clip")
    def clamp(self, min=None, max=None):
        """min(max(self, min), max): limits every element to [min, max].

        Bounds are numbers or tensors (which broadcast); either may be
        None, not both.  NaN stays NaN; min > max gives max.  With number
        bounds a float tensor keeps its dtype and an integer tensor keeps
        its own when the bounds are integral; tensor bounds promote.
        Mirrors torch.clamp and torch.Tensor.clamp (also as clip)."""
        if isinstance(min, _tensor.Tensor) or isinstance(max,
                                                         _tensor.Tensor):
            lo = ffi.NULL if min is None else ptr(as_tensor_like(min, self))
            hi = ffi.NULL if max is None else ptr(as_tensor_like(max, self))
            p = lib.tm_clamp_tensor(self._p, lo, hi)
        elif min is None and max is None:
            raise _no_bounds("clamp")
        else:
            nan = float("nan")
            p = lib.tm_clamp(self._p, nan if min is None else min,
                             nan if max is None else max)
        if not p:
            raise error()
        t = _new(_tensor.Tensor)
        t._p = p
        return t

    clip = clamp

    def clamp_(self, min=None, max=None):
        """In-place clamp with number bounds: writes into self and returns
        self.

        The result dtype must be self's (fractional bounds on an integer
        tensor are an error).  Mirrors torch.Tensor.clamp_ (also as
        clip_)."""
        if min is None and max is None:
            raise _no_bounds("clamp_")
        nan = float("nan")
        check(lib.tm_clamp_(self._p, nan if min is None else min,
                            nan if max is None else max))
        return self

    clip_ = clamp_

    def where(self, condition, other):
        """self where condition is true, else other: foundry.where(condition,
        self, other).  Mirrors torch.Tensor.where."""
        return where(condition, self, other)


def _no_bounds(name):
    """clamp without bounds: a FoundryError (a RuntimeError, as PyTorch
    raises) that is also a ValueError."""
    return error_class(lib.TM_EINVAL)(
        f"{name}: at least one of 'min' or 'max' must not be None")


@export
def where(condition, input, other):
    """input where condition is true, else other (elementwise choice).

    condition (any dtype, read as != 0), input and other broadcast
    together; input or other may be a number, which takes PyTorch's
    result dtype (where(c, 4, 2) is int64, a float gives float32, and
    with a tensor it promotes as tensor + number does).  The dtype is the
    promoted dtype of input and other.
    Mirrors torch.where (the 3-argument form)."""
    Tensor = _tensor.Tensor
    a, b = where_operands(condition, input, other)
    p = lib.tm_where(ptr(condition, "condition"), a._p, b._p)
    if not p:
        raise error()
    t = _new(Tensor)
    t._p = p
    return t
