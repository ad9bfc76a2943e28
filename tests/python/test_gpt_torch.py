"""Parity of foundry.models.GPT with the same transformer in PyTorch
(tests/python/torch_gpt.py), llm.c-style: a tiny GPT (learned positions,
LayerNorm, GELU-tanh, biases, tied head) and a tiny Llama (RoPE, RMSNorm,
SwiGLU, grouped-query attention, untied head, no biases) share weights
through safetensors files and must agree on logits, every gradient and
the losses of 10 AdamW steps; a run resumed from a checkpoint is
bit-exact."""
import os

import numpy as np
import pytest

import foundry
from foundry.models import GPT, GPTConfig

torch = pytest.importorskip("torch")
from torch_gpt import TorchGPT, load_safetensors, save_safetensors  # noqa: E402

V = 97
CONFIGS = {
    "gpt": GPTConfig.preset("gpt-tiny", vocab_size=V, context=32, d_model=48,
                            n_layers=2, n_heads=4, d_ff=96),
    "llama": GPTConfig.preset("llama-tiny", vocab_size=V, context=32,
                              d_model=64, n_layers=2, n_heads=4,
                              n_kv_heads=2, d_ff=96, tie_embeddings=False),
}


def batch(seed, B=3, T=20):
    r = np.random.RandomState(seed)
    return r.randint(0, V, (B, T)), r.randint(0, V, (B, T))


def rel(a, b, floor=0.0):
    """max |a - b| / max(max |b|, floor)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b).max() / max(np.abs(b).max(), floor)


def pair(kind, tmp_path, seed=3):
    """A Foundry model and a PyTorch one with its weights, read from the
    safetensors file Foundry saved."""
    fm = GPT(CONFIGS[kind], seed=seed)
    fm.save_pretrained(tmp_path)
    tm = TorchGPT(fm.config.to_dict())
    sd = load_safetensors(os.path.join(tmp_path, "model.safetensors"))
    tm.load_state_dict(sd, strict=True)
    return fm, tm


@pytest.mark.parametrize("kind", ["gpt", "llama"])
def test_logits_match_torch(kind, tmp_path):
    fm, tm = pair(kind, tmp_path)
    ids, _ = batch(0)
    with foundry.no_grad():
        lf = fm(ids).numpy()
    with torch.no_grad():
        lt = tm(torch.tensor(ids)).numpy()
    # F32 throughout; sums of a few hundred terms in another order differ
    # by a few ulps, far below 1e-5 of the largest logit.
    assert rel(lf, lt) <= 1e-5


@pytest.mark.parametrize("kind", ["gpt", "llama"])
def test_torch_weights_load_into_foundry(kind, tmp_path):
    """The other way: PyTorch writes model.safetensors (its own init), the
    config.json comes from the config, Foundry loads the directory."""
    tm = TorchGPT(CONFIGS[kind].to_dict())
    for p in tm.parameters():  # not the init Foundry would draw
        torch.nn.init.normal_(p, 0.0, 0.05)
    save_safetensors(os.path.join(tmp_path, "model.safetensors"),
                     tm.state_dict_for_foundry(), {"format": "pt"})
    with open(os.path.join(tmp_path, "config.json"), "w") as f:
        f.write(CONFIGS[kind].to_json_string())
    fm = GPT.from_pretrained(tmp_path)
    assert not fm.training
    ids, _ = batch(1)
    with foundry.no_grad():
        lf = fm(ids).numpy()
    with torch.no_grad():
        lt = tm(torch.tensor(ids)).numpy()
    assert rel(lf, lt) <= 1e-5


@pytest.mark.parametrize("kind", ["gpt", "llama"])
def test_every_gradient_matches_torch(kind, tmp_path):
    fm, tm = pair(kind, tmp_path)
    ids, tg = batch(2)
    tg[0, :3] = -100  # ignored targets take part too
    lf = fm.loss(ids, tg)
    lf.backward()
    lt = tm.loss(torch.tensor(ids), torch.tensor(tg))
    lt.backward()
    assert abs(lf.item() - lt.item()) <= 1e-5 * abs(lt.item())
    tparams = dict(tm.named_parameters())
    names = [n for n, _ in fm.named_parameters()]
    assert sorted(names) == sorted(tparams)
    scale = max(np.abs(p.grad.numpy()).max() for p in tm.parameters())
    for name, p in fm.named_parameters():
        gf, gt = p.grad.numpy(), tparams[name].grad.numpy()
        # Relative to the gradient's own size, except for the k_proj bias
        # whose true gradient is zero (softmax ignores a shift shared by
        # all keys): there both sides are rounding noise ~1e-11, so the
        # floor is 1e-3 of the model's largest gradient.
        assert rel(gf, gt, 1e-3 * scale) <= 1e-4, name


def adamw_pair(fm, tm, lr=3e-3, wd=0.1):
    """AdamW on both with weight decay on >= 2-D parameters only."""
    def groups(named):
        decay = [p for _, p in named if p.dim() >= 2]
        rest = [p for _, p in named if p.dim() < 2]
        return [{"params": decay, "weight_decay": wd},
                {"params": rest, "weight_decay": 0.0}]
    of = foundry.optim.AdamW(groups(list(fm.named_parameters())), lr=lr,
                             betas=(0.9, 0.95), eps=1e-8)
    # Foundry's order of names, so the groups hold the same tensors
    tp = dict(tm.named_parameters())
    ot = torch.optim.AdamW(groups([(n, tp[n]) for n, _ in
                                   fm.named_parameters()]), lr=lr,
                           betas=(0.9, 0.95), eps=1e-8)
    return of, ot


@pytest.mark.parametrize("kind", ["gpt", "llama"])
def test_ten_adamw_steps_match_torch(kind, tmp_path):
    fm, tm = pair(kind, tmp_path)
    of, ot = adamw_pair(fm, tm)
    for step in range(10):
        ids, tg = batch(100 + step)
        of.zero_grad()
        lf = fm.loss(ids, tg)
        lf.backward()
        of.step()
        ot.zero_grad()
        lt = tm.loss(torch.tensor(ids), torch.tensor(tg))
        lt.backward()
        ot.step()
        # Updates of lr 3e-3 move the weights by ~1e-2 relative over the
        # run; the two float orders drift by rounding only.
        assert abs(lf.item() - lt.item()) <= 1e-5 * abs(lt.item()), step


def run_steps(model, opt, steps, first):
    losses = []
    for step in range(first, first + steps):
        ids, tg = batch(200 + step)
        opt.zero_grad()
        loss = model.loss(ids, tg)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def new_opt(model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return foundry.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                {"params": rest, "weight_decay": 0.0}],
                               lr=3e-3)


@pytest.mark.parametrize("kind", ["gpt", "llama"])
def test_resume_from_checkpoint_is_bit_exact(kind, tmp_path):
    # dropout on, so the dropout generator must be restored as well
    cfg = GPTConfig.from_dict(CONFIGS[kind].to_dict()).update(dropout=0.1)
    a = GPT(cfg, seed=5)
    oa = new_opt(a)
    straight = run_steps(a, oa, 10, 0)

    b = GPT(cfg, seed=5)
    ob = new_opt(b)
    first = run_steps(b, ob, 5, 0)
    b.save_pretrained(tmp_path)
    foundry.save_file(ob.state_dict()["state"],
                      os.path.join(tmp_path, "optim.safetensors"))
    rng = b.rng_state
    del b, ob

    c = GPT.from_pretrained(tmp_path)
    c.train()
    c.rng_state = rng
    oc = new_opt(c)
    oc.load_state_dict({"state": foundry.load_file(
        os.path.join(tmp_path, "optim.safetensors"), copy=True)})
    second = run_steps(c, oc, 5, 5)
    assert first + second == straight  # exact float equality
    pa = dict(a.named_parameters())
    for name, p in c.named_parameters():
        assert np.array_equal(p.detach().numpy().view(np.uint32),
                              pa[name].detach().numpy().view(np.uint32)), \
            name


def test_parameters_are_the_c_model_tensors():
    m = GPT(CONFIGS["gpt"], seed=0)
    names = [n for n, _ in m.named_parameters()]
    assert names[0] == "model.embed_tokens.weight"
    assert "model.layers.1.self_attn.q_proj.bias" in names
    assert "lm_head.weight" not in names  # tied
    w = m.model.layers[0].mlp.up_proj.weight
    assert tuple(w.shape) == (96, 48)
    with foundry.no_grad():
        w.fill_(0.0)
    # the C forward sees the write: the same tensor
    sd = m.state_dict()
    assert float(np.abs(sd["model.layers.0.mlp.up_proj.weight"].numpy())
                 .max()) == 0.0
    ll = GPT(CONFIGS["llama"], seed=0)
    lnames = [n for n, _ in ll.named_parameters()]
    assert "lm_head.weight" in lnames
    assert "model.layers.0.mlp.gate_proj.weight" in lnames
    assert not any(n.endswith("bias") for n in lnames)
    assert tuple(ll.model.layers[0].self_attn.k_proj.weight.shape) == (32, 64)


def test_train_and_eval_switch_dropout():
    cfg = GPTConfig.from_dict(CONFIGS["gpt"].to_dict()).update(dropout=0.5)
    m = GPT(cfg, seed=0)
    ids, _ = batch(0)
    with foundry.no_grad():
        m.eval()
        e1, e2 = m(ids).numpy(), m(ids).numpy()
        m.train()
        t1 = m(ids).numpy()
    assert np.array_equal(e1, e2)
    assert not np.array_equal(e1, t1)
