"""Writes tests/fuzz/corpus/dataset/: valid token datasets (format in
docs/data.md) and one corruption per reader check, as seeds for
fuzz_dataset.  Written from the documented layout, independently of the
C writer.  Run: python3 tests/fuzz/gen_dataset_corpus.py"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "dataset")


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def dataset(docs, vocab, width=None, version=1, magic=b"FTOKDS\0\0",
            text_bytes=None, hash_=0x5eed):
    width = width or (2 if vocab <= 65536 else 4)
    text_bytes = text_bytes or [len(d) * 3 for d in docs]
    ntok = sum(len(d) for d in docs)
    head = magic + struct.pack("<IIQQQQQ", version, width, vocab, hash_,
                               len(docs), ntok, sum(text_bytes))
    head += struct.pack("<Q", fnv1a64(head))
    offs = [0]
    for d in docs:
        offs.append(offs[-1] + len(d))
    body = b"".join(struct.pack("<Q", o) for o in offs)
    body += b"".join(struct.pack("<Q", b) for b in text_bytes)
    fmt = "<H" if width == 2 else "<I"
    body += b"".join(struct.pack(fmt, t) for d in docs for t in d)
    return bytearray(head + body)


def reseal(b):
    b[56:64] = struct.pack("<Q", fnv1a64(bytes(b[:56])))
    return b


def main():
    os.makedirs(OUT, exist_ok=True)
    docs = [[1, 2, 3], [4, 5], [9, 0, 9, 8], [7] * 20, []]
    cases = {
        "valid_small": dataset(docs, 10),
        "valid_wide": dataset([[70000, 0, 65536], [99999]], 100000),
        "valid_empty": dataset([], 5),
        "valid_one_doc": dataset([list(range(50))], 50),
        "valid_many_docs": dataset([[i % 7] * (i % 4) for i in range(40)], 7),
    }
    b = dataset(docs, 10); b[0] = ord("X"); cases["bad_magic"] = b
    cases["bad_version"] = dataset(docs, 10, version=7)
    b = dataset(docs, 10); b[16] = 11; cases["bad_checksum"] = b
    cases["bad_width"] = reseal(dataset(docs, 10)[:12] + struct.pack("<I", 3) +
                                dataset(docs, 10)[16:])
    cases["bad_vocab_zero"] = dataset(docs, 0, width=2)
    cases["bad_vocab_too_big"] = dataset(docs, 70000, width=2)
    cases["truncated"] = dataset(docs, 10)[:-1]
    cases["truncated_header"] = dataset(docs, 10)[:40]
    cases["trailing"] = dataset(docs, 10) + b"\0\0"
    b = dataset(docs, 10); b[72:80] = struct.pack("<Q", 99); cases["bad_offset"] = b
    b = dataset(docs, 10); b[48:56] = struct.pack("<Q", 1); cases["bad_bytes"] = reseal(b)
    b = dataset(docs, 10); b[-2:] = struct.pack("<H", 10); cases["token_ge_vocab"] = b
    b = dataset(docs, 10); b[32:40] = struct.pack("<Q", 1 << 61)
    cases["huge_docs"] = reseal(b)
    b = dataset(docs, 10); b[40:48] = struct.pack("<Q", (1 << 59) + 3)
    cases["huge_tokens"] = reseal(b)
    for name, data in cases.items():
        with open(os.path.join(OUT, name + ".tok"), "wb") as f:
            f.write(bytes(data))


if __name__ == "__main__":
    main()
