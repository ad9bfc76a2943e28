"""Foundry: tensors, autograd and neural networks on a small C library.

    import foundry
    x = foundry.randn(64, 10)
    w = foundry.zeros(10, 1, requires_grad=True)
    loss = ((x @ w) ** 2).mean()
    loss.backward()           # w.grad

The API follows PyTorch's names and semantics; the C library's manual is
include/foundry/*.h.  Errors raised by the library are FoundryError
subclasses that are also the matching builtin exception (ValueError,
TypeError, IndexError, MemoryError, ...) and carry the library's message.
"""
from . import _c
from ._c import (FoundryError, dtype, float32, float64, float16, bfloat16,
                 int8, uint8, int16, int32, int64)
from ._c import bool_ as bool  # noqa: A001  (foundry.bool, as torch.bool)
from ._tensor import Tensor, Size, device
from . import _ops, _index  # noqa: F401  (attach methods to Tensor)
from ._create import (tensor, from_numpy, as_tensor, zeros, ones, empty,
                      full, arange, linspace, eye, rand, randn, randint,
                      zeros_like, ones_like, empty_like, full_like,
                      rand_like, randn_like, randint_like, manual_seed)
from ._grad import no_grad, enable_grad, set_grad_enabled, is_grad_enabled

float = float32  # noqa: A001
double = float64
half = float16
short = int16
int = int32  # noqa: A001
long = int64

globals().update(_ops.FUNCTIONS)
# The Tensor methods that are also foundry.<name>(tensor, ...) functions.
for _name in ("reshape", "transpose", "permute", "unsqueeze", "squeeze",
              "flatten", "narrow", "select", "split", "chunk", "unbind",
              "gather", "scatter", "scatter_add", "index_select",
              "masked_fill", "clamp", "clip", "sort", "argsort", "topk",
              "tril", "triu", "clone", "cumsum", "t", "broadcast_to",
              "numel", "detach", "sum", "mean", "prod", "max", "min",
              "amax", "amin", "var", "std", "logsumexp", "norm", "any",
              "all", "argmax", "argmin", "exp", "log", "gelu", "softplus",
              "leaky_relu", "softmax", "log_softmax", "equal", "allclose", "as_strided", "unflatten"):
    globals()[_name] = getattr(Tensor, _name)
del _name


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


def get_num_threads():
    return _c.lib.tm_get_num_threads()


def set_num_threads(n):
    """Threads large ops use (n <= 0: the default, all CPUs)."""
    _c.lib.tm_set_num_threads(n)


def memory_stats():
    """The allocator's counters: current/peak/cached bytes, allocs, frees."""
    s = _c.ffi.new("tm_mem_stats *")
    _c.lib.tm_memory_stats(s)
    return {k: getattr(s, k) for k in ("current_bytes", "peak_bytes",
                                       "cached_bytes", "allocs", "frees")}


__version__ = _c.ffi.string(_c.lib.tm_version()).decode()

from . import nn, optim, data  # noqa: E402
from .safetensors import save_file, load_file, safe_open  # noqa: E402
