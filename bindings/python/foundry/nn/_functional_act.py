"""foundry.nn.functional activations beyond relu/gelu/silu: elu, selu,
celu, relu6, hardtanh, hardsigmoid, hardswish, mish, softsign,
logsigmoid, softmin, glu, prelu, rrelu, threshold, tanhshrink,
softshrink, hardshrink (PyTorch's names, argument order and keywords).

The C library computes each out of place (include/foundry/nn_functional.h);
inplace=True writes the result back into the input, under the rules of
foundry.nn.functional's docstring.
"""
import operator
import warnings

from .._base import ptr, wrap
from .._c import lib
from .._exports import export
from .._random import with_rng


def _out(input, p, inplace, fn):
    """The result of the C call p (a new reference), written into input
    when inplace (checked writable first by the caller)."""
    from .functional import _write_back
    y = wrap(p)
    return _write_back(input, y, fn) if inplace else y


def _pre(input, inplace, fn):
    if inplace:
        from .functional import _writable
        _writable(input, fn)
    return ptr(input, "input")


def elu(input, alpha=1.0, inplace=False):
    """input where input > 0, else alpha * (exp(input) - 1).  Mirrors
    torch.nn.functional.elu."""
    x = _pre(input, inplace, "elu")
    return _out(input, lib.tm_elu(x, float(alpha)), inplace, "elu")


@export
def selu(input, inplace=False):
    """scale * elu(input, alpha) with the self-normalising constants.
    Mirrors torch.nn.functional.selu."""
    x = _pre(input, inplace, "selu")
    return _out(input, lib.tm_selu(x), inplace, "selu")


@export
def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha != 0.
    Mirrors torch.nn.functional.celu."""
    x = _pre(input, inplace, "celu")
    return _out(input, lib.tm_celu(x, float(alpha)), inplace, "celu")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """input clamped to [min_val, max_val] (gradient 1 strictly inside).
    Mirrors torch.nn.functional.hardtanh."""
    x = _pre(input, inplace, "hardtanh")
    return _out(input, lib.tm_hardtanh(x, float(min_val), float(max_val)),
                inplace, "hardtanh")


def relu6(input, inplace=False):
    """min(max(input, 0), 6).  Mirrors torch.nn.functional.relu6."""
    x = _pre(input, inplace, "relu6")
    return _out(input, lib.tm_relu6(x), inplace, "relu6")


def hardsigmoid(input, inplace=False):
    """relu6(input + 3) / 6.  Mirrors torch.nn.functional.hardsigmoid."""
    x = _pre(input, inplace, "hardsigmoid")
    return _out(input, lib.tm_hardsigmoid(x), inplace, "hardsigmoid")


def hardswish(input, inplace=False):
    """input * relu6(input + 3) / 6.  Mirrors
    torch.nn.functional.hardswish."""
    x = _pre(input, inplace, "hardswish")
    return _out(input, lib.tm_hardswish(x), inplace, "hardswish")


def mish(input, inplace=False):
    """input * tanh(softplus(input)).  Mirrors torch.nn.functional.mish."""
    x = _pre(input, inplace, "mish")
    return _out(input, lib.tm_mish(x), inplace, "mish")


def softsign(input):
    """input / (1 + |input|).  Mirrors torch.nn.functional.softsign."""
    return wrap(lib.tm_softsign(ptr(input, "input")))


def logsigmoid(input):
    """log(sigmoid(input)), exact for large |input|.  Mirrors
    torch.nn.functional.logsigmoid."""
    return wrap(lib.tm_logsigmoid(ptr(input, "input")))


def _implicit_dim(ndim):
    # torch's legacy rule for softmax-like calls without dim
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input, dim); with dtype the input is converted first.
    dim=None picks PyTorch's deprecated implicit dim (0 for 0-, 1- and 3-d
    inputs, else 1) with its warning.  Mirrors
    torch.nn.functional.softmin."""
    x = ptr(input, "input")
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been "
                      "deprecated. Change the call to include dim=X as an "
                      "argument.", UserWarning, stacklevel=_stacklevel)
        dim = _implicit_dim(input.ndim)
    if dtype is not None:
        input = input.to(dtype)
        x = input._p
    return wrap(lib.tm_softmin(x, operator.index(dim)))


def glu(input, dim=-1):
    """a * sigmoid(b) with a, b the halves of input along dim.  Mirrors
    torch.nn.functional.glu."""
    return wrap(lib.tm_glu(ptr(input, "input"), operator.index(dim)))


def prelu(input, weight):
    """input where input > 0, else weight * input; weight has 1 element or
    one per channel (dim 1).  Mirrors torch.nn.functional.prelu."""
    ptr(input, "input")  # TypeError for anything but a Tensor
    return input.prelu(weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False,
          inplace=False, *, generator=None):
    """input where input >= 0, else a * input: a = (lower + upper) / 2
    when not training, else drawn per element from U(lower, upper) with
    `generator` (None: the default generator; a Foundry extension).
    Mirrors torch.nn.functional.rrelu."""
    x = _pre(input, inplace, "rrelu")
    p = with_rng(generator, lambda r: lib.tm_rrelu(
        x, float(lower), float(upper), bool(training), r))
    return _out(input, p, inplace, "rrelu")


@export
def threshold(input, threshold, value, inplace=False):
    """value where input <= threshold, else input.  Mirrors
    torch.nn.functional.threshold."""
    x = _pre(input, inplace, "threshold")
    return _out(input, lib.tm_threshold(x, float(threshold), float(value)),
                inplace, "threshold")


def tanhshrink(input):
    """input - tanh(input).  Mirrors torch.nn.functional.tanhshrink."""
    return wrap(lib.tm_tanhshrink(ptr(input, "input")))


def softshrink(input, lambd=0.5):
    """input -+ lambd outside [-lambd, lambd], 0 inside (lambd >= 0).
    Mirrors torch.nn.functional.softshrink."""
    return wrap(lib.tm_softshrink(ptr(input, "input"), float(lambd)))


def hardshrink(input, lambd=0.5):
    """0 where |input| <= lambd, else input.  Mirrors
    torch.nn.functional.hardshrink."""
    ptr(input, "input")  # TypeError for anything but a Tensor
    return input.hardshrink(lambd)


def elu_(input, alpha=1.0):
    """elu written into input.  Mirrors torch.nn.functional.elu_."""
    return elu(input, alpha, inplace=True)


def selu_(input):
    """selu written into input.  Mirrors torch.nn.functional.selu_."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """celu written into input.  Mirrors torch.nn.functional.celu_."""
    return celu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """hardtanh written into input.  Mirrors
    torch.nn.functional.hardtanh_."""
    return hardtanh(input, min_val, max_val, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, *,
           generator=None):
    """rrelu written into input.  Mirrors torch.nn.functional.rrelu_."""
    return rrelu(input, lower, upper, training, inplace=True,
                 generator=generator)


_threshold = threshold  # threshold_'s argument of that name hides it


def threshold_(input, threshold, value):
    """threshold written into input.  Mirrors
    torch.nn.functional.threshold_."""
    return _threshold(input, threshold, value, inplace=True)


__all__ = ["elu_", "selu_", "celu_", "hardtanh_", "rrelu_", "threshold_",
           "elu", "selu", "celu", "hardtanh", "relu6", "hardsigmoid",
           "hardswish", "mish", "softsign", "logsigmoid", "softmin", "glu",
           "prelu", "rrelu", "threshold", "tanhshrink", "softshrink",
           "hardshrink"]
