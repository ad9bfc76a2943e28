"""foundry.nn.init: PyTorch's initialisers, run by the C library (under
no_grad, so they work on parameters).

The random ones draw from `generator` (None: the default generator).
Float tensors without broadcast (stride 0) dims; each returns the tensor.
"""
import math

from .._base import ptr
from .._c import check, ffi, lib
from .._grad import no_grad
from .._random import with_rng

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


def _run(c_call, tensor, generator=None):
    """c_call(p, rng) on the tensor's C pointer under no_grad."""
    p = ptr(tensor, "tensor")
    with no_grad():
        with_rng(generator, lambda r: check(c_call(p, r)))
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain of a nonlinearity ("relu": sqrt(2), "tanh": 5/3,
    "leaky_relu" with slope param, ...).  Mirrors
    torch.nn.init.calculate_gain."""
    return lib.tm_init_gain(_nl(nonlinearity),
                            0.01 if param is None else float(param))


def zeros_(tensor):
    """Fills tensor with 0.  Mirrors torch.nn.init.zeros_."""
    return _run(lambda p, r: lib.tm_init_zeros_(p), tensor)


def ones_(tensor):
    """Fills tensor with 1.  Mirrors torch.nn.init.ones_."""
    return _run(lambda p, r: lib.tm_init_ones_(p), tensor)


def constant_(tensor, val):
    """Fills tensor with val.  Mirrors torch.nn.init.constant_."""
    return _run(lambda p, r: lib.tm_init_constant_(p, float(val)), tensor)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills tensor with U(a, b).  Mirrors torch.nn.init.uniform_."""
    return _run(lambda p, r: lib.tm_init_uniform_(p, a, b, r), tensor,
                generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills tensor with N(mean, std^2).  Mirrors torch.nn.init.normal_."""
    return _run(lambda p, r: lib.tm_init_normal_(p, mean, std, r), tensor,
                generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills tensor with N(mean, std^2) truncated to [a, b].  Mirrors
    torch.nn.init.trunc_normal_."""
    return _run(lambda p, r: lib.tm_init_trunc_normal_(p, mean, std, a, b,
                                                       r), tensor, generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-b, b), b = gain sqrt(6 / (fan_in + fan_out)).
    Mirrors torch.nn.init.xavier_uniform_."""
    return _run(lambda p, r: lib.tm_init_xavier_uniform_(p, gain, r),
                tensor, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2), std = gain sqrt(2 / (fan_in + fan_out)).
    Mirrors torch.nn.init.xavier_normal_."""
    return _run(lambda p, r: lib.tm_init_xavier_normal_(p, gain, r), tensor,
                generator)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                     generator=None):
    """He uniform: U(-b, b), b = gain sqrt(3 / fan); a is the leaky-relu
    slope.  Mirrors torch.nn.init.kaiming_uniform_."""
    return _run(lambda p, r: lib.tm_init_kaiming_uniform_(
        p, a, _mode(mode), _nl(nonlinearity), r), tensor, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                    generator=None):
    """He normal: N(0, std^2), std = gain / sqrt(fan); a is the leaky-relu
    slope.  Mirrors torch.nn.init.kaiming_normal_."""
    return _run(lambda p, r: lib.tm_init_kaiming_normal_(
        p, a, _mode(mode), _nl(nonlinearity), r), tensor, generator)


def _calculate_fan_in_and_fan_out(tensor):
    fi = ffi.new("int64_t *")
    fo = ffi.new("int64_t *")
    check(lib.tm_init_fans(ptr(tensor, "tensor"), fi, fo))
    return fi[0], fo[0]


def _default_bound(fan_in):
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
