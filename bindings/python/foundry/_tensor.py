"""foundry.Tensor: one reference to a C tm_tensor.

A Tensor owns exactly one C reference and drops it when the Python object
dies.  Everything else (shape, dtype, grad, ...) is read from the C tensor,
so views made in C and their Python wrappers always agree.

The class is declared here from its method families, each a class of its
own file (every method declared there, with its docstring):
  _ops_arith.py   _Arithmetic   binary ops, operators, matmul
  _ops_binmath.py _BinaryMath   bitwise ops, fmod, atan2, lerp, isclose...
  _ops_unary.py   _Elementwise  unary ops, clamp, where
  _ops_reduce.py  _Reductions   reductions, sorting, softmax
  _ops_scan.py    _Scans        cumprod, cummax, cummin, logcumsumexp
  _ops_shape.py   _Shape        shapes, views, split / cat
  _ops_reorder.py _Reorder      flip, roll, diagonals, nonzero, einsum
  _index.py       _Indexing     [] and gather / scatter
  _convert.py     _Conversion   to(), dtype casts, new_*, copy_ / fill_
  _random.py      _RandomFills  uniform_ / normal_ / random_
This file holds the rest: lifetime, geometry, autograd and numpy.
"""
import operator

import numpy as np

from . import _c
from ._base import (GradFn, Size, device_of_c, error, ptr, wrap,
                    wrap_borrowed)
from ._c import ffi, lib
from ._convert import _Conversion
from ._exports import export
from ._index import _Indexing
from ._ops_arith import _Arithmetic
from ._ops_binmath import _BinaryMath
from ._ops_reduce import _Reductions
from ._ops_scan import _Scans
from ._ops_reorder import _Reorder
from ._ops_shape import _Shape
from ._ops_unary import _Elementwise
from ._random import _RandomFills


def _fits(g, p):
    """True when gradient g (C) has tensor p's shape, dtype and device."""
    n = lib.tm_ndim(p)
    return (lib.tm_ndim(g) == n and
            ffi.unpack(lib.tm_shape(g), n) == ffi.unpack(lib.tm_shape(p), n)
            and lib.tm_dtype_of(g) == lib.tm_dtype_of(p) and
            lib.tm_device_eq(lib.tm_device_of(g), lib.tm_device_of(p)))


class Tensor(_Arithmetic, _BinaryMath, _Elementwise, _Reductions, _Reorder,
             _Shape, _Indexing, _Conversion, _RandomFills, _Scans):
    """An n-dimensional array on a device, with autograd.

    Tensor(data, dtype=None, requires_grad=False) copies data as
    foundry.tensor does.  Methods mirror torch.Tensor's; each says what it
    mirrors and where Foundry differs.  The C library's manual is
    include/foundry/*.h."""

    __slots__ = ("_p", "__weakref__")
    # _Arithmetic defines __eq__ (elementwise), which would unset hashing.
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
        """The sizes of the dims, a foundry.Size (a tuple).  Mirrors
        torch.Tensor.shape."""
        p = self._p
        return Size(ffi.unpack(lib.tm_shape(p), lib.tm_ndim(p)))

    def size(self, dim=None):
        """The shape, or the size of one dim (negative counts from the
        end).  Mirrors torch.Tensor.size."""
        if dim is None:
            return self.shape
        n = lib.tm_size(self._p, operator.index(dim))
        if n < 0:
            raise error()
        return n

    @property
    def ndim(self):
        """The number of dims.  Mirrors torch.Tensor.ndim."""
        return lib.tm_ndim(self._p)

    def dim(self):
        """The number of dims.  Mirrors torch.Tensor.dim."""
        return lib.tm_ndim(self._p)

    @export
    def numel(self):
        """The number of elements.  Mirrors torch.numel and
        torch.Tensor.numel (also as nelement)."""
        return lib.tm_numel(self._p)

    nelement = numel

    def __len__(self):
        if lib.tm_ndim(self._p) == 0:
            raise TypeError("len() of a 0-d tensor")
        return lib.tm_shape(self._p)[0]

    def stride(self, dim=None):
        """The strides in elements (a tuple), or one dim's.  Mirrors
        torch.Tensor.stride."""
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
        """stride() as a property (numpy's name, in elements)."""
        return self.stride()

    def storage_offset(self):
        """The offset of the first element in the memory, in elements.
        Mirrors torch.Tensor.storage_offset."""
        return lib.tm_offset(self._p)

    def is_contiguous(self):
        """True when the elements are in row-major order without gaps.
        Mirrors torch.Tensor.is_contiguous."""
        return bool(lib.tm_is_contiguous(self._p))

    @property
    def dtype(self):
        """The element type, a foundry.dtype.  Mirrors torch.Tensor.dtype."""
        return _c.BY_C[lib.tm_dtype_of(self._p)]

    @property
    def device(self):
        """Where the memory is, a foundry.device: device(type='cpu') for
        the CPU (no index), device(type='cuda', index=0) and so on for
        others.  Mirrors torch.Tensor.device."""
        return device_of_c(lib.tm_device_of(self._p))

    @property
    def is_cpu(self):
        """True for a tensor in CPU memory.  Mirrors torch.Tensor.is_cpu."""
        return lib.tm_device_of(self._p).type == lib.TM_DEVICE_CPU

    @property
    def is_cuda(self):
        """True for a tensor on a CUDA device.  Mirrors
        torch.Tensor.is_cuda."""
        return lib.tm_device_of(self._p).type == lib.TM_DEVICE_CUDA

    def element_size(self):
        """Bytes per element.  Mirrors torch.Tensor.element_size."""
        return lib.tm_dtype_size(lib.tm_dtype_of(self._p))

    @property
    def itemsize(self):
        """Bytes per element.  Mirrors torch.Tensor.itemsize."""
        return self.element_size()

    @property
    def nbytes(self):
        """numel() * itemsize.  Mirrors torch.Tensor.nbytes."""
        return lib.tm_nbytes(self._p)

    def is_floating_point(self):
        """True for float16, bfloat16, float32 and float64.  Mirrors
        torch.Tensor.is_floating_point."""
        return bool(lib.tm_dtype_is_float(lib.tm_dtype_of(self._p)))

    def data_ptr(self):
        """The address of the first element (0 for a tensor without
        elements).  Host memory only: a tensor on another device raises
        FoundryDeviceError (its memory is a backend handle, not an
        address).  Mirrors torch.Tensor.data_ptr."""
        p = lib.tm_data(self._p)
        if p == ffi.NULL and lib.tm_device_of(self._p).type != \
                lib.TM_DEVICE_CPU:
            raise error()
        return int(ffi.cast("uintptr_t", p))

    # ---------------------------------------------------------- autograd
    @property
    def requires_grad(self):
        """Whether autograd records ops on this tensor (settable on leaves,
        float dtypes only).  Mirrors torch.Tensor.requires_grad."""
        return bool(lib.tm_requires_grad(self._p))

    @requires_grad.setter
    def requires_grad(self, on):
        _c.check(lib.tm_requires_grad_(self._p, bool(on)))

    def requires_grad_(self, requires_grad=True):
        """Sets requires_grad on a leaf; returns self.  Mirrors
        torch.Tensor.requires_grad_."""
        _c.check(lib.tm_requires_grad_(self._p, bool(requires_grad)))
        return self

    @property
    def grad(self):
        """The gradient accumulated by backward (None until then); a new
        wrapper each time, sharing the memory.  Settable (a tensor of self's
        shape and dtype, or None).  Mirrors torch.Tensor.grad."""
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
        """The node that produced this tensor (None for leaves); only its
        name() is exposed.  Mirrors torch.Tensor.grad_fn."""
        name = lib.tm_grad_fn_name(self._p)
        return GradFn(ffi.string(name).decode()) if name else None

    @property
    def is_leaf(self):
        """True for tensors not produced by a recorded op.  Mirrors
        torch.Tensor.is_leaf."""
        return bool(lib.tm_is_leaf(self._p))

    def retain_grad(self):
        """Keeps the gradient of a non-leaf after backward.  Mirrors
        torch.Tensor.retain_grad."""
        _c.check(lib.tm_retain_grad(self._p))

    def backward(self, gradient=None, retain_graph=False):
        """Backpropagates into the leaves' grad.

        gradient: the output's gradient (self's shape; None for a
        one-element self, meaning 1).  retain_graph keeps the graph for
        another backward.  Mirrors torch.Tensor.backward."""
        g = ffi.NULL if gradient is None else ptr(gradient, "gradient")
        _c.check(lib.tm_backward_ex(self._p, g, bool(retain_graph)))

    @export
    def detach(self):
        """A tensor sharing self's memory, cut from the graph (a leaf that
        does not require grad).  Mirrors torch.detach and
        torch.Tensor.detach."""
        return wrap(lib.tm_detach(self._p))

    def detach_(self):
        """Stops self (a leaf) requiring grad; returns self.  Mirrors
        torch.Tensor.detach_ for leaves."""
        _c.check(lib.tm_requires_grad_(self._p, False))
        return self

    @property
    def data(self):
        """detach(): the same memory without autograd.  Setting it makes
        self (the same Python object) view another tensor's memory, shape,
        dtype and device, keeping self's requires_grad; a gradient that no
        longer fits (another shape, dtype or device) is dropped.  Mirrors
        torch.Tensor.data."""
        return wrap(lib.tm_detach(self._p))

    @data.setter
    def data(self, new):
        self._set_data(ptr(new, "data"))

    def _set_data(self, src, grad=None, keep_grad=True):
        """Points self at a detached view of the C tensor `src`, in place:
        objects holding self (a module, an optimizer) see the new memory.
        The gradient becomes `grad` (a Tensor) when given, else the old one
        when keep_grad and it still fits, else none."""
        p = lib.tm_detach(src)
        if not p:
            raise error()
        old = self._p
        try:
            if lib.tm_requires_grad(old):
                _c.check(lib.tm_requires_grad_(p, True))
                g = grad._p if grad is not None else \
                    (lib.tm_grad(old) if keep_grad else ffi.NULL)
                if g and _fits(g, p):
                    _c.check(lib.tm_set_grad(p, g))
        except BaseException:
            lib.tm_free(p)
            raise
        self._p = p
        lib.tm_free(old)

    # ----------------------------------------------------------- numpy
    @property
    def __array_interface__(self):
        dt = self.dtype
        if dt.is_quantized:
            return self._quantized_interface(dt)
        if dt.np is None:
            raise TypeError(f"numpy has no {dt.name}; convert first, e.g. "
                            f"t.float().numpy()")
        if not self.is_cpu:
            raise TypeError(f"numpy() needs a CPU tensor, not one on "
                            f"{self.device}; use .cpu() first")
        p = self._p
        n = lib.tm_ndim(p)
        size = dt.itemsize
        shape = tuple(ffi.unpack(lib.tm_shape(p), n))
        strides = tuple(s * size for s in ffi.unpack(lib.tm_strides(p), n))
        addr = int(ffi.cast("uintptr_t", lib.tm_data(p)))
        readonly = bool(lib.tm_storage_is_readonly(lib.tm_storage_of(p)))
        return {"version": 3, "shape": shape, "strides": strides,
                "typestr": np.dtype(dt.np).str, "data": (addr, readonly)}

    def _quantized_interface(self, dt):
        """A quantized tensor's raw blocks as uint8 [..., row_bytes]: the
        block dim (which must be the last, stride 1) becomes its bytes,
        every other dim keeps its size, strides in bytes."""
        if not self.is_cpu:
            raise TypeError(f"numpy() needs a CPU tensor, not one on "
                            f"{self.device}; use .cpu() first")
        p = self._p
        n = lib.tm_ndim(p)
        shape = list(ffi.unpack(lib.tm_shape(p), n))
        strides = list(ffi.unpack(lib.tm_strides(p), n))
        blk, bb = dt.block_size, dt.block_bytes
        if lib.tm_numel(p) > 0 and strides[-1] != 1:
            raise TypeError(f"numpy() of a {dt.name} tensor needs its block "
                            f"dim last (stride 1); this view has strides "
                            f"{tuple(strides)}")
        shape[-1] = shape[-1] // blk * bb
        strides = [s // blk * bb for s in strides[:-1]] + [1]
        addr = int(ffi.cast("uintptr_t", lib.tm_data(p)))
        readonly = bool(lib.tm_storage_is_readonly(lib.tm_storage_of(p)))
        return {"version": 3, "shape": tuple(shape),
                "strides": tuple(strides), "typestr": "|u1",
                "data": (addr, readonly)}

    def numpy(self, force=False):
        """An array sharing this tensor's memory (it keeps the tensor's
        storage alive).  Refused for tensors that require grad, as in
        PyTorch, unless force=True (then a detached copy is returned).
        bfloat16 has no numpy type (TypeError).  A block-quantized tensor
        (foundry.q4_k, ...) gives its raw ggml blocks: uint8 of shape
        [..., row_bytes] (the last dim's values become that row's
        len / block_size * block_bytes bytes), sharing memory; its block
        dim must be last.  Mirrors torch.Tensor.numpy."""
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
            if copy is False and np.dtype(dtype) != a.dtype:
                raise ValueError(f"__array__(copy=False): a {a.dtype} "
                                 f"tensor needs a copy to become {dtype}")
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def tolist(self):
        """The elements as nested Python lists (a number for 0-d).
        Mirrors torch.Tensor.tolist."""
        if self.dtype.is_quantized:
            raise TypeError(f"tolist() of a {self.dtype.name} tensor: "
                            f"dequantize it first (foundry.dequantize)")
        t = self.detach().cpu()
        if t.dtype is _c.bfloat16:
            t = t.float()
        return np.asarray(t).tolist()

    def item(self):
        """The single element as a Python float, int or bool.  Mirrors
        torch.Tensor.item."""
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
        args = (self.tolist(), self.dtype.name, self.requires_grad)
        if not self.is_cpu:  # unpickled onto the same device
            args += (str(self.device),)
        return (tensor, args)

    def __copy__(self):
        return self.clone().detach().requires_grad_(self.requires_grad)

    def __deepcopy__(self, memo):
        t = self.clone().detach()
        if self.requires_grad:
            t.requires_grad_(True)
        memo[id(self)] = t
        return t
