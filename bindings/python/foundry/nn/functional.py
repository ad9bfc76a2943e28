"""foundry.nn.functional: PyTorch's functional API over the C library."""
import operator

from .. import _c
from .._c import ffi, lib
from .._tensor import Tensor, wrap, ptr, int64_array

_REDUCTIONS = {"mean": lib.TM_REDUCTION_MEAN, "sum": lib.TM_REDUCTION_SUM,
               "none": lib.TM_REDUCTION_NONE}


def _reduction(r):
    try:
        return _REDUCTIONS[r]
    except (KeyError, TypeError):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not "
                         f"{r!r}") from None


def _opt(t, what):
    return ffi.NULL if t is None else ptr(t, what)


def _pair(v, what):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{what} must be an int or a pair, not {v!r}")
        return [operator.index(v[0]), operator.index(v[1])]
    v = operator.index(v)
    return [v, v]


# ------------------------------------------------------------- activations

def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def gelu(input, approximate="none"):
    return input.gelu(approximate)


def silu(input, inplace=False):
    return input.silu_() if inplace else input.silu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return input.leaky_relu(negative_slope)


def softplus(input, beta=1.0, threshold=20.0):
    return input.softplus(beta, threshold)


def softmax(input, dim, dtype=None):
    return input.softmax(dim, dtype)


def log_softmax(input, dim, dtype=None):
    return input.log_softmax(dim, dtype)


# ------------------------------------------------------ linear and norms

def linear(input, weight, bias=None):
    """input @ weight.T + bias (weight [out, in])."""
    return wrap(lib.tm_linear(ptr(input, "input"), ptr(weight, "weight"),
                              _opt(bias, "bias")))


def _norm_shape(input, normalized_shape):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    if tuple(input.shape[input.ndim - k:]) != tuple(normalized_shape):
        raise ValueError(f"normalized_shape {list(normalized_shape)} does "
                         f"not match the input's last dims "
                         f"{list(input.shape)}")
    return k


def _flat_last(input, weight, bias, k):
    """Merges the last k dims so the C row ops (over the last dim) apply."""
    if k == 1:
        return input, weight, bias
    x = input.flatten(input.ndim - k) if input.ndim > k else \
        input.reshape(-1)
    w = weight.reshape(-1) if weight is not None else None
    b = bias.reshape(-1) if bias is not None else None
    return x, w, b


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    k = _norm_shape(input, normalized_shape)
    x, w, b = _flat_last(input, weight, bias, k)
    y = wrap(lib.tm_layer_norm(x._p, _opt(w, "weight"), _opt(b, "bias"),
                               float(eps)))
    return y.reshape(input.shape) if k > 1 else y


def rms_norm(input, normalized_shape, weight=None, eps=None):
    k = _norm_shape(input, normalized_shape)
    if eps is None:  # torch: the dtype's machine epsilon
        import numpy as np
        eps = float(np.finfo(input.dtype.np or "float32").eps)
    x, w, _ = _flat_last(input, weight, None, k)
    y = wrap(lib.tm_rms_norm(x._p, _opt(w, "weight"), float(eps)))
    return y.reshape(input.shape) if k > 1 else y


# --------------------------------------------------------------- others

def dropout(input, p=0.5, training=True, inplace=False):
    return wrap(lib.tm_dropout(ptr(input, "input"), float(p), bool(training),
                               ffi.NULL))


def embedding(input, weight):
    return wrap(lib.tm_embedding(ptr(weight, "weight"), ptr(input, "input")))


def one_hot(tensor, num_classes=-1):
    return wrap(lib.tm_one_hot(ptr(tensor, "tensor"),
                               operator.index(num_classes)))


def pad(input, pad, mode="constant", value=0.0):
    if mode != "constant":
        raise NotImplementedError(f"pad mode {mode!r}; only 'constant'")
    arr, n = int64_array(pad, "pad")
    return wrap(lib.tm_pad(ptr(input, "input"), arr, n,
                           0.0 if value is None else float(value)))


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1,
           groups=1):
    o = lib.tm_conv2d_defaults()
    o.stride = _pair(stride, "stride")
    o.padding = _pair(padding, "padding")
    o.dilation = _pair(dilation, "dilation")
    o.groups = operator.index(groups)
    opts = ffi.new("tm_conv2d_opts *", o)
    return wrap(lib.tm_conv2d(ptr(input, "input"), ptr(weight, "weight"),
                              _opt(bias, "bias"), opts))


def _pool_opts(kernel_size, stride, padding, count_include_pad=True):
    o = lib.tm_pool2d_defaults()
    o.kernel = _pair(kernel_size, "kernel_size")
    o.stride = [0, 0] if stride is None or stride == [] else \
        _pair(stride, "stride")
    o.padding = _pair(padding, "padding")
    o.count_include_pad = bool(count_include_pad)
    return ffi.new("tm_pool2d_opts *", o)


def max_pool2d(input, kernel_size, stride=None, padding=0):
    return wrap(lib.tm_max_pool2d(ptr(input, "input"),
                                  _pool_opts(kernel_size, stride, padding)))


def avg_pool2d(input, kernel_size, stride=None, padding=0,
               count_include_pad=True):
    return wrap(lib.tm_avg_pool2d(ptr(input, "input"), _pool_opts(
        kernel_size, stride, padding, count_include_pad)))


# ----------------------------------------------------------------- losses

def cross_entropy(input, target, reduction="mean", ignore_index=-100,
                  label_smoothing=0.0):
    o = lib.tm_cross_entropy_defaults()
    o.reduction = _reduction(reduction)
    o.ignore_index = operator.index(ignore_index)
    o.label_smoothing = float(label_smoothing)
    return wrap(lib.tm_cross_entropy(ptr(input, "input"),
                                     ptr(target, "target"),
                                     ffi.new("tm_cross_entropy_opts *", o)))


def nll_loss(input, target, reduction="mean", ignore_index=-100):
    return wrap(lib.tm_nll_loss(ptr(input, "input"), ptr(target, "target"),
                                _reduction(reduction),
                                operator.index(ignore_index)))


def binary_cross_entropy_with_logits(input, target, reduction="mean"):
    return wrap(lib.tm_binary_cross_entropy_with_logits(
        ptr(input, "input"), ptr(target, "target"), _reduction(reduction)))


def mse_loss(input, target, reduction="mean"):
    return wrap(lib.tm_mse_loss(ptr(input, "input"), ptr(target, "target"),
                                _reduction(reduction)))


def l1_loss(input, target, reduction="mean"):
    return wrap(lib.tm_l1_loss(ptr(input, "input"), ptr(target, "target"),
                               _reduction(reduction)))


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    return wrap(lib.tm_smooth_l1_loss(ptr(input, "input"),
                                      ptr(target, "target"),
                                      _reduction(reduction), float(beta)))


def huber_loss(input, target, reduction="mean", delta=1.0):
    return wrap(lib.tm_huber_loss(ptr(input, "input"), ptr(target, "target"),
                                  _reduction(reduction), float(delta)))


__all__ = [n for n in dir() if not n.startswith("_") and n not in
           ("operator", "ffi", "lib", "Tensor", "wrap", "ptr",
            "int64_array")]
del _c
