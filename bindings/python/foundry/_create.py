"""Tensor creation: from Python data and numpy arrays, and the factories
(zeros, ones, full, arange, rand, ...).

device= (a foundry.device, a string or an int; None: the CPU, or the
input's device for the *_like functions) says where the tensor is made.
An unavailable device raises FoundryDeviceError (a RuntimeError) naming
the argument.  Filled and random tensors are made on the device itself
(tm_empty_on / tm_full_on, then the device's own fill or random kernel:
the same numbers as on the CPU); tensors of given values (tensor, arange,
linspace, eye, randperm) are made on the CPU and copied there, as the C
library makes those on the CPU only.
"""
import numbers
import operator

import numpy as np

from . import _c
from ._base import device_arg, ptr, shape_args, to_dtype, unsupported, wrap
from ._c import check, ffi, lib
from ._exports import export
from ._random import int_bounds, with_rng
from ._tensor import Tensor

# numpy dtypes Foundry can hold (bfloat16 has no numpy type).
_NP_OK = frozenset(_c.BY_NP)


def _np_dtype_of(arr):
    name = arr.dtype.name
    if name not in _NP_OK:
        raise TypeError(
            f"numpy dtype {arr.dtype} is not supported; Foundry holds "
            f"{', '.join(d.name for d in _c.DTYPES)}")
    return _c.BY_NP[name]


def _finish(t, requires_grad, dev=None):
    """t moved to dev (a device from device_arg; None: stays where it is),
    then marked as requiring grad when asked."""
    if dev is not None:
        t = t.to(dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _no_pinning(pin_memory, fn):
    if pin_memory:
        raise unsupported(f"{fn}(pin_memory", True)


@export
def from_numpy(array):
    """A tensor sharing `array`'s memory (no copy).  The tensor's storage
    keeps the array alive; writes through either are seen by the other.
    A read-only array gives a tensor that refuses in-place writes.  Arrays
    whose strides are negative or not a multiple of the item size cannot be
    shared (ValueError; copy them with foundry.tensor).  Mirrors
    torch.from_numpy."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, not "
                        f"{type(array).__name__}")
    dt = _np_dtype_of(array)
    if not array.dtype.isnative:
        raise ValueError("from_numpy: the array is not in native byte "
                         "order; use array.astype(array.dtype.newbyteorder"
                         "('='))")
    if array.ndim > lib.TM_MAX_DIMS:
        raise ValueError(f"from_numpy: {array.ndim} dims; at most "
                         f"{lib.TM_MAX_DIMS} are supported")
    size = array.itemsize
    if any(s < 0 for s in array.strides):
        raise ValueError("from_numpy: arrays with negative strides are not "
                         "supported; copy it with foundry.tensor(array) or "
                         "array.copy()")
    if any(s % size for s in array.strides):
        raise ValueError(f"from_numpy: strides {array.strides} are not "
                         f"multiples of the item size {size}")
    shape = ffi.new("int64_t[]", array.shape)
    strides = ffi.new("int64_t[]", [s // size for s in array.strides])
    data = ffi.cast("void *", array.__array_interface__["data"][0])
    # Ownership passes to the library: it calls the release callback when
    # the storage dies (also on failure), which drops the handle.
    handle = _c.keep_alive(array)
    t = wrap(lib.tm_wrap(data, shape, strides, array.ndim, dt.c,
                         _c.release_callback, handle))
    if not array.flags.writeable:
        lib.tm_storage_set_readonly(lib.tm_storage_of(t._p))
    return t


def _infer(data):
    """A numpy array of Python data, with PyTorch's default dtypes: Python
    floats give float32, ints int64, bools bool."""
    if isinstance(data, np.ndarray):
        return data, False
    try:
        arr = np.array(data)
    except ValueError:
        arr = np.empty(0, object)
    if arr.dtype == object and arr.ndim == 0:
        raise TypeError(f"tensor(): cannot make a tensor of "
                        f"{type(data).__name__}")
    if arr.dtype == object:
        raise ValueError("tensor(): the data is ragged or holds objects "
                         "that are not numbers")
    if arr.dtype.kind in "US":
        raise TypeError("tensor(): strings are not numbers")
    return arr, arr.dtype.kind == "f"


@export
def tensor(data, dtype=None, requires_grad=False, device=None,
           pin_memory=False):
    """A new tensor with a copy of `data` (numbers, nested lists, numpy
    arrays, tensors).  Python floats become float32 (the default dtype),
    ints int64, bools bool; numpy arrays keep their dtype.  Mirrors
    torch.tensor (pin_memory=True is not supported)."""
    dev = device_arg(device, "tensor")
    _no_pinning(pin_memory, "tensor")
    if isinstance(data, Tensor):
        t = data.detach().clone()
        return _finish(t if dtype is None else t.to(dtype), requires_grad,
                       dev)
    arr, python_float = _infer(data)
    if dtype is not None:
        dt = to_dtype(dtype)
    elif python_float:
        dt = _c.float32
    else:
        dt = _np_dtype_of(arr)
    if arr.ndim > lib.TM_MAX_DIMS:
        raise ValueError(f"tensor(): {arr.ndim} dims; at most "
                         f"{lib.TM_MAX_DIMS} are supported")
    if dt.np is None:  # bfloat16: via float32, rounded by the library
        src = np.asarray(arr, dtype=np.float32, order="C")
        tmp = wrap(lib.tm_from_buffer(ffi.from_buffer(src), ffi.new(
            "int64_t[]", src.shape), src.ndim, lib.TM_F32))
        t = wrap(lib.tm_to_dtype(tmp._p, dt.c))
    else:
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"tensor(): numpy dtype {arr.dtype} is not "
                            f"supported")
        src = np.asarray(arr, dtype=dt.np, order="C")
        t = wrap(lib.tm_from_buffer(ffi.from_buffer(src) if src.size else
                                    ffi.NULL, ffi.new("int64_t[]", src.shape),
                                    src.ndim, dt.c))
    return _finish(t, requires_grad, dev)


@export
def as_tensor(data, dtype=None, device=None):
    """data as a tensor, sharing memory when it can: a tensor of the right
    dtype (and device) is returned as is, a numpy array of a supported
    dtype is shared when no conversion is needed; anything else is copied.
    Mirrors torch.as_tensor."""
    dev = device_arg(device, "as_tensor")
    if dev is not None:
        return as_tensor(data, dtype).to(dev)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if (isinstance(data, np.ndarray) and data.dtype.name in _NP_OK and
            (dtype is None or to_dtype(dtype).np == data.dtype.name) and
            data.dtype.isnative and
            all(s >= 0 and s % data.itemsize == 0 for s in data.strides)):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def _dt(dtype, default=_c.float32):
    return default if dtype is None else to_dtype(dtype)


def _on_cpu(dev):
    return dev is None or dev.type == "cpu"


def _factory(name, c_fn, value, what):
    def make(*size, dtype=None, requires_grad=False, device=None):
        dev = device_arg(device, name)
        s, n = shape_args(size)
        dt = _dt(dtype).c
        t = wrap(c_fn(s, n, dt) if _on_cpu(dev) else
                 lib.tm_full_on(s, n, value, dt, dev.c))
        return _finish(t, requires_grad)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"A tensor of {what} of the given size (ints or one "
                    f"sequence); float32 unless dtype is given.  Mirrors "
                    f"torch.{name}.")
    return export(make)


zeros = _factory("zeros", lib.tm_zeros, 0.0, "zeros")
ones = _factory("ones", lib.tm_ones, 1.0, "ones")


@export
def empty(*size, dtype=None, requires_grad=False, device=None,
          pin_memory=False):
    """A tensor of the given size (ints or one sequence) with uninitialised
    elements; float32 unless dtype is given.  Mirrors torch.empty
    (pin_memory=True is not supported)."""
    dev = device_arg(device, "empty")
    _no_pinning(pin_memory, "empty")
    s, n = shape_args(size)
    dt = _dt(dtype).c
    return _finish(wrap(lib.tm_empty(s, n, dt) if _on_cpu(dev) else
                        lib.tm_empty_on(s, n, dt, dev.c)), requires_grad)


def _random_factory(name, c_default, c_fill, what):
    """rand / randn: the C factory for the default generator, or an empty
    tensor filled from a Generator."""
    def make(*size, generator=None, dtype=None, requires_grad=False,
             device=None, pin_memory=False):
        dev = device_arg(device, name)
        _no_pinning(pin_memory, name)
        s, n = shape_args(size)
        dt = _dt(dtype).c
        if generator is None and _on_cpu(dev):
            t = wrap(c_default(s, n, dt))
        else:  # the fill draws what c_default would, on any device
            t = wrap(lib.tm_empty(s, n, dt) if _on_cpu(dev) else
                     lib.tm_empty_on(s, n, dt, dev.c))
            p = t._p
            with_rng(generator, lambda r: check(c_fill(p, r)))
        return _finish(t, requires_grad)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"A tensor of {what} of the given size (ints or one "
                    f"sequence); float32 unless dtype is given (a float "
                    f"dtype).  Drawn from `generator` (None: the default "
                    f"generator).  Mirrors torch.{name} (pin_memory=True is "
                    f"not supported).")
    return export(make)


rand = _random_factory("rand", lib.tm_rand,
                       lambda p, r: lib.tm_uniform_(p, 0.0, 1.0, r),
                       "uniform numbers in [0, 1)")
randn = _random_factory("randn", lib.tm_randn,
                        lambda p, r: lib.tm_normal_(p, 0.0, 1.0, r),
                        "standard normal numbers")


def _scalar_dtype(*values):
    if all(isinstance(v, bool) for v in values):
        return _c.bool_
    if all(isinstance(v, numbers.Integral) for v in values):
        return _c.int64
    return _c.float32


@export
def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    """A tensor of `size` filled with fill_value; the dtype is inferred from
    fill_value (bool, int64 or float32) unless given.  Mirrors
    torch.full."""
    dev = device_arg(device, "full")
    s, n = shape_args((size,))
    dt = _scalar_dtype(fill_value) if dtype is None else to_dtype(dtype)
    v = float(fill_value)
    return _finish(wrap(lib.tm_full(s, n, v, dt.c) if _on_cpu(dev) else
                        lib.tm_full_on(s, n, v, dt.c, dev.c)), requires_grad)


@export
def arange(start, end=None, step=1, dtype=None, requires_grad=False,
           device=None):
    """start, start + step, ... below end (arange(n): 0 .. n-1); int64 when
    every argument is an int, else float32, unless dtype is given.  Mirrors
    torch.arange."""
    dev = device_arg(device, "arange")
    if end is None:
        start, end = 0, start
    dt = _scalar_dtype(start, end, step) if dtype is None else \
        to_dtype(dtype)
    if dt is _c.bool_ and dtype is None:  # bool arguments count as ints
        dt = _c.int64
    return _finish(wrap(lib.tm_arange(start, end, step, dt.c)),
                   requires_grad, dev)


@export
def linspace(start, end, steps, dtype=None, requires_grad=False,
             device=None):
    """`steps` evenly spaced numbers from start to end inclusive; float32
    unless dtype is given.  Mirrors torch.linspace."""
    dev = device_arg(device, "linspace")
    return _finish(wrap(lib.tm_linspace(start, end, operator.index(steps),
                                        _dt(dtype).c)), requires_grad, dev)


@export
def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    """An n x m (default n x n) matrix with ones on the diagonal; float32
    unless dtype is given.  Mirrors torch.eye."""
    dev = device_arg(device, "eye")
    return _finish(wrap(lib.tm_eye(operator.index(n), -1 if m is None else
                                   operator.index(m), _dt(dtype).c)),
                   requires_grad, dev)


def _randint_into(t, low, high, generator):
    p = t._p
    with_rng(generator, lambda r: check(lib.tm_randint_(p, low, high, r)))
    return t


@export
def randint(low, high=None, size=None, dtype=None, requires_grad=False,
            device=None, *, generator=None):
    """Integers drawn uniformly from [low, high) (randint(high, size) starts
    at 0), int64 unless dtype is given (one that holds every integer of the
    range).  Drawn from `generator` (None: the default generator).  Mirrors
    torch.randint."""
    dev = device_arg(device, "randint")
    if size is None:
        if high is None or isinstance(high, numbers.Integral):
            raise TypeError("randint() needs a size, e.g. "
                            "randint(0, 10, (3,))")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    s, n = shape_args((size,))
    low, high = int_bounds(low, high, "randint")
    dt = _dt(dtype, _c.int64).c
    if generator is None and _on_cpu(dev):
        t = wrap(lib.tm_randint(low, high, s, n, dt))
    else:
        t = _randint_into(wrap(lib.tm_empty(s, n, dt) if _on_cpu(dev) else
                               lib.tm_empty_on(s, n, dt, dev.c)),
                          low, high, generator)
    return _finish(t, requires_grad)


@export
def randperm(n, *, generator=None, dtype=None, requires_grad=False,
             device=None, pin_memory=False):
    """A random permutation of 0 .. n-1, int64 unless dtype is given: the
    argsort of n float64 uniforms drawn from `generator` (None: the default
    generator).  Mirrors torch.randperm (pin_memory=True is not
    supported)."""
    dev = device_arg(device, "randperm")
    _no_pinning(pin_memory, "randperm")
    s, k = shape_args((operator.index(n),))
    keys = wrap(lib.tm_empty(s, k, lib.TM_F64))
    p = keys._p
    with_rng(generator, lambda r: check(lib.tm_uniform_(p, 0.0, 1.0, r)))
    t = keys.argsort()
    if dtype is not None:
        t = t.to(dtype)
    return _finish(t, requires_grad, dev)


def _like_device(input, device, fn):
    """The C device of a *_like result: input's unless device is given."""
    dev = device_arg(device, fn)
    return lib.tm_device_of(ptr(input, "input")) if dev is None else dev.c


def _like(name, value, what):
    def make(input, dtype=None, requires_grad=False, device=None):
        dev = _like_device(input, device, name)
        dt = input.dtype if dtype is None else to_dtype(dtype)
        s = lib.tm_shape(input._p)
        t = wrap(lib.tm_empty_on(s, input.ndim, dt.c, dev) if value is None
                 else lib.tm_full_on(s, input.ndim, value, dt.c, dev))
        return _finish(t, requires_grad)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"A tensor of {what} of input's shape, dtype and device "
                    f"(unless dtype / device is given).  Mirrors "
                    f"torch.{name}.")
    return export(make)


zeros_like = _like("zeros_like", 0.0, "zeros")
ones_like = _like("ones_like", 1.0, "ones")
empty_like = _like("empty_like", None, "uninitialised elements")


def _random_like(name, factory, what):
    def make(input, dtype=None, requires_grad=False, device=None, *,
             generator=None):
        dt = input.dtype if dtype is None else dtype
        return factory(input.shape, generator=generator, dtype=dt,
                       requires_grad=requires_grad,
                       device=input.device if device is None else device)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"A tensor of {what} of input's shape, dtype and device "
                    f"(unless dtype / device is given), drawn from "
                    f"`generator` (None: the default generator).  Mirrors "
                    f"torch.{name}.")
    return export(make)


rand_like = _random_like("rand_like", rand, "uniform numbers in [0, 1)")
randn_like = _random_like("randn_like", randn, "standard normal numbers")


@export
def full_like(input, fill_value, dtype=None, requires_grad=False,
              device=None):
    """A tensor of input's shape, dtype and device (unless dtype / device
    is given) filled with fill_value.  Mirrors torch.full_like."""
    dev = _like_device(input, device, "full_like")
    dt = input.dtype if dtype is None else to_dtype(dtype)
    return _finish(wrap(lib.tm_full_on(lib.tm_shape(input._p), input.ndim,
                                       float(fill_value), dt.c, dev)),
                   requires_grad)


@export
def randint_like(input, low=0, high=None, dtype=None, *, generator=None,
                 requires_grad=False, device=None):
    """Integers in [low, high) of input's shape, dtype and device (unless
    dtype / device is given); randint_like(input, high) starts at 0.  Drawn
    from `generator` (None: the default generator).  Mirrors
    torch.randint_like."""
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape,
                   dtype=input.dtype if dtype is None else dtype,
                   requires_grad=requires_grad,
                   device=input.device if device is None else device,
                   generator=generator)
