"""foundry.swarm: data-parallel training across processes and machines.

Wrap an optimizer, Horovod's way, and every step() averages the gradients
of all the workers (TopK with error feedback by default) before updating:

    opt = foundry.optim.AdamW(model.parameters(), lr=3e-4)
    opt = foundry.swarm.DistributedOptimizer(
        opt, connect="10.0.0.1:5000", key_file="swarm.key", topk=0.01)
    for x, y in batches:               # each worker its own batches
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    opt.close()

The first worker's parameters become the swarm's; later ones receive the
current parameters and optimizer state when they join.  The coordinator
runs as `foundry swarm coordinator` or, in Python, as Coordinator (below).
Traffic is authenticated with the pre-shared key (HMAC-SHA256 on every
frame), encrypted with encrypt=True, and unauthenticated only with an
explicit insecure=True.  The C library (include/foundry/swarm.h) does the
work; docs/swarm-protocol.md is the wire format.
"""
import threading
import warnings

from . import _c
from ._c import ffi, lib

__all__ = ["DistributedOptimizer", "Coordinator", "topk"]

_MODES = {"topk": lib.TM_SWARM_TOPK, "dense": lib.TM_SWARM_DENSE,
          "diloco": lib.TM_SWARM_DILOCO}


def _key_bytes(key, key_file, insecure):
    if insecure:
        if key is not None or key_file is not None:
            raise ValueError("insecure=True excludes key and key_file")
        warnings.warn("foundry.swarm: insecure: the swarm is not "
                      "authenticated; anyone who can reach the port can join",
                      RuntimeWarning, stacklevel=3)
        return None
    if (key is None) == (key_file is None):
        raise ValueError("give one of key= or key_file= (or insecure=True)")
    if key_file is not None:
        with open(key_file, "rb") as f:
            key = f.read()
        # one trailing newline is not part of the key, as in the CLI
        if key.endswith(b"\n"):
            key = key[:-1]
        if key.endswith(b"\r"):
            key = key[:-1]
    if isinstance(key, str):
        key = key.encode()
    if len(key) < 16:
        raise ValueError(f"the key is {len(key)} bytes; it needs at least 16")
    return bytes(key)


def _opts(key, insecure, encrypt, keep, **fields):
    """A tm_swarm_opts with the defaults and the given fields; `keep`
    collects the cffi buffers that must live as long as the call."""
    o = ffi.new("tm_swarm_opts *", lib.tm_swarm_defaults())
    if key is not None:
        kb = ffi.new("uint8_t[]", key)
        keep.append(kb)
        o.key, o.key_len = kb, len(key)
    o.insecure = bool(insecure)
    o.encrypt = bool(encrypt)
    for name, v in fields.items():
        if v is None:
            continue
        if isinstance(v, str):
            v = ffi.new("char[]", v.encode())
            keep.append(v)
        setattr(o, name, v)
    return o


def _wipe(o, keep):
    """Zeroes the C copy of the key (the library keeps its own)."""
    if o.key != ffi.NULL:
        ffi.memmove(keep[0], b"\0" * o.key_len, o.key_len)
        o.key = ffi.NULL


def topk(x, k):
    """(values, indices) of the k entries of x largest in magnitude, read
    flat; indices ascending (ties to the lower position), values signed."""
    from ._base import wrap
    ip = ffi.new("tm_tensor **")
    vp = ffi.new("tm_tensor **")
    _c.check(lib.tm_swarm_topk(x._p, int(k), ip, vp))
    return wrap(vp[0]), wrap(ip[0])


class _Closing:
    """close() on garbage collection and at the end of a with block."""

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class DistributedOptimizer(_Closing):
    """An optimizer whose step() first averages the gradients across the
    swarm (mode "topk" or "dense"), or which in mode "diloco" takes
    local_steps steps alone and then averages the parameter change.

    connect: "HOST:PORT" of the coordinator.  key / key_file: the
    pre-shared key (>= 16 bytes).  mpi=True instead: the ranks of this MPI
    job are the swarm (builds with make MPI=1), no connect or key.  topk: the fraction of each gradient sent
    per step.  The other arguments are tm_swarm_opts' fields.  Everything
    else (param_groups, zero_grad, state_dict, ...) is the wrapped
    optimizer's.  Do not move the parameters (Module.to) after wrapping.
    """

    def __init__(self, optimizer, connect=None, key=None, key_file=None, *,
                 mpi=False, encrypt=False, insecure=False, mode="topk", topk=0.01,
                 warmup_rounds=0, momentum_correction=0.0, clip_norm=0.0,
                 values_f16=False, local_steps=50, diloco_topk=False,
                 lookahead=0.0, outer_lr=0.7,
                 outer_momentum=0.9, heartbeat_ms=None, peer_timeout_ms=None,
                 reconnect_ms=None, name="worker"):
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {sorted(_MODES)}, "
                             f"not {mode!r}")
        if mpi:
            if connect is not None or key is not None or key_file is not None:
                raise ValueError("mpi=True excludes connect, key and key_file")
            host, port, insecure = None, "0", False
        else:
            host, sep, port = str(connect).rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"connect must be 'HOST:PORT', not {connect!r}")
        self.optimizer = optimizer
        optimizer._sync()
        self._c_opt = optimizer._opt
        keep = []
        o = _opts(None if mpi else _key_bytes(key, key_file, insecure),
                  insecure, encrypt, keep, host=host, port=int(port),
                  mpi=bool(mpi), mode=_MODES[mode],
                  topk_ratio=float(topk), warmup_rounds=int(warmup_rounds),
                  momentum_correction=float(momentum_correction),
                  clip_norm=float(clip_norm), values_f16=int(values_f16),
                  local_steps=int(local_steps), diloco_topk=bool(diloco_topk),
                  lookahead=float(lookahead), outer_lr=float(outer_lr),
                  outer_momentum=float(outer_momentum),
                  heartbeat_ms=heartbeat_ms, peer_timeout_ms=peer_timeout_ms,
                  reconnect_ms=reconnect_ms, name=name)
        ps = lib.tm_params_new()
        if not ps:
            raise _c.error()
        self._ps = ffi.gc(ps, lib.tm_params_free)
        # every worker names the parameters alike: by their position
        for i, p in enumerate(optimizer._params()):
            _c.check(lib.tm_params_add(self._ps, str(i).encode(), p._p,
                                       False))
        sw = lib.tm_swarm_join(o, self._ps, self._c_opt)
        _wipe(o, keep)
        if not sw:
            raise _c.error()
        self._sw = sw

    def step(self, closure=None):
        """One round: averages, then the wrapped optimizer's update."""
        if self._sw is None:
            raise RuntimeError("the DistributedOptimizer is closed")
        loss = None
        if closure is not None:
            from ._grad import enable_grad
            with enable_grad():
                loss = closure()
        self.optimizer._sync()
        if self.optimizer._opt != self._c_opt:
            raise RuntimeError("the parameters were moved after wrapping "
                               "the optimizer; wrap it after moving them")
        _c.check(lib.tm_swarm_step(self._sw))
        return loss

    def send_all_next(self):
        """The next step sends everything TopK's error feedback holds back
        (about a dense round): call it before the last step."""
        lib.tm_swarm_send_all_next(self._sw)

    @property
    def rank(self):
        """This worker's id in the swarm (from 1)."""
        return lib.tm_swarm_rank(self._sw)

    @property
    def world_size(self):
        """The workers whose updates made the last round."""
        return lib.tm_swarm_world(self._sw)

    @property
    def round(self):
        return lib.tm_swarm_round(self._sw)

    @property
    def resynced(self):
        """True when the last step replaced the state (a lost round)."""
        return bool(lib.tm_swarm_resynced(self._sw))

    def bytes(self):
        """(sent, received) bytes on the wire so far."""
        s = ffi.new("uint64_t *")
        r = ffi.new("uint64_t *")
        lib.tm_swarm_bytes(self._sw, s, r)
        return int(s[0]), int(r[0])

    def close(self):
        """Leaves the swarm (also on garbage collection)."""
        if getattr(self, "_sw", None) is not None:
            lib.tm_swarm_leave(self._sw)
            self._sw = None

    def __getattr__(self, name):
        if name in ("optimizer", "_sw"):
            raise AttributeError(name)
        return getattr(self.optimizer, name)


class Coordinator(_Closing):
    """A coordinator in this process: Coordinator(port=0, key=...) binds
    at once (.port is the port), start() serves from a thread (run()
    serves in this one, the GIL released), stop() ends it, close() frees.
    """

    def __init__(self, port=0, key=None, key_file=None, *, encrypt=False,
                 insecure=False, round_deadline_ms=None, heartbeat_ms=None,
                 peer_timeout_ms=None, norm_bound=None, checkpoint_dir=None,
                 checkpoint_every=None, max_rounds=None):
        keep = []
        o = _opts(_key_bytes(key, key_file, insecure), insecure, encrypt,
                  keep, port=int(port), round_deadline_ms=round_deadline_ms,
                  heartbeat_ms=heartbeat_ms, peer_timeout_ms=peer_timeout_ms,
                  norm_bound=norm_bound, checkpoint_dir=checkpoint_dir,
                  checkpoint_every=checkpoint_every, max_rounds=max_rounds)
        co = lib.tm_swarm_coordinator_new(o)
        _wipe(o, keep)
        if not co:
            raise _c.error()
        self._co = co
        self._thread = None
        self.port = lib.tm_swarm_coordinator_port(co)

    def run(self):
        _c.check(lib.tm_swarm_coordinator_run(self._co))

    def start(self):
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        lib.tm_swarm_coordinator_stop(self._co)
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def round(self):
        return lib.tm_swarm_coordinator_round(self._co)

    def stats(self):
        """Counters: rounds, workers_live, joins, refused, dropped_updates,
        closed_peers, bytes_in, bytes_out."""
        s = ffi.new("tm_swarm_stats *")
        lib.tm_swarm_coordinator_stats(self._co, s)
        return {k: int(getattr(s, k)) for k in (
            "rounds", "workers_live", "joins", "refused", "dropped_updates",
            "closed_peers", "bytes_in", "bytes_out")}

    def close(self):
        if getattr(self, "_co", None) is not None:
            self.stop()
            lib.tm_swarm_coordinator_free(self._co)
            self._co = None
