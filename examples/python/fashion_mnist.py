"""Fashion-MNIST with foundry: the seed's MLP (784-256-128-10) or a small
CNN (two conv layers), trained with Adam, evaluated on the 10k test set.

    .venv/bin/python examples/python/fashion_mnist.py --model mlp
    .venv/bin/python examples/python/fashion_mnist.py --model cnn

Data: the Debian package dataset-fashion-mnist (the four IDX .gz files in
/usr/share/datasets/fashion-mnist; `sudo apt-get install
dataset-fashion-mnist`), or --data DIR.  The .gz files are read by
Foundry's own IDX reader and inflate (no Python gzip).
"""
import argparse
import os
import sys
import time

import foundry as F
from foundry import nn

DATA = "/usr/share/datasets/fashion-mnist"


def load(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    images = F.data.load_idx(os.path.join(
        data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = F.data.load_idx(os.path.join(
        data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    # uint8 [N, 28, 28] -> float32 in [0, 1], standardised like the seed
    x = (images.float() / 255.0 - 0.2860) / 0.3530
    return x, labels.long()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                                 nn.Linear(256, 128), nn.ReLU(),
                                 nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = self.pool(self.conv1(x.unsqueeze(1)).relu())   # [N,16,14,14]
        x = self.pool(self.conv2(x).relu())                # [N,32,7,7]
        return self.fc2(self.fc1(x.flatten(1)).relu())


def accuracy(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with F.no_grad():
        for xb, yb in F.data.batches(x, y, batch_size=batch):
            correct += (model(xb).argmax(1) == yb).sum().item()
    model.train()
    return correct / len(y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--limit", type=int, default=0,
                    help="use only this many training images (quick runs)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.data,
                                       "train-images-idx3-ubyte.gz")):
        sys.exit(f"Fashion-MNIST not found in {args.data}: install it with "
                 f"`sudo apt-get install dataset-fashion-mnist` (Debian/"
                 f"Ubuntu), or pass --data DIR holding the four "
                 f"*-ubyte.gz files")
    F.manual_seed(args.seed)
    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "test")
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    model = MLP() if args.model == "mlp" else CNN()
    opt = F.optim.Adam(model.parameters(), lr=args.lr)
    steps = (len(y_train) + args.batch_size - 1) // args.batch_size
    sched = F.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps *
                                                   args.epochs)
    print(f"{args.model}: {sum(p.numel() for p in model.parameters())} "
          f"parameters, {len(y_train)} training images, "
          f"{F.get_num_threads()} threads")
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total, seen, t_epoch = 0.0, 0, time.perf_counter()
        for i, (xb, yb) in enumerate(F.data.batches(
                x_train, y_train, batch_size=args.batch_size, shuffle=True)):
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(yb)
            seen += len(yb)
            if i % 200 == 0:
                print(f"\r  epoch {epoch} [{seen:5d}/{len(y_train)}] "
                      f"loss {total / seen:.4f}", end="", flush=True)
        acc = accuracy(model, x_test, y_test)
        print(f"\repoch {epoch:2d}  loss {total / seen:.4f}  test accuracy "
              f"{acc:.4f}  ({time.perf_counter() - t_epoch:.1f} s)")
    print(f"final test accuracy {acc:.4f} after {args.epochs} epochs "
          f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
