"""Layers, activations and losses as modules (PyTorch's names, arguments
and default initialisation)."""
import math

from .. import _c
from .._create import empty, ones, zeros
from .._base import to_dtype
from . import functional as F
from . import init
from .module import Module, Parameter
from ._layers_conv import Conv2d  # noqa: F401  (moved there)
from ._layers_pool import *  # noqa: F401,F403
from ._layers_resize import *  # noqa: F401,F403


def _dt(dtype):
    return _c.float32 if dtype is None else to_dtype(dtype)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """y = x @ weight.T + bias; weight [out, in] and bias [out] start
    U(-1/sqrt(in), 1/sqrt(in)) as in PyTorch."""

    def __init__(self, in_features, out_features, bias=True, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty(out_features, in_features,
                                      dtype=_dt(dtype)))
        self.bias = Parameter(empty(out_features, dtype=_dt(dtype))) \
            if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            b = init._default_bound(self.in_features)
            init.uniform_(self.bias, -b, b)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features="
                f"{self.out_features}, bias={self.bias is not None}")


class Embedding(Module):
    """Rows of weight [num_embeddings, embedding_dim] (N(0, 1) at start)."""

    def __init__(self, num_embeddings, embedding_dim, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, \
            embedding_dim
        self.weight = Parameter(empty(num_embeddings, embedding_dim,
                                      dtype=_dt(dtype)))
        init.normal_(self.weight)

    def forward(self, x):
        return F.embedding(x, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


def _shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 bias=True, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.weight = Parameter(ones(self.normalized_shape, dtype=_dt(
            dtype))) if elementwise_affine else None
        self.bias = Parameter(zeros(self.normalized_shape, dtype=_dt(
            dtype))) if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight,
                            self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.weight is not None}")


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True,
                 dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.weight = Parameter(ones(self.normalized_shape, dtype=_dt(
            dtype))) if elementwise_affine else None

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Dropout(Module):
    """F.dropout(x, p) in training mode, the identity in eval mode;
    inplace=True writes into the input (see foundry.nn.functional).
    Mirrors torch.nn.Dropout."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], not "
                             f"{p}")
        self.p, self.inplace = p, bool(inplace)

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"




class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


# ------------------------------------------------------------ activations

class _Activation(Module):
    """An elementwise activation; inplace=True writes into the input (see
    foundry.nn.functional)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_Activation):
    """max(x, 0).  Mirrors torch.nn.ReLU."""

    def forward(self, x):
        return F.relu(x, self.inplace)


class SiLU(_Activation):
    """x * sigmoid(x).  Mirrors torch.nn.SiLU."""

    def forward(self, x):
        return F.silu(x, self.inplace)


class Sigmoid(_Activation):
    """1 / (1 + exp(-x)).  Mirrors torch.nn.Sigmoid (inplace is a Foundry
    extension)."""

    def forward(self, x):
        if self.inplace:
            return F._writable(x, "Sigmoid").sigmoid_()
        return F.sigmoid(x)


class Tanh(_Activation):
    """tanh(x).  Mirrors torch.nn.Tanh (inplace is a Foundry extension)."""

    def forward(self, x):
        if self.inplace:
            return F._writable(x, "Tanh").tanh_()
        return F.tanh(x)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x; inplace=True writes into the
    input (see foundry.nn.functional).  Mirrors torch.nn.LeakyReLU."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, bool(inplace)

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (
            ", inplace=True" if self.inplace else "")


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)


class Softmax(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self.dim)


# ----------------------------------------------------------------- losses
from ._layers_losses import (  # noqa: E402,F401
    BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss,
    SmoothL1Loss)
