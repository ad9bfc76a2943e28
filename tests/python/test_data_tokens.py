"""Token datasets, progress bars, metrics and plots from Python
(foundry.data, foundry.progress).  Datasets are written here from the
documented layout (docs/data.md), independently of the C writer."""
import io
import math
import os
import struct
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import foundry
from foundry.data import TokenDataset, MetricsLog, plot_metrics
from foundry.progress import tqdm, trange

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fuzz"))
from gen_dataset_corpus import dataset  # noqa: E402


DOCS = [[1, 2, 3], [4, 5], [9, 0, 9, 8], list(range(10)) * 3, [7, 7]]


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "d.tok"
    p.write_bytes(bytes(dataset(DOCS, 10)))
    return p


def test_dataset_counts_and_tokens_match_what_was_written(small):
    ds = TokenDataset(small)
    assert len(ds) == sum(map(len, DOCS))
    assert ds.docs() == 5 and ds.vocab_size == 10
    assert ds.tokenizer_hash == 0x5eed
    assert ds.bytes() == 3 * len(ds)
    assert ds.read().numpy().tolist() == [t for d in DOCS for t in d]
    assert ds.tokens("train") + ds.tokens("val") == len(ds)
    assert ds.docs("train") >= 1 and ds.docs("val") >= 1
    assert ds.val_fraction == pytest.approx(0.1)
    ds.val_fraction = 0.5
    assert ds.val_fraction == 0.5
    with pytest.raises(ValueError, match="val_fraction 1.5 is not in"):
        ds.val_fraction = 1.5
    with pytest.raises(ValueError, match="split must be one of"):
        ds.tokens("test")
    with pytest.raises(IndexError, match="outside the split"):
        ds.read(0, 1000)
    ds.close()
    with pytest.raises(ValueError, match="closed"):
        len(ds)


def test_unigram_loss_is_the_smoothed_cross_entropy(small):
    ds = TokenDataset(small)
    train = ds.read(split="train").numpy()
    val = ds.read(split="val").numpy()
    counts = np.bincount(train, minlength=10)
    want = -np.mean(np.log((counts[val] + 1) / (len(train) + 10)))
    assert ds.unigram_loss("train", "val") == pytest.approx(want, rel=1e-12)


def test_loader_is_deterministic_and_seekable(small):
    ds = TokenDataset(small)
    a = ds.loader("all", batch_size=3, block_size=4, seed=9)
    batches = [next(a) for _ in range(5)]
    assert a.position == 5
    x, y = batches[0]
    assert x.shape == (3, 4) and x.dtype == foundry.int64
    flat = ds.read().numpy().tolist()
    for row_x, row_y in zip(x.numpy().tolist(), y.numpy().tolist()):
        # each row is a window of the concatenation, y shifted by one
        assert any(flat[s:s + 5] == row_x + row_y[-1:] for s in range(len(flat)))
    b = ds.loader("all", batch_size=3, block_size=4, seed=9)
    b.seek(3)
    x3, y3 = next(b)
    assert np.array_equal(x3.numpy(), batches[3][0].numpy())
    with pytest.raises(ValueError, match="fewer than T \\+ 1"):
        ds.loader("all", batch_size=1, block_size=len(ds))


@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(
    os.path.dirname(__file__), "..", "fuzz", "corpus", "dataset"))))
def test_corpus_files_open_exactly_when_valid(name):
    path = os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus",
                        "dataset", name)
    if name.startswith("valid_"):
        TokenDataset(path).close()
    else:
        with pytest.raises(ValueError):
            TokenDataset(path)


def test_corrupt_files_name_the_problem(tmp_path):
    p = tmp_path / "v.tok"
    p.write_bytes(bytes(dataset(DOCS, 10, version=7)))
    with pytest.raises(ValueError, match="version 7 not supported"):
        TokenDataset(p)
    with pytest.raises(OSError, match="cannot open"):
        TokenDataset(tmp_path / "missing.tok")


def test_tqdm_wraps_iterables_into_plain_lines():
    f = io.StringIO()
    out = [x * 2 for x in tqdm(range(4), desc="eval", file=f, mininterval=0)]
    assert out == [0, 2, 4, 6]
    lines = f.getvalue().splitlines()
    assert lines[0].startswith("eval  25% 1/4 [")
    assert lines[-1].startswith("eval 100% 4/4 [") and " it/s]" in lines[-1]
    assert "\r" not in f.getvalue()


def test_tqdm_update_postfix_context_and_disable():
    f = io.StringIO()
    with tqdm(total=100, unit="tok", file=f, mininterval=3600) as bar:
        bar.update(60)
        bar.set_postfix(loss=2.5, lr=1e-3)
        assert bar.n == 60
        with pytest.raises(TypeError, match="not a number"):
            bar.set_postfix(note="x")
    assert f.getvalue().count("\n") == 1
    assert "60/100" in f.getvalue() and "loss=2.5, lr=0.001]" in f.getvalue()
    g = io.StringIO()
    for _ in trange(5, file=g, disable=True):
        pass
    assert g.getvalue() == ""


def test_metrics_log_and_svg_plot_parse_as_xml(tmp_path):
    m = tmp_path / "metrics.jsonl"
    with MetricsLog(m) as log:
        for s in range(0, 200, 10):
            vals = {"train_loss": 4 * math.exp(-s / 50), "lr": 1e-3}
            if s % 50 == 0:
                vals["val_loss"] = 4.2 * math.exp(-s / 50)
            log.log(s, **vals)
        log.log(200, train_loss=float("nan"))
    import json
    rows = [json.loads(line) for line in m.read_text().splitlines()]
    assert rows[0] == {"step": 0, "train_loss": 4.0, "lr": 0.001,
                       "val_loss": 4.2}
    assert rows[-1] == {"step": 200, "train_loss": None}
    svg = tmp_path / "loss.svg"
    plot_metrics(m, svg, title="run <1> & more")
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg"
    texts = [t.text for t in root.iter(ns + "text")]
    assert "run <1> & more" in texts and "val loss" in texts and "lr" in texts
    assert len(list(root.iter(ns + "polyline"))) == 3
    (tmp_path / "bad.jsonl").write_text('{"step": 1}\nnot json\n')
    with pytest.raises(ValueError, match="line 2"):
        plot_metrics(tmp_path / "bad.jsonl", svg)


def test_write_token_dataset_from_a_directory_with_progress(tmp_path, capfd):
    from foundry.tokenizers import Tokenizer
    corpus = tmp_path / "corpus"
    (corpus / "pkg").mkdir(parents=True)
    (corpus / "a.py").write_text("print('hi')\n")
    (corpus / "pkg" / "b.py").write_text("x = 1\n")
    (corpus / "notes.txt").write_text("skipped\n")
    text = "".join(p.read_text() for p in corpus.rglob("*.py"))
    tok = Tokenizer.char_level(text)
    ds = foundry.data.write_token_dataset(tmp_path / "d.tok", corpus, tok,
                                          suffix=".py")
    assert ds.docs() == 2 and ds.bytes() == 12 + 6
    assert tok.decode(ds.read().numpy().tolist()) == "print('hi')\nx = 1\n"
    ds.check_tokenizer(tok)
    other = Tokenizer.char_level(text + "z")
    with pytest.raises(ValueError, match="tokenizer hash mismatch"):
        ds.check_tokenizer(other)
    with pytest.raises(TypeError, match="foundry.tokenizers.Tokenizer"):
        ds.check_tokenizer("gpt2")
    err = capfd.readouterr().err
    assert "tokenize 100% 18/18 [" in err and " B/s]" in err
    with pytest.raises(OSError, match="cannot read"):
        foundry.data.write_token_dataset(tmp_path / "e.tok", tmp_path / "nope",
                                         tok, progress=False)
