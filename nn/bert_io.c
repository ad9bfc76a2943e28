/*
 * bert_io.c — tm_bert_load: a BertModel from config.json and
 * model.safetensors (foundry/bert.h).  Config keys Foundry does not use are
 * ignored (real files carry many); keys it uses are type-checked, and every
 * tensor's shape is checked against the config before anything runs.
 */
#include "bert_impl.h"

#include "foundry/io.h"
#include "foundry/ops.h"

#include "../io/json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX (1 << 20)

tm_status tm__bert_read_file(const char *path, size_t max, char **text,
                             size_t *len, const char *fn)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tm__errf(TM_EIO, fn, "cannot open '%s': %s", path,
                        strerror(errno));
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    bool err = ferror(f);
    fclose(f);
    if (!buf) return tm__errf(TM_ENOMEM, fn, "out of memory");
    if (err || n > max) {
        free(buf);
        if (err) return tm__errf(TM_EIO, fn, "cannot read '%s'", path);
        return tm__errf(TM_EFORMAT, fn, "'%s' is larger than %zu bytes",
                        path, max);
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return TM_OK;
}

/* ------------------------------------------------------------ config */

static tm_status get_int(const tm__json_doc *d, const char *key,
                         int64_t *out, bool required, int64_t min,
                         const char *fn)
{
    const tm__json_node *n = tm__json_get(d, 0, key);
    if (!n) {
        if (required)
            return tm__errf(TM_EFORMAT, fn, "config.json: missing key \"%s\"",
                            key);
        return TM_OK;
    }
    if (n->type != TM__JSON_INT)
        return tm__errf(TM_EFORMAT, fn,
                        "config.json: \"%s\" must be an integer", key);
    if (n->i < min)
        return tm__errf(TM_EFORMAT, fn,
                        "config.json: \"%s\" is %lld, must be >= %lld", key,
                        (long long)n->i, (long long)min);
    *out = n->i;
    return TM_OK;
}

static tm_status get_str(const tm__json_doc *d, const char *key,
                         const char **out, const char *fn)
{
    const tm__json_node *n = tm__json_get(d, 0, key);
    if (!n || n->type == TM__JSON_NULL) return TM_OK;
    if (n->type != TM__JSON_STRING)
        return tm__errf(TM_EFORMAT, fn, "config.json: \"%s\" must be a string",
                        key);
    *out = n->str;
    return TM_OK;
}

static tm_status parse_config(const tm__json_doc *d, tm_bert_config *c,
                              const char *fn)
{
    tm_status st;
    if (d->nodes[0].type != TM__JSON_OBJECT)
        return tm__errf(TM_EFORMAT, fn, "config.json: not a JSON object");
    const char *model_type = NULL, *act = NULL, *pos_type = NULL;
    if ((st = get_str(d, "model_type", &model_type, fn)) ||
        (st = get_str(d, "hidden_act", &act, fn)) ||
        (st = get_str(d, "position_embedding_type", &pos_type, fn)))
        return st;
    if (model_type && strcmp(model_type, "bert"))
        return tm__errf(TM_EUNSUPPORTED, fn,
                        "config.json: model_type \"%s\" is not \"bert\"",
                        model_type);
    if (pos_type && strcmp(pos_type, "absolute"))
        return tm__errf(TM_EUNSUPPORTED, fn,
                        "config.json: position_embedding_type \"%s\" is not "
                        "supported (only \"absolute\")", pos_type);
    if (act) {
        if (!strcmp(act, "gelu")) c->hidden_act = TM_BERT_GELU;
        else if (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh"))
            c->hidden_act = TM_BERT_GELU_TANH;
        else if (!strcmp(act, "relu")) c->hidden_act = TM_BERT_RELU;
        else
            return tm__errf(TM_EUNSUPPORTED, fn,
                            "config.json: hidden_act \"%s\" is not supported "
                            "(gelu, gelu_new, relu)", act);
    }
    if ((st = get_int(d, "vocab_size", &c->vocab_size, true, 1, fn)) ||
        (st = get_int(d, "hidden_size", &c->hidden_size, true, 1, fn)) ||
        (st = get_int(d, "num_hidden_layers", &c->num_hidden_layers, true, 0,
                      fn)) ||
        (st = get_int(d, "num_attention_heads", &c->num_attention_heads, true,
                      1, fn)) ||
        (st = get_int(d, "intermediate_size", &c->intermediate_size, true, 1,
                      fn)) ||
        (st = get_int(d, "max_position_embeddings",
                      &c->max_position_embeddings, true, 1, fn)) ||
        (st = get_int(d, "type_vocab_size", &c->type_vocab_size, false, 1,
                      fn)) ||
        (st = get_int(d, "pad_token_id", &c->pad_token_id, false, 0, fn)))
        return st;
    const int64_t lim = (int64_t)1 << 24; /* keeps every product in int64 */
    if (c->vocab_size > lim || c->hidden_size > lim ||
        c->intermediate_size > lim || c->max_position_embeddings > lim ||
        c->type_vocab_size > lim || c->num_hidden_layers > 4096)
        return tm__errf(TM_EFORMAT, fn, "config.json: a size is too large");
    if (c->hidden_size % c->num_attention_heads)
        return tm__errf(TM_EFORMAT, fn,
                        "config.json: hidden_size %lld is not a multiple of "
                        "num_attention_heads %lld",
                        (long long)c->hidden_size,
                        (long long)c->num_attention_heads);
    const tm__json_node *n = tm__json_get(d, 0, "layer_norm_eps");
    if (n) {
        if (n->type != TM__JSON_INT && n->type != TM__JSON_FLOAT)
            return tm__errf(TM_EFORMAT, fn,
                            "config.json: \"layer_norm_eps\" must be a number");
        if (!(n->f >= 0) || !isfinite(n->f))
            return tm__errf(TM_EFORMAT, fn,
                            "config.json: \"layer_norm_eps\" must be >= 0");
        c->layer_norm_eps = n->f;
    }
    return TM_OK;
}

tm_status tm__bert_config_from_json(const char *text, size_t len,
                                    tm_bert_config *c, const char *fn)
{
    *c = (tm_bert_config){.type_vocab_size = 2, .layer_norm_eps = 1e-12,
                          .hidden_act = TM_BERT_GELU};
    tm__json_doc d = {0};
    tm_status st = tm__json_parse(&d, text, len, fn, "config.json: ");
    if (st) return st;
    st = parse_config(&d, c, fn);
    tm__json_free(&d);
    return st;
}

/* ------------------------------------------------------------ weights */

typedef struct loader {
    tm_safetensors *st;
    const char *prefix; /* "" or "bert." */
    const char *fn;
} loader;

/* The F32 tensor `name` (under the prefix) of the given shape: a view of
 * the mapping when stored F32, a widened copy for F16/BF16. */
static tm_tensor *weight(const loader *L, const char *name, int64_t d0,
                         int64_t d1)
{
    char full[256];
    snprintf(full, sizeof full, "%s%s", L->prefix, name);
    int i = tm_safetensors_find(L->st, full);
    if (i < 0) {
        tm__errf(TM_EFORMAT, L->fn, "model.safetensors: missing tensor '%s'",
                 full);
        return NULL;
    }
    int nd = d1 > 0 ? 2 : 1;
    int64_t want[2] = {d0, d1};
    int ndim = tm_safetensors_ndim(L->st, i);
    const int64_t *shape = tm_safetensors_shape(L->st, i);
    bool ok = ndim == nd;
    for (int k = 0; ok && k < nd; k++) ok = shape[k] == want[k];
    if (!ok) {
        char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
        tm__errf(TM_EFORMAT, L->fn,
                 "model.safetensors: tensor '%s' has shape %s, the config "
                 "needs %s", full, tm__fmt_shape(shape, ndim, a, sizeof a),
                 tm__fmt_shape(want, nd, b, sizeof b));
        return NULL;
    }
    tm_dtype dt;
    if (tm_safetensors_dtype(L->st, i, &dt) ||
        (dt != TM_F32 && dt != TM_F16 && dt != TM_BF16)) {
        tm__errf(TM_EDTYPE, L->fn,
                 "model.safetensors: tensor '%s' is %s; F32, F16 or BF16 "
                 "expected", full, tm_safetensors_dtype_name(L->st, i));
        return NULL;
    }
    tm_tensor *t = tm_safetensors_get(L->st, full);
    if (!t || dt == TM_F32) {
        if (!t) tm__relabel_error(L->fn, tm_last_status());
        return t;
    }
    tm_tensor *w = tm_to_dtype(t, TM_F32);
    tm_free(t);
    return w;
}

/* query, key and value stacked into one [3H, H] weight and [3H] bias. */
static tm_status fuse_qkv(const loader *L, int64_t l, int64_t H,
                          tm__bert_layer *y)
{
    static const char *parts[3] = {"query", "key", "value"};
    tm_tensor *w[3] = {0}, *b[3] = {0};
    tm_status st = TM_OK;
    for (int p = 0; p < 3; p++) {
        char n[128];
        snprintf(n, sizeof n, "encoder.layer.%lld.attention.self.%s.weight",
                 (long long)l, parts[p]);
        if (!(w[p] = weight(L, n, H, H))) goto fail;
        snprintf(n, sizeof n, "encoder.layer.%lld.attention.self.%s.bias",
                 (long long)l, parts[p]);
        if (!(b[p] = weight(L, n, H, 0))) goto fail;
    }
    if (!(y->qkv_w = tm_cat(w, 3, 0)) || !(y->qkv_b = tm_cat(b, 3, 0)))
        goto fail;
    goto done;
fail:
    st = tm_last_status();
    if (st == TM_OK) st = TM_ENOMEM;
done:
    for (int p = 0; p < 3; p++) {
        tm_free(w[p]);
        tm_free(b[p]);
    }
    return st;
}

/* *w [out, in] replaced by the same values stored as [in, out] and viewed
 * back as [out, in]: tm_linear's product x · wᵀ then reads wᵀ row-major,
 * which the GEMM packs with straight copies, or reads in place when x has
 * few rows (one sentence), instead of transposing every weight on every
 * call. */
static tm_status store_transposed(tm_tensor **w)
{
    tm_tensor *t = tm_transpose(*w, 0, 1);
    tm_tensor *c = t ? tm_contiguous(t) : NULL;
    tm_tensor *v = c ? tm_transpose(c, 0, 1) : NULL;
    tm_free(t);
    tm_free(c);
    if (!v) return tm_last_status() ? tm_last_status() : TM_ENOMEM;
    tm_free(*w);
    *w = v;
    return TM_OK;
}

static tm_status load_layer(const loader *L, const tm_bert_config *c,
                            int64_t l, tm__bert_layer *y)
{
    int64_t H = c->hidden_size, I = c->intermediate_size;
    tm_status st = fuse_qkv(L, l, H, y);
    if (st) return st;
    struct {
        tm_tensor **dst;
        const char *name;
        int64_t d0, d1;
    } t[] = {
        {&y->ao_w, "attention.output.dense.weight", H, H},
        {&y->ao_b, "attention.output.dense.bias", H, 0},
        {&y->ln1_w, "attention.output.LayerNorm.weight", H, 0},
        {&y->ln1_b, "attention.output.LayerNorm.bias", H, 0},
        {&y->in_w, "intermediate.dense.weight", I, H},
        {&y->in_b, "intermediate.dense.bias", I, 0},
        {&y->out_w, "output.dense.weight", H, I},
        {&y->out_b, "output.dense.bias", H, 0},
        {&y->ln2_w, "output.LayerNorm.weight", H, 0},
        {&y->ln2_b, "output.LayerNorm.bias", H, 0},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        char n[160];
        snprintf(n, sizeof n, "encoder.layer.%lld.%s", (long long)l,
                 t[k].name);
        if (!(*t[k].dst = weight(L, n, t[k].d0, t[k].d1)))
            return tm_last_status();
    }
    tm_tensor **lin[4] = {&y->qkv_w, &y->ao_w, &y->in_w, &y->out_w};
    for (int k = 0; k < 4; k++)
        if ((st = store_transposed(lin[k]))) return st;
    return TM_OK;
}

static void free_layer(tm__bert_layer *y)
{
    tm_tensor **p = &y->qkv_w;
    for (size_t k = 0; k < sizeof *y / sizeof(tm_tensor *); k++) tm_free(p[k]);
}

void tm_bert_free(tm_bert *m)
{
    if (!m) return;
    if (m->layers)
        for (int64_t l = 0; l < m->cfg.num_hidden_layers; l++)
            free_layer(&m->layers[l]);
    free(m->layers);
    tm_free(m->word);
    tm_free(m->pos);
    tm_free(m->type);
    tm_free(m->eln_w);
    tm_free(m->eln_b);
    free(m);
}

const tm_bert_config *tm_bert_config_of(const tm_bert *m)
{
    if (!m) {
        TM_ERR(TM_EINVAL, "model is NULL");
        return NULL;
    }
    return &m->cfg;
}

tm_bert *tm_bert_load(const char *dir)
{
    const char *fn = __func__;
    if (!dir || !*dir) {
        TM_ERR(TM_EINVAL, "dir is NULL or empty");
        return NULL;
    }
    char path[4096];
    char *text = NULL;
    size_t len = 0;
    tm_bert *m = calloc(1, sizeof *m);
    loader L = {.prefix = "", .fn = fn};
    if (!m) {
        TM_ERR(TM_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (tm__bert_read_file(path, CONFIG_MAX, &text, &len, fn) ||
        tm__bert_config_from_json(text, len, &m->cfg, fn))
        goto fail;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!(L.st = tm_safetensors_open(path))) {
        tm__relabel_error(fn, tm_last_status());
        goto fail;
    }
    if (tm_safetensors_find(L.st, "embeddings.word_embeddings.weight") < 0 &&
        tm_safetensors_find(L.st, "bert.embeddings.word_embeddings.weight") >=
            0)
        L.prefix = "bert.";
    const tm_bert_config *c = &m->cfg;
    int64_t H = c->hidden_size;
    if (!(m->word = weight(&L, "embeddings.word_embeddings.weight",
                           c->vocab_size, H)) ||
        !(m->pos = weight(&L, "embeddings.position_embeddings.weight",
                          c->max_position_embeddings, H)) ||
        !(m->type = weight(&L, "embeddings.token_type_embeddings.weight",
                           c->type_vocab_size, H)) ||
        !(m->eln_w = weight(&L, "embeddings.LayerNorm.weight", H, 0)) ||
        !(m->eln_b = weight(&L, "embeddings.LayerNorm.bias", H, 0)))
        goto fail;
    m->layers = calloc((size_t)(c->num_hidden_layers ? c->num_hidden_layers
                                                     : 1),
                       sizeof *m->layers);
    if (!m->layers) {
        TM_ERR(TM_ENOMEM, "out of memory");
        goto fail;
    }
    for (int64_t l = 0; l < c->num_hidden_layers; l++)
        if (load_layer(&L, c, l, &m->layers[l])) goto fail;
    /* The tensors keep the mapping alive; the reader itself is done. */
    tm_safetensors_close(L.st);
    free(text);
    return m;
fail:
    tm_safetensors_close(L.st);
    free(text);
    tm_bert_free(m);
    return NULL;
}
