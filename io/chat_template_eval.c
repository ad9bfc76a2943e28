/*
 * chat_template_eval.c — running a parsed chat template: variables and
 * scopes, expressions (operators with Python's semantics, subscripts,
 * slices, calls of the template's globals), statements (if, for with
 * loop.*, set, break/continue) and tm_chat_template_apply.  The values
 * live in chat_template_value.c, filters / tests / methods in
 * chat_template_filters.c.  Jinja2's default Undefined is reproduced: it
 * prints as "", is false, iterates as empty, but adding to it or taking
 * its attribute is an error.  Anything outside the subset is
 * TM_EUNSUPPORTED naming it; raise_exception(msg) is TM_EINVAL with the
 * template's message.
 */
#include "chat_template_run.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* --------------------------------------------------------------- eval */

static val binop(run *R, int op, val a, val b, size_t pos)
{
    static const char *const opname[] = {"==", "!=", "<", ">", "<=", ">=", "in", "not in",
                                         "+", "-", "*", "/", "//", "%", "~"};
    if (op == OP_EQ || op == OP_NE)
        return mk_bool(ct_equal(a, b) == (op == OP_EQ));
    if (op == OP_CONCAT) {
        val x = ct_text_of(R, a, pos), y = ct_text_of(R, b, pos);
        if (R->failed)
            return x;
        char *p = ct_alloc(&R->a, x.n + y.n + 1);
        if (!p)
            return ct_oom(R);
        memcpy(p, x.s, x.n), memcpy(p + x.n, y.s, y.n);
        return mk_str(p, x.n + y.n);
    }
    if (a.t == V_UNDEF)
        return ct_undefined_use(R, a, pos, opname[op]);
    if (b.t == V_UNDEF && op != OP_IN && op != OP_NOTIN)
        return ct_undefined_use(R, b, pos, opname[op]);
    if (op == OP_IN || op == OP_NOTIN) {
        bool found = false;
        if (b.t == V_STR && a.t == V_STR) {
            for (size_t i = 0; !found && i + a.n <= b.n; i++)
                found = memcmp(b.s + i, a.s, a.n) == 0;
        } else if (b.t == V_LIST) {
            for (int i = 0; !found && i < b.q->n; i++)
                found = ct_equal(a, b.q->v[i]);
        } else if (b.t == V_DICT) {
            found = a.t == V_STR && ct_dict_get(b.q, a.s, a.n) != NULL;
        } else if (b.t == V_UNDEF) {
            return ct_undefined_use(R, b, pos, "\"in\"");
        } else {
            return ct_err(R, TM_EINVAL, pos, "\"in\" needs a str, list or dict on the right, not %s%s", ct_tname(b.t), NULL);
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
            return ct_err(R, TM_EINVAL, pos, "cannot compare %s with %s", ct_tname(a.t), ct_tname(b.t));
        }
        return mk_bool(op == OP_LT ? c < 0 : op == OP_GT ? c > 0 : op == OP_LE ? c <= 0 : c >= 0);
    }
    if (op == OP_ADD && a.t == V_STR && b.t == V_STR)
        return binop(R, OP_CONCAT, a, b, pos);
    if (op == OP_ADD && a.t == V_LIST && b.t == V_LIST) {
        ct_seq *q = ct_seq_new(R, false);
        if (!q)
            return ct_oom(R);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < (k ? b : a).q->n; i++)
                if (!ct_seq_push(R, q, NULL, 0, (k ? b : a).q->v[i]))
                    return ct_oom(R);
        return (val){V_LIST, 0, NULL, 0, q};
    }
    if (!ints) {
        if (op == OP_DIV)
            return ct_err(R, TM_EUNSUPPORTED, pos, "\"/\" (float division) is not supported%s%s", NULL, NULL);
        return ct_err(R, TM_EINVAL, pos, "unsupported operand types for the operator: %s and %s", ct_tname(a.t), ct_tname(b.t));
    }
    int64_t x = a.i, y = b.i;
    switch (op) {
    case OP_ADD: return mk_int(x + y);
    case OP_SUB: return mk_int(x - y);
    case OP_MUL: return mk_int(x * y);
    case OP_DIV: return ct_err(R, TM_EUNSUPPORTED, pos, "\"/\" (float division) is not supported%s%s", NULL, NULL);
    default:
        if (y == 0)
            return ct_err(R, TM_EINVAL, pos, "integer division or modulo by zero%s%s", NULL, NULL);
        {
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0)))
                q--, r += y; /* Python floors */
            return mk_int(op == OP_MOD ? r : q);
        }
    }
}

val ct_index_of(run *R, val a, val k, size_t pos)
{
    if (a.t == V_UNDEF)
        return ct_undefined_use(R, a, pos, "a subscript");
    if (a.t == V_DICT)
        return k.t == V_STR && ct_dict_get(a.q, k.s, k.n) ? *ct_dict_get(a.q, k.s, k.n) : mk_undef(NULL);
    if ((a.t == V_LIST || a.t == V_STR) && (k.t == V_INT || k.t == V_BOOL)) {
        int64_t n = a.t == V_LIST ? a.q->n : (int64_t)ct_cp_count(a.s, a.n), i = k.i < 0 ? k.i + n : k.i;
        if (i < 0 || i >= n)
            return mk_undef(NULL);
        if (a.t == V_LIST)
            return a.q->v[i];
        size_t o = ct_cp_offset(a.s, a.n, (size_t)i), e = ct_cp_offset(a.s, a.n, (size_t)i + 1);
        return mk_str(a.s + o, e - o);
    }
    return mk_undef(NULL);
}

static val slice_of(run *R, val a, const val *lo, const val *hi, size_t pos)
{
    if (a.t != V_LIST && a.t != V_STR)
        return ct_err(R, TM_EINVAL, pos, "cannot slice a %s%s", ct_tname(a.t), NULL);
    int64_t n = a.t == V_LIST ? a.q->n : (int64_t)ct_cp_count(a.s, a.n), b[2] = {0, n};
    const val *ends[2] = {lo, hi};
    for (int k = 0; k < 2; k++) {
        if (!ends[k] || ends[k]->t == V_NONE)
            continue;
        if (ends[k]->t != V_INT)
            return ct_err(R, TM_EINVAL, pos, "slice indices must be integers, not %s%s", ct_tname(ends[k]->t), NULL);
        int64_t x = ends[k]->i < 0 ? ends[k]->i + n : ends[k]->i;
        b[k] = x < 0 ? 0 : x > n ? n : x;
    }
    if (b[1] < b[0])
        b[1] = b[0];
    if (a.t == V_STR) {
        size_t o = ct_cp_offset(a.s, a.n, (size_t)b[0]), e = ct_cp_offset(a.s, a.n, (size_t)b[1]);
        return mk_str(a.s + o, e - o);
    }
    ct_seq *q = ct_seq_new(R, false);
    if (!q)
        return ct_oom(R);
    for (int64_t i = b[0]; i < b[1]; i++)
        if (!ct_seq_push(R, q, NULL, 0, a.q->v[i]))
            return ct_oom(R);
    return (val){V_LIST, 0, NULL, 0, q};
}

static val call(run *R, frame *f, const ct_expr *e)
{
    args A;
    if (e->a->kind == E_ATTR) {
        val obj = ct_eval(R, f, e->a->a);
        if (R->failed || !ct_eval_args(R, f, e, &A))
            return obj;
        if (obj.t == V_DICT) {
            val *p = ct_dict_get(obj.q, e->a->s, e->a->n);
            if (p && p->t == V_FUNC)
                goto builtin_call;
        }
        return ct_method(R, obj, e->a->s, &A, e->pos);
    }
    {
        val fnv = ct_eval(R, f, e->a);
        if (R->failed || !ct_eval_args(R, f, e, &A))
            return fnv;
        if (fnv.t != V_FUNC) {
            if (fnv.t == V_UNDEF && fnv.s)
                return ct_err(R, TM_EUNSUPPORTED, e->pos, "the function \"%s\" is not supported%s", fnv.s, NULL);
            return ct_err(R, TM_EINVAL, e->pos, "a %s is not callable%s", ct_tname(fnv.t), NULL);
        }
        if (fnv.i == F_RAISE) {
            val m = A.n ? ct_text_of(R, A.v[0], e->pos) : mk_str("", 0);
            if (R->failed)
                return m;
            char msg[200];
            snprintf(msg, sizeof msg, "%.*s", (int)(m.n < 190 ? m.n : 190), m.s);
            return ct_err(R, TM_EINVAL, e->pos, "the template raised an exception: %s%s", msg, NULL);
        }
        if (fnv.i == F_RANGE) {
            if (!ct_want_args(R, &A, 1, 2, "range", e->pos))
                return fnv;
            for (int i = 0; i < A.n; i++)
                if (A.v[i].t != V_INT)
                    return ct_err(R, TM_EINVAL, e->pos, "range needs ints%s%s", NULL, NULL);
            int64_t lo = A.n == 2 ? A.v[0].i : 0, hi = A.v[A.n - 1].i;
            if (hi - lo > 1000000)
                return ct_err(R, TM_EUNSUPPORTED, e->pos, "range longer than 1000000%s%s", NULL, NULL);
            ct_seq *q = ct_seq_new(R, false);
            if (!q)
                return ct_oom(R);
            for (int64_t i = lo; i < hi; i++)
                if (!ct_seq_push(R, q, NULL, 0, mk_int(i)))
                    return ct_oom(R);
            return (val){V_LIST, 0, NULL, 0, q};
        }
        /* namespace(name=value, ...): a mutable dict for {% set ns.x = ... %} */
        ct_seq *q = ct_seq_new(R, true);
        if (!q)
            return ct_oom(R);
        for (int i = 0; i < A.n; i++) {
            if (!A.kw[i])
                return ct_err(R, TM_EUNSUPPORTED, e->pos, "namespace() with positional arguments%s%s", NULL, NULL);
            if (!ct_dict_set(R, q, A.kw[i], strlen(A.kw[i]), A.v[i]))
                return ct_oom(R);
        }
        return (val){V_DICT, 0, NULL, 0, q};
    }
builtin_call:
    return ct_err(R, TM_EUNSUPPORTED, e->pos, "calling a function stored in a dict%s%s", NULL, NULL);
}

val ct_eval(run *R, frame *f, const ct_expr *e)
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
        ct_seq *q = ct_seq_new(R, false);
        if (!q)
            return ct_oom(R);
        for (int i = 0; i < e->nargs; i++) {
            val v = ct_eval(R, f, e->args[i]);
            if (R->failed || !ct_seq_push(R, q, NULL, 0, v))
                return R->failed ? v : ct_oom(R);
        }
        return (val){V_LIST, 0, NULL, 0, q};
    }
    case E_ATTR: {
        val a = ct_eval(R, f, e->a);
        if (R->failed)
            return a;
        if (a.t == V_UNDEF)
            return ct_undefined_use(R, a, e->pos, "an attribute lookup");
        if (a.t == V_DICT) {
            val *p = ct_dict_get(a.q, e->s, e->n);
            return p ? *p : mk_undef(NULL);
        }
        return mk_undef(NULL);
    }
    case E_INDEX: {
        val a = ct_eval(R, f, e->a), k = ct_eval(R, f, e->b);
        return R->failed ? a : ct_index_of(R, a, k, e->pos);
    }
    case E_SLICE: {
        val a = ct_eval(R, f, e->a), lo, hi;
        if (e->b)
            lo = ct_eval(R, f, e->b);
        if (e->c)
            hi = ct_eval(R, f, e->c);
        return R->failed ? a : slice_of(R, a, e->b ? &lo : NULL, e->c ? &hi : NULL, e->pos);
    }
    case E_CALL: return call(R, f, e);
    case E_FILTER: return ct_filter(R, f, e);
    case E_TEST: return ct_test(R, f, e);
    case E_NOT: {
        val a = ct_eval(R, f, e->a);
        return R->failed ? a : mk_bool(!ct_truthy(a));
    }
    case E_NEG: {
        val a = ct_eval(R, f, e->a);
        if (R->failed)
            return a;
        if (a.t != V_INT && a.t != V_BOOL)
            return ct_err(R, TM_EINVAL, e->pos, "unary minus of a %s%s", ct_tname(a.t), NULL);
        return mk_int(-a.i);
    }
    case E_BIN: {
        val a = ct_eval(R, f, e->a);
        if (R->failed)
            return a;
        val b = ct_eval(R, f, e->b);
        return R->failed ? b : binop(R, e->op, a, b, e->pos);
    }
    case E_AND: case E_OR: {
        /* Python's and/or return an operand */
        val a = ct_eval(R, f, e->a);
        if (R->failed || ct_truthy(a) == (e->kind == E_OR))
            return a;
        return ct_eval(R, f, e->b);
    }
    case E_COND: {
        val c = ct_eval(R, f, e->b);
        if (R->failed)
            return c;
        if (ct_truthy(c))
            return ct_eval(R, f, e->a);
        return e->c ? ct_eval(R, f, e->c) : mk_undef(NULL);
    }
    }
    return mk_undef(NULL);
}

/* ----------------------------------------------------------- statements */

static bool exec(run *R, frame *f, const ct_stmt *s, int depth);

static bool exec_for(run *R, frame *f, const ct_stmt *s, int depth)
{
    val it = ct_eval(R, f, s->e);
    if (R->failed)
        return false;
    ct_seq items = {0};
    if (it.t == V_LIST || it.t == V_DICT) {
        for (int i = 0; i < it.q->n; i++)
            if (!ct_seq_push(R, &items, NULL, 0, it.t == V_LIST ? it.q->v[i] : mk_str(it.q->k[i], it.q->kn[i])))
                return ct_oom(R), false;
    } else if (it.t == V_STR) {
        for (size_t i = 0; i < it.n;) {
            size_t j = i + 1;
            while (j < it.n && ((unsigned char)it.s[j] & 0xC0) == 0x80)
                j++;
            if (!ct_seq_push(R, &items, NULL, 0, mk_str(it.s + i, j - i)))
                return ct_oom(R), false;
            i = j;
        }
    } else if (it.t != V_UNDEF) {
        ct_err(R, TM_EINVAL, s->pos, "cannot iterate over a %s%s", ct_tname(it.t), NULL);
        return false;
    }
    frame lf = {f, 0, 0, NULL, NULL};
    if (s->filter) {
        /* the filter sees the loop variable but not loop */
        ct_seq kept = {0};
        for (int i = 0; i < items.n; i++) {
            if (!assign(R, &lf, s->var, items.v[i]))
                return ct_oom(R), false;
            val c = ct_eval(R, &lf, s->filter);
            if (R->failed)
                return false;
            if (ct_truthy(c) && !ct_seq_push(R, &kept, NULL, 0, items.v[i]))
                return ct_oom(R), false;
        }
        items = kept;
    }
    if (items.n == 0)
        return s->orelse ? exec(R, f, s->orelse, depth + 1) : true;
    for (int i = 0; i < items.n; i++) {
        ct_seq *loop = ct_seq_new(R, true);
        if (!loop)
            return ct_oom(R), false;
        int64_t n = items.n;
        static const char *const k[] = {"index", "index0", "first", "last", "length", "revindex", "revindex0",
                                        "previtem", "nextitem"};
        val v[9] = {mk_int(i + 1), mk_int(i), mk_bool(i == 0), mk_bool(i == n - 1), mk_int(n), mk_int(n - i),
                    mk_int(n - i - 1), i > 0 ? items.v[i - 1] : mk_undef(NULL),
                    i + 1 < n ? items.v[i + 1] : mk_undef(NULL)};
        for (int j = 0; j < 9; j++)
            if (!ct_seq_push(R, loop, k[j], strlen(k[j]), v[j]))
                return ct_oom(R), false;
        if (!assign(R, &lf, s->var, items.v[i]) || !assign(R, &lf, "loop", (val){V_DICT, 0, NULL, 0, loop}))
            return ct_oom(R), false;
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
        ct_err(R, TM_EUNSUPPORTED, s ? s->pos : 0, "statements nested too deep%s%s", NULL, NULL);
        return false;
    }
    for (; s && !R->failed && !R->ctl; s = s->next) {
        switch (s->kind) {
        case S_TEXT:
            if (!ct_emit(R, s->text, s->len))
                return false;
            break;
        case S_OUT: {
            val v = ct_eval(R, f, s->e);
            sbuf b = {0};
            if (R->failed || !ct_to_text(R, &b, v, s->e->pos))
                return false;
            if (b.bad || !ct_emit(R, b.p ? b.p : "", b.n))
                return ct_oom(R), false;
            break;
        }
        case S_IF: {
            const ct_stmt *br = s;
            while (br) {
                val c = ct_eval(R, f, br->e);
                if (R->failed)
                    return false;
                if (ct_truthy(c)) {
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
            val v = ct_eval(R, f, s->e);
            if (R->failed)
                return false;
            if (s->attr) {
                val *ns = lookup(f, s->var);
                if (!ns || ns->t != V_DICT) {
                    ct_err(R, TM_EINVAL, s->pos, "\"set %s.%s\": not a namespace", s->var, s->attr);
                    return false;
                }
                if (!ct_dict_set(R, ns->q, s->attr, strlen(s->attr), v))
                    return ct_oom(R), false;
            } else if (!assign(R, f, s->var, v)) {
                return ct_oom(R), false;
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
    ct_seq *msgs = ct_seq_new(&R, false);
    bool ok = msgs != NULL;
    for (int i = 0; ok && i < in->n; i++) {
        ct_seq *m = ct_seq_new(&R, true);
        ok = m && ct_seq_push(&R, m, "role", 4, mk_str(in->msgs[i].role, strlen(in->msgs[i].role))) &&
             ct_seq_push(&R, m, "content", 7, mk_str(in->msgs[i].content, strlen(in->msgs[i].content))) &&
             ct_seq_push(&R, msgs, NULL, 0, (val){V_DICT, 0, NULL, 0, m});
    }
    ok = ok && assign(&R, &root, "messages", (val){V_LIST, 0, NULL, 0, msgs}) &&
         assign(&R, &root, "add_generation_prompt", mk_bool(in->add_generation_prompt)) &&
         assign(&R, &root, "raise_exception", (val){V_FUNC, F_RAISE, NULL, 0, NULL}) &&
         assign(&R, &root, "range", (val){V_FUNC, F_RANGE, NULL, 0, NULL}) &&
         assign(&R, &root, "namespace", (val){V_FUNC, F_NAMESPACE, NULL, 0, NULL}) &&
         (!in->bos || assign(&R, &root, "bos_token", mk_str(in->bos, strlen(in->bos)))) &&
         (!in->eos || assign(&R, &root, "eos_token", mk_str(in->eos, strlen(in->eos))));
    if (!ok)
        ct_oom(&R);
    else
        exec(&R, &root, t->root, 0);
    /* a template's top-level break/continue is ignored, as Jinja2 refuses
     * it at compile time only inside loops */
    if (!R.failed && !ct_emit(&R, "", 0))
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
