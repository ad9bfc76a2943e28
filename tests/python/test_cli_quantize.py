"""`foundry quantize`, `foundry inspect` on GGUF, and `foundry generate` /
`foundry eval` on quantized models (bin/foundry, built by `make`).

A tiny model is trained once per module; each format is quantized from it,
read back by the `gguf` package (an independent reader: types, shapes,
metadata, and the RMSE the command printed recomputed from its
dequantizer), evaluated and sampled from.  Bad arguments and corrupt inputs
give one line on stderr and exit 2 (usage) or 1 (runtime).
"""
import json
import math
import os
import pathlib
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("FOUNDRY_BIN", ROOT / "bin" / "foundry"))

if not BIN.exists():
    pytest.skip(f"{BIN} is not built (run make)", allow_module_level=True)

# d_model 64: whole 32-value blocks, but not 256-value super-blocks (the
# K-quant runs use the 256-wide model below).
TINY = ["--vocab-size", "300", "--layers", "1", "--heads", "2", "--context", "32",
        "--batch", "2", "--warmup", "1", "--eval-every", "3", "--eval-batches", "2",
        "--threads", "1", "--quiet"]
FORMATS_32 = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1"]
FORMATS_K = ["q4_k", "q5_k", "q6_k", "q4_k_m", "q5_k_m"]


def run(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, timeout=300)


def ok(r):
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def one_line_error(r, status, *needles):
    err = r.stderr.decode()
    assert r.returncode == status, (r.returncode, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("foundry quantize: ") or err.startswith("foundry "), err
    for n in needles:
        assert n in err, (n, err)
    return err


def train(tmp_path_factory, d_model):
    corpus = tmp_path_factory.mktemp("corpus")
    for i, p in enumerate(sorted((ROOT / "docs").glob("*.md"))[:6]):
        shutil.copy(p, corpus / f"doc{i}.md")
    out = tmp_path_factory.mktemp("run") / "r"
    ok(run("train", "--data", corpus, "--steps", "8", "--d-model", d_model, *TINY, "--out", out))
    return out


@pytest.fixture(scope="module")
def run64(tmp_path_factory):
    return train(tmp_path_factory, 64)


@pytest.fixture(scope="module")
def run256(tmp_path_factory):
    return train(tmp_path_factory, 256)


def read_safetensors(path):
    """name -> float32 array, by the published layout (8-byte header
    length, JSON header, raw little-endian data)."""
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    out = {}
    for name, info in head.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        dt = {"F32": np.float32, "F16": np.float16, "U8": np.uint8}[info["dtype"]]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=dt).reshape(info["shape"])
    return out


def table(out):
    """The per-tensor rows the command printed: name -> (type, bytes, rmse)."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^  (\S+)\s+\[[^\]]*\]\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)%$", line)
        if m:
            rows[m[1]] = (m[2], int(m[3]), float(m[4]))
    return rows


def eval_ppl(model, data):
    out = ok(run("eval", "--model", model, "--data", data, "--quiet", "--threads", "1"))
    return float(re.search(r"perplexity\s+(\S+)", out)[1])


@pytest.mark.parametrize("fmt", FORMATS_32 + FORMATS_K)
def test_quantize_each_format_reads_back_with_the_gguf_package(tmp_path, run64, run256, fmt):
    gguf = pytest.importorskip("gguf")
    src = run256 if fmt in FORMATS_K else run64
    out = tmp_path / f"m_{fmt}.gguf"
    text = ok(run("quantize", src, out, "--type", fmt))
    rows = table(text)
    assert "wrote" in text and "total rmse" in text
    weights = read_safetensors(src / "model.safetensors")
    assert set(rows) == set(weights)
    r = gguf.GGUFReader(str(out))
    assert r.fields["general.architecture"].contents() == "foundry_gpt"
    assert r.fields["general.quantization_version"].contents() == 2
    cfg = json.loads(r.fields["foundry.config"].contents())
    assert cfg["hidden_size"] == weights["model.embed_tokens.weight"].shape[1]
    assert json.loads(r.fields["tokenizer.huggingface.json"].contents())["model"]
    seen = 0
    for t in r.tensors:
        typ, nbytes, rmse = rows[t.name]
        assert t.tensor_type.name.lower() == typ.rstrip("*"), t.name
        assert int(t.n_bytes) == nbytes
        ref = weights[t.name].astype(np.float32)
        # GGUF dims are innermost first.
        assert [int(d) for d in t.shape][::-1] == list(ref.shape)
        deq = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(ref.shape)
        got = math.sqrt(np.mean((ref.astype(np.float64) - deq.astype(np.float64)) ** 2))
        # The command prints 4 significant digits.
        assert got == pytest.approx(rmse, rel=1e-3, abs=1e-12), t.name
        if t.tensor_type.name.startswith("Q"):
            seen += 1
            # Relative error of a 4-bit format is a few percent, 8-bit well
            # under 1%: far from both 0 and 1.
            rel = got / math.sqrt(np.mean(ref.astype(np.float64) ** 2))
            assert 1e-4 < rel < (0.02 if fmt == "q8_0" else 0.2), (t.name, rel)
    assert seen >= 6
    if fmt in FORMATS_K:
        # 256-wide rows: the K-quants are used as such, no fallback.
        assert "(0 fell back)" in text
        assert any(v[0] == fmt[:4] for v in rows.values())
    if fmt.endswith("_m"):
        assert rows["model.embed_tokens.weight"][0] == "q6_k"
        assert rows["model.layers.0.self_attn.v_proj.weight"][0] == "q6_k"
        assert rows["model.layers.0.mlp.down_proj.weight"][0] == "q6_k"
        assert rows["model.layers.0.self_attn.q_proj.weight"][0] == fmt[:4]


def test_k_quants_fall_back_on_rows_not_of_256(tmp_path, run64):
    text = ok(run("quantize", run64, tmp_path / "k.gguf", "--type", "q4_k"))
    rows = table(text)
    assert rows["model.layers.0.self_attn.q_proj.weight"][0] == "q5_0*"
    assert re.search(r"\((\d+) fell back\)", text)[1] != "0"


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q5_1"])
def test_eval_and_generate_on_a_quantized_gguf(tmp_path, run64, fmt):
    out = tmp_path / "m.gguf"
    ok(run("quantize", run64, out, "--type", fmt, "--quiet"))
    data = run64 / "data.ftok"
    base = eval_ppl(run64, data)
    q = eval_ppl(out, data)
    # An 8-step model is close to uniform over 300 tokens: quantization
    # moves its perplexity by well under 10% (the demo-model figures are
    # in docs/quantize.md); a broken forward would not stay this close.
    assert abs(q / base - 1) < (0.01 if fmt == "q8_0" else 0.1), (base, q)
    g = ok(run("generate", "--model", out, "--prompt", "The ", "--temperature", "0",
               "--max-new-tokens", "8", "--threads", "1"))
    assert g.startswith("The ")
    # Greedy decoding is deterministic.
    assert g == ok(run("generate", "--model", out, "--prompt", "The ", "--temperature", "0",
                       "--max-new-tokens", "8", "--threads", "1"))


def test_directory_and_safetensors_outputs(tmp_path, run64):
    d = tmp_path / "qdir"
    ok(run("quantize", run64, d, "--type", "q8_0", "--quiet"))
    assert sorted(p.name for p in d.iterdir()) == ["config.json", "model.gguf", "tokenizer.json"]
    s = tmp_path / "sdir"
    ok(run("quantize", run64, s, "--type", "q4_0", "--format", "safetensors", "--quiet"))
    assert sorted(p.name for p in s.iterdir()) == ["config.json", "model.safetensors",
                                                   "tokenizer.json"]
    # The convention: U8 [rows, row bytes] plus foundry.quant.<name> metadata.
    raw = (s / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    meta = head["__metadata__"]
    assert meta["foundry.quant.model.layers.0.mlp.up_proj.weight"] == "q4_0[256,64]"
    assert head["model.layers.0.mlp.up_proj.weight"]["dtype"] == "U8"
    assert head["model.layers.0.mlp.up_proj.weight"]["shape"] == [256, 64 // 32 * 18]
    assert head["model.norm.weight"]["dtype"] == "F32"
    # Both load for generation and evaluation; the safetensors model
    # re-quantizes to GGUF (dequantized first).
    for model in (d, s):
        ok(run("generate", "--model", model, "--prompt", "a", "--max-new-tokens", "3",
               "--temperature", "0"))
    f = tmp_path / "single.safetensors"
    ok(run("quantize", s, f, "--type", "q8_0", "--quiet"))
    assert (tmp_path / "config.json").exists()
    ok(run("quantize", f, tmp_path / "again.gguf", "--type", "q4_1", "--quiet"))


def test_keep_rules_and_inspect(tmp_path, run64):
    out = tmp_path / "k.gguf"
    text = ok(run("quantize", run64, out, "--type", "q4_0", "--keep", "*embed_tokens*=f16",
                  "--keep=model.layers.0.mlp.*=q8_0"))
    rows = table(text)
    assert rows["model.embed_tokens.weight"][0] == "f16"
    assert rows["model.layers.0.mlp.up_proj.weight"][0] == "q8_0"
    assert rows["model.layers.0.self_attn.q_proj.weight"][0] == "q4_0"
    assert rows["model.norm.weight"][0] == "f32"
    ins = ok(run("inspect", out))
    assert re.search(r"GGUF version 3, alignment 32", ins)
    assert "general.architecture (string): \"foundry_gpt\"" in ins
    assert re.search(r"model\.embed_tokens\.weight\s+f16\s+\[300, 64\]\s+38400 bytes at 0", ins)
    assert re.search(r"model\.layers\.0\.mlp\.up_proj\.weight\s+q8_0\s+\[256, 64\]\s+17408 bytes", ins)
    # The tokenizer text is long: cut short, with its length.
    assert re.search(r"tokenizer\.huggingface\.json \(string\): \".*\"\.\.\. \(\d+ bytes\)", ins)


def test_inspect_abbreviates_long_arrays(tmp_path):
    gguf = pytest.importorskip("gguf")
    p = tmp_path / "arr.gguf"
    w = gguf.GGUFWriter(str(p), "test")
    w.add_array("many", list(range(100)))
    w.add_array("words", ["a", "b", "c"])
    w.add_tensor("t", np.arange(64, dtype=np.float32).reshape(2, 32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ins = ok(run("inspect", p))
    assert "many (array of int32): [0, 1, 2, 3, 4, 5, 6, 7, ... (100 total)]" in ins
    assert 'words (array of string): ["a", "b", "c"]' in ins
    assert re.search(r"\n  t\s+f32\s+\[2, 32\]\s+256 bytes at 0\n", ins)


def test_help_and_bad_arguments(tmp_path, run64):
    r = run("quantize", "--help")
    assert r.returncode == 0 and r.stdout.decode().startswith("usage: foundry quantize")
    for line in r.stdout.decode().splitlines():
        if line.startswith("  --"):
            assert ("(default " in line) != line.endswith("(required)"), line
    one_line_error(run("quantize", run64, tmp_path / "x.gguf"), 2, "--type")
    one_line_error(run("quantize", run64, tmp_path / "x.gguf", "--type", "q3_k"), 2, '"q3_k"')
    one_line_error(run("quantize", run64, "--type", "q8_0"), 2, "missing argument")
    one_line_error(run("quantize", run64, tmp_path / "x.gguf", "--type", "q8_0", "--keep", "noeq"),
                   2, "--keep", '"noeq"')
    one_line_error(run("quantize", run64, tmp_path / "x.gguf", "--type", "q8_0", "--keep", "*=f99"),
                   2, "--keep")
    one_line_error(run("quantize", run64, tmp_path / "x.gguf", "--type", "q8_0", "--keep", "*=q8_k"),
                   2, "q8_k")
    one_line_error(run("quantize", run64, tmp_path / "x", "--type", "q8_0", "--format", "bin"),
                   2, "--format")
    one_line_error(run("quantize", run64, tmp_path / "x.gguf", "--type", "q8_0", "--keep"),
                   2, "--keep: missing value")
    one_line_error(run("quantize", tmp_path / "nope", tmp_path / "x.gguf", "--type", "q8_0"),
                   1, "nope")
    assert not (tmp_path / "x.gguf").exists()


def test_corrupt_and_inconsistent_inputs(tmp_path, run64):
    good = tmp_path / "g.gguf"
    ok(run("quantize", run64, good, "--type", "q8_0", "--quiet"))
    raw = good.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(raw[: len(raw) // 2])
    one_line_error(run("quantize", cut, tmp_path / "o.gguf", "--type", "q4_0"), 1, "cut.gguf")
    one_line_error(run("inspect", cut), 1, "cut.gguf")
    one_line_error(run("eval", "--model", cut, "--data", run64 / "data.ftok"), 1, "cut.gguf")
    bad = tmp_path / "magic.gguf"
    bad.write_bytes(b"GGUX" + raw[4:])
    one_line_error(run("generate", "--model", bad, "--prompt", "a"), 1, "magic.gguf")
    # A safetensors model whose quantized tensor lost its description.
    s = tmp_path / "s"
    ok(run("quantize", run64, s, "--type", "q8_0", "--format", "safetensors", "--quiet"))
    raw = (s / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    del head["__metadata__"]["foundry.quant.model.layers.0.mlp.up_proj.weight"]
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    (s / "model.safetensors").write_bytes(struct.pack("<Q", len(h)) + h + raw[8 + n:])
    one_line_error(run("eval", "--model", s, "--quiet"), 1, "model.layers.0.mlp.up_proj.weight")
    # A directory OUT that already holds the other format.
    d = tmp_path / "d"
    d.mkdir()
    (d / "model.safetensors").write_bytes(b"x")
    one_line_error(run("quantize", run64, d, "--type", "q8_0"), 1, "model.safetensors")
