/*
 * json.c — the strict JSON parser of json.h: recursive descent over the
 * whole input into a flat node array; strings are decoded into one buffer
 * allocated up front (a decoded string plus its NUL is never longer than
 * its quoted source, so len + 1 bytes always suffice).
 */
#include "json.h"

#include "../tensor/core/tensor_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jparser {
    const unsigned char *s;
    size_t n, p;
    tm__json_doc *doc;
    const char *fn, *prefix;
} jparser;

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t k;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0) lo = 0xA0;      /* overlong */
        if (c == 0xED) hi = 0x9F;      /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0) lo = 0x90;      /* overlong */
        if (c == 0xF4) hi = 0x8F;      /* above U+10FFFF */
    } else return 0;
    if (n < k) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < k; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return k;
}

bool tm__utf8_valid(const unsigned char *s, size_t n, size_t *bad)
{
    size_t p = 0;
    while (p < n) {
        if (s[p] < 0x80) {
            p++;
            continue;
        }
        size_t k = utf8_seq(s + p, n - p);
        if (!k) {
            if (bad) *bad = p;
            return false;
        }
        p += k;
    }
    return true;
}

/* Records "fn: <prefix>[invalid JSON: ]<message> at byte N". */
static tm_status jfail(jparser *j, size_t at, bool syntax, const char *fmt,
                       va_list ap)
{
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return tm__errf(TM_EFORMAT, j->fn, "%s%s%s at byte %zu", j->prefix,
                    syntax ? "invalid JSON: " : "", msg, at);
}

#if defined(__GNUC__)
#define JSON_PRINTF __attribute__((format(printf, 3, 4)))
#else
#define JSON_PRINTF
#endif

/* A syntax error. */
static tm_status jerr(jparser *j, size_t at, const char *fmt, ...) JSON_PRINTF;
static tm_status jerr(jparser *j, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tm_status st = jfail(j, at, true, fmt, ap);
    va_end(ap);
    return st;
}

/* Well-formed JSON that this parser refuses (duplicate keys, depth). */
static tm_status jrefuse(jparser *j, size_t at, const char *fmt, ...)
    JSON_PRINTF;
static tm_status jrefuse(jparser *j, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tm_status st = jfail(j, at, false, fmt, ap);
    va_end(ap);
    return st;
}

/* Appends a node; returns its index or SIZE_MAX (TM_ENOMEM set). */
static size_t new_node(jparser *j)
{
    tm__json_doc *d = j->doc;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof(tm__json_node)) {
            tm__errf(TM_ENOMEM, j->fn, "out of memory: JSON document too "
                     "large");
            return SIZE_MAX;
        }
        tm__json_node *nn = tm__alloc(cap * sizeof *nn, j->fn);
        if (!nn) return SIZE_MAX;
        if (d->n) memcpy(nn, d->nodes, d->n * sizeof *nn);
        tm__dealloc(d->nodes);
        d->nodes = nn;
        d->cap = cap;
    }
    tm__json_node *nd = &d->nodes[d->n];
    memset(nd, 0, sizeof *nd);
    return d->n++;
}

static void skip_ws(jparser *j)
{
    while (j->p < j->n) {
        unsigned char c = j->s[j->p];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        j->p++;
    }
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads the 4 hex digits of a \u escape starting at j->p. */
static tm_status read_hex4(jparser *j, unsigned *out)
{
    if (j->n - j->p < 4) return jerr(j, j->p, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(j->s[j->p + (size_t)i]);
        if (h < 0) return jerr(j, j->p, "invalid \\u escape");
        v = v * 16 + (unsigned)h;
    }
    j->p += 4;
    *out = v;
    return TM_OK;
}

static char *put_utf8(char *d, unsigned cp)
{
    if (cp < 0x80) {
        *d++ = (char)cp;
    } else if (cp < 0x800) {
        *d++ = (char)(0xC0 | (cp >> 6));
        *d++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *d++ = (char)(0xE0 | (cp >> 12));
        *d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *d++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *d++ = (char)(0xF0 | (cp >> 18));
        *d++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *d++ = (char)(0x80 | (cp & 0x3F));
    }
    return d;
}

/* j->p is at the opening quote. */
static tm_status parse_string(jparser *j, const char **out, size_t *out_len)
{
    size_t start = j->p++;
    char *d0 = j->doc->strings + j->doc->slen, *d = d0;
    for (;;) {
        if (j->p >= j->n) return jerr(j, start, "unterminated string");
        unsigned char c = j->s[j->p];
        if (c == '"') {
            j->p++;
            break;
        }
        if (c < 0x20)
            return jerr(j, j->p, "raw control character 0x%02X in a string",
                        c);
        if (c == '\\') {
            size_t esc = j->p++;
            if (j->p >= j->n) return jerr(j, start, "unterminated string");
            unsigned char e = j->s[j->p++];
            switch (e) {
            case '"': *d++ = '"'; break;
            case '\\': *d++ = '\\'; break;
            case '/': *d++ = '/'; break;
            case 'b': *d++ = '\b'; break;
            case 'f': *d++ = '\f'; break;
            case 'n': *d++ = '\n'; break;
            case 'r': *d++ = '\r'; break;
            case 't': *d++ = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                tm_status st = read_hex4(j, &cp);
                if (st) return st;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return jerr(j, esc, "unpaired low surrogate \\u%04X", cp);
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (j->n - j->p < 2 || j->s[j->p] != '\\' ||
                        j->s[j->p + 1] != 'u')
                        return jerr(j, esc, "unpaired high surrogate \\u%04X",
                                    cp);
                    j->p += 2;
                    if ((st = read_hex4(j, &lo))) return st;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return jerr(j, esc, "high surrogate \\u%04X followed "
                                    "by \\u%04X, not a low surrogate", cp, lo);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                d = put_utf8(d, cp);
                break;
            }
            default:
                if (e >= 0x20 && e < 0x7F)
                    return jerr(j, esc, "invalid escape '\\%c'", e);
                return jerr(j, esc, "invalid escape byte 0x%02X", e);
            }
        } else if (c < 0x80) {
            *d++ = (char)c;
            j->p++;
        } else {
            size_t k = utf8_seq(j->s + j->p, j->n - j->p);
            if (!k) return jerr(j, j->p, "invalid UTF-8 in a string");
            memcpy(d, j->s + j->p, k);
            d += k;
            j->p += k;
        }
    }
    *d++ = '\0';
    *out = d0;
    *out_len = (size_t)(d - d0) - 1;
    j->doc->slen += (size_t)(d - d0);
    return TM_OK;
}

static bool is_digit(const jparser *j)
{
    return j->p < j->n && j->s[j->p] >= '0' && j->s[j->p] <= '9';
}

static tm_status parse_number(jparser *j, tm__json_node *nd)
{
    size_t start = j->p;
    bool neg = false, is_int = true;
    if (j->s[j->p] == '-') {
        neg = true;
        j->p++;
    }
    if (!is_digit(j)) return jerr(j, start, "invalid number");
    if (j->s[j->p] == '0') {
        j->p++;
        if (is_digit(j)) return jerr(j, start, "number with a leading zero");
    } else {
        while (is_digit(j)) j->p++;
    }
    size_t int_end = j->p;
    if (j->p < j->n && j->s[j->p] == '.') {
        j->p++;
        if (!is_digit(j)) return jerr(j, start, "invalid number");
        while (is_digit(j)) j->p++;
        is_int = false;
    }
    if (j->p < j->n && (j->s[j->p] == 'e' || j->s[j->p] == 'E')) {
        j->p++;
        if (j->p < j->n && (j->s[j->p] == '+' || j->s[j->p] == '-')) j->p++;
        if (!is_digit(j)) return jerr(j, start, "invalid number");
        while (is_digit(j)) j->p++;
        is_int = false;
    }
    if (is_int) {
        /* magnitude limit: 2^63 for negatives, 2^63 - 1 otherwise */
        uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        uint64_t v = 0;
        for (size_t q = start + (neg ? 1 : 0); q < int_end; q++) {
            unsigned dgt = (unsigned)(j->s[q] - '0');
            if (v > (lim - dgt) / 10)
                return jrefuse(j, start, "integer %.*s does not fit int64",
                            (int)(int_end - start > 40 ? 40 : int_end - start),
                            (const char *)j->s + start);
            v = v * 10 + dgt;
        }
        nd->type = TM__JSON_INT;
        if (!neg) nd->i = (int64_t)v;
        else if (v == (uint64_t)INT64_MAX + 1) nd->i = INT64_MIN;
        else nd->i = -(int64_t)v;
        nd->f = (double)nd->i;
        return TM_OK;
    }
    /* strtod needs a NUL-terminated copy (the input is not terminated) */
    size_t len = j->p - start;
    char small[64], *buf = small;
    if (len >= sizeof small) {
        buf = tm__alloc(len + 1, j->fn);
        if (!buf) return TM_ENOMEM;
    }
    memcpy(buf, j->s + start, len);
    buf[len] = '\0';
    double f = strtod(buf, NULL);
    if (buf != small) tm__dealloc(buf);
    if (f > 1.7976931348623157e308 || f < -1.7976931348623157e308)
        return jrefuse(j, start, "number out of the range of double");
    nd->type = TM__JSON_FLOAT;
    nd->f = f;
    return TM_OK;
}

static int key_cmp(const void *a, const void *b)
{
    const tm__json_node *x = *(const tm__json_node *const *)a;
    const tm__json_node *y = *(const tm__json_node *const *)b;
    size_t m = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, m);
    if (c) return c;
    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static bool same_key(const tm__json_node *x, const tm__json_node *y)
{
    return x->key_len == y->key_len && !memcmp(x->key, y->key, x->key_len);
}

static tm_status dup_error(jparser *j, const tm__json_node *x,
                           const tm__json_node *y)
{
    char name[96];
    tm__fmt_name(name, sizeof name, x->key, x->key_len);
    return jrefuse(j, x->pos > y->pos ? x->pos : y->pos,
                   "duplicate key \"%s\"", name);
}

/* Rejects duplicate keys among the children of object node `obj`. */
static tm_status check_duplicates(jparser *j, size_t obj)
{
    tm__json_node *nodes = j->doc->nodes;
    size_t count = nodes[obj].count;
    if (count < 2) return TM_OK;
    if (count <= 8) {
        size_t idx[8], c = obj + 1;
        for (size_t k = 0; k < count; k++, c = nodes[c].next) idx[k] = c;
        for (size_t a = 0; a < count; a++)
            for (size_t b = a + 1; b < count; b++)
                if (same_key(&nodes[idx[a]], &nodes[idx[b]]))
                    return dup_error(j, &nodes[idx[a]], &nodes[idx[b]]);
        return TM_OK;
    }
    const tm__json_node **v = tm__alloc(count * sizeof *v, j->fn);
    if (!v) return TM_ENOMEM;
    size_t c = obj + 1;
    for (size_t k = 0; k < count; k++, c = nodes[c].next) v[k] = &nodes[c];
    qsort(v, count, sizeof *v, key_cmp);
    tm_status st = TM_OK;
    for (size_t k = 1; k < count && !st; k++)
        if (same_key(v[k - 1], v[k])) st = dup_error(j, v[k - 1], v[k]);
    tm__dealloc(v);
    return st;
}

static tm_status parse_value(jparser *j, int depth, const char *key,
                             size_t key_len);

static tm_status parse_container(jparser *j, size_t idx, int depth,
                                 bool is_obj)
{
    unsigned char close = is_obj ? '}' : ']';
    if (depth >= TM__JSON_MAX_DEPTH)
        return jrefuse(j, j->p, "nesting deeper than %d levels",
                       TM__JSON_MAX_DEPTH);
    j->doc->nodes[idx].type = is_obj ? TM__JSON_OBJECT : TM__JSON_ARRAY;
    j->p++;
    skip_ws(j);
    if (j->p < j->n && j->s[j->p] == close) {
        j->p++;
        return TM_OK;
    }
    for (;;) {
        tm_status st;
        const char *key = NULL;
        size_t key_len = 0;
        skip_ws(j);
        if (is_obj) {
            if (j->p >= j->n) return jerr(j, j->p, "unexpected end of input");
            if (j->s[j->p] != '"') {
                if (j->s[j->p] == '}')
                    return jerr(j, j->p, "trailing comma in an object");
                return jerr(j, j->p, "expected a string key");
            }
            if ((st = parse_string(j, &key, &key_len))) return st;
            skip_ws(j);
            if (j->p >= j->n || j->s[j->p] != ':')
                return jerr(j, j->p, "expected ':' after a key");
            j->p++;
        } else {
            skip_ws(j);
            if (j->p < j->n && j->s[j->p] == ']')
                return jerr(j, j->p, "trailing comma in an array");
        }
        if ((st = parse_value(j, depth + 1, key, key_len))) return st;
        j->doc->nodes[idx].count++;
        skip_ws(j);
        if (j->p >= j->n) return jerr(j, j->p, "unexpected end of input");
        if (j->s[j->p] == ',') {
            j->p++;
            continue;
        }
        if (j->s[j->p] == close) {
            j->p++;
            break;
        }
        return jerr(j, j->p, is_obj ? "expected ',' or '}'"
                                    : "expected ',' or ']'");
    }
    return is_obj ? check_duplicates(j, idx) : TM_OK;
}

static tm_status parse_literal(jparser *j, size_t idx)
{
    static const char *const words[] = {"true", "false", "null"};
    for (int w = 0; w < 3; w++) {
        size_t k = strlen(words[w]);
        if (j->n - j->p >= k && !memcmp(j->s + j->p, words[w], k)) {
            tm__json_node *nd = &j->doc->nodes[idx];
            nd->type = w == 2 ? TM__JSON_NULL : TM__JSON_BOOL;
            nd->i = w == 0;
            j->p += k;
            return TM_OK;
        }
    }
    return jerr(j, j->p, "invalid literal");
}

static tm_status parse_value(jparser *j, int depth, const char *key,
                             size_t key_len)
{
    skip_ws(j);
    if (j->p >= j->n) return jerr(j, j->p, "unexpected end of input");
    size_t idx = new_node(j);
    if (idx == SIZE_MAX) return TM_ENOMEM;
    tm__json_node *nd = &j->doc->nodes[idx];
    nd->key = key;
    nd->key_len = key_len;
    nd->pos = j->p;
    unsigned char c = j->s[j->p];
    tm_status st;
    if (c == '{' || c == '[') {
        st = parse_container(j, idx, depth, c == '{');
    } else if (c == '"') {
        const char *s;
        size_t len;
        st = parse_string(j, &s, &len);
        if (!st) {
            nd = &j->doc->nodes[idx];
            nd->type = TM__JSON_STRING;
            nd->str = s;
            nd->len = len;
        }
    } else if (c == 't' || c == 'f' || c == 'n') {
        st = parse_literal(j, idx);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        st = parse_number(j, &j->doc->nodes[idx]);
    } else if (c >= 0x20 && c < 0x7F) {
        st = jerr(j, j->p, "unexpected character '%c'", c);
    } else {
        st = jerr(j, j->p, "unexpected byte 0x%02X", c);
    }
    if (!st) j->doc->nodes[idx].next = j->doc->n;
    return st;
}

tm_status tm__json_parse(tm__json_doc *doc, const char *text, size_t len,
                         const char *fn, const char *prefix)
{
    memset(doc, 0, sizeof *doc);
    if (!text && len) return tm__errf(TM_EINVAL, fn, "JSON text is NULL");
    if (len == SIZE_MAX)
        return tm__errf(TM_EOVERFLOW, fn, "JSON text of %zu bytes", len);
    doc->strings = tm__alloc(len + 1, fn);
    if (!doc->strings) return TM_ENOMEM;
    jparser j = {(const unsigned char *)text, len, 0, doc, fn,
                 prefix ? prefix : ""};
    tm_status st = parse_value(&j, 0, NULL, 0);
    if (!st) {
        skip_ws(&j);
        if (j.p < j.n) st = jerr(&j, j.p, "unexpected data after the value");
    }
    if (st) tm__json_free(doc);
    return st;
}

void tm__json_free(tm__json_doc *doc)
{
    if (!doc) return;
    tm__dealloc(doc->nodes);
    tm__dealloc(doc->strings);
    memset(doc, 0, sizeof *doc);
}

const tm__json_node *tm__json_get(const tm__json_doc *doc, size_t obj,
                                  const char *key)
{
    const tm__json_node *nodes = doc->nodes;
    if (obj >= doc->n || nodes[obj].type != TM__JSON_OBJECT) return NULL;
    size_t klen = strlen(key), c = obj + 1;
    for (size_t k = 0; k < nodes[obj].count; k++, c = nodes[c].next)
        if (nodes[c].key_len == klen && !memcmp(nodes[c].key, key, klen))
            return &nodes[c];
    return NULL;
}

char *tm__fmt_name(char *buf, size_t size, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    if (!size) return buf;
    if (size < 12) {
        buf[0] = '\0';
        return buf;
    }
    for (size_t i = 0; i < len; i++) {
        /* valid multi-byte characters are kept whole, so the message
         * stays valid UTF-8 */
        size_t k = 1;
        bool raw;
        if (u[i] >= 0x80) {
            k = utf8_seq(u + i, len - i);
            raw = k > 0;
            if (!k) k = 1;
        } else {
            raw = u[i] >= 0x20 && u[i] != 0x7F && u[i] != '\\';
        }
        size_t need = raw ? k : 4;
        if (o + need + 4 >= size) { /* room for "..." and the NUL */
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (raw) {
            memcpy(buf + o, u + i, k);
            o += k;
            i += k - 1;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[u[i] >> 4];
            buf[o++] = hex[u[i] & 15];
        }
    }
    buf[o] = '\0';
    return buf;
}
