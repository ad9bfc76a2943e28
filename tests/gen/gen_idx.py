"""gzip / zlib / raw-deflate streams made by Python's zlib and gzip
(tests/data/idx/*, read by tests/c/test_idx.c), and the fuzz corpus of
tests/fuzz/corpus/idx/.  Needs only the standard library.

The payload is an IDX file (u8, dims [3, 50, 40]) whose bytes follow
pattern() below; test_idx.c computes the same pattern and compares what
Foundry's inflate produces with it, so the expected bytes never come from
Foundry.
"""
import gzip
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "idx")
CORPUS = os.path.join(HERE, "..", "fuzz", "corpus", "idx")


def pattern(n):
    """Mixed data: varied bytes, a run of zeros (long matches), repeats."""
    out = bytearray(n)
    for i in range(n):
        if 3000 <= i < 4000:
            out[i] = 0
        else:
            out[i] = (i * 7 + (i >> 5) * 13 + ((i * i) >> 7)) & 0xFF
    return bytes(out)


def idx_u8(dims):
    n = 1
    for d in dims:
        n *= d
    head = bytes([0, 0, 0x08, len(dims)]) + b"".join(
        struct.pack(">I", d) for d in dims)
    return head + pattern(n)


def raw_deflate(data, level):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def gzip_with_flags(data, level, extra=b"", name=b"", comment=b"",
                    hcrc=False):
    flg = (4 if extra else 0) | (8 if name else 0) | (16 if comment else 0) \
        | (2 if hcrc else 0)
    h = bytes([0x1F, 0x8B, 8, flg, 0, 0, 0, 0, 0, 255])
    if extra:
        h += struct.pack("<H", len(extra)) + extra
    if name:
        h += name + b"\0"
    if comment:
        h += comment + b"\0"
    if hcrc:
        h += struct.pack("<H", zlib.crc32(h) & 0xFFFF)
    return h + raw_deflate(data, level) + struct.pack(
        "<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def put(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(DATA, exist_ok=True)
    os.makedirs(CORPUS, exist_ok=True)
    payload = idx_u8([3, 50, 40])
    for level in (0, 1, 6, 9):
        put(DATA, f"level{level}.idx.gz",
            gzip.compress(payload, level, mtime=0))
    put(DATA, "flags.idx.gz", gzip_with_flags(
        payload, 6, extra=b"XY\x02\x00hi", name=b"p.idx",
        comment=b"a comment", hcrc=True))
    half = len(payload) // 2
    put(DATA, "members.idx.gz", gzip.compress(payload[:half], 9, mtime=0) +
        gzip.compress(payload[half:], 1, mtime=0))
    put(DATA, "payload.zlib", zlib.compress(payload, 6))
    put(DATA, "payload.deflate", raw_deflate(payload, 9))
    # corpus: valid raw and gzipped files, and damaged ones
    small = idx_u8([4, 5])
    put(CORPUS, "valid_u8.idx", small)
    put(CORPUS, "valid_f32.idx", bytes([0, 0, 0x0D, 2, 0, 0, 0, 2, 0, 0, 0,
                                        2]) + struct.pack(">4f", 1, -2, .5,
                                                          3e38))
    put(CORPUS, "valid_i16.idx", bytes([0, 0, 0x0B, 1, 0, 0, 0, 3]) +
        struct.pack(">3h", -1, 2, 300))
    put(CORPUS, "valid_l0.idx.gz", gzip.compress(small, 0, mtime=0))
    put(CORPUS, "valid_l9.idx.gz", gzip.compress(small, 9, mtime=0))
    put(CORPUS, "valid_flags.idx.gz", gzip_with_flags(
        small, 6, extra=b"ab", name=b"n", comment=b"c", hcrc=True))
    g = bytearray(gzip.compress(idx_u8([2, 30]), 6, mtime=0))
    bad = bytearray(g)
    bad[-8] ^= 1
    put(CORPUS, "bad_crc.idx.gz", bytes(bad))
    put(CORPUS, "truncated.idx.gz", bytes(g[:len(g) // 2]))
    put(CORPUS, "bad_magic.idx", b"\0\0\x07\x02" + small[4:])
    put(CORPUS, "bad_size.idx", small[:-1])
    put(CORPUS, "huge_dims.idx", bytes([0, 0, 8, 3]) + b"\xff" * 12)


# Hand-made DEFLATE streams for tests/c/test_idx.c (printed as C arrays
# with --c-arrays; the test holds a copy of this output).
class BitWriter:
    def __init__(self):
        self.bits = []

    def put(self, v, n):
        """n bits of v, least significant first (header fields)."""
        self.bits += [(v >> i) & 1 for i in range(n)]

    def huff(self, code, n):
        """A Huffman code, most significant bit first."""
        self.bits += [(code >> i) & 1 for i in reversed(range(n))]

    def data(self):
        b = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(sum(b[i + k] << k for k in range(8))
                     for i in range(0, len(b), 8))


def c_arrays():
    def arr(name, b):
        print(f"static const uint8_t {name}[] = {{"
              + ", ".join("0x%02x" % x for x in b) + "};")
    fixed = raw_deflate(b"abcabcabcabc hello hello", 9)
    assert (fixed[0] >> 1) & 3 == 1, "expected a fixed-Huffman block"
    arr("fixed_stream", fixed)
    w = BitWriter()
    w.put(1, 1); w.put(3, 2)                      # final, block type 3
    arr("bad_type", w.data())
    w = BitWriter()
    w.put(1, 1); w.put(2, 2)                      # final, dynamic
    w.put(0, 5); w.put(0, 5); w.put(0, 4)         # 257, 1, 4 codes
    for _ in range(4):
        w.put(1, 3)                               # four 1-bit codes
    arr("bad_lengths", w.data())
    w = BitWriter()
    w.put(1, 1); w.put(1, 2)                      # final, fixed
    w.huff(0x30 + ord("a"), 8)                    # literal 'a'
    w.huff(1, 7)                                  # length 3
    w.huff(1, 5)                                  # distance 2 > 1 written
    w.huff(0, 7)                                  # end of block
    arr("too_far", w.data())
    w = BitWriter()
    w.put(1, 1); w.put(0, 2)                      # final, stored
    arr("bad_stored", w.data() + bytes([3, 0, 0, 0]) + b"abc")


if __name__ == "__main__":
    if "--c-arrays" in __import__("sys").argv:
        c_arrays()
    else:
        main()
