"""Optimizer base class and the five optimizers."""
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
        hp = self._hparams(self.defaults)
        p = lib.tm_optim_new(self.KIND, hp)
        if not p:
            raise _c.error()
        self._opt = ffi.gc(p, lib.tm_optim_free)
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

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError("a parameter group must be a dict")
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
        hp = self._hparams(group)
        arr = ffi.new("tm_tensor *[]", [p._p for p in params] or [ffi.NULL])
        nd = ffi.new("bool[]", [bool(group.get("no_decay"))] *
                     max(len(params), 1))
        _c.check(lib.tm_optim_add_group(self._opt, arr, nd, len(params), hp))
        group.setdefault("initial_lr", group["lr"])
        self.param_groups.append(group)

    def _sync(self):
        """Pushes edits of param_groups (lr set by a scheduler, ...)."""
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
            lib.tm_optim_zero_grad(self._opt)
            return
        from .._grad import no_grad
        with no_grad():
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is not None:
                        p.grad.zero_()

    @property
    def step_count(self):
        return lib.tm_optim_step_count(self._opt)

    # ---------------------------------------------------- state dicts
    def state_dict(self):
        """{"state": name -> Tensor (copies; "state.<i>.exp_avg", ...),
        "param_groups": [hyperparameters and parameter indices]}.  The
        tensors alone can be saved with foundry.save_file."""
        ps = lib.tm_params_new()
        if not ps:
            raise _c.error()
        ps = ffi.gc(ps, lib.tm_params_free)
        _c.check(lib.tm_optim_state_dict(self._opt, ps))
        state = {}
        for i in range(lib.tm_params_count(ps)):
            name = ffi.string(lib.tm_params_name(ps, i)).decode()
            state[name] = wrap_borrowed(lib.tm_params_get(ps, i))
        groups, index = [], 0
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = list(range(index, index + len(g["params"])))
            index += len(g["params"])
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restores state (and group hyperparameters when given); resuming
        continues bit-exactly."""
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
        ps = lib.tm_params_new()
        if not ps:
            raise _c.error()
        ps = ffi.gc(ps, lib.tm_params_free)
        for name, t in state_dict["state"].items():
            if not isinstance(t, Tensor):
                raise TypeError(f"state {name!r} is not a Tensor")
            _c.check(lib.tm_params_add_buffer(ps, name.encode(), t._p))
        _c.check(lib.tm_optim_load_state_dict(self._opt, ps))
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
