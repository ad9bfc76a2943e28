#!/usr/bin/env python3
"""GPT training and generation: Foundry against PyTorch CPU eager, same
model, same weights, same thread count, same run.

    .venv/bin/python bench/bench_gpt.py [--threads 2] [--seconds 4]
        [--rounds 5] [--quick] [--shakespeare]
    (or: make bench)

(a) training tokens/s: GPT-2-style model (learned positions, LayerNorm,
    GELU-tanh MLP of 4 d, biases, tied head), vocab 4096, d_model 256, 4
    layers, 4 heads, T 256, B 8; one step = forward, cross-entropy,
    zero_grad, backward, AdamW step (weight decay on >= 2-d parameters
    only, as both libraries' convention).  Target >= 1.5x.
(b) generation tokens/s with the KV cache: the same model (context 256),
    batch 1, a 128-token prompt then 128 new tokens, greedy.  Foundry runs
    tm_gpt_generate; PyTorch runs a plain KV-cache loop in eager mode
    (prompt in one forward, then one token per forward, keys and values
    concatenated per layer).  Tokens/s counts the new tokens over the whole
    call (prompt included).  Target >= 2x.
(c) --shakespeare: nanoGPT's shakespeare-char CPU configuration (4 layers,
    4 heads, 128 dims, context 64, batch 12, 2000 iterations, dropout 0,
    AdamW lr 1e-3 with 100 warm-up steps and cosine decay to 1e-4, beta2
    0.99, weight decay 0.1, clipping at 1.0) trained char-level on the
    Debian licence texts (/usr/share/common-licenses, every distinct file in
    sorted order: always present on Debian), first 90% train, last 10%
    val; both libraries start from the same weights and see the same
    batches; val loss is the mean over 20 fixed val batches.  Off by
    default (3 to 5 minutes per library at 1 thread; --iters shortens it).

PyTorch's model is tests/python/torch_gpt.py (the parity tests'
reference, imported by path) loaded with Foundry's own weights.  After a
warm-up, the two are timed in alternating windows (--rounds each), with a
pause before each window so the previous library's spinning thread pool
sleeps; each one's best window counts (the machine is shared).
ratio = Foundry tokens/s / PyTorch tokens/s (> 1: Foundry is faster).
Writes bench/results/gpt.json (gpt_quick.json with --quick).
"""
import argparse
import json
import math
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GAP_S = 0.2
TARGETS = {"train": 1.5, "generate": 2.0}


# ------------------------------------------------------------------ foundry


class FoundryGPT:
    """A tm_gpt through the C API (cffi): what `foundry train` runs."""

    def __init__(self, F, vocab, context, d, layers, heads, seed=0):
        self.lib, self.ffi = F._c.lib, F._c.ffi
        lib, ffi = self.lib, self.ffi
        c = ffi.new("tm_gpt_config *")
        F._c.check(lib.tm_gpt_preset(b"gpt2", c))
        c.vocab_size, c.context, c.d_model = vocab, context, d
        c.n_layers, c.n_heads, c.n_kv_heads = layers, heads, heads
        c.head_dim, c.d_ff, c.dropout = 0, 4 * d, 0.0
        c.bos_id = c.eos_id = -1
        rng = ffi.new("tm_rng *", lib.tm_rng_new(seed))
        m = lib.tm_gpt_new(c, rng)
        if m == ffi.NULL:
            raise F._c.error()
        self.m = ffi.gc(m, lib.tm_gpt_free)
        self.F = F

    def weights(self):
        """{HF name: numpy copy} of every parameter."""
        lib, ffi = self.lib, self.ffi
        ps = lib.tm_gpt_params(self.m)
        out = {}
        for i in range(lib.tm_params_count(ps)):
            t = lib.tm_params_get(ps, i)
            shape = [lib.tm_shape(t)[j] for j in range(lib.tm_ndim(t))]
            a = np.empty(shape, dtype=np.float32)
            self.F._c.check(lib.tm_copy_to_buffer(t, ffi.from_buffer(a), a.nbytes, lib.TM_F32))
            out[ffi.string(lib.tm_params_name(ps, i)).decode()] = a
        return out

    def ids(self, a):
        a = np.ascontiguousarray(a, dtype=np.int64)
        t = self.lib.tm_from_buffer(self.ffi.from_buffer(a), list(a.shape), a.ndim, self.lib.TM_I64)
        return self.ffi.gc(t, self.lib.tm_free)

    def optimizer(self, lr, weight_decay=0.01, beta2=0.999):
        lib, ffi = self.lib, self.ffi
        hp = ffi.new("tm_optim_hparams *", lib.tm_optim_defaults(lib.TM_OPTIM_ADAMW))
        hp.lr, hp.weight_decay, hp.beta2 = lr, weight_decay, beta2
        opt = lib.tm_optim_new(lib.TM_OPTIM_ADAMW, hp)
        self.F._c.check(lib.tm_optim_add_params(opt, lib.tm_gpt_params(self.m), ffi.NULL))
        self.opt = ffi.gc(opt, lib.tm_optim_free)
        n = lib.tm_optim_param_count(opt)
        self.plist = ffi.new("tm_tensor *[]", [lib.tm_optim_param(opt, 0, i) for i in range(n)])
        self.nparams = n

    def step(self, x, y, lr=None, clip=None):
        """One training step on tensors x, y; returns the loss tensor's
        value only when asked (reading it is a host sync)."""
        lib, ffi = self.lib, self.ffi
        loss = lib.tm_gpt_loss(self.m, x, y, ffi.NULL)
        if loss == ffi.NULL:
            raise self.F._c.error()
        lib.tm_optim_zero_grad(self.opt)
        self.F._c.check(lib.tm_backward(loss))
        if clip:
            self.F._c.check(lib.tm_clip_grad_norm_(self.plist, self.nparams, clip, 2.0, ffi.NULL))
        if lr is not None:
            self.F._c.check(lib.tm_optim_set_lr(self.opt, -1, lr))
        self.F._c.check(lib.tm_optim_step(self.opt))
        return loss

    def loss_value(self, x, y):
        lib, ffi = self.lib, self.ffi
        lib.tm_set_grad_enabled(False)
        loss = lib.tm_gpt_loss(self.m, x, y, ffi.NULL)
        lib.tm_set_grad_enabled(True)
        if loss == ffi.NULL:
            raise self.F._c.error()
        v = ffi.new("double *")
        self.F._c.check(lib.tm_item(loss, v))
        lib.tm_free(loss)
        return v[0]

    def generate(self, prompt, n_new):
        lib, ffi = self.lib, self.ffi
        o = ffi.new("tm_generate_opts *", lib.tm_generate_defaults())
        o.max_new_tokens = n_new
        o.sample.temperature = 0.0
        p = np.ascontiguousarray(prompt, dtype=np.int64)
        out = np.empty(n_new, dtype=np.int64)
        n = ffi.new("int64_t *")
        self.F._c.check(lib.tm_gpt_generate(self.m, ffi.from_buffer("int64_t[]", p), p.size, o,
                                            ffi.from_buffer("int64_t[]", out), n))
        return out[:n[0]]


# ------------------------------------------------------------------ pytorch


def _torch_gpt_module():
    """tests/python/torch_gpt.py (the parity tests' reference model),
    imported by path."""
    import importlib.util
    path = os.path.join(HERE, "..", "tests", "python", "torch_gpt.py")
    spec = importlib.util.spec_from_file_location("torch_gpt", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class TorchGPT:
    """The same model in PyTorch eager (tests/python/torch_gpt.py) with
    Foundry's weights."""

    def __init__(self, torch, fm):
        import foundry.models as models
        cfg = models.GPTConfig()
        cfg._load_c(fm.lib.tm_gpt_config_of(fm.m))
        self.torch = torch
        self.net = _torch_gpt_module().TorchGPT(cfg.to_dict())
        self.net.load_state_dict({k: torch.tensor(v) for k, v in fm.weights().items()},
                                 strict=True)
        self.net.train(False)   # dropout is 0 anyway; as Foundry's generate
        self.W = dict(self.net.named_parameters())

    def optimizer(self, lr, weight_decay=0.01, beta2=0.999):
        decay = [t for t in self.W.values() if t.dim() >= 2]
        rest = [t for t in self.W.values() if t.dim() < 2]
        self.opt = self.torch.optim.AdamW(
            [{"params": decay, "weight_decay": weight_decay},
             {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, beta2))

    def step(self, x, y, lr=None, clip=None):
        loss = self.net.loss(x, y)
        self.opt.zero_grad()
        loss.backward()
        if clip:
            self.torch.nn.utils.clip_grad_norm_(list(self.W.values()), clip)
        if lr is not None:
            for g in self.opt.param_groups:
                g["lr"] = lr
        self.opt.step()
        return loss

    def loss_value(self, x, y):
        with self.torch.no_grad():
            return float(self.net.loss(x, y))

    def generate(self, prompt, n_new):
        """A plain KV-cache loop: the prompt in one forward, then one token
        per forward, keys and values concatenated per layer."""
        torch = self.torch
        with torch.no_grad():
            caches = self.net.new_caches()
            ids = torch.tensor(np.asarray(prompt, dtype=np.int64)).view(1, -1)
            start, out = 0, []
            for i in range(n_new):
                logits = self.net(ids, caches, start)
                start += ids.shape[1]
                tok = int(logits[0, -1].argmax())
                out.append(tok)
                ids = torch.tensor([[tok]])
            return np.array(out, dtype=np.int64)


# ------------------------------------------------------------------ timing


def best_rates(calls, seconds, rounds, units):
    """Best units/s of each call, timed in alternating windows."""
    for c in calls:
        c()
    best = [0.0] * len(calls)
    for _ in range(rounds):
        for i, c in enumerate(calls):
            time.sleep(GAP_S)
            n, t0 = 0, time.perf_counter()
            while n == 0 or time.perf_counter() - t0 < seconds / rounds:
                c()
                n += 1
            best[i] = max(best[i], n * units / (time.perf_counter() - t0))
    return best


def bench_train(F, torch, args):
    V, T, B, d, L, H = 4096, 256, 8, 256, 4, 4
    if args.quick:
        T, B = 64, 2
    fm = FoundryGPT(F, V, T, d, L, H)
    tm = TorchGPT(torch, fm)
    fm.optimizer(1e-4)
    tm.optimizer(1e-4)
    data = np.random.default_rng(0).integers(0, V, size=(B, T + 1))
    fx, fy = fm.ids(data[:, :-1]), fm.ids(data[:, 1:])
    tx, ty = torch.tensor(data[:, :-1]), torch.tensor(data[:, 1:])
    l0f, l0t = fm.loss_value(fx, fy), tm.loss_value(tx, ty)

    def fstep():
        fm.lib.tm_free(fm.step(fx, fy))
    rates = best_rates([fstep, lambda: tm.step(tx, ty)], args.seconds, args.rounds, B * T)
    return {"case": f"train V{V} d{d} L{L} H{H} T{T} B{B}", "foundry_tok_s": rates[0],
            "torch_tok_s": rates[1], "ratio": rates[0] / rates[1],
            "target": TARGETS["train"], "initial_loss_foundry": l0f, "initial_loss_torch": l0t}


def bench_generate(F, torch, args):
    V, d, L, H, n_prompt, n_new = 4096, 256, 4, 4, 128, 128
    if args.quick:
        n_prompt, n_new = 16, 16
    fm = FoundryGPT(F, V, n_prompt + n_new, d, L, H, seed=1)
    tm = TorchGPT(torch, fm)
    prompt = np.random.default_rng(1).integers(0, V, size=n_prompt)
    a, b = fm.generate(prompt, n_new), tm.generate(prompt, n_new)
    # Random weights give near-ties that rounding may break either way; the
    # first divergence ends the comparison, so report the common prefix.
    same = int(np.argmax(a != b)) if np.any(a != b) else len(a)
    rates = best_rates([lambda: fm.generate(prompt, n_new), lambda: tm.generate(prompt, n_new)],
                       args.seconds, args.rounds, n_new)
    return {"case": f"generate V{V} d{d} L{L} H{H} prompt {n_prompt} new {n_new} greedy",
            "foundry_tok_s": rates[0], "torch_tok_s": rates[1], "ratio": rates[0] / rates[1],
            "target": TARGETS["generate"], "greedy_tokens_agreeing": same, "tokens": int(len(a))}


def corpus():
    root = "/usr/share/common-licenses"
    files = sorted({os.path.realpath(os.path.join(root, f)) for f in os.listdir(root)})
    return "".join(open(f, encoding="utf-8", errors="replace").read() for f in files)


def bench_shakespeare(F, torch, args):
    text = corpus()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    n = int(0.9 * len(data))
    train, val = data[:n], data[n:]
    V, T, B, d, L, H, iters = len(chars), 64, 12, 128, 4, 4, args.iters
    if args.quick:
        iters = 50
    lr, min_lr, warmup = 1e-3, 1e-4, 100

    def lr_at(it):  # nanoGPT's get_lr
        if it < warmup:
            return lr * (it + 1) / (warmup + 1)
        r = (it - warmup) / (iters - warmup)
        return min_lr + 0.5 * (1 + math.cos(math.pi * r)) * (lr - min_lr)

    def batch(src, rng):
        ix = rng.integers(0, len(src) - T - 1, size=B)
        w = np.stack([src[i:i + T + 1] for i in ix])
        return w[:, :-1], w[:, 1:]
    fm = FoundryGPT(F, V, T, d, L, H, seed=2)
    tm = TorchGPT(torch, fm)
    out = {"case": f"shakespeare-char config on {len(text)} chars of licence text (vocab {V})",
           "iters": iters}
    for name, m, conv in (("foundry", fm, fm.ids), ("torch", tm, torch.tensor)):
        m.optimizer(lr, weight_decay=0.1, beta2=0.99)
        rng = np.random.default_rng(3)
        time.sleep(GAP_S)
        t0 = time.perf_counter()
        for it in range(iters):
            x, y = batch(train, rng)
            loss = m.step(conv(x), conv(y), lr=lr_at(it), clip=1.0)
            if name == "foundry":
                fm.lib.tm_free(loss)
        secs = time.perf_counter() - t0
        vrng = np.random.default_rng(4)
        vl = [m.loss_value(*map(conv, batch(val, vrng))) for _ in range(20)]
        out[name + "_seconds"] = secs
        out[name + "_val_loss"] = float(np.mean(vl))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small shapes, one round (smoke run)")
    ap.add_argument("--shakespeare", action="store_true", help="also run (c), minutes per library")
    ap.add_argument("--iters", type=int, default=2000, help="iterations of (c) (nanoGPT's: 2000)")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.rounds = 0.5, 1
    import foundry as F
    import torch
    F.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = [bench_train(F, torch, args), bench_generate(F, torch, args)]
    for r in rows:
        print(f"{r['case']}: foundry {r['foundry_tok_s']:.0f} tok/s, torch "
              f"{r['torch_tok_s']:.0f} tok/s, ratio {r['ratio']:.2f} (target {r['target']})")
    print(f"  greedy tokens agreeing with torch: {rows[1]['greedy_tokens_agreeing']} of {rows[1]['tokens']}")
    if args.shakespeare:
        s = bench_shakespeare(F, torch, args)
        rows.append(s)
        print(f"{s['case']}, {s['iters']} iters: foundry {s['foundry_seconds']:.1f} s val "
              f"{s['foundry_val_loss']:.4f}; torch {s['torch_seconds']:.1f} s val {s['torch_val_loss']:.4f}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    name = "gpt_quick.json" if args.quick else "gpt.json"
    with open(os.path.join(HERE, "results", name), "w") as fh:
        json.dump({"threads": args.threads, "results": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
