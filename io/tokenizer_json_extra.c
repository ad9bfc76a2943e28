/*
 * tokenizer_json_extra.c — the tokenizer.json sections around the model:
 * the normalizer (null or BertNormalizer) and the truncation and padding
 * blocks, which are read into fields and kept verbatim for saving.
 */
#include "tokenizer_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

tm_status tm__tj_normalizer(const tm__jl *j, const tm__json_node *n, tm__bertnorm *nm)
{
    memset(nm, 0, sizeof *nm);
    nm->strip_json = -1;
    if (!n || n->type == TM__JSON_NULL)
        return TM_OK;
    const tm__json_node *tn;
    size_t o = tm__tj_idx(j, n);
    if (n->type != TM__JSON_OBJECT)
        return tm__tj_bad(j, TM_EFORMAT, "normalizer", "expected an object");
    tm_status st = tm__tj_member(j, o, "type", TM__JSON_STRING, false, "normalizer", &tn);
    if (st < 0)
        return st;
    if (!tn)
        return tm__tj_bad(j, TM_EFORMAT, "normalizer", "missing \"type\"");
    const char *ty = tn->str;
    if (strcmp(ty, "BertNormalizer") != 0)
        return tm__errf(TM_EUNSUPPORTED, j->fn, "normalizer.type: normalizer \"%s\" is not supported (only BertNormalizer)",
                        ty);
    static const char *const k[] = {"type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase", NULL};
    const tm__json_node *sa;
    /* HF's defaults: everything on, strip_accents following lowercase */
    if ((st = tm__tj_only_keys(j, o, "normalizer", k)) < 0 ||
        (st = tm__tj_bool(j, o, "clean_text", "normalizer", true, &nm->clean_text)) < 0 ||
        (st = tm__tj_bool(j, o, "handle_chinese_chars", "normalizer", true, &nm->handle_chinese)) < 0 ||
        (st = tm__tj_bool(j, o, "lowercase", "normalizer", true, &nm->lowercase)) < 0 ||
        (st = tm__tj_member(j, o, "strip_accents", TM__JSON_BOOL, true, "normalizer", &sa)) < 0)
        return st;
    nm->present = true;
    nm->strip_json = sa ? (int8_t)(sa->i != 0) : -1;
    nm->strip_accents = sa ? sa->i != 0 : nm->lowercase;
    return TM_OK;
}

static tm_status int_member(const tm__jl *j, size_t o, const char *key, const char *path, int64_t dflt, int64_t *v)
{
    const tm__json_node *n;
    tm_status st = tm__tj_member(j, o, key, TM__JSON_INT, true, path, &n);
    if (st < 0)
        return st;
    if (n && n->i < 0)
        return tm__errf(TM_EFORMAT, j->fn, "%s.%s: must not be negative", path, key);
    *v = n ? n->i : dflt;
    return TM_OK;
}

static tm_status direction(const tm__jl *j, size_t o, const char *path, bool *left)
{
    const tm__json_node *n;
    tm_status st = tm__tj_member(j, o, "direction", TM__JSON_STRING, false, path, &n);
    *left = false;
    if (st < 0 || !n)
        return st;
    if (strcmp(n->str, "Left") && strcmp(n->str, "Right"))
        return tm__errf(TM_EFORMAT, j->fn, "%s.direction: expected \"Left\" or \"Right\"", path);
    *left = n->str[0] == 'L';
    return TM_OK;
}

char *tm__json_compact(const tm__json_doc *d, size_t node);

tm_status tm__tj_trunc_pad(const tm__jl *j, tm_tokenizer_json_defaults *d, tm__tj_extra *x)
{
    tm_status st;
    const tm__json_node *n = tm__json_get(j->d, 0, "truncation"), *m;
    memset(d, 0, sizeof *d);
    d->pad_id = -1;
    if (n && n->type != TM__JSON_NULL) {
        static const char *const k[] = {"direction", "max_length", "strategy", "stride", NULL};
        size_t o = tm__tj_idx(j, n);
        if (n->type != TM__JSON_OBJECT)
            return tm__tj_bad(j, TM_EFORMAT, "truncation", "expected an object or null");
        if ((st = tm__tj_only_keys(j, o, "truncation", k)) < 0 ||
            (st = int_member(j, o, "max_length", "truncation", 512, &d->trunc_max_length)) < 0 ||
            (st = int_member(j, o, "stride", "truncation", 0, &d->trunc_stride)) < 0 ||
            (st = direction(j, o, "truncation", &d->trunc_left)) < 0 ||
            (st = tm__tj_member(j, o, "strategy", TM__JSON_STRING, false, "truncation", &m)) < 0)
            return st;
        if (m && strcmp(m->str, "LongestFirst") && strcmp(m->str, "OnlyFirst") && strcmp(m->str, "OnlySecond"))
            return tm__tj_bad(j, TM_EFORMAT, "truncation.strategy", "expected LongestFirst, OnlyFirst or OnlySecond");
        if (d->trunc_max_length == 0)
            return tm__tj_bad(j, TM_EUNSUPPORTED, "truncation.max_length", "0 is not supported");
        if (!(x->trunc_json = tm__json_compact(j->d, o)))
            return tm__errf(TM_ENOMEM, j->fn, "out of memory");
    }
    n = tm__json_get(j->d, 0, "padding");
    if (n && n->type != TM__JSON_NULL) {
        static const char *const k[] = {"strategy", "direction", "pad_to_multiple_of", "pad_id", "pad_type_id",
                                        "pad_token", NULL};
        size_t o = tm__tj_idx(j, n);
        if (n->type != TM__JSON_OBJECT)
            return tm__tj_bad(j, TM_EFORMAT, "padding", "expected an object or null");
        if ((st = tm__tj_only_keys(j, o, "padding", k)) < 0 ||
            (st = int_member(j, o, "pad_to_multiple_of", "padding", 0, &d->pad_multiple)) < 0 ||
            (st = int_member(j, o, "pad_id", "padding", 0, &d->pad_id)) < 0 ||
            (st = int_member(j, o, "pad_type_id", "padding", 0, &d->pad_type_id)) < 0 ||
            (st = direction(j, o, "padding", &d->pad_left)) < 0 ||
            (st = tm__tj_member(j, o, "pad_token", TM__JSON_STRING, false, "padding", &m)) < 0)
            return st;
        m = tm__json_get(j->d, o, "strategy");
        if (m && m->type == TM__JSON_OBJECT) {
            const tm__json_node *f;
            if ((st = tm__tj_only_keys(j, tm__tj_idx(j, m), "padding.strategy", (const char *const[]){"Fixed", NULL})) < 0 ||
                (st = tm__tj_member(j, tm__tj_idx(j, m), "Fixed", TM__JSON_INT, false, "padding.strategy", &f)) < 0)
                return st;
            if (!f || f->i <= 0)
                return tm__tj_bad(j, TM_EFORMAT, "padding.strategy", "expected {\"Fixed\": n} with n > 0");
            d->pad_length = f->i;
        } else if (m && !(m->type == TM__JSON_STRING && !strcmp(m->str, "BatchLongest"))) {
            return tm__tj_bad(j, TM_EFORMAT, "padding.strategy", "expected \"BatchLongest\" or {\"Fixed\": n}");
        }
        d->pad = true;
        if (!(x->pad_json = tm__json_compact(j->d, o))) {
            free(x->trunc_json), x->trunc_json = NULL;
            return tm__errf(TM_ENOMEM, j->fn, "out of memory");
        }
    }
    return TM_OK;
}
