"""Optimizer base class and the five optimizers.

The update and its state live in a C optimizer (tm_optim), which holds the
C tensors of the parameters.  Moving a module (Module.to) or setting
param.data keeps each Parameter object but gives it a new C tensor; before
each use the optimizer checks for that and, when a parameter changed,
rebuilds its C optimizer over the current tensors with the state carried
over to each parameter's device and dtype, so an optimizer made before the
move keeps updating the moved parameters, with its state next to them.
"""
from .. import _c
from .._c import ffi, lib
from .._base import wrap_borrowed
from .._tensor import Tensor

# hyperparameter name in PyTorch -> field of tm_optim_hparams
_FIELDS = ("lr", "weight_decay", "momentum", "dampening", "eps", "alpha",
           "lr_decay", "initial_accumulator_value", "nesterov", "amsgrad",
           "centered", "maximize")
# torch.optim's implementation switches.  foreach and fused choose how
# PyTorch loops over parameters; every value is honoured here, since the
# C update is one fused pass per parameter whatever they say.  capturable
# (CUDA graphs) and differentiable (autograd through step()) cannot be:
# True raises.
_IMPLEMENTATION = ("foreach", "fused")
_UNSUPPORTED = ("capturable", "differentiable")


class Optimizer:
    """Holds parameter groups and a C optimizer of one kind."""

    KIND = None
    DEFAULTS = {}

    def __init__(self, params, **kwargs):
        for k in _IMPLEMENTATION:
            kwargs.pop(k, None)
        for k in _UNSUPPORTED:
            if kwargs.pop(k, False):
                raise NotImplementedError(
                    f"{type(self).__name__}({k}=True) is not supported")
        unknown = set(kwargs) - set(self.DEFAULTS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected arguments "
                            f"{sorted(unknown)}")
        self.defaults = dict(self.DEFAULTS, **kwargs)
        self._check(self.defaults)
        self._opt = self._new_c()
        self._held = []  # the C tensors self._opt holds, in index order
        self._steps_before = 0  # steps taken by C optimizers rebuilt away
        self.param_groups = []
        self.state = {}  # PyTorch keeps per-parameter state here; ours is in C
        groups = list(params) if not isinstance(params, Tensor) else \
            [params]
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    # ------------------------------------------------------- hparams
    def _check(self, group):
        pass

    def _hparams(self, group):
        hp = ffi.new("tm_optim_hparams *", lib.tm_optim_defaults(self.KIND))
        for name in _FIELDS:
            if name in group:
                v = group[name]
                if isinstance(v, Tensor):
                    v = v.item()
                setattr(hp, name, v)
        if "betas" in group:
            b1, b2 = group["betas"]
            hp.beta1, hp.beta2 = float(b1), float(b2)
        _c.check(lib.tm_optim_check_hparams(self.KIND, hp))
        return hp

    def _new_c(self):
        p = lib.tm_optim_new(self.KIND, self._hparams(self.defaults))
        if not p:
            raise _c.error()
        return ffi.gc(p, lib.tm_optim_free)

    def _params(self):
        """Every parameter, in index order (the order of the groups)."""
        return [p for g in self.param_groups for p in g["params"]]

    def _add_c_group(self, opt, group):
        params = group["params"]
        arr = ffi.new("tm_tensor *[]", [p._p for p in params] or [ffi.NULL])
        nd = ffi.new("bool[]", [bool(group.get("no_decay"))] *
                     max(len(params), 1))
        _c.check(lib.tm_optim_add_group(opt, arr, nd, len(params),
                                        self._hparams(group)))

    def _follow(self):
        """Rebuilds the C optimizer when a parameter's C tensor is not the
        one it holds (see the module docstring)."""
        current = [p._p for p in self._params()]
        if len(current) == len(self._held) and all(
                a == b for a, b in zip(current, self._held)):
            return
        state = self._c_state()
        opt = self._new_c()
        for g in self.param_groups:
            self._add_c_group(opt, g)
        self._load_c(opt, state)
        self._steps_before += lib.tm_optim_step_count(self._opt)
        self._opt, self._held = opt, current

    def _to_param(self, name, t):
        """State tensor `name` ("state.<i>.<key>") on parameter i's device
        and, when it is a float tensor, in its dtype, as torch's
        load_state_dict casts state; "step" counts stay as they are."""
        parts = name.split(".")
        params = self._params()
        if len(parts) != 3 or parts[0] != "state" or parts[2] == "step" or \
                not parts[1].isdigit() or int(parts[1]) >= len(params):
            return t  # the C library names what is wrong with it
        p = params[int(parts[1])]
        return t.to(device=p.device,
                    dtype=p.dtype if t.is_floating_point() else None)

    def _load_c(self, opt, state):
        ps = lib.tm_params_new()
        if not ps:
            raise _c.error()
        ps = ffi.gc(ps, lib.tm_params_free)
        for name, t in state.items():
            if not isinstance(t, Tensor):
                raise TypeError(f"state {name!r} is not a Tensor")
            t = self._to_param(name, t)
            _c.check(lib.tm_params_add_buffer(ps, name.encode(), t._p))
        _c.check(lib.tm_optim_load_state_dict(opt, ps))

    def _c_state(self):
        """The C optimizer's state: name -> Tensor (copies)."""
        ps = lib.tm_params_new()
        if not ps:
            raise _c.error()
        ps = ffi.gc(ps, lib.tm_params_free)
        _c.check(lib.tm_optim_state_dict(self._opt, ps))
        return {ffi.string(lib.tm_params_name(ps, i)).decode():
                wrap_borrowed(lib.tm_params_get(ps, i))
                for i in range(lib.tm_params_count(ps))}

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError("a parameter group must be a dict")
        self._follow()
        group = dict(param_group)
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer parameters must be Tensors, "
                                f"not {type(p).__name__}")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        group["params"] = params
        self._add_c_group(self._opt, group)
        self._held += [p._p for p in params]
        group.setdefault("initial_lr", group["lr"])
        self.param_groups.append(group)

    def _sync(self):
        """Pushes edits of param_groups (lr set by a scheduler, ...)."""
        self._follow()
        for i, g in enumerate(self.param_groups):
            _c.check(lib.tm_optim_set_hparams(self._opt, i,
                                              self._hparams(g)))

    # ---------------------------------------------------------- step
    def step(self, closure=None):
        loss = None
        if closure is not None:
            from .._grad import enable_grad
            with enable_grad():
                loss = closure()
        self._sync()
        _c.check(lib.tm_optim_step(self._opt))
        return loss

    def zero_grad(self, set_to_none=True):
        if set_to_none:
            for p in self._params():
                lib.tm_zero_grad(p._p)
            return
        from .._grad import no_grad
        with no_grad():
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is not None:
                        p.grad.zero_()

    @property
    def step_count(self):
        """The number of step() calls that succeeded."""
        return self._steps_before + lib.tm_optim_step_count(self._opt)

    # ---------------------------------------------------- state dicts
    def state_dict(self):
        """{"state": name -> Tensor (copies on the parameters' devices;
        "state.<i>.exp_avg", ...), "param_groups": [hyperparameters and
        parameter indices]}.  The tensors alone can be saved with
        foundry.save_file."""
        self._follow()
        state = self._c_state()
        groups, index = [], 0
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = list(range(index, index + len(g["params"])))
            index += len(g["params"])
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restores state (and group hyperparameters when given); resuming
        continues bit-exactly.  State tensors may come from any device:
        each is copied to its parameter's device (and a float one to its
        dtype), as torch does."""
        groups = state_dict.get("param_groups")
        if groups is not None:
            if len(groups) != len(self.param_groups):
                raise ValueError(f"load_state_dict: {len(groups)} parameter "
                                 f"groups in the state, "
                                 f"{len(self.param_groups)} here")
            for mine, saved in zip(self.param_groups, groups):
                if len(saved.get("params", mine["params"])) != \
                        len(mine["params"]):
                    raise ValueError("load_state_dict: a parameter group "
                                     "has a different size")
        self._follow()
        self._load_c(self._opt, state_dict["state"])
        if groups is not None:
            for mine, saved in zip(self.param_groups, groups):
                for k, v in saved.items():
                    if k != "params":
                        mine[k] = v
            self._sync()

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines + [")"])


class SGD(Optimizer):
    KIND = lib.TM_OPTIM_SGD
    DEFAULTS = {"lr": 1e-3, "momentum": 0.0, "dampening": 0.0,
                "weight_decay": 0.0, "nesterov": False, "maximize": False}


class Adam(Optimizer):
    KIND = lib.TM_OPTIM_ADAM
    DEFAULTS = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                "weight_decay": 0.0, "amsgrad": False, "maximize": False}


class AdamW(Optimizer):
    KIND = lib.TM_OPTIM_ADAMW
    DEFAULTS = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                "weight_decay": 1e-2, "amsgrad": False, "maximize": False}


class RMSprop(Optimizer):
    KIND = lib.TM_OPTIM_RMSPROP
    DEFAULTS = {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
                "momentum": 0.0, "centered": False, "maximize": False}


class Adagrad(Optimizer):
    KIND = lib.TM_OPTIM_ADAGRAD
    DEFAULTS = {"lr": 1e-2, "lr_decay": 0.0, "weight_decay": 0.0,
                "initial_accumulator_value": 0.0, "eps": 1e-10,
                "maximize": False}
