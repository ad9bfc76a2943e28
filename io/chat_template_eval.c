/*
 * chat_template_eval.c — running a parsed chat template: Jinja2's values
 * (undefined, none, bool, int, str, list, dict) with Python's semantics
 * for the operators, filters, tests and methods chat templates use.
 * Jinja2's default Undefined is reproduced: it prints as "", is false,
 * iterates as empty, but adding to it or taking its attribute is an
 * error.  Anything outside the subset is TM_EUNSUPPORTED naming it;
 * raise_exception(msg) is TM_EINVAL with the template's message.
 */
#include "chat_template_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
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

static const char *FN = "tm_chat_template_apply";

static size_t line_of(const run *R, size_t pos)
{
    size_t l = 1;
    for (size_t i = 0; i < pos && i < R->t->len; i++)
        l += R->t->src[i] == '\n';
    return l;
}

static val err(run *R, tm_status st, size_t pos, const char *fmt, const char *a1, const char *a2)
{
    if (!R->failed) {
        char msg[256];
        snprintf(msg, sizeof msg, fmt, a1 ? a1 : "", a2 ? a2 : "");
        tm__errf(st, FN, "line %zu: %s", line_of(R, pos), msg);
    }
    R->failed = true;
    return (val){V_UNDEF, 0, NULL, 0, NULL};
}

static val oom(run *R) { return err(R, TM_ENOMEM, 0, "out of memory%s%s", NULL, NULL); }

static const char *tname(vtype t)
{
    static const char *const n[] = {"undefined", "none", "bool", "int", "str", "list", "dict", "function"};
    return n[t];
}

static val mk_int(int64_t i) { return (val){V_INT, i, NULL, 0, NULL}; }
static val mk_bool(bool b) { return (val){V_BOOL, b, NULL, 0, NULL}; }
static val mk_str(const char *s, size_t n) { return (val){V_STR, 0, s, n, NULL}; }
static val mk_undef(const char *name) { return (val){V_UNDEF, 0, name, name ? strlen(name) : 0, NULL}; }

static ct_seq *seq_new(run *R, bool dict)
{
    ct_seq *q = ct_alloc(&R->a, sizeof *q);
    if (!q)
        return NULL;
    (void)dict;
    return q;
}

static bool seq_push(run *R, ct_seq *q, const char *k, size_t kn, val v)
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

static val *dict_get(const ct_seq *q, const char *k, size_t kn)
{
    for (int i = 0; i < q->n; i++)
        if (q->kn[i] == kn && memcmp(q->k[i], k, kn) == 0)
            return &q->v[i];
    return NULL;
}

static bool dict_set(run *R, ct_seq *q, const char *k, size_t kn, val v)
{
    val *p = dict_get(q, k, kn);
    if (p) {
        *p = v;
        return true;
    }
    return seq_push(R, q, k, kn, v);
}

static bool truthy(val v)
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

static bool emit(run *R, const char *s, size_t n)
{
    if (R->n + n + 1 > R->cap) {
        size_t cap = R->cap ? R->cap : 256;
        while (cap < R->n + n + 1)
            cap *= 2;
        char *p = realloc(R->out, cap);
        if (!p) {
            oom(R);
            return false;
        }
        R->out = p, R->cap = cap;
    }
    memcpy(R->out + R->n, s, n);
    R->n += n;
    return true;
}

/* A growable string in the arena. */
typedef struct sbuf { char *p; size_t n, cap; bool bad; } sbuf;

static void sb_add(run *R, sbuf *b, const char *s, size_t n)
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

static bool to_json(run *R, sbuf *b, val v, size_t pos, int depth);

/* Python's str(v) into b; false (error set) for what has no faithful text here. */
static bool to_text(run *R, sbuf *b, val v, size_t pos)
{
    char num[32];
    switch (v.t) {
    case V_UNDEF: return true;
    case V_NONE: sb_add(R, b, "None", 4); return true;
    case V_BOOL: sb_add(R, b, v.i ? "True" : "False", v.i ? 4 : 5); return true;
    case V_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.i);
        sb_add(R, b, num, strlen(num));
        return true;
    case V_STR: sb_add(R, b, v.s, v.n); return true;
    default:
        err(R, TM_EUNSUPPORTED, pos, "printing a %s is not supported (Python repr)%s", tname(v.t), NULL);
        return false;
    }
}

static val text_of(run *R, val v, size_t pos)
{
    if (v.t == V_STR)
        return v;
    sbuf b = {0};
    if (!to_text(R, &b, v, pos))
        return mk_undef(NULL);
    if (b.bad)
        return oom(R);
    return mk_str(b.p ? b.p : "", b.n);
}

/* ----------------------------------------------------------- variables */

static val *lookup(frame *f, const char *name)
{
    for (; f; f = f->up)
        for (int i = f->n - 1; i >= 0; i--)
            if (strcmp(f->names[i], name) == 0)
                return &f->vals[i];
    return NULL;
}

static bool assign(run *R, frame *f, const char *name, val v)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0) {
            f->vals[i] = v;
            return true;
        }
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 8;
        const char **nn = ct_alloc(&R->a, (size_t)cap * sizeof *nn);
        val *nv = ct_alloc(&R->a, (size_t)cap * sizeof *nv);
        if (!nn || !nv)
            return false;
        if (f->n) {
            memcpy(nn, f->names, (size_t)f->n * sizeof *nn);
            memcpy(nv, f->vals, (size_t)f->n * sizeof *nv);
        }
        f->names = nn, f->vals = nv, f->cap = cap;
    }
    f->names[f->n] = name, f->vals[f->n++] = v;
    return true;
}

/* ----------------------------------------------------------- strings */

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* UTF-8 code point boundaries: the byte offset of code point k of s. */
static size_t cp_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static size_t cp_offset(const char *s, size_t n, size_t k)
{
    size_t i = 0;
    for (; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && k-- == 0)
            return i;
    return n;
}

/* Python's strip family: chars NULL strips whitespace. */
static val strip(val s, const char *chars, size_t cn, bool left, bool right)
{
    size_t a = 0, b = s.n;
#define STRIPPED(c) (chars ? memchr(chars, (c), cn) != NULL : is_space(c))
    while (left && a < b && STRIPPED(s.s[a]))
        a++;
    while (right && b > a && STRIPPED(s.s[b - 1]))
        b--;
#undef STRIPPED
    return mk_str(s.s + a, b - a);
}

static val case_map(run *R, val s, bool upper)
{
    char *p = ct_alloc(&R->a, s.n + 1);
    if (!p)
        return oom(R);
    for (size_t i = 0; i < s.n; i++) {
        char c = s.s[i];
        p[i] = upper ? (c >= 'a' && c <= 'z' ? (char)(c - 32) : c) : (c >= 'A' && c <= 'Z' ? (char)(c + 32) : c);
    }
    return mk_str(p, s.n);
}

/* --------------------------------------------------------------- eval */

static val eval(run *R, frame *f, const ct_expr *e);

static bool equal(val a, val b)
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
            if (!equal(a.q->v[i], b.q->v[i]))
                return false;
        return true;
    case V_DICT: return a.q == b.q;
    default: return a.i == b.i;
    }
}

static val undefined_use(run *R, val v, size_t pos, const char *what)
{
    if (v.s)
        return err(R, TM_EINVAL, pos, "'%s' is undefined (%s)", v.s, what);
    return err(R, TM_EINVAL, pos, "undefined value used in %s%s", what, NULL);
}

static val binop(run *R, int op, val a, val b, size_t pos)
{
    static const char *const opname[] = {"==", "!=", "<", ">", "<=", ">=", "in", "not in",
                                         "+", "-", "*", "/", "//", "%", "~"};
    if (op == OP_EQ || op == OP_NE)
        return mk_bool(equal(a, b) == (op == OP_EQ));
    if (op == OP_CONCAT) {
        val x = text_of(R, a, pos), y = text_of(R, b, pos);
        if (R->failed)
            return x;
        char *p = ct_alloc(&R->a, x.n + y.n + 1);
        if (!p)
            return oom(R);
        memcpy(p, x.s, x.n), memcpy(p + x.n, y.s, y.n);
        return mk_str(p, x.n + y.n);
    }
    if (a.t == V_UNDEF)
        return undefined_use(R, a, pos, opname[op]);
    if (b.t == V_UNDEF && op != OP_IN && op != OP_NOTIN)
        return undefined_use(R, b, pos, opname[op]);
    if (op == OP_IN || op == OP_NOTIN) {
        bool found = false;
        if (b.t == V_STR && a.t == V_STR) {
            for (size_t i = 0; !found && i + a.n <= b.n; i++)
                found = memcmp(b.s + i, a.s, a.n) == 0;
        } else if (b.t == V_LIST) {
            for (int i = 0; !found && i < b.q->n; i++)
                found = equal(a, b.q->v[i]);
        } else if (b.t == V_DICT) {
            found = a.t == V_STR && dict_get(b.q, a.s, a.n) != NULL;
        } else if (b.t == V_UNDEF) {
            return undefined_use(R, b, pos, "\"in\"");
        } else {
            return err(R, TM_EINVAL, pos, "\"in\" needs a str, list or dict on the right, not %s%s", tname(b.t), NULL);
        }
        return mk_bool(found == (op == OP_IN));
    }
    bool ints = (a.t == V_INT || a.t == V_BOOL) && (b.t == V_INT || b.t == V_BOOL);
    if (op >= OP_LT && op <= OP_GE) {
        int c;
        if (ints) {
            c = a.i < b.i ? -1 : a.i > b.i;
        } else if (a.t == V_STR && b.t == V_STR) {
            size_t m = a.n < b.n ? a.n : b.n;
            c = memcmp(a.s, b.s, m);
            c = c ? c : a.n < b.n ? -1 : a.n > b.n;
        } else {
            return err(R, TM_EINVAL, pos, "cannot compare %s with %s", tname(a.t), tname(b.t));
        }
        return mk_bool(op == OP_LT ? c < 0 : op == OP_GT ? c > 0 : op == OP_LE ? c <= 0 : c >= 0);
    }
    if (op == OP_ADD && a.t == V_STR && b.t == V_STR)
        return binop(R, OP_CONCAT, a, b, pos);
    if (op == OP_ADD && a.t == V_LIST && b.t == V_LIST) {
        ct_seq *q = seq_new(R, false);
        if (!q)
            return oom(R);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < (k ? b : a).q->n; i++)
                if (!seq_push(R, q, NULL, 0, (k ? b : a).q->v[i]))
                    return oom(R);
        return (val){V_LIST, 0, NULL, 0, q};
    }
    if (!ints) {
        if (op == OP_DIV)
            return err(R, TM_EUNSUPPORTED, pos, "\"/\" (float division) is not supported%s%s", NULL, NULL);
        return err(R, TM_EINVAL, pos, "unsupported operand types for the operator: %s and %s", tname(a.t), tname(b.t));
    }
    int64_t x = a.i, y = b.i;
    switch (op) {
    case OP_ADD: return mk_int(x + y);
    case OP_SUB: return mk_int(x - y);
    case OP_MUL: return mk_int(x * y);
    case OP_DIV: return err(R, TM_EUNSUPPORTED, pos, "\"/\" (float division) is not supported%s%s", NULL, NULL);
    default:
        if (y == 0)
            return err(R, TM_EINVAL, pos, "integer division or modulo by zero%s%s", NULL, NULL);
        {
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0)))
                q--, r += y; /* Python floors */
            return mk_int(op == OP_MOD ? r : q);
        }
    }
}

static val index_of(run *R, val a, val k, size_t pos)
{
    if (a.t == V_UNDEF)
        return undefined_use(R, a, pos, "a subscript");
    if (a.t == V_DICT)
        return k.t == V_STR && dict_get(a.q, k.s, k.n) ? *dict_get(a.q, k.s, k.n) : mk_undef(NULL);
    if ((a.t == V_LIST || a.t == V_STR) && (k.t == V_INT || k.t == V_BOOL)) {
        int64_t n = a.t == V_LIST ? a.q->n : (int64_t)cp_count(a.s, a.n), i = k.i < 0 ? k.i + n : k.i;
        if (i < 0 || i >= n)
            return mk_undef(NULL);
        if (a.t == V_LIST)
            return a.q->v[i];
        size_t o = cp_offset(a.s, a.n, (size_t)i), e = cp_offset(a.s, a.n, (size_t)i + 1);
        return mk_str(a.s + o, e - o);
    }
    return mk_undef(NULL);
}

static val slice_of(run *R, val a, const val *lo, const val *hi, size_t pos)
{
    if (a.t != V_LIST && a.t != V_STR)
        return err(R, TM_EINVAL, pos, "cannot slice a %s%s", tname(a.t), NULL);
    int64_t n = a.t == V_LIST ? a.q->n : (int64_t)cp_count(a.s, a.n), b[2] = {0, n};
    const val *ends[2] = {lo, hi};
    for (int k = 0; k < 2; k++) {
        if (!ends[k] || ends[k]->t == V_NONE)
            continue;
        if (ends[k]->t != V_INT)
            return err(R, TM_EINVAL, pos, "slice indices must be integers, not %s%s", tname(ends[k]->t), NULL);
        int64_t x = ends[k]->i < 0 ? ends[k]->i + n : ends[k]->i;
        b[k] = x < 0 ? 0 : x > n ? n : x;
    }
    if (b[1] < b[0])
        b[1] = b[0];
    if (a.t == V_STR) {
        size_t o = cp_offset(a.s, a.n, (size_t)b[0]), e = cp_offset(a.s, a.n, (size_t)b[1]);
        return mk_str(a.s + o, e - o);
    }
    ct_seq *q = seq_new(R, false);
    if (!q)
        return oom(R);
    for (int64_t i = b[0]; i < b[1]; i++)
        if (!seq_push(R, q, NULL, 0, a.q->v[i]))
            return oom(R);
    return (val){V_LIST, 0, NULL, 0, q};
}

/* Positional and keyword arguments evaluated. */
typedef struct args { int n; val v[32]; const char *kw[32]; } args;

static bool eval_args(run *R, frame *f, const ct_expr *e, args *A)
{
    A->n = e->nargs;
    for (int i = 0; i < e->nargs; i++) {
        A->v[i] = eval(R, f, e->args[i]);
        A->kw[i] = e->kw ? e->kw[i] : NULL;
        if (R->failed)
            return false;
    }
    return true;
}

static bool want_args(run *R, const args *A, int lo, int hi, const char *what, size_t pos)
{
    for (int i = 0; i < A->n; i++)
        if (A->kw[i]) {
            err(R, TM_EUNSUPPORTED, pos, "keyword argument %s of %s is not supported", A->kw[i], what);
            return false;
        }
    if (A->n < lo || A->n > hi) {
        err(R, TM_EINVAL, pos, "wrong number of arguments to %s%s", what, NULL);
        return false;
    }
    return true;
}

static bool to_json(run *R, sbuf *b, val v, size_t pos, int depth)
{
    char num[32];
    if (depth > 64) {
        err(R, TM_EUNSUPPORTED, pos, "tojson: nested too deep%s%s", NULL, NULL);
        return false;
    }
    switch (v.t) {
    case V_NONE: sb_add(R, b, "null", 4); return true;
    case V_BOOL: sb_add(R, b, v.i ? "true" : "false", v.i ? 4 : 5); return true;
    case V_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.i);
        sb_add(R, b, num, strlen(num));
        return true;
    case V_STR:
        /* json.dumps(ensure_ascii=False), as Hugging Face's tojson */
        sb_add(R, b, "\"", 1);
        for (size_t i = 0; i < v.n; i++) {
            unsigned char c = (unsigned char)v.s[i];
            const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                              : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (esc) {
                sb_add(R, b, esc, 2);
            } else if (c < 0x20 || c == 0x7f) {
                snprintf(num, sizeof num, "\\u%04x", c);
                sb_add(R, b, num, 6);
            } else {
                sb_add(R, b, v.s + i, 1);
            }
        }
        sb_add(R, b, "\"", 1);
        return true;
    case V_LIST: case V_DICT:
        sb_add(R, b, v.t == V_LIST ? "[" : "{", 1);
        for (int i = 0; i < v.q->n; i++) {
            if (i)
                sb_add(R, b, ", ", 2);
            if (v.t == V_DICT) {
                if (!to_json(R, b, mk_str(v.q->k[i], v.q->kn[i]), pos, depth + 1))
                    return false;
                sb_add(R, b, ": ", 2);
            }
            if (!to_json(R, b, v.q->v[i], pos, depth + 1))
                return false;
        }
        sb_add(R, b, v.t == V_LIST ? "]" : "}", 1);
        return true;
    default:
        err(R, TM_EINVAL, pos, "tojson: a %s is not JSON%s", tname(v.t), NULL);
        return false;
    }
}

static val filter(run *R, frame *f, const ct_expr *e)
{
    val v = eval(R, f, e->a);
    args A;
    if (R->failed || !eval_args(R, f, e, &A))
        return mk_undef(NULL);
    const char *name = e->s;
    if (strcmp(name, "default") == 0 || strcmp(name, "d") == 0) {
        if (!want_args(R, &A, 0, 2, "default", e->pos))
            return v;
        bool boolean = A.n > 1 && truthy(A.v[1]);
        if (v.t == V_UNDEF || (boolean && !truthy(v)))
            return A.n ? A.v[0] : mk_str("", 0);
        return v;
    }
    if (strcmp(name, "length") == 0 || strcmp(name, "count") == 0) {
        if (!want_args(R, &A, 0, 0, name, e->pos))
            return v;
        if (v.t == V_LIST || v.t == V_DICT)
            return mk_int(v.q->n);
        if (v.t == V_STR)
            return mk_int((int64_t)cp_count(v.s, v.n));
        if (v.t == V_UNDEF)
            return mk_int(0);
        return err(R, TM_EINVAL, e->pos, "length of a %s%s", tname(v.t), NULL);
    }
    if (strcmp(name, "tojson") == 0) {
        sbuf b = {0};
        if (!want_args(R, &A, 0, 0, "tojson (indent and other options)", e->pos) || !to_json(R, &b, v, e->pos, 0))
            return mk_undef(NULL);
        return b.bad ? oom(R) : mk_str(b.p, b.n);
    }
    if (strcmp(name, "string") == 0)
        return want_args(R, &A, 0, 0, name, e->pos) ? text_of(R, v, e->pos) : v;
    if (strcmp(name, "first") == 0 || strcmp(name, "last") == 0) {
        if (!want_args(R, &A, 0, 0, name, e->pos))
            return v;
        if (v.t == V_LIST)
            return v.q->n ? v.q->v[name[0] == 'f' ? 0 : v.q->n - 1] : mk_undef(NULL);
        if (v.t == V_STR)
            return index_of(R, v, mk_int(name[0] == 'f' ? 0 : -1), e->pos);
        return err(R, TM_EINVAL, e->pos, "%s of a %s", name, tname(v.t));
    }
    if (strcmp(name, "join") == 0) {
        if (!want_args(R, &A, 0, 1, "join", e->pos))
            return v;
        if (v.t != V_LIST)
            return err(R, TM_EINVAL, e->pos, "join needs a list, not %s%s", tname(v.t), NULL);
        val sep = A.n ? text_of(R, A.v[0], e->pos) : mk_str("", 0);
        sbuf b = {0};
        for (int i = 0; i < v.q->n && !R->failed; i++) {
            if (i)
                sb_add(R, &b, sep.s, sep.n);
            to_text(R, &b, v.q->v[i], e->pos);
        }
        return R->failed ? v : b.bad ? oom(R) : mk_str(b.p ? b.p : "", b.n);
    }
    /* the rest act on strings */
    static const char *const sf[] = {"trim", "upper", "lower", NULL};
    for (int k = 0; sf[k]; k++)
        if (strcmp(name, sf[k]) == 0) {
            if (!want_args(R, &A, 0, 0, name, e->pos))
                return v;
            if (v.t == V_UNDEF)
                return undefined_use(R, v, e->pos, name);
            val s = text_of(R, v, e->pos);
            if (R->failed)
                return s;
            return k == 0 ? strip(s, NULL, 0, true, true) : case_map(R, s, k == 1);
        }
    return err(R, TM_EUNSUPPORTED, e->pos, "the filter \"%s\" is not supported%s", name, NULL);
}

static val test(run *R, frame *f, const ct_expr *e)
{
    val v = eval(R, f, e->a);
    args A;
    if (R->failed || !eval_args(R, f, e, &A))
        return mk_undef(NULL);
    const char *name = e->s;
    bool r;
    if (strcmp(name, "defined") == 0) r = v.t != V_UNDEF;
    else if (strcmp(name, "undefined") == 0) r = v.t == V_UNDEF;
    else if (strcmp(name, "none") == 0) r = v.t == V_NONE;
    else if (strcmp(name, "string") == 0) r = v.t == V_STR;
    else if (strcmp(name, "number") == 0 || strcmp(name, "integer") == 0) r = v.t == V_INT;
    else if (strcmp(name, "boolean") == 0) r = v.t == V_BOOL;
    else if (strcmp(name, "true") == 0) r = v.t == V_BOOL && v.i;
    else if (strcmp(name, "false") == 0) r = v.t == V_BOOL && !v.i;
    else if (strcmp(name, "mapping") == 0) r = v.t == V_DICT;
    else if (strcmp(name, "sequence") == 0) r = v.t == V_LIST || v.t == V_STR || v.t == V_DICT;
    else if (strcmp(name, "iterable") == 0) r = v.t == V_LIST || v.t == V_STR || v.t == V_DICT;
    else if (strcmp(name, "callable") == 0) r = v.t == V_FUNC;
    else if (strcmp(name, "odd") == 0 || strcmp(name, "even") == 0) {
        if (v.t != V_INT)
            return err(R, TM_EINVAL, e->pos, "\"is %s\" needs an int%s", name, NULL);
        r = ((v.i % 2 != 0) == (name[0] == 'o'));
    } else if (strcmp(name, "eq") == 0 || strcmp(name, "equalto") == 0 || strcmp(name, "sameas") == 0) {
        if (!want_args(R, &A, 1, 1, name, e->pos))
            return v;
        r = equal(v, A.v[0]);
    } else {
        return err(R, TM_EUNSUPPORTED, e->pos, "the test \"%s\" is not supported%s", name, NULL);
    }
    if (strcmp(name, "eq") && strcmp(name, "equalto") && strcmp(name, "sameas") && !want_args(R, &A, 0, 0, name, e->pos))
        return v;
    return mk_bool(r != (e->op != 0));
}

static val method(run *R, val obj, const char *name, const args *A, size_t pos)
{
    if (obj.t == V_UNDEF)
        return undefined_use(R, obj, pos, name);
    if (obj.t == V_STR) {
        if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
            if (!want_args(R, A, 0, 1, name, pos))
                return obj;
            if (A->n && A->v[0].t != V_STR && A->v[0].t != V_NONE)
                return err(R, TM_EINVAL, pos, "%s needs a str argument%s", name, NULL);
            bool chars = A->n && A->v[0].t == V_STR;
            return strip(obj, chars ? A->v[0].s : NULL, chars ? A->v[0].n : 0, name[0] != 'r', name[0] != 'l');
        }
        if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
            if (!want_args(R, A, 1, 1, name, pos))
                return obj;
            if (A->v[0].t != V_STR)
                return err(R, TM_EUNSUPPORTED, pos, "%s needs one str argument%s", name, NULL);
            val p = A->v[0];
            bool r = p.n <= obj.n && memcmp(name[0] == 's' ? obj.s : obj.s + obj.n - p.n, p.s, p.n) == 0;
            return mk_bool(r);
        }
        if (!strcmp(name, "upper") || !strcmp(name, "lower"))
            return want_args(R, A, 0, 0, name, pos) ? case_map(R, obj, name[0] == 'u') : obj;
        if (!strcmp(name, "replace")) {
            if (!want_args(R, A, 2, 2, name, pos))
                return obj;
            val a = A->v[0], b = A->v[1];
            if (a.t != V_STR || b.t != V_STR || a.n == 0)
                return err(R, TM_EUNSUPPORTED, pos, "replace needs two str arguments, the first not empty%s%s", NULL, NULL);
            sbuf o = {0};
            for (size_t i = 0; i < obj.n;) {
                if (i + a.n <= obj.n && memcmp(obj.s + i, a.s, a.n) == 0) {
                    sb_add(R, &o, b.s, b.n);
                    i += a.n;
                } else {
                    sb_add(R, &o, obj.s + i++, 1);
                }
            }
            return o.bad ? oom(R) : mk_str(o.p ? o.p : "", o.n);
        }
        if (!strcmp(name, "split")) {
            if (!want_args(R, A, 1, 1, "split (with no separator)", pos))
                return obj;
            val a = A->v[0];
            if (a.t != V_STR || a.n == 0)
                return err(R, TM_EUNSUPPORTED, pos, "split needs a non-empty str separator%s%s", NULL, NULL);
            ct_seq *q = seq_new(R, false);
            if (!q)
                return oom(R);
            size_t s0 = 0;
            for (size_t i = 0; i + a.n <= obj.n;) {
                if (memcmp(obj.s + i, a.s, a.n) == 0) {
                    if (!seq_push(R, q, NULL, 0, mk_str(obj.s + s0, i - s0)))
                        return oom(R);
                    i += a.n, s0 = i;
                } else {
                    i++;
                }
            }
            if (!seq_push(R, q, NULL, 0, mk_str(obj.s + s0, obj.n - s0)))
                return oom(R);
            return (val){V_LIST, 0, NULL, 0, q};
        }
    } else if (obj.t == V_DICT) {
        if (!strcmp(name, "get")) {
            if (!want_args(R, A, 1, 2, name, pos))
                return obj;
            val *p = A->v[0].t == V_STR ? dict_get(obj.q, A->v[0].s, A->v[0].n) : NULL;
            return p ? *p : A->n > 1 ? A->v[1] : (val){V_NONE, 0, NULL, 0, NULL};
        }
        if (!strcmp(name, "keys") || !strcmp(name, "values")) {
            if (!want_args(R, A, 0, 0, name, pos))
                return obj;
            ct_seq *q = seq_new(R, false);
            if (!q)
                return oom(R);
            for (int i = 0; i < obj.q->n; i++)
                if (!seq_push(R, q, NULL, 0, name[0] == 'k' ? mk_str(obj.q->k[i], obj.q->kn[i]) : obj.q->v[i]))
                    return oom(R);
            return (val){V_LIST, 0, NULL, 0, q};
        }
    }
    return err(R, TM_EUNSUPPORTED, pos, "the method \"%s\" of a %s is not supported", name, tname(obj.t));
}

static val call(run *R, frame *f, const ct_expr *e)
{
    args A;
    if (e->a->kind == E_ATTR) {
        val obj = eval(R, f, e->a->a);
        if (R->failed || !eval_args(R, f, e, &A))
            return obj;
        if (obj.t == V_DICT) {
            val *p = dict_get(obj.q, e->a->s, e->a->n);
            if (p && p->t == V_FUNC)
                goto builtin_call;
        }
        return method(R, obj, e->a->s, &A, e->pos);
    }
    {
        val fnv = eval(R, f, e->a);
        if (R->failed || !eval_args(R, f, e, &A))
            return fnv;
        if (fnv.t != V_FUNC) {
            if (fnv.t == V_UNDEF && fnv.s)
                return err(R, TM_EUNSUPPORTED, e->pos, "the function \"%s\" is not supported%s", fnv.s, NULL);
            return err(R, TM_EINVAL, e->pos, "a %s is not callable%s", tname(fnv.t), NULL);
        }
        if (fnv.i == F_RAISE) {
            val m = A.n ? text_of(R, A.v[0], e->pos) : mk_str("", 0);
            if (R->failed)
                return m;
            char msg[200];
            snprintf(msg, sizeof msg, "%.*s", (int)(m.n < 190 ? m.n : 190), m.s);
            return err(R, TM_EINVAL, e->pos, "the template raised an exception: %s%s", msg, NULL);
        }
        if (fnv.i == F_RANGE) {
            if (!want_args(R, &A, 1, 2, "range", e->pos))
                return fnv;
            for (int i = 0; i < A.n; i++)
                if (A.v[i].t != V_INT)
                    return err(R, TM_EINVAL, e->pos, "range needs ints%s%s", NULL, NULL);
            int64_t lo = A.n == 2 ? A.v[0].i : 0, hi = A.v[A.n - 1].i;
            if (hi - lo > 1000000)
                return err(R, TM_EUNSUPPORTED, e->pos, "range longer than 1000000%s%s", NULL, NULL);
            ct_seq *q = seq_new(R, false);
            if (!q)
                return oom(R);
            for (int64_t i = lo; i < hi; i++)
                if (!seq_push(R, q, NULL, 0, mk_int(i)))
                    return oom(R);
            return (val){V_LIST, 0, NULL, 0, q};
        }
        /* namespace(name=value, ...): a mutable dict for {% set ns.x = ... %} */
        ct_seq *q = seq_new(R, true);
        if (!q)
            return oom(R);
        for (int i = 0; i < A.n; i++) {
            if (!A.kw[i])
                return err(R, TM_EUNSUPPORTED, e->pos, "namespace() with positional arguments%s%s", NULL, NULL);
            if (!dict_set(R, q, A.kw[i], strlen(A.kw[i]), A.v[i]))
                return oom(R);
        }
        return (val){V_DICT, 0, NULL, 0, q};
    }
builtin_call:
    return err(R, TM_EUNSUPPORTED, e->pos, "calling a function stored in a dict%s%s", NULL, NULL);
}

static val eval(run *R, frame *f, const ct_expr *e)
{
    if (R->failed)
        return mk_undef(NULL);
    switch (e->kind) {
    case E_STR: return mk_str(e->s, e->n);
    case E_INT: return mk_int(e->i);
    case E_BOOL: return mk_bool(e->i != 0);
    case E_NONE: return (val){V_NONE, 0, NULL, 0, NULL};
    case E_NAME: {
        val *p = lookup(f, e->s);
        return p ? *p : mk_undef(e->s);
    }
    case E_LIST: {
        ct_seq *q = seq_new(R, false);
        if (!q)
            return oom(R);
        for (int i = 0; i < e->nargs; i++) {
            val v = eval(R, f, e->args[i]);
            if (R->failed || !seq_push(R, q, NULL, 0, v))
                return R->failed ? v : oom(R);
        }
        return (val){V_LIST, 0, NULL, 0, q};
    }
    case E_ATTR: {
        val a = eval(R, f, e->a);
        if (R->failed)
            return a;
        if (a.t == V_UNDEF)
            return undefined_use(R, a, e->pos, "an attribute lookup");
        if (a.t == V_DICT) {
            val *p = dict_get(a.q, e->s, e->n);
            return p ? *p : mk_undef(NULL);
        }
        return mk_undef(NULL);
    }
    case E_INDEX: {
        val a = eval(R, f, e->a), k = eval(R, f, e->b);
        return R->failed ? a : index_of(R, a, k, e->pos);
    }
    case E_SLICE: {
        val a = eval(R, f, e->a), lo, hi;
        if (e->b)
            lo = eval(R, f, e->b);
        if (e->c)
            hi = eval(R, f, e->c);
        return R->failed ? a : slice_of(R, a, e->b ? &lo : NULL, e->c ? &hi : NULL, e->pos);
    }
    case E_CALL: return call(R, f, e);
    case E_FILTER: return filter(R, f, e);
    case E_TEST: return test(R, f, e);
    case E_NOT: {
        val a = eval(R, f, e->a);
        return R->failed ? a : mk_bool(!truthy(a));
    }
    case E_NEG: {
        val a = eval(R, f, e->a);
        if (R->failed)
            return a;
        if (a.t != V_INT && a.t != V_BOOL)
            return err(R, TM_EINVAL, e->pos, "unary minus of a %s%s", tname(a.t), NULL);
        return mk_int(-a.i);
    }
    case E_BIN: {
        val a = eval(R, f, e->a);
        if (R->failed)
            return a;
        val b = eval(R, f, e->b);
        return R->failed ? b : binop(R, e->op, a, b, e->pos);
    }
    case E_AND: case E_OR: {
        /* Python's and/or return an operand */
        val a = eval(R, f, e->a);
        if (R->failed || truthy(a) == (e->kind == E_OR))
            return a;
        return eval(R, f, e->b);
    }
    case E_COND: {
        val c = eval(R, f, e->b);
        if (R->failed)
            return c;
        if (truthy(c))
            return eval(R, f, e->a);
        return e->c ? eval(R, f, e->c) : mk_undef(NULL);
    }
    }
    return mk_undef(NULL);
}

/* ----------------------------------------------------------- statements */

static bool exec(run *R, frame *f, const ct_stmt *s, int depth);

static bool exec_for(run *R, frame *f, const ct_stmt *s, int depth)
{
    val it = eval(R, f, s->e);
    if (R->failed)
        return false;
    ct_seq items = {0};
    if (it.t == V_LIST || it.t == V_DICT) {
        for (int i = 0; i < it.q->n; i++)
            if (!seq_push(R, &items, NULL, 0, it.t == V_LIST ? it.q->v[i] : mk_str(it.q->k[i], it.q->kn[i])))
                return oom(R), false;
    } else if (it.t == V_STR) {
        for (size_t i = 0; i < it.n;) {
            size_t j = i + 1;
            while (j < it.n && ((unsigned char)it.s[j] & 0xC0) == 0x80)
                j++;
            if (!seq_push(R, &items, NULL, 0, mk_str(it.s + i, j - i)))
                return oom(R), false;
            i = j;
        }
    } else if (it.t != V_UNDEF) {
        err(R, TM_EINVAL, s->pos, "cannot iterate over a %s%s", tname(it.t), NULL);
        return false;
    }
    frame lf = {f, 0, 0, NULL, NULL};
    if (s->filter) {
        /* the filter sees the loop variable but not loop */
        ct_seq kept = {0};
        for (int i = 0; i < items.n; i++) {
            if (!assign(R, &lf, s->var, items.v[i]))
                return oom(R), false;
            val c = eval(R, &lf, s->filter);
            if (R->failed)
                return false;
            if (truthy(c) && !seq_push(R, &kept, NULL, 0, items.v[i]))
                return oom(R), false;
        }
        items = kept;
    }
    if (items.n == 0)
        return s->orelse ? exec(R, f, s->orelse, depth + 1) : true;
    for (int i = 0; i < items.n; i++) {
        ct_seq *loop = seq_new(R, true);
        if (!loop)
            return oom(R), false;
        int64_t n = items.n;
        static const char *const k[] = {"index", "index0", "first", "last", "length", "revindex", "revindex0",
                                        "previtem", "nextitem"};
        val v[9] = {mk_int(i + 1), mk_int(i), mk_bool(i == 0), mk_bool(i == n - 1), mk_int(n), mk_int(n - i),
                    mk_int(n - i - 1), i > 0 ? items.v[i - 1] : mk_undef(NULL),
                    i + 1 < n ? items.v[i + 1] : mk_undef(NULL)};
        for (int j = 0; j < 9; j++)
            if (!seq_push(R, loop, k[j], strlen(k[j]), v[j]))
                return oom(R), false;
        if (!assign(R, &lf, s->var, items.v[i]) || !assign(R, &lf, "loop", (val){V_DICT, 0, NULL, 0, loop}))
            return oom(R), false;
        if (!exec(R, &lf, s->body, depth + 1))
            return false;
        int ctl = R->ctl;
        R->ctl = 0;
        if (ctl == 1)
            break;
    }
    return true;
}

static bool exec(run *R, frame *f, const ct_stmt *s, int depth)
{
    if (depth > 200) {
        err(R, TM_EUNSUPPORTED, s ? s->pos : 0, "statements nested too deep%s%s", NULL, NULL);
        return false;
    }
    for (; s && !R->failed && !R->ctl; s = s->next) {
        switch (s->kind) {
        case S_TEXT:
            if (!emit(R, s->text, s->len))
                return false;
            break;
        case S_OUT: {
            val v = eval(R, f, s->e);
            sbuf b = {0};
            if (R->failed || !to_text(R, &b, v, s->e->pos))
                return false;
            if (b.bad || !emit(R, b.p ? b.p : "", b.n))
                return oom(R), false;
            break;
        }
        case S_IF: {
            const ct_stmt *br = s;
            while (br) {
                val c = eval(R, f, br->e);
                if (R->failed)
                    return false;
                if (truthy(c)) {
                    if (!exec(R, f, br->body, depth + 1))
                        return false;
                    break;
                }
                br = br->orelse;
                if (br && !(br->kind == S_IF && br->var)) { /* the else body */
                    if (!exec(R, f, br, depth + 1))
                        return false;
                    break;
                }
            }
            break;
        }
        case S_FOR:
            if (!exec_for(R, f, s, depth))
                return false;
            break;
        case S_SET: {
            val v = eval(R, f, s->e);
            if (R->failed)
                return false;
            if (s->attr) {
                val *ns = lookup(f, s->var);
                if (!ns || ns->t != V_DICT) {
                    err(R, TM_EINVAL, s->pos, "\"set %s.%s\": not a namespace", s->var, s->attr);
                    return false;
                }
                if (!dict_set(R, ns->q, s->attr, strlen(s->attr), v))
                    return oom(R), false;
            } else if (!assign(R, f, s->var, v)) {
                return oom(R), false;
            }
            break;
        }
        case S_BREAK:
        case S_CONTINUE:
            R->ctl = s->kind == S_BREAK ? 1 : 2;
            return true;
        }
    }
    return !R->failed;
}

char *ct_render(const tm_chat_template *t, const ct_run_in *in, size_t *len)
{
    run R = {.t = t};
    frame root = {0};
    ct_seq *msgs = seq_new(&R, false);
    bool ok = msgs != NULL;
    for (int i = 0; ok && i < in->n; i++) {
        ct_seq *m = seq_new(&R, true);
        ok = m && seq_push(&R, m, "role", 4, mk_str(in->msgs[i].role, strlen(in->msgs[i].role))) &&
             seq_push(&R, m, "content", 7, mk_str(in->msgs[i].content, strlen(in->msgs[i].content))) &&
             seq_push(&R, msgs, NULL, 0, (val){V_DICT, 0, NULL, 0, m});
    }
    ok = ok && assign(&R, &root, "messages", (val){V_LIST, 0, NULL, 0, msgs}) &&
         assign(&R, &root, "add_generation_prompt", mk_bool(in->add_generation_prompt)) &&
         assign(&R, &root, "raise_exception", (val){V_FUNC, F_RAISE, NULL, 0, NULL}) &&
         assign(&R, &root, "range", (val){V_FUNC, F_RANGE, NULL, 0, NULL}) &&
         assign(&R, &root, "namespace", (val){V_FUNC, F_NAMESPACE, NULL, 0, NULL}) &&
         (!in->bos || assign(&R, &root, "bos_token", mk_str(in->bos, strlen(in->bos)))) &&
         (!in->eos || assign(&R, &root, "eos_token", mk_str(in->eos, strlen(in->eos))));
    if (!ok)
        oom(&R);
    else
        exec(&R, &root, t->root, 0);
    /* a template's top-level break/continue is ignored, as Jinja2 refuses
     * it at compile time only inside loops */
    if (!R.failed && !emit(&R, "", 0))
        R.failed = true;
    ct_arena_free(&R.a);
    if (R.failed) {
        free(R.out);
        return NULL;
    }
    R.out[R.n] = 0;
    *len = R.n;
    return R.out;
}
