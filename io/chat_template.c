/*
 * chat_template.c — chat templates (tokenizer.chat_template, Jinja2):
 * splitting the source into text and tags with Jinja2's whitespace rules
 * as Hugging Face configures them (trim_blocks, lstrip_blocks, no
 * trailing newline kept), parsing the statements, the public functions.
 * Expressions are parsed in chat_template_expr.c, run in
 * chat_template_eval.c.
 */
#include "chat_template_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- arena */

struct ct_chunk { ct_chunk *next; size_t used, cap; max_align_t data[]; };

void *ct_alloc(ct_arena *a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    ct_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        c->used = 0, c->cap = cap, c->next = a->head, a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *ct_strdup(ct_arena *a, const char *s, size_t n)
{
    char *p = ct_alloc(a, n + 1);
    if (p && n)
        memcpy(p, s, n);
    return p;
}

void ct_arena_free(ct_arena *a)
{
    for (ct_chunk *c = a->head, *nx; c; c = nx)
        nx = c->next, free(c);
    a->head = NULL;
}

/* ------------------------------------------------------------- segments */

/* A piece of the source: text, or a tag's inside [start, end). */
typedef struct seg {
    char kind;           /* 't' text, '{' output, '%' statement, '#' comment */
    size_t start, end;   /* text span; inside of the tag */
    size_t pos;          /* the tag's first byte */
    bool lminus, rminus, lplus;
} seg;

static const char *FN_NEW = "tm_chat_template_new";

static size_t line_of(const char *s, size_t pos)
{
    size_t l = 1;
    for (size_t i = 0; i < pos; i++)
        l += s[i] == '\n';
    return l;
}

/* The end of the tag opened at i (the index of its closing delimiter), or
 * (size_t)-1.  Quotes are skipped in expression tags. */
static size_t tag_end(const char *s, size_t n, size_t i, char kind)
{
    char close = kind == '{' ? '}' : kind;
    char q = 0;
    for (; i + 1 < n; i++) {
        if (q) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == q)
                q = 0;
        } else if (kind != '#' && (s[i] == '\'' || s[i] == '"')) {
            q = s[i];
        } else if (s[i] == close && s[i + 1] == '}') {
            return i;
        }
    }
    return (size_t)-1;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Splits src into segments and applies the whitespace rules to the text
 * spans.  *nseg gets the count; NULL with an error on an unclosed tag. */
static seg *split(ct_arena *a, const char *s, size_t n, int *nseg)
{
    int cap = 16, k = 0;
    seg *v = malloc((size_t)cap * sizeof *v);
    if (!v) {
        tm__errf(TM_ENOMEM, FN_NEW, "out of memory");
        return NULL;
    }
    size_t i = 0, text = 0;
    for (;;) {
        size_t j = i;
        while (j + 1 < n && !(s[j] == '{' && (s[j + 1] == '{' || s[j + 1] == '%' || s[j + 1] == '#')))
            j++;
        bool at_tag = j + 1 < n;
        if (k + 2 > cap) {
            seg *nv = realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!nv) {
                free(v);
                tm__errf(TM_ENOMEM, FN_NEW, "out of memory");
                return NULL;
            }
            v = nv;
        }
        size_t tend = at_tag ? j : n;
        v[k++] = (seg){'t', text, tend, text, false, false, false};
        if (!at_tag)
            break;
        char kind = s[j + 1] == '{' ? '{' : s[j + 1];
        size_t in = j + 2;
        seg g = {kind, in, 0, j, false, false, false};
        if (in < n && s[in] == '-')
            g.lminus = true, in++;
        else if (in < n && s[in] == '+')
            g.lplus = true, in++;
        size_t e = tag_end(s, n, in, kind);
        if (e == (size_t)-1) {
            free(v);
            tm__errf(TM_EFORMAT, FN_NEW, "line %zu: unclosed \"{%c\"", line_of(s, j), kind);
            return NULL;
        }
        g.start = in;
        g.end = e;
        if (e > in && s[e - 1] == '-')
            g.rminus = true, g.end = e - 1;
        v[k++] = g;
        i = text = e + 2;
    }
    /* whitespace control.  line_start: the text starts a line (the
     * template's start, or a newline eaten by trim_blocks or "-"), as
     * Jinja2's lexer tracks it for lstrip_blocks */
    for (int q = 0; q < k; q += 2) {
        seg *t = &v[q], *prev = q > 0 ? &v[q - 1] : NULL, *next = q + 1 < k ? &v[q + 1] : NULL;
        bool line_start = !prev;
        if (prev && prev->rminus) {
            while (t->start < t->end && is_ws(s[t->start]))
                line_start = s[t->start++] == '\n';
        } else if (prev && prev->kind != '{') {
            /* trim_blocks: the newline right after a block tag goes */
            if (t->start < t->end && s[t->start] == '\n')
                t->start++, line_start = true;
            else if (t->start + 1 < t->end && s[t->start] == '\r' && s[t->start + 1] == '\n')
                t->start += 2, line_start = true;
        }
        if (next && next->lminus) {
            while (t->end > t->start && is_ws(s[t->end - 1]))
                t->end--;
        } else if (next && next->kind != '{' && !next->lplus) {
            /* lstrip_blocks: whitespace from a line's start to a block tag goes */
            size_t l = t->end;
            while (l > t->start && s[l - 1] != '\n')
                l--;
            size_t w = l;
            while (w < t->end && is_ws(s[w]))
                w++;
            if ((l > t->start || line_start) && w == t->end)
                t->end = l;
        }
    }
    (void)a;
    *nseg = k;
    return v;
}

/* ------------------------------------------------------------ statements */

typedef struct sparse {
    ct_arena *a;
    const char *src;
    seg *v;
    int n, i;
} sparse;

static ct_stmt *new_stmt(sparse *P, ct_skind kind, size_t pos)
{
    ct_stmt *st = ct_alloc(P->a, sizeof *st);
    if (!st)
        tm__errf(TM_ENOMEM, FN_NEW, "out of memory");
    else
        st->kind = kind, st->pos = pos;
    return st;
}

/* The keyword a statement tag starts with (into kw[32]). */
static void tag_keyword(const sparse *P, const seg *g, char *kw)
{
    size_t i = g->start, k = 0;
    while (i < g->end && is_ws(P->src[i]))
        i++;
    while (i < g->end && k < 31 && (P->src[i] == '_' || ((P->src[i] | 32) >= 'a' && (P->src[i] | 32) <= 'z')))
        kw[k++] = P->src[i++];
    kw[k] = 0;
}

static bool expect_end(sparse *P, ct_lex *L, const char *what)
{
    if (ct_lex_done(L))
        return true;
    tm__errf(TM_EFORMAT, FN_NEW, "line %zu: unexpected text after %s", line_of(P->src, ct_lex_pos(L)), what);
    return false;
}

/* Parses statements until a tag whose keyword is one of stops (NULL-
 * terminated; NULL: the end of the template).  *stop gets the index of the
 * stop keyword; P->i is left at that tag. */
static ct_stmt *parse_block(sparse *P, const char *const *stops, int *stop, int depth);

static ct_stmt *parse_tag(sparse *P, const seg *g, const char *kw, int depth)
{
    const char *fn = FN_NEW;
    size_t line = line_of(P->src, g->pos);
    ct_lex *L = ct_lex_new(P->a, P->src, g->start, g->end, fn);
    if (!L)
        return NULL;
    ct_lex_name(L, kw);
    if (strcmp(kw, "if") == 0) {
        ct_stmt *st = new_stmt(P, S_IF, g->pos), *cur = st;
        if (!st || !(st->e = ct_parse_expr(L)) || !expect_end(P, L, "the if condition"))
            return NULL;
        static const char *const stops[] = {"elif", "else", "endif", NULL};
        for (;;) {
            int which;
            P->i++;
            if (!(cur->body = parse_block(P, stops, &which, depth + 1)) && tm_last_status() < 0)
                return NULL;
            if (which < 0) {
                tm__errf(TM_EFORMAT, fn, "line %zu: \"if\" without \"endif\"", line);
                return NULL;
            }
            const seg *t = &P->v[P->i];
            ct_lex *M = ct_lex_new(P->a, P->src, t->start, t->end, fn);
            if (!M)
                return NULL;
            ct_lex_name(M, stops[which]);
            if (which == 0) {
                ct_stmt *el = new_stmt(P, S_IF, t->pos);
                if (!el || !(el->e = ct_parse_expr(M)) || !expect_end(P, M, "the elif condition"))
                    return NULL;
                el->var = "elif"; /* tells an elif from an else body that starts with an if */
                cur->orelse = el, cur = el;
            } else if (which == 1) {
                if (!expect_end(P, M, "else"))
                    return NULL;
                static const char *const end_only[] = {"endif", NULL};
                P->i++;
                if (!(cur->orelse = parse_block(P, end_only, &which, depth + 1)) && tm_last_status() < 0)
                    return NULL;
                if (which < 0) {
                    tm__errf(TM_EFORMAT, fn, "line %zu: \"if\" without \"endif\"", line);
                    return NULL;
                }
                return st;
            } else {
                return expect_end(P, M, "endif") ? st : NULL;
            }
        }
    }
    if (strcmp(kw, "for") == 0) {
        ct_stmt *st = new_stmt(P, S_FOR, g->pos);
        size_t vn;
        const char *var = st ? ct_lex_ident(L, &vn) : NULL;
        if (!var) {
            if (st)
                tm__errf(TM_EUNSUPPORTED, fn, "line %zu: \"for\" needs one loop variable (tuple unpacking is not supported)", line);
            return NULL;
        }
        if (ct_lex_punct(L, ",")) {
            tm__errf(TM_EUNSUPPORTED, fn, "line %zu: \"for a, b in ...\" (tuple unpacking) is not supported", line);
            return NULL;
        }
        st->var = ct_strdup(P->a, var, vn);
        if (!ct_lex_name(L, "in")) {
            tm__errf(TM_EFORMAT, fn, "line %zu: expected \"in\" in \"for\"", line);
            return NULL;
        }
        if (!(st->e = ct_parse_iterable(L)))
            return NULL;
        if (ct_lex_name(L, "if") && !(st->filter = ct_parse_expr(L)))
            return NULL;
        if (ct_lex_name(L, "recursive")) {
            tm__errf(TM_EUNSUPPORTED, fn, "line %zu: recursive loops are not supported", line);
            return NULL;
        }
        if (!expect_end(P, L, "the for loop"))
            return NULL;
        static const char *const stops[] = {"else", "endfor", NULL};
        int which;
        P->i++;
        if (!(st->body = parse_block(P, stops, &which, depth + 1)) && tm_last_status() < 0)
            return NULL;
        if (which < 0) {
            tm__errf(TM_EFORMAT, fn, "line %zu: \"for\" without \"endfor\"", line);
            return NULL;
        }
        if (which == 0) {
            static const char *const end_only[] = {"endfor", NULL};
            P->i++;
            if (!(st->orelse = parse_block(P, end_only, &which, depth + 1)) && tm_last_status() < 0)
                return NULL;
            if (which < 0) {
                tm__errf(TM_EFORMAT, fn, "line %zu: \"for\" without \"endfor\"", line);
                return NULL;
            }
        }
        return st;
    }
    if (strcmp(kw, "set") == 0) {
        ct_stmt *st = new_stmt(P, S_SET, g->pos);
        size_t vn, an;
        const char *var = st ? ct_lex_ident(L, &vn) : NULL, *attr = NULL;
        if (!var) {
            if (st)
                tm__errf(TM_EFORMAT, fn, "line %zu: \"set\" needs a variable name", line);
            return NULL;
        }
        if (ct_lex_punct(L, ".")) {
            if (!(attr = ct_lex_ident(L, &an))) {
                tm__errf(TM_EFORMAT, fn, "line %zu: expected an attribute name after \".\"", line);
                return NULL;
            }
            st->attr = ct_strdup(P->a, attr, an);
        }
        st->var = ct_strdup(P->a, var, vn);
        if (!ct_lex_punct(L, "=")) {
            tm__errf(TM_EUNSUPPORTED, fn, "line %zu: only \"{%% set name = value %%}\" is supported (no block set, no tuples)", line);
            return NULL;
        }
        if (!(st->e = ct_parse_expr(L)) || !expect_end(P, L, "the set value"))
            return NULL;
        P->i++;
        return st;
    }
    if (strcmp(kw, "break") == 0 || strcmp(kw, "continue") == 0) {
        ct_stmt *st = new_stmt(P, kw[0] == 'b' ? S_BREAK : S_CONTINUE, g->pos);
        if (!st || !expect_end(P, L, kw))
            return NULL;
        P->i++;
        return st;
    }
    static const char *const closers[] = {"endif", "endfor", "elif", "else", NULL};
    for (int k = 0; closers[k]; k++)
        if (strcmp(kw, closers[k]) == 0) {
            tm__errf(TM_EFORMAT, fn, "line %zu: \"%s\" without its opening tag", line, kw);
            return NULL;
        }
    if (!kw[0])
        tm__errf(TM_EFORMAT, fn, "line %zu: empty or malformed statement tag", line);
    else
        tm__errf(TM_EUNSUPPORTED, fn, "line %zu: the \"%s\" statement is not supported", line, kw);
    return NULL;
}

static ct_stmt *parse_block(sparse *P, const char *const *stops, int *stop, int depth)
{
    ct_stmt *head = NULL, **tail = &head;
    *stop = -1;
    tm_clear_error();
    if (depth > 64) {
        tm__errf(TM_EUNSUPPORTED, FN_NEW, "statements nested more than 64 deep");
        return NULL;
    }
    while (P->i < P->n) {
        const seg *g = &P->v[P->i];
        ct_stmt *st = NULL;
        if (g->kind == 't') {
            if (g->end > g->start) {
                if (!(st = new_stmt(P, S_TEXT, g->start)))
                    return NULL;
                st->text = P->src + g->start, st->len = g->end - g->start;
            }
            P->i++;
        } else if (g->kind == '#') {
            P->i++;
        } else if (g->kind == '{') {
            ct_lex *L = ct_lex_new(P->a, P->src, g->start, g->end, FN_NEW);
            if (!L || !(st = new_stmt(P, S_OUT, g->pos)) || !(st->e = ct_parse_expr(L)) ||
                !expect_end(P, L, "the expression"))
                return NULL;
            P->i++;
        } else {
            char kw[32];
            tag_keyword(P, g, kw);
            for (int k = 0; stops && stops[k]; k++)
                if (strcmp(kw, stops[k]) == 0) {
                    *stop = k;
                    return head;
                }
            if (!(st = parse_tag(P, g, kw, depth)))
                return NULL;
            if (st->kind == S_IF || st->kind == S_FOR)
                P->i++;
        }
        if (st) {
            *tail = st;
            tail = &st->next;
        }
    }
    if (stops) {
        /* the caller reports the missing end tag */
        return head;
    }
    return head;
}

/* ------------------------------------------------------------ public API */

tm_chat_template *tm_chat_template_new(const char *jinja_text)
{
    if (!jinja_text) {
        tm__errf(TM_EINVAL, FN_NEW, "jinja_text is NULL");
        return NULL;
    }
    tm_chat_template *t = calloc(1, sizeof *t);
    size_t n = strlen(jinja_text);
    /* keep_trailing_newline off: one final newline of the source goes */
    if (n && jinja_text[n - 1] == '\n')
        n -= n > 1 && jinja_text[n - 2] == '\r' ? 2 : 1;
    if (!t || !(t->src = malloc(n + 1))) {
        free(t);
        tm__errf(TM_ENOMEM, FN_NEW, "out of memory");
        return NULL;
    }
    memcpy(t->src, jinja_text, n);
    t->src[n] = 0;
    t->len = n;
    int nseg;
    seg *v = split(&t->arena, t->src, n, &nseg);
    if (!v) {
        tm_chat_template_free(t);
        return NULL;
    }
    sparse P = {&t->arena, t->src, v, nseg, 0};
    int stop;
    t->root = parse_block(&P, NULL, &stop, 0);
    tm_status st = tm_last_status();
    free(v);
    if (!t->root && st < 0) {
        tm_chat_template_free(t);
        return NULL;
    }
    if (P.i < P.n) {
        char kw[32];
        tag_keyword(&P, &P.v[P.i], kw);
        tm__errf(TM_EFORMAT, FN_NEW, "line %zu: \"%s\" without its opening tag", line_of(t->src, P.v[P.i].pos), kw);
        tm_chat_template_free(t);
        return NULL;
    }
    return t;
}

void tm_chat_template_free(tm_chat_template *t)
{
    if (!t)
        return;
    ct_arena_free(&t->arena);
    free(t->src);
    free(t->bos);
    free(t->eos);
    free(t);
}

tm_status tm_chat_template_set_tokens(tm_chat_template *t, const char *bos_token, const char *eos_token)
{
    if (!t)
        return TM_ERR(TM_EINVAL, "t is NULL");
    char *b = bos_token ? strdup(bos_token) : NULL, *e = eos_token ? strdup(eos_token) : NULL;
    if ((bos_token && !b) || (eos_token && !e)) {
        free(b), free(e);
        return TM_ERR(TM_ENOMEM, "out of memory");
    }
    free(t->bos), free(t->eos);
    t->bos = b, t->eos = e;
    return TM_OK;
}

char *tm_chat_template_apply(const tm_chat_template *t, const tm_chat_msg *msgs, int n, bool add_generation_prompt,
                             size_t *len)
{
    if (!t || (!msgs && n) || n < 0) {
        TM_ERR(TM_EINVAL, "%s", !t ? "t is NULL" : n < 0 ? "n is negative" : "msgs is NULL");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) {
            TM_ERR(TM_EINVAL, "msgs[%d].%s is NULL", i, !msgs[i].role ? "role" : "content");
            return NULL;
        }
    ct_run_in in = {msgs, n, add_generation_prompt, t->bos, t->eos};
    size_t l = 0;
    char *out = ct_render(t, &in, &l);
    if (out && len)
        *len = l;
    return out;
}
