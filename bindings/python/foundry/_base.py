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
    tensor of `like`'s dtype on `like`'s device (for ops that take tensors
    only)."""
    if isinstance(x, _tensor.Tensor):
        return x
    from ._create import tensor
    return tensor(x, dtype=like.dtype, device=like.device)


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


# Device types by name, read from the C enum (tm_device_type) so the two
# cannot drift: {"cpu": TM_DEVICE_CPU, "cuda": ..., "metal": ..., "test": ...}.
DEVICE_TYPES = {ffi.string(lib.tm_device_type_name(v)).decode(): v
                for v in sorted(ffi.typeof("tm_device_type").elements)}
_TYPE_NAMES = {v: k for k, v in DEVICE_TYPES.items()}


def _device_error(msg):
    """The error of a string or index that is not a device: the class of
    TM_EINVAL (a ValueError that is also a RuntimeError, as torch raises)."""
    return _c.error_class(lib.TM_EINVAL)(msg)


def _parse(s):
    """(type name, index or None) of a device string, parsed by the C
    library (tm_device_parse), whose message an invalid string raises."""
    out = ffi.new("tm_device *")
    _c.check(lib.tm_device_parse(s.encode(), out))
    return _TYPE_NAMES[out.type], (out.index if ":" in s else None)


class device:
    """Where a tensor lives: a type ("cpu", "cuda", "metal", "test") and an
    index.  Mirrors torch.device:

        device("cuda:1")       device("cuda", 1)       device(1)  # cuda:1
        device("cuda")         # index None: the type's default device, 0
        device(other_device)

    `index` is None when none was given (a bare "cuda"); the C library
    then uses index 0, as PyTorch uses the current device, and a tensor
    created there reports "cuda:0".  A CPU tensor reports "cpu".  Invalid
    strings and negative or out-of-range indices raise the library's
    message as a ValueError that is also a RuntimeError (torch raises
    RuntimeError).  Equal devices have equal type and index (so "cuda" !=
    "cuda:0", as in torch); unlike torch, a device also equals the string
    it prints as (device("cpu") == "cpu").  Immutable and hashable."""

    __slots__ = ("_type", "_index", "_cdev")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(device, index): give the index in "
                                "a type string instead")
            name, idx = type._type, type._index
        elif isinstance(type, str):
            name, idx = _parse(type)
            if index is not None:
                if idx is not None:
                    raise _device_error(
                        f"type (string) must not include an index because "
                        f"index was passed explicitly: {type}")
                idx = _index_arg(index)
                _parse(f"{name}:{idx}")  # the library's range check
        elif isinstance(type, _Integral) and not isinstance(type, bool):
            if index is not None:
                raise TypeError("device(int) takes no index: the int is "
                                "the cuda index")
            name, idx = "cuda", _index_arg(type)
            _parse(f"cuda:{idx}")
        else:
            raise TypeError(f"device() expects a str, an int or a "
                            f"foundry.device, not {_typename(type)}")
        object.__setattr__(self, "_type", name)
        object.__setattr__(self, "_index", idx)
        object.__setattr__(self, "_cdev", ffi.new("tm_device *", {
            "type": DEVICE_TYPES[name], "index": idx or 0}))

    @property
    def type(self):
        """The device type: "cpu", "cuda", "metal" or "test"."""
        return self._type

    @property
    def index(self):
        """The index (int), or None when none was given."""
        return self._index

    @property
    def c(self):
        """The C tm_device value (index 0 for a None index)."""
        return self._cdev[0]

    def __setattr__(self, name, value):
        raise AttributeError("foundry.device is immutable")

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except ValueError:
                return False
        if not isinstance(other, device):
            return NotImplemented
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self):
        # equal to its string, so the hash is the string's
        return hash(str(self))

    def __str__(self):
        if self._index is None:
            return self._type
        return f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __reduce__(self):
        return (device, (self._type, self._index))


def _typename(x):
    return type(x).__name__


def _index_arg(index):
    if isinstance(index, bool) or not isinstance(index, _Integral):
        raise TypeError(f"a device index must be an int, not "
                        f"{_typename(index)}")
    if index < 0:
        raise _device_error("Device index must not be negative")
    return int(index)


CPU = device("cpu")
# foundry.device of each C device seen (tm_device_of): a CPU tensor
# reports "cpu" (no index) and any other its index, as torch does.
_BY_C = {}


def device_of_c(d):
    """The foundry.device of a C tm_device value."""
    key = (d.type, d.index)
    dev = _BY_C.get(key)
    if dev is None:
        name = _TYPE_NAMES[d.type]
        dev = CPU if name == "cpu" else device(name, d.index)
        _BY_C[key] = dev
    return dev


def as_device(dev):
    """dev (a device, a string or an int; None: the CPU) as a
    foundry.device."""
    if dev is None:
        return CPU
    return dev if isinstance(dev, device) else device(dev)


def unavailable(d, what):
    """The error of a device that is not available (the library's reason,
    from tm_last_error, after `what`): a FoundryDeviceError, which is a
    RuntimeError."""
    why = ffi.string(lib.tm_last_error()).decode("utf-8", "replace")
    lib.tm_clear_error()
    return _c.error_class(lib.TM_EDEVICE)(
        f"{what}: device {d} is not available" + (f": {why}" if why else ""))


def device_arg(dev, fn):
    """The device a function was asked for: None when dev is None (the
    function's default), else a foundry.device that is available now, so
    that an unavailable one raises FoundryDeviceError (a RuntimeError)
    naming the argument rather than failing midway."""
    if dev is None:
        return None
    d = as_device(dev)
    if d.type != "cpu" and not lib.tm_device_available(d.c):
        raise unavailable(d, f"{fn}(device={str(dev)!r})")
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
def scalar_kind(x):
    """The C tm_scalar_kind of a Python / numpy number, for PyTorch's
    promotion: a bool, an integer or a float (2.0 is a float)."""
    if isinstance(x, (bool, np.bool_)):
        return lib.TM_SCALAR_BOOL
    if isinstance(x, numbers.Integral):
        return lib.TM_SCALAR_INT
    return lib.TM_SCALAR_FLOAT


from . import _tensor  # noqa: E402
