"""The `foundry` command-line program (bin/foundry, built by `make`).

Every subcommand's --help; each bad input gives exactly one line on stderr
that names the problem and a non-zero exit (2 for usage errors, 1 for
runtime errors); a tiny run end to end; --resume bit-exact.
"""
import os
import pathlib
import shutil
import struct
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("FOUNDRY_BIN", ROOT / "bin" / "foundry"))

if not BIN.exists():
    pytest.skip(f"{BIN} is not built (run make)", allow_module_level=True)

# A tiny model and corpus so that every training run here takes well under
# a second: the point is the program's behaviour, not what the model learns.
TINY = ["--vocab-size", "300", "--d-model", "32", "--layers", "1", "--heads", "2",
        "--context", "32", "--batch", "2", "--warmup", "1", "--eval-every", "3",
        "--eval-batches", "2", "--threads", "1", "--quiet"]


def run(*args, stdin=None):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True,
                          input=stdin, timeout=300)


def one_line_error(r, status, *needles):
    """The failure contract: status, nothing but one line on stderr, that
    line naming the subcommand and containing every needle."""
    err = r.stderr.decode()
    assert r.returncode == status, (r.returncode, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("foundry"), err
    for n in needles:
        assert n in err, (n, err)
    return err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    # The project's own docs: real text that is always there.
    for i, p in enumerate(sorted((ROOT / "docs").glob("*.md"))[:6]):
        shutil.copy(p, d / f"doc{i}.md")
    return d


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("run") / "r"
    r = run("train", "--data", corpus, "--steps", "6", *TINY, "--out", out)
    assert r.returncode == 0, r.stderr.decode()
    return out


# ------------------------------------------------------------------ help

SUBCOMMANDS = [["train"], ["generate"], ["eval"], ["inspect"], ["plot"],
               ["tokenize", "train"], ["tokenize", "encode"], ["tokenize", "decode"]]


@pytest.mark.parametrize("sub", SUBCOMMANDS, ids=" ".join)
def test_help_lists_usage_and_every_flag_with_its_default(sub):
    """Every flag shows its default, except a required one (which has
    none: "(required) (default none)" said it twice)."""
    r = run(*sub, "--help")
    assert r.returncode == 0 and r.stderr == b""
    out = r.stdout.decode()
    assert out.startswith("usage: foundry " + " ".join(sub))
    for line in out.splitlines():
        if line.startswith("  --"):
            if line.endswith("(required)"):
                assert "(default " not in line, line
            else:
                assert "(default " in line, line


def test_top_level_help_names_every_subcommand():
    r = run("--help")
    assert r.returncode == 0
    for sub in ("train", "generate", "eval", "tokenize", "inspect", "plot"):
        assert f"\n  {sub} " in r.stdout.decode()
    assert run("tokenize", "--help").returncode == 0


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith(b"foundry ")


def test_train_help_has_the_issue_flags():
    out = run("train", "--help").stdout.decode()
    for flag in ("--data", "--suffix", "--tokenizer", "--vocab-size", "--char", "--preset",
                 "--d-model", "--layers", "--heads", "--kv-heads", "--d-ff", "--context",
                 "--rope", "--rmsnorm", "--swiglu", "--dropout", "--steps", "--batch",
                 "--grad-accum", "--lr", "--min-lr", "--warmup", "--weight-decay", "--clip",
                 "--eval-every", "--eval-batches", "--checkpoint-every", "--seed", "--threads",
                 "--out", "--resume"):
        assert f"\n  {flag} " in out, flag


# ------------------------------------------------------------ bad input

def test_unknown_command():
    one_line_error(run("bogus"), 2, 'unknown command "bogus"')


def test_unknown_flag():
    one_line_error(run("train", "--bogus", "1"), 2, "foundry train: unknown flag --bogus")


def test_bad_flag_value_names_the_flag():
    err = one_line_error(run("train", "--lr", "abc", "--out", "x"), 2)
    assert err == 'foundry train: --lr: expected a number, got "abc"\n'
    one_line_error(run("train", "--steps", "0", "--out", "x"), 2, "--steps", '"0"')
    one_line_error(run("generate", "--top-p", "2", "--model", "x"), 2, "--top-p", '"2"')
    one_line_error(run("tokenize", "decode", "--tokenizer", "t.json", "12", "x1"), 2, '"x1"')


def test_missing_value_and_missing_required_flag():
    one_line_error(run("train", "--lr"), 2, "--lr: missing value")
    one_line_error(run("train", "--steps", "5"), 2, "--out RUN_DIR is required")
    one_line_error(run("generate", "--prompt", "x"), 2, "--model")


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.safetensors"
    one_line_error(run("inspect", missing), 1, "foundry inspect:", str(missing))
    one_line_error(run("train", "--data", tmp_path / "none", *TINY, "--out", tmp_path / "r"),
                   1, "foundry train:", "none")
    one_line_error(run("generate", "--model", tmp_path / "norun"), 1, "norun")


def test_corrupt_dataset(tmp_path, run_dir):
    bad = tmp_path / "bad.ftok"
    data = bytearray((run_dir / "data.ftok").read_bytes())
    bad.write_bytes(bytes(data[:len(data) // 2]))     # truncated
    one_line_error(run("eval", "--model", run_dir, "--data", bad), 1, "foundry eval:", str(bad))


def test_wrong_magic(tmp_path, run_dir):
    bad = tmp_path / "magic.ftok"
    data = bytearray((run_dir / "data.ftok").read_bytes())
    data[0:8] = b"NOTTOKDS"
    bad.write_bytes(bytes(data))
    one_line_error(run("eval", "--model", run_dir, "--data", bad), 1, "magic")


def test_wrong_version(tmp_path, run_dir):
    bad = tmp_path / "version.ftok"
    data = bytearray((run_dir / "data.ftok").read_bytes())
    data[8:12] = struct.pack("<I", 99)
    bad.write_bytes(bytes(data))
    one_line_error(run("eval", "--model", run_dir, "--data", bad), 1, "version 99")


def test_corrupt_checkpoint(tmp_path, run_dir):
    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken)
    st = (broken / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(st[:len(st) - 100])
    one_line_error(run("generate", "--model", broken, "--max-new-tokens", "3"), 1,
                   "foundry generate:", "model.safetensors")
    one_line_error(run("inspect", broken / "model.safetensors"), 1, "model.safetensors")
    one_line_error(run("eval", "--model", broken), 1, "model.safetensors")


def test_corrupt_trainer_state_on_resume(tmp_path, run_dir):
    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken)
    (broken / "trainer.json").write_text('{"format": "foundry-trainer", "version": 7}')
    one_line_error(run("train", "--out", broken, "--resume", "--steps", "8"), 1, "version")
    (broken / "trainer.json").write_text('{"format": ')
    one_line_error(run("train", "--out", broken, "--resume", "--steps", "8"), 1, "trainer.json")
    good = (run_dir / "trainer.json").read_text()
    (broken / "trainer.json").write_text(good.replace('"data": [', '"data": [1, '))
    one_line_error(run("train", "--out", broken, "--resume", "--steps", "8"), 1, "flags.data")
    (broken / "trainer.json").write_text(good.replace('"steps": 6', '"steps": "six"'))
    one_line_error(run("train", "--out", broken, "--resume", "--steps", "8"), 1,
                   "flags.steps has the wrong type")


def test_tokenizer_hash_mismatch(tmp_path, corpus, run_dir):
    other = tmp_path / "other.json"
    r = run("tokenize", "train", "--data", corpus, "--vocab-size", "280", "--out", other, "--quiet")
    assert r.returncode == 0, r.stderr.decode()
    one_line_error(run("train", "--data", run_dir / "data.ftok", "--tokenizer", other, *TINY[2:],
                       "--steps", "2", "--out", tmp_path / "r"), 1, "tokenizer hash mismatch")
    shutil.copytree(run_dir, tmp_path / "swapped")
    shutil.copy(other, tmp_path / "swapped" / "tokenizer.json")
    one_line_error(run("eval", "--model", tmp_path / "swapped"), 1, "hash mismatch")


def test_resume_refuses_a_changed_model_flag(tmp_path, run_dir):
    shutil.copytree(run_dir, tmp_path / "r")
    one_line_error(run("train", "--out", tmp_path / "r", "--resume", "--steps", "8", "--lr", "0.5"),
                   2, "--lr", "cannot change on --resume")


# -------------------------------------------------------------- end to end

def test_train_writes_the_run_directory(run_dir):
    for name in ("model.safetensors", "config.json", "tokenizer.json", "optimizer.safetensors",
                 "trainer.json", "metrics.jsonl", "loss.svg", "data.ftok"):
        assert (run_dir / name).stat().st_size > 0, name
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 6 and '"val_loss"' in lines[2] and '"val_loss"' in lines[5]
    assert (run_dir / "loss.svg").read_text().lstrip().startswith(("<svg", "<?xml"))


def test_generate_streams_text_after_the_prompt(run_dir):
    r = run("generate", "--model", run_dir, "--prompt", "The ", "--max-new-tokens", "12",
            "--seed", "3")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.startswith(b"The ") and len(r.stdout) > len(b"The \n")
    again = run("generate", "--model", run_dir, "--prompt", "The ", "--max-new-tokens", "12",
                "--seed", "3")
    assert again.stdout == r.stdout   # seeded


def test_eval_prints_every_metric(run_dir):
    r = run("eval", "--model", run_dir, "--split", "val", "--batch", "2")
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    for key in ("loss", "perplexity", "bits/byte", "accuracy", "unigram"):
        assert key in out


def test_plot_redraws_the_svg(run_dir):
    svg = run_dir / "loss.svg"
    svg.unlink()
    r = run("plot", run_dir)
    assert r.returncode == 0, r.stderr.decode()
    assert "val_loss" in svg.read_text() or "val" in svg.read_text()


def test_inspect_lists_tensors_and_metadata(run_dir):
    r = run("inspect", run_dir / "model.safetensors")
    assert r.returncode == 0
    out = r.stdout.decode()
    assert "model.embed_tokens.weight" in out and "F32" in out and "[300, 32]" in out
    assert "format: pt" in out and "total:" in out


def test_tokenize_encode_decode_round_trip(run_dir):
    tok = run_dir / "tokenizer.json"
    text = "Ünïcode, bytes and spaces  \n\tdone"
    r = run("tokenize", "encode", "--tokenizer", tok, text)
    assert r.returncode == 0, r.stderr.decode()
    ids = r.stdout.split()
    assert all(i.isdigit() for i in ids)
    assert run("tokenize", "encode", "--tokenizer", tok, stdin=text.encode()).stdout == r.stdout
    back = run("tokenize", "decode", "--tokenizer", tok, *[i.decode() for i in ids])
    assert back.returncode == 0 and back.stdout == text.encode()


def test_char_level_run(tmp_path, corpus):
    out = tmp_path / "c"
    args = [a for a in TINY if a not in ("--vocab-size", "300")]
    r = run("train", "--data", corpus, "--char", "--steps", "2", *args, "--out", out)
    assert r.returncode == 0, r.stderr.decode()
    assert run("generate", "--model", out, "--prompt", "a", "--max-new-tokens", "4").returncode == 0


def test_resume_is_bit_exact(tmp_path, corpus):
    """8 steps straight, and 4 steps then --resume to 8: the same bytes."""
    common = ["--data", corpus, "--steps", "8", *TINY, "--dropout", "0.1", "--grad-accum", "2"]
    a, b = tmp_path / "a", tmp_path / "b"
    assert run("train", *common, "--out", a).returncode == 0
    r = run("train", *common, "--stop-at", "4", "--out", b)
    assert r.returncode == 0, r.stderr.decode()
    assert b"stopped at step 4" in r.stdout
    assert (a / "model.safetensors").read_bytes() != (b / "model.safetensors").read_bytes()
    r = run("train", "--out", b, "--resume", "--steps", "8", "--quiet")
    assert r.returncode == 0, r.stderr.decode()
    for name in ("model.safetensors", "optimizer.safetensors"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / "metrics.jsonl").read_text() .count("\n") == (b / "metrics.jsonl").read_text().count("\n")


def test_model_flags_reach_the_config(tmp_path, corpus):
    out = tmp_path / "llama"
    args = [a for a in TINY]
    r = run("train", "--data", corpus, "--steps", "2", *args, "--heads", "4", "--kv-heads", "2",
            "--rope", "--rmsnorm", "--swiglu", "--out", out)
    assert r.returncode == 0, r.stderr.decode()
    import json
    c = json.loads((out / "config.json").read_text())
    assert (c["num_attention_heads"], c["num_key_value_heads"]) == (4, 2)
    assert (c["norm"], c["mlp"], c["position_embedding"]) == ("rmsnorm", "swiglu", "rope")
    assert c["hidden_size"] == 32 and c["intermediate_size"] == 128   # 8/3 x 32 rounded up to 64s
    assert c["vocab_size"] == 300 and c["max_position_embeddings"] == 32
