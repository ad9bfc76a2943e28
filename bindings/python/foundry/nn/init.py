"""foundry.nn.init: PyTorch's initialisers, run by the C library (under
no_grad, so they work on parameters)."""
import math

from .._c import ffi, lib, check
from .._grad import no_grad
from .._tensor import ptr

_NL = {"linear": lib.TM_NL_LINEAR, "conv1d": lib.TM_NL_LINEAR,
       "conv2d": lib.TM_NL_LINEAR, "conv3d": lib.TM_NL_LINEAR,
       "identity": lib.TM_NL_LINEAR, "sigmoid": lib.TM_NL_SIGMOID,
       "tanh": lib.TM_NL_TANH, "relu": lib.TM_NL_RELU,
       "leaky_relu": lib.TM_NL_LEAKY_RELU, "selu": lib.TM_NL_SELU}
_MODE = {"fan_in": lib.TM_FAN_IN, "fan_out": lib.TM_FAN_OUT}


def _nl(name):
    try:
        return _NL[name]
    except KeyError:
        raise ValueError(f"unsupported nonlinearity {name!r}") from None


def _mode(mode):
    try:
        return _MODE[mode]
    except KeyError:
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', not "
                         f"{mode!r}") from None


def _run(c_call, tensor):
    p = ptr(tensor, "tensor")
    with no_grad():
        check(c_call(p))
    return tensor


def calculate_gain(nonlinearity, param=None):
    return lib.tm_init_gain(_nl(nonlinearity),
                            0.01 if param is None else float(param))


def zeros_(tensor):
    return _run(lib.tm_init_zeros_, tensor)


def ones_(tensor):
    return _run(lib.tm_init_ones_, tensor)


def constant_(tensor, val):
    return _run(lambda p: lib.tm_init_constant_(p, float(val)), tensor)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _run(lambda p: lib.tm_init_uniform_(p, a, b, ffi.NULL), tensor)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _run(lambda p: lib.tm_init_normal_(p, mean, std, ffi.NULL),
                tensor)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    return _run(lambda p: lib.tm_init_trunc_normal_(p, mean, std, a, b,
                                                    ffi.NULL), tensor)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    return _run(lambda p: lib.tm_init_xavier_uniform_(p, gain, ffi.NULL),
                tensor)


def xavier_normal_(tensor, gain=1.0, generator=None):
    return _run(lambda p: lib.tm_init_xavier_normal_(p, gain, ffi.NULL),
                tensor)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                     generator=None):
    return _run(lambda p: lib.tm_init_kaiming_uniform_(
        p, a, _mode(mode), _nl(nonlinearity), ffi.NULL), tensor)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                    generator=None):
    return _run(lambda p: lib.tm_init_kaiming_normal_(
        p, a, _mode(mode), _nl(nonlinearity), ffi.NULL), tensor)


def _calculate_fan_in_and_fan_out(tensor):
    fi = ffi.new("int64_t *")
    fo = ffi.new("int64_t *")
    check(lib.tm_init_fans(ptr(tensor, "tensor"), fi, fo))
    return fi[0], fo[0]


def _default_bound(fan_in):
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
