"""foundry.nn.Module and Parameter.

A Module is a plain Python object: its parameters are the Parameter
objects reachable from its attributes, through sub-modules and through
lists, tuples and dicts of them (found by walking, not by registration, so
`self.blocks = [Linear(4, 4) for _ in range(3)]` just works).  Names are
dotted paths in attribute order: "fc1.weight", "blocks.0.bias",
"heads.key.weight".
"""
import collections

from .. import _c
from .._c import lib
from .._grad import no_grad
from .._tensor import Tensor


def _to_args(args, kwargs):
    """(device or None, dtype or None) of Module.to's arguments."""
    from .._base import device as _device, to_dtype
    from .._convert import _is_device
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to(): unexpected arguments {sorted(kwargs)}")
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments, "
                        f"{len(args)} given")
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a.device, a.dtype
        elif _is_device(a):
            dev = a
        elif a is not None:
            dt = a
    if dev is not None and not isinstance(dev, _device):
        dev = _device(dev)
    if dt is not None:
        dt = to_dtype(dt)
        if not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts float dtypes, not "
                            f"{dt!r}")
    return dev, dt


class Parameter(Tensor):
    """A tensor that is a module parameter: a leaf that requires grad
    (unless requires_grad=False), sharing `data`'s storage."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._create import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, not "
                            f"{type(data).__name__}")
        p = lib.tm_detach(data._p)
        if not p:
            raise _c.error()
        t = object.__new__(cls)
        t._p = p
        if requires_grad:
            t.requires_grad_(True)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        p = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach().clone(), self.requires_grad))


IncompatibleKeys = collections.namedtuple("IncompatibleKeys",
                                          ["missing_keys",
                                           "unexpected_keys"])


def _children(value, prefix):
    """(name, object) pairs of modules / parameters / buffers inside one
    attribute value (lists, tuples and dicts are walked)."""
    if isinstance(value, (Module, Tensor)):
        yield prefix, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _children(v, f"{prefix}.{i}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _children(v, f"{prefix}.{k}")


class Module:
    """Base class of every layer and model: subclass it and define
    forward(); calling the module calls forward."""

    training = True

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_buffers", {})

    # ------------------------------------------------------------- walk
    def _items(self):
        """Direct (name, value) pairs of parameters, buffers and modules."""
        for name, value in vars(self).items():
            if name.startswith("_") and name != "_buffers":
                continue
            if name == "_buffers":
                for bname, b in value.items():
                    if b is not None:
                        yield bname, b
                continue
            yield from _children(value, name)

    def named_children(self):
        seen = set()
        for name, v in self._items():
            if isinstance(v, Module) and id(v) not in seen:
                seen.add(id(v))
                yield name, v

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self.named_children():
            yield from m.named_modules(memo, f"{prefix}.{name}" if prefix
                                       else name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_parameters(self, prefix="", recurse=True):
        seen = set()
        for mprefix, m in (self.named_modules() if recurse
                           else [("", self)]):
            for name, v in m._items():
                if isinstance(v, Parameter) and id(v) not in seen:
                    seen.add(id(v))
                    full = f"{mprefix}.{name}" if mprefix else name
                    yield (f"{prefix}.{full}" if prefix else full), v

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that is state but not a parameter (running stats, masks);
        it appears in state_dict when persistent."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"buffer {name!r} must be a Tensor or None")
        self._buffers[name] = tensor
        if not persistent:
            self.__dict__.setdefault("_nonpersistent", set()).add(name)

    def __getattr__(self, name):
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            return buffers[name]
        raise AttributeError(f"'{type(self).__name__}' object has no "
                             f"attribute '{name}'")

    def __setattr__(self, name, value):
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers and (
                value is None or isinstance(value, Tensor)) and \
                not isinstance(value, Parameter):
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def named_buffers(self, prefix=""):
        for mprefix, m in self.named_modules():
            for name, b in m.__dict__.get("_buffers", {}).items():
                if b is not None:
                    full = f"{mprefix}.{name}" if mprefix else name
                    yield (f"{prefix}.{full}" if prefix else full), b

    def buffers(self):
        return (b for _, b in self.named_buffers())

    # ------------------------------------------------------ state dicts
    def state_dict(self, prefix="", keep_vars=False):
        """An ordered name -> tensor dict of parameters and persistent
        buffers (detached views sharing memory, as in PyTorch)."""
        out = collections.OrderedDict()
        seen = set()
        # PyTorch's order: each module (pre-order) with its own parameters,
        # then its own persistent buffers.
        for mprefix, m in self.named_modules():
            skip = m.__dict__.get("_nonpersistent", set())
            own = [(n, v) for n, v in m._items()
                   if isinstance(v, Parameter)]
            own += [(n, b) for n, b in m.__dict__.get("_buffers", {}).items()
                    if b is not None and n not in skip]
            for name, v in own:
                if id(v) in seen:
                    continue
                seen.add(id(v))
                full = f"{mprefix}.{name}" if mprefix else name
                out[prefix + full] = v if keep_vars else v.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values into this module's parameters and buffers (from
        any device: each value is copied to its tensor's device).  With
        strict, missing or unexpected keys raise KeyError-free RuntimeError
        listing them; shapes must match exactly either way."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise _c.FoundryError(
                f"load_state_dict: missing keys {missing}, unexpected keys "
                f"{unexpected}")
        with no_grad():
            for k, dst in own.items():
                if k not in state_dict:
                    continue
                src = state_dict[k]
                if not isinstance(src, Tensor):
                    from .._create import tensor
                    src = tensor(src, dtype=dst.dtype, device=dst.device)
                elif src.device != dst.device:  # loads across devices
                    src = src.to(dst.device)
                if tuple(src.shape) != tuple(dst.shape):
                    raise ValueError(
                        f"load_state_dict: {k}: shape {list(src.shape)} in "
                        f"the state dict, {list(dst.shape)} in the module")
                dst.copy_(src)
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------ modes
    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                with no_grad():
                    p.grad.zero_()

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Moves and/or converts every parameter and buffer; returns self.

        to(device), to(dtype), to(device, dtype), to(tensor) (its device
        and dtype), or the keywords device= / dtype= (non_blocking= is
        accepted).  The dtype must be a float dtype and converts only the
        float parameters and buffers (integer buffers keep theirs).

        Parameters are changed in place, as torch does (param.data is
        replaced): each Parameter stays the same object, so references to
        it (an optimizer built before the move, tied weights) follow, and
        its gradient is moved and converted with it.  Buffers are replaced
        by converted tensors.  Mirrors torch.nn.Module.to."""
        dev, dt = _to_args(args, kwargs)
        with no_grad():
            for p in self.parameters():
                pdt = dt if p.is_floating_point() else None
                new = p.to(device=dev, dtype=pdt)
                if new is p:
                    continue
                g = p.grad
                if g is not None:
                    g = g.to(device=dev, dtype=pdt)
                p._set_data(new._p, grad=g, keep_grad=False)
            for m in self.modules():
                bufs = m.__dict__.get("_buffers", {})
                for name, b in list(bufs.items()):
                    if b is not None:
                        bufs[name] = b.to(device=dev, dtype=dt if
                                          b.is_floating_point() else None)
        return self

    def cpu(self):
        """to("cpu").  Mirrors torch.nn.Module.cpu."""
        return self.to("cpu")

    def cuda(self, device=None):
        """to() a CUDA device: an index, a "cuda:N" string or a device
        (None: cuda:0).  Mirrors torch.nn.Module.cuda."""
        from .._convert import _cuda
        return self.to(_cuda(device))

    def float(self):
        """Float parameters and buffers to float32.  Mirrors
        torch.nn.Module.float."""
        return self.to(_c.float32)

    def double(self):
        """Float parameters and buffers to float64.  Mirrors
        torch.nn.Module.double."""
        return self.to(_c.float64)

    # -------------------------------------------------------------- call
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, m in self.named_children():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        head = type(self).__name__ + "(" + self.extra_repr()
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
