"""Tensor methods and operators, and their foundry.* function forms.

Each method is a thin call into the C library: arguments are converted,
the C function runs, and a NULL result or a negative status becomes the
matching Python exception (see _c.py).
"""
import collections
import operator

from . import _c
from ._c import ffi, lib, error
from ._tensor import (Tensor, SCALAR, wrap, ptr, dims_arg, shape_args,
                      int64_array, to_dtype, as_tensor_like)

_new = object.__new__
check = _c.check
# Functions exported as foundry.<name> (filled in below).
FUNCTIONS = {}


def _method(name, fn, function=True):
    setattr(Tensor, name, fn)
    if function:
        FUNCTIONS[name] = fn
    return fn


# ------------------------------------------------------------------ binary

def _binary_pair(op, c_fn, c_scalar):
    """The method a.op(b) and the operator for `op`, fast for the common
    cases: both tensors, or a tensor and a Python number."""
    def forward(self, other):
        if isinstance(other, Tensor):
            p = c_fn(self._p, other._p)
        elif isinstance(other, SCALAR):
            p = c_scalar(op, self._p, other)
        else:
            return NotImplemented
        if not p:
            raise error()
        t = _new(Tensor)
        t._p = p
        return t
    return forward


def _reverse(op, c_fn):
    def reverse(self, other):
        if isinstance(other, SCALAR):
            p = lib.tm_binary_rscalar(op, other, self._p)
        elif isinstance(other, Tensor):
            p = c_fn(other._p, self._p)
        else:
            return NotImplemented
        if not p:
            raise error()
        t = _new(Tensor)
        t._p = p
        return t
    return reverse


def _inplace(op):
    def inplace(self, other):
        if isinstance(other, Tensor):
            check(lib.tm_binary_(op, self._p, other._p))
        elif isinstance(other, SCALAR):
            check(lib.tm_binary_scalar_(op, self._p, other))
        else:
            return NotImplemented
        return self
    return inplace


def _strict(fn, name):
    """A method that raises TypeError instead of returning NotImplemented."""
    def method(self, other):
        r = fn(self, other)
        if r is NotImplemented:
            raise TypeError(f"{name}(): expected a Tensor or a number, got "
                            f"{type(other).__name__}")
        return r
    method.__name__ = name
    return method


_BINARY = [  # name, op, C function, operator, reflected operator, in-place
    ("add", lib.TM_OP_ADD, lib.tm_add, "__add__", "__radd__", "__iadd__"),
    ("sub", lib.TM_OP_SUB, lib.tm_sub, "__sub__", "__rsub__", "__isub__"),
    ("mul", lib.TM_OP_MUL, lib.tm_mul, "__mul__", "__rmul__", "__imul__"),
    ("div", lib.TM_OP_DIV, lib.tm_div, "__truediv__", "__rtruediv__",
     "__itruediv__"),
    ("pow", lib.TM_OP_POW, lib.tm_pow, "__pow__", "__rpow__", "__ipow__"),
    ("floor_divide", lib.TM_OP_FLOOR_DIVIDE, lib.tm_floor_divide,
     "__floordiv__", "__rfloordiv__", "__ifloordiv__"),
    ("remainder", lib.TM_OP_REMAINDER, lib.tm_remainder, "__mod__",
     "__rmod__", "__imod__"),
    ("eq", lib.TM_OP_EQ, lib.tm_eq, "__eq__", None, None),
    ("ne", lib.TM_OP_NE, lib.tm_ne, "__ne__", None, None),
    ("lt", lib.TM_OP_LT, lib.tm_lt, "__lt__", "__gt__", None),
    ("le", lib.TM_OP_LE, lib.tm_le, "__le__", "__ge__", None),
    ("gt", lib.TM_OP_GT, lib.tm_gt, "__gt__", "__lt__", None),
    ("ge", lib.TM_OP_GE, lib.tm_ge, "__ge__", "__le__", None),
    ("maximum", lib.TM_OP_MAXIMUM, lib.tm_maximum, None, None, None),
    ("minimum", lib.TM_OP_MINIMUM, lib.tm_minimum, None, None, None),
    ("logical_and", lib.TM_OP_LOGICAL_AND, lib.tm_logical_and, "__and__",
     "__rand__", "__iand__"),
    ("logical_or", lib.TM_OP_LOGICAL_OR, lib.tm_logical_or, "__or__",
     "__ror__", "__ior__"),
    ("logical_xor", lib.TM_OP_LOGICAL_XOR, lib.tm_logical_xor, "__xor__",
     "__rxor__", "__ixor__"),
]

for _name, _op, _fn, _dunder, _rdunder, _idunder in _BINARY:
    _fwd = _binary_pair(_op, _fn, lib.tm_binary_scalar)
    _method(_name, _strict(_fwd, _name))
    _method(_name + "_", _strict(_inplace(_op), _name + "_"), False)
    if _dunder:
        setattr(Tensor, _dunder, _fwd)
    if _idunder:
        setattr(Tensor, _idunder, _inplace(_op))
for _name, _op, _fn, _dunder, _rdunder, _idunder in _BINARY:
    # comparisons reflect into their mirror (2 < t is t > 2)
    if _rdunder and _rdunder.strip("_") in ("gt", "lt", "ge", "le"):
        continue
    if _rdunder:
        setattr(Tensor, _rdunder, _reverse(_op, _fn))

_add_fwd = Tensor.add
_sub_fwd = Tensor.sub


def add(self, other, alpha=1):
    """self + alpha * other."""
    if alpha != 1:
        other = other * alpha
    return _add_fwd(self, other)


def sub(self, other, alpha=1):
    """self - alpha * other."""
    if alpha != 1:
        other = other * alpha
    return _sub_fwd(self, other)


_method("add", add)
_method("sub", sub)
FUNCTIONS["subtract"] = sub
FUNCTIONS["multiply"] = Tensor.mul
FUNCTIONS["divide"] = FUNCTIONS["true_divide"] = Tensor.div
Tensor.true_divide = Tensor.div
Tensor.fmod = Tensor.remainder


def _matmul(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    p = lib.tm_matmul(self._p, other._p)
    if not p:
        raise error()
    t = _new(Tensor)
    t._p = p
    return t


Tensor.__matmul__ = _matmul
Tensor.__rmatmul__ = lambda self, other: (
    _matmul(other, self) if isinstance(other, Tensor) else NotImplemented)
_method("matmul", _strict(_matmul, "matmul"))
FUNCTIONS["mm"] = FUNCTIONS["bmm"] = FUNCTIONS["dot"] = Tensor.matmul
Tensor.mm = Tensor.bmm = Tensor.dot = Tensor.matmul


def _neg(self):
    return wrap(lib.tm_neg(self._p))


Tensor.__neg__ = _neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: wrap(lib.tm_abs(self._p))
Tensor.__invert__ = lambda self: wrap(lib.tm_logical_not(self._p))

# ------------------------------------------------------------------- unary

_UNARY = ["neg", "abs", "sign", "exp", "log", "log1p", "expm1", "sqrt",
          "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "silu",
          "logical_not", "floor", "ceil", "round", "trunc", "reciprocal",
          "square", "erf", "log2", "isnan", "isinf", "isfinite"]


def _unary_method(c_fn):
    def method(self):
        p = c_fn(self._p)
        if not p:
            raise error()
        t = _new(Tensor)
        t._p = p
        return t
    return method


def _unary_inplace(op):
    def method(self):
        check(lib.tm_unary_(op, self._p))
        return self
    return method


for _name in _UNARY:
    _method(_name, _unary_method(getattr(lib, "tm_" + _name)))
    _method(_name + "_", _unary_inplace(getattr(lib, "TM_OP_" +
                                                _name.upper())), False)
Tensor.negative = Tensor.neg
Tensor.absolute = Tensor.abs


def gelu(self, approximate="none"):
    if approximate == "none":
        return wrap(lib.tm_gelu(self._p))
    if approximate == "tanh":
        return wrap(lib.tm_gelu_tanh(self._p))
    raise ValueError(f"approximate must be 'none' or 'tanh', not "
                     f"{approximate!r}")


_method("gelu", gelu)
_method("leaky_relu",
        lambda self, negative_slope=0.01: wrap(
            lib.tm_leaky_relu(self._p, negative_slope)))
_method("softplus",
        lambda self, beta=1.0, threshold=20.0: wrap(
            lib.tm_softplus(self._p, beta, threshold)))


def clamp(self, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = ffi.NULL if min is None else ptr(as_tensor_like(min, self))
        hi = ffi.NULL if max is None else ptr(as_tensor_like(max, self))
        return wrap(lib.tm_clamp_tensor(self._p, lo, hi))
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    nan = float("nan")
    return wrap(lib.tm_clamp(self._p, nan if min is None else min,
                             nan if max is None else max))


def clamp_(self, min=None, max=None):
    nan = float("nan")
    check(lib.tm_clamp_(self._p, nan if min is None else min,
                        nan if max is None else max))
    return self


_method("clamp", clamp)
_method("clip", clamp)
_method("clamp_", clamp_, False)
Tensor.clip_ = clamp_


def where(condition, input, other):
    """input where condition else other (numbers allowed for input/other)."""
    like = input if isinstance(input, Tensor) else (
        other if isinstance(other, Tensor) else condition)
    a = as_tensor_like(input, like)
    b = as_tensor_like(other, like)
    return wrap(lib.tm_where(ptr(condition, "condition"), a._p, b._p))


FUNCTIONS["where"] = where
Tensor.where = lambda self, condition, other: where(condition, self, other)

# -------------------------------------------------------------- reductions

MaxMin = collections.namedtuple("MaxMin", ["values", "indices"])
Sorted = collections.namedtuple("Sorted", ["values", "indices"])
TopK = collections.namedtuple("TopK", ["values", "indices"])


def _reduce_method(c_fn):
    def method(self, dim=None, keepdim=False, dtype=None):
        t = self if dtype is None else self.to(dtype)
        dims, n = dims_arg(dim)
        return wrap(c_fn(t._p, dims, n, bool(keepdim)))
    return method


for _name in ("sum", "mean", "prod", "any", "all", "logsumexp"):
    _method(_name, _reduce_method(getattr(lib, "tm_" + _name)))


def _maxmin(c_all, c_dim, name):
    def method(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):  # torch.max(a, b): elementwise
            return getattr(self, "maximum" if name == "max" else
                           "minimum")(dim)
        if dim is None:
            return wrap(c_all(self._p, ffi.NULL, 0, False))
        vals = ffi.new("tm_tensor **")
        idx = ffi.new("tm_tensor **")
        check(c_dim(self._p, operator.index(dim), bool(keepdim), vals, idx))
        return MaxMin(wrap(vals[0]), wrap(idx[0]))
    return method


_method("max", _maxmin(lib.tm_max, lib.tm_max_dim, "max"))
_method("min", _maxmin(lib.tm_min, lib.tm_min_dim, "min"))
_method("amax", _reduce_method(lib.tm_max))
_method("amin", _reduce_method(lib.tm_min))


def _varstd(c_fn):
    def method(self, dim=None, unbiased=True, keepdim=False, *,
               correction=None):
        if correction is None:
            correction = 1.0 if unbiased else 0.0
        dims, n = dims_arg(dim)
        return wrap(c_fn(self._p, dims, n, float(correction), bool(keepdim)))
    return method


_method("var", _varstd(lib.tm_var))
_method("std", _varstd(lib.tm_std))


def norm(self, p=2, dim=None, keepdim=False):
    if p == "fro":
        p = 2
    dims, n = dims_arg(dim)
    return wrap(lib.tm_norm(self._p, dims, n, float(p), bool(keepdim)))


_method("norm", norm)


def _arg(c_dim, c_all):
    def method(self, dim=None, keepdim=False):
        if dim is None:
            return wrap(c_all(self._p))
        return wrap(c_dim(self._p, operator.index(dim), bool(keepdim)))
    return method


_method("argmax", _arg(lib.tm_argmax, lib.tm_argmax_all))
_method("argmin", _arg(lib.tm_argmin, lib.tm_argmin_all))
_method("cumsum", lambda self, dim: wrap(lib.tm_cumsum(self._p,
                                                       operator.index(dim))))


def sort(self, dim=-1, descending=False, stable=True):
    vals = ffi.new("tm_tensor **")
    idx = ffi.new("tm_tensor **")
    check(lib.tm_sort(self._p, operator.index(dim), bool(descending), vals,
                      idx))
    return Sorted(wrap(vals[0]), wrap(idx[0]))


def topk(self, k, dim=-1, largest=True, sorted=True):
    vals = ffi.new("tm_tensor **")
    idx = ffi.new("tm_tensor **")
    check(lib.tm_topk(self._p, operator.index(k), operator.index(dim),
                      bool(largest), vals, idx))
    return TopK(wrap(vals[0]), wrap(idx[0]))


_method("sort", sort)
_method("topk", topk)
_method("argsort", lambda self, dim=-1, descending=False: wrap(
    lib.tm_argsort(self._p, operator.index(dim), bool(descending))))


def equal(self, other):
    """True when shapes and every element are equal."""
    return (isinstance(other, Tensor) and self.shape == other.shape and
            bool(wrap(lib.tm_eq(self._p, other._p)).all()))


def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import numpy as np
    return bool(np.allclose(self.detach().numpy(), other.detach().numpy(),
                            rtol=rtol, atol=atol, equal_nan=equal_nan))


_method("equal", equal)
_method("allclose", allclose)

# ---------------------------------------------------------- shape and views


def _reshape_like(c_fn):
    def method(self, *shape):
        s, n = shape_args(shape)
        return wrap(c_fn(self._p, s, n))
    return method


_method("reshape", _reshape_like(lib.tm_reshape))
_method("view", _reshape_like(lib.tm_view), False)
_method("expand", _reshape_like(lib.tm_expand), False)
_method("broadcast_to", _reshape_like(lib.tm_broadcast_to))
_method("repeat", _reshape_like(lib.tm_repeat), False)
Tensor.view_as = lambda self, other: self.view(other.shape)
Tensor.reshape_as = lambda self, other: self.reshape(other.shape)
Tensor.expand_as = lambda self, other: self.expand(other.shape)


def permute(self, *dims):
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = dims[0]
    d = [operator.index(x) for x in dims]
    return wrap(lib.tm_permute(self._p, ffi.new("int[]", d) if d else
                               ffi.NULL, len(d)))


_method("permute", permute)
_method("transpose", lambda self, dim0, dim1: wrap(
    lib.tm_transpose(self._p, operator.index(dim0), operator.index(dim1))))
FUNCTIONS["swapaxes"] = Tensor.transpose
Tensor.swapaxes = Tensor.transpose


def t(self):
    n = self.ndim
    if n > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dims, not {n}")
    return permute(self, list(range(n))[::-1])


_method("t", t)
Tensor.T = property(lambda self: permute(self, list(range(self.ndim))[::-1]))
Tensor.mT = property(lambda self: self.transpose(-2, -1))


def flatten(self, start_dim=0, end_dim=-1):
    return wrap(lib.tm_flatten(self._p, operator.index(start_dim),
                               operator.index(end_dim)))


def unflatten(self, dim, sizes):
    shape = list(self.shape)
    d = operator.index(dim) % max(len(shape), 1)
    return self.reshape(shape[:d] + list(sizes) + shape[d + 1:])


_method("flatten", flatten)
_method("unflatten", unflatten)
_method("unsqueeze", lambda self, dim: wrap(
    lib.tm_unsqueeze(self._p, operator.index(dim))))


def squeeze(self, dim=None):
    if dim is None:
        return wrap(lib.tm_squeeze_all(self._p))
    return wrap(lib.tm_squeeze(self._p, operator.index(dim)))


_method("squeeze", squeeze)
_method("contiguous", lambda self: wrap(lib.tm_contiguous(self._p)), False)
_method("clone", lambda self: wrap(lib.tm_clone(self._p)))
_method("narrow", lambda self, dim, start, length: wrap(lib.tm_narrow(
    self._p, operator.index(dim), operator.index(start),
    operator.index(length))))
_method("select", lambda self, dim, index: wrap(lib.tm_select(
    self._p, operator.index(dim), operator.index(index))))


def as_strided(self, size, stride, storage_offset=None):
    s, n = shape_args((size,))
    st, m = int64_array(stride, "stride")
    if m != n:
        raise ValueError(f"size has {n} dims but stride has {m}")
    off = self.storage_offset() if storage_offset is None else storage_offset
    return wrap(lib.tm_as_strided(self._p, s, st, n, operator.index(off)))


_method("as_strided", as_strided)


def _pieces(c_call, most):
    """Runs a C splitter that writes at most `most` new references."""
    out = ffi.new("tm_tensor *[]", max(most, 1))
    n = c_call(out, max(most, 1))
    if n < 0:
        raise error()
    return tuple(wrap(out[i]) for i in range(n))


def split(self, split_size_or_sections, dim=0):
    dim = operator.index(dim)
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes, n = int64_array(split_size_or_sections, "split sizes")
        return _pieces(lambda out, cap: lib.tm_split_sizes(
            self._p, sizes, n, dim, out, cap), n)
    size = operator.index(split_size_or_sections)
    length = self.size(dim)
    most = -(-length // size) if size > 0 else 1  # ceil; C reports size < 1
    return _pieces(lambda out, cap: lib.tm_split(self._p, size, dim, out,
                                                 cap), most)


def chunk(self, chunks, dim=0):
    c, d = operator.index(chunks), operator.index(dim)
    length = self.size(d)
    most = c if length == 0 else min(c, length)  # never more than elements
    return _pieces(lambda out, cap: lib.tm_chunk(self._p, c, d, out, cap),
                   most)


_method("split", split)
_method("chunk", chunk)
_method("unbind", lambda self, dim=0: tuple(
    self.select(dim, i) for i in range(self.size(dim))))
_method("tril", lambda self, diagonal=0: wrap(lib.tm_tril(
    self._p, operator.index(diagonal))))
_method("triu", lambda self, diagonal=0: wrap(lib.tm_triu(
    self._p, operator.index(diagonal))))


def tril_(self, diagonal=0):
    check(lib.tm_tril_(self._p, operator.index(diagonal)))
    return self


def triu_(self, diagonal=0):
    check(lib.tm_triu_(self._p, operator.index(diagonal)))
    return self


Tensor.tril_ = tril_
Tensor.triu_ = triu_


def _seq(tensors, what):
    ts = list(tensors)
    for t in ts:
        ptr(t, what)
    return ffi.new("tm_tensor *[]", [t._p for t in ts]), len(ts)


def cat(tensors, dim=0):
    arr, n = _seq(tensors, "cat: every element")
    return wrap(lib.tm_cat(arr, n, operator.index(dim)))


def stack(tensors, dim=0):
    arr, n = _seq(tensors, "stack: every element")
    return wrap(lib.tm_stack(arr, n, operator.index(dim)))


FUNCTIONS["cat"] = FUNCTIONS["concat"] = FUNCTIONS["concatenate"] = cat
FUNCTIONS["stack"] = stack

# ---------------------------------------------------------------- indexing


def _index(index):
    return ptr(index, "index")


_method("gather", lambda self, dim, index: wrap(lib.tm_gather(
    self._p, operator.index(dim), _index(index))))


def scatter(self, dim, index, src=None, value=None):
    if src is None and value is None:
        raise TypeError("scatter: give src or value")
    if src is not None and not isinstance(src, Tensor):
        value, src = src, None
    if src is None:
        return wrap(lib.tm_scatter_value(self._p, operator.index(dim),
                                         _index(index), float(value)))
    return wrap(lib.tm_scatter(self._p, operator.index(dim), _index(index),
                               src._p))


def scatter_(self, dim, index, src):
    if not isinstance(src, Tensor):
        src = self.new_full(index.shape, src)
    check(lib.tm_scatter_(self._p, operator.index(dim), _index(index),
                          src._p))
    return self


def scatter_add_(self, dim, index, src):
    check(lib.tm_scatter_add_(self._p, operator.index(dim), _index(index),
                              ptr(src, "src")))
    return self


_method("scatter", scatter)
Tensor.scatter_ = scatter_
_method("scatter_add", lambda self, dim, index, src: wrap(lib.tm_scatter_add(
    self._p, operator.index(dim), _index(index), ptr(src, "src"))))
Tensor.scatter_add_ = scatter_add_
_method("index_select", lambda self, dim, index: wrap(lib.tm_index_select(
    self._p, operator.index(dim), _index(index))))


def masked_fill(self, mask, value):
    return wrap(lib.tm_masked_fill(self._p, ptr(mask, "mask"), float(value)))


def masked_fill_(self, mask, value):
    check(lib.tm_masked_fill_(self._p, ptr(mask, "mask"), float(value)))
    return self


_method("masked_fill", masked_fill)
Tensor.masked_fill_ = masked_fill_

# ----------------------------------------------------------- in-place fills


def copy_(self, src):
    if not isinstance(src, Tensor):
        src = as_tensor_like(src, self)
    check(lib.tm_copy_(self._p, src._p))
    return self


def fill_(self, value):
    if isinstance(value, Tensor):
        value = value.item()
    check(lib.tm_fill_(self._p, float(value)))
    return self


Tensor.copy_ = copy_
Tensor.fill_ = fill_
Tensor.zero_ = lambda self: fill_(self, 0)


def uniform_(self, a=0.0, b=1.0, generator=None):
    check(lib.tm_uniform_(self._p, a, b, ffi.NULL))
    return self


def normal_(self, mean=0.0, std=1.0, generator=None):
    check(lib.tm_normal_(self._p, mean, std, ffi.NULL))
    return self


Tensor.uniform_ = uniform_
Tensor.normal_ = normal_

# ---------------------------------------------------------- dtype / device


def to(self, *args, **kwargs):
    """to(dtype), to(device), to(other_tensor), to(device, dtype)."""
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to(): unexpected arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, _c.dtype):
            dtype = a
        elif isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda",
                                                         "metal"):
            dev = a
        elif a is not None and type(a).__name__ == "device":
            dev = a
        else:
            dtype = to_dtype(a)
    t = self
    if dev is not None:
        from ._tensor import device
        d = device(dev)
        if d.c != lib.tm_device_of(t._p):
            t = wrap(lib.tm_to(t._p, d.c))
    if dtype is not None:
        dt = to_dtype(dtype)
        if dt.c != lib.tm_dtype_of(t._p):
            t = wrap(lib.tm_to_dtype(t._p, dt.c))
    return t


Tensor.to = to
Tensor.cpu = lambda self: self.to("cpu")
Tensor.type_as = lambda self, other: self.to(other.dtype)
for _name, _dt in (("float", _c.float32), ("double", _c.float64),
                   ("half", _c.float16), ("bfloat16", _c.bfloat16),
                   ("long", _c.int64), ("int", _c.int32),
                   ("short", _c.int16), ("char", _c.int8),
                   ("byte", _c.uint8), ("bool", _c.bool_)):
    setattr(Tensor, _name, (lambda d: lambda self: to(self, d))(_dt))


def _new_like(c_fn):
    def method(self, *size, dtype=None, requires_grad=False):
        s, n = shape_args(size)
        dt = self.dtype if dtype is None else to_dtype(dtype)
        t = wrap(c_fn(s, n, dt.c))
        return t.requires_grad_(True) if requires_grad else t
    return method


Tensor.new_zeros = _new_like(lib.tm_zeros)
Tensor.new_ones = _new_like(lib.tm_ones)
Tensor.new_empty = _new_like(lib.tm_empty)


def new_full(self, size, fill_value, dtype=None, requires_grad=False):
    s, n = shape_args((size,))
    dt = self.dtype if dtype is None else to_dtype(dtype)
    t = wrap(lib.tm_full(s, n, float(fill_value), dt.c))
    return t.requires_grad_(True) if requires_grad else t


def new_tensor(self, data, dtype=None, requires_grad=False):
    from ._create import tensor
    return tensor(data, dtype=dtype or self.dtype,
                  requires_grad=requires_grad)


Tensor.new_full = new_full
Tensor.new_tensor = new_tensor

# ---------------------------------------------------------------- row ops


def softmax(self, dim, dtype=None):
    t = self if dtype is None else self.to(dtype)
    return wrap(lib.tm_softmax(t._p, operator.index(dim)))


def log_softmax(self, dim, dtype=None):
    t = self if dtype is None else self.to(dtype)
    return wrap(lib.tm_log_softmax(t._p, operator.index(dim)))


Tensor.softmax = softmax
Tensor.log_softmax = log_softmax
