"""Cumulative ops beyond cumsum (cumprod, cummax, cummin, logcumsumexp)
and the paired reductions std_mean / var_mean: the _Scans methods of
Tensor.

A scan keeps self's shape; `dim` may be negative, and a 0-d tensor takes
dim 0 or -1.  Results follow include/foundry/ops.h (tm_cumprod ...).
"""
import collections
import operator

from . import _tensor
from ._base import named, wrap
from ._c import check, error_class, ffi, lib
from ._exports import export

CumMax = collections.namedtuple("CumMax", ["values", "indices"])
CumMin = collections.namedtuple("CumMin", ["values", "indices"])


def _cumextreme(name, c_fn, tup):
    def method(self, dim):
        vals = ffi.new("tm_tensor **")
        idx = ffi.new("tm_tensor **")
        check(c_fn(self._p, operator.index(dim), vals, idx))
        return tup(wrap(vals[0]), wrap(idx[0]))
    word = "max" if name == "cummax" else "min"
    return named(method, name, f"Running {word} along dim and where each "
                 f"was taken: a named tuple (values, indices).\n\nvalues "
                 f"keep self's dtype, indices are int64; on ties the index "
                 f"is the latest position, and a NaN, once reached, is the "
                 f"value from then on (indexed at the latest NaN).  The "
                 f"gradient goes to the indices.  Mirrors torch.{name} and "
                 f"torch.Tensor.{name}.")


def _moments(name, c_fn):
    """std_mean / var_mean: torch's (dim=None, *, correction=1,
    keepdim=False) and its legacy positional (dim, unbiased, keepdim) and
    (unbiased) forms."""
    def fn(input, dim=None, unbiased=None, keepdim=False, *,
           correction=None):
        if not isinstance(input, _tensor.Tensor):
            raise TypeError(f"{name}: input must be a Tensor, not "
                            f"{type(input).__name__}")
        if isinstance(dim, bool):  # the (input, unbiased) form
            if unbiased is not None:
                raise TypeError(f"{name}: unbiased given twice")
            dim, unbiased = None, dim
        if unbiased is not None and correction is not None:
            raise TypeError(f"{name}: give unbiased or correction, not "
                            f"both")
        if correction is None:
            correction = 0.0 if unbiased is False else 1.0
        if not input.is_floating_point():
            raise error_class(lib.TM_EDTYPE)(
                f"{name}: dtype {input.dtype.name} is not supported: the "
                f"input must be a float tensor")
        spread = getattr(input, c_fn)(dim, keepdim=bool(keepdim),
                                      correction=float(correction))
        return spread, input.mean(dim, keepdim=bool(keepdim))
    return named(fn, name, f"({c_fn}, mean) over dim, as a tuple.\n\n"
                 f"dim: None (all dims), an int or a sequence of ints; "
                 f"correction as for {c_fn} (1 by default; unbiased=False "
                 f"is correction 0); keepdim keeps reduced dims as size 1.  "
                 f"Float tensors only (TypeError otherwise), as torch.  "
                 f"Mirrors torch.{name}.")


std_mean = export(_moments("std_mean", "std"))
var_mean = export(_moments("var_mean", "var"))


class _Scans:
    """cumprod, cummax, cummin, logcumsumexp."""

    __slots__ = ()

    @export
    def cumprod(self, dim, *, dtype=None):
        """Running product along dim.

        Same shape; integers and bool give int64 (wrapping), floats keep
        their dtype (accumulated in float64); with dtype, self is
        converted to it first.  The gradient handles zeros in self exactly
        (no division by them).  Mirrors torch.cumprod and
        torch.Tensor.cumprod."""
        t = self if dtype is None else self.to(dtype)
        r = wrap(lib.tm_cumprod(t._p, operator.index(dim)))
        return r if dtype is None else r.to(dtype)

    def cumprod_(self, dim, *, dtype=None):
        """In-place cumprod: writes the running product (converted to
        self's dtype) into self and returns self.

        Refused for tensors autograd tracks, as every in-place method (see
        docs/python.md, inplace=).  Mirrors torch.Tensor.cumprod_."""
        return self.copy_(_Scans.cumprod(self, dim, dtype=dtype))

    @export
    def logcumsumexp(self, dim):
        """Running log(sum(exp(self))) along dim, without overflow.

        Float tensors only (TypeError otherwise); accumulated in float64.
        Mirrors torch.logcumsumexp and torch.Tensor.logcumsumexp."""
        return wrap(lib.tm_logcumsumexp(self._p, operator.index(dim)))

    cummax = export(_cumextreme("cummax", lib.tm_cummax, CumMax))
    cummin = export(_cumextreme("cummin", lib.tm_cummin, CumMin))

