"""foundry.nn: modules, layers, losses, functional ops and initialisers."""
from . import functional, init, utils  # noqa: F401
from .module import Module, Parameter
from .containers import Sequential, ModuleList, ModuleDict
from .layers import (Identity, Linear, Embedding, LayerNorm, RMSNorm,
                     Dropout, Conv2d, MaxPool2d, AvgPool2d, Flatten, ReLU,
                     SiLU, Sigmoid, Tanh, GELU, LeakyReLU, Softplus, Softmax,
                     LogSoftmax, CrossEntropyLoss, NLLLoss, MSELoss, L1Loss,
                     BCEWithLogitsLoss, SmoothL1Loss, HuberLoss)
from ._layers_conv import (Conv1d, Conv3d, ConvTranspose1d,  # noqa: F401
                           ConvTranspose2d, ConvTranspose3d)
from . import _layers_act, _layers_loss
from ._layers_act import *  # noqa: F401,F403
from ._layers_loss import *  # noqa: F401,F403
from ._layers_fold import Unfold, Fold
from . import _layers_pool, _layers_resize
from ._layers_pool import *  # noqa: F401,F403
from ._layers_resize import *  # noqa: F401,F403
from ._layers_rope import RotaryEmbedding  # noqa: F401
from ._layers_attention import MultiheadAttention  # noqa: F401
from ._kv_cache import KVCache  # noqa: F401

__all__ = ["functional", "init", "utils", "Module", "Parameter", "Sequential",
           "ModuleList", "ModuleDict", "Identity", "Linear", "Embedding",
           "LayerNorm", "RMSNorm", "Dropout", "Conv2d", "MaxPool2d",
           "AvgPool2d", "Flatten", "ReLU", "SiLU", "Sigmoid", "Tanh", "GELU",
           "LeakyReLU", "Softplus", "Softmax", "LogSoftmax",
           "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss",
           "BCEWithLogitsLoss", "SmoothL1Loss", "HuberLoss", "Conv1d",
           "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "Unfold", "Fold", "RotaryEmbedding", "MultiheadAttention",
           "KVCache"]
__all__ += (_layers_act.__all__ + _layers_loss.__all__ + _layers_pool.__all__
            + _layers_resize.__all__)
