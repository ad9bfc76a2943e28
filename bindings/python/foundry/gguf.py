"""GGUF files (versions 2 and 3) on Foundry's reader and writer
(include/foundry/gguf.h).

    g = foundry.gguf.load("model.gguf")
    g.tensors["token_embd.weight"]    # zero-copy, read-only Tensor
    g.metadata["general.architecture"]
    foundry.gguf.save("out.gguf", {"w": w}, {"general.name": "x"})

Reading maps the file and validates all of it first.  Tensors view the
mapping (quantized ones are quantized Tensors whose .numpy() is the raw
blocks) and stay valid after the file object is gone; they are read-only:
clone() one for writable memory.  Shapes run outermost first, the reverse
of GGUF's dims.

Metadata values come back as Python values: integers and bools as int /
bool, floats as float, strings as str (bytes when not valid UTF-8),
arrays of numbers as 1-d numpy arrays of the element type (uint8 ..
float64, bool), arrays of strings or of arrays as lists.  `g.types` gives
each key's GGUF type name ("uint32", "array[float32]",
"array[array]"), and `g.value(key)` the value as a `Value` carrying its
type, so a file can be re-saved with the same types.

Saving: a `Value(v, "uint32")` is written as that type; otherwise bool ->
BOOL, int -> INT32 when it fits (the gguf package's rule), else INT64,
else UINT64; float -> FLOAT32 (the gguf package's default); str / bytes ->
STRING; numpy scalars and arrays -> their dtype; lists -> ARRAY of one
element type (ints: the smallest of INT32 / INT64 / UINT64 holding them
all; nested lists are arrays of arrays).
"""
import os
import struct

import numpy as np

from . import _c
from ._c import ffi, lib
from ._base import wrap
from ._tensor import Tensor

__all__ = ["load", "save", "Value", "GGUFFile", "TYPES"]

# GGUF value type names, by number.
TYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
         "bool", "string", "array", "uint64", "int64", "float64"]
_NP = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4",
       6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}
_OF_NP = {np.dtype(v): k for k, v in _NP.items()}
_RANGE = {0: (0, 2**8 - 1), 1: (-2**7, 2**7 - 1), 2: (0, 2**16 - 1),
          3: (-2**15, 2**15 - 1), 4: (0, 2**32 - 1), 5: (-2**31, 2**31 - 1),
          10: (0, 2**64 - 1), 11: (-2**63, 2**63 - 1)}


class Value:
    """A metadata value with an explicit GGUF type: Value(7, "uint32"),
    Value([1, 2], "array[uint16]"), Value([[1], [2]], "array[array]")
    (inner arrays by the default rule, or Values themselves)."""

    def __init__(self, value, type):
        if not isinstance(type, str):
            raise TypeError(f"type must be a str such as 'uint32', not "
                            f"{type.__class__.__name__}")
        base, _, elem = type.partition("[")
        if base not in TYPES or (elem and (base != "array" or
                                           elem[:-1] not in TYPES or
                                           not elem.endswith("]"))):
            raise ValueError(f"unknown GGUF value type {type!r} (one of "
                             f"{', '.join(TYPES)}, or 'array[<type>]')")
        self.value = value
        self.type = type

    def __repr__(self):
        return f"Value({self.value!r}, {self.type!r})"

    def __eq__(self, other):
        if not isinstance(other, Value):
            return NotImplemented
        a, b = self.value, other.value
        same = (np.array_equal(a, b) if isinstance(a, np.ndarray) or
                isinstance(b, np.ndarray) else a == b)
        return self.type == other.type and bool(same)


# -------------------------------------------------------------- reading


def _string(v):
    n = ffi.new("size_t *")
    p = lib.tm_gguf_value_str(v, n)
    if p == ffi.NULL:
        raise _c.error()
    b = ffi.unpack(p, n[0])
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _scalar(v, t):
    if t in (6, 12):
        out = ffi.new("double *")
        _c.check(lib.tm_gguf_value_f64(v, out))
        return out[0]
    if t in (1, 3, 5, 11):
        out = ffi.new("int64_t *")
        _c.check(lib.tm_gguf_value_i64(v, out))
        return out[0]
    out = ffi.new("uint64_t *")
    _c.check(lib.tm_gguf_value_u64(v, out))
    return bool(out[0]) if t == 7 else out[0]


def _py(v):
    """(Python value, type name) of a C value."""
    t = lib.tm_gguf_value_type(v)
    if t == lib.TM_GGUF_STRING:
        return _string(v), "string"
    if t != lib.TM_GGUF_ARRAY:
        return _scalar(v, t), TYPES[t]
    et = lib.tm_gguf_array_type(v)
    n = lib.tm_gguf_array_len(v)
    tname = f"array[{TYPES[et]}]"
    if et in _NP:
        dt = np.dtype(_NP[et])
        if n == 0:
            return np.zeros(0, dt), tname
        raw = ffi.buffer(lib.tm_gguf_array_data(v), n * dt.itemsize)
        return np.frombuffer(bytes(raw), dt), tname
    return [_py(lib.tm_gguf_array_get(v, j))[0] for j in range(n)], tname


def _typed(v):
    """The C value as a Value (inner arrays as Values too)."""
    t = lib.tm_gguf_value_type(v)
    if t == lib.TM_GGUF_ARRAY and lib.tm_gguf_array_type(v) == 9:
        n = lib.tm_gguf_array_len(v)
        return Value([_typed(lib.tm_gguf_array_get(v, j)) for j in range(n)],
                     "array[array]")
    return Value(*_py(v))


class GGUFFile:
    """A loaded GGUF file: .tensors (name -> Tensor, file order),
    .metadata (key -> Python value, file order), .types (key -> GGUF type
    name), .version, .alignment, .data_offset, .tensor_types (name ->
    ggml type name, also for types Foundry cannot compute with, whose
    tensors are left out of .tensors), and .value(key) (a typed Value)."""

    def __init__(self, path):
        g = lib.tm_gguf_open(os.fsencode(os.fspath(path)))
        if not g:
            raise _c.error()
        self._g = ffi.gc(g, lib.tm_gguf_close)
        self.path = os.fspath(path)
        self.version = lib.tm_gguf_version(g)
        self.alignment = lib.tm_gguf_alignment(g)
        self.data_offset = lib.tm_gguf_data_offset(g)
        self.metadata, self.types = {}, {}
        for i in range(lib.tm_gguf_n_kv(g)):
            key = ffi.string(lib.tm_gguf_key(g, i)).decode("utf-8")
            self.metadata[key], self.types[key] = _py(
                lib.tm_gguf_kv_value(g, i))
        self.tensors, self.tensor_types = {}, {}
        info = ffi.new("tm_gguf_tensor_info *")
        for i in range(lib.tm_gguf_n_tensors(g)):
            _c.check(lib.tm_gguf_tensor_info_at(g, i, info))
            name = ffi.string(info.name).decode("utf-8")
            self.tensor_types[name] = _ggml_name(info.ggml_type)
            if lib.tm_dtype_of_gguf_type(info.ggml_type) < 0:
                continue
            self.tensors[name] = wrap(lib.tm_gguf_tensor(g, i))

    def value(self, key):
        """Metadata `key` as a Value with its GGUF type."""
        i = lib.tm_gguf_find_key(self._g, key.encode("utf-8"))
        if i < 0:
            raise KeyError(key)
        return _typed(lib.tm_gguf_kv_value(self._g, i))

    def __repr__(self):
        return (f"GGUFFile({self.path!r}, version {self.version}, "
                f"{len(self.metadata)} keys, {len(self.tensor_types)} "
                f"tensors)")


_GGML_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1",
    8: "Q8_0", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K",
    14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
    19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS",
    24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M",
    30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4",
    41: "Q1_0"}


def _ggml_name(t):
    return _GGML_NAMES.get(t, str(t))


def load(path):
    """Opens, validates and maps a GGUF file: a GGUFFile."""
    return GGUFFile(path)


# -------------------------------------------------------------- writing


def _int_type(values, what):
    lo, hi = min(values), max(values)
    for t in (5, 11, 10):
        if _RANGE[t][0] <= lo and hi <= _RANGE[t][1]:
            return t
    raise OverflowError(f"{what}: integer {lo if lo < 0 else hi} fits no "
                        f"GGUF integer type")


def _infer(v, what):
    """(type number, element type or None) by the default rule."""
    if isinstance(v, Value):
        base, _, elem = v.type.partition("[")
        return TYPES.index(base), (TYPES.index(elem[:-1]) if elem else None)
    if isinstance(v, (bool, np.bool_)):
        return 7, None
    if isinstance(v, np.generic):
        if v.dtype not in _OF_NP:
            raise TypeError(f"{what}: numpy {v.dtype} has no GGUF type")
        return _OF_NP[v.dtype], None
    if isinstance(v, int):
        return _int_type([v], what), None
    if isinstance(v, float):
        return 6, None
    if isinstance(v, (str, bytes, bytearray)):
        return 8, None
    if isinstance(v, np.ndarray):
        if v.ndim != 1 or v.dtype.newbyteorder("<") not in _OF_NP:
            raise TypeError(f"{what}: numpy arrays must be 1-d of a numeric "
                            f"or bool dtype, not {v.dtype}{list(v.shape)}")
        return 9, _OF_NP[v.dtype.newbyteorder("<")]
    if isinstance(v, (list, tuple)):
        if all(isinstance(e, (bool, np.bool_)) for e in v) and v:
            return 9, 7
        if v and all(isinstance(e, int) and not isinstance(e, bool)
                     for e in v):
            return 9, _int_type(v, what)
        types = {_infer(e, what)[0] for e in v}
        if len(types) > 1:
            raise TypeError(f"{what}: array elements of mixed types "
                            f"({', '.join(TYPES[t] for t in sorted(types))})")
        return 9, (types.pop() if types else 5)
    raise TypeError(f"{what}: {type(v).__name__} has no GGUF type (wrap it "
                    f"in foundry.gguf.Value(v, 'uint32') etc.)")


def _put(w, key, v, what):
    """Writes v under key into the C writer w."""
    t, et = _infer(v, what)
    raw = v.value if isinstance(v, Value) else v
    ck = key.encode("utf-8")
    if t == 8:
        b = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        return _c.check(lib.tm_gguf_set_str(w, ck, b, len(b)))
    if t != 9:
        return _scalar_put(w, ck, t, raw, what)
    if et is None:
        _, et = _infer(list(raw), what)
    if et in _NP:
        arr = np.ascontiguousarray(raw, dtype=np.dtype(_NP[et]))
        if arr.ndim != 1:
            raise ValueError(f"{what}: array must be 1-d")
        if et in _RANGE and not isinstance(raw, np.ndarray) and len(raw):
            lo, hi = _RANGE[et]
            if min(raw) < lo or max(raw) > hi:
                raise OverflowError(f"{what}: values out of {TYPES[et]}")
        return _c.check(lib.tm_gguf_set_array(
            w, ck, et, ffi.from_buffer(arr) if arr.size else ffi.NULL,
            arr.size))
    if et == 8:
        keep = [ffi.new("char[]", s.encode("utf-8") if isinstance(s, str)
                        else bytes(s)) for s in raw]
        for s in raw:
            if "\0" in (s if isinstance(s, str) else s.decode("latin-1")):
                raise ValueError(f"{what}: strings in arrays cannot hold NUL")
        arr = ffi.new("char *[]", keep or [ffi.NULL])
        return _c.check(lib.tm_gguf_set_str_array(w, ck, arr, len(keep)))
    # arrays of arrays: packed here as a one-key GGUF image, read back by
    # the C reader (which validates it) and copied into the writer
    image = (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _pack_str(b"v") +
             struct.pack("<I", 9) + _pack(raw, 9, et, what))
    buf = ffi.from_buffer(image)
    g = lib.tm_gguf_open_memory(buf, len(image))
    if not g:
        raise _c.error()
    try:
        return _c.check(lib.tm_gguf_set_value(w, ck, lib.tm_gguf_get(g, b"v")))
    finally:
        lib.tm_gguf_close(g)


def _pack_str(b):
    return struct.pack("<Q", len(b)) + b


def _pack(v, t, et, what):
    """GGUF bytes of value v of type t (arrays: element type et), without
    the leading type tag."""
    raw = v.value if isinstance(v, Value) else v
    if t == 8:
        return _pack_str(raw.encode("utf-8") if isinstance(raw, str)
                         else bytes(raw))
    if t in _NP:
        if t not in (6, 12, 7):
            lo, hi = _RANGE[t]
            if not lo <= int(raw) <= hi:
                raise OverflowError(f"{what}: {raw} does not fit in "
                                    f"{TYPES[t]}")
        return np.array(raw, dtype=np.dtype(_NP[t])).tobytes()
    if et is None:
        _, et = _infer(list(raw), what)
    out = struct.pack("<IQ", et, len(raw))
    for j, e in enumerate(raw):
        t2, et2 = _infer(e, f"{what}[{j}]")
        if t2 != et and not (et in _RANGE and t2 in _RANGE):
            raise TypeError(f"{what}[{j}]: a {TYPES[t2]} in an array of "
                            f"{TYPES[et]}")
        out += _pack(e, et, et2, f"{what}[{j}]")
    return out


def _scalar_put(w, ck, t, raw, what):
    if t in (6, 12):
        f = lib.tm_gguf_set_f32 if t == 6 else lib.tm_gguf_set_f64
        return _c.check(f(w, ck, float(raw)))
    if t == 7:
        return _c.check(lib.tm_gguf_set_bool(w, ck, bool(raw)))
    v = int(raw)
    lo, hi = _RANGE[t]
    if not lo <= v <= hi:
        raise OverflowError(f"{what}: {v} does not fit in {TYPES[t]}")
    fn = {0: lib.tm_gguf_set_u8, 1: lib.tm_gguf_set_i8,
          2: lib.tm_gguf_set_u16, 3: lib.tm_gguf_set_i16,
          4: lib.tm_gguf_set_u32, 5: lib.tm_gguf_set_i32,
          10: lib.tm_gguf_set_u64, 11: lib.tm_gguf_set_i64}[t]
    return _c.check(fn(w, ck, v))


def save(path, tensors, metadata=None, alignment=None):
    """Writes `tensors` (dict name -> Tensor, any dtype GGUF has, quantized
    included; numpy arrays accepted) and `metadata` (dict key -> value, by
    the rule in this module's docstring) to the GGUF file `path` (version
    3; written beside it and renamed over it).  `alignment` (a power of
    two) sets general.alignment; by default 32, unless metadata sets it."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict of name -> Tensor, not "
                        f"{type(tensors).__name__}")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise TypeError("metadata must be a dict of key -> value")
    w = lib.tm_gguf_writer_new()
    if not w:
        raise _c.error()
    w = ffi.gc(w, lib.tm_gguf_writer_free)
    if alignment is not None:
        _c.check(lib.tm_gguf_writer_set_alignment(w, alignment))
    for key, v in metadata.items():
        if not isinstance(key, str):
            raise TypeError(f"metadata key {key!r} is not a str")
        if key == "general.alignment" and not isinstance(v, Value):
            v = Value(v, "uint32")
        _put(w, key, v, f"metadata {key!r}")
    from ._create import as_tensor
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor name {name!r} is not a str")
        if not isinstance(t, Tensor):
            t = as_tensor(t)
        # the detached tensor must outlive the call (the writer retains it)
        d = t.detach()
        _c.check(lib.tm_gguf_writer_add_tensor(w, name.encode("utf-8"),
                                               d._p))
    _c.check(lib.tm_gguf_writer_write(w, os.fsencode(os.fspath(path))))
