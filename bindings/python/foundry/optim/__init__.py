"""foundry.optim: torch.optim's optimizers on Foundry's fused C updates.

    opt = foundry.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    for x, y in batches:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

Names, arguments and defaults are torch.optim's.  Parameter groups are
dicts ({"params": [...], "lr": ..., ...}) as in PyTorch; a group may also
say "no_decay": True to exempt its parameters from weight decay.  Editing
`opt.param_groups[i]["lr"]` (as schedulers do) takes effect at the next
step.  The update itself runs in C (include/foundry/optim.h): one fused,
vectorized pass per parameter.
"""
from .optimizer import Optimizer, SGD, Adam, AdamW, RMSprop, Adagrad
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
           "lr_scheduler"]
