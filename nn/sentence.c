/*
 * sentence.c — sentence-transformers model directories (foundry/bert.h):
 * modules.json, the pooling config, sentence_bert_config.json, the
 * tokenizer, and batched encoding.
 *
 * Batching follows sentence-transformers: texts are sorted by length
 * (longest first, here by token count), embedded batch_size at a time, and
 * put back in their order.  Since the model packs real tokens, padding
 * never costs compute; sorting still groups equal lengths so attention runs
 * as few, larger calls.
 */
#include "bert_impl.h"

#include "../io/json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_JSON_MAX (1 << 20)
#define TOKENIZER_MAX ((size_t)64 << 20)

struct tm_sentence_encoder {
    tm_bert *model;
    tm_tokenizer *tok;
    tm_bert_pool pool;
    bool normalize;
    int64_t max_len;    /* specials included */
    int32_t pre[8], post[8]; /* the template's ids around the text */
    int npre, npost;
};

void tm_sentence_encoder_free(tm_sentence_encoder *e)
{
    if (!e) return;
    tm_bert_free(e->model);
    tm_tokenizer_free(e->tok);
    free(e);
}

/* Parses `dir`/`name` into *d; `required` false: a missing file leaves *d
 * empty (d->n == 0) and returns TM_OK. */
static tm_status read_json(const char *dir, const char *name,
                           tm__json_doc *d, bool required, const char *fn)
{
    char path[4096], prefix[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!required) {
        FILE *f = fopen(path, "rb");
        if (!f) return TM_OK;
        fclose(f);
    }
    char *text = NULL;
    size_t len = 0;
    tm_status st = tm__bert_read_file(path, SMALL_JSON_MAX, &text, &len, fn);
    snprintf(prefix, sizeof prefix, "%s: ", name);
    if (!st) st = tm__json_parse(d, text, len, fn, prefix);
    free(text);
    if (!st && d->nodes[0].type != TM__JSON_OBJECT &&
        d->nodes[0].type != TM__JSON_ARRAY) {
        tm__json_free(d);
        st = tm__errf(TM_EFORMAT, fn, "%s: not a JSON object", name);
    }
    return st;
}

/* modules.json: Transformer (path ""), Pooling (its path kept in pool_dir),
 * then optionally Normalize; anything else is unsupported. */
static tm_status read_modules(const char *dir, tm_sentence_encoder *e,
                              char *pool_dir, size_t pool_size,
                              const char *fn)
{
    tm__json_doc d = {0};
    tm_status st = read_json(dir, "modules.json", &d, false, fn);
    if (st) return st;
    snprintf(pool_dir, pool_size, "1_Pooling");
    e->normalize = false;
    if (d.n == 0) return TM_OK; /* a bare transformers dir: mean pooling */
    const tm__json_node *root = &d.nodes[0];
    if (root->type != TM__JSON_ARRAY) {
        st = tm__errf(TM_EFORMAT, fn, "modules.json: not a JSON array");
        goto done;
    }
    static const char *want[3] = {"sentence_transformers.models.Transformer",
                                  "sentence_transformers.models.Pooling",
                                  "sentence_transformers.models.Normalize"};
    size_t c = 1, k = 0;
    for (; k < root->count; k++, c = d.nodes[c].next) {
        const tm__json_node *type = d.nodes[c].type == TM__JSON_OBJECT
                                        ? tm__json_get(&d, c, "type")
                                        : NULL;
        const tm__json_node *path = d.nodes[c].type == TM__JSON_OBJECT
                                        ? tm__json_get(&d, c, "path")
                                        : NULL;
        if (!type || type->type != TM__JSON_STRING) {
            st = tm__errf(TM_EFORMAT, fn,
                          "modules.json: module %zu has no \"type\" string",
                          k);
            goto done;
        }
        if (k >= 3 || strcmp(type->str, want[k])) {
            st = tm__errf(TM_EUNSUPPORTED, fn,
                          "modules.json: module %zu is \"%s\"; supported: "
                          "Transformer, Pooling, then optionally Normalize",
                          k, type->str);
            goto done;
        }
        if (k == 1 && path && path->type == TM__JSON_STRING) {
            if (strstr(path->str, "..") || path->str[0] == '/') {
                st = tm__errf(TM_EFORMAT, fn,
                              "modules.json: pooling path \"%s\" leaves the "
                              "model directory", path->str);
                goto done;
            }
            snprintf(pool_dir, pool_size, "%s", path->str);
        }
        if (k == 2) e->normalize = true;
    }
    if (k < 2)
        st = tm__errf(TM_EUNSUPPORTED, fn,
                      "modules.json: %zu modules; Transformer and Pooling "
                      "are needed", k);
done:
    tm__json_free(&d);
    return st;
}

static tm_status read_pooling(const char *dir, const char *pool_dir,
                              tm_sentence_encoder *e, const char *fn)
{
    char name[600];
    snprintf(name, sizeof name, "%s/config.json", pool_dir);
    tm__json_doc d = {0};
    tm_status st = read_json(dir, name, &d, false, fn);
    e->pool = TM_BERT_POOL_MEAN;
    if (st || d.n == 0) return st;
    static const struct {
        const char *key;
        int pool; /* -1: unsupported when true */
    } modes[] = {{"pooling_mode_mean_tokens", TM_BERT_POOL_MEAN},
                 {"pooling_mode_cls_token", TM_BERT_POOL_CLS},
                 {"pooling_mode_max_tokens", TM_BERT_POOL_MAX},
                 {"pooling_mode_mean_sqrt_len_tokens", -1},
                 {"pooling_mode_weightedmean_tokens", -1},
                 {"pooling_mode_lasttoken", -1}};
    int on = 0;
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        const tm__json_node *n = tm__json_get(&d, 0, modes[k].key);
        if (!n || n->type == TM__JSON_NULL) continue;
        if (n->type != TM__JSON_BOOL) {
            st = tm__errf(TM_EFORMAT, fn, "%s: \"%s\" must be true or false",
                          name, modes[k].key);
            goto done;
        }
        if (!n->i) continue;
        if (modes[k].pool < 0) {
            st = tm__errf(TM_EUNSUPPORTED, fn,
                          "%s: \"%s\" is not supported (mean, cls or max)",
                          name, modes[k].key);
            goto done;
        }
        e->pool = (tm_bert_pool)modes[k].pool;
        on++;
    }
    if (on != 1)
        st = tm__errf(TM_EUNSUPPORTED, fn,
                      "%s: %d pooling modes are on; exactly one is supported",
                      name, on);
done:
    tm__json_free(&d);
    return st;
}

static tm_status read_max_len(const char *dir, tm_sentence_encoder *e,
                              const char *fn)
{
    tm__json_doc d = {0};
    tm_status st = read_json(dir, "sentence_bert_config.json", &d, false, fn);
    int64_t cap = e->model->cfg.max_position_embeddings;
    e->max_len = 512;
    if (st) return st;
    if (d.n) {
        const tm__json_node *n = tm__json_get(&d, 0, "max_seq_length");
        if (n && n->type != TM__JSON_NULL) {
            if (n->type != TM__JSON_INT || n->i < 1)
                st = tm__errf(TM_EFORMAT, fn,
                              "sentence_bert_config.json: \"max_seq_length\" "
                              "must be a positive integer");
            else
                e->max_len = n->i;
        }
    }
    if (e->max_len > cap) e->max_len = cap;
    tm__json_free(&d);
    return st;
}

/* The template's ids before and after a text: encode a probe with and
 * without specials and find the bare ids inside (works for any single
 * TemplateProcessing, [CLS] A [SEP] included). */
static tm_status find_template(tm_sentence_encoder *e, const char *fn)
{
    tm_token_buf bare = {0}, full = {0};
    static const char probe[] = "a";
    tm_status st = tm_tokenizer_encode_ex(e->tok, probe, 1, false, &bare);
    if (!st) st = tm_tokenizer_encode_ex(e->tok, probe, 1, true, &full);
    if (!st && bare.n == 0)
        st = tm__errf(TM_EUNSUPPORTED, fn,
                      "tokenizer.json: the probe text \"a\" gives no ids");
    if (!st) {
        int64_t extra = full.n - bare.n, k = 0;
        bool found = false;
        for (; extra >= 0 && k <= extra && !found; k++)
            found = !memcmp(full.ids + k, bare.ids,
                            (size_t)bare.n * sizeof *bare.ids);
        k--;
        if (!found || k > 8 || extra - k > 8)
            st = tm__errf(TM_EUNSUPPORTED, fn,
                          "tokenizer.json: the post-processor's template is "
                          "not specials around the text");
        else {
            e->npre = (int)k;
            e->npost = (int)(extra - k);
            if (k) memcpy(e->pre, full.ids, (size_t)k * sizeof *full.ids);
            if (extra - k)
                memcpy(e->post, full.ids + k + bare.n,
                       (size_t)(extra - k) * sizeof *full.ids);
        }
    }
    tm_token_buf_free(&bare);
    tm_token_buf_free(&full);
    return st;
}

tm_sentence_encoder *tm_sentence_encoder_load(const char *dir)
{
    const char *fn = __func__;
    if (!dir || !*dir) {
        TM_ERR(TM_EINVAL, "dir is NULL or empty");
        return NULL;
    }
    tm_sentence_encoder *e = calloc(1, sizeof *e);
    if (!e) {
        TM_ERR(TM_ENOMEM, "out of memory");
        return NULL;
    }
    char pool_dir[512], path[4096];
    if (read_modules(dir, e, pool_dir, sizeof pool_dir, fn) ||
        read_pooling(dir, pool_dir, e, fn))
        goto fail;
    if (!(e->model = tm_bert_load(dir))) {
        tm__relabel_error(fn, tm_last_status());
        goto fail;
    }
    if (read_max_len(dir, e, fn)) goto fail;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (!(e->tok = tm_tokenizer_load(path))) {
        tm__errf(tm_last_status(), fn, "%s", tm_last_error());
        goto fail;
    }
    if (find_template(e, fn)) goto fail;
    if (e->npre + e->npost >= e->max_len) {
        TM_ERR(TM_EFORMAT, "max_seq_length %lld leaves no room for text",
               (long long)e->max_len);
        goto fail;
    }
    return e;
fail:
    tm_sentence_encoder_free(e);
    return NULL;
}

int64_t tm_sentence_encoder_dim(const tm_sentence_encoder *e)
{
    return e ? e->model->cfg.hidden_size : -1;
}

int64_t tm_sentence_encoder_max_seq_length(const tm_sentence_encoder *e)
{
    return e ? e->max_len : -1;
}

bool tm_sentence_encoder_normalizes(const tm_sentence_encoder *e)
{
    return e && e->normalize;
}

tm_bert *tm_sentence_encoder_model(const tm_sentence_encoder *e)
{
    return e ? e->model : NULL;
}

const tm_tokenizer *tm_sentence_encoder_tokenizer(const tm_sentence_encoder *e)
{
    return e ? e->tok : NULL;
}

static tm_status push(tm_token_buf *b, const int32_t *ids, int64_t n)
{
    if (n == 0) return TM_OK; /* ids may be NULL then */
    if (b->n + n > b->cap) {
        int64_t cap = b->cap ? b->cap : 16;
        while (cap < b->n + n) cap *= 2;
        int32_t *p = realloc(b->ids, (size_t)cap * sizeof *p);
        if (!p) return TM_ERR(TM_ENOMEM, "out of memory");
        b->ids = p;
        b->cap = cap;
    }
    memcpy(b->ids + b->n, ids, (size_t)n * sizeof *ids);
    b->n += n;
    return TM_OK;
}

tm_status tm_sentence_encoder_tokenize(const tm_sentence_encoder *e,
                                       const char *text, size_t len,
                                       tm_token_buf *out)
{
    const char *fn = __func__;
    if (!e || !out || (!text && len))
        return tm__errf(TM_EINVAL, fn, "%s is NULL",
                        !e ? "encoder" : !out ? "out" : "text");
    size_t bad = 0;
    if (len && !tm__utf8_valid((const unsigned char *)text, len, &bad))
        return tm__errf(TM_EINVAL, fn, "text is not valid UTF-8 (byte %zu)",
                        bad);
    tm_token_buf bare = {0};
    tm_status st = tm_tokenizer_encode_ex(e->tok, text ? text : "", len,
                                          false, &bare);
    if (st) return tm__relabel_error(fn, st);
    int64_t keep = e->max_len - e->npre - e->npost;
    if (bare.n > keep) bare.n = keep;
    int64_t n0 = out->n;
    if ((st = push(out, e->pre, e->npre)) ||
        (st = push(out, bare.ids, bare.n)) ||
        (st = push(out, e->post, e->npost)))
        out->n = n0;
    tm_token_buf_free(&bare);
    return st;
}

typedef struct item {
    int64_t index, start, len; /* into the id pool */
} item;

static int longest_first(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Embeds items[0..n) into out rows by their index. */
static tm_status encode_batch(tm_sentence_encoder *e, const item *it,
                              int64_t n, const int32_t *pool, bool normalize,
                              float *out)
{
    int64_t T = it[0].len, H = e->model->cfg.hidden_size;
    int64_t *ids = calloc((size_t)(n * T), sizeof *ids),
            *mask = calloc((size_t)(n * T), sizeof *mask);
    tm_tensor *ti = NULL, *tmk = NULL, *y = NULL;
    tm_status st = TM_OK;
    if (!ids || !mask) {
        st = TM_ERR(TM_ENOMEM, "out of memory");
        goto done;
    }
    for (int64_t b = 0; b < n; b++)
        for (int64_t t = 0; t < it[b].len; t++) {
            ids[b * T + t] = pool[it[b].start + t];
            mask[b * T + t] = 1;
        }
    int64_t shape[2] = {n, T};
    if (!(ti = tm_from_buffer(ids, shape, 2, TM_I64)) ||
        !(tmk = tm_from_buffer(mask, shape, 2, TM_I64)) ||
        !(y = tm_bert_pool_embed(e->model, ti, tmk, e->pool, normalize))) {
        st = tm_last_status();
        goto done;
    }
    float *rows = malloc((size_t)(n * H) * sizeof *rows);
    if (!rows) {
        st = TM_ERR(TM_ENOMEM, "out of memory");
        goto done;
    }
    st = tm_copy_to_buffer(y, rows, (size_t)(n * H) * sizeof *rows, TM_F32);
    for (int64_t b = 0; !st && b < n; b++)
        memcpy(out + it[b].index * H, rows + b * H, (size_t)H * sizeof *rows);
    free(rows);
done:
    free(ids);
    free(mask);
    tm_free(ti);
    tm_free(tmk);
    tm_free(y);
    return st;
}

tm_status tm_sentence_encoder_encode_ex(tm_sentence_encoder *e,
                                        const char *const *texts, int64_t n,
                                        int64_t batch_size, bool normalize,
                                        float *out)
{
    const char *fn = __func__;
    if (!e || (n > 0 && (!texts || !out)))
        return tm__errf(TM_EINVAL, fn, "%s is NULL",
                        !e ? "encoder" : !texts ? "texts" : "out");
    if (n < 0) return tm__errf(TM_EINVAL, fn, "n = %lld < 0", (long long)n);
    if (n == 0) return TM_OK;
    if (batch_size <= 0) batch_size = 32;
    for (int64_t i = 0; i < n; i++)
        if (!texts[i])
            return tm__errf(TM_EINVAL, fn, "texts[%lld] is NULL",
                            (long long)i);
    item *it = malloc((size_t)n * sizeof *it);
    tm_token_buf pool = {0};
    tm_status st = it ? TM_OK : TM_ERR(TM_ENOMEM, "out of memory");
    for (int64_t i = 0; !st && i < n; i++) {
        it[i].index = i;
        it[i].start = pool.n;
        st = tm_sentence_encoder_tokenize(e, texts[i], strlen(texts[i]),
                                          &pool);
        it[i].len = pool.n - it[i].start;
        if (st)
            st = tm__errf(st, fn, "texts[%lld]: %s", (long long)i,
                          tm_last_error());
    }
    if (!st) qsort(it, (size_t)n, sizeof *it, longest_first);
    for (int64_t b = 0; !st && b < n; b += batch_size) {
        int64_t k = n - b < batch_size ? n - b : batch_size;
        st = encode_batch(e, it + b, k, pool.ids, normalize, out);
        if (st) tm__relabel_error(fn, st);
    }
    free(it);
    tm_token_buf_free(&pool);
    return st;
}

tm_status tm_sentence_encoder_encode(tm_sentence_encoder *e,
                                     const char *const *texts, int64_t n,
                                     int64_t batch_size, float *out)
{
    if (!e)
        return tm__errf(TM_EINVAL, __func__, "encoder is NULL");
    return tm_sentence_encoder_encode_ex(e, texts, n, batch_size,
                                         e->normalize, out);
}
