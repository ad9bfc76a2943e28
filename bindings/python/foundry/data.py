"""Datasets: IDX files (MNIST, Fashion-MNIST) and mini-batches."""
import os

from . import _c
from ._c import ffi, lib
from ._base import wrap
from ._tensor import Tensor

__all__ = ["load_idx", "batches"]


def load_idx(path):
    """The tensor in an IDX file (raw or gzip-compressed; the C library
    validates the header and sizes and inflates .gz itself)."""
    return wrap(lib.tm_idx_load(os.fsencode(os.fspath(path))))


def load_idx_bytes(data):
    buf = ffi.from_buffer(data)
    return wrap(lib.tm_idx_load_buffer(buf, len(buf)))


def batches(*tensors, batch_size, shuffle=False, drop_last=False):
    """Yields tuples of mini-batches (rows of each tensor, the same rows for
    all), in order or in a fresh random order (foundry's generator)."""
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("batches() takes tensors")
    n = len(tensors[0])
    if any(len(t) != n for t in tensors):
        raise ValueError("batches(): tensors of different lengths")
    from ._create import rand, arange
    order = rand(n).argsort() if shuffle else arange(n)
    stop = n - n % batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        idx = order[i:i + batch_size]
        yield tuple(t.index_select(0, idx) for t in tensors)


# ------------------------------------------------------------ token datasets
# Token datasets (include/foundry/data.h, docs/data.md): files of tokenized
# documents with a train/val split by document and a seeded window loader.

__all__ += ["TokenDataset", "TokenLoader", "write_token_dataset",
            "plot_metrics", "MetricsLog"]

_SPLITS = {"all": lib.TM_SPLIT_ALL, "train": lib.TM_SPLIT_TRAIN,
           "val": lib.TM_SPLIT_VAL}


def _split(name):
    try:
        return _SPLITS[name]
    except (KeyError, TypeError):
        raise ValueError(f"split must be one of {sorted(_SPLITS)}, not "
                         f"{name!r}") from None


def _path(p):
    return os.fsencode(os.fspath(p))


def _tokenizer_ptr(tok):
    # foundry.tokenizers.Tokenizer keeps its C handle in ._p, as Tensor does
    p = getattr(tok, "_p", None)
    if p is None or ffi.typeof(p) != ffi.typeof("tm_tokenizer *"):
        raise TypeError("tokenizer must be a foundry.tokenizers.Tokenizer, "
                        f"not {type(tok).__name__}")
    return p


class TokenDataset:
    """A token dataset file, validated whole at open (mapped, not read).

        ds = foundry.data.TokenDataset("data.tok")
        len(ds), ds.tokens("val"), ds.val_fraction = 0.05
        for x, y in ds.loader("train", batch_size=8, block_size=256, seed=1):
            ...  # x, y: int64 [8, 256], y is x shifted by one
    """

    def __init__(self, path):
        p = lib.tm_token_dataset_open(_path(path))
        if p == ffi.NULL:
            raise _c.error()
        self._p = ffi.gc(p, lib.tm_token_dataset_close)
        self.path = os.fspath(path)

    def close(self):
        """Unmaps the file (loaders made from it must not be used after)."""
        if self._p is not None:
            ffi.release(self._p)
            self._p = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _h(self):
        if self._p is None:
            raise ValueError("TokenDataset is closed")
        return self._p

    def __len__(self):
        return self.tokens("all")

    def __repr__(self):
        if self._p is None:
            return "TokenDataset(closed)"
        return (f"TokenDataset({self.path!r}, docs={self.docs()}, "
                f"tokens={len(self)}, vocab_size={self.vocab_size})")

    def tokens(self, split="all"):
        return _c.check(lib.tm_token_dataset_tokens(self._h(), _split(split)))

    def docs(self, split="all"):
        return _c.check(lib.tm_token_dataset_docs(self._h(), _split(split)))

    def bytes(self, split="all"):
        """Bytes of source text of the split's documents."""
        return _c.check(lib.tm_token_dataset_bytes(self._h(), _split(split)))

    @property
    def vocab_size(self):
        return lib.tm_token_dataset_vocab_size(self._h())

    @property
    def tokenizer_hash(self):
        return lib.tm_token_dataset_tokenizer_hash(self._h())

    @property
    def val_fraction(self):
        return lib.tm_token_dataset_val_fraction(self._h())

    @val_fraction.setter
    def val_fraction(self, f):
        _c.check(lib.tm_token_dataset_set_val_fraction(self._h(), float(f)))

    def read(self, start=0, n=None, split="all"):
        """Tokens [start, start+n) of the split as an int64 Tensor."""
        if n is None:
            n = self.tokens(split) - start
        shape = ffi.new("int64_t[1]", [n])
        t = wrap(lib.tm_empty(shape, 1, lib.TM_I64))
        out = ffi.cast("int64_t *", lib.tm_data(t._p))
        _c.check(lib.tm_token_dataset_read(self._h(), _split(split), start,
                                           n, out))
        return t

    def unigram_loss(self, fit="train", eval="val"):
        """Nats/token of `eval` under the add-one-smoothed unigram
        distribution of `fit`: the baseline a language model must beat."""
        v = lib.tm_token_dataset_unigram_loss(self._h(), _split(fit),
                                              _split(eval))
        if v != v:
            raise _c.error()
        return v

    def check_tokenizer(self, tokenizer):
        """Raises ValueError unless the dataset was written with it."""
        _c.check(lib.tm_token_dataset_check_tokenizer(
            self._h(), _tokenizer_ptr(tokenizer)))

    def loader(self, split="train", batch_size=8, block_size=256, seed=0):
        return TokenLoader(self, split, batch_size, block_size, seed)


class TokenLoader:
    """Endless (x, y) batches of random windows of a split; batch k of a
    seed is always the same, so seek(k) resumes a run exactly."""

    def __init__(self, dataset, split, batch_size, block_size, seed=0):
        p = lib.tm_token_loader_new(dataset._h(), _split(split), batch_size,
                                    block_size, seed)
        if p == ffi.NULL:
            raise _c.error()
        self._dataset = dataset   # the loader reads its mapping
        self._p = ffi.gc(p, lib.tm_token_loader_free)

    def __iter__(self):
        return self

    def __next__(self):
        x = ffi.new("tm_tensor **")
        y = ffi.new("tm_tensor **")
        if self._dataset._p is None:
            raise ValueError("the TokenDataset of this loader is closed")
        _c.check(lib.tm_token_loader_next(self._p, x, y))
        return wrap(x[0]), wrap(y[0])

    @property
    def position(self):
        """Batches drawn so far (what a checkpoint stores)."""
        return lib.tm_token_loader_position(self._p)

    def seek(self, batches):
        _c.check(lib.tm_token_loader_seek(self._p, batches))


def write_token_dataset(out, inputs, tokenizer, suffix=None, progress=True):
    """Tokenizes files (directories: every file under them, sorted; only
    names ending in `suffix` when given) into the dataset `out`, one
    document per file with the tokenizer's end-of-text id after each.
    Returns the opened TokenDataset."""
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    paths = [ffi.new("char[]", _path(p)) for p in inputs]
    arr = ffi.new("const char *[]", paths)
    from .progress import tqdm
    bar = tqdm(desc="tokenize", total=0, unit="B", disable=not progress)
    try:
        _c.check(lib.tm_token_dataset_write(
            _path(out), arr, len(paths),
            ffi.NULL if suffix is None else suffix.encode(),
            _tokenizer_ptr(tokenizer), bar._h()))
    finally:
        bar.close()
    return TokenDataset(out)


class MetricsLog:
    """Training metrics as JSON lines: log(step, train_loss=..., lr=...)."""

    def __init__(self, path, append=False):
        p = lib.tm_metrics_open(_path(path), bool(append))
        if p == ffi.NULL:
            raise _c.error()
        self._p = p

    def log(self, step, **values):
        keys = [ffi.new("char[]", k.encode()) for k in values]
        _c.check(lib.tm_metrics_log(
            self._p, int(step), len(keys), ffi.new("const char *[]", keys),
            ffi.new("double[]", [float(v) for v in values.values()])))

    def close(self):
        if self._p is not None:
            p, self._p = self._p, None
            _c.check(lib.tm_metrics_close(p))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_p", None) is not None:
            lib.tm_metrics_close(self._p)


def plot_metrics(metrics_path, svg_path, title=None):
    """Draws train/val loss (and lr) from a metrics file as an SVG."""
    _c.check(lib.tm_plot_metrics_svg(
        _path(metrics_path), _path(svg_path),
        ffi.NULL if title is None else title.encode()))
