/*
 * tokenizer_pretok.c — the pre-tokenizer: hand-written scanners for the
 * GPT-2 and Llama-3 split patterns (no regex engine), digit splitting, and
 * the byte-level alphabet.
 *
 * Each scanner returns the match of the pattern's alternatives tried in
 * order at pos (leftmost-first, as the regex engines HF uses do).  Both
 * patterns match at every position, so pieces tile the text.  The text's
 * end is `lim`; with split_digits a numeric character also ends it (and is
 * a piece of its own), because HF runs the regex on each non-digit segment
 * separately, where the lookahead (?!\S) sees the segment's end.  Runs of
 * letters, spaces or "other" stop at a digit by themselves.
 */
#include "tokenizer_impl.h"

#include <string.h>

const char tm__re_gpt2_str[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char tm__re_llama3_str[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

int tm__uprops(uint32_t cp)
{
    if (cp < 128)
        return tm__uprops_ascii[cp];
    size_t lo = 0, hi = tm__uprops_nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < tm__uprops_ranges[mid][0])
            hi = mid;
        else if (cp > tm__uprops_ranges[mid][1])
            lo = mid + 1;
        else
            return (int)tm__uprops_ranges[mid][2];
    }
    return 0;
}

size_t tm__utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t need;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xFFFFFFFFu;
        return 1;
    }
    if (n < need)
        goto bad;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            goto bad;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        goto bad;
    *cp = v;
    return need;
bad:
    *cp = 0xFFFFFFFFu;
    return 1;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 stands for itself, the other
 * bytes take 256, 257, ... in byte order. */
const uint16_t tm__byte_char[256] = {
#define R16(b) b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7, b + 8, b + 9, \
        b + 10, b + 11, b + 12, b + 13, b + 14, b + 15
    R16(256), R16(272), 288, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
    45, 46, 47, R16(48), R16(64), R16(80), R16(96), 112, 113, 114, 115, 116,
    117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 289, R16(290), 306,
    307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319, 320,
    321, 322, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172,
    323, 174, 175, R16(176), R16(192), R16(208), R16(224), R16(240)
#undef R16
};

int tm__char_byte(uint32_t cp)
{
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255))
        return (int)cp;
    if (cp >= 256 && cp <= 323) {
        /* the unprintable bytes in order: 0-32, 127-160, 173 */
        uint32_t k = cp - 256;
        if (k <= 32)
            return (int)k;
        if (k <= 32 + 34)
            return (int)(127 + k - 33);
        return 173;
    }
    return -1;
}

/* Properties of the character at s[i] (i < lim), its length in *n; -1
 * (no properties but "other") for an invalid byte. */
typedef struct scan {
    const unsigned char *s;
    size_t lim;
    bool digits_end; /* a numeric character ends the text (split_digits) */
} scan;

static inline int props_at(const scan *sc, size_t i, size_t *n, uint32_t *cpo)
{
    unsigned c = sc->s[i];
    if (c < 0x80) {
        *n = 1;
        if (cpo)
            *cpo = c;
        return tm__uprops_ascii[c];
    }
    uint32_t cp;
    *n = tm__utf8_next(sc->s + i, sc->lim - i, &cp);
    if (cpo)
        *cpo = cp;
    return cp == 0xFFFFFFFFu ? 0 : tm__uprops(cp);
}

/* End of the run of characters from i whose properties satisfy
 * (props & want) != 0 (want > 0) or == 0 (want 0: "other"). */
static size_t run(const scan *sc, size_t i, int want)
{
    while (i < sc->lim) {
        size_t n;
        int p = props_at(sc, i, &n, NULL);
        if (want ? !(p & want) : p != 0)
            break;
        i += n;
    }
    return i;
}

/* 's 't 're 've 'm 'll 'd at i (s[i] == '\''): the match length or 0.
 * fold: also the other cases (Llama-3's (?i), with U+017F long s). */
static size_t contraction(const scan *sc, size_t i, bool fold)
{
    const unsigned char *s = sc->s;
    size_t rest = sc->lim - i - 1;
    if (rest == 0)
        return 0;
    unsigned a = s[i + 1];
    if (fold && a == 0xC5 && rest >= 2 && s[i + 2] == 0xBF)
        return 3; /* 'ſ folds to 's */
    if (fold && a >= 'A' && a <= 'Z')
        a += 32;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if (rest < 2)
        return 0;
    unsigned b = s[i + 2];
    if (fold && b >= 'A' && b <= 'Z')
        b += 32;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* \s+(?!\S)|\s+ at i (s[i] is whitespace). */
static size_t spaces(const scan *sc, size_t i)
{
    size_t j = run(sc, i, TM__U_WS), n;
    if (j == sc->lim || (sc->digits_end && (props_at(sc, j, &n, NULL) & TM__U_N)))
        return j;
    /* followed by \S: give back the last whitespace character if that leaves one */
    size_t last = i, k = i;
    while (k < j) {
        size_t n;
        last = k;
        props_at(sc, k, &n, NULL);
        k += n;
    }
    return last > i ? last : j;
}

static size_t scan_gpt2(const scan *sc, size_t i)
{
    const unsigned char *s = sc->s;
    size_t n;
    if (s[i] == '\'') {
        size_t c = contraction(sc, i, false);
        if (c)
            return i + c;
    }
    int p = props_at(sc, i, &n, NULL);
    size_t j = i;
    if (s[i] == ' ' && i + 1 < sc->lim) {
        size_t n2;
        int p2 = props_at(sc, i + 1, &n2, NULL);
        if (p2 & TM__U_L)
            return run(sc, i + 1, TM__U_L);
        if ((p2 & TM__U_N) && !sc->digits_end)
            return run(sc, i + 1, TM__U_N);
        if (p2 == 0)
            return run(sc, i + 1, 0);
    }
    if (p & TM__U_L)
        return run(sc, j, TM__U_L);
    if (p & TM__U_N)
        return run(sc, j, TM__U_N);
    if (p == 0)
        return run(sc, j, 0);
    return spaces(sc, i);
}

static size_t newlines(const scan *sc, size_t i)
{
    while (i < sc->lim && (sc->s[i] == '\r' || sc->s[i] == '\n'))
        i++;
    return i;
}

static size_t scan_llama3(const scan *sc, size_t i)
{
    const unsigned char *s = sc->s;
    size_t n;
    if (s[i] == '\'') {
        size_t c = contraction(sc, i, true);
        if (c)
            return i + c;
    }
    int p = props_at(sc, i, &n, NULL);
    if (p & TM__U_L)
        return run(sc, i, TM__U_L);
    if (!(p & TM__U_N) && s[i] != '\r' && s[i] != '\n' && i + n < sc->lim) {
        size_t n2;
        if (props_at(sc, i + n, &n2, NULL) & TM__U_L)
            return run(sc, i + n, TM__U_L);
    }
    if (p & TM__U_N) {
        size_t j = i;
        for (int k = 0; k < 3 && j < sc->lim; k++) {
            size_t m;
            if (!(props_at(sc, j, &m, NULL) & TM__U_N))
                break;
            j += m;
        }
        return j;
    }
    size_t j = i;
    if (s[i] == ' ' && i + 1 < sc->lim) {
        size_t n2;
        if (props_at(sc, i + 1, &n2, NULL) == 0)
            j = i + 1;
    }
    if (j > i || p == 0)
        return newlines(sc, run(sc, j, 0));
    /* whitespace: \s*[\r\n]+ ends after the run's last CR or LF */
    size_t end = run(sc, i, TM__U_WS), lastnl = 0;
    bool nl = false;
    for (size_t k = i; k < end; k++)
        if (s[k] == '\r' || s[k] == '\n')
            lastnl = k, nl = true;
    if (nl)
        return lastnl + 1;
    return spaces(sc, i);
}

size_t tm__pretok_next(const tm__pretok *p, const char *text, size_t len, size_t pos)
{
    scan sc = {(const unsigned char *)text, len, p->split_digits};
    if (p->split_digits) {
        size_t n;
        if (props_at(&sc, pos, &n, NULL) & TM__U_N)
            return pos + n;
        if (p->regex == TM__RE_NONE) {
            size_t k = pos;
            while (k < len && !(props_at(&sc, k, &n, NULL) & TM__U_N))
                k += n;
            return k;
        }
    }
    if (p->regex == TM__RE_NONE)
        return len;
    return p->regex == TM__RE_GPT2 ? scan_gpt2(&sc, pos) : scan_llama3(&sc, pos);
}
