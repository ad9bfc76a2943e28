"""Package-level queries and settings: foundry.is_tensor, the thread
count, the allocator's counters."""
from ._c import ffi, lib
from ._exports import export


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


@export
def memory_stats():
    """The allocator's counters: a dict of current_bytes, peak_bytes,
    cached_bytes, allocs and frees (tm_memory_stats)."""
    s = ffi.new("tm_mem_stats *")
    lib.tm_memory_stats(s)
    return {k: getattr(s, k) for k in ("current_bytes", "peak_bytes",
                                       "cached_bytes", "allocs", "frees")}
