/*
 * inflate.c — DEFLATE (RFC 1951) decoder with zlib (RFC 1950) and gzip
 * (RFC 1952) wrappers.  The decoder follows the structure of zlib's
 * puff.c (canonical Huffman codes as count/symbol tables) and adds a
 * 9-bit lookup table for short codes, which is what makes it fast enough
 * for datasets.  Every read is bounds-checked against the input and every
 * write against the output buffer; back-references are checked against
 * the bytes written so far.
 */
#include "inflate.h"

#include "../tensor/core/tensor_impl.h"

#include <pthread.h>
#include <string.h>

#define MAXBITS 15
#define FASTBITS 9

typedef struct {
    const uint8_t *in;
    size_t n, pos;     /* next input byte to load into bitbuf */
    uint64_t bitbuf;   /* unread bits, LSB first */
    int bitcnt;
    uint8_t *out;
    size_t outn, outcap, maxout;
    const char *fn, *what;
    tm_status st;      /* first error (then everything stops) */
} tmz;

typedef struct {
    uint16_t count[MAXBITS + 1];
    uint16_t symbol[288];
    uint16_t fast[1 << FASTBITS]; /* sym | len << 12, 0: not short */
} huff;

static tm_status fail(tmz *s, tm_status st, const char *msg, long long a,
                      long long b)
{
    if (s->st == TM_OK)
        s->st = tm__errf(st, s->fn, "%s: %s (%lld, %lld)", s->what, msg, a,
                         b);
    return s->st;
}

static void refill(tmz *s)
{
    while (s->bitcnt <= 56 && s->pos < s->n) {
        s->bitbuf |= (uint64_t)s->in[s->pos++] << s->bitcnt;
        s->bitcnt += 8;
    }
}

/* need <= 32 bits; 0 with the error set when the input ends */
static uint32_t bits(tmz *s, int need)
{
    if (s->bitcnt < need) refill(s);
    if (s->bitcnt < need) {
        fail(s, TM_EFORMAT, "truncated deflate stream (input bytes, bits "
             "short)", (long long)s->n, need - s->bitcnt);
        return 0;
    }
    uint32_t v = (uint32_t)(s->bitbuf & ((1ull << need) - 1));
    s->bitbuf >>= need;
    s->bitcnt -= need;
    return v;
}

/* Builds the tables; returns 0 for a complete code, > 0 for an
 * incomplete one, < 0 for an over-subscribed one. */
static int construct(huff *h, const uint16_t *length, int n)
{
    uint16_t offs[MAXBITS + 1];
    memset(h->count, 0, sizeof h->count);
    memset(h->fast, 0, sizeof h->fast);
    for (int i = 0; i < n; i++) h->count[length[i]]++;
    if (h->count[0] == n) return 0; /* no codes: complete, decodes fail */
    int left = 1;
    for (int len = 1; len <= MAXBITS; len++) {
        left <<= 1;
        left -= h->count[len];
        if (left < 0) return left;
    }
    offs[1] = 0;
    for (int len = 1; len < MAXBITS; len++)
        offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
    for (int i = 0; i < n; i++)
        if (length[i]) h->symbol[offs[length[i]]++] = (uint16_t)i;
    /* short codes into the lookup table: canonical code, bit-reversed */
    int code = 0, idx = 0;
    for (int len = 1; len <= FASTBITS; len++) {
        for (int k = 0; k < h->count[len]; k++, idx++, code++) {
            int rev = 0;
            for (int b = 0; b < len; b++) rev |= ((code >> b) & 1) << (len - 1 - b);
            for (int f = rev; f < (1 << FASTBITS); f += 1 << len)
                h->fast[f] = (uint16_t)(h->symbol[idx] | len << 12);
        }
        code <<= 1;
    }
    return left;
}

static int decode_slow(tmz *s, const huff *h)
{
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= MAXBITS; len++) {
        code |= (int)bits(s, 1);
        if (s->st) return -1;
        int count = h->count[len];
        if (code - count < first) return h->symbol[index + (code - first)];
        index += count;
        first += count;
        first <<= 1;
        code <<= 1;
    }
    fail(s, TM_EFORMAT, "invalid Huffman code (at input byte, output byte)",
         (long long)s->pos, (long long)s->outn);
    return -1;
}

static int decode(tmz *s, const huff *h)
{
    if (s->bitcnt < FASTBITS) refill(s);
    uint16_t e = h->fast[s->bitbuf & ((1u << FASTBITS) - 1)];
    if (e) {
        int len = e >> 12;
        if (len <= s->bitcnt) {
            s->bitbuf >>= len;
            s->bitcnt -= len;
            return e & 0xfff;
        }
    }
    return decode_slow(s, h);
}

/* Room for `more` output bytes. */
static bool reserve(tmz *s, size_t more)
{
    if (more > s->maxout - s->outn) {
        fail(s, TM_EOVERFLOW, "decompressed data exceeds the limit (limit, "
             "bytes so far)", (long long)s->maxout, (long long)s->outn);
        return false;
    }
    if (s->outn + more <= s->outcap) return true;
    size_t cap = s->outcap ? s->outcap : 4096;
    while (cap < s->outn + more) cap = cap > s->maxout / 2 ? s->maxout : cap * 2;
    uint8_t *o = tm__alloc(cap, s->fn);
    if (!o) {
        s->st = TM_ENOMEM;
        return false;
    }
    if (s->outn) memcpy(o, s->out, s->outn);
    tm__dealloc(s->out);
    s->out = o;
    s->outcap = cap;
    return true;
}

static void stored(tmz *s)
{
    s->bitbuf >>= s->bitcnt & 7; /* to a byte boundary */
    s->bitcnt -= s->bitcnt & 7;
    uint32_t len = bits(s, 16), nlen = bits(s, 16);
    if (s->st) return;
    if (len != (~nlen & 0xffff)) {
        fail(s, TM_EFORMAT, "stored block length does not match its "
             "complement (LEN, NLEN)", len, nlen);
        return;
    }
    if (!reserve(s, len)) return;
    while (len && s->bitcnt >= 8) { /* bytes already in the bit buffer */
        s->out[s->outn++] = (uint8_t)bits(s, 8);
        len--;
    }
    if (len > s->n - s->pos) {
        fail(s, TM_EFORMAT, "truncated stored block (bytes wanted, bytes "
             "left)", len, (long long)(s->n - s->pos));
        return;
    }
    if (len) memcpy(s->out + s->outn, s->in + s->pos, len);
    s->outn += len;
    s->pos += len;
}

static const uint16_t lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17,
    19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
    2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49,
    65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577};
static const uint8_t dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
    6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static void codes(tmz *s, const huff *lc, const huff *dc)
{
    for (;;) {
        int sym = decode(s, lc);
        if (s->st) return;
        if (sym < 256) {
            if (s->outn == s->outcap && !reserve(s, 1)) return;
            s->out[s->outn++] = (uint8_t)sym;
            continue;
        }
        if (sym == 256) return;
        sym -= 257;
        if (sym >= 29) {
            fail(s, TM_EFORMAT, "invalid length symbol (symbol, output "
                 "byte)", sym + 257, (long long)s->outn);
            return;
        }
        size_t len = lbase[sym] + bits(s, lext[sym]);
        int ds = decode(s, dc);
        if (s->st) return;
        if (ds >= 30) {
            fail(s, TM_EFORMAT, "invalid distance symbol (symbol, output "
                 "byte)", ds, (long long)s->outn);
            return;
        }
        size_t dist = dbase[ds] + bits(s, dext[ds]);
        if (s->st) return;
        if (dist > s->outn) {
            fail(s, TM_EFORMAT, "invalid distance too far back (distance, "
                 "bytes written)", (long long)dist, (long long)s->outn);
            return;
        }
        if (!reserve(s, len)) return;
        uint8_t *o = s->out + s->outn;
        const uint8_t *from = o - dist;
        for (size_t i = 0; i < len; i++) o[i] = from[i]; /* may overlap */
        s->outn += len;
    }
}

/* The fixed codes of RFC 1951 3.2.6, built once. */
static huff fixed_lc, fixed_dc;
static pthread_once_t fixed_once = PTHREAD_ONCE_INIT;

static void build_fixed(void)
{
    uint16_t len[288];
    int i = 0;
    for (; i < 144; i++) len[i] = 8;
    for (; i < 256; i++) len[i] = 9;
    for (; i < 280; i++) len[i] = 7;
    for (; i < 288; i++) len[i] = 8;
    construct(&fixed_lc, len, 288);
    for (i = 0; i < 30; i++) len[i] = 5;
    construct(&fixed_dc, len, 30);
}

static void fixed(tmz *s)
{
    pthread_once(&fixed_once, build_fixed);
    codes(s, &fixed_lc, &fixed_dc);
}

static void dynamic(tmz *s)
{
    static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11,
                                      4, 12, 3, 13, 2, 14, 1, 15};
    uint16_t lengths[320] = {0};
    huff lc, dc;
    int nlen = (int)bits(s, 5) + 257, ndist = (int)bits(s, 5) + 1,
        ncode = (int)bits(s, 4) + 4;
    if (s->st) return;
    if (nlen > 286 || ndist > 30) {
        fail(s, TM_EFORMAT, "invalid code lengths set: too many length or "
             "distance codes (HLIT+257, HDIST+1)", nlen, ndist);
        return;
    }
    int i = 0;
    for (; i < ncode; i++) lengths[order[i]] = (uint16_t)bits(s, 3);
    for (; i < 19; i++) lengths[order[i]] = 0;
    if (s->st) return;
    if (construct(&lc, lengths, 19) != 0) {
        fail(s, TM_EFORMAT, "invalid code lengths set: code length code is "
             "not complete (HCLEN+4, 19)", ncode, 19);
        return;
    }
    for (i = 0; i < nlen + ndist;) {
        int sym = decode(s, &lc);
        if (s->st) return;
        if (sym < 16) {
            lengths[i++] = (uint16_t)sym;
            continue;
        }
        int len = 0, rep;
        if (sym == 16) {
            if (i == 0) {
                fail(s, TM_EFORMAT, "invalid code lengths set: repeat with "
                     "no first length (position, count)", i, nlen + ndist);
                return;
            }
            len = lengths[i - 1];
            rep = 3 + (int)bits(s, 2);
        } else if (sym == 17) {
            rep = 3 + (int)bits(s, 3);
        } else {
            rep = 11 + (int)bits(s, 7);
        }
        if (s->st) return;
        if (i + rep > nlen + ndist) {
            fail(s, TM_EFORMAT, "invalid code lengths set: repeat past the "
                 "end (position, count)", i + rep, nlen + ndist);
            return;
        }
        while (rep--) lengths[i++] = (uint16_t)len;
    }
    if (lengths[256] == 0) {
        fail(s, TM_EFORMAT, "invalid code lengths set: no end-of-block code "
             "(HLIT+257, HDIST+1)", nlen, ndist);
        return;
    }
    int err = construct(&lc, lengths, nlen);
    if (err && (err < 0 || nlen != lc.count[0] + lc.count[1])) {
        fail(s, TM_EFORMAT, "invalid literal/length code lengths (HLIT+257, "
             "excess)", nlen, err);
        return;
    }
    err = construct(&dc, lengths + nlen, ndist);
    if (err && (err < 0 || ndist != dc.count[0] + dc.count[1])) {
        fail(s, TM_EFORMAT, "invalid distance code lengths (HDIST+1, "
             "excess)", ndist, err);
        return;
    }
    codes(s, &lc, &dc);
}

/* Runs the raw decoder from in[start]; *end gets the input offset just
 * after the final block. */
static void run(tmz *s, size_t start, size_t *end)
{
    s->pos = start;
    s->bitbuf = 0;
    s->bitcnt = 0;
    int last;
    do {
        last = (int)bits(s, 1);
        int type = (int)bits(s, 2);
        if (s->st) return;
        if (type == 0) stored(s);
        else if (type == 1) fixed(s);
        else if (type == 2) dynamic(s);
        else fail(s, TM_EFORMAT, "invalid block type (type, output byte)",
                  type, (long long)s->outn);
        if (s->st) return;
    } while (!last);
    *end = s->pos - (size_t)(s->bitcnt / 8); /* unread whole bytes */
}

static void init(tmz *s, const void *in, size_t n, size_t max_out,
                 const char *fn, const char *what)
{
    memset(s, 0, sizeof *s);
    s->in = in;
    s->n = n;
    s->maxout = max_out;
    s->fn = fn;
    s->what = what ? what : "buffer";
}

static tm_status finish(tmz *s, uint8_t **out, size_t *out_n)
{
    if (s->st) {
        tm__dealloc(s->out);
        return s->st;
    }
    if (!s->out && !reserve(s, 1)) return s->st; /* empty output: 1 byte */
    *out = s->out;
    *out_n = s->outn;
    return TM_OK;
}

tm_status tm__inflate_raw(const void *in, size_t n, size_t max_out,
                          uint8_t **out, size_t *out_n, size_t *consumed,
                          const char *fn, const char *what)
{
    tmz s;
    size_t end = 0;
    init(&s, in, n, max_out, fn, what);
    run(&s, 0, &end);
    if (consumed) *consumed = end;
    return finish(&s, out, out_n);
}

/* Slicing-by-8: crc_table[k][i] is the CRC of byte i followed by k zero
 * bytes, so eight bytes fold in with eight independent lookups. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void build_crc(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++)
            crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xff];
}

uint32_t tm__crc32(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, build_crc);
    uint32_t(*t)[256] = crc_table;
    const uint8_t *b = p;
    crc = ~crc;
    for (; n >= 8; n -= 8, b += 8) {
        uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                             (uint32_t)b[3] << 24);
        uint32_t hi = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
                      (uint32_t)b[7] << 24;
        crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
              t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    }
    for (; n; n--) crc = t[0][(crc ^ *b++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

bool tm__is_gzip(const void *in, size_t n)
{
    const uint8_t *b = in;
    return n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Skips one gzip header at b[pos]; returns the offset of the deflate
 * data, or 0 with the error set. */
static size_t gz_header(tmz *s, const uint8_t *b, size_t n, size_t pos)
{
    size_t p = pos;
    if (n - p < 10) {
        fail(s, TM_EFORMAT, "truncated gzip header (bytes, need)",
             (long long)(n - p), 10);
        return 0;
    }
    if (b[p] != 0x1f || b[p + 1] != 0x8b) {
        fail(s, TM_EFORMAT, "not a gzip member (byte 0, byte 1)", b[p],
             b[p + 1]);
        return 0;
    }
    if (b[p + 2] != 8) {
        fail(s, TM_EFORMAT, "unknown gzip compression method (method, "
             "expected)", b[p + 2], 8);
        return 0;
    }
    int flg = b[p + 3];
    if (flg & 0xe0) {
        fail(s, TM_EFORMAT, "reserved gzip flag bits set (flags, mask)", flg,
             0xe0);
        return 0;
    }
    p += 10;
    if (flg & 4) { /* FEXTRA */
        if (n - p < 2) goto trunc;
        size_t xlen = (size_t)b[p] | (size_t)b[p + 1] << 8;
        p += 2;
        if (n - p < xlen) goto trunc;
        p += xlen;
    }
    for (int f = 8; f <= 16; f <<= 1) { /* FNAME, FCOMMENT */
        if (!(flg & f)) continue;
        const uint8_t *z = memchr(b + p, 0, n - p);
        if (!z) goto trunc;
        p = (size_t)(z - b) + 1;
    }
    if (flg & 2) { /* FHCRC: low 16 bits of the header's CRC-32 */
        if (n - p < 2) goto trunc;
        uint32_t want = (uint32_t)b[p] | (uint32_t)b[p + 1] << 8;
        uint32_t got = tm__crc32(0, b + pos, p - pos) & 0xffff;
        if (want != got) {
            fail(s, TM_EFORMAT, "gzip header CRC mismatch (stored, "
                 "computed)", want, got);
            return 0;
        }
        p += 2;
    }
    return p;
trunc:
    fail(s, TM_EFORMAT, "truncated gzip header (header bytes, file bytes)",
         (long long)(p - pos), (long long)n);
    return 0;
}

tm_status tm__gunzip(const void *in, size_t n, size_t max_out,
                     uint8_t **out, size_t *out_n, const char *fn,
                     const char *what)
{
    const uint8_t *b = in;
    tmz s;
    init(&s, in, n, max_out, fn, what);
    /* deflate expands at most ~1032:1: a hint that a lying ISIZE cannot
     * turn into a huge allocation */
    if (n >= 18) {
        size_t isz = le32(b + n - 4), cap = n < SIZE_MAX / 1032 ? n * 1032 : SIZE_MAX;
        if (isz > cap) isz = cap;
        if (isz > max_out) isz = max_out;
        if (isz && !reserve(&s, isz)) return finish(&s, out, out_n);
    }
    size_t pos = 0;
    do {
        size_t start = gz_header(&s, b, n, pos), end = 0, before = s.outn;
        if (s.st) break;
        run(&s, start, &end);
        if (s.st) break;
        if (n - end < 8) {
            fail(&s, TM_EFORMAT, "truncated gzip trailer (bytes, need)",
                 (long long)(n - end), 8);
            break;
        }
        uint32_t crc = s.outn > before
                           ? tm__crc32(0, s.out + before, s.outn - before)
                           : 0; /* an empty member (s.out may be NULL) */
        if (crc != le32(b + end)) {
            fail(&s, TM_EFORMAT, "gzip CRC-32 mismatch (stored, computed)",
                 le32(b + end), crc);
            break;
        }
        if ((uint32_t)(s.outn - before) != le32(b + end + 4)) {
            fail(&s, TM_EFORMAT, "gzip ISIZE mismatch (stored, actual)",
                 le32(b + end + 4), (long long)(s.outn - before));
            break;
        }
        pos = end + 8;
        if (pos < n && !tm__is_gzip(b + pos, n - pos)) {
            fail(&s, TM_EFORMAT, "trailing bytes after the gzip data "
                 "(offset, count)", (long long)pos, (long long)(n - pos));
            break;
        }
    } while (pos < n);
    return finish(&s, out, out_n);
}

tm_status tm__zlib_uncompress(const void *in, size_t n, size_t max_out,
                              uint8_t **out, size_t *out_n, const char *fn,
                              const char *what)
{
    const uint8_t *b = in;
    tmz s;
    init(&s, in, n, max_out, fn, what);
    if (n < 6) {
        fail(&s, TM_EFORMAT, "truncated zlib stream (bytes, need)",
             (long long)n, 6);
        return finish(&s, out, out_n);
    }
    if ((b[0] & 0x0f) != 8 || (b[0] >> 4) > 7 ||
        ((unsigned)b[0] << 8 | b[1]) % 31 != 0) {
        fail(&s, TM_EFORMAT, "invalid zlib header (CMF, FLG)", b[0], b[1]);
        return finish(&s, out, out_n);
    }
    if (b[1] & 0x20) {
        fail(&s, TM_EFORMAT, "zlib preset dictionary not supported (CMF, "
             "FLG)", b[0], b[1]);
        return finish(&s, out, out_n);
    }
    size_t end = 0;
    run(&s, 2, &end);
    if (!s.st) {
        if (n - end < 4) {
            fail(&s, TM_EFORMAT, "truncated zlib trailer (bytes, need)",
                 (long long)(n - end), 4);
        } else {
            uint32_t a = 1, c = 0;
            for (size_t i = 0; i < s.outn; i++) {
                a = (a + s.out[i]) % 65521;
                c = (c + a) % 65521;
            }
            uint32_t want = (uint32_t)b[end] << 24 |
                            (uint32_t)b[end + 1] << 16 |
                            (uint32_t)b[end + 2] << 8 | b[end + 3];
            if (want != (c << 16 | a))
                fail(&s, TM_EFORMAT, "zlib Adler-32 mismatch (stored, "
                     "computed)", want, c << 16 | a);
        }
    }
    return finish(&s, out, out_n);
}
