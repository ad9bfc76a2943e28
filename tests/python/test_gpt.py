"""foundry.models without a reference package: GPTConfig (presets, dicts,
config.json), errors as Python exceptions, gradient accumulation, the KV
cache from Python, save/load."""
import json

import numpy as np
import pytest

import foundry
from foundry.models import GPT, GPTConfig


def small(**kw):
    return GPTConfig.preset("gpt-tiny", vocab_size=61, context=16,
                            d_model=32, n_layers=2, n_heads=4, d_ff=64, **kw)


def test_preset_and_dict_round_trip():
    cfg = GPTConfig.preset("smollm2-135m")
    assert (cfg.d_model, cfg.n_heads, cfg.n_kv_heads) == (576, 9, 3)
    assert cfg.pos == "rope" and cfg.norm == "rmsnorm" and cfg.mlp == "swiglu"
    assert cfg.rope["theta"] == 1e5
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
    assert GPTConfig.from_json_string(cfg.to_json_string()).to_dict() == \
        GPTConfig.from_json_string(
            GPTConfig.from_json_string(cfg.to_json_string())
            .to_json_string()).to_dict()
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        GPTConfig.preset("nope")
    with pytest.raises(AttributeError, match="no field 'width'"):
        GPTConfig(width=3)


def test_hf_config_json_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({
        "model_type": "llama", "vocab_size": 32000, "hidden_size": 2048,
        "intermediate_size": 5632, "num_hidden_layers": 22,
        "num_attention_heads": 32, "num_key_value_heads": 4,
        "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "tie_word_embeddings": False,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
        "torch_dtype": "bfloat16"}))
    cfg = GPTConfig.from_json_file(p)
    want = GPTConfig.preset("tinyllama-1.1b")
    for k in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads",
              "d_ff", "context", "tie_embeddings", "bos_id", "eos_id"):
        assert getattr(cfg, k) == getattr(want, k), k
    p.write_text('{"model_type": "llama", "vocab_size": "many"}')
    with pytest.raises(ValueError, match='"vocab_size" must be an integer'):
        GPTConfig.from_json_file(p)


def test_bad_config_and_ids_raise():
    with pytest.raises(ValueError, match="n_kv_heads 3 does not divide"):
        GPT(small(n_kv_heads=3))
    m = GPT(small())
    with pytest.raises(IndexError):
        m(np.full((1, 4), 61))
    with pytest.raises(IndexError, match="pass the context 16"):
        m(np.zeros((1, 17), dtype=np.int64))


def test_gradient_accumulation_equals_the_full_batch():
    m = GPT(small(), seed=1)
    r = np.random.RandomState(0)
    x, y = r.randint(0, 61, (4, 12)), r.randint(0, 61, (4, 12))
    m.loss(x, y).backward()
    full = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
    m.zero_grad()
    for half in (slice(0, 2), slice(2, 4)):
        (m.loss(x[half], y[half]) * 0.5).backward()
    for n, p in m.named_parameters():
        g = p.grad.numpy()
        # two F32 sums of the same terms: rounding only
        assert np.abs(g - full[n]).max() <= 1e-5 * np.abs(full[n]).max() \
            + 1e-9, n


def test_cache_from_python_matches_the_full_forward():
    m = GPT(small(pos="rope"), seed=2).eval()
    ids = np.random.RandomState(1).randint(0, 61, (1, 9))
    with foundry.no_grad():
        full = m(ids).numpy()
        cache = m.new_cache(batch=1)
        a = m(ids[:, :5], cache=cache).numpy()
        b = m(ids[:, 5:], cache=cache, last_only=True).numpy()
    assert len(cache) == 9
    scale = np.abs(full).max()
    assert np.abs(a - full[:, :5]).max() <= 1e-5 * scale
    assert np.abs(b[:, 0] - full[:, 8]).max() <= 1e-5 * scale


def test_save_and_load(tmp_path):
    m = GPT(small(), seed=3)
    m.save_pretrained(tmp_path / "run")
    back = foundry.models.load(tmp_path / "run")
    assert not back.training
    assert back.config.to_dict() == m.config.to_dict()
    ids = np.arange(8)[None] % 61
    with foundry.no_grad():
        assert np.array_equal(back.eval()(ids).numpy(), m.eval()(ids).numpy())
    with pytest.raises(OSError):
        GPT.from_pretrained(tmp_path / "missing")
