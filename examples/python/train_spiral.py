"""Trains a small MLP on a three-arm spiral with foundry's PyTorch-shaped
API: nn.Module, autograd, and a plain SGD update under no_grad.

    make demo        (or: .venv/bin/python examples/python/train_spiral.py)
"""
import math
import time

import foundry as F
from foundry import nn


def spiral(points_per_class=200, classes=3):
    """The classic spiral: arm c winds from the centre outwards."""
    r = F.linspace(0.0, 1.0, points_per_class)
    xs, ys = [], []
    for c in range(classes):
        theta = r * 4.0 + c * 2 * math.pi / classes + \
            F.randn(points_per_class) * 0.2
        xs.append(F.stack([r * theta.sin(), r * theta.cos()], dim=1))
        ys.append(F.full((points_per_class,), c))
    return F.cat(xs), F.cat(ys)


class MLP(nn.Module):
    def __init__(self, hidden=64, classes=3):
        super().__init__()
        self.fc1 = nn.Linear(2, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


def main():
    F.manual_seed(0)
    x, y = spiral()
    model = MLP()
    lr, t0 = 1.0, time.perf_counter()
    for step in range(1, 2001):
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        model.zero_grad()
        loss.backward()
        with F.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        if step % 400 == 0 or step == 1:
            acc = (logits.argmax(1) == y).float().mean().item()
            print(f"step {step:5d}  loss {loss.item():.4f}  "
                  f"accuracy {acc:.3f}")
    print(f"trained in {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
