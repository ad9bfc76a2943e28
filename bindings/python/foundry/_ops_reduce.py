"""Reductions (tm_reduce_op), arg-reductions, cumsum, sorting and the row
ops softmax / log_softmax: the _Reductions methods of Tensor.

Common rules (include/foundry/ops.h): `dim` is None (every dim), an int or
a sequence of distinct ints (negative counts from the end); keepdim leaves
reduced dims with size 1.  Sum and prod of integers or bool give int64;
float results keep the input dtype (accumulated in float64); mean, var,
std, logsumexp and norm of integers give float32.  Reducing zero elements
gives 0 (sum, norm), 1 (prod), NaN (mean, var), -inf (logsumexp), false
(any), true (all) and is an error for max/min/argmax/argmin.
"""
import collections
import operator

from . import _tensor
from ._base import dims_arg, named, wrap
from ._c import check, ffi, lib
from ._exports import export

MaxMin = collections.namedtuple("MaxMin", ["values", "indices"])
Sorted = collections.namedtuple("Sorted", ["values", "indices"])
TopK = collections.namedtuple("TopK", ["values", "indices"])

_SHAPES = ("dim: None (all dims), an int or a sequence of ints; keepdim "
           "keeps reduced dims as size 1.  axis= and keepdims= are numpy's "
           "names for them (giving both spellings is a TypeError, as "
           "PyTorch).")


def aliases(name, dim, axis, keepdim=False, keepdims=None):
    """(dim, keepdim) from PyTorch's numpy-style aliases axis= / keepdims=;
    both spellings at once is a TypeError, as in torch."""
    if axis is not None:
        if dim is not None:
            raise TypeError(f"{name}(): got both dim={dim!r} and axis="
                            f"{axis!r}; axis is an alias of dim, give one")
        dim = axis
    if keepdims is not None:
        if keepdim:
            raise TypeError(f"{name}(): got both keepdim and keepdims; "
                            f"keepdims is an alias of keepdim, give one")
        keepdim = keepdims
    return dim, keepdim


def _reduction(name, c_fn, summary, rule, float_result=False):
    """self.<name>(dim=None, keepdim=False, dtype=None); with dtype, self is
    converted first.  For ops whose result is always a float (mean,
    logsumexp) an integer dtype cannot be honoured: TypeError, as
    PyTorch."""
    def method(self, dim=None, keepdim=False, dtype=None, *, axis=None,
               keepdims=None):
        if axis is not None or keepdims is not None:
            dim, keepdim = aliases(name, dim, axis, keepdim, keepdims)
        if dtype is None:
            t = self
        else:
            t = self.to(dtype)
            if float_result and not t.is_floating_point():
                raise TypeError(f"{name}(dtype={dtype!r}): the result is "
                                f"floating point; give a float dtype")
        dims, n = dims_arg(dim)
        return wrap(c_fn(t._p, dims, n, bool(keepdim)))
    with_dtype = ("With dtype (a float dtype), self is converted to it "
                  "first." if float_result else
                  "With dtype, self is converted to it first.")
    return named(method, name, f"{summary}\n\n{_SHAPES} {rule} "
                 f"{with_dtype}  Mirrors torch.{name} and "
                 f"torch.Tensor.{name}.")


def _sum_like(name, c_fn, summary):
    """sum / prod: with dtype, the input is converted to it and the result
    has it (integer sums are computed in int64 and wrap to dtype, as
    PyTorch's integer accumulation does)."""
    def method(self, dim=None, keepdim=False, dtype=None, *, axis=None,
               keepdims=None):
        if axis is not None or keepdims is not None:
            dim, keepdim = aliases(name, dim, axis, keepdim, keepdims)
        t = self if dtype is None else self.to(dtype)
        dims, n = dims_arg(dim)
        r = wrap(c_fn(t._p, dims, n, bool(keepdim)))
        return r if dtype is None else r.to(dtype)
    return named(method, name, f"{summary}\n\n{_SHAPES} Integers and bool "
                 f"give int64, floats keep their dtype; with dtype, the "
                 f"input is converted to it and so is the result.  Mirrors "
                 f"torch.{name} and torch.Tensor.{name}.")


def _maxmin(name, c_all, c_dim, elementwise):
    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        if isinstance(dim, _tensor.Tensor):  # torch.max(a, b): elementwise
            return elementwise(self, dim)
        if axis is not None or keepdims is not None:
            dim, keepdim = aliases(name, dim, axis, keepdim, keepdims)
        if dim is None:
            return wrap(c_all(self._p, ffi.NULL, 0, False))
        vals = ffi.new("tm_tensor **")
        idx = ffi.new("tm_tensor **")
        check(c_dim(self._p, operator.index(dim), bool(keepdim), vals, idx))
        return MaxMin(wrap(vals[0]), wrap(idx[0]))
    word = "largest" if name == "max" else "smallest"
    return named(method, name, f"The {word} element, or (values, indices) "
                 f"along one dim.\n\n{name}() reduces every dim to a 0-d "
                 f"tensor; {name}(dim, keepdim) gives a named tuple (values, "
                 f"indices as int64, the first {word} one); "
                 f"{name}(other_tensor) is "
                 f"the elementwise {name}imum.  NaN propagates; zero elements "
                 f"are an error.  Mirrors torch.{name} and "
                 f"torch.Tensor.{name}.")


def _varstd(name, c_fn, summary):
    def method(self, dim=None, unbiased=True, keepdim=False, *,
               correction=None, axis=None, keepdims=None):
        if axis is not None or keepdims is not None:
            dim, keepdim = aliases(name, dim, axis, keepdim, keepdims)
        if correction is None:
            correction = 1.0 if unbiased else 0.0
        dims, n = dims_arg(dim)
        return wrap(c_fn(self._p, dims, n, float(correction), bool(keepdim)))
    return named(method, name, f"{summary} over dim.\n\n{_SHAPES} "
                 f"sum((x - mean)^2) / (count - correction): correction 1 "
                 f"(unbiased=True, the default) or 0 (population); count <= "
                 f"correction gives inf (NaN for 0/0).  Integers give "
                 f"float32.  Mirrors torch.{name} and torch.Tensor.{name}.")


def _arg(name, c_dim, c_all):
    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        if axis is not None or keepdims is not None:
            dim, keepdim = aliases(name, dim, axis, keepdim, keepdims)
        if dim is None:
            return wrap(c_all(self._p))
        return wrap(c_dim(self._p, operator.index(dim), bool(keepdim)))
    word = "largest" if name == "argmax" else "smallest"
    return named(method, name, f"Index (int64) of the first {word} element "
                 f"along dim, or into the flattened tensor when dim is "
                 f"None.\n\nNaN counts as {word}; zero elements are an "
                 f"error.  Mirrors torch.{name} and torch.Tensor.{name}.")


def _row(name, c_fn, summary):
    def method(self, dim=None, dtype=None, *, axis=None):
        dim, _ = aliases(name, dim, axis)
        if dim is None:
            raise TypeError(f"{name}() missing its dim argument")
        t = self if dtype is None else self.to(dtype)
        return wrap(c_fn(t._p, operator.index(dim)))
    return named(method, name, f"{summary}\n\nA float tensor of self's "
                 f"shape and dtype (integers are an error; with dtype, self "
                 f"is converted first).  A row holding NaN or +inf, or only "
                 f"-inf, is all NaN.  Mirrors torch.{name} and "
                 f"torch.Tensor.{name}.")


class _Reductions:
    """Reductions, arg-reductions, sorting and softmax."""

    __slots__ = ()

    sum = export(_sum_like("sum", lib.tm_sum, "Sum of the elements over "
                           "dim."))
    prod = export(_sum_like("prod", lib.tm_prod, "Product of the elements "
                            "over dim."))
    mean = export(_reduction("mean", lib.tm_mean, "Mean over dim.",
                             "Integers give float32.", float_result=True))
    any = export(_reduction("any", lib.tm_any, "True where any element "
                            "over dim is non-zero.",
                            "The result is bool (NaN counts as true)."))
    all = export(_reduction("all", lib.tm_all, "True where every element "
                            "over dim is non-zero.",
                            "The result is bool (NaN counts as true)."))
    logsumexp = export(_reduction(
        "logsumexp", lib.tm_logsumexp,
        "log(sum(exp(self))) over dim, computed stably.",
        "Integers give float32; NaN anywhere gives NaN, else +inf if any "
        "element is +inf.", float_result=True))
    amax = export(_reduction("amax", lib.tm_max, "Largest value over dim.",
                             "NaN propagates; zero elements are an error."))
    amin = export(_reduction("amin", lib.tm_min, "Smallest value over dim.",
                             "NaN propagates; zero elements are an error."))
    max = export(_maxmin("max", lib.tm_max, lib.tm_max_dim,
                         lambda a, b: a.maximum(b)))
    min = export(_maxmin("min", lib.tm_min, lib.tm_min_dim,
                         lambda a, b: a.minimum(b)))
    var = export(_varstd("var", lib.tm_var, "Variance"))
    std = export(_varstd("std", lib.tm_std, "Standard deviation"))
    argmax = export(_arg("argmax", lib.tm_argmax, lib.tm_argmax_all))
    argmin = export(_arg("argmin", lib.tm_argmin, lib.tm_argmin_all))
    softmax = export(_row("softmax", lib.tm_softmax,
                          "exp(x - max) / sum(exp(x - max)) along dim."))
    log_softmax = export(_row("log_softmax", lib.tm_log_softmax,
                              "log(softmax(x)) along dim, computed "
                              "stably."))

    @export
    def norm(self, p=2, dim=None, keepdim=False):
        """Vector p-norm over dim.

        p = 2 ("fro"), 1, inf (max |x|), -inf (min |x|), 0 (count of
        non-zeros) or any other number: (sum |x|^p)^(1/p).  dim and keepdim
        as for sum; NaN propagates; integers give float32.  Mirrors
        torch.norm and torch.Tensor.norm (vector norms only)."""
        if p == "fro":
            p = 2
        dims, n = dims_arg(dim)
        return wrap(lib.tm_norm(self._p, dims, n, float(p), bool(keepdim)))

    @export
    def count_nonzero(self, dim=None, *, axis=None):
        """The number of non-zero elements (int64) over dim: None (every
        dim), an int or a sequence of ints (axis= is an alias).  NaN
        counts as non-zero; the reduced dims are removed.  Mirrors
        torch.count_nonzero and torch.Tensor.count_nonzero."""
        dim, _ = aliases("count_nonzero", dim, axis)
        nz = wrap(lib.tm_binary_scalar(lib.TM_OP_NE, self._p, 0.0))
        dims, n = dims_arg(dim)
        return wrap(lib.tm_sum(nz._p, dims, n, False))

    @export
    def cumsum(self, dim=None, *, axis=None):
        """Running sum along dim (axis= is an alias).

        Same shape; integers and bool give int64 (wrapping), floats keep
        their dtype (accumulated in float64).  Mirrors torch.cumsum and
        torch.Tensor.cumsum."""
        dim, _ = aliases("cumsum", dim, axis)
        if dim is None:
            raise TypeError("cumsum() missing its dim argument")
        return wrap(lib.tm_cumsum(self._p, operator.index(dim)))

    @export
    def sort(self, dim=None, descending=False, *, stable=False, axis=None):
        """(values, indices) sorted along dim (default -1; axis= is an
        alias).

        Always stable (equal elements keep their input order, also
        descending), so both stable=True, which requires it, and
        stable=False, which allows any order, are honoured.  NaN sorts as
        larger than every number; indices are int64.  Mirrors torch.sort
        and torch.Tensor.sort (stable is keyword-only, as there)."""
        dim, _ = aliases("sort", dim, axis)
        vals = ffi.new("tm_tensor **")
        idx = ffi.new("tm_tensor **")
        check(lib.tm_sort(self._p, -1 if dim is None else
                          operator.index(dim), bool(descending), vals, idx))
        return Sorted(wrap(vals[0]), wrap(idx[0]))

    @export
    def argsort(self, dim=None, descending=False, *, stable=False,
                axis=None):
        """The indices (int64) that sort self along dim (default -1; axis=
        is an alias).

        Always stable (ties keep their input order, also descending), so
        stable=True and stable=False are both honoured.  Mirrors
        torch.argsort and torch.Tensor.argsort."""
        dim, _ = aliases("argsort", dim, axis)
        return wrap(lib.tm_argsort(self._p, -1 if dim is None else
                                   operator.index(dim), bool(descending)))

    @export
    def topk(self, k, dim=None, largest=True, sorted=True, *, axis=None):
        """(values, indices) of the k largest (or smallest) along dim.

        Always in sorted order (which sorted=False allows); ties keep the
        lower index first; NaN counts as largest.  k in [0, size of dim].
        dim defaults to -1 (axis= is an alias).  Mirrors torch.topk and
        torch.Tensor.topk."""
        dim, _ = aliases("topk", dim, axis)
        dim = -1 if dim is None else dim
        vals = ffi.new("tm_tensor **")
        idx = ffi.new("tm_tensor **")
        check(lib.tm_topk(self._p, operator.index(k), operator.index(dim),
                          bool(largest), vals, idx))
        return TopK(wrap(vals[0]), wrap(idx[0]))

    @export
    def equal(self, other):
        """True when other is a tensor of the same shape with every element
        equal (a Python bool).  Mirrors torch.equal."""
        return (isinstance(other, _tensor.Tensor) and
                self.shape == other.shape and
                bool(wrap(lib.tm_eq(self._p, other._p)).all()))

