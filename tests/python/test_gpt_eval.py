"""GPT.evaluate over a token dataset written from text (char-level
tokenizer): its figures against the loss computed window by window in
Python, and the definitions of perplexity and bits per byte."""
import math

import numpy as np

import foundry
from foundry.data import write_token_dataset
from foundry.models import GPT, GPTConfig
from foundry.tokenizers import Tokenizer

TEXT = ["the quick brown fox jumps over the lazy dog. " * 3,
        "pack my box with five dozen liquor jugs! " * 2,
        "sphinx of black quartz, judge my vow. " * 4]


def test_evaluate_matches_window_losses(tmp_path):
    files = []
    for i, t in enumerate(TEXT):
        p = tmp_path / f"doc{i}.txt"
        p.write_text(t)
        files.append(str(p))
    tok = Tokenizer.char_level("".join(TEXT))
    ds = write_token_dataset(tmp_path / "d.tok", files, tok, progress=False)
    cfg = GPTConfig.preset("gpt-tiny", vocab_size=tok.get_vocab_size(),
                           context=32, d_model=32, n_layers=1, n_heads=2,
                           d_ff=64)
    model = GPT(cfg, seed=0)
    r = model.evaluate(ds, "all", batch_size=4, block_size=16)
    assert model.training  # restored
    toks = ds.read().numpy()
    n = len(toks)
    assert r["tokens"] == n - 1
    model.eval()
    total = 0.0
    with foundry.no_grad():
        for s in range(0, n - 1, 16):
            T = min(16, n - 1 - s)
            x = toks[None, s:s + T]
            y = toks[None, s + 1:s + 1 + T]
            total += model.loss(x, y).item() * T
    # F32 sums of the same terms in another grouping
    assert abs(r["loss"] - total / (n - 1)) <= 1e-5 * total / (n - 1)
    assert math.isclose(r["perplexity"], math.exp(r["loss"]), rel_tol=1e-12)
    want_bpb = r["loss"] * (n - 1) / (math.log(2) * ds.bytes())
    assert math.isclose(r["bits_per_byte"], want_bpb, rel_tol=1e-12)
    assert 0.0 <= r["accuracy"] <= 1.0
