"""foundry.nn.functional: PyTorch's functional API over the C library.

inplace=True (relu, silu, leaky_relu, dropout) writes the result into the
input and returns the input, as PyTorch does; the input's version counter
moves, so autograd still refuses a backward through a value this
overwrote.  The C library writes in place only into tensors autograd does
not track: while grad mode is on, a leaf that requires grad is refused
(FoundryStateError, as PyTorch refuses it), and so is a tensor in the
autograd graph (NotImplementedError: PyTorch would rebase its history,
which the library cannot do; pass inplace=False).
"""
import operator

from .. import _c
from .._base import ptr, wrap
from .._c import check, ffi, lib
from .._random import with_rng
from .._tensor import Tensor
from ._functional_conv import (conv1d, conv2d, conv3d,  # noqa: F401
                               conv_transpose1d, conv_transpose2d,
                               conv_transpose3d)
from ._functional_pool import *  # noqa: F401,F403
from ._functional_resize import *  # noqa: F401,F403
from ._functional_rope import *  # noqa: F401,F403

def _opt(t, what):
    return ffi.NULL if t is None else ptr(t, what)


def _pair(v, what):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{what} must be an int or a pair, not {v!r}")
        return [operator.index(v[0]), operator.index(v[1])]
    v = operator.index(v)
    return [v, v]


def _writable(x, fn):
    """Checks that inplace=True may write into x (see the module's
    docstring); returns x."""
    p = ptr(x, "input")
    if lib.tm_grad_enabled() and lib.tm_requires_grad(p):
        if lib.tm_is_leaf(p):
            raise _c.error_class(lib.TM_ESTATE)(
                f"{fn}(inplace=True): a leaf tensor that requires grad "
                f"cannot be written in place while grad mode is on")
        raise NotImplementedError(
            f"{fn}(inplace=True): the input is part of the autograd graph "
            f"(it requires grad and is not a leaf); the library does not "
            f"write in place into such tensors (PyTorch rebases their "
            f"history); pass inplace=False")
    return x


def _write_back(x, y, fn):
    """inplace=True for an op without a C in-place form: y (computed out of
    place from x) is copied into x, which is returned."""
    if y.dtype is not x.dtype:
        raise TypeError(f"{fn}(inplace=True): the result is {y.dtype.name} "
                        f"and cannot be written into a {x.dtype.name} input")
    check(lib.tm_copy_(x._p, y._p))
    return x


# ------------------------------------------------------------- activations

def relu(input, inplace=False):
    """max(input, 0), elementwise (every dtype kept); with inplace=True
    written into input (see the module's docstring).  Mirrors
    torch.nn.functional.relu."""
    if inplace:
        return _writable(input, "relu").relu_()
    return input.relu()


def gelu(input, approximate="none"):
    """input * Phi(input): approximate="none" (erf) or "tanh".  Mirrors
    torch.nn.functional.gelu."""
    return input.gelu(approximate)


def silu(input, inplace=False):
    """input * sigmoid(input); with inplace=True written into input (see
    the module's docstring).  Mirrors torch.nn.functional.silu."""
    if inplace:
        return _writable(input, "silu").silu_()
    return input.silu()


def sigmoid(input):
    """1 / (1 + exp(-input)).  Mirrors torch.nn.functional.sigmoid."""
    return input.sigmoid()


def tanh(input):
    """Hyperbolic tangent.  Mirrors torch.nn.functional.tanh."""
    return input.tanh()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """input where input > 0, else negative_slope * input; with
    inplace=True written into input (see the module's docstring).  Mirrors
    torch.nn.functional.leaky_relu."""
    if not inplace:
        return input.leaky_relu(negative_slope)
    _writable(input, "leaky_relu")
    if negative_slope == 0.01:  # tm_unary_'s leaky_relu has this slope
        check(lib.tm_unary_(lib.TM_OP_LEAKY_RELU, input._p))
        return input
    return _write_back(input, input.leaky_relu(negative_slope), "leaky_relu")


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * input)) / beta, and input where beta * input >
    threshold.  Mirrors torch.nn.functional.softplus."""
    return input.softplus(beta, threshold)


def softmax(input, dim, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along dim (see Tensor.softmax).
    Mirrors torch.nn.functional.softmax (dim is required)."""
    return input.softmax(dim, dtype)


def log_softmax(input, dim, dtype=None):
    """log(softmax(x)) along dim, computed stably.  Mirrors
    torch.nn.functional.log_softmax (dim is required)."""
    return input.log_softmax(dim, dtype)


# ------------------------------------------------------ linear and norms

def linear(input, weight, bias=None):
    """input @ weight.T + bias: input [..., in], weight [out, in], bias
    [out] or None -> [..., out].  Mirrors torch.nn.functional.linear."""
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
    """(x - mean) / sqrt(var + eps) * weight + bias over the last
    len(normalized_shape) dims (biased variance).

    input [..., *normalized_shape]; weight and bias of normalized_shape or
    None.  Mirrors torch.nn.functional.layer_norm."""
    k = _norm_shape(input, normalized_shape)
    x, w, b = _flat_last(input, weight, bias, k)
    y = wrap(lib.tm_layer_norm(x._p, _opt(w, "weight"), _opt(b, "bias"),
                               float(eps)))
    return y.reshape(input.shape) if k > 1 else y


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the last
    len(normalized_shape) dims; eps None is the dtype's machine epsilon,
    as in PyTorch.  Mirrors torch.nn.functional.rms_norm."""
    k = _norm_shape(input, normalized_shape)
    if eps is None:  # torch: the dtype's machine epsilon
        import numpy as np
        eps = float(np.finfo(input.dtype.np or "float32").eps)
    x, w, _ = _flat_last(input, weight, None, k)
    y = wrap(lib.tm_rms_norm(x._p, _opt(w, "weight"), float(eps)))
    return y.reshape(input.shape) if k > 1 else y


# --------------------------------------------------------------- others

def dropout(input, p=0.5, training=True, inplace=False, *, generator=None):
    """Zeroes each element with probability p and scales the rest by
    1 / (1 - p); the identity when not training.

    The mask is drawn from `generator` (None: the default generator; a
    Foundry extension, PyTorch's dropout has no generator).  With
    inplace=True the result is written into input (see the module's
    docstring).  Mirrors torch.nn.functional.dropout."""
    x = ptr(input, "input")
    if inplace and (not training or p == 0):
        return input  # nothing to write (no draw)
    if inplace:
        _writable(input, "dropout")
    y = wrap(with_rng(generator, lambda r: lib.tm_dropout(
        x, float(p), bool(training), r)))
    return _write_back(input, y, "dropout") if inplace else y


def embedding(input, weight):
    """Rows of weight [V, D] picked by the integer indices input (any
    shape): out [..., D].  Mirrors torch.nn.functional.embedding (without
    padding_idx and max_norm)."""
    return wrap(lib.tm_embedding(ptr(weight, "weight"), ptr(input, "input")))


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows of the integer indices in tensor: one more
    trailing dim of num_classes (-1: max + 1).  Mirrors
    torch.nn.functional.one_hot."""
    return wrap(lib.tm_one_hot(ptr(tensor, "tensor"),
                               operator.index(num_classes)))




# ----------------------------------------------------------------- losses
from ._functional_losses import (  # noqa: E402,F401
    _reduction, binary_cross_entropy_with_logits, cross_entropy, huber_loss,
    l1_loss, mse_loss, nll_loss, smooth_l1_loss)


from ._functional_act import *  # noqa: E402,F401,F403
from ._functional_loss2 import *  # noqa: E402,F401,F403

from ._functional_fold import fold, unfold  # noqa: E402,F401
from ._functional_attention import *  # noqa: E402,F401,F403

__all__ = [n for n in dir() if not n.startswith("_") and n not in
           ("operator", "ffi", "lib", "Tensor", "wrap", "ptr", "check",
            "int64_array", "with_rng")]
