/*
 * chat_template_run.h — what the three parts of the chat template
 * interpreter share: the values of a run (chat_template_value.c), the
 * filters, tests and methods (chat_template_filters.c), and expressions
 * and statements (chat_template_eval.c).  Internal to io/.
 */
#ifndef FOUNDRY_IO_CHAT_TEMPLATE_RUN_H
#define FOUNDRY_IO_CHAT_TEMPLATE_RUN_H

#include "chat_template_impl.h"

#include <string.h>

typedef enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_STR, V_LIST, V_DICT, V_FUNC } vtype;

typedef struct ct_seq ct_seq;
typedef struct val {
    vtype t;
    int64_t i;       /* V_BOOL, V_INT, V_FUNC id */
    const char *s;   /* V_STR; V_UNDEF: the name, for errors */
    size_t n;
    ct_seq *q;       /* V_LIST, V_DICT (shared: namespaces are mutable) */
} val;

struct ct_seq {
    int n, cap;
    val *v;
    const char **k; size_t *kn;   /* V_DICT keys */
};

enum { F_RAISE, F_RANGE, F_NAMESPACE };

typedef struct frame {
    struct frame *up;
    int n, cap;
    const char **names;
    val *vals;
} frame;

typedef struct run {
    const tm_chat_template *t;
    ct_arena a;
    char *out;
    size_t n, cap;
    int ctl;         /* 1 break, 2 continue */
    bool failed;
} run;

/* A growable string in the arena. */
typedef struct sbuf { char *p; size_t n, cap; bool bad; } sbuf;

/* Positional and keyword arguments evaluated. */
typedef struct args { int n; val v[32]; const char *kw[32]; } args;

static inline val mk_int(int64_t i) { return (val){V_INT, i, NULL, 0, NULL}; }
static inline val mk_bool(bool b) { return (val){V_BOOL, b, NULL, 0, NULL}; }
static inline val mk_str(const char *s, size_t n) { return (val){V_STR, 0, s, n, NULL}; }
static inline val mk_undef(const char *name) { return (val){V_UNDEF, 0, name, name ? strlen(name) : 0, NULL}; }

/* Values (chat_template_value.c).  Errors set R->failed and the error
 * (tm_chat_template_apply naming the template line); they return a
 * V_UNDEF or false. */
val ct_err(run *R, tm_status st, size_t pos, const char *fmt, const char *a1, const char *a2);
val ct_oom(run *R);
const char *ct_tname(vtype t);
ct_seq *ct_seq_new(run *R, bool dict);
bool ct_seq_push(run *R, ct_seq *q, const char *k, size_t kn, val v);
val *ct_dict_get(const ct_seq *q, const char *k, size_t kn);
bool ct_dict_set(run *R, ct_seq *q, const char *k, size_t kn, val v);
bool ct_truthy(val v);
bool ct_emit(run *R, const char *s, size_t n);
void ct_sb_add(run *R, sbuf *b, const char *s, size_t n);
bool ct_to_text(run *R, sbuf *b, val v, size_t pos);
val ct_text_of(run *R, val v, size_t pos);
bool ct_to_json(run *R, sbuf *b, val v, size_t pos, int depth);
bool ct_is_space(char c);
size_t ct_cp_count(const char *s, size_t n);
size_t ct_cp_offset(const char *s, size_t n, size_t k);
val ct_strip(val s, const char *chars, size_t cn, bool left, bool right);
val ct_case_map(run *R, val s, bool upper);
bool ct_equal(val a, val b);
val ct_undefined_use(run *R, val v, size_t pos, const char *what);

/* Filters, tests, methods (chat_template_filters.c). */
bool ct_eval_args(run *R, frame *f, const ct_expr *e, args *A);
bool ct_want_args(run *R, const args *A, int lo, int hi, const char *what, size_t pos);
val ct_filter(run *R, frame *f, const ct_expr *e);
val ct_test(run *R, frame *f, const ct_expr *e);
val ct_method(run *R, val obj, const char *name, const args *A, size_t pos);

/* Expressions (chat_template_eval.c). */
val ct_eval(run *R, frame *f, const ct_expr *e);
val ct_index_of(run *R, val a, val k, size_t pos);

#endif
