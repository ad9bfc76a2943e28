/* refcase.c — parser and runner for numpy-generated reference cases. */
#include "refcase.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#ifndef TT_DATA_DIR
#define TT_DATA_DIR "tests/data"
#endif

double tt_arg(const tt_refcase *c, const char *key, double dflt)
{
    for (int i = 0; i < c->nargs; i++)
        if (!strcmp(c->args[i].key, key) && c->args[i].n > 0)
            return c->args[i].v[0];
    return dflt;
}

bool tt_has_arg(const tt_refcase *c, const char *key)
{
    for (int i = 0; i < c->nargs; i++)
        if (!strcmp(c->args[i].key, key)) return true;
    return false;
}

int tt_arg_i64s(const tt_refcase *c, const char *key, int64_t *out, int max)
{
    for (int i = 0; i < c->nargs; i++) {
        if (strcmp(c->args[i].key, key)) continue;
        int n = c->args[i].n < max ? c->args[i].n : max;
        for (int k = 0; k < n; k++) out[k] = (int64_t)c->args[i].v[k];
        return n;
    }
    return -1;
}

int tt_arg_ints(const tt_refcase *c, const char *key, int *out, int max)
{
    int64_t tmp[TT_REF_MAX_ARGVALS];
    int n = tt_arg_i64s(c, key, tmp, max < TT_REF_MAX_ARGVALS
                                          ? max : TT_REF_MAX_ARGVALS);
    for (int k = 0; k < n; k++) out[k] = (int)tmp[k];
    return n;
}

static tm_dtype tt_parse_dtype(const char *s, bool *ok)
{
    for (int d = 0; d < TM_NUM_DENSE_DTYPES; d++)
        if (!strcmp(s, tm_dtype_name((tm_dtype)d))) return (tm_dtype)d;
    *ok = false;
    return TM_F32;
}

/* "[2,3]" -> shape; returns ndim or -1. */
static int tt_parse_shape(const char *s, int64_t *shape)
{
    if (*s != '[') return -1;
    s++;
    int n = 0;
    while (*s && *s != ']') {
        if (n >= TM_MAX_DIMS) return -1;
        char *end;
        shape[n++] = strtoll(s, &end, 10);
        if (end == s) return -1;
        s = end;
        if (*s == ',') s++;
    }
    return *s == ']' ? n : -1;
}

/* Builds a tensor from "<dtype> <shape> <values...>" in `rest`. */
static tm_tensor *tt_parse_tensor(char *rest, char **err)
{
    char *save = NULL;
    char *dts = strtok_r(rest, " \t\n", &save);
    char *shs = strtok_r(NULL, " \t\n", &save);
    bool ok = true;
    int64_t shape[TM_MAX_DIMS];
    if (!dts || !shs) {
        *err = "tensor needs a dtype and a shape";
        return NULL;
    }
    tm_dtype dt = tt_parse_dtype(dts, &ok);
    int nd = tt_parse_shape(shs, shape);
    if (!ok || nd < 0) {
        *err = "bad dtype or shape";
        return NULL;
    }
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    bool is_int = !tm_dtype_is_float(dt);
    size_t bytes = (size_t)(n ? n : 1) * 8;
    void *vals = malloc(bytes);
    if (!vals) {
        *err = "out of memory";
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        char *tok = strtok_r(NULL, " \t\n", &save), *end;
        if (!tok) {
            free(vals);
            *err = "too few values";
            return NULL;
        }
        errno = 0;
        if (is_int) ((int64_t *)vals)[i] = strtoll(tok, &end, 10);
        else ((double *)vals)[i] = strtod(tok, &end);
        if (*end || errno == EINVAL) {
            free(vals);
            *err = "bad value";
            return NULL;
        }
    }
    if (strtok_r(NULL, " \t\n", &save)) {
        free(vals);
        *err = "too many values";
        return NULL;
    }
    tm_tensor *w = tm_from_buffer(vals, shape, nd, is_int ? TM_I64 : TM_F64);
    free(vals);
    tm_tensor *t = w ? tm_to_dtype(w, dt) : NULL;
    tm_free(w);
    if (!t) *err = "cannot build tensor";
    return t;
}

/* Applies "view <kind> ..." to *t (replacing it). */
static bool tt_apply_view(tm_tensor **t, char *rest)
{
    char *save = NULL, *kind = strtok_r(rest, " \t\n", &save);
    int64_t v[TM_MAX_DIMS + 2];
    int n = 0;
    char *tok;
    int64_t shape[TM_MAX_DIMS];
    int nd = -1;
    while (kind && (tok = strtok_r(NULL, " \t\n", &save))) {
        if (*tok == '[') nd = tt_parse_shape(tok, shape);
        else if (n < TM_MAX_DIMS + 2) v[n++] = strtoll(tok, NULL, 10);
    }
    if (!kind) return false;
    tm_tensor *r = NULL;
    if (!strcmp(kind, "transpose") && n == 2)
        r = tm_transpose(*t, (int)v[0], (int)v[1]);
    else if (!strcmp(kind, "permute")) {
        int d[TM_MAX_DIMS];
        for (int i = 0; i < n && i < TM_MAX_DIMS; i++) d[i] = (int)v[i];
        r = tm_permute(*t, d, n);
    } else if (!strcmp(kind, "slice") && n == 4)
        r = tm_slice(*t, (int)v[0], v[1], v[2], v[3]);
    else if (!strcmp(kind, "expand") && nd >= 0)
        r = tm_expand(*t, shape, nd);
    else if (!strcmp(kind, "select") && n == 2)
        r = tm_select(*t, (int)v[0], v[1]);
    else if (!strcmp(kind, "unsqueeze") && n == 1)
        r = tm_unsqueeze(*t, (int)v[0]);
    if (!r) return false;
    tm_free(*t);
    *t = r;
    return true;
}

static void tt_case_clear(tt_refcase *c)
{
    for (int i = 0; i < c->nin; i++) tm_free(c->in[i]);
    for (int i = 0; i < c->nout; i++) tm_free(c->out[i]);
    memset(c, 0, sizeof *c);
}

static void tt_compare(const tt_refcase *c, int k, const tm_tensor *got,
                       const char *file, int line)
{
    const tm_tensor *want = c->out[k];
    char a[128], b[128];
    if (tm_dtype_of(got) != tm_dtype_of(want) ||
        tm_ndim(got) != tm_ndim(want) ||
        memcmp(tm_shape(got), tm_shape(want),
               sizeof(int64_t) * (size_t)tm_ndim(want))) {
        tt_fail(file, line, "case %s output %d: got %s, expected %s",
                c->name, k, tm_describe(got, a, sizeof a),
                tm_describe(want, b, sizeof b));
        return;
    }
    int64_t n = tm_numel(want);
    double *g = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *w = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!g || !w || tm_copy_to_buffer(got, g, sizeof(double) * (size_t)n,
                                      TM_F64) ||
        tm_copy_to_buffer(want, w, sizeof(double) * (size_t)n, TM_F64)) {
        tt_fail(file, line, "case %s: cannot read output", c->name);
    } else {
        bool exact = !tm_dtype_is_float(tm_dtype_of(want));
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            bool ok = exact ? g[i] == w[i]
                            : tt_near(g[i], w[i], c->rtol, c->atol);
            if (!ok && bad++ < 3)
                tt_fail(file, line,
                        "case %s output %d element %lld: got %.17g, "
                        "expected %.17g (rtol %g, atol %g)",
                        c->name, k, (long long)i, g[i], w[i], c->rtol,
                        c->atol);
        }
    }
    free(g);
    free(w);
}

static void tt_run_case(tt_refcase *c, tt_ref_dispatch fn, const char *file,
                        int line)
{
    tm_tensor *got[TT_REF_MAX_OUT] = {0};
    int ngot = 0;
    tm_clear_error();
    tm_status st = fn(c, got, &ngot);
    if (c->expect_err) {
        if (st == TM_OK) {
            tt_fail(file, line, "case %s: expected %s, op succeeded", c->name,
                    tm_status_name(c->err_status));
        } else {
            if (st != c->err_status)
                tt_fail(file, line, "case %s: status %s, expected %s (%s)",
                        c->name, tm_status_name(st),
                        tm_status_name(c->err_status), tm_last_error());
            if (!strstr(tm_last_error(), c->err_msg))
                tt_fail(file, line, "case %s: message \"%s\" lacks \"%s\"",
                        c->name, tm_last_error(), c->err_msg);
        }
    } else if (st != TM_OK) {
        tt_fail(file, line, "case %s (%s): failed with %s: %s", c->name,
                c->op, tm_status_name(st), tm_last_error());
    } else if (ngot != c->nout) {
        tt_fail(file, line, "case %s: %d outputs, expected %d", c->name, ngot,
                c->nout);
    } else {
        for (int k = 0; k < ngot; k++) tt_compare(c, k, got[k], file, line);
    }
    for (int k = 0; k < ngot; k++) tm_free(got[k]);
}

int tt_ref_foreach(const char *name, tt_ref_visit visit, void *user)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TT_DATA_DIR, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        tt_fail(path, 0, "cannot open reference file");
        return 0;
    }
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    tt_refcase c;
    memset(&c, 0, sizeof c);
    int lineno = 0, ncases = 0;
    bool in_case = false;
    while (line && fgets(line, (int)cap, f)) {
        lineno++;
        size_t len = strlen(line);
        while (len == cap - 1 && line[len - 1] != '\n') { /* long line */
            char *bigger = realloc(line, cap * 2);
            if (!bigger) break;
            line = bigger;
            if (!fgets(line + len, (int)(cap * 2 - len), f)) break;
            cap *= 2;
            len = strlen(line);
        }
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        char *save = NULL, *dir = strtok_r(p, " \t\n", &save);
        char *rest = strtok_r(NULL, "\n", &save);
        char *err = NULL;
        if (!strcmp(dir, "case")) {
            tt_case_clear(&c);
            in_case = true;
            snprintf(c.name, sizeof c.name, "%s", rest ? rest : "?");
        } else if (!in_case) {
            err = "directive outside a case";
        } else if (!strcmp(dir, "op")) {
            snprintf(c.op, sizeof c.op, "%s", rest ? rest : "");
        } else if (!strcmp(dir, "in") || !strcmp(dir, "out")) {
            bool is_in = dir[0] == 'i';
            tm_tensor *t = rest ? tt_parse_tensor(rest, &err) : NULL;
            if (!rest) err = "empty tensor line";
            if (t && is_in && c.nin < TT_REF_MAX_IN) c.in[c.nin++] = t;
            else if (t && !is_in && c.nout < TT_REF_MAX_OUT)
                c.out[c.nout++] = t;
            else if (t) {
                tm_free(t);
                err = "too many tensors";
            }
        } else if (!strcmp(dir, "view")) {
            if (!c.nin || !rest || !tt_apply_view(&c.in[c.nin - 1], rest))
                err = "bad view";
        } else if (!strcmp(dir, "arg")) {
            char *s2 = NULL, *key = rest ? strtok_r(rest, " \t", &s2) : NULL;
            if (!key || c.nargs >= TT_REF_MAX_ARGS) {
                err = "bad arg";
            } else {
                tt_ref_arg *a = &c.args[c.nargs++];
                snprintf(a->key, sizeof a->key, "%s", key);
                char *tok;
                while ((tok = strtok_r(NULL, " \t", &s2)) &&
                       a->n < TT_REF_MAX_ARGVALS)
                    a->v[a->n++] = strtod(tok, NULL);
            }
        } else if (!strcmp(dir, "tol")) {
            if (!rest || sscanf(rest, "%lf %lf", &c.rtol, &c.atol) != 2)
                err = "bad tol";
        } else if (!strcmp(dir, "err")) {
            char st[64] = "";
            int used = 0;
            if (!rest || sscanf(rest, "%63s %n", st, &used) < 1) {
                err = "bad err";
            } else {
                c.expect_err = true;
                c.err_status = TM_OK;
                for (int s = 0; s >= -64; s--)
                    if (!strcmp(tm_status_name((tm_status)s), st))
                        c.err_status = (tm_status)s;
                snprintf(c.err_msg, sizeof c.err_msg, "%s", rest + used);
            }
        } else if (!strcmp(dir, "end")) {
            visit(&c, path, lineno, user);
            tt_case_clear(&c);
            in_case = false;
            ncases++;
        } else {
            err = "unknown directive";
        }
        if (err) {
            tt_fail(path, lineno, "case %s: %s (%s)", c.name, err,
                    tm_last_error());
            tt_case_clear(&c);
            in_case = false;
        }
    }
    tt_case_clear(&c);
    free(line);
    fclose(f);
    if (ncases == 0) tt_fail(path, 0, "no cases in reference file");
    return ncases;
}

static void tt_run_case_visit(tt_refcase *c, const char *path, int line,
                              void *user)
{
    tt_ref_dispatch fn = *(tt_ref_dispatch *)user;
    tt_run_case(c, fn, path, line);
}

void tt_run_ref_file(const char *name, tt_ref_dispatch fn)
{
    tt_ref_foreach(name, tt_run_case_visit, &fn);
}
