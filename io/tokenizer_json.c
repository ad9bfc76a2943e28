/*
 * tokenizer_json.c — loading Hugging Face tokenizer.json (BPE models).
 *
 * Strict: every key is known or refused, every value has the type HF
 * writes; what Foundry cannot reproduce exactly (normalizers, other
 * pre-tokenizers, regexes other than the GPT-2 and Llama-3 patterns,
 * lstrip/rstrip/single_word, dropout, subword prefixes) is
 * TM_EUNSUPPORTED naming the JSON path, never silently ignored.
 */
#include "tokenizer_impl.h"
#include "json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jl {
    const tm__json_doc *d;
    const char *fn;
} jl;

char *tm__json_compact(const tm__json_doc *d, size_t node);

static const tm__json_node *N(const jl *j, size_t i) { return &j->d->nodes[i]; }
static size_t idx(const jl *j, const tm__json_node *n) { return (size_t)(n - j->d->nodes); }

static tm_status bad(const jl *j, tm_status s, const char *path, const char *what)
{
    return tm__errf(s, j->fn, "%s: %s", path, what);
}

/* Every key of object o must be in keys (NULL-terminated). */
static tm_status only_keys(const jl *j, size_t o, const char *path, const char *const *keys)
{
    size_t c = o + 1;
    for (size_t k = 0; k < N(j, o)->count; k++, c = N(j, c)->next) {
        bool ok = false;
        for (int i = 0; keys[i] && !ok; i++)
            ok = strcmp(keys[i], N(j, c)->key) == 0;
        if (!ok) {
            char nb[64];
            return tm__errf(TM_EUNSUPPORTED, j->fn, "%s: unknown key \"%s\"", path,
                            tm__fmt_name(nb, sizeof nb, N(j, c)->key, N(j, c)->key_len));
        }
    }
    return TM_OK;
}

/* An optional member: NULL when absent; type checked when present. */
static tm_status member(const jl *j, size_t o, const char *key, tm__json_type ty, bool nullable,
                        const char *path, const tm__json_node **out)
{
    const tm__json_node *n = tm__json_get(j->d, o, key);
    *out = NULL;
    if (!n)
        return TM_OK;
    if (n->type == TM__JSON_NULL && nullable)
        return TM_OK;
    if (n->type != ty && !(ty == TM__JSON_FLOAT && n->type == TM__JSON_INT))
        return tm__errf(TM_EFORMAT, j->fn, "%s.%s: wrong type", path, key);
    *out = n;
    return TM_OK;
}

static tm_status get_bool(const jl *j, size_t o, const char *key, const char *path, bool dflt, bool *v)
{
    const tm__json_node *n;
    tm_status st = member(j, o, key, TM__JSON_BOOL, false, path, &n);
    *v = n ? n->i != 0 : dflt;
    return st;
}

static tm_status type_of(const jl *j, size_t o, const char *path, const char **type)
{
    const tm__json_node *n;
    if (N(j, o)->type != TM__JSON_OBJECT)
        return bad(j, TM_EFORMAT, path, "expected an object");
    tm_status st = member(j, o, "type", TM__JSON_STRING, false, path, &n);
    if (st < 0)
        return st;
    if (!n)
        return bad(j, TM_EFORMAT, path, "missing \"type\"");
    *type = n->str;
    return TM_OK;
}

/* One pre-tokenizer step; *stage orders them: Digits (1), Split (2), ByteLevel (3). */
static tm_status pretok_step(const jl *j, size_t o, const char *path, tm__pretok *p, int *stage)
{
    const char *ty;
    tm_status st = type_of(j, o, path, &ty);
    char sub[96];
    if (st < 0)
        return st;
    int want;
    if (!strcmp(ty, "Digits")) {
        static const char *const k[] = {"type", "individual_digits", NULL};
        bool ind;
        if ((st = only_keys(j, o, path, k)) < 0 || (st = get_bool(j, o, "individual_digits", path, false, &ind)) < 0)
            return st;
        if (!ind)
            return bad(j, TM_EUNSUPPORTED, path, "Digits with individual_digits false is not supported");
        want = 1;
        p->split_digits = true;
    } else if (!strcmp(ty, "Split")) {
        static const char *const k[] = {"type", "pattern", "behavior", "invert", NULL};
        const tm__json_node *pat, *beh, *re;
        bool inv;
        if ((st = only_keys(j, o, path, k)) < 0 || (st = get_bool(j, o, "invert", path, false, &inv)) < 0 ||
            (st = member(j, o, "pattern", TM__JSON_OBJECT, false, path, &pat)) < 0 ||
            (st = member(j, o, "behavior", TM__JSON_STRING, false, path, &beh)) < 0)
            return st;
        if (!pat || !beh)
            return bad(j, TM_EFORMAT, path, "Split needs \"pattern\" and \"behavior\"");
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if ((st = member(j, idx(j, pat), "Regex", TM__JSON_STRING, false, sub, &re)) < 0)
            return st;
        if (!re || pat->count != 1)
            return bad(j, TM_EUNSUPPORTED, sub, "only a {\"Regex\": ...} pattern is supported");
        if (strcmp(beh->str, "Isolated") != 0 || inv)
            return bad(j, TM_EUNSUPPORTED, path, "only behavior \"Isolated\" with invert false is supported");
        if (!strcmp(re->str, tm__re_gpt2_str))
            p->regex = TM__RE_GPT2;
        else if (!strcmp(re->str, tm__re_llama3_str))
            p->regex = TM__RE_LLAMA3;
        else
            return tm__errf(TM_EUNSUPPORTED, j->fn, "%s.Regex: only the GPT-2 and Llama-3 patterns are supported",
                            sub);
        p->regex_in_split = true;
        want = 2;
    } else if (!strcmp(ty, "ByteLevel")) {
        static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
        bool ure;
        if ((st = only_keys(j, o, path, k)) < 0 ||
            (st = get_bool(j, o, "add_prefix_space", path, true, &p->add_prefix_space)) < 0 ||
            (st = get_bool(j, o, "trim_offsets", path, true, &p->trim_offsets)) < 0 ||
            (st = get_bool(j, o, "use_regex", path, true, &ure)) < 0)
            return st;
        if (ure) {
            if (p->regex != TM__RE_NONE)
                return bad(j, TM_EUNSUPPORTED, path, "ByteLevel use_regex after a Split is not supported");
            p->regex = TM__RE_GPT2;
        }
        p->byte_level = true;
        want = 3;
    } else {
        return tm__errf(TM_EUNSUPPORTED, j->fn, "%s.type: pre-tokenizer \"%s\" is not supported", path, ty);
    }
    if (want <= *stage)
        return bad(j, TM_EUNSUPPORTED, path, "pre-tokenizers must come in the order Digits, Split, ByteLevel");
    *stage = want;
    return TM_OK;
}

static tm_status parse_pretok(const jl *j, const tm__json_node *n, tm__pretok *p)
{
    memset(p, 0, sizeof *p);
    if (!n || n->type == TM__JSON_NULL)
        return TM_OK;
    p->present = true;
    const char *ty;
    int stage = 0;
    tm_status st = type_of(j, idx(j, n), "pre_tokenizer", &ty);
    if (st < 0)
        return st;
    if (strcmp(ty, "Sequence") != 0)
        return pretok_step(j, idx(j, n), "pre_tokenizer", p, &stage);
    static const char *const k[] = {"type", "pretokenizers", NULL};
    const tm__json_node *list;
    if ((st = only_keys(j, idx(j, n), "pre_tokenizer", k)) < 0 ||
        (st = member(j, idx(j, n), "pretokenizers", TM__JSON_ARRAY, false, "pre_tokenizer", &list)) < 0)
        return st;
    if (!list)
        return bad(j, TM_EFORMAT, "pre_tokenizer", "Sequence needs \"pretokenizers\"");
    size_t c = idx(j, list) + 1;
    for (size_t i = 0; i < list->count; i++, c = N(j, c)->next) {
        char path[64];
        snprintf(path, sizeof path, "pre_tokenizer.pretokenizers[%zu]", i);
        if ((st = pretok_step(j, c, path, p, &stage)) < 0)
            return st;
    }
    return TM_OK;
}

static tm_status parse_decoder(const jl *j, const tm__json_node *n, int *dec)
{
    *dec = 0;
    if (!n || n->type == TM__JSON_NULL)
        return bad(j, TM_EUNSUPPORTED, "decoder", "a null decoder (tokens joined by spaces) is not supported");
    const char *ty;
    tm_status st = type_of(j, idx(j, n), "decoder", &ty);
    size_t list = idx(j, n), count = 1, c = list;
    if (st < 0)
        return st;
    if (!strcmp(ty, "Sequence")) {
        static const char *const k[] = {"type", "decoders", NULL};
        const tm__json_node *l;
        if ((st = only_keys(j, list, "decoder", k)) < 0 ||
            (st = member(j, list, "decoders", TM__JSON_ARRAY, false, "decoder", &l)) < 0)
            return st;
        if (!l)
            return bad(j, TM_EFORMAT, "decoder", "Sequence needs \"decoders\"");
        count = l->count, c = idx(j, l) + 1;
    }
    for (size_t i = 0; i < count; i++, c = N(j, c)->next) {
        char path[64];
        snprintf(path, sizeof path, count == 1 && c == list ? "decoder" : "decoder.decoders[%zu]", i);
        if ((st = type_of(j, c, path, &ty)) < 0)
            return st;
        if (!strcmp(ty, "ByteLevel")) {
            static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
            bool b;
            if ((st = only_keys(j, c, path, k)) < 0 || (st = get_bool(j, c, "add_prefix_space", path, 1, &b)) < 0 ||
                (st = get_bool(j, c, "trim_offsets", path, 1, &b)) < 0 ||
                (st = get_bool(j, c, "use_regex", path, 1, &b)) < 0)
                return st;
            *dec |= TM__DEC_BYTELEVEL;
        } else if (!strcmp(ty, "ByteFallback") || !strcmp(ty, "Fuse")) {
            static const char *const k[] = {"type", NULL};
            if ((st = only_keys(j, c, path, k)) < 0)
                return st;
            *dec |= ty[0] == 'F' ? TM__DEC_FUSE : TM__DEC_BYTEFALLBACK;
        } else {
            return tm__errf(TM_EUNSUPPORTED, j->fn, "%s.type: decoder \"%s\" is not supported", path, ty);
        }
    }
    if ((*dec & TM__DEC_BYTELEVEL) && (*dec & TM__DEC_BYTEFALLBACK))
        return bad(j, TM_EUNSUPPORTED, "decoder", "ByteLevel together with ByteFallback is not supported");
    if (!*dec)
        return bad(j, TM_EUNSUPPORTED, "decoder", "an empty decoder Sequence is not supported");
    return TM_OK;
}

typedef struct tmpl { int32_t *pre, *post; int n_pre, n_post; } tmpl;

static tm_status tmpl_add(tmpl *t, bool after, const tm__json_node *ids, const jl *j, const char *path)
{
    size_t c = idx(j, ids) + 1;
    for (size_t i = 0; i < ids->count; i++, c = N(j, c)->next) {
        if (N(j, c)->type != TM__JSON_INT || N(j, c)->i < 0 || N(j, c)->i > INT32_MAX)
            return bad(j, TM_EFORMAT, path, "ids must be non-negative integers");
        int32_t **a = after ? &t->post : &t->pre;
        int *n = after ? &t->n_post : &t->n_pre;
        int32_t *p = realloc(*a, (size_t)(*n + 1) * sizeof *p);
        if (!p)
            return tm__errf(TM_ENOMEM, j->fn, "out of memory");
        p[(*n)++] = (int32_t)N(j, c)->i;
        *a = p;
    }
    return TM_OK;
}

/* TemplateProcessing: the "single" template around sequence A. */
static tm_status parse_template(const jl *j, size_t o, const char *path, tmpl *t)
{
    static const char *const k[] = {"type", "single", "pair", "special_tokens", NULL};
    const tm__json_node *single, *pair, *sp;
    tm_status st;
    char p2[96];
    if ((st = only_keys(j, o, path, k)) < 0 || (st = member(j, o, "single", TM__JSON_ARRAY, false, path, &single)) < 0 ||
        (st = member(j, o, "pair", TM__JSON_ARRAY, false, path, &pair)) < 0 ||
        (st = member(j, o, "special_tokens", TM__JSON_OBJECT, false, path, &sp)) < 0)
        return st;
    if (!single || !pair || !sp)
        return bad(j, TM_EFORMAT, path, "TemplateProcessing needs single, pair and special_tokens");
    bool seen_a = false;
    size_t c = idx(j, single) + 1;
    for (size_t i = 0; i < single->count; i++, c = N(j, c)->next) {
        snprintf(p2, sizeof p2, "%s.single[%zu]", path, i);
        const tm__json_node *it = N(j, c), *s, *id;
        if (it->type != TM__JSON_OBJECT || it->count != 1)
            return bad(j, TM_EFORMAT, p2, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
        if ((st = member(j, c, "Sequence", TM__JSON_OBJECT, false, p2, &s)) < 0)
            return st;
        if (s) {
            if ((st = member(j, idx(j, s), "id", TM__JSON_STRING, false, p2, &id)) < 0)
                return st;
            if (!id || strcmp(id->str, "A") != 0 || seen_a)
                return bad(j, TM_EFORMAT, p2, "the single template holds sequence \"A\" once");
            seen_a = true;
            continue;
        }
        if ((st = member(j, c, "SpecialToken", TM__JSON_OBJECT, false, p2, &s)) < 0)
            return st;
        if (!s)
            return bad(j, TM_EFORMAT, p2, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
        if ((st = member(j, idx(j, s), "id", TM__JSON_STRING, false, p2, &id)) < 0)
            return st;
        const tm__json_node *def = id ? tm__json_get(j->d, idx(j, sp), id->str) : NULL, *ids;
        if (!def || def->type != TM__JSON_OBJECT)
            return bad(j, TM_EFORMAT, p2, "special token missing from special_tokens");
        if ((st = member(j, idx(j, def), "ids", TM__JSON_ARRAY, false, p2, &ids)) < 0)
            return st;
        if (!ids)
            return bad(j, TM_EFORMAT, p2, "special token without ids");
        if ((st = tmpl_add(t, seen_a, ids, j, p2)) < 0)
            return st;
    }
    if (!seen_a)
        return bad(j, TM_EFORMAT, path, "the single template has no sequence \"A\"");
    return TM_OK;
}

static tm_status parse_post(const jl *j, const tm__json_node *n, tmpl *t)
{
    if (!n || n->type == TM__JSON_NULL)
        return TM_OK;
    const char *ty;
    size_t o = idx(j, n), count = 1, c = o;
    tm_status st = type_of(j, o, "post_processor", &ty);
    if (st < 0)
        return st;
    if (!strcmp(ty, "Sequence")) {
        static const char *const k[] = {"type", "processors", NULL};
        const tm__json_node *l;
        if ((st = only_keys(j, o, "post_processor", k)) < 0 ||
            (st = member(j, o, "processors", TM__JSON_ARRAY, false, "post_processor", &l)) < 0)
            return st;
        if (!l)
            return bad(j, TM_EFORMAT, "post_processor", "Sequence needs \"processors\"");
        count = l->count, c = idx(j, l) + 1;
    }
    int ntmpl = 0;
    for (size_t i = 0; i < count; i++, c = N(j, c)->next) {
        char path[64];
        snprintf(path, sizeof path, c == o ? "post_processor" : "post_processor.processors[%zu]", i);
        if ((st = type_of(j, c, path, &ty)) < 0)
            return st;
        if (!strcmp(ty, "ByteLevel")) {
            static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
            if ((st = only_keys(j, c, path, k)) < 0)
                return st;
        } else if (!strcmp(ty, "TemplateProcessing")) {
            if (ntmpl++)
                return bad(j, TM_EUNSUPPORTED, path, "more than one TemplateProcessing");
            if ((st = parse_template(j, c, path, t)) < 0)
                return st;
        } else {
            return tm__errf(TM_EUNSUPPORTED, j->fn, "%s.type: post-processor \"%s\" is not supported", path, ty);
        }
    }
    return TM_OK;
}

typedef struct loadst {
    int64_t n;
    char **strs; size_t *lens; uint8_t *kind;
    int32_t (*merges)[2]; int64_t n_merges;
} loadst;

static tm_status set_token(const jl *j, loadst *L, int64_t id, const char *s, size_t len, uint8_t kind,
                           const char *path)
{
    char nb[64];
    if (id < 0 || id >= L->n)
        return tm__errf(TM_EFORMAT, j->fn, "%s: id %lld of \"%s\" is out of range [0, %lld)", path, (long long)id,
                        tm__fmt_name(nb, sizeof nb, s, len), (long long)L->n);
    if (L->strs[id]) {
        if ((L->kind[id] & TM__TOK_MODEL) && (kind & TM__TOK_ADDED) && L->lens[id] == len &&
            memcmp(L->strs[id], s, len) == 0) {
            L->kind[id] |= kind;
            return TM_OK;
        }
        return tm__errf(TM_EFORMAT, j->fn, "%s: id %lld is used twice (\"%s\")", path, (long long)id,
                        tm__fmt_name(nb, sizeof nb, s, len));
    }
    L->strs[id] = (char *)s, L->lens[id] = len, L->kind[id] = kind;
    return TM_OK;
}

static tm_status parse_merges(const jl *j, const tm__json_node *m, loadst *L, const tm__idmap *map)
{
    L->merges = malloc((m->count ? m->count : 1) * sizeof *L->merges);
    if (!L->merges)
        return tm__errf(TM_ENOMEM, j->fn, "out of memory (%zu merges)", m->count);
    size_t c = idx(j, m) + 1;
    for (size_t i = 0; i < m->count; i++, c = N(j, c)->next) {
        const tm__json_node *e = N(j, c);
        const char *a, *b;
        size_t la, lb;
        char nb[64];
        if (e->type == TM__JSON_STRING) {
            const char *sp = memchr(e->str, ' ', e->len);
            if (!sp || memchr(sp + 1, ' ', e->len - (size_t)(sp + 1 - e->str)))
                return tm__errf(TM_EFORMAT, j->fn, "model.merges[%zu]: \"%s\" is not two tokens split by one space",
                                i, tm__fmt_name(nb, sizeof nb, e->str, e->len));
            a = e->str, la = (size_t)(sp - e->str), b = sp + 1, lb = e->len - la - 1;
        } else if (e->type == TM__JSON_ARRAY && e->count == 2 && N(j, c + 1)->type == TM__JSON_STRING &&
                   N(j, c + 2)->type == TM__JSON_STRING) {
            a = N(j, c + 1)->str, la = N(j, c + 1)->len, b = N(j, c + 2)->str, lb = N(j, c + 2)->len;
        } else {
            return tm__errf(TM_EFORMAT, j->fn, "model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]", i);
        }
        int32_t ia = tm__idmap_get(map, a, la), ib = tm__idmap_get(map, b, lb);
        if (ia < 0 || ib < 0)
            return tm__errf(TM_EFORMAT, j->fn, "model.merges[%zu]: token \"%s\" is not in the vocab", i,
                            ia < 0 ? tm__fmt_name(nb, sizeof nb, a, la) : tm__fmt_name(nb, sizeof nb, b, lb));
        L->merges[i][0] = ia, L->merges[i][1] = ib;
    }
    L->n_merges = (int64_t)m->count;
    return TM_OK;
}

static tm_status parse_model(const jl *j, size_t o, tm__tok_spec *sp, const tm__json_node **vocab,
                             const tm__json_node **merges, const tm__json_node **unk)
{
    static const char *const k[] = {"type", "dropout", "unk_token", "continuing_subword_prefix",
                                    "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
                                    "vocab", "merges", NULL};
    const tm__json_node *n, *ty;
    tm_status st;
    if (N(j, o)->type != TM__JSON_OBJECT)
        return bad(j, TM_EFORMAT, "model", "expected an object");
    if ((st = only_keys(j, o, "model", k)) < 0 || (st = member(j, o, "type", TM__JSON_STRING, false, "model", &ty)) < 0)
        return st;
    if (ty && strcmp(ty->str, "BPE") != 0)
        return tm__errf(TM_EUNSUPPORTED, j->fn, "model.type: model \"%s\" is not supported (only BPE)", ty->str);
    if ((st = member(j, o, "dropout", TM__JSON_FLOAT, true, "model", &n)) < 0)
        return st;
    if (n)
        return bad(j, TM_EUNSUPPORTED, "model.dropout", "BPE dropout is not supported");
    static const char *const affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        if ((st = member(j, o, affix[i], TM__JSON_STRING, true, "model", &n)) < 0)
            return st;
        if (n && n->len)
            return tm__errf(TM_EUNSUPPORTED, j->fn, "model.%s: not supported", affix[i]);
    }
    if ((st = member(j, o, "unk_token", TM__JSON_STRING, true, "model", unk)) < 0 ||
        (st = get_bool(j, o, "fuse_unk", "model", false, &sp->fuse_unk)) < 0 ||
        (st = get_bool(j, o, "byte_fallback", "model", false, &sp->byte_fallback)) < 0 ||
        (st = get_bool(j, o, "ignore_merges", "model", false, &sp->ignore_merges)) < 0 ||
        (st = member(j, o, "vocab", TM__JSON_OBJECT, false, "model", vocab)) < 0 ||
        (st = member(j, o, "merges", TM__JSON_ARRAY, false, "model", merges)) < 0)
        return st;
    if (!*vocab || !*merges)
        return bad(j, TM_EFORMAT, "model", "needs \"vocab\" and \"merges\"");
    return TM_OK;
}

static tm_tokenizer *load_doc(const tm__json_doc *d, const char *fn)
{
    jl J = {d, fn}, *j = &J;
    tm__tok_spec sp = {0};
    loadst L = {0};
    tmpl T = {0};
    tm__idmap map = {0};
    tm_tokenizer *t = NULL;
    const tm__json_node *n, *vocab = NULL, *merges = NULL, *unk = NULL, *added = NULL;
    static const char *const rk[] = {"version", "truncation", "padding", "added_tokens", "normalizer",
                                     "pre_tokenizer", "post_processor", "decoder", "model", NULL};
    if (N(j, 0)->type != TM__JSON_OBJECT) {
        bad(j, TM_EFORMAT, "(root)", "expected an object");
        goto done;
    }
    if (only_keys(j, 0, "(root)", rk) < 0)
        goto done;
    static const char *const nulls[] = {"truncation", "padding", "normalizer"};
    for (int i = 0; i < 3; i++)
        if ((n = tm__json_get(d, 0, nulls[i])) && n->type != TM__JSON_NULL) {
            tm__errf(TM_EUNSUPPORTED, fn, "%s: only null is supported", nulls[i]);
            goto done;
        }
    if (!(n = tm__json_get(d, 0, "model"))) {
        bad(j, TM_EFORMAT, "model", "missing");
        goto done;
    }
    if (parse_model(j, idx(j, n), &sp, &vocab, &merges, &unk) < 0 ||
        parse_pretok(j, tm__json_get(d, 0, "pre_tokenizer"), &sp.pretok) < 0 ||
        parse_decoder(j, tm__json_get(d, 0, "decoder"), &sp.decoder) < 0 ||
        parse_post(j, tm__json_get(d, 0, "post_processor"), &T) < 0 ||
        member(j, 0, "added_tokens", TM__JSON_ARRAY, false, "(root)", &added) < 0)
        goto done;
    /* the id space: vocab ids and added ids together, 0..n-1 without gaps */
    int64_t maxid = -1;
    size_t c = idx(j, vocab) + 1;
    for (size_t i = 0; i < vocab->count; i++, c = N(j, c)->next) {
        if (N(j, c)->type != TM__JSON_INT) {
            char nb[64];
            tm__errf(TM_EFORMAT, fn, "model.vocab[\"%s\"]: id must be an integer",
                     tm__fmt_name(nb, sizeof nb, N(j, c)->key, N(j, c)->key_len));
            goto done;
        }
        if (N(j, c)->i < 0) {
            char nb[64];
            tm__errf(TM_EFORMAT, fn, "model.vocab[\"%s\"]: id %lld is out of range",
                     tm__fmt_name(nb, sizeof nb, N(j, c)->key, N(j, c)->key_len), (long long)N(j, c)->i);
            goto done;
        }
        maxid = N(j, c)->i > maxid ? N(j, c)->i : maxid;
    }
    size_t na = added ? added->count : 0, ca = added ? idx(j, added) + 1 : 0;
    for (size_t i = 0; i < na; i++, ca = N(j, ca)->next) {
        const tm__json_node *id = tm__json_get(d, ca, "id");
        if (id && id->type == TM__JSON_INT && id->i > maxid)
            maxid = id->i;
    }
    if (maxid < 0 || maxid >= INT32_MAX) {
        tm__errf(TM_EFORMAT, fn, "model.vocab: %s", maxid < 0 ? "empty" : "ids too large");
        goto done;
    }
    L.n = maxid + 1;
    L.strs = calloc((size_t)L.n, sizeof *L.strs);
    L.lens = calloc((size_t)L.n, sizeof *L.lens);
    L.kind = calloc((size_t)L.n, 1);
    if (!L.strs || !L.lens || !L.kind) {
        tm__errf(TM_ENOMEM, fn, "out of memory (%lld tokens)", (long long)L.n);
        goto done;
    }
    c = idx(j, vocab) + 1;
    for (size_t i = 0; i < vocab->count; i++, c = N(j, c)->next)
        if (set_token(j, &L, N(j, c)->i, N(j, c)->key, N(j, c)->key_len, TM__TOK_MODEL, "model.vocab") < 0)
            goto done;
    ca = added ? idx(j, added) + 1 : 0;
    for (size_t i = 0; i < na; i++, ca = N(j, ca)->next) {
        char path[48];
        snprintf(path, sizeof path, "added_tokens[%zu]", i);
        static const char *const ak[] = {"id", "content", "single_word", "lstrip", "rstrip", "normalized",
                                         "special", NULL};
        const tm__json_node *id, *content;
        bool sw, ls, rs, norm, spec;
        if (N(j, ca)->type != TM__JSON_OBJECT) {
            bad(j, TM_EFORMAT, path, "expected an object");
            goto done;
        }
        if (only_keys(j, ca, path, ak) < 0 || member(j, ca, "id", TM__JSON_INT, false, path, &id) < 0 ||
            member(j, ca, "content", TM__JSON_STRING, false, path, &content) < 0 ||
            get_bool(j, ca, "single_word", path, false, &sw) < 0 || get_bool(j, ca, "lstrip", path, false, &ls) < 0 ||
            get_bool(j, ca, "rstrip", path, false, &rs) < 0 || get_bool(j, ca, "special", path, false, &spec) < 0 ||
            get_bool(j, ca, "normalized", path, !spec, &norm) < 0)
            goto done;
        if (!id || !content) {
            bad(j, TM_EFORMAT, path, "needs \"id\" and \"content\"");
            goto done;
        }
        if (sw || ls || rs) {
            bad(j, TM_EUNSUPPORTED, path, "single_word, lstrip and rstrip must be false");
            goto done;
        }
        uint8_t kd = TM__TOK_ADDED | (spec ? TM__TOK_SPECIAL : 0) | (norm ? TM__TOK_NORMALIZED : 0);
        if (set_token(j, &L, id->i, content->str, content->len, kd, path) < 0)
            goto done;
    }
    for (int64_t i = 0; i < L.n; i++)
        if (!L.strs[i]) {
            tm__errf(TM_EFORMAT, fn, "model.vocab: no token has id %lld (ids must be 0..%lld without gaps)",
                     (long long)i, (long long)L.n - 1);
            goto done;
        }
    /* merges name model tokens by their strings */
    int64_t dup;
    for (int64_t i = 0; i < L.n; i++)
        if (!(L.kind[i] & TM__TOK_MODEL))
            L.strs[i] = NULL;
    tm_status mst = tm__idmap_build(&map, L.strs, L.lens, L.n, &dup, fn);
    if (mst < 0)
        goto done;
    if (parse_merges(j, merges, &L, &map) < 0)
        goto done;
    /* restore the added-only strings cleared for the merge map */
    ca = added ? idx(j, added) + 1 : 0;
    for (size_t i = 0; i < na; i++, ca = N(j, ca)->next) {
        const tm__json_node *id = tm__json_get(d, ca, "id"), *content = tm__json_get(d, ca, "content");
        if (!L.strs[id->i])
            L.strs[id->i] = (char *)content->str;
    }
    sp.unk_id = -1;
    if (unk) {
        sp.unk_id = tm__idmap_get(&map, unk->str, unk->len);
        if (sp.unk_id < 0) {
            bad(j, TM_EFORMAT, "model.unk_token", "not in the vocab");
            goto done;
        }
    }
    for (int i = 0; i < T.n_pre + T.n_post; i++) {
        int32_t id = i < T.n_pre ? T.pre[i] : T.post[i - T.n_pre];
        if (id >= L.n) {
            tm__errf(TM_EFORMAT, fn, "post_processor: template id %d is out of range [0, %lld)", id, (long long)L.n);
            goto done;
        }
    }
    sp.n_tokens = L.n;
    sp.strs = (const char *const *)L.strs;
    sp.str_lens = L.lens;
    sp.kind = L.kind;
    sp.n_merges = L.n_merges;
    sp.merges = (const int32_t(*)[2])L.merges;
    if (!(t = tm__tokenizer_build(&sp, fn)))
        goto done;
    t->tmpl_pre = T.pre, t->n_pre = T.n_pre, t->tmpl_post = T.post, t->n_post = T.n_post;
    T.pre = T.post = NULL;
    n = tm__json_get(d, 0, "post_processor");
    if (n && n->type != TM__JSON_NULL && !(t->post_json = tm__json_compact(d, idx(j, n)))) {
        tm__errf(TM_ENOMEM, fn, "out of memory");
        tm_tokenizer_free(t);
        t = NULL;
    }
done:
    free(L.strs), free(L.lens), free(L.kind), free(L.merges), free(map.slot);
    free(T.pre), free(T.post);
    return t;
}

tm_tokenizer *tm_tokenizer_from_json(const char *text, size_t len)
{
    tm__json_doc d = {0};
    if (!text) {
        TM_ERR(TM_EINVAL, "text is NULL");
        return NULL;
    }
    if (tm__json_parse(&d, text, len, __func__, "") < 0)
        return NULL;
    tm_tokenizer *t = load_doc(&d, __func__);
    tm__json_free(&d);
    return t;
}

tm_tokenizer *tm_tokenizer_load(const char *path)
{
    tm_tokenizer *t = NULL;
    char *buf = NULL;
    tm__json_doc d = {0};
    if (!path) {
        TM_ERR(TM_EINVAL, "path is NULL");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        TM_ERR(TM_EIO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, r;
    if (!(buf = malloc(cap)))
        goto oom;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *p = realloc(buf, cap * 2);
            if (!p)
                goto oom;
            buf = p, cap *= 2;
        }
    }
    if (ferror(f)) {
        TM_ERR(TM_EIO, "cannot read %s: %s", path, strerror(errno));
        goto done;
    }
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: ", path);
    if (tm__json_parse(&d, buf, n, __func__, prefix) < 0)
        goto done;
    t = load_doc(&d, __func__);
    if (!t) {
        char msg[512];
        const char *e = tm_last_error();
        size_t skip = strncmp(e, "tm_tokenizer_load: ", 19) == 0 ? 19 : 0;
        snprintf(msg, sizeof msg, "%s", e + skip);
        tm__errf(tm_last_status(), __func__, "%s: %s", path, msg);
    }
    goto done;
oom:
    TM_ERR(TM_ENOMEM, "out of memory reading %s", path);
done:
    fclose(f);
    free(buf);
    tm__json_free(&d);
    return t;
}
