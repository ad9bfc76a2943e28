/*
 * tokenizer_save.c — writing tokenizer.json as Hugging Face lays it out,
 * and the tokenizer's hash.
 */
#include "tokenizer_impl.h"
#include "json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct wbuf { char *p; size_t n, cap; bool oom; } wbuf;

static void put(wbuf *w, const char *s, size_t n)
{
    if (w->oom)
        return;
    if (w->n + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->n + n + 1)
            cap *= 2;
        char *p = realloc(w->p, cap);
        if (!p) {
            w->oom = true;
            return;
        }
        w->p = p, w->cap = cap;
    }
    memcpy(w->p + w->n, s, n);
    w->n += n;
    w->p[w->n] = '\0';
}

static void puts_(wbuf *w, const char *s) { put(w, s, strlen(s)); }

/* A JSON string as serde_json escapes it. */
static void put_str(wbuf *w, const char *s, size_t n)
{
    put(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(w, s + run, i - run);
        run = i + 1;
        char e[8];
        switch (c) {
        case '"': puts_(w, "\\\""); break;
        case '\\': puts_(w, "\\\\"); break;
        case '\n': puts_(w, "\\n"); break;
        case '\r': puts_(w, "\\r"); break;
        case '\t': puts_(w, "\\t"); break;
        case '\b': puts_(w, "\\b"); break;
        case '\f': puts_(w, "\\f"); break;
        default:
            snprintf(e, sizeof e, "\\u%04x", c);
            puts_(w, e);
        }
    }
    put(w, s + run, n - run);
    put(w, "\"", 1);
}

static void put_node(wbuf *w, const tm__json_doc *d, size_t i)
{
    const tm__json_node *n = &d->nodes[i];
    char num[40];
    switch (n->type) {
    case TM__JSON_NULL: puts_(w, "null"); break;
    case TM__JSON_BOOL: puts_(w, n->i ? "true" : "false"); break;
    case TM__JSON_INT: snprintf(num, sizeof num, "%lld", (long long)n->i); puts_(w, num); break;
    case TM__JSON_FLOAT: snprintf(num, sizeof num, "%.17g", n->f); puts_(w, num); break;
    case TM__JSON_STRING: put_str(w, n->str, n->len); break;
    case TM__JSON_ARRAY:
    case TM__JSON_OBJECT: {
        bool obj = n->type == TM__JSON_OBJECT;
        put(w, obj ? "{" : "[", 1);
        size_t c = i + 1;
        for (size_t k = 0; k < n->count; k++, c = d->nodes[c].next) {
            if (k)
                put(w, ",", 1);
            if (obj) {
                put_str(w, d->nodes[c].key, d->nodes[c].key_len);
                put(w, ":", 1);
            }
            put_node(w, d, c);
        }
        put(w, obj ? "}" : "]", 1);
        break;
    }
    }
}

char *tm__json_compact(const tm__json_doc *d, size_t node);
char *tm__json_compact(const tm__json_doc *d, size_t node)
{
    wbuf w = {0};
    put_node(&w, d, node);
    if (w.oom) {
        free(w.p);
        return NULL;
    }
    return w.p;
}

static void put_bytelevel(wbuf *w, const tm__pretok *p, bool use_regex)
{
    char b[128];
    snprintf(b, sizeof b, "{\"type\":\"ByteLevel\",\"add_prefix_space\":%s,\"trim_offsets\":%s,\"use_regex\":%s}",
             p->add_prefix_space ? "true" : "false", p->trim_offsets ? "true" : "false", use_regex ? "true" : "false");
    puts_(w, b);
}

static void put_pretok(wbuf *w, const tm__pretok *p)
{
    if (p->bert) {
        puts_(w, "{\"type\":\"BertPreTokenizer\"}");
        return;
    }
    if (!p->present && !p->byte_level && !p->split_digits && p->regex == TM__RE_NONE) {
        puts_(w, "null");
        return;
    }
    bool split = p->regex != TM__RE_NONE && (p->regex_in_split || !p->byte_level);
    int steps = p->split_digits + split + p->byte_level;
    if (steps > 1)
        puts_(w, "{\"type\":\"Sequence\",\"pretokenizers\":[");
    if (p->split_digits)
        puts_(w, "{\"type\":\"Digits\",\"individual_digits\":true}");
    if (split) {
        if (p->split_digits)
            puts_(w, ",");
        puts_(w, "{\"type\":\"Split\",\"pattern\":{\"Regex\":");
        const char *re = p->regex == TM__RE_GPT2 ? tm__re_gpt2_str : tm__re_llama3_str;
        put_str(w, re, strlen(re));
        puts_(w, "},\"behavior\":\"Isolated\",\"invert\":false}");
    }
    if (p->byte_level) {
        if (steps > 1)
            puts_(w, ",");
        put_bytelevel(w, p, p->regex != TM__RE_NONE && !split);
    }
    if (steps > 1)
        puts_(w, "]}");
}

static void put_normalizer(wbuf *w, const tm__bertnorm *nm)
{
    if (!nm->present) {
        puts_(w, "null");
        return;
    }
    char b[200];
    snprintf(b, sizeof b,
             "{\"type\":\"BertNormalizer\",\"clean_text\":%s,\"handle_chinese_chars\":%s,\"strip_accents\":%s,"
             "\"lowercase\":%s}",
             nm->clean_text ? "true" : "false", nm->handle_chinese ? "true" : "false",
             nm->strip_json < 0 ? "null" : nm->strip_json ? "true" : "false", nm->lowercase ? "true" : "false");
    puts_(w, b);
}

static void put_decoder(wbuf *w, const tm_tokenizer *t)
{
    int dec = t->decoder;
    if (dec & TM__DEC_WORDPIECE) {
        puts_(w, "{\"type\":\"WordPiece\",\"prefix\":");
        put_str(w, t->dec_prefix, t->dec_prefix_len);
        puts_(w, t->dec_cleanup ? ",\"cleanup\":true}" : ",\"cleanup\":false}");
        return;
    }
    if (dec & TM__DEC_BYTELEVEL) {
        puts_(w, "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true}");
        return;
    }
    bool two = (dec & TM__DEC_BYTEFALLBACK) && (dec & TM__DEC_FUSE);
    if (two)
        puts_(w, "{\"type\":\"Sequence\",\"decoders\":[");
    if (dec & TM__DEC_BYTEFALLBACK)
        puts_(w, "{\"type\":\"ByteFallback\"}");
    if (two)
        puts_(w, ",");
    if (dec & TM__DEC_FUSE)
        puts_(w, "{\"type\":\"Fuse\"}");
    if (two)
        puts_(w, "]}");
}

char *tm_tokenizer_to_json(const tm_tokenizer *t, size_t *len)
{
    if (!t) {
        TM_ERR(TM_EINVAL, "tokenizer is NULL");
        return NULL;
    }
    wbuf w = {0};
    char num[64];
    puts_(&w, "{\n  \"version\": \"1.0\",\n  \"truncation\": ");
    puts_(&w, t->extra.trunc_json ? t->extra.trunc_json : "null");
    puts_(&w, ",\n  \"padding\": ");
    puts_(&w, t->extra.pad_json ? t->extra.pad_json : "null");
    puts_(&w, ",\n  \"added_tokens\": [");
    bool first = true;
    for (int k = 0; k < t->n_added; k++) {
        int32_t id = t->added[k];
        snprintf(num, sizeof num, "%s\n    {\"id\": %d, \"content\": ", first ? "" : ",", id);
        puts_(&w, num);
        put_str(&w, t->str[id], t->str_len[id]);
        puts_(&w, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": ");
        puts_(&w, (t->kind[id] & TM__TOK_NORMALIZED) ? "true" : "false");
        puts_(&w, ", \"special\": ");
        puts_(&w, (t->kind[id] & TM__TOK_SPECIAL) ? "true}" : "false}");
        first = false;
    }
    puts_(&w, first ? "],\n  \"normalizer\": " : "\n  ],\n  \"normalizer\": ");
    put_normalizer(&w, &t->norm);
    puts_(&w, ",\n  \"pre_tokenizer\": ");
    put_pretok(&w, &t->pretok);
    puts_(&w, ",\n  \"post_processor\": ");
    puts_(&w, t->post_json ? t->post_json : "null");
    puts_(&w, ",\n  \"decoder\": ");
    put_decoder(&w, t);
    if (t->model == TM__MODEL_WORDPIECE) {
        puts_(&w, ",\n  \"model\": {\n    \"type\": \"WordPiece\",\n    \"unk_token\": ");
        put_str(&w, t->str[t->unk_id], t->str_len[t->unk_id]);
        puts_(&w, ",\n    \"continuing_subword_prefix\": ");
        put_str(&w, t->wp_prefix, t->wp_prefix_len);
        snprintf(num, sizeof num, ",\n    \"max_input_chars_per_word\": %lld,\n", (long long)t->wp_max_chars);
        puts_(&w, num);
        goto vocab;
    }
    puts_(&w, ",\n  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": ");
    if (t->unk_id >= 0)
        put_str(&w, t->str[t->unk_id], t->str_len[t->unk_id]);
    else
        puts_(&w, "null");
    puts_(&w, ",\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n");
    char flags[160];
    snprintf(flags, sizeof flags, "    \"fuse_unk\": %s,\n    \"byte_fallback\": %s,\n    \"ignore_merges\": %s,\n",
             t->fuse_unk ? "true" : "false", t->byte_fallback ? "true" : "false", t->ignore_merges ? "true" : "false");
    puts_(&w, flags);
vocab:
    puts_(&w, "    \"vocab\": {");
    first = true;
    for (int64_t i = 0; i < t->n; i++) {
        if (!(t->kind[i] & TM__TOK_MODEL))
            continue;
        puts_(&w, first ? "\n      " : ",\n      ");
        put_str(&w, t->str[i], t->str_len[i]);
        snprintf(num, sizeof num, ": %lld", (long long)i);
        puts_(&w, num);
        first = false;
    }
    if (t->model == TM__MODEL_WORDPIECE) {
        puts_(&w, "\n    }\n  }\n}\n");
        goto end;
    }
    puts_(&w, "\n    },\n    \"merges\": [");
    for (int64_t r = 0; r < t->n_merges; r++) {
        int32_t a = t->merges[r][0], b = t->merges[r][1];
        puts_(&w, r ? ",\n      [" : "\n      [");
        put_str(&w, t->str[a], t->str_len[a]);
        puts_(&w, ", ");
        put_str(&w, t->str[b], t->str_len[b]);
        puts_(&w, "]");
    }
    puts_(&w, t->n_merges ? "\n    ]\n  }\n}\n" : "]\n  }\n}\n");
end:
    if (w.oom) {
        free(w.p);
        TM_ERR(TM_ENOMEM, "out of memory");
        return NULL;
    }
    if (len)
        *len = w.n;
    return w.p;
}

tm_status tm_tokenizer_save(const tm_tokenizer *t, const char *path)
{
    if (!t || !path)
        return TM_ERR(TM_EINVAL, "tokenizer or path is NULL");
    size_t n;
    char *js = tm_tokenizer_to_json(t, &n);
    if (!js)
        return tm_last_status();
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    tm_status st = TM_OK;
    FILE *f = NULL;
    if (!tmp) {
        st = TM_ERR(TM_ENOMEM, "out of memory");
        goto done;
    }
    snprintf(tmp, pl + 16, "%s.tmp%d", path, (int)getpid());
    if (!(f = fopen(tmp, "wb"))) {
        st = TM_ERR(TM_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    bool ok = fwrite(js, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        st = TM_ERR(TM_EIO, "cannot write %s: %s", path, strerror(errno));
        remove(tmp);
    }
done:
    free(tmp);
    free(js);
    return st;
}

/* FNV-1a over a canonical description: the same on every platform. */
static void h_bytes(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ s[i]) * 0x100000001b3ull;
}

static void h_u64(uint64_t *h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    h_bytes(h, b, 8);
}

uint64_t tm_tokenizer_hash(const tm_tokenizer *t)
{
    uint64_t h = 0xcbf29ce484222325ull;
    if (!t)
        return 0;
    h_u64(&h, (uint64_t)t->n);
    for (int64_t i = 0; i < t->n; i++) {
        h_u64(&h, t->kind[i]);
        h_u64(&h, t->str_len[i]);
        h_bytes(&h, t->str[i], t->str_len[i]);
    }
    h_u64(&h, (uint64_t)t->n_merges);
    for (int64_t r = 0; r < t->n_merges; r++)
        h_u64(&h, (uint64_t)(uint32_t)t->merges[r][0] << 32 | (uint32_t)t->merges[r][1]);
    const tm__pretok *p = &t->pretok;
    h_u64(&h, (uint64_t)p->split_digits | (uint64_t)p->regex << 8 | (uint64_t)p->byte_level << 16 |
                  (uint64_t)p->add_prefix_space << 24);
    h_u64(&h, (uint64_t)t->ignore_merges | (uint64_t)t->byte_fallback << 8 | (uint64_t)t->fuse_unk << 16);
    h_u64(&h, (uint64_t)t->unk_id);
    if (t->model == TM__MODEL_WORDPIECE || p->bert || t->norm.present) {
        /* only for what BPE files lack, so their hashes stay as they were */
        const tm__bertnorm *nm = &t->norm;
        h_u64(&h, (uint64_t)t->model | (uint64_t)p->bert << 8 | (uint64_t)nm->present << 16 |
                      (uint64_t)nm->clean_text << 17 | (uint64_t)nm->handle_chinese << 18 |
                      (uint64_t)nm->strip_accents << 19 | (uint64_t)nm->lowercase << 20);
        h_u64(&h, (uint64_t)t->wp_max_chars);
        h_u64(&h, t->wp_prefix_len);
        h_bytes(&h, t->wp_prefix, t->wp_prefix_len);
    }
    h_u64(&h, (uint64_t)t->n_pre << 32 | (uint64_t)t->n_post);
    for (int i = 0; i < t->n_pre; i++)
        h_u64(&h, (uint64_t)t->tmpl_pre[i]);
    for (int i = 0; i < t->n_post; i++)
        h_u64(&h, (uint64_t)t->tmpl_post[i]);
    return h;
}
