/*
 * chat_template_filters.c — the filters (a | name), tests (a is name) and
 * methods (a.name()) chat templates use, with Jinja2's and Python's
 * semantics; anything else is TM_EUNSUPPORTED naming it.
 */
#include "chat_template_run.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ct_eval_args(run *R, frame *f, const ct_expr *e, args *A)
{
    A->n = e->nargs;
    for (int i = 0; i < e->nargs; i++) {
        A->v[i] = ct_eval(R, f, e->args[i]);
        A->kw[i] = e->kw ? e->kw[i] : NULL;
        if (R->failed)
            return false;
    }
    return true;
}

bool ct_want_args(run *R, const args *A, int lo, int hi, const char *what, size_t pos)
{
    for (int i = 0; i < A->n; i++)
        if (A->kw[i]) {
            ct_err(R, TM_EUNSUPPORTED, pos, "keyword argument %s of %s is not supported", A->kw[i], what);
            return false;
        }
    if (A->n < lo || A->n > hi) {
        ct_err(R, TM_EINVAL, pos, "wrong number of arguments to %s%s", what, NULL);
        return false;
    }
    return true;
}

val ct_filter(run *R, frame *f, const ct_expr *e)
{
    val v = ct_eval(R, f, e->a);
    args A;
    if (R->failed || !ct_eval_args(R, f, e, &A))
        return mk_undef(NULL);
    const char *name = e->s;
    if (strcmp(name, "default") == 0 || strcmp(name, "d") == 0) {
        if (!ct_want_args(R, &A, 0, 2, "default", e->pos))
            return v;
        bool boolean = A.n > 1 && ct_truthy(A.v[1]);
        if (v.t == V_UNDEF || (boolean && !ct_truthy(v)))
            return A.n ? A.v[0] : mk_str("", 0);
        return v;
    }
    if (strcmp(name, "length") == 0 || strcmp(name, "count") == 0) {
        if (!ct_want_args(R, &A, 0, 0, name, e->pos))
            return v;
        if (v.t == V_LIST || v.t == V_DICT)
            return mk_int(v.q->n);
        if (v.t == V_STR)
            return mk_int((int64_t)ct_cp_count(v.s, v.n));
        if (v.t == V_UNDEF)
            return mk_int(0);
        return ct_err(R, TM_EINVAL, e->pos, "length of a %s%s", ct_tname(v.t), NULL);
    }
    if (strcmp(name, "tojson") == 0) {
        sbuf b = {0};
        if (!ct_want_args(R, &A, 0, 0, "tojson (indent and other options)", e->pos) || !ct_to_json(R, &b, v, e->pos, 0))
            return mk_undef(NULL);
        return b.bad ? ct_oom(R) : mk_str(b.p, b.n);
    }
    if (strcmp(name, "string") == 0)
        return ct_want_args(R, &A, 0, 0, name, e->pos) ? ct_text_of(R, v, e->pos) : v;
    if (strcmp(name, "first") == 0 || strcmp(name, "last") == 0) {
        if (!ct_want_args(R, &A, 0, 0, name, e->pos))
            return v;
        if (v.t == V_LIST)
            return v.q->n ? v.q->v[name[0] == 'f' ? 0 : v.q->n - 1] : mk_undef(NULL);
        if (v.t == V_STR)
            return ct_index_of(R, v, mk_int(name[0] == 'f' ? 0 : -1), e->pos);
        return ct_err(R, TM_EINVAL, e->pos, "%s of a %s", name, ct_tname(v.t));
    }
    if (strcmp(name, "join") == 0) {
        if (!ct_want_args(R, &A, 0, 1, "join", e->pos))
            return v;
        if (v.t != V_LIST)
            return ct_err(R, TM_EINVAL, e->pos, "join needs a list, not %s%s", ct_tname(v.t), NULL);
        val sep = A.n ? ct_text_of(R, A.v[0], e->pos) : mk_str("", 0);
        sbuf b = {0};
        for (int i = 0; i < v.q->n && !R->failed; i++) {
            if (i)
                ct_sb_add(R, &b, sep.s, sep.n);
            ct_to_text(R, &b, v.q->v[i], e->pos);
        }
        return R->failed ? v : b.bad ? ct_oom(R) : mk_str(b.p ? b.p : "", b.n);
    }
    /* the rest act on strings */
    static const char *const sf[] = {"trim", "upper", "lower", NULL};
    for (int k = 0; sf[k]; k++)
        if (strcmp(name, sf[k]) == 0) {
            if (!ct_want_args(R, &A, 0, 0, name, e->pos))
                return v;
            if (v.t == V_UNDEF)
                return ct_undefined_use(R, v, e->pos, name);
            val s = ct_text_of(R, v, e->pos);
            if (R->failed)
                return s;
            return k == 0 ? ct_strip(s, NULL, 0, true, true) : ct_case_map(R, s, k == 1);
        }
    return ct_err(R, TM_EUNSUPPORTED, e->pos, "the filter \"%s\" is not supported%s", name, NULL);
}

val ct_test(run *R, frame *f, const ct_expr *e)
{
    val v = ct_eval(R, f, e->a);
    args A;
    if (R->failed || !ct_eval_args(R, f, e, &A))
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
            return ct_err(R, TM_EINVAL, e->pos, "\"is %s\" needs an int%s", name, NULL);
        r = ((v.i % 2 != 0) == (name[0] == 'o'));
    } else if (strcmp(name, "eq") == 0 || strcmp(name, "equalto") == 0 || strcmp(name, "sameas") == 0) {
        if (!ct_want_args(R, &A, 1, 1, name, e->pos))
            return v;
        r = ct_equal(v, A.v[0]);
    } else {
        return ct_err(R, TM_EUNSUPPORTED, e->pos, "the test \"%s\" is not supported%s", name, NULL);
    }
    if (strcmp(name, "eq") && strcmp(name, "equalto") && strcmp(name, "sameas") && !ct_want_args(R, &A, 0, 0, name, e->pos))
        return v;
    return mk_bool(r != (e->op != 0));
}

val ct_method(run *R, val obj, const char *name, const args *A, size_t pos)
{
    if (obj.t == V_UNDEF)
        return ct_undefined_use(R, obj, pos, name);
    if (obj.t == V_STR) {
        if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
            if (!ct_want_args(R, A, 0, 1, name, pos))
                return obj;
            if (A->n && A->v[0].t != V_STR && A->v[0].t != V_NONE)
                return ct_err(R, TM_EINVAL, pos, "%s needs a str argument%s", name, NULL);
            bool chars = A->n && A->v[0].t == V_STR;
            return ct_strip(obj, chars ? A->v[0].s : NULL, chars ? A->v[0].n : 0, name[0] != 'r', name[0] != 'l');
        }
        if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
            if (!ct_want_args(R, A, 1, 1, name, pos))
                return obj;
            if (A->v[0].t != V_STR)
                return ct_err(R, TM_EUNSUPPORTED, pos, "%s needs one str argument%s", name, NULL);
            val p = A->v[0];
            bool r = p.n <= obj.n && memcmp(name[0] == 's' ? obj.s : obj.s + obj.n - p.n, p.s, p.n) == 0;
            return mk_bool(r);
        }
        if (!strcmp(name, "upper") || !strcmp(name, "lower"))
            return ct_want_args(R, A, 0, 0, name, pos) ? ct_case_map(R, obj, name[0] == 'u') : obj;
        if (!strcmp(name, "replace")) {
            if (!ct_want_args(R, A, 2, 2, name, pos))
                return obj;
            val a = A->v[0], b = A->v[1];
            if (a.t != V_STR || b.t != V_STR || a.n == 0)
                return ct_err(R, TM_EUNSUPPORTED, pos, "replace needs two str arguments, the first not empty%s%s", NULL, NULL);
            sbuf o = {0};
            for (size_t i = 0; i < obj.n;) {
                if (i + a.n <= obj.n && memcmp(obj.s + i, a.s, a.n) == 0) {
                    ct_sb_add(R, &o, b.s, b.n);
                    i += a.n;
                } else {
                    ct_sb_add(R, &o, obj.s + i++, 1);
                }
            }
            return o.bad ? ct_oom(R) : mk_str(o.p ? o.p : "", o.n);
        }
        if (!strcmp(name, "split")) {
            if (!ct_want_args(R, A, 1, 1, "split (with no separator)", pos))
                return obj;
            val a = A->v[0];
            if (a.t != V_STR || a.n == 0)
                return ct_err(R, TM_EUNSUPPORTED, pos, "split needs a non-empty str separator%s%s", NULL, NULL);
            ct_seq *q = ct_seq_new(R, false);
            if (!q)
                return ct_oom(R);
            size_t s0 = 0;
            for (size_t i = 0; i + a.n <= obj.n;) {
                if (memcmp(obj.s + i, a.s, a.n) == 0) {
                    if (!ct_seq_push(R, q, NULL, 0, mk_str(obj.s + s0, i - s0)))
                        return ct_oom(R);
                    i += a.n, s0 = i;
                } else {
                    i++;
                }
            }
            if (!ct_seq_push(R, q, NULL, 0, mk_str(obj.s + s0, obj.n - s0)))
                return ct_oom(R);
            return (val){V_LIST, 0, NULL, 0, q};
        }
    } else if (obj.t == V_DICT) {
        if (!strcmp(name, "get")) {
            if (!ct_want_args(R, A, 1, 2, name, pos))
                return obj;
            val *p = A->v[0].t == V_STR ? ct_dict_get(obj.q, A->v[0].s, A->v[0].n) : NULL;
            return p ? *p : A->n > 1 ? A->v[1] : (val){V_NONE, 0, NULL, 0, NULL};
        }
        if (!strcmp(name, "keys") || !strcmp(name, "values")) {
            if (!ct_want_args(R, A, 0, 0, name, pos))
                return obj;
            ct_seq *q = ct_seq_new(R, false);
            if (!q)
                return ct_oom(R);
            for (int i = 0; i < obj.q->n; i++)
                if (!ct_seq_push(R, q, NULL, 0, name[0] == 'k' ? mk_str(obj.q->k[i], obj.q->kn[i]) : obj.q->v[i]))
                    return ct_oom(R);
            return (val){V_LIST, 0, NULL, 0, q};
        }
    }
    return ct_err(R, TM_EUNSUPPORTED, pos, "the method \"%s\" of a %s is not supported", name, ct_tname(obj.t));
}

