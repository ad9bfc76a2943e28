/*
 * chat_template_impl.h — the chat-template interpreter's internals: an
 * arena, the syntax tree and the values.  Internal; never installed.
 *
 * Chat templates are Jinja2 run by Hugging Face's apply_chat_template,
 * i.e. with trim_blocks and lstrip_blocks on and keep_trailing_newline
 * off; the interpreter reproduces that subset of Jinja2 exactly and
 * refuses the rest by name.
 */
#ifndef FOUNDRY_IO_CHAT_TEMPLATE_IMPL_H
#define FOUNDRY_IO_CHAT_TEMPLATE_IMPL_H

#include "foundry/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- arena */

typedef struct ct_chunk ct_chunk;
typedef struct ct_arena { ct_chunk *head; } ct_arena;
/* n zeroed bytes that live until ct_arena_free; NULL when out of memory. */
void *ct_alloc(ct_arena *a, size_t n);
char *ct_strdup(ct_arena *a, const char *s, size_t n);
void ct_arena_free(ct_arena *a);

/* --------------------------------------------------------- syntax tree */

typedef enum ct_ekind {
    E_STR, E_INT, E_BOOL, E_NONE, E_NAME, E_LIST,
    E_ATTR,    /* a.name */
    E_INDEX,   /* a[b] */
    E_SLICE,   /* a[b:c], b or c may be NULL */
    E_CALL,    /* a(args) */
    E_FILTER,  /* a | name(args) */
    E_TEST,    /* a is [not] name */
    E_NOT, E_NEG,
    E_BIN,     /* a op b */
    E_AND, E_OR,
    E_COND     /* a if b else c (c may be NULL) */
} ct_ekind;

typedef enum ct_op {
    OP_EQ, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE, OP_IN, OP_NOTIN,
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_CONCAT
} ct_op;

typedef struct ct_expr ct_expr;
struct ct_expr {
    ct_ekind kind;
    int op;              /* E_BIN: ct_op; E_TEST: 1 when negated */
    const char *s;       /* E_STR value, E_NAME / E_ATTR / E_FILTER / E_TEST name */
    size_t n;
    int64_t i;           /* E_INT, E_BOOL */
    ct_expr *a, *b, *c;
    ct_expr **args;      /* E_CALL / E_FILTER / E_LIST: positional, then keyword */
    const char **kw;     /* keyword names, NULL for positional ones */
    int nargs;
    size_t pos;          /* byte offset in the template (for errors) */
};

typedef enum ct_skind { S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_BREAK, S_CONTINUE } ct_skind;

typedef struct ct_stmt ct_stmt;
struct ct_stmt {
    ct_skind kind;
    const char *text;    /* S_TEXT */
    size_t len;
    ct_expr *e;          /* S_OUT value, S_IF condition, S_FOR iterable, S_SET value */
    ct_expr *filter;     /* S_FOR: `if` filter or NULL */
    ct_stmt *body;       /* S_IF then, S_FOR body */
    ct_stmt *orelse;     /* S_IF elif/else chain, S_FOR else */
    const char *var;     /* S_FOR loop variable, S_SET target */
    const char *attr;    /* S_SET: target.attr (namespace), else NULL */
    size_t pos;
    ct_stmt *next;
};

struct tm_chat_template {
    ct_arena arena;
    char *src;
    size_t len;
    ct_stmt *root;
    char *bos, *eos;     /* bos_token / eos_token, NULL: undefined */
};

/* Parses one expression from s[0..n) (the inside of a tag, at byte offset
 * base of src); *end gets where it stopped.  NULL with an error naming fn. */
typedef struct ct_lex ct_lex;
ct_lex *ct_lex_new(ct_arena *a, const char *src, size_t start, size_t end, const char *fn);
ct_expr *ct_parse_expr(ct_lex *L);
/* The same without a top-level `x if c else y`: a for loop's iterable,
 * where `if` starts the loop's filter. */
ct_expr *ct_parse_iterable(ct_lex *L);
/* Next token helpers for the statement parser. */
bool ct_lex_name(ct_lex *L, const char *kw);   /* consumes the keyword when it is next */
bool ct_lex_punct(ct_lex *L, const char *p);   /* consumes the punctuation when it is next */
const char *ct_lex_ident(ct_lex *L, size_t *n);/* consumes an identifier (NULL: none) */
bool ct_lex_done(ct_lex *L);                   /* nothing left */
size_t ct_lex_pos(const ct_lex *L);

/* ------------------------------------------------------------- running */

typedef struct ct_run_in {
    const tm_chat_msg *msgs;
    int n;
    bool add_generation_prompt;
    const char *bos, *eos;   /* NULL: undefined */
} ct_run_in;

/* Renders the template: malloc'd NUL-terminated text, *len its length. */
char *ct_render(const tm_chat_template *t, const ct_run_in *in, size_t *len);

#endif
