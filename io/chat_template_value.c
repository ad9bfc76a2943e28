/*
 * chat_template_value.c — the values of a chat template run: Jinja2's
 * undefined, none, bool, int, str, list and dict with Python's equality,
 * truth and str(); the output buffer; str helpers; tojson; errors naming
 * the template line.
 */
#include "chat_template_run.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *FN = "tm_chat_template_apply";

static size_t line_of(const run *R, size_t pos)
{
    size_t l = 1;
    for (size_t i = 0; i < pos && i < R->t->len; i++)
        l += R->t->src[i] == '\n';
    return l;
}

val ct_err(run *R, tm_status st, size_t pos, const char *fmt, const char *a1, const char *a2)
{
    if (!R->failed) {
        char msg[256];
        snprintf(msg, sizeof msg, fmt, a1 ? a1 : "", a2 ? a2 : "");
        tm__errf(st, FN, "line %zu: %s", line_of(R, pos), msg);
    }
    R->failed = true;
    return (val){V_UNDEF, 0, NULL, 0, NULL};
}

val ct_oom(run *R) { return ct_err(R, TM_ENOMEM, 0, "out of memory%s%s", NULL, NULL); }

const char *ct_tname(vtype t)
{
    static const char *const n[] = {"undefined", "none", "bool", "int", "str", "list", "dict", "function"};
    return n[t];
}


ct_seq *ct_seq_new(run *R, bool dict)
{
    ct_seq *q = ct_alloc(&R->a, sizeof *q);
    if (!q)
        return NULL;
    (void)dict;
    return q;
}

bool ct_seq_push(run *R, ct_seq *q, const char *k, size_t kn, val v)
{
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 8;
        val *nv = ct_alloc(&R->a, (size_t)cap * sizeof *nv);
        const char **nk = ct_alloc(&R->a, (size_t)cap * sizeof *nk);
        size_t *nkn = ct_alloc(&R->a, (size_t)cap * sizeof *nkn);
        if (!nv || !nk || !nkn)
            return false;
        if (q->n) {
            memcpy(nv, q->v, (size_t)q->n * sizeof *nv);
            memcpy(nk, q->k, (size_t)q->n * sizeof *nk);
            memcpy(nkn, q->kn, (size_t)q->n * sizeof *nkn);
        }
        q->v = nv, q->k = nk, q->kn = nkn, q->cap = cap;
    }
    q->k[q->n] = k, q->kn[q->n] = kn, q->v[q->n++] = v;
    return true;
}

val *ct_dict_get(const ct_seq *q, const char *k, size_t kn)
{
    for (int i = 0; i < q->n; i++)
        if (q->kn[i] == kn && memcmp(q->k[i], k, kn) == 0)
            return &q->v[i];
    return NULL;
}

bool ct_dict_set(run *R, ct_seq *q, const char *k, size_t kn, val v)
{
    val *p = ct_dict_get(q, k, kn);
    if (p) {
        *p = v;
        return true;
    }
    return ct_seq_push(R, q, k, kn, v);
}

bool ct_truthy(val v)
{
    switch (v.t) {
    case V_BOOL: case V_INT: return v.i != 0;
    case V_STR: return v.n > 0;
    case V_LIST: case V_DICT: return v.q->n > 0;
    case V_FUNC: return true;
    default: return false;
    }
}

/* --------------------------------------------------------------- output */

bool ct_emit(run *R, const char *s, size_t n)
{
    if (R->n + n + 1 > R->cap) {
        size_t cap = R->cap ? R->cap : 256;
        while (cap < R->n + n + 1)
            cap *= 2;
        char *p = realloc(R->out, cap);
        if (!p) {
            ct_oom(R);
            return false;
        }
        R->out = p, R->cap = cap;
    }
    memcpy(R->out + R->n, s, n);
    R->n += n;
    return true;
}

void ct_sb_add(run *R, sbuf *b, const char *s, size_t n)
{
    if (b->bad)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = ct_alloc(&R->a, cap);
        if (!p) {
            b->bad = true;
            return;
        }
        if (b->n)
            memcpy(p, b->p, b->n);
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* Python's str(v) into b; false (error set) for what has no faithful text here. */
bool ct_to_text(run *R, sbuf *b, val v, size_t pos)
{
    char num[32];
    switch (v.t) {
    case V_UNDEF: return true;
    case V_NONE: ct_sb_add(R, b, "None", 4); return true;
    case V_BOOL: ct_sb_add(R, b, v.i ? "True" : "False", v.i ? 4 : 5); return true;
    case V_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.i);
        ct_sb_add(R, b, num, strlen(num));
        return true;
    case V_STR: ct_sb_add(R, b, v.s, v.n); return true;
    default:
        ct_err(R, TM_EUNSUPPORTED, pos, "printing a %s is not supported (Python repr)%s", ct_tname(v.t), NULL);
        return false;
    }
}

val ct_text_of(run *R, val v, size_t pos)
{
    if (v.t == V_STR)
        return v;
    sbuf b = {0};
    if (!ct_to_text(R, &b, v, pos))
        return mk_undef(NULL);
    if (b.bad)
        return ct_oom(R);
    return mk_str(b.p ? b.p : "", b.n);
}

bool ct_equal(val a, val b)
{
    if ((a.t == V_INT || a.t == V_BOOL) && (b.t == V_INT || b.t == V_BOOL))
        return a.i == b.i;
    if (a.t != b.t)
        return false;
    switch (a.t) {
    case V_UNDEF: case V_NONE: return true;
    case V_STR: return a.n == b.n && memcmp(a.s, b.s, a.n) == 0;
    case V_LIST:
        if (a.q->n != b.q->n)
            return false;
        for (int i = 0; i < a.q->n; i++)
            if (!ct_equal(a.q->v[i], b.q->v[i]))
                return false;
        return true;
    case V_DICT: return a.q == b.q;
    default: return a.i == b.i;
    }
}

val ct_undefined_use(run *R, val v, size_t pos, const char *what)
{
    if (v.s)
        return ct_err(R, TM_EINVAL, pos, "'%s' is undefined (%s)", v.s, what);
    return ct_err(R, TM_EINVAL, pos, "undefined value used in %s%s", what, NULL);
}

/* ----------------------------------------------------------- strings */

bool ct_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* UTF-8 code point boundaries: the byte offset of code point k of s. */
size_t ct_cp_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

size_t ct_cp_offset(const char *s, size_t n, size_t k)
{
    size_t i = 0;
    for (; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && k-- == 0)
            return i;
    return n;
}

/* Python's strip family: chars NULL strips whitespace. */
val ct_strip(val s, const char *chars, size_t cn, bool left, bool right)
{
    size_t a = 0, b = s.n;
#define STRIPPED(c) (chars ? memchr(chars, (c), cn) != NULL : ct_is_space(c))
    while (left && a < b && STRIPPED(s.s[a]))
        a++;
    while (right && b > a && STRIPPED(s.s[b - 1]))
        b--;
#undef STRIPPED
    return mk_str(s.s + a, b - a);
}

val ct_case_map(run *R, val s, bool upper)
{
    char *p = ct_alloc(&R->a, s.n + 1);
    if (!p)
        return ct_oom(R);
    for (size_t i = 0; i < s.n; i++) {
        char c = s.s[i];
        p[i] = upper ? (c >= 'a' && c <= 'z' ? (char)(c - 32) : c) : (c >= 'A' && c <= 'Z' ? (char)(c + 32) : c);
    }
    return mk_str(p, s.n);
}

bool ct_to_json(run *R, sbuf *b, val v, size_t pos, int depth)
{
    char num[32];
    if (depth > 64) {
        ct_err(R, TM_EUNSUPPORTED, pos, "tojson: nested too deep%s%s", NULL, NULL);
        return false;
    }
    switch (v.t) {
    case V_NONE: ct_sb_add(R, b, "null", 4); return true;
    case V_BOOL: ct_sb_add(R, b, v.i ? "true" : "false", v.i ? 4 : 5); return true;
    case V_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.i);
        ct_sb_add(R, b, num, strlen(num));
        return true;
    case V_STR:
        /* json.dumps(ensure_ascii=False), as Hugging Face's tojson */
        ct_sb_add(R, b, "\"", 1);
        for (size_t i = 0; i < v.n; i++) {
            unsigned char c = (unsigned char)v.s[i];
            const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                              : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (esc) {
                ct_sb_add(R, b, esc, 2);
            } else if (c < 0x20 || c == 0x7f) {
                snprintf(num, sizeof num, "\\u%04x", c);
                ct_sb_add(R, b, num, 6);
            } else {
                ct_sb_add(R, b, v.s + i, 1);
            }
        }
        ct_sb_add(R, b, "\"", 1);
        return true;
    case V_LIST: case V_DICT:
        ct_sb_add(R, b, v.t == V_LIST ? "[" : "{", 1);
        for (int i = 0; i < v.q->n; i++) {
            if (i)
                ct_sb_add(R, b, ", ", 2);
            if (v.t == V_DICT) {
                if (!ct_to_json(R, b, mk_str(v.q->k[i], v.q->kn[i]), pos, depth + 1))
                    return false;
                ct_sb_add(R, b, ": ", 2);
            }
            if (!ct_to_json(R, b, v.q->v[i], pos, depth + 1))
                return false;
        }
        ct_sb_add(R, b, v.t == V_LIST ? "]" : "}", 1);
        return true;
    default:
        ct_err(R, TM_EINVAL, pos, "tojson: a %s is not JSON%s", ct_tname(v.t), NULL);
        return false;
    }
}

