"""What every Tensor module shares: wrapping C results, converting
arguments, Size, device and GradFn.

The Tensor class itself is defined in _tensor.py from the method families
in _ops_*.py, _index.py, _convert.py and _random.py, which all import from
here.  They reach the class as `_tensor.Tensor`, read when a method runs:
_tensor.py imports them to build the class, so they cannot import the
class itself at load time (the import of _tensor is at the end of this
file, so either module may be imported first).
"""
import numbers
import operator
import textwrap

import numpy as np

from . import _c
from ._c import ffi, lib, error

_new = object.__new__
_Integral = numbers.Integral
# Python numbers (bool and numpy scalars included) act as scalars in ops.
SCALAR = (numbers.Number, np.generic)


def wrap(p):
    """A Tensor owning the new reference `p`; raises the C error if NULL."""
    if not p:
        raise error()
    t = _new(_tensor.Tensor)
    t._p = p
    return t


def wrap_borrowed(p):
    """A Tensor taking its own reference to the borrowed `p` (None if NULL)."""
    if not p:
        return None
    t = _new(_tensor.Tensor)
    t._p = lib.tm_retain(p)
    return t


def ptr(x, what="argument"):
    """The C pointer of a Tensor argument (TypeError for anything else)."""
    if isinstance(x, _tensor.Tensor):
        return x._p
    raise TypeError(f"{what} must be a foundry.Tensor, not "
                    f"{type(x).__name__}")


def as_tensor_like(x, like):
    """x as a Tensor: Tensors pass through; numbers and arrays become a
    tensor of `like`'s dtype (for ops that take tensors only)."""
    if isinstance(x, _tensor.Tensor):
        return x
    from ._create import tensor
    return tensor(x, dtype=like.dtype)


def int64_array(values, what):
    """A C int64_t[] of `values` (ints), with Python-style errors."""
    try:
        vals = [operator.index(v) for v in values]
    except TypeError:
        raise TypeError(f"{what} must be integers, got "
                        f"{[type(v).__name__ for v in values]}") from None
    try:
        return ffi.new("int64_t[]", vals), len(vals)
    except OverflowError:
        raise ValueError(f"{what} {vals} does not fit in int64") from None


def shape_args(args, what="shape"):
    """(2, 3), ((2, 3),) or ([2, 3],) -> C int64_t[], ndim."""
    if len(args) == 1 and not isinstance(args[0], _Integral):
        args = args[0]
        if isinstance(args, _tensor.Tensor):
            args = args.tolist()
    if not isinstance(args, (tuple, list, Size)):
        raise TypeError(f"{what} must be a sequence of ints, not "
                        f"{type(args).__name__}")
    if len(args) > lib.TM_MAX_DIMS:
        raise ValueError(f"{what} has {len(args)} dims; at most "
                         f"{lib.TM_MAX_DIMS} are supported")
    return int64_array(args, what)


def dims_arg(dim):
    """None / int / sequence of ints -> (C int[] or NULL, count)."""
    if dim is None:
        return ffi.NULL, 0
    if isinstance(dim, _Integral):
        return ffi.new("int[]", [int(dim)]), 1
    dims = [operator.index(d) for d in dim]
    if len(dims) > lib.TM_MAX_DIMS:
        raise ValueError(f"too many dims: {dims}")
    return ffi.new("int[]", dims), len(dims)


def to_dtype(d):
    """A foundry.dtype from a dtype, a numpy dtype or a name."""
    if isinstance(d, _c.dtype):
        return d
    if isinstance(d, str) and d in _c.BY_NP:
        return _c.BY_NP[d]
    if d is float:
        return _c.float32
    if d is int:
        return _c.int64
    if d is bool:
        return _c.bool_
    try:
        nd = np.dtype(d)
    except TypeError:
        nd = None
    if nd is not None and nd.name in _c.BY_NP:
        return _c.BY_NP[nd.name]
    raise TypeError(f"not a foundry dtype: {d!r}")


def named(fn, name, doc):
    """Gives a function made by a factory (the ops of one family share a
    body) its method name, for tracebacks, and its docstring, each
    paragraph wrapped for help()."""
    fn.__name__ = name
    fn.__qualname__ = "Tensor." + name
    fn.__doc__ = "\n\n".join(textwrap.fill(" ".join(p.split()), 72)
                             for p in doc.split("\n\n"))
    return fn


def unsupported(what, value):
    """NotImplementedError for an argument Foundry accepts but cannot
    honour: it is refused, never silently dropped."""
    return NotImplementedError(f"{what}={value!r} is not supported")


class Size(tuple):
    """A tensor's shape: a tuple of ints.  Mirrors torch.Size."""

    def __repr__(self):
        return "foundry.Size([" + ", ".join(map(str, self)) + "])"

    def numel(self):
        """The product of the sizes (1 for an empty shape)."""
        n = 1
        for s in self:
            n *= s
        return n


class device:
    """Where a tensor lives: foundry.device('cpu').  Mirrors torch.device
    (an index such as 'cuda:0' is accepted and dropped: one device per
    kind)."""

    __slots__ = ("type",)
    _NAMES = {"cpu": lib.TM_CPU, "cuda": lib.TM_CUDA, "metal": lib.TM_METAL}

    def __init__(self, type="cpu"):
        if isinstance(type, device):
            type = type.type
        name = str(type).split(":")[0]
        if name not in self._NAMES:
            raise ValueError(f"unknown device {type!r}; expected one of "
                             f"{sorted(self._NAMES)}")
        self.type = name

    @property
    def c(self):
        """The C tm_device value."""
        return self._NAMES[self.type]

    def __eq__(self, other):
        try:
            return device(other).type == self.type
        except (ValueError, TypeError):
            return NotImplemented

    def __hash__(self):
        return hash(self.type)

    def __str__(self):
        return self.type

    def __repr__(self):
        return f"device(type='{self.type}')"


DEVICES = {lib.TM_CPU: device("cpu"), lib.TM_CUDA: device("cuda"),
           lib.TM_METAL: device("metal")}


def device_arg(dev, fn):
    """The device a factory was asked for: None (the CPU) or a device whose
    backend this build has; any other device raises NotImplementedError
    naming the argument, instead of creating the tensor on the CPU."""
    if dev is None:
        return None
    d = device(dev)
    if d.c == lib.TM_CPU:
        return None
    if not lib.tm_device_available(d.c):
        raise NotImplementedError(
            f"{fn}(device={str(dev)!r}): this build of the library has no "
            f"{d.type} backend; only the CPU")
    return d


class GradFn:
    """The node that produced a non-leaf tensor (only its name is exposed)."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def name(self):
        """The node's name, e.g. "MulBackward"."""
        return self._name

    def __repr__(self):
        return f"<{self._name} object>"


# circular: only _tensor.Tensor is used, read at call time
from . import _tensor  # noqa: E402
