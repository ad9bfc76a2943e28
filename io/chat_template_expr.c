/*
 * chat_template_expr.c — Jinja2 expressions of chat templates: the lexer
 * inside a tag and a recursive-descent parser with Jinja2's precedence
 * (lowest first): `x if c else y`, or, and, not, comparisons and (not) in,
 * + -, ~, * / // %, unary -, then primaries with postfix .attr, [index],
 * [a:b], calls, `| filter(args)` and `is [not] test`.  Constructs outside
 * this subset (dict literals, tuples, floats, **) are TM_EUNSUPPORTED.
 */
#include "chat_template_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_END, T_NAME, T_STR, T_INT, T_PUNCT } ttype;

struct ct_lex {
    ct_arena *a;
    const char *src, *fn;
    size_t pos, end;
    int depth;
    /* the current token */
    ttype t;
    size_t tpos;
    const char *s;   /* T_NAME: in src; T_STR: decoded, in the arena */
    size_t n;
    int64_t i;
    char p[3];       /* T_PUNCT */
    bool failed;
    bool no_cond;    /* the top level takes no `x if c else y` (a for loop's iterable) */
};

static size_t line_at(const ct_lex *L, size_t pos)
{
    size_t l = 1;
    for (size_t i = 0; i < pos; i++)
        l += L->src[i] == '\n';
    return l;
}

static void *fail(ct_lex *L, tm_status st, const char *what)
{
    if (!L->failed)
        tm__errf(st, L->fn, "line %zu: %s", line_at(L, L->tpos), what);
    L->failed = true;
    L->t = T_END; /* nothing more to read: every parsing loop ends */
    return NULL;
}

static bool is_id0(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_dig(char c) { return c >= '0' && c <= '9'; }

static int hexval(char c)
{
    return is_dig(c) ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 63)); o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 63));
    o[2] = (char)(0x80 | (cp >> 6 & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* A string literal at src[i] (the quote): Python's escapes decoded, as
 * Jinja2 does; an unknown escape keeps its backslash. */
static bool lex_string(ct_lex *L, size_t i)
{
    char q = L->src[i++];
    size_t j = i;
    while (j < L->end && L->src[j] != q)
        j += L->src[j] == '\\' ? 2 : 1;
    if (j >= L->end) {
        fail(L, TM_EFORMAT, "unterminated string literal");
        return false;
    }
    char *o = ct_alloc(L->a, j - i + 1);
    if (!o) {
        fail(L, TM_ENOMEM, "out of memory");
        return false;
    }
    size_t k = 0;
    for (size_t x = i; x < j; x++) {
        char c = L->src[x];
        if (c != '\\') {
            o[k++] = c;
            continue;
        }
        char e = L->src[++x];
        int nhex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        switch (e) {
        case 'n': o[k++] = '\n'; break;
        case 't': o[k++] = '\t'; break;
        case 'r': o[k++] = '\r'; break;
        case '0': o[k++] = '\0'; break;
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'v': o[k++] = '\v'; break;
        case '\\': case '\'': case '"': o[k++] = e; break;
        case '\n': break;
        default:
            if (nhex) {
                uint32_t cp = 0;
                bool ok = x + (size_t)nhex < j;
                for (int h = 1; ok && h <= nhex; h++) {
                    int d = hexval(L->src[x + (size_t)h]);
                    ok = d >= 0;
                    cp = cp * 16 + (uint32_t)(d < 0 ? 0 : d);
                }
                if (!ok || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                    fail(L, TM_EFORMAT, "bad \\x, \\u or \\U escape in a string literal");
                    return false;
                }
                /* the escape is never shorter than its UTF-8 */
                k += put_utf8(o + k, cp);
                x += (size_t)nhex;
            } else {
                o[k++] = '\\';
                o[k++] = e;
            }
        }
    }
    L->t = T_STR, L->s = o, L->n = k, L->pos = j + 1;
    return true;
}

/* Reads the next token into L. */
static bool next(ct_lex *L)
{
    while (L->pos < L->end && (L->src[L->pos] == ' ' || L->src[L->pos] == '\t' || L->src[L->pos] == '\n' ||
                               L->src[L->pos] == '\r'))
        L->pos++;
    L->tpos = L->pos;
    if (L->pos >= L->end) {
        L->t = T_END;
        return true;
    }
    const char *s = L->src;
    size_t i = L->pos;
    if (is_id0(s[i])) {
        size_t j = i;
        while (j < L->end && (is_id0(s[j]) || is_dig(s[j])))
            j++;
        L->t = T_NAME, L->s = s + i, L->n = j - i, L->pos = j;
        return true;
    }
    if (is_dig(s[i])) {
        int64_t v = 0;
        size_t j = i;
        while (j < L->end && (is_dig(s[j]) || s[j] == '_')) {
            if (s[j] != '_') {
                if (v > (INT64_MAX - 9) / 10) {
                    fail(L, TM_EUNSUPPORTED, "integer literal too large");
                    return false;
                }
                v = v * 10 + (s[j] - '0');
            }
            j++;
        }
        if (j < L->end && (s[j] == '.' || s[j] == 'e' || s[j] == 'E') && j + 1 < L->end && is_dig(s[j + 1])) {
            fail(L, TM_EUNSUPPORTED, "float literals are not supported");
            return false;
        }
        L->t = T_INT, L->i = v, L->pos = j;
        return true;
    }
    if (s[i] == '\'' || s[i] == '"')
        return lex_string(L, i);
    static const char *const two[] = {"==", "!=", "<=", ">=", "//", "**", NULL};
    for (int k = 0; two[k]; k++)
        if (i + 1 < L->end && s[i] == two[k][0] && s[i + 1] == two[k][1]) {
            L->t = T_PUNCT, L->p[0] = s[i], L->p[1] = s[i + 1], L->p[2] = 0, L->pos = i + 2;
            return true;
        }
    if (strchr("+-*/%~|.,:()[]{}<>=", s[i])) {
        L->t = T_PUNCT, L->p[0] = s[i], L->p[1] = 0, L->pos = i + 1;
        return true;
    }
    char msg[64];
    snprintf(msg, sizeof msg, "unexpected character '%c' in an expression", s[i]);
    fail(L, TM_EFORMAT, msg);
    return false;
}

ct_lex *ct_lex_new(ct_arena *a, const char *src, size_t start, size_t end, const char *fn)
{
    ct_lex *L = ct_alloc(a, sizeof *L);
    if (!L) {
        tm__errf(TM_ENOMEM, fn, "out of memory");
        return NULL;
    }
    L->a = a, L->src = src, L->fn = fn, L->pos = start, L->end = end;
    if (!next(L))
        return NULL;
    return L;
}

static bool is_name(const ct_lex *L, const char *kw)
{
    return L->t == T_NAME && L->n == strlen(kw) && memcmp(L->s, kw, L->n) == 0;
}

static bool is_punct(const ct_lex *L, const char *p) { return L->t == T_PUNCT && strcmp(L->p, p) == 0; }

bool ct_lex_name(ct_lex *L, const char *kw)
{
    if (!is_name(L, kw))
        return false;
    next(L);
    return true;
}

bool ct_lex_punct(ct_lex *L, const char *p)
{
    if (!is_punct(L, p))
        return false;
    next(L);
    return true;
}

const char *ct_lex_ident(ct_lex *L, size_t *n)
{
    if (L->t != T_NAME)
        return NULL;
    const char *s = L->s;
    *n = L->n;
    next(L);
    return s;
}

bool ct_lex_done(ct_lex *L) { return L->t == T_END && !L->failed; }
size_t ct_lex_pos(const ct_lex *L) { return L->tpos; }

/* ------------------------------------------------------------- parsing */

static ct_expr *node(ct_lex *L, ct_ekind k)
{
    ct_expr *e = ct_alloc(L->a, sizeof *e);
    if (!e)
        return fail(L, TM_ENOMEM, "out of memory");
    e->kind = k, e->pos = L->tpos;
    return e;
}

static ct_expr *bin(ct_lex *L, ct_ekind k, int op, ct_expr *a, ct_expr *b)
{
    if (!a || !b)
        return NULL;
    ct_expr *e = node(L, k);
    if (e)
        e->op = op, e->a = a, e->b = b;
    return e;
}

static ct_expr *p_expr(ct_lex *L);

/* (args) after the "(": positional and name=value arguments into e. */
static bool p_args(ct_lex *L, ct_expr *e)
{
    ct_expr *args[32];
    const char *kw[32];
    int n = 0;
    while (!is_punct(L, ")")) {
        if (n == 32) {
            fail(L, TM_EUNSUPPORTED, "more than 32 arguments");
            return false;
        }
        kw[n] = NULL;
        if (L->t == T_NAME) {
            /* name=value: look past the name */
            size_t spos = L->tpos;
            const char *s = L->s;
            size_t sn = L->n;
            next(L);
            if (is_punct(L, "=")) {
                next(L);
                kw[n] = ct_strdup(L->a, s, sn);
            } else {
                L->pos = spos;
                next(L);
            }
        }
        if (!(args[n++] = p_expr(L)))
            return false;
        if (!ct_lex_punct(L, ",") && !is_punct(L, ")")) {
            fail(L, TM_EFORMAT, "expected \",\" or \")\" in an argument list");
            return false;
        }
    }
    next(L);
    e->nargs = n;
    e->args = ct_alloc(L->a, (size_t)(n ? n : 1) * sizeof *e->args);
    e->kw = ct_alloc(L->a, (size_t)(n ? n : 1) * sizeof *e->kw);
    if (!e->args || !e->kw) {
        fail(L, TM_ENOMEM, "out of memory");
        return false;
    }
    memcpy(e->args, args, (size_t)n * sizeof *args);
    memcpy(e->kw, kw, (size_t)n * sizeof *kw);
    return true;
}

static ct_expr *p_primary(ct_lex *L)
{
    ct_expr *e;
    if (L->t == T_NAME) {
        static const char *const lit[] = {"true", "True", "false", "False", "none", "None"};
        for (int k = 0; k < 6; k++)
            if (is_name(L, lit[k])) {
                if (!(e = node(L, k < 4 ? E_BOOL : E_NONE)))
                    return NULL;
                e->i = k < 2;
                next(L);
                return e;
            }
        if (!(e = node(L, E_NAME)))
            return NULL;
        e->s = ct_strdup(L->a, L->s, L->n), e->n = L->n;
        next(L);
        return e;
    }
    if (L->t == T_STR) {
        if (!(e = node(L, E_STR)))
            return NULL;
        e->s = L->s, e->n = L->n;
        next(L);
        while (L->t == T_STR) { /* adjacent literals concatenate */
            char *c = ct_alloc(L->a, e->n + L->n + 1);
            if (!c)
                return fail(L, TM_ENOMEM, "out of memory");
            memcpy(c, e->s, e->n), memcpy(c + e->n, L->s, L->n);
            e->s = c, e->n += L->n;
            next(L);
        }
        return e;
    }
    if (L->t == T_INT) {
        if (!(e = node(L, E_INT)))
            return NULL;
        e->i = L->i;
        next(L);
        return e;
    }
    if (ct_lex_punct(L, "(")) {
        if (!(e = p_expr(L)))
            return NULL;
        if (is_punct(L, ","))
            return fail(L, TM_EUNSUPPORTED, "tuples are not supported");
        if (!ct_lex_punct(L, ")"))
            return fail(L, TM_EFORMAT, "expected \")\"");
        return e;
    }
    if (is_punct(L, "[")) {
        if (!(e = node(L, E_LIST)))
            return NULL;
        next(L);
        ct_expr *items[256];
        int n = 0;
        while (!is_punct(L, "]")) {
            if (n == 256)
                return fail(L, TM_EUNSUPPORTED, "list literal longer than 256");
            if (!(items[n++] = p_expr(L)))
                return NULL;
            if (!ct_lex_punct(L, ",") && !is_punct(L, "]"))
                return fail(L, TM_EFORMAT, "expected \",\" or \"]\" in a list");
        }
        next(L);
        e->nargs = n;
        if (!(e->args = ct_alloc(L->a, (size_t)(n ? n : 1) * sizeof *e->args)))
            return fail(L, TM_ENOMEM, "out of memory");
        memcpy(e->args, items, (size_t)n * sizeof *items);
        return e;
    }
    if (is_punct(L, "{"))
        return fail(L, TM_EUNSUPPORTED, "dict literals are not supported");
    if (L->t == T_END)
        return fail(L, TM_EFORMAT, "expected an expression");
    char msg[64];
    snprintf(msg, sizeof msg, "unexpected \"%s\" in an expression", L->t == T_PUNCT ? L->p : "?");
    return fail(L, TM_EFORMAT, msg);
}

static ct_expr *p_postfix(ct_lex *L, ct_expr *e)
{
    while (e) {
        if (ct_lex_punct(L, ".")) {
            if (L->t != T_NAME)
                return fail(L, TM_EUNSUPPORTED, "expected an attribute name after \".\"");
            ct_expr *x = node(L, E_ATTR);
            if (!x)
                return NULL;
            x->a = e, x->s = ct_strdup(L->a, L->s, L->n), x->n = L->n;
            next(L);
            e = x;
        } else if (ct_lex_punct(L, "[")) {
            ct_expr *x = node(L, E_INDEX), *lo = NULL, *hi = NULL;
            if (!x)
                return NULL;
            if (!is_punct(L, ":") && !(lo = p_expr(L)))
                return NULL;
            if (ct_lex_punct(L, ":")) {
                x->kind = E_SLICE;
                if (!is_punct(L, "]") && !(hi = p_expr(L)))
                    return NULL;
                if (is_punct(L, ":"))
                    return fail(L, TM_EUNSUPPORTED, "slices with a step are not supported");
            }
            if (!ct_lex_punct(L, "]"))
                return fail(L, TM_EFORMAT, "expected \"]\"");
            x->a = e, x->b = lo, x->c = hi;
            e = x;
        } else if (ct_lex_punct(L, "(")) {
            ct_expr *x = node(L, E_CALL);
            if (!x)
                return NULL;
            x->a = e;
            if (!p_args(L, x))
                return NULL;
            e = x;
        } else {
            return e;
        }
    }
    return e;
}

/* | filter(args) and is [not] test, after a postfix expression */
static ct_expr *p_filters(ct_lex *L, ct_expr *e)
{
    while (e) {
        if (ct_lex_punct(L, "|")) {
            if (L->t != T_NAME)
                return fail(L, TM_EFORMAT, "expected a filter name after \"|\"");
            ct_expr *x = node(L, E_FILTER);
            if (!x)
                return NULL;
            x->a = e, x->s = ct_strdup(L->a, L->s, L->n), x->n = L->n;
            next(L);
            if (ct_lex_punct(L, "(") && !p_args(L, x))
                return NULL;
            e = x;
        } else if (ct_lex_name(L, "is")) {
            ct_expr *x = node(L, E_TEST);
            if (!x)
                return NULL;
            x->op = ct_lex_name(L, "not");
            if (L->t != T_NAME)
                return fail(L, TM_EFORMAT, "expected a test name after \"is\"");
            x->a = e, x->s = ct_strdup(L->a, L->s, L->n), x->n = L->n;
            next(L);
            if (ct_lex_punct(L, "(") && !p_args(L, x))
                return NULL;
            e = x;
        } else {
            return e;
        }
    }
    return e;
}

static ct_expr *p_unary(ct_lex *L)
{
    if (++L->depth > 200)
        return fail(L, TM_EUNSUPPORTED, "expression nested more than 200 deep");
    ct_expr *e;
    if (ct_lex_punct(L, "-")) {
        ct_expr *x = node(L, E_NEG);
        if (!x || !(x->a = p_unary(L)))
            return NULL;
        e = x;
    } else if (ct_lex_punct(L, "+")) {
        e = p_unary(L);
    } else {
        e = p_filters(L, p_postfix(L, p_primary(L)));
    }
    L->depth--;
    return e;
}

static ct_expr *p_math2(ct_lex *L)
{
    ct_expr *e = p_unary(L);
    for (;;) {
        if (is_punct(L, "**"))
            return fail(L, TM_EUNSUPPORTED, "\"**\" is not supported");
        int op = is_punct(L, "*") ? OP_MUL : is_punct(L, "/") ? OP_DIV : is_punct(L, "//") ? OP_FLOORDIV
                 : is_punct(L, "%") ? OP_MOD : -1;
        if (op < 0 || !e)
            return e;
        next(L);
        e = bin(L, E_BIN, op, e, p_unary(L));
    }
}

static ct_expr *p_concat(ct_lex *L)
{
    ct_expr *e = p_math2(L);
    while (e && ct_lex_punct(L, "~"))
        e = bin(L, E_BIN, OP_CONCAT, e, p_math2(L));
    return e;
}

static ct_expr *p_math1(ct_lex *L)
{
    ct_expr *e = p_concat(L);
    for (;;) {
        int op = is_punct(L, "+") ? OP_ADD : is_punct(L, "-") ? OP_SUB : -1;
        if (op < 0 || !e)
            return e;
        next(L);
        e = bin(L, E_BIN, op, e, p_concat(L));
    }
}

static ct_expr *p_compare(ct_lex *L)
{
    ct_expr *e = p_math1(L);
    for (;;) {
        int op = is_punct(L, "==") ? OP_EQ : is_punct(L, "!=") ? OP_NE : is_punct(L, "<=") ? OP_LE
                 : is_punct(L, ">=") ? OP_GE : is_punct(L, "<") ? OP_LT : is_punct(L, ">") ? OP_GT
                 : is_name(L, "in") ? OP_IN : is_name(L, "not") ? OP_NOTIN : -1;
        if (op < 0 || !e)
            return e;
        next(L);
        if (op == OP_NOTIN && !ct_lex_name(L, "in"))
            return fail(L, TM_EFORMAT, "expected \"in\" after \"not\"");
        e = bin(L, E_BIN, op, e, p_math1(L));
    }
}

static ct_expr *p_not(ct_lex *L)
{
    if (is_name(L, "not")) {
        ct_expr *x = node(L, E_NOT);
        next(L);
        if (!x || !(x->a = p_not(L)))
            return NULL;
        return x;
    }
    return p_compare(L);
}

static ct_expr *p_and(ct_lex *L)
{
    ct_expr *e = p_not(L);
    while (e && ct_lex_name(L, "and"))
        e = bin(L, E_AND, 0, e, p_not(L));
    return e;
}

static ct_expr *p_or(ct_lex *L)
{
    ct_expr *e = p_and(L);
    while (e && ct_lex_name(L, "or"))
        e = bin(L, E_OR, 0, e, p_and(L));
    return e;
}

static ct_expr *p_expr(ct_lex *L)
{
    if (++L->depth > 200)
        return fail(L, TM_EUNSUPPORTED, "expression nested more than 200 deep");
    ct_expr *e = p_or(L);
    if (e && !(L->no_cond && L->depth == 1) && ct_lex_name(L, "if")) {
        ct_expr *x = node(L, E_COND);
        if (!x || !(x->b = p_or(L)))
            return NULL;
        x->a = e;
        if (ct_lex_name(L, "else") && !(x->c = p_expr(L)))
            return NULL;
        e = x;
    }
    L->depth--;
    return e;
}

ct_expr *ct_parse_expr(ct_lex *L)
{
    if (L->failed)
        return NULL;
    L->no_cond = false;
    return p_expr(L);
}

ct_expr *ct_parse_iterable(ct_lex *L)
{
    if (L->failed)
        return NULL;
    L->no_cond = true;
    ct_expr *e = p_expr(L);
    L->no_cond = false;
    return e;
}
