"""foundry.Generator (a C tm_rng of its own) and the random in-place fills
uniform_ / normal_ / random_: the _RandomFills methods of Tensor.

Every function that draws random numbers takes `generator=`: None draws
from the process-wide default generator (foundry.manual_seed reseeds it),
a Generator from its own stream.  Draws advance the generator as
include/foundry/random.h documents, so a seed gives the same numbers on
every platform and for any thread count.
"""
import operator
import os
import struct
import threading

from . import _c, _tensor
from ._base import device, device_arg
from ._c import check, ffi, lib
from ._exports import export

_MASK = 0xFFFFFFFFFFFFFFFF
_STATE = struct.Struct("<QQ")  # key, counter: little-endian uint64 each


class Generator:
    """A random generator with its own stream (Philox4x32-10, the C
    library's tm_rng).

        g = foundry.Generator().manual_seed(42)
        x = foundry.randn(3, generator=g)     # the default generator is
                                              # not touched
    A new generator starts as the default one does at process start (seed
    0).  Drawing from it never moves the default generator, and two
    generators with the same seed give the same numbers.  Its state is
    (key, counter), 16 bytes (get_state / set_state).  Safe to share
    between threads (draws take a lock).  `device` (an available device)
    is recorded as the generator's device; a generator draws the same
    numbers for a tensor on any device, since every backend runs the same
    Philox stream.  Mirrors torch.Generator; the numbers differ from
    PyTorch's for the same seed."""

    __slots__ = ("_rng", "_lock", "_device", "__weakref__")

    def __init__(self, device="cpu"):
        d = device_arg(device, "Generator")
        self._device = _DEVICE_CPU if d is None else d
        self._rng = ffi.new("tm_rng *", lib.tm_rng_new(0))
        self._lock = threading.Lock()

    @property
    def device(self):
        """The device the generator was made for (foundry.device('cpu')
        by default)."""
        return self._device

    def manual_seed(self, seed):
        """Restarts the stream from `seed` (an int; taken modulo 2^64, so
        negative seeds work as in PyTorch); returns self.  Mirrors
        torch.Generator.manual_seed."""
        seed = operator.index(seed) & _MASK
        with self._lock:
            self._rng[0] = lib.tm_rng_new(seed)
        return self

    def seed(self):
        """Reseeds from os.urandom and returns the new seed.  Mirrors
        torch.Generator.seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed the stream started from (the C generator's key).
        Mirrors torch.Generator.initial_seed."""
        return self._rng.key

    def get_state(self):
        """The state as a uint8 tensor of 16 elements: the key then the
        counter, each a little-endian uint64.  set_state restores it.
        Mirrors torch.Generator.get_state (PyTorch's CPU state is the
        larger Mersenne Twister one; the two are not interchangeable)."""
        from ._create import tensor
        with self._lock:
            raw = _STATE.pack(self._rng.key, self._rng.counter)
        return tensor(list(raw), dtype=_c.uint8)

    def set_state(self, new_state):
        """Restores a state from get_state (a uint8 tensor of 16 elements;
        bytes are accepted too); returns self.  Mirrors
        torch.Generator.set_state."""
        if isinstance(new_state, _tensor.Tensor):
            if new_state.dtype is not _c.uint8:
                raise TypeError(f"set_state: the state must be a uint8 "
                                f"tensor, not {new_state.dtype.name}")
            raw = bytes(new_state.detach().contiguous().numpy().tobytes())
        elif isinstance(new_state, (bytes, bytearray)):
            raw = bytes(new_state)
        else:
            raise TypeError(f"set_state expects a uint8 tensor, not "
                            f"{type(new_state).__name__}")
        if len(raw) != _STATE.size:
            raise ValueError(f"set_state: a state has {_STATE.size} bytes, "
                             f"not {len(raw)}")
        key, counter = _STATE.unpack(raw)
        with self._lock:
            self._rng.key, self._rng.counter = key, counter
        return self

    def __repr__(self):
        return f"<foundry.Generator seed={self.initial_seed()}>"


_DEVICE_CPU = device("cpu")


def with_rng(generator, call):
    """call(rng) with the C state of `generator` (NULL for None: the default
    generator, which the library locks itself); a Generator's lock is held
    for the call."""
    if generator is None:
        return call(ffi.NULL)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a foundry.Generator, not "
                        f"{type(generator).__name__}")
    with generator._lock:
        return call(generator._rng)


def int_bounds(low, high, fn):
    """(low, high) as ints that fit C's int64_t (ValueError otherwise; the
    library itself takes integers within +-2^53)."""
    low, high = operator.index(low), operator.index(high)
    if not -2 ** 63 <= low < 2 ** 63 or not -2 ** 63 <= high < 2 ** 63:
        raise ValueError(f"{fn}: the range [{low}, {high}) does not fit in "
                         f"int64 (the library draws integers within "
                         f"+-2^53)")
    return low, high


def _random_high(t):
    """random_()'s default upper bound (exclusive): 2^mantissa + 1 for
    floats, the largest value + 1 for integers, as PyTorch."""
    dt = t.dtype
    bits = {"float32": 24, "float64": 53, "float16": 11, "bfloat16": 8}
    if dt.name in bits:
        return 2 ** bits[dt.name] + 1
    if dt is _c.bool_:
        return 2
    import numpy as np
    return int(np.iinfo(dt.np).max) + 1


class _RandomFills:
    """In-place random fills."""

    __slots__ = ()

    def uniform_(self, a=0.0, b=1.0, generator=None):
        """Fills self with uniform numbers in [a, b); returns self.

        Float dtypes; a <= b, both finite.  Drawn from `generator` (None:
        the default generator).  Mirrors torch.Tensor.uniform_ (from, to)."""
        p = self._p
        with_rng(generator, lambda r: check(lib.tm_uniform_(p, a, b, r)))
        return self

    def normal_(self, mean=0.0, std=1.0, generator=None):
        """Fills self with normal numbers of mean and std (>= 0); returns
        self.

        Float dtypes.  Drawn from `generator` (None: the default
        generator).  Mirrors torch.Tensor.normal_."""
        p = self._p
        with_rng(generator, lambda r: check(lib.tm_normal_(p, mean, std, r)))
        return self

    def random_(self, from_=None, to=None, *, generator=None):
        """Fills self with integers drawn uniformly; returns self.

        random_(from_, to): in [from_, to); random_(to): in [0, to);
        random_(): in [0, 2^mantissa] for floats, [0, the largest value]
        for integers.  The dtype must hold every integer of the range and
        the bounds be within +-2^53 (so random_() of an int64 tensor is an
        error).  Drawn from `generator` (None: the default generator).
        Mirrors torch.Tensor.random_."""
        if to is None:
            low, high = 0, (_random_high(self) if from_ is None else from_)
        else:
            low, high = (0 if from_ is None else from_), to
        low, high = int_bounds(low, high, "random_")
        p = self._p
        with_rng(generator, lambda r: check(lib.tm_randint_(p, low, high, r)))
        return self


@export
def manual_seed(seed):
    """Reseeds the default generator (rand, randn, dropout, init, ... when
    no generator= is given) with seed modulo 2^64.  Mirrors
    torch.manual_seed (which also returns the default generator; Foundry
    returns None)."""
    seed = operator.index(seed)
    lib.tm_manual_seed(seed & _MASK)
