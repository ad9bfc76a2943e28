/*
 * tokenizer_json_parts.c — the tokenizer.json loader's checked accessors
 * and the pre-tokenizer, decoder and post-processor sections.  The model,
 * vocabulary and added tokens are in tokenizer_json.c.
 */
#include "tokenizer_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tm__json_node *tm__tj_node(const tm__jl *j, size_t i) { return &j->d->nodes[i]; }
size_t tm__tj_idx(const tm__jl *j, const tm__json_node *n) { return (size_t)(n - j->d->nodes); }

tm_status tm__tj_bad(const tm__jl *j, tm_status s, const char *path, const char *what)
{
    return tm__errf(s, j->fn, "%s: %s", path, what);
}

/* Every key of object o must be in keys (NULL-terminated). */
tm_status tm__tj_only_keys(const tm__jl *j, size_t o, const char *path, const char *const *keys)
{
    size_t c = o + 1;
    for (size_t k = 0; k < tm__tj_node(j, o)->count; k++, c = tm__tj_node(j, c)->next) {
        bool ok = false;
        for (int i = 0; keys[i] && !ok; i++)
            ok = strcmp(keys[i], tm__tj_node(j, c)->key) == 0;
        if (!ok) {
            char nb[64];
            return tm__errf(TM_EUNSUPPORTED, j->fn, "%s: unknown key \"%s\"", path,
                            tm__fmt_name(nb, sizeof nb, tm__tj_node(j, c)->key, tm__tj_node(j, c)->key_len));
        }
    }
    return TM_OK;
}

/* An optional member: NULL when absent; type checked when present. */
tm_status tm__tj_member(const tm__jl *j, size_t o, const char *key, tm__json_type ty, bool nullable,
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

tm_status tm__tj_bool(const tm__jl *j, size_t o, const char *key, const char *path, bool dflt, bool *v)
{
    const tm__json_node *n;
    tm_status st = tm__tj_member(j, o, key, TM__JSON_BOOL, false, path, &n);
    *v = n ? n->i != 0 : dflt;
    return st;
}

static tm_status type_of(const tm__jl *j, size_t o, const char *path, const char **type)
{
    const tm__json_node *n;
    if (tm__tj_node(j, o)->type != TM__JSON_OBJECT)
        return tm__tj_bad(j, TM_EFORMAT, path, "expected an object");
    tm_status st = tm__tj_member(j, o, "type", TM__JSON_STRING, false, path, &n);
    if (st < 0)
        return st;
    if (!n)
        return tm__tj_bad(j, TM_EFORMAT, path, "missing \"type\"");
    *type = n->str;
    return TM_OK;
}

/* One pre-tokenizer step; *stage orders them: Digits (1), Split (2), ByteLevel (3). */
static tm_status pretok_step(const tm__jl *j, size_t o, const char *path, tm__pretok *p, int *stage)
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
        if ((st = tm__tj_only_keys(j, o, path, k)) < 0 || (st = tm__tj_bool(j, o, "individual_digits", path, false, &ind)) < 0)
            return st;
        if (!ind)
            return tm__tj_bad(j, TM_EUNSUPPORTED, path, "Digits with individual_digits false is not supported");
        want = 1;
        p->split_digits = true;
    } else if (!strcmp(ty, "Split")) {
        static const char *const k[] = {"type", "pattern", "behavior", "invert", NULL};
        const tm__json_node *pat, *beh, *re;
        bool inv;
        if ((st = tm__tj_only_keys(j, o, path, k)) < 0 || (st = tm__tj_bool(j, o, "invert", path, false, &inv)) < 0 ||
            (st = tm__tj_member(j, o, "pattern", TM__JSON_OBJECT, false, path, &pat)) < 0 ||
            (st = tm__tj_member(j, o, "behavior", TM__JSON_STRING, false, path, &beh)) < 0)
            return st;
        if (!pat || !beh)
            return tm__tj_bad(j, TM_EFORMAT, path, "Split needs \"pattern\" and \"behavior\"");
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if ((st = tm__tj_member(j, tm__tj_idx(j, pat), "Regex", TM__JSON_STRING, false, sub, &re)) < 0)
            return st;
        if (!re || pat->count != 1)
            return tm__tj_bad(j, TM_EUNSUPPORTED, sub, "only a {\"Regex\": ...} pattern is supported");
        if (strcmp(beh->str, "Isolated") != 0 || inv)
            return tm__tj_bad(j, TM_EUNSUPPORTED, path, "only behavior \"Isolated\" with invert false is supported");
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
        if ((st = tm__tj_only_keys(j, o, path, k)) < 0 ||
            (st = tm__tj_bool(j, o, "add_prefix_space", path, true, &p->add_prefix_space)) < 0 ||
            (st = tm__tj_bool(j, o, "trim_offsets", path, true, &p->trim_offsets)) < 0 ||
            (st = tm__tj_bool(j, o, "use_regex", path, true, &ure)) < 0)
            return st;
        if (ure) {
            if (p->regex != TM__RE_NONE)
                return tm__tj_bad(j, TM_EUNSUPPORTED, path, "ByteLevel use_regex after a Split is not supported");
            p->regex = TM__RE_GPT2;
        }
        p->byte_level = true;
        want = 3;
    } else {
        return tm__errf(TM_EUNSUPPORTED, j->fn, "%s.type: pre-tokenizer \"%s\" is not supported", path, ty);
    }
    if (want <= *stage)
        return tm__tj_bad(j, TM_EUNSUPPORTED, path, "pre-tokenizers must come in the order Digits, Split, ByteLevel");
    *stage = want;
    return TM_OK;
}

tm_status tm__tj_pretok(const tm__jl *j, const tm__json_node *n, tm__pretok *p)
{
    memset(p, 0, sizeof *p);
    if (!n || n->type == TM__JSON_NULL)
        return TM_OK;
    p->present = true;
    const char *ty;
    int stage = 0;
    tm_status st = type_of(j, tm__tj_idx(j, n), "pre_tokenizer", &ty);
    if (st < 0)
        return st;
    if (!strcmp(ty, "BertPreTokenizer")) {
        static const char *const k[] = {"type", NULL};
        p->bert = true;
        return tm__tj_only_keys(j, tm__tj_idx(j, n), "pre_tokenizer", k);
    }
    if (strcmp(ty, "Sequence") != 0)
        return pretok_step(j, tm__tj_idx(j, n), "pre_tokenizer", p, &stage);
    static const char *const k[] = {"type", "pretokenizers", NULL};
    const tm__json_node *list;
    if ((st = tm__tj_only_keys(j, tm__tj_idx(j, n), "pre_tokenizer", k)) < 0 ||
        (st = tm__tj_member(j, tm__tj_idx(j, n), "pretokenizers", TM__JSON_ARRAY, false, "pre_tokenizer", &list)) < 0)
        return st;
    if (!list)
        return tm__tj_bad(j, TM_EFORMAT, "pre_tokenizer", "Sequence needs \"pretokenizers\"");
    size_t c = tm__tj_idx(j, list) + 1;
    for (size_t i = 0; i < list->count; i++, c = tm__tj_node(j, c)->next) {
        char path[64];
        snprintf(path, sizeof path, "pre_tokenizer.pretokenizers[%zu]", i);
        if ((st = pretok_step(j, c, path, p, &stage)) < 0)
            return st;
    }
    return TM_OK;
}

tm_status tm__tj_decoder(const tm__jl *j, const tm__json_node *n, tm__tok_spec *sp)
{
    int *dec = &sp->decoder;
    *dec = 0;
    if (!n || n->type == TM__JSON_NULL)
        return tm__tj_bad(j, TM_EUNSUPPORTED, "decoder", "a null decoder (tokens joined by spaces) is not supported");
    const char *ty;
    tm_status st = type_of(j, tm__tj_idx(j, n), "decoder", &ty);
    size_t list = tm__tj_idx(j, n), count = 1, c = list;
    if (st < 0)
        return st;
    if (!strcmp(ty, "Sequence")) {
        static const char *const k[] = {"type", "decoders", NULL};
        const tm__json_node *l;
        if ((st = tm__tj_only_keys(j, list, "decoder", k)) < 0 ||
            (st = tm__tj_member(j, list, "decoders", TM__JSON_ARRAY, false, "decoder", &l)) < 0)
            return st;
        if (!l)
            return tm__tj_bad(j, TM_EFORMAT, "decoder", "Sequence needs \"decoders\"");
        count = l->count, c = tm__tj_idx(j, l) + 1;
    }
    for (size_t i = 0; i < count; i++, c = tm__tj_node(j, c)->next) {
        char path[64];
        snprintf(path, sizeof path, count == 1 && c == list ? "decoder" : "decoder.decoders[%zu]", i);
        if ((st = type_of(j, c, path, &ty)) < 0)
            return st;
        if (!strcmp(ty, "ByteLevel")) {
            static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
            bool b;
            if ((st = tm__tj_only_keys(j, c, path, k)) < 0 || (st = tm__tj_bool(j, c, "add_prefix_space", path, 1, &b)) < 0 ||
                (st = tm__tj_bool(j, c, "trim_offsets", path, 1, &b)) < 0 ||
                (st = tm__tj_bool(j, c, "use_regex", path, 1, &b)) < 0)
                return st;
            *dec |= TM__DEC_BYTELEVEL;
        } else if (!strcmp(ty, "WordPiece") && count == 1 && c == list) {
            static const char *const k[] = {"type", "prefix", "cleanup", NULL};
            const tm__json_node *pre;
            sp->dec_prefix = "##";
            if ((st = tm__tj_only_keys(j, c, path, k)) < 0 ||
                (st = tm__tj_bool(j, c, "cleanup", path, true, &sp->dec_cleanup)) < 0 ||
                (st = tm__tj_member(j, c, "prefix", TM__JSON_STRING, false, path, &pre)) < 0)
                return st;
            if (pre && memchr(pre->str, 0, pre->len))
                return tm__tj_bad(j, TM_EUNSUPPORTED, "decoder.prefix", "must not hold NUL");
            if (pre)
                sp->dec_prefix = pre->str;
            *dec |= TM__DEC_WORDPIECE;
        } else if (!strcmp(ty, "ByteFallback") || !strcmp(ty, "Fuse")) {
            static const char *const k[] = {"type", NULL};
            if ((st = tm__tj_only_keys(j, c, path, k)) < 0)
                return st;
            *dec |= ty[0] == 'F' ? TM__DEC_FUSE : TM__DEC_BYTEFALLBACK;
        } else {
            return tm__errf(TM_EUNSUPPORTED, j->fn, "%s.type: decoder \"%s\" is not supported", path, ty);
        }
    }
    if ((*dec & TM__DEC_BYTELEVEL) && (*dec & TM__DEC_BYTEFALLBACK))
        return tm__tj_bad(j, TM_EUNSUPPORTED, "decoder", "ByteLevel together with ByteFallback is not supported");
    if (!*dec)
        return tm__tj_bad(j, TM_EUNSUPPORTED, "decoder", "an empty decoder Sequence is not supported");
    return TM_OK;
}

static tm_status tmpl_add(tm__tj_tmpl *t, bool after, const tm__json_node *ids, const tm__jl *j, const char *path)
{
    size_t c = tm__tj_idx(j, ids) + 1;
    for (size_t i = 0; i < ids->count; i++, c = tm__tj_node(j, c)->next) {
        if (tm__tj_node(j, c)->type != TM__JSON_INT || tm__tj_node(j, c)->i < 0 || tm__tj_node(j, c)->i > INT32_MAX)
            return tm__tj_bad(j, TM_EFORMAT, path, "ids must be non-negative integers");
        int32_t **a = after ? &t->post : &t->pre;
        int *n = after ? &t->n_post : &t->n_pre;
        int32_t *p = realloc(*a, (size_t)(*n + 1) * sizeof *p);
        if (!p)
            return tm__errf(TM_ENOMEM, j->fn, "out of memory");
        p[(*n)++] = (int32_t)tm__tj_node(j, c)->i;
        *a = p;
    }
    return TM_OK;
}

/* TemplateProcessing: the "single" template around sequence A. */
static tm_status parse_template(const tm__jl *j, size_t o, const char *path, tm__tj_tmpl *t)
{
    static const char *const k[] = {"type", "single", "pair", "special_tokens", NULL};
    const tm__json_node *single, *pair, *sp;
    tm_status st;
    char p2[96];
    if ((st = tm__tj_only_keys(j, o, path, k)) < 0 || (st = tm__tj_member(j, o, "single", TM__JSON_ARRAY, false, path, &single)) < 0 ||
        (st = tm__tj_member(j, o, "pair", TM__JSON_ARRAY, false, path, &pair)) < 0 ||
        (st = tm__tj_member(j, o, "special_tokens", TM__JSON_OBJECT, false, path, &sp)) < 0)
        return st;
    if (!single || !pair || !sp)
        return tm__tj_bad(j, TM_EFORMAT, path, "TemplateProcessing needs single, pair and special_tokens");
    bool seen_a = false;
    size_t c = tm__tj_idx(j, single) + 1;
    for (size_t i = 0; i < single->count; i++, c = tm__tj_node(j, c)->next) {
        snprintf(p2, sizeof p2, "%s.single[%zu]", path, i);
        const tm__json_node *it = tm__tj_node(j, c), *s, *id;
        if (it->type != TM__JSON_OBJECT || it->count != 1)
            return tm__tj_bad(j, TM_EFORMAT, p2, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
        if ((st = tm__tj_member(j, c, "Sequence", TM__JSON_OBJECT, false, p2, &s)) < 0)
            return st;
        if (s) {
            if ((st = tm__tj_member(j, tm__tj_idx(j, s), "id", TM__JSON_STRING, false, p2, &id)) < 0)
                return st;
            if (!id || strcmp(id->str, "A") != 0 || seen_a)
                return tm__tj_bad(j, TM_EFORMAT, p2, "the single template holds sequence \"A\" once");
            seen_a = true;
            continue;
        }
        if ((st = tm__tj_member(j, c, "SpecialToken", TM__JSON_OBJECT, false, p2, &s)) < 0)
            return st;
        if (!s)
            return tm__tj_bad(j, TM_EFORMAT, p2, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
        if ((st = tm__tj_member(j, tm__tj_idx(j, s), "id", TM__JSON_STRING, false, p2, &id)) < 0)
            return st;
        const tm__json_node *def = id ? tm__json_get(j->d, tm__tj_idx(j, sp), id->str) : NULL, *ids;
        if (!def || def->type != TM__JSON_OBJECT)
            return tm__tj_bad(j, TM_EFORMAT, p2, "special token missing from special_tokens");
        if ((st = tm__tj_member(j, tm__tj_idx(j, def), "ids", TM__JSON_ARRAY, false, p2, &ids)) < 0)
            return st;
        if (!ids)
            return tm__tj_bad(j, TM_EFORMAT, p2, "special token without ids");
        if ((st = tmpl_add(t, seen_a, ids, j, p2)) < 0)
            return st;
    }
    if (!seen_a)
        return tm__tj_bad(j, TM_EFORMAT, path, "the single template has no sequence \"A\"");
    return TM_OK;
}

tm_status tm__tj_post(const tm__jl *j, const tm__json_node *n, tm__tj_tmpl *t)
{
    if (!n || n->type == TM__JSON_NULL)
        return TM_OK;
    const char *ty;
    size_t o = tm__tj_idx(j, n), count = 1, c = o;
    tm_status st = type_of(j, o, "post_processor", &ty);
    if (st < 0)
        return st;
    if (!strcmp(ty, "Sequence")) {
        static const char *const k[] = {"type", "processors", NULL};
        const tm__json_node *l;
        if ((st = tm__tj_only_keys(j, o, "post_processor", k)) < 0 ||
            (st = tm__tj_member(j, o, "processors", TM__JSON_ARRAY, false, "post_processor", &l)) < 0)
            return st;
        if (!l)
            return tm__tj_bad(j, TM_EFORMAT, "post_processor", "Sequence needs \"processors\"");
        count = l->count, c = tm__tj_idx(j, l) + 1;
    }
    int ntmpl = 0;
    for (size_t i = 0; i < count; i++, c = tm__tj_node(j, c)->next) {
        char path[64];
        snprintf(path, sizeof path, c == o ? "post_processor" : "post_processor.processors[%zu]", i);
        if ((st = type_of(j, c, path, &ty)) < 0)
            return st;
        if (!strcmp(ty, "ByteLevel")) {
            static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
            if ((st = tm__tj_only_keys(j, c, path, k)) < 0)
                return st;
        } else if (!strcmp(ty, "TemplateProcessing")) {
            if (ntmpl++)
                return tm__tj_bad(j, TM_EUNSUPPORTED, path, "more than one TemplateProcessing");
            if ((st = parse_template(j, c, path, t)) < 0)
                return st;
        } else {
            return tm__errf(TM_EUNSUPPORTED, j->fn, "%s.type: post-processor \"%s\" is not supported", path, ty);
        }
    }
    return TM_OK;
}


tm_status tm__tj_normalizer(const tm__jl *j, const tm__json_node *n, tm__bertnorm *nm)
{
    memset(nm, 0, sizeof *nm);
    nm->strip_json = -1;
    if (!n || n->type == TM__JSON_NULL)
        return TM_OK;
    const char *ty;
    size_t o = tm__tj_idx(j, n);
    tm_status st = type_of(j, o, "normalizer", &ty);
    if (st < 0)
        return st;
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
