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
from ._c import (q8_0, q4_0, q4_1, q8_1, q5_0, q5_1, q4_k, q5_k,  # noqa
                 q6_k, q8_k)
from ._base import Size, device
from ._tensor import Tensor
from ._random import Generator
from ._grad import no_grad, enable_grad, set_grad_enabled
# Every module that records foundry.<name> functions (see _exports.py);
# importing them fills the registry.
from . import _create, _ops_unary, _ops_shape, _system  # noqa: F401
from . import _quantize  # noqa: F401  (quantize, dequantize, ...)
from . import _exports

float = float32  # noqa: A001
double = float64
half = float16
short = int16
int = int32  # noqa: A001
long = int64

__version__ = _c.ffi.string(_c.lib.tm_version()).decode()

from . import nn, optim, data  # noqa: E402
from . import models  # noqa: E402
from . import progress  # noqa: E402,F401
from .safetensors import safe_open  # noqa: E402,F401
from . import tokenizers  # noqa: E402,F401
from . import gguf  # noqa: E402,F401
from . import swarm  # noqa: E402,F401
from . import _tokenizers_train  # noqa: E402,F401  (Tokenizer.train)

# foundry.<name> for every exported function: the one registry.
globals().update(_exports.FUNCTIONS)
