"""Progress bars: the C library's (include/foundry/data.h) behind tqdm's
names, so code written for tqdm runs unchanged.

    from foundry.progress import tqdm, trange
    for batch in tqdm(batches, desc="eval"): ...
    with tqdm(total=n_tokens, unit="tok") as bar:
        bar.update(512); bar.set_postfix(loss=2.31)

A bar is redrawn in place when the file is a terminal, else a plain line
is written every 10 seconds (and a final one).
"""
import numbers
import sys

from . import _c
from ._c import ffi, lib

__all__ = ["tqdm", "trange"]


class tqdm:  # noqa: N801  (tqdm's name)
    """Wraps an iterable (or counts by hand with update) and shows
    progress: percent, count, elapsed<ETA, smoothed rate, metrics."""

    def __init__(self, iterable=None, desc=None, total=None, unit="it",
                 disable=False, file=None, mininterval=None):
        if total is None and iterable is not None:
            try:
                total = len(iterable)
            except (TypeError, AttributeError):
                total = 0
        self.iterable = iterable
        self._file = file if file is not None else sys.stderr
        if disable:
            mode = lib.TM_PROGRESS_SILENT
        else:
            isatty = getattr(self._file, "isatty", None)
            mode = (lib.TM_PROGRESS_BAR if isatty is not None and isatty()
                    else lib.TM_PROGRESS_PLAIN)
        self._write = ffi.callback("void(*)(const char *, size_t, void *)",
                                   self._emit)
        p = lib.tm_progress_new_writer(
            ffi.NULL if desc is None else str(desc).encode(), int(total or 0),
            str(unit).encode(), mode, self._write, ffi.NULL)
        if p == ffi.NULL:
            raise _c.error()
        self._p = p
        if mininterval is not None:
            lib.tm_progress_set_interval(p, float(mininterval))

    def _emit(self, s, n, user):
        self._file.write(ffi.unpack(s, n).decode("utf-8", "replace"))
        flush = getattr(self._file, "flush", None)
        if flush is not None:
            flush()

    def _h(self):
        if self._p is None:
            raise ValueError("progress bar is closed")
        return self._p

    @property
    def n(self):
        return lib.tm_progress_count(self._h()) if self._p is not None else 0

    def update(self, n=1):
        lib.tm_progress_update(self._h(), int(n))

    def set_postfix(self, ordered_dict=None, **kwargs):
        """Shows numbers as name=value after the rate (tqdm's postfix)."""
        items = dict(ordered_dict or {}, **kwargs)
        for k, v in items.items():
            if not isinstance(v, numbers.Real):
                raise TypeError(f"set_postfix: {k}={v!r} is not a number")
            lib.tm_progress_set_metric(self._h(), str(k).encode(), float(v))

    def close(self):
        if self._p is not None:
            p, self._p = self._p, None
            lib.tm_progress_free(p)

    def __iter__(self):
        if self.iterable is None:
            raise TypeError("tqdm() without an iterable cannot be iterated")
        try:
            for x in self.iterable:
                yield x
                self.update(1)
        finally:
            self.close()

    def __len__(self):
        return len(self.iterable) if self.iterable is not None else 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_p", None) is not None:
            self.close()


def trange(*args, **kwargs):
    """tqdm(range(*args), **kwargs)."""
    return tqdm(range(*args), **kwargs)
