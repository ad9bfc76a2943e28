"""Safetensors files: save_file / load_file / safe_open with the same
signatures as the `safetensors` package, on Foundry's own reader and
writer (include/foundry/io.h).

Reading maps the file: `safe_open(...).get_tensor(name)` and
`load_file(path)` return zero-copy tensors viewing the mapping, which stay
valid after the file is closed (the mapping lives until the last tensor
cut from it is freed).  They are read-only — an in-place write raises
FoundryError; `clone()` one, or pass `copy=True`, to get writable memory.
Saving writes a temporary file and renames it over `filename`, so a crash
never leaves half a file.
"""
import os

from . import _c
from ._c import ffi, lib
from ._base import device_arg, wrap
from ._exports import export
from ._tensor import Tensor

__all__ = ["save_file", "load_file", "safe_open", "save", "load"]


def _path(filename):
    return os.fsencode(os.fspath(filename))


def _string(s, what):
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, not {type(s).__name__}")
    if "\x00" in s:
        raise ValueError(f"{what} {s!r} contains a NUL character")
    return ffi.new("char[]", s.encode("utf-8"))


@export
def save_file(tensors, filename, metadata=None, durable=True):
    """Writes a dict name -> Tensor (numpy arrays are accepted too) to
    `filename`, with optional string -> string `metadata`.  The file is
    written beside `filename` and renamed over it, so readers never see half
    a file.  durable=True (the default) also fsyncs it, so it survives power
    loss; durable=False leaves it to the page cache, as the reference
    `safetensors` writer does, and is faster by the disk's write time.
    Mirrors safetensors.torch.save_file."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict of name -> Tensor, not "
                        f"{type(tensors).__name__}")
    from ._create import as_tensor
    keep, names, ptrs = [], [], []
    for name, t in tensors.items():
        cname = _string(name, "tensor name")
        if not isinstance(t, Tensor):
            try:
                t = as_tensor(t)
            except (TypeError, ValueError) as e:
                raise TypeError(f"tensor {name!r}: {e}") from None
        t = t.detach()
        keep += [cname, t]
        names.append(cname)
        ptrs.append(t._p)
    mkeys = mvals = ffi.NULL
    nmeta = 0
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise TypeError("metadata must be a dict of str -> str")
        ks = [_string(k, "metadata key") for k in metadata]
        vs = [_string(v, f"metadata value of {k!r}")
              for k, v in metadata.items()]
        keep += ks + vs
        mkeys = ffi.new("char *[]", ks or [ffi.NULL])
        mvals = ffi.new("char *[]", vs or [ffi.NULL])
        nmeta = len(ks)
    cnames = ffi.new("char *[]", names or [ffi.NULL])
    cptrs = ffi.new("tm_tensor *[]", ptrs or [ffi.NULL])
    flags = 0 if durable else lib.TM_SAVE_NO_SYNC
    _c.check(lib.tm_safetensors_save_ex(_path(filename), cnames, cptrs,
                                        len(names), mkeys, mvals, nmeta,
                                        flags))


class safe_open:
    """A validated, memory-mapped safetensors file:

        with foundry.safe_open("model.safetensors", framework="foundry") as f:
            for name in f.keys():
                t = f.get_tensor(name)     # zero-copy, read-only
            meta = f.metadata()

    `framework` is accepted for compatibility ("pt", "np", "foundry"): the
    tensors are foundry Tensors whatever it says.  `device` is where
    get_tensor puts them: the CPU (zero-copy), or a device with a backend
    in this build (a copy); any other raises NotImplementedError.  Mirrors
    safetensors.safe_open."""

    def __init__(self, filename, framework="foundry", device="cpu"):
        self._f = ffi.NULL
        self._device = device_arg(device, "safe_open")
        f = lib.tm_safetensors_open(_path(filename))
        if not f:
            raise _c.error()
        self._f = f
        self._names = [ffi.string(lib.tm_safetensors_name(f, i)).decode()
                       for i in range(lib.tm_safetensors_count(f))]

    def _handle(self):
        if not self._f:
            raise _c.FoundryError("safe_open: the file is closed")
        return self._f

    def keys(self):
        """Tensor names, sorted (as the safetensors package lists them)."""
        self._handle()
        return sorted(self._names)

    def offset_keys(self):
        """Tensor names in file order."""
        self._handle()
        return list(self._names)

    def metadata(self):
        """The "__metadata__" dict, or None when the file has none."""
        f = self._handle()
        if not lib.tm_safetensors_has_metadata(f):
            return None
        return {ffi.string(lib.tm_safetensors_metadata_key(f, i)).decode():
                ffi.string(lib.tm_safetensors_metadata_value(f, i)).decode()
                for i in range(lib.tm_safetensors_metadata_count(f))}

    def get_tensor(self, name, copy=False):
        """Tensor `name`: a zero-copy read-only view of the mapping, or with
        copy=True a writable copy."""
        f = self._handle()
        cname = _string(name, "tensor name")
        if copy:
            t = wrap(lib.tm_safetensors_load(f, cname))
        else:
            t = wrap(lib.tm_safetensors_get(f, cname))
        return t if self._device is None else t.to(self._device)

    def get_dtype_name(self, name):
        f = self._handle()
        i = lib.tm_safetensors_find(f, _string(name, "tensor name"))
        if i < 0:
            raise _c.error()
        return ffi.string(lib.tm_safetensors_dtype_name(f, i)).decode()

    def close(self):
        if self._f:
            lib.tm_safetensors_close(self._f)
            self._f = ffi.NULL

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


@export
def load_file(filename, device="cpu", copy=False):
    """name -> Tensor for every tensor of the file, in file order
    (zero-copy and read-only unless copy=True).  Mirrors
    safetensors.torch.load_file."""
    with safe_open(filename, device=device) as f:
        return {name: f.get_tensor(name, copy=copy)
                for name in f.offset_keys()}


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding `tensors`."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.safetensors")
        save_file(tensors, p, metadata)
        with open(p, "rb") as fh:
            return fh.read()


def load(data, copy=True):
    """name -> Tensor from the bytes of a safetensors file (copies)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("load() expects bytes")
    buf = ffi.from_buffer(data)
    f = lib.tm_safetensors_open_memory(buf, len(buf))
    if not f:
        raise _c.error()
    try:
        n = lib.tm_safetensors_count(f)
        out = {}
        for i in range(n):
            name = lib.tm_safetensors_name(f, i)
            out[ffi.string(name).decode()] = wrap(
                lib.tm_safetensors_load(f, name) if copy else
                lib.tm_safetensors_get(f, name))
        return out
    finally:
        lib.tm_safetensors_close(f)
