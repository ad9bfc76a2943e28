"""foundry.optim.lr_scheduler: torch.optim.lr_scheduler's schedules,
computed by the C library's closed forms (tm_lr_sched_at).

Call scheduler.step() after optimizer.step(), as in PyTorch: step t of
the optimizer uses the lr the schedule gives for t.
"""
from .. import _c
from .._c import ffi, lib


class LRScheduler:
    KIND = None

    def __init__(self, optimizer, last_epoch=-1, **settings):
        self.optimizer = optimizer
        self._scheds = []
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
            s = ffi.new("tm_lr_sched *", lib.tm_lr_sched_defaults(
                self.KIND, self._base(g)))
            for k, v in settings.items():
                setattr(s, k, v)
            _c.check(lib.tm_lr_sched_check(s))
            self._scheds.append(s)
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def _base(self, group):
        return group["initial_lr"]

    def _lr(self, i, t):
        v = lib.tm_lr_sched_at(self._scheds[i], t)
        if v != v:  # NaN: the C library reports why
            raise _c.error()
        return v

    def get_last_lr(self):
        return list(self._last_lr)

    def step(self):
        self.last_epoch += 1
        self._last_lr = [self._lr(i, self.last_epoch)
                         for i in range(len(self._scheds))]
        for g, lr in zip(self.optimizer.param_groups, self._last_lr):
            g["lr"] = lr

    def state_dict(self):
        return {"last_epoch": self.last_epoch, "base_lrs": self.base_lrs}

    def load_state_dict(self, state):
        self.last_epoch = state["last_epoch"] - 1
        self.step()


class ConstantSchedule(LRScheduler):
    """The lr stays at its initial value (for code that always builds a
    scheduler)."""
    KIND = lib.TM_LR_CONSTANT

    def __init__(self, optimizer, last_epoch=-1):
        super().__init__(optimizer, last_epoch)


class StepLR(LRScheduler):
    KIND = lib.TM_LR_STEP

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        super().__init__(optimizer, last_epoch, step_size=step_size,
                         gamma=gamma)


class ExponentialLR(LRScheduler):
    KIND = lib.TM_LR_EXPONENTIAL

    def __init__(self, optimizer, gamma, last_epoch=-1):
        super().__init__(optimizer, last_epoch, gamma=gamma)


class CosineAnnealingLR(LRScheduler):
    KIND = lib.TM_LR_COSINE

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        super().__init__(optimizer, last_epoch, t_max=T_max,
                         eta_min=eta_min, warmup_steps=0)


class CosineWithWarmup(LRScheduler):
    """Linear warm-up from start_factor * lr to lr over warmup_steps, then
    cosine annealing to eta_min over T_max steps: PyTorch's
    SequentialLR([LinearLR(start_factor, 1, warmup_steps),
    CosineAnnealingLR(T_max, eta_min)], milestones=[warmup_steps])."""
    KIND = lib.TM_LR_COSINE

    def __init__(self, optimizer, warmup_steps, T_max, eta_min=0.0,
                 start_factor=1.0 / 3, last_epoch=-1):
        super().__init__(optimizer, last_epoch, warmup_steps=warmup_steps,
                         t_max=T_max, eta_min=eta_min,
                         start_factor=start_factor)


class LinearLR(LRScheduler):
    KIND = lib.TM_LR_LINEAR

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0,
                 total_iters=5, last_epoch=-1):
        super().__init__(optimizer, last_epoch, start_factor=start_factor,
                         end_factor=end_factor, total_steps=total_iters)


class OneCycleLR(LRScheduler):
    """torch's OneCycleLR with anneal_strategy='cos', three_phase=False
    (momentum cycling is not done)."""
    KIND = lib.TM_LR_ONE_CYCLE

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None,
                 steps_per_epoch=None, pct_start=0.3, anneal_strategy="cos",
                 div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if anneal_strategy != "cos" or three_phase:
            raise NotImplementedError("OneCycleLR: only anneal_strategy="
                                      "'cos' with three_phase=False")
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs "
                                 "and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        maxes = max_lr if isinstance(max_lr, (list, tuple)) else \
            [max_lr] * len(optimizer.param_groups)
        for g, m in zip(optimizer.param_groups, maxes):
            g["max_lr"] = m
            g["initial_lr"] = m / div_factor
        super().__init__(optimizer, last_epoch, total_steps=total_steps,
                         pct_start=pct_start, div_factor=div_factor,
                         final_div_factor=final_div_factor)

    def _base(self, group):
        return group["max_lr"]
