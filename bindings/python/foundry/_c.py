"""The C library, its errors as Python exceptions, and dtypes."""
import os as _os

from ._foundry_cffi import ffi, lib

__all__ = ["ffi", "lib", "FoundryError", "check", "error", "dtype",
           "op_names"]

# ------------------------------------------------------------------ errors


class FoundryError(RuntimeError):
    """An error reported by the Foundry C library.  `status` is the C status
    name ("TM_ESHAPE"); the message is the library's tm_last_error()."""

    status = "TM_EUNKNOWN"


def _error_class(status, builtin, name=None):
    """The exception class of a C status: a FoundryError that is also
    `builtin` (when given); its .status is the C name ("TM_ESHAPE")."""
    bases = (FoundryError, builtin) if builtin else (FoundryError,)
    name = name or "Foundry" + builtin.__name__
    return type(name, bases, {
        "status": ffi.string(lib.tm_status_name(status)).decode(),
        "__module__": "foundry"})


# Every C status maps to one class that is both a FoundryError and the
# builtin exception a Python user would expect for it (states and devices
# have no builtin counterpart: plain FoundryErrors).
_ERRORS = {s: _error_class(s, *how) for s, how in {
    lib.TM_EINVAL: (ValueError,),
    lib.TM_ESHAPE: (ValueError,),
    lib.TM_EDTYPE: (TypeError,),
    lib.TM_ENOMEM: (MemoryError,),
    lib.TM_ERANGE: (IndexError,),
    lib.TM_EOVERFLOW: (ValueError,),
    lib.TM_EIO: (OSError,),
    lib.TM_EFORMAT: (ValueError,),
    lib.TM_EUNSUPPORTED: (NotImplementedError,),
    lib.TM_ESTATE: (None, "FoundryStateError"),
    lib.TM_EDEVICE: (None, "FoundryDeviceError"),
}.items()}


def error_class(status):
    """The exception class of a C status (lib.TM_ESTATE, ...)."""
    return _ERRORS.get(status, FoundryError)


def error():
    """The exception for the calling thread's last C failure."""
    status = lib.tm_last_status()
    msg = ffi.string(lib.tm_last_error()).decode("utf-8", "replace")
    lib.tm_clear_error()
    return _ERRORS.get(status, FoundryError)(msg or "unknown failure")


def check(status):
    """Raises the matching exception for a negative tm_status."""
    if status < 0:
        raise error()
    return status


# --------------------------------------------------------------- op tables
# The C op enums (tm_unary_op, tm_binary_op, tm_reduce_op) are the one list
# of elementwise and reduction ops; Python reads them through cffi instead of
# keeping a copy.

_OP_PREFIX = {"tm_unary_op": "TM_OP_", "tm_binary_op": "TM_OP_",
              "tm_reduce_op": "TM_RED_"}


def op_names(enum):
    """{value: name} of a C op enum ("tm_unary_op", "tm_binary_op" or
    "tm_reduce_op"), in value order: the C name lower-cased without its
    prefix (TM_OP_GELU_TANH -> "gelu_tanh"); the *_COUNT sentinel is left
    out."""
    prefix = _OP_PREFIX[enum]
    elements = ffi.typeof(enum).elements
    return {v: elements[v][len(prefix):].lower() for v in sorted(elements)
            if elements[v].startswith(prefix) and
            not elements[v].endswith("_COUNT")}


# ---------------------------------------------------------- C memory owned
# by Python: a tensor that borrows a numpy array keeps a handle to it here
# until the library's release callback says the storage died.

_alive = {}


def keep_alive(obj):
    """A `void *` handle that keeps `obj` alive until _foundry_release runs
    with it."""
    h = ffi.new_handle(obj)
    _alive[int(ffi.cast("uintptr_t", h))] = h
    return h


@ffi.def_extern()
def _foundry_release(data, user):
    _alive.pop(int(ffi.cast("uintptr_t", user)), None)


release_callback = lib._foundry_release

# ------------------------------------------------------------------ dtypes


class dtype:
    """A tensor element type: foundry.float32, foundry.int64, ..."""

    __slots__ = ("name", "c", "itemsize", "is_floating_point", "is_signed",
                 "np", "is_quantized", "block_size", "block_bytes")

    def __init__(self, name, c, np_name):
        self.name = name
        self.c = c
        self.itemsize = lib.tm_dtype_size(c)  # 0 for quantized dtypes
        self.is_floating_point = bool(lib.tm_dtype_is_float(c))
        self.is_signed = name not in ("uint8", "bool")
        self.np = np_name  # numpy's name, or None (bfloat16, quantized)
        # block-quantized dtypes (foundry.q4_k, ...): values per block and
        # bytes per block (1 and itemsize for dense dtypes)
        self.is_quantized = bool(lib.tm_dtype_is_quantized(c))
        self.block_size = int(lib.tm_dtype_block_elems(c))
        self.block_bytes = int(lib.tm_dtype_block_bytes(c))

    def __repr__(self):
        return "foundry." + self.name

    def __reduce__(self):
        return self.name


float32 = dtype("float32", lib.TM_F32, "float32")
float64 = dtype("float64", lib.TM_F64, "float64")
float16 = dtype("float16", lib.TM_F16, "float16")
bfloat16 = dtype("bfloat16", lib.TM_BF16, None)
int8 = dtype("int8", lib.TM_I8, "int8")
uint8 = dtype("uint8", lib.TM_U8, "uint8")
int16 = dtype("int16", lib.TM_I16, "int16")
int32 = dtype("int32", lib.TM_I32, "int32")
int64 = dtype("int64", lib.TM_I64, "int64")
bool_ = dtype("bool", lib.TM_BOOL, "bool")

DTYPES = (float32, float64, float16, bfloat16, int8, uint8, int16, int32,
          int64, bool_)
# Block-quantized dtypes (include/foundry/quantize.h): tensors of them hold
# ggml-compatible blocks; .numpy() gives those raw bytes.
q8_0 = dtype("q8_0", lib.TM_Q8_0, None)
q4_0 = dtype("q4_0", lib.TM_Q4_0, None)
q4_1 = dtype("q4_1", lib.TM_Q4_1, None)
q8_1 = dtype("q8_1", lib.TM_Q8_1, None)
q5_0 = dtype("q5_0", lib.TM_Q5_0, None)
q5_1 = dtype("q5_1", lib.TM_Q5_1, None)
q4_k = dtype("q4_k", lib.TM_Q4_K, None)
q5_k = dtype("q5_k", lib.TM_Q5_K, None)
q6_k = dtype("q6_k", lib.TM_Q6_K, None)
q8_k = dtype("q8_k", lib.TM_Q8_K, None)
QDTYPES = (q8_0, q4_0, q4_1, q8_1, q5_0, q5_1, q4_k, q5_k, q6_k, q8_k)
BY_C = {d.c: d for d in DTYPES + QDTYPES}
BY_NP = {d.np: d for d in DTYPES if d.np}

# Python owns error reporting (exceptions), so C logging stays quiet unless
# the user asks for it with FOUNDRY_LOG.
if "FOUNDRY_LOG" not in _os.environ:
    lib.tm_set_log_level(lib.TM_LOG_OFF)
