"""foundry.nn.utils: gradient clipping (torch.nn.utils)."""
from .._c import ffi, lib, check
from .._tensor import Tensor


def _grads(parameters):
    ps = [parameters] if isinstance(parameters, Tensor) else \
        list(parameters)
    return ffi.new("tm_tensor *[]", [p._p for p in ps] or [ffi.NULL]), \
        len(ps)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """Scales all gradients so their joint norm is at most max_norm; returns
    the norm before clipping (a Python float)."""
    arr, n = _grads(parameters)
    out = ffi.new("double *")
    check(lib.tm_clip_grad_norm_(arr, n, float(max_norm), float(norm_type),
                                 out))
    return out[0]


def clip_grad_value_(parameters, clip_value):
    arr, n = _grads(parameters)
    check(lib.tm_clip_grad_value_(arr, n, float(clip_value)))
