"""Block quantization (include/foundry/quantize.h): foundry.quantize,
foundry.dequantize and foundry.quantize_module.

    q = foundry.quantize(w, "q4_k")      # a foundry.q4_k tensor of w's shape
    q.numpy()                            # its raw ggml blocks, uint8
    w2 = foundry.dequantize(q)           # float32 values again
    foundry.quantize_module(model, "q8_0")  # Linear weights, in place

The formats are ggml's, byte for byte; a quantized tensor is a frozen
weight: F.linear, F.embedding and x @ w.T accept it (x's rows are quantized
to 8 bits on the fly and multiplied with integer dot products), gradients
flow to the input and the bias, never to the weight.
"""
import fnmatch

import numpy as np

from . import _c
from ._base import to_dtype, wrap
from ._c import ffi, lib
from ._exports import export


def _qdtype(qtype):
    """A quantized foundry.dtype from a dtype or a name ("q4_k", "Q8_0")."""
    if isinstance(qtype, _c.dtype):
        dt = qtype
    elif isinstance(qtype, str):
        out = ffi.new("tm_dtype *")
        _c.check(lib.tm_dtype_parse(qtype.encode(), out))
        dt = _c.BY_C[out[0]]
    else:
        raise TypeError(f"qtype must be a quantized dtype or its name, not "
                        f"{type(qtype).__name__}")
    if not dt.is_quantized:
        raise TypeError(f"{dt.name} is not a quantized dtype (q8_0, q4_0, "
                        f"q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q8_1, q8_k)")
    return dt


def _as_tensor(t):
    from ._tensor import Tensor
    if isinstance(t, Tensor):
        return t
    from ._create import tensor
    arr = np.asarray(t)
    if arr.dtype.kind != "f":
        raise TypeError(f"quantize() takes float values, not {arr.dtype}")
    return tensor(np.ascontiguousarray(arr, dtype=np.float32))


@export
def quantize(t, qtype):
    """t (a float foundry.Tensor on any device, or a numpy array) quantized
    along its last dim to the block format qtype ("q8_0", "q4_0", "q4_1",
    "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"; "q8_1" / "q8_k" for
    activations), as a new tensor of t's shape and dtype foundry.<qtype>.
    The last dim must be a multiple of the block (32, or 256 for the
    K-quants: ValueError otherwise); infinite or NaN values are refused
    (ValueError).  The 32-value formats round exactly as ggml's reference
    quantizers.  .numpy() of the result gives its raw blocks (uint8)."""
    dt = _qdtype(qtype)
    src = _as_tensor(t)
    return wrap(lib.tm_quantize(src._p, dt.c))


@export
def dequantize(q, dtype=None):
    """The values of quantized tensor q as a new float tensor (float32
    unless dtype says float64 / float16 / bfloat16), bit-identical to
    ggml's dequantizers."""
    from ._tensor import Tensor
    if not isinstance(q, Tensor):
        raise TypeError(f"dequantize() takes a foundry.Tensor, not "
                        f"{type(q).__name__}")
    dt = _c.float32 if dtype is None else to_dtype(dtype)
    return wrap(lib.tm_dequantize(q._p, dt.c))


def _rule_type(name, rules, default):
    """The dtype the first matching rule gives `name` (None: keep it
    float), else default."""
    items = rules.items() if isinstance(rules, dict) else (rules or ())
    for pattern, qt in items:
        if fnmatch.fnmatchcase(name, pattern):
            if qt is None:
                return None
            d = qt if isinstance(qt, _c.dtype) else to_dtype_or_q(qt)
            return d if d.is_quantized else None
    return default


def to_dtype_or_q(name):
    """A foundry.dtype from any dtype name, quantized ones included."""
    if isinstance(name, str):
        out = ffi.new("tm_dtype *")
        if lib.tm_dtype_parse(name.encode(), out) == 0:
            return _c.BY_C[out[0]]
        lib.tm_clear_error()
    return to_dtype(name)


def _quantize_gpt(model, dt, rules, embeddings):
    """foundry.models.GPT: its C model's parameters through
    tm_gpt_quantize with a plan: every matrix in dt, vectors kept, the
    embeddings kept float unless asked, then the rules."""
    keep = [] if embeddings else ["*embed*", "*wte*", "*wpe*"]
    pats = []
    items = list(rules.items() if isinstance(rules, dict) else (rules or ()))
    for pattern, qt in items:
        d = _c.float32 if qt is None else (
            qt if isinstance(qt, _c.dtype) else to_dtype_or_q(qt))
        pats.append((pattern, d))
    pats += [(p, _c.float32) for p in keep]
    keepalive = [ffi.new("char[]", p.encode()) for p, _ in pats]
    arr = ffi.new("tm_quant_rule[]", max(len(pats), 1))
    for i, (_, d) in enumerate(pats):
        arr[i].pattern = keepalive[i]
        arr[i].dtype = d.c
    plan = ffi.new("tm_quant_plan *")
    plan.default_type = dt.c
    plan.vector_type = lib.TM_F32
    plan.rules = arr
    plan.n_rules = len(pats)
    plan.fallback_type = lib.TM_F32
    _c.check(lib.tm_gpt_quantize(model._m, plan, ffi.NULL, ffi.NULL))
    model._build_tree()
    return model


@export
def quantize_module(module, qtype="q8_0", rules=None, embeddings=False):
    """Quantizes a module's layers in place and returns it: every
    foundry.nn.Linear's weight (and every nn.Embedding's when embeddings
    is true) becomes a quantized tensor of qtype, held as a buffer (it
    stays in state_dict, it is no longer a Parameter: frozen), so forward
    runs the integer kernels and backward still gives input gradients.

    rules: {glob: qtype or None} (or a list of pairs) matched against each
    weight's qualified name ("layers.0.fc1.weight"), first match wins;
    None keeps that weight float.  A weight whose rows are not a multiple
    of the block (32, or 256 for K-quants) stays float.  For a
    foundry.models.GPT, its C model is quantized (tm_gpt_quantize): every
    matrix in qtype, 1-D tensors and (unless embeddings) the token and
    position embeddings kept float32."""
    from .nn import Embedding, Linear
    dt = _qdtype(qtype)
    from .models import GPT
    if isinstance(module, GPT):
        return _quantize_gpt(module, dt, rules, embeddings)
    for mname, m in list(module.named_modules()):
        if not (isinstance(m, Linear) or
                (embeddings and isinstance(m, Embedding))):
            continue
        w = m.__dict__.get("weight")
        if w is None or w.dtype.is_quantized or w.ndim != 2:
            continue
        full = f"{mname}.weight" if mname else "weight"
        want = _rule_type(full, rules, dt)
        if want is None or w.shape[1] % want.block_size:
            continue
        q = quantize(w.detach(), want)
        del m.__dict__["weight"]
        m._buffers["weight"] = q
    return module
