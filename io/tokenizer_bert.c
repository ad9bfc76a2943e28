/*
 * tokenizer_bert.c — HF's BertNormalizer and BertPreTokenizer.
 *
 * The normalizer runs its steps in HF's order over code points: clean_text,
 * handle_chinese_chars, strip_accents (NFD of the whole text, canonical
 * ordering, then nonspacing marks dropped), lowercase.  The character
 * classes are HF's (io/unicode_tables.c, tools/gen_unicode.py), which are
 * an older Unicode than Python's in a few hundred code points.
 */
#include "tokenizer_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

/* Invalid bytes travel through the code point stages as this bit | byte. */
#define RAWBYTE 0x80000000u

static uint32_t range_val(const uint32_t (*r)[3], size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid][0])
            hi = mid;
        else if (cp > r[mid][1])
            lo = mid + 1;
        else
            return r[mid][2];
    }
    return 0;
}

static int bprops(uint32_t cp)
{
    if (cp < 128)
        return tm__bprops_ascii[cp];
    if (cp & RAWBYTE)
        return 0;
    return (int)range_val(tm__bprops_ranges, tm__bprops_ranges_n, cp);
}

static int ws(uint32_t cp) { return !(cp & RAWBYTE) && (tm__uprops(cp) & TM__U_WS); }

static unsigned ccc(uint32_t cp)
{
    if (cp < 0x300 || (cp & RAWBYTE))
        return 0;
    return range_val(tm__ccc_ranges, tm__ccc_ranges_n, cp);
}

bool tm__is_cjk(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
           (cp >= 0x2B920 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

typedef struct cpbuf { uint32_t *p; size_t n, cap; bool oom; } cpbuf;

static void cp_put(cpbuf *b, uint32_t c)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        uint32_t *p = b->oom ? NULL : realloc(b->p, cap * sizeof *p);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    b->p[b->n++] = c;
}

/* Appends the canonical decomposition of c; Hangul syllables by the
 * Unicode algorithm (L, V, optional T). */
static void decompose(cpbuf *b, uint32_t c)
{
    if (c >= 0xAC00 && c <= 0xD7A3) {
        uint32_t s = c - 0xAC00;
        cp_put(b, 0x1100 + s / 588);
        cp_put(b, 0x1161 + (s % 588) / 28);
        if (s % 28)
            cp_put(b, 0x11A7 + s % 28);
        return;
    }
    if (c >= 0xC0 && !(c & RAWBYTE)) {
        size_t lo = 0, hi = tm__nfd_tab_n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (c < tm__nfd_tab[mid][0])
                hi = mid;
            else if (c > tm__nfd_tab[mid][0])
                lo = mid + 1;
            else {
                uint32_t v = tm__nfd_tab[mid][1];
                for (uint32_t k = 0; k < (v & 7); k++)
                    cp_put(b, tm__nfd_pool[(v >> 3) + k]);
                return;
            }
        }
    }
    cp_put(b, c);
}

/* Canonical ordering: within each run of non-zero combining classes, a
 * stable sort by class (insertion sort; runs are short). */
static void canonical_order(uint32_t *p, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        unsigned ci = ccc(p[i]);
        if (!ci)
            continue;
        size_t j = i;
        uint32_t c = p[i];
        while (j > 0 && ccc(p[j - 1]) > ci) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = c;
    }
}

static void lower_put(cpbuf *b, uint32_t c)
{
    if (c < 128) {
        cp_put(b, c >= 'A' && c <= 'Z' ? c + 32 : c);
        return;
    }
    if (!(c & RAWBYTE)) {
        size_t lo = 0, hi = tm__lower_tab_n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (c < tm__lower_tab[mid][0])
                hi = mid;
            else if (c > tm__lower_tab[mid][0])
                lo = mid + 1;
            else {
                cp_put(b, tm__lower_tab[mid][1]);
                if (tm__lower_tab[mid][2])
                    cp_put(b, tm__lower_tab[mid][2]);
                return;
            }
        }
    }
    cp_put(b, c);
}

static size_t utf8_put(char *o, uint32_t c)
{
    if (c & RAWBYTE) {
        o[0] = (char)(c & 0xFF);
        return 1;
    }
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | ((c >> 6) & 0x3F)), o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

tm_status tm__bert_normalize(const tm__bertnorm *nm, const char *s, size_t n, char **out, size_t *out_len)
{
    cpbuf a = {0}, b = {0};
    *out = NULL;
    /* clean_text, chinese chars, and the decomposition of strip_accents */
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t m = tm__utf8_next((const unsigned char *)s + i, n - i, &c);
        if (c == 0xFFFFFFFFu)
            c = RAWBYTE | (unsigned char)s[i];
        i += m;
        if (nm->clean_text) {
            if (bprops(c) & TM__B_CTRL)
                continue;
            if (ws(c))
                c = ' ';
        }
        bool cjk = nm->handle_chinese && tm__is_cjk(c);
        if (cjk)
            cp_put(&a, ' ');
        if (nm->strip_accents)
            decompose(&a, c);
        else
            cp_put(&a, c);
        if (cjk)
            cp_put(&a, ' ');
    }
    if (nm->strip_accents && !a.oom)
        canonical_order(a.p, a.n);
    /* marks dropped, lowercase */
    for (size_t i = 0; i < a.n && !a.oom; i++) {
        uint32_t c = a.p[i];
        if (nm->strip_accents && (bprops(c) & TM__B_MN))
            continue;
        if (nm->lowercase)
            lower_put(&b, c);
        else
            cp_put(&b, c);
    }
    char *o = (a.oom || b.oom) ? NULL : malloc(b.n * 4 + 1);
    tm_status st = TM_OK;
    if (!o) {
        st = TM_ERR(TM_ENOMEM, "out of memory (normalizing %zu bytes)", n);
    } else {
        size_t k = 0;
        for (size_t i = 0; i < b.n; i++)
            k += utf8_put(o + k, b.p[i]);
        o[k] = '\0';
        *out = o, *out_len = k;
    }
    free(a.p), free(b.p);
    return st;
}

bool tm__bert_pretok_next(const char *s, size_t n, size_t *pos, size_t *start, size_t *end)
{
    size_t i = *pos;
    uint32_t c;
    size_t m;
    /* skip whitespace */
    while (i < n) {
        m = tm__utf8_next((const unsigned char *)s + i, n - i, &c);
        if (c == 0xFFFFFFFFu || !(tm__uprops(c) & TM__U_WS))
            break;
        i += m;
    }
    if (i >= n) {
        *pos = n;
        return false;
    }
    *start = i;
    m = tm__utf8_next((const unsigned char *)s + i, n - i, &c);
    if (c != 0xFFFFFFFFu && (bprops(c) & TM__B_PUNCT)) {
        *end = *pos = i + m;
        return true;
    }
    i += m;
    while (i < n) {
        m = tm__utf8_next((const unsigned char *)s + i, n - i, &c);
        if (c != 0xFFFFFFFFu && ((tm__uprops(c) & TM__U_WS) || (bprops(c) & TM__B_PUNCT)))
            break;
        i += m;
    }
    *end = *pos = i;
    return true;
}
