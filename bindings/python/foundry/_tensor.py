"""foundry.Tensor: one reference to a C tm_tensor.

A Tensor owns exactly one C reference and drops it when the Python object
dies.  Everything else (shape, dtype, grad, ...) is read from the C tensor,
so views made in C and their Python wrappers always agree.
"""
import numbers
import operator

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
    t = _new(Tensor)
    t._p = p
    return t


def wrap_borrowed(p):
    """A Tensor taking its own reference to the borrowed `p` (None if NULL)."""
    if not p:
        return None
    t = _new(Tensor)
    t._p = lib.tm_retain(p)
    return t


def ptr(x, what="argument"):
    """The C pointer of a Tensor argument (TypeError for anything else)."""
    if isinstance(x, Tensor):
        return x._p
    raise TypeError(f"{what} must be a foundry.Tensor, not "
                    f"{type(x).__name__}")


def as_tensor_like(x, like):
    """x as a Tensor: Tensors pass through; numbers and arrays become a
    tensor of `like`'s dtype (for ops that take tensors only)."""
    if isinstance(x, Tensor):
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
        if isinstance(args, Tensor):
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


class Size(tuple):
    """A tensor's shape: a tuple of ints (like torch.Size)."""

    def __repr__(self):
        return "foundry.Size([" + ", ".join(map(str, self)) + "])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


class device:
    """Where a tensor lives: foundry.device('cpu')."""

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


_DEVICES = {lib.TM_CPU: device("cpu"), lib.TM_CUDA: device("cuda"),
            lib.TM_METAL: device("metal")}


class GradFn:
    """The node that produced a non-leaf tensor (only its name is exposed)."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{self._name} object>"


class Tensor:
    """An n-dimensional array on a device, with autograd (see foundry.h)."""

    __slots__ = ("_p", "__weakref__")
    __hash__ = object.__hash__

    def __init__(self, data=None, dtype=None, requires_grad=False):
        from ._create import tensor
        t = tensor([] if data is None else data, dtype=dtype,
                   requires_grad=requires_grad)
        self._p = lib.tm_retain(t._p)  # t drops its own reference

    def __del__(self, _free=lib.tm_free):
        try:
            p = self._p
        except AttributeError:  # __init__ never ran
            return
        _free(p)

    # ---------------------------------------------------------- geometry
    @property
    def shape(self):
        p = self._p
        return Size(ffi.unpack(lib.tm_shape(p), lib.tm_ndim(p)))

    def size(self, dim=None):
        if dim is None:
            return self.shape
        n = lib.tm_size(self._p, operator.index(dim))
        if n < 0:
            raise error()
        return n

    @property
    def ndim(self):
        return lib.tm_ndim(self._p)

    def dim(self):
        return lib.tm_ndim(self._p)

    def numel(self):
        return lib.tm_numel(self._p)

    nelement = numel

    def __len__(self):
        if lib.tm_ndim(self._p) == 0:
            raise TypeError("len() of a 0-d tensor")
        return lib.tm_shape(self._p)[0]

    def stride(self, dim=None):
        p = self._p
        if dim is None:
            return tuple(ffi.unpack(lib.tm_strides(p), lib.tm_ndim(p)))
        n = lib.tm_ndim(p)
        d = operator.index(dim)
        if not -n <= d < max(n, 1):
            raise IndexError(f"dim {d} is out of range for {n} dims")
        return lib.tm_strides(p)[d % n] if n else 1

    @property
    def strides(self):
        return self.stride()

    def storage_offset(self):
        return lib.tm_offset(self._p)

    def is_contiguous(self):
        return bool(lib.tm_is_contiguous(self._p))

    @property
    def dtype(self):
        return _c.BY_C[lib.tm_dtype_of(self._p)]

    @property
    def device(self):
        return _DEVICES[lib.tm_device_of(self._p)]

    @property
    def is_cpu(self):
        return lib.tm_device_of(self._p) == lib.TM_CPU

    def element_size(self):
        return lib.tm_dtype_size(lib.tm_dtype_of(self._p))

    @property
    def itemsize(self):
        return self.element_size()

    @property
    def nbytes(self):
        return lib.tm_nbytes(self._p)

    def is_floating_point(self):
        return bool(lib.tm_dtype_is_float(lib.tm_dtype_of(self._p)))

    def data_ptr(self):
        return int(ffi.cast("uintptr_t", lib.tm_data(self._p)))

    # ---------------------------------------------------------- autograd
    @property
    def requires_grad(self):
        return bool(lib.tm_requires_grad(self._p))

    @requires_grad.setter
    def requires_grad(self, on):
        _c.check(lib.tm_requires_grad_(self._p, bool(on)))

    def requires_grad_(self, requires_grad=True):
        _c.check(lib.tm_requires_grad_(self._p, bool(requires_grad)))
        return self

    @property
    def grad(self):
        return wrap_borrowed(lib.tm_grad(self._p))

    @grad.setter
    def grad(self, g):
        _c.check(lib.tm_set_grad(self._p, ffi.NULL if g is None
                                 else ptr(g, "grad")))

    @grad.deleter
    def grad(self):
        lib.tm_zero_grad(self._p)

    @property
    def grad_fn(self):
        name = lib.tm_grad_fn_name(self._p)
        return GradFn(ffi.string(name).decode()) if name else None

    @property
    def is_leaf(self):
        return bool(lib.tm_is_leaf(self._p))

    def retain_grad(self):
        _c.check(lib.tm_retain_grad(self._p))

    def backward(self, gradient=None, retain_graph=False):
        g = ffi.NULL if gradient is None else ptr(gradient, "gradient")
        _c.check(lib.tm_backward_ex(self._p, g, bool(retain_graph)))

    def detach(self):
        return wrap(lib.tm_detach(self._p))

    def detach_(self):
        _c.check(lib.tm_requires_grad_(self._p, False))
        return self

    @property
    def data(self):
        return wrap(lib.tm_detach(self._p))

    # ----------------------------------------------------------- numpy
    @property
    def __array_interface__(self):
        dt = self.dtype
        if dt.np is None:
            raise TypeError(f"numpy has no {dt.name}; convert first, e.g. "
                            f"t.float().numpy()")
        if lib.tm_device_of(self._p) != lib.TM_CPU:
            raise TypeError("numpy() needs a CPU tensor; use .cpu() first")
        p = self._p
        n = lib.tm_ndim(p)
        size = dt.itemsize
        shape = tuple(ffi.unpack(lib.tm_shape(p), n))
        strides = tuple(s * size for s in ffi.unpack(lib.tm_strides(p), n))
        addr = int(ffi.cast("uintptr_t", lib.tm_data(p)))
        readonly = bool(lib.tm_storage_is_readonly(lib.tm_storage_of(p)))
        return {"version": 3, "shape": shape, "strides": strides,
                "typestr": np.dtype(dt.np).str, "data": (addr, readonly)}

    def numpy(self, force=False):
        """An array sharing this tensor's memory (it keeps the tensor's
        storage alive).  Refused for tensors that require grad, as in
        PyTorch, unless force=True (then a detached copy is returned)."""
        if lib.tm_requires_grad(self._p):
            if not force:
                raise _c.FoundryError(
                    "can't call numpy() on a tensor that requires grad; use "
                    "tensor.detach().numpy()")
            return self.detach().clone().numpy()
        return np.asarray(self)

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self.detach() if self.requires_grad else self)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def tolist(self):
        t = self.detach()
        if t.dtype is _c.bfloat16:
            t = t.float()
        return np.asarray(t).tolist()

    def item(self):
        p = self._p
        dt = lib.tm_dtype_of(p)
        if dt in (lib.TM_F32, lib.TM_F64, lib.TM_F16, lib.TM_BF16):
            out = ffi.new("double *")
            _c.check(lib.tm_item(p, out))
            return out[0]
        out = ffi.new("int64_t *")
        _c.check(lib.tm_item_i64(p, out))
        return bool(out[0]) if dt == lib.TM_BOOL else out[0]

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.is_floating_point():
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    def __bool__(self):
        if lib.tm_numel(self._p) != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.numel()} elements "
                f"is ambiguous")
        return bool(self.item())

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        from ._format import tensor_repr
        return tensor_repr(self)

    def __reduce_ex__(self, proto):
        from ._create import tensor
        return (tensor, (self.tolist(), self.dtype.name,
                         self.requires_grad))

    def __copy__(self):
        return self.clone().detach().requires_grad_(self.requires_grad)

    def __deepcopy__(self, memo):
        t = self.clone().detach()
        if self.requires_grad:
            t.requires_grad_(True)
        memo[id(self)] = t
        return t
