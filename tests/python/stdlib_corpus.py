"""A real corpus on every machine that runs the tests and benchmarks: the
Python standard library's own source files, in sorted order."""
import glob
import os
import sysconfig


def stdlib_docs(start, limit):
    """Whole stdlib .py files from the sorted list, starting at the file
    that follows `start` bytes, until `limit` bytes (one str per file)."""
    lib = sysconfig.get_paths()["stdlib"]
    docs, seen, total = [], 0, 0
    for path in sorted(glob.glob(os.path.join(lib, "**", "*.py"),
                              recursive=True)):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        n = len(text.encode())
        seen += n
        if seen <= start:
            continue
        docs.append(text)
        total += n
        if total >= limit:
            break
    return docs
