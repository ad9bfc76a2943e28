/*
 * tokenizer_json.c — loading Hugging Face tokenizer.json (BPE models).
 *
 * Strict: every key is known or refused, every value has the type HF
 * writes; what Foundry cannot reproduce exactly (normalizers, other
 * pre-tokenizers, regexes other than the GPT-2 and Llama-3 patterns,
 * lstrip/rstrip/single_word, dropout, subword prefixes) is
 * TM_EUNSUPPORTED naming the JSON path, never silently ignored.  The
 * sections other than the model are read in tokenizer_json_parts.c.
 */
#include "tokenizer_impl.h"
#include "json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


char *tm__json_compact(const tm__json_doc *d, size_t node);

typedef struct loadst {
    int64_t n;
    char **strs; size_t *lens; uint8_t *kind;
    int32_t (*merges)[2]; int64_t n_merges;
} loadst;

static tm_status set_token(const tm__jl *j, loadst *L, int64_t id, const char *s, size_t len, uint8_t kind,
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

static tm_status parse_merges(const tm__jl *j, const tm__json_node *m, loadst *L, const tm__idmap *map)
{
    L->merges = malloc((m->count ? m->count : 1) * sizeof *L->merges);
    if (!L->merges)
        return tm__errf(TM_ENOMEM, j->fn, "out of memory (%zu merges)", m->count);
    size_t c = tm__tj_idx(j, m) + 1;
    for (size_t i = 0; i < m->count; i++, c = tm__tj_node(j, c)->next) {
        const tm__json_node *e = tm__tj_node(j, c);
        const char *a, *b;
        size_t la, lb;
        char nb[64];
        if (e->type == TM__JSON_STRING) {
            const char *sp = memchr(e->str, ' ', e->len);
            if (!sp || memchr(sp + 1, ' ', e->len - (size_t)(sp + 1 - e->str)))
                return tm__errf(TM_EFORMAT, j->fn, "model.merges[%zu]: \"%s\" is not two tokens split by one space",
                                i, tm__fmt_name(nb, sizeof nb, e->str, e->len));
            a = e->str, la = (size_t)(sp - e->str), b = sp + 1, lb = e->len - la - 1;
        } else if (e->type == TM__JSON_ARRAY && e->count == 2 && tm__tj_node(j, c + 1)->type == TM__JSON_STRING &&
                   tm__tj_node(j, c + 2)->type == TM__JSON_STRING) {
            a = tm__tj_node(j, c + 1)->str, la = tm__tj_node(j, c + 1)->len, b = tm__tj_node(j, c + 2)->str, lb = tm__tj_node(j, c + 2)->len;
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

/* model.type "WordPiece": HF's defaults for absent keys ("[UNK]", "##", 100). */
static tm_status parse_wordpiece(const tm__jl *j, size_t o, tm__tok_spec *sp, const tm__json_node **vocab,
                                 const tm__json_node **unk)
{
    static const char *const k[] = {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word",
                                    "vocab", NULL};
    const tm__json_node *n;
    tm_status st;
    sp->model = TM__MODEL_WORDPIECE;
    sp->wp_prefix = "##";
    sp->wp_max_chars = 100;
    if ((st = tm__tj_only_keys(j, o, "model", k)) < 0 ||
        (st = tm__tj_member(j, o, "unk_token", TM__JSON_STRING, false, "model", unk)) < 0 ||
        (st = tm__tj_member(j, o, "continuing_subword_prefix", TM__JSON_STRING, false, "model", &n)) < 0)
        return st;
    if (n)
        sp->wp_prefix = n->str;
    if (n && (memchr(n->str, 0, n->len) || n->len == 0))
        return tm__tj_bad(j, TM_EUNSUPPORTED, "model.continuing_subword_prefix", "must be non-empty without NUL");
    if ((st = tm__tj_member(j, o, "max_input_chars_per_word", TM__JSON_INT, false, "model", &n)) < 0)
        return st;
    if (n) {
        if (n->i < 0)
            return tm__tj_bad(j, TM_EFORMAT, "model.max_input_chars_per_word", "must not be negative");
        sp->wp_max_chars = n->i;
    }
    if ((st = tm__tj_member(j, o, "vocab", TM__JSON_OBJECT, false, "model", vocab)) < 0)
        return st;
    if (!*vocab)
        return tm__tj_bad(j, TM_EFORMAT, "model", "needs \"vocab\"");
    return TM_OK;
}

static tm_status parse_model(const tm__jl *j, size_t o, tm__tok_spec *sp, const tm__json_node **vocab,
                             const tm__json_node **merges, const tm__json_node **unk)
{
    static const char *const k[] = {"type", "dropout", "unk_token", "continuing_subword_prefix",
                                    "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
                                    "vocab", "merges", NULL};
    const tm__json_node *n, *ty;
    tm_status st;
    if (tm__tj_node(j, o)->type != TM__JSON_OBJECT)
        return tm__tj_bad(j, TM_EFORMAT, "model", "expected an object");
    if ((st = tm__tj_member(j, o, "type", TM__JSON_STRING, false, "model", &ty)) < 0)
        return st;
    if (ty && !strcmp(ty->str, "WordPiece"))
        return parse_wordpiece(j, o, sp, vocab, unk);
    if (ty && strcmp(ty->str, "BPE") != 0)
        return tm__errf(TM_EUNSUPPORTED, j->fn, "model.type: model \"%s\" is not supported (only BPE and WordPiece)",
                        ty->str);
    if ((st = tm__tj_only_keys(j, o, "model", k)) < 0)
        return st;
    if ((st = tm__tj_member(j, o, "dropout", TM__JSON_FLOAT, true, "model", &n)) < 0)
        return st;
    if (n)
        return tm__tj_bad(j, TM_EUNSUPPORTED, "model.dropout", "BPE dropout is not supported");
    static const char *const affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        if ((st = tm__tj_member(j, o, affix[i], TM__JSON_STRING, true, "model", &n)) < 0)
            return st;
        if (n && n->len)
            return tm__errf(TM_EUNSUPPORTED, j->fn, "model.%s: not supported", affix[i]);
    }
    if ((st = tm__tj_member(j, o, "unk_token", TM__JSON_STRING, true, "model", unk)) < 0 ||
        (st = tm__tj_bool(j, o, "fuse_unk", "model", false, &sp->fuse_unk)) < 0 ||
        (st = tm__tj_bool(j, o, "byte_fallback", "model", false, &sp->byte_fallback)) < 0 ||
        (st = tm__tj_bool(j, o, "ignore_merges", "model", false, &sp->ignore_merges)) < 0 ||
        (st = tm__tj_member(j, o, "vocab", TM__JSON_OBJECT, false, "model", vocab)) < 0 ||
        (st = tm__tj_member(j, o, "merges", TM__JSON_ARRAY, false, "model", merges)) < 0)
        return st;
    if (!*vocab || !*merges)
        return tm__tj_bad(j, TM_EFORMAT, "model", "needs \"vocab\" and \"merges\"");
    return TM_OK;
}

static tm_tokenizer *load_doc(const tm__json_doc *d, const char *fn)
{
    tm__jl J = {d, fn}, *j = &J;
    tm__tok_spec sp = {0};
    loadst L = {0};
    tm__tj_tmpl T = {0};
    tm__idmap map = {0};
    tm_tokenizer_json_defaults defs = {0};
    tm__tj_extra extra = {0};
    tm_tokenizer *t = NULL;
    const tm__json_node *n, *vocab = NULL, *merges = NULL, *unk = NULL, *added = NULL;
    static const char *const rk[] = {"version", "truncation", "padding", "added_tokens", "normalizer",
                                     "pre_tokenizer", "post_processor", "decoder", "model", NULL};
    if (tm__tj_node(j, 0)->type != TM__JSON_OBJECT) {
        tm__tj_bad(j, TM_EFORMAT, "(root)", "expected an object");
        goto done;
    }
    if (tm__tj_only_keys(j, 0, "(root)", rk) < 0)
        goto done;
    if (!(n = tm__json_get(d, 0, "model"))) {
        tm__tj_bad(j, TM_EFORMAT, "model", "missing");
        goto done;
    }
    if (parse_model(j, tm__tj_idx(j, n), &sp, &vocab, &merges, &unk) < 0 ||
        tm__tj_normalizer(j, tm__json_get(d, 0, "normalizer"), &sp.norm) < 0 ||
        tm__tj_pretok(j, tm__json_get(d, 0, "pre_tokenizer"), &sp.pretok) < 0 ||
        tm__tj_decoder(j, tm__json_get(d, 0, "decoder"), &sp) < 0 ||
        tm__tj_trunc_pad(j, &defs, &extra) < 0 ||
        tm__tj_post(j, tm__json_get(d, 0, "post_processor"), &T) < 0 ||
        tm__tj_member(j, 0, "added_tokens", TM__JSON_ARRAY, false, "(root)", &added) < 0)
        goto done;
    /* the id space: vocab ids and added ids together, 0..n-1 without gaps */
    int64_t maxid = -1;
    size_t c = tm__tj_idx(j, vocab) + 1;
    for (size_t i = 0; i < vocab->count; i++, c = tm__tj_node(j, c)->next) {
        if (tm__tj_node(j, c)->type != TM__JSON_INT) {
            char nb[64];
            tm__errf(TM_EFORMAT, fn, "model.vocab[\"%s\"]: id must be an integer",
                     tm__fmt_name(nb, sizeof nb, tm__tj_node(j, c)->key, tm__tj_node(j, c)->key_len));
            goto done;
        }
        if (tm__tj_node(j, c)->i < 0) {
            char nb[64];
            tm__errf(TM_EFORMAT, fn, "model.vocab[\"%s\"]: id %lld is out of range",
                     tm__fmt_name(nb, sizeof nb, tm__tj_node(j, c)->key, tm__tj_node(j, c)->key_len), (long long)tm__tj_node(j, c)->i);
            goto done;
        }
        maxid = tm__tj_node(j, c)->i > maxid ? tm__tj_node(j, c)->i : maxid;
    }
    size_t na = added ? added->count : 0, ca = added ? tm__tj_idx(j, added) + 1 : 0;
    for (size_t i = 0; i < na; i++, ca = tm__tj_node(j, ca)->next) {
        const tm__json_node *id = tm__json_get(d, ca, "id");
        if (id && id->type == TM__JSON_INT && id->i > maxid)
            maxid = id->i;
    }
    if (maxid < 0) {
        tm__tj_bad(j, TM_EFORMAT, "model.vocab", "empty");
        goto done;
    }
    /* without gaps the largest id is below the number of entries; checked
     * before sizing any table by it */
    if ((uint64_t)maxid >= (uint64_t)vocab->count + na) {
        tm__errf(TM_EFORMAT, fn, "model.vocab: id %lld with only %zu tokens: ids must be 0..n-1 without gaps",
                 (long long)maxid, vocab->count + na);
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
    c = tm__tj_idx(j, vocab) + 1;
    for (size_t i = 0; i < vocab->count; i++, c = tm__tj_node(j, c)->next)
        if (set_token(j, &L, tm__tj_node(j, c)->i, tm__tj_node(j, c)->key, tm__tj_node(j, c)->key_len, TM__TOK_MODEL, "model.vocab") < 0)
            goto done;
    ca = added ? tm__tj_idx(j, added) + 1 : 0;
    for (size_t i = 0; i < na; i++, ca = tm__tj_node(j, ca)->next) {
        char path[48];
        snprintf(path, sizeof path, "added_tokens[%zu]", i);
        static const char *const ak[] = {"id", "content", "single_word", "lstrip", "rstrip", "normalized",
                                         "special", NULL};
        const tm__json_node *id, *content;
        bool sw, ls, rs, norm, spec;
        if (tm__tj_node(j, ca)->type != TM__JSON_OBJECT) {
            tm__tj_bad(j, TM_EFORMAT, path, "expected an object");
            goto done;
        }
        if (tm__tj_only_keys(j, ca, path, ak) < 0 || tm__tj_member(j, ca, "id", TM__JSON_INT, false, path, &id) < 0 ||
            tm__tj_member(j, ca, "content", TM__JSON_STRING, false, path, &content) < 0 ||
            tm__tj_bool(j, ca, "single_word", path, false, &sw) < 0 || tm__tj_bool(j, ca, "lstrip", path, false, &ls) < 0 ||
            tm__tj_bool(j, ca, "rstrip", path, false, &rs) < 0 || tm__tj_bool(j, ca, "special", path, false, &spec) < 0 ||
            tm__tj_bool(j, ca, "normalized", path, !spec, &norm) < 0)
            goto done;
        if (!id || !content) {
            tm__tj_bad(j, TM_EFORMAT, path, "needs \"id\" and \"content\"");
            goto done;
        }
        if (sw || ls || rs) {
            tm__tj_bad(j, TM_EUNSUPPORTED, path, "single_word, lstrip and rstrip must be false");
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
    if (merges && parse_merges(j, merges, &L, &map) < 0)
        goto done;
    /* restore the added-only strings cleared for the merge map */
    ca = added ? tm__tj_idx(j, added) + 1 : 0;
    for (size_t i = 0; i < na; i++, ca = tm__tj_node(j, ca)->next) {
        const tm__json_node *id = tm__json_get(d, ca, "id"), *content = tm__json_get(d, ca, "content");
        if (!L.strs[id->i])
            L.strs[id->i] = (char *)content->str;
    }
    sp.unk_id = -1;
    if (sp.model == TM__MODEL_WORDPIECE && !unk) {
        static const tm__json_node dflt = {.type = TM__JSON_STRING, .str = "[UNK]", .len = 5};
        unk = &dflt;
    }
    if (unk) {
        sp.unk_id = tm__idmap_get(&map, unk->str, unk->len);
        if (sp.unk_id < 0) {
            tm__tj_bad(j, TM_EFORMAT, "model.unk_token", "not in the vocab");
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
    t->extra = extra, t->defaults = defs;
    extra.trunc_json = extra.pad_json = NULL;
    n = tm__json_get(d, 0, "post_processor");
    if (n && n->type != TM__JSON_NULL && !(t->post_json = tm__json_compact(d, tm__tj_idx(j, n)))) {
        tm__errf(TM_ENOMEM, fn, "out of memory");
        tm_tokenizer_free(t);
        t = NULL;
    }
done:
    free(L.strs), free(L.lens), free(L.kind), free(L.merges), free(map.slot);
    free(T.pre), free(T.post);
    free(extra.trunc_json), free(extra.pad_json);
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
