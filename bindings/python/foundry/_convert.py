"""dtype and device conversion, new tensors like self, and the in-place
writes copy_ / fill_ / zero_: the _Conversion methods of Tensor.

Conversions follow tm_to_dtype (include/foundry/tensor.h): float to
integer truncates toward zero and saturates (NaN gives 0), anything to
bool is x != 0, float16 / bfloat16 round to nearest even.
"""
import numbers

from . import _c, _tensor
from ._base import (DEVICE_TYPES, as_tensor_like, device, device_arg,
                    named, shape_args, to_dtype, wrap)
from ._c import check, lib


def _cast(name, dt):
    def method(self):
        return _Conversion.to(self, dt)
    return named(method, name, f"self converted to {dt!r} (self itself "
                 f"when it already is).  Mirrors torch.Tensor.{name}.")


def _is_device(a):
    """Whether a positional argument of to() names a device: a device, an
    int (cuda:N, as torch) or a string starting with a device type ("cpu",
    "cuda:1"); other strings are dtype names."""
    if isinstance(a, device):
        return True
    if isinstance(a, numbers.Integral) and not isinstance(a, bool):
        return True
    return isinstance(a, str) and a.split(":")[0] in DEVICE_TYPES


def _target(self, dev, fn):
    """The C device a new tensor like self goes to: self's unless `dev` is
    given (checked to be available, see _base.device_arg)."""
    if dev is None:
        return lib.tm_device_of(self._p)
    return device_arg(dev, fn).c


def _new_like(name, value, what):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        s, n = shape_args(size)
        dt = self.dtype if dtype is None else to_dtype(dtype)
        dev = _target(self, device, name)
        t = wrap(lib.tm_empty_on(s, n, dt.c, dev) if value is None else
                 lib.tm_full_on(s, n, value, dt.c, dev))
        return t.requires_grad_(True) if requires_grad else t
    return named(method, name, f"A new tensor of {what} with the given size "
                 f"(ints or one sequence), of self's dtype and on self's "
                 f"device unless dtype / device is given.  Mirrors "
                 f"torch.Tensor.{name}.")


# torch's legacy tensor-type names ("torch.FloatTensor"), by dtype.
_TYPE_NAMES = {_c.float32: "FloatTensor", _c.float64: "DoubleTensor",
               _c.float16: "HalfTensor", _c.bfloat16: "BFloat16Tensor",
               _c.int8: "CharTensor", _c.uint8: "ByteTensor",
               _c.int16: "ShortTensor", _c.int32: "IntTensor",
               _c.int64: "LongTensor", _c.bool_: "BoolTensor"}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


def _type_name_dtype(name):
    """The dtype of "foundry.FloatTensor" / "torch.cuda.LongTensor" /
    "FloatTensor" (the device part is not a conversion: None if name is
    not of that form)."""
    return _BY_TYPE_NAME.get(name.rsplit(".", 1)[-1])


class _Conversion:
    """dtype / device conversion and new tensors like self."""

    __slots__ = ()

    def to(self, *args, **kwargs):
        """self converted: to(dtype), to(device), to(other_tensor),
        to(device, dtype), also as keywords dtype= and device=.  A device
        is a foundry.device, a string ("cpu", "cuda:1") or an int (cuda:N).

        Returns self when nothing changes, unless copy=True (then always
        a new tensor).  Recorded for autograd: the gradient flows back to
        self's device and dtype.  non_blocking is accepted: a copy to the
        host waits for the device, which it allows.  A device that is not
        available (no backend in this process, an index past the last
        device) raises FoundryDeviceError, a RuntimeError.  Mirrors
        torch.Tensor.to."""
        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        copy = bool(kwargs.pop("copy", False))
        if kwargs:
            raise TypeError(f"to(): unexpected arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _tensor.Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, _c.dtype):
                dtype = a
            elif _is_device(a):
                dev = a
            elif a is not None:
                dtype = to_dtype(a)
        t = self
        if dev is not None:
            d = dev if isinstance(dev, device) else device(dev)
            if not lib.tm_device_eq(d.c, lib.tm_device_of(t._p)):
                t = wrap(lib.tm_to(t._p, d.c))
        if dtype is not None:
            dt = to_dtype(dtype)
            if dt.c != lib.tm_dtype_of(t._p):
                t = wrap(lib.tm_to_dtype(t._p, dt.c))
        if copy and t is self:
            t = wrap(lib.tm_clone(self._p))
        return t

    def cpu(self):
        """self on the CPU (self itself when it is there).  Mirrors
        torch.Tensor.cpu."""
        return self.to("cpu")

    def cuda(self, device=None):
        """self on a CUDA device: `device` is an index, a "cuda:N" string
        or a device (None: cuda:0).  Mirrors torch.Tensor.cuda."""
        return self.to(_cuda(device))

    def type(self, dtype=None, non_blocking=False):
        """With no dtype, self's type name as a string: "foundry." then
        torch's legacy name of the dtype ("foundry.FloatTensor",
        "foundry.LongTensor", ...), with the device type between for a
        tensor off the CPU ("foundry.test.FloatTensor", as
        "torch.cuda.FloatTensor").  With a dtype (a foundry.dtype, a numpy
        dtype or name, or such a type name with either prefix:
        "torch.DoubleTensor", "foundry.IntTensor"), self converted to it
        (self itself when it already has it); a type name's device part
        does not move the tensor.  Mirrors torch.Tensor.type."""
        if dtype is None:
            d = self.device
            where = "" if d.type == "cpu" else d.type + "."
            return f"foundry.{where}{_TYPE_NAMES[self.dtype]}"
        if not isinstance(dtype, str):
            return self.to(to_dtype(dtype))  # TypeError for a non-dtype
        dt = _type_name_dtype(dtype)
        if dt is None:
            try:
                dt = to_dtype(dtype)
            except TypeError:
                raise ValueError(f"type({dtype!r}): not a dtype name or a "
                                 f"tensor type name such as "
                                 f"'foundry.FloatTensor'") from None
        return self.to(dt)

    def type_as(self, other):
        """self converted to other's dtype.  Mirrors torch.Tensor.type_as."""
        return self.to(other.dtype)

    float = _cast("float", _c.float32)
    double = _cast("double", _c.float64)
    half = _cast("half", _c.float16)
    bfloat16 = _cast("bfloat16", _c.bfloat16)
    long = _cast("long", _c.int64)
    int = _cast("int", _c.int32)
    short = _cast("short", _c.int16)
    char = _cast("char", _c.int8)
    byte = _cast("byte", _c.uint8)
    bool = _cast("bool", _c.bool_)

    # ------------------------------------------------------ new tensors
    new_zeros = _new_like("new_zeros", 0.0, "zeros")
    new_ones = _new_like("new_ones", 1.0, "ones")
    new_empty = _new_like("new_empty", None, "uninitialised memory")

    def new_full(self, size, fill_value, dtype=None, device=None,
                 requires_grad=False):
        """A new tensor of `size` filled with fill_value, of self's dtype
        and on self's device unless dtype / device is given.  Mirrors
        torch.Tensor.new_full."""
        s, n = shape_args((size,))
        dt = self.dtype if dtype is None else to_dtype(dtype)
        t = wrap(lib.tm_full_on(s, n, float(fill_value), dt.c,
                                _target(self, device, "new_full")))
        return t.requires_grad_(True) if requires_grad else t

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """foundry.tensor(data) of self's dtype and on self's device unless
        dtype / device is given (a copy).  Mirrors
        torch.Tensor.new_tensor."""
        from ._create import tensor
        return tensor(data, dtype=dtype or self.dtype,
                      device=self.device if device is None else device,
                      requires_grad=requires_grad)

    # ------------------------------------------------- in-place writes
    def copy_(self, src):
        """Copies src (a tensor, broadcast to self's shape and converted to
        its dtype, or a number / array) into self; returns self.  src may
        be on another device (it is copied to self's first).

        Not recorded for autograd: a src that requires grad passes no
        gradient.  Mirrors torch.Tensor.copy_."""
        if not isinstance(src, _tensor.Tensor):
            src = as_tensor_like(src, self)
        elif not lib.tm_device_eq(lib.tm_device_of(src._p),
                                  lib.tm_device_of(self._p)):
            src = src.detach().to(self.device)  # copies across devices
        check(lib.tm_copy_(self._p, src._p))
        return self

    def fill_(self, value):
        """Sets every element to value (converted to self's dtype); returns
        self.  Mirrors torch.Tensor.fill_."""
        if isinstance(value, _tensor.Tensor):
            value = value.item()
        check(lib.tm_fill_(self._p, float(value)))
        return self

    def zero_(self):
        """Sets every element to 0; returns self.  Mirrors
        torch.Tensor.zero_."""
        check(lib.tm_fill_(self._p, 0.0))
        return self


def _cuda(index):
    if index is None:
        return device("cuda", 0)
    if isinstance(index, (str, device)):
        d = device(index)
        if d.type != "cuda":
            raise ValueError(f"cuda(): {d} is not a CUDA device")
        return d
    return device("cuda", index)
