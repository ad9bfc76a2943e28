"""Package-level queries and settings: foundry.is_tensor, the thread
count, devices (counts, availability, synchronization) and the
allocators' counters."""
from . import _c
from ._base import DEVICE_TYPES, as_device, device, unavailable
from ._c import ffi, lib
from ._exports import export

_STATS = ("current_bytes", "peak_bytes", "cached_bytes", "allocs", "frees")


@export
def is_tensor(obj):
    """True when obj is a foundry.Tensor (a Parameter included).  Mirrors
    torch.is_tensor."""
    from ._tensor import Tensor
    return isinstance(obj, Tensor)


@export
def get_num_threads():
    """The number of threads large ops use.  Mirrors
    torch.get_num_threads."""
    return lib.tm_get_num_threads()


@export
def set_num_threads(n):
    """Sets the number of threads large ops use (n <= 0: the default, all
    CPUs).  Mirrors torch.set_num_threads."""
    lib.tm_set_num_threads(n)


def _type_arg(type):
    """The C device type of a type name ("cuda"), a device string
    ("cuda:1": its type) or a device."""
    if isinstance(type, device):
        return DEVICE_TYPES[type.type]
    if isinstance(type, str):
        return DEVICE_TYPES[device(type).type]
    raise TypeError(f"expected a device type such as 'cuda', not "
                    f"{type.__class__.__name__}")


@export
def device_count(type):
    """How many devices of `type` ("cuda", "metal", "test"; or a device,
    whose type is used) this process can use: 0 when the type's backend
    is not loaded, 1 for "cpu".  Mirrors torch.cuda.device_count (for
    any type)."""
    return lib.tm_device_count(_type_arg(type))


@export
def is_available(device="cuda"):
    """True when `device` (a device, a string or an int; a bare type
    means its index 0) has a backend in this process and opens.  Mirrors
    torch.cuda.is_available (for any device)."""
    ok = bool(lib.tm_device_available(as_device(device).c))
    lib.tm_clear_error()  # a device that is not there is no failure here
    return ok


def _accelerators():
    """Every device of every type whose backend is loaded, the CPU left
    out."""
    for name, t in DEVICE_TYPES.items():
        if name != "cpu":
            for i in range(lib.tm_device_count(t)):
                yield device(name, i)


@export
def synchronize(device=None):
    """Waits until the work queued on `device` has finished, then raises
    the first error that work hit (an index out of range found by a
    kernel, ...) since the last synchronization.  None: every device whose
    backend is loaded (which opens those not used yet).  The CPU runs
    work as it is called, so synchronizing it does nothing.  Mirrors
    torch.cuda.synchronize."""
    devs = _accelerators() if device is None else [as_device(device)]
    for d in devs:
        _c.check(lib.tm_synchronize(d.c))


def _available(device, what):
    d = as_device(device)
    if d.type != "cpu" and not lib.tm_device_available(d.c):
        raise unavailable(d, what)
    return d


@export
def memory_stats(device=None):
    """The memory counters of `device` (None: the CPU, whose counters
    are the host allocator's): a dict of current_bytes, peak_bytes,
    cached_bytes (freed blocks kept for reuse), allocs and frees
    (tm_device_memory_stats).  Mirrors torch.cuda.memory_stats, with
    Foundry's counter names."""
    d = _available(device, "memory_stats")
    s = ffi.new("tm_mem_stats *")
    _c.check(lib.tm_device_memory_stats(d.c, s))
    return {k: getattr(s, k) for k in _STATS}


@export
def empty_cache(device=None):
    """Returns the blocks `device` (None: the CPU) keeps cached for reuse
    to its backend (the system, for the CPU).  Tensors still alive keep
    their memory.  Mirrors torch.cuda.empty_cache."""
    _c.check(lib.tm_device_empty_cache(_available(device, "empty_cache").c))


@export
def set_cache_limit(nbytes, device=None):
    """Caps the bytes of freed blocks `device` (None: the CPU) keeps
    cached for reuse; blocks beyond the cap go back at once.  The defaults
    are 256 MiB for the CPU and 1 GiB for an accelerator.  Foundry's own:
    torch has no counterpart."""
    if nbytes < 0:
        raise ValueError(f"set_cache_limit: {nbytes} bytes is negative")
    d = _available(device, "set_cache_limit")
    _c.check(lib.tm_device_set_cache_limit(d.c, int(nbytes)))
