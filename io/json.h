/*
 * json.h — a small strict JSON parser (RFC 8259) for Foundry's readers.
 * Internal: never installed.
 *
 * The document is parsed whole into a flat array of nodes in document
 * order.  A container's children follow it; each node's `next` is the index
 * one past its subtree, so siblings are visited as
 *   for (size_t c = i + 1, k = 0; k < nodes[i].count; k++, c = nodes[c].next)
 * Strict: the input must be valid UTF-8; strings may not hold raw control
 * characters; escapes are checked (\u surrogates must pair); numbers follow
 * the JSON grammar (no NaN, Infinity, leading zeros, '+' or hex); integers
 * must fit int64; no trailing commas, comments or data after the value;
 * duplicate keys in one object are rejected; nesting is limited to
 * TM__JSON_MAX_DEPTH.  Whitespace is space, tab, CR and LF only.
 */
#ifndef FOUNDRY_IO_JSON_H
#define FOUNDRY_IO_JSON_H

#include "foundry/base.h"

#define TM__JSON_MAX_DEPTH 64

typedef enum tm__json_type {
    TM__JSON_NULL = 0,
    TM__JSON_BOOL = 1,   /* value in .i (0 or 1) */
    TM__JSON_INT = 2,    /* integer syntax: value in .i, also in .f */
    TM__JSON_FLOAT = 3,  /* fraction or exponent: value in .f */
    TM__JSON_STRING = 4, /* decoded UTF-8 in .str/.len, NUL-terminated */
    TM__JSON_ARRAY = 5,  /* .count children */
    TM__JSON_OBJECT = 6  /* .count children, each with .key/.key_len */
} tm__json_type;

typedef struct tm__json_node {
    tm__json_type type;
    size_t next;         /* index one past this node's subtree */
    size_t count;        /* ARRAY / OBJECT: number of children */
    const char *key;     /* member of an OBJECT: decoded key, else NULL */
    size_t key_len;
    const char *str;     /* STRING */
    size_t len;
    size_t pos;          /* byte offset of the value in the input */
    int64_t i;
    double f;
} tm__json_node;

typedef struct tm__json_doc {
    tm__json_node *nodes; /* nodes[0] is the root */
    size_t n, cap;
    char *strings;        /* decoded keys and strings, NUL-separated */
    size_t slen;
} tm__json_doc;

/* Parses text[len] into *doc (which the caller zero-initialises).  On
 * failure frees what it built and returns TM_EFORMAT with the message
 * "fn: <prefix><problem> at byte N", or TM_ENOMEM.  Release a parsed
 * document with tm__json_free. */
tm_status tm__json_parse(tm__json_doc *doc, const char *text, size_t len,
                         const char *fn, const char *prefix);
void tm__json_free(tm__json_doc *doc);

/* The child of object node `obj` with key `key` (NUL-terminated), or NULL. */
const tm__json_node *tm__json_get(const tm__json_doc *doc, size_t obj,
                                  const char *key);

/* Writes s[len] into buf[size] for an error message: bytes below 0x20,
 * 0x7F and backslash as \xNN, cut with "..." when too long.  Returns buf. */
char *tm__fmt_name(char *buf, size_t size, const char *s, size_t len);

/* True when s[n] is valid UTF-8 (no overlongs, surrogates or code points
 * above U+10FFFF); otherwise stores the offset of the first bad byte. */
bool tm__utf8_valid(const unsigned char *s, size_t n, size_t *bad);

#endif
