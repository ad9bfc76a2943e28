/*
 * gpt_config_json.c — tm_gpt_config_from_json: Hugging Face LlamaConfig
 * keys plus Foundry's own (foundry/models.h).  Keys Foundry does not use
 * are ignored, because real config.json files carry many (architectures,
 * torch_dtype, transformers_version, ...); keys it uses are type-checked.
 */
#include "foundry/models.h"

#include "../io/json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <string.h>

static const char *FN = "tm_gpt_config_from_json";

typedef struct reader {
    const tm__json_doc *doc;
    size_t obj; /* the object read from */
    const char *where; /* "" or "rope_scaling." for messages */
} reader;

static const tm__json_node *get(const reader *r, const char *key)
{
    return tm__json_get(r->doc, r->obj, key);
}

static tm_status bad_type(const reader *r, const char *key, const char *want)
{
    return tm__errf(TM_EFORMAT, FN, "\"%s%s\" must be %s", r->where, key,
                    want);
}

/* Absent (or null when null_ok) keys leave *out unchanged. */
static tm_status get_int(const reader *r, const char *key, int64_t *out,
                         bool required)
{
    const tm__json_node *n = get(r, key);
    if (!n || n->type == TM__JSON_NULL) {
        if (required && !n)
            return tm__errf(TM_EFORMAT, FN, "missing key \"%s%s\"", r->where,
                            key);
        if (required) return bad_type(r, key, "an integer");
        return TM_OK;
    }
    if (n->type != TM__JSON_INT) return bad_type(r, key, "an integer");
    *out = n->i;
    return TM_OK;
}

static tm_status get_num(const reader *r, const char *key, double *out)
{
    const tm__json_node *n = get(r, key);
    if (!n || n->type == TM__JSON_NULL) return TM_OK;
    if (n->type != TM__JSON_INT && n->type != TM__JSON_FLOAT)
        return bad_type(r, key, "a number");
    *out = n->f;
    return TM_OK;
}

static tm_status get_bool(const reader *r, const char *key, bool *out)
{
    const tm__json_node *n = get(r, key);
    if (!n || n->type == TM__JSON_NULL) return TM_OK;
    if (n->type != TM__JSON_BOOL) return bad_type(r, key, "true or false");
    *out = n->i != 0;
    return TM_OK;
}

static tm_status get_str(const reader *r, const char *key, const char **out)
{
    const tm__json_node *n = get(r, key);
    if (!n || n->type == TM__JSON_NULL) return TM_OK;
    if (n->type != TM__JSON_STRING) return bad_type(r, key, "a string");
    *out = n->str;
    return TM_OK;
}

/* bos/eos: null (none), an integer, or a list of integers (its first). */
static tm_status get_token(const reader *r, const char *key, int64_t *out)
{
    const tm__json_node *n = get(r, key);
    if (!n) return TM_OK;
    if (n->type == TM__JSON_NULL) {
        *out = -1;
        return TM_OK;
    }
    if (n->type == TM__JSON_ARRAY) {
        if (n->count == 0) {
            *out = -1;
            return TM_OK;
        }
        size_t first = (size_t)(n - r->doc->nodes) + 1;
        for (size_t c = first, k = 0; k < n->count;
             k++, c = r->doc->nodes[c].next)
            if (r->doc->nodes[c].type != TM__JSON_INT)
                return bad_type(r, key, "an integer, a list of them or null");
        *out = r->doc->nodes[first].i;
        return TM_OK;
    }
    if (n->type != TM__JSON_INT)
        return bad_type(r, key, "an integer, a list of them or null");
    *out = n->i;
    return TM_OK;
}

static tm_status read_rope_scaling(const tm__json_doc *doc, size_t obj,
                                   tm_gpt_config *c)
{
    reader r = {doc, obj, "rope_scaling."};
    const char *type = NULL;
    tm_status st = get_str(&r, "rope_type", &type);
    if (!st && !type) st = get_str(&r, "type", &type);
    if (st) return st;
    if (!type)
        return tm__errf(TM_EFORMAT, FN, "\"rope_scaling\" has no rope_type");
    tm_rope_config *p = &c->rope;
    if (!strcmp(type, "default")) p->scaling = TM_ROPE_SCALING_NONE;
    else if (!strcmp(type, "linear")) p->scaling = TM_ROPE_SCALING_LINEAR;
    else if (!strcmp(type, "dynamic")) p->scaling = TM_ROPE_SCALING_DYNAMIC;
    else if (!strcmp(type, "yarn")) p->scaling = TM_ROPE_SCALING_YARN;
    else if (!strcmp(type, "llama3")) p->scaling = TM_ROPE_SCALING_LLAMA3;
    else
        return tm__errf(TM_EUNSUPPORTED, FN,
                        "rope_scaling type \"%.40s\" is not supported "
                        "(default, linear, dynamic, yarn, llama3)", type);
    /* Hugging Face's dynamic and yarn fall back to max_position_embeddings
     * for the original length. */
    if (p->scaling == TM_ROPE_SCALING_DYNAMIC ||
        p->scaling == TM_ROPE_SCALING_YARN)
        p->original_max_positions = c->context;
    if ((st = get_num(&r, "factor", &p->factor)) ||
        (st = get_int(&r, "original_max_position_embeddings",
                      &p->original_max_positions, false)) ||
        (st = get_num(&r, "attention_factor", &p->attention_factor)) ||
        (st = get_num(&r, "low_freq_factor", &p->low_freq_factor)) ||
        (st = get_num(&r, "high_freq_factor", &p->high_freq_factor)) ||
        (st = get_num(&r, "beta_fast", &p->beta_fast)) ||
        (st = get_num(&r, "beta_slow", &p->beta_slow)) ||
        (st = get_num(&r, "mscale", &p->mscale)) ||
        (st = get_num(&r, "mscale_all_dim", &p->mscale_all_dim)) ||
        (st = get_bool(&r, "truncate", &p->yarn_truncate)))
        return st;
    return TM_OK;
}

static tm_status parse_enum(const char *what, const char *s,
                            const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return TM_OK;
        }
    return tm__errf(TM_EFORMAT, FN, "\"%s\" is \"%.40s\", not one of the "
                    "known values", what, s);
}

static tm_status read_config(const tm__json_doc *doc, tm_gpt_config *c)
{
    reader r = {doc, 0, ""};
    tm_status st;
    if (doc->nodes[0].type != TM__JSON_OBJECT)
        return tm__errf(TM_EFORMAT, FN, "config is not a JSON object");
    const char *type = NULL;
    if ((st = get_str(&r, "model_type", &type))) return st;
    if (!type) return tm__errf(TM_EFORMAT, FN, "missing key \"model_type\"");
    bool llama = !strcmp(type, "llama");
    if (!llama && strcmp(type, "foundry_gpt"))
        return tm__errf(TM_EUNSUPPORTED, FN,
                        "model_type \"%.40s\" is not supported (llama, "
                        "foundry_gpt)", type);
    memset(c, 0, sizeof *c);
    /* LlamaConfig's defaults for the keys a file may leave out. */
    c->pos = llama ? TM_GPT_POS_ROPE : TM_GPT_POS_LEARNED;
    c->norm = llama ? TM_GPT_RMSNORM : TM_GPT_LAYERNORM;
    c->mlp = llama ? TM_GPT_MLP_SWIGLU : TM_GPT_MLP_GELU_TANH;
    c->norm_eps = llama ? 1e-6 : 1e-5;
    c->init_std = 0.02;
    c->bos_id = c->eos_id = -1;
    c->n_kv_heads = -1;
    if ((st = get_int(&r, "vocab_size", &c->vocab_size, true)) ||
        (st = get_int(&r, "hidden_size", &c->d_model, true)) ||
        (st = get_int(&r, "intermediate_size", &c->d_ff, true)) ||
        (st = get_int(&r, "num_hidden_layers", &c->n_layers, true)) ||
        (st = get_int(&r, "num_attention_heads", &c->n_heads, true)) ||
        (st = get_int(&r, "max_position_embeddings", &c->context, true)) ||
        (st = get_int(&r, "num_key_value_heads", &c->n_kv_heads, false)) ||
        (st = get_int(&r, "head_dim", &c->head_dim, false)))
        return st;
    if (c->n_kv_heads == -1) c->n_kv_heads = c->n_heads;

    static const char *const norms[] = {"layernorm", "rmsnorm"};
    static const char *const posn[] = {"learned", "rope"};
    static const char *const mlps[] = {"gelu_tanh", "gelu", "swiglu"};
    const char *s = NULL;
    int e;
    if ((st = get_str(&r, "norm", &s))) return st;
    if (s) {
        if ((st = parse_enum("norm", s, norms, 2, &e))) return st;
        c->norm = (tm_gpt_norm)e;
    }
    s = NULL;
    if ((st = get_str(&r, "position_embedding", &s))) return st;
    if (s) {
        if ((st = parse_enum("position_embedding", s, posn, 2, &e)))
            return st;
        c->pos = (tm_gpt_pos)e;
    }
    s = NULL;
    if ((st = get_str(&r, "mlp", &s))) return st;
    if (s) {
        if ((st = parse_enum("mlp", s, mlps, 3, &e))) return st;
        c->mlp = (tm_gpt_mlp)e;
    }
    if (llama && !(c->pos == TM_GPT_POS_ROPE && c->norm == TM_GPT_RMSNORM &&
                   c->mlp == TM_GPT_MLP_SWIGLU))
        return tm__errf(TM_EFORMAT, FN, "model_type \"llama\" needs rope, "
                        "rmsnorm and swiglu");
    const char *act = NULL;
    if ((st = get_str(&r, "hidden_act", &act))) return st;
    if (act) {
        bool ok = c->mlp == TM_GPT_MLP_SWIGLU ? !strcmp(act, "silu")
                  : c->mlp == TM_GPT_MLP_GELU ? !strcmp(act, "gelu")
                  : (!strcmp(act, "gelu_pytorch_tanh") ||
                     !strcmp(act, "gelu_new") || !strcmp(act, "gelu_tanh"));
        if (!ok)
            return tm__errf(TM_EUNSUPPORTED, FN,
                            "hidden_act \"%.40s\" with mlp %s is not "
                            "supported", act, mlps[c->mlp]);
    }
    const char *eps_key = c->norm == TM_GPT_RMSNORM ? "rms_norm_eps"
                                                    : "layer_norm_epsilon";
    if ((st = get_num(&r, eps_key, &c->norm_eps))) return st;

    int64_t hd = c->head_dim > 0 ? c->head_dim
                 : c->n_heads > 0 ? c->d_model / c->n_heads : 0;
    c->rope = tm_rope_defaults(0);
    if (c->pos == TM_GPT_POS_ROPE) {
        double prf = 1.0;
        if ((st = get_num(&r, "rope_theta", &c->rope.theta)) ||
            (st = get_num(&r, "partial_rotary_factor", &prf)) ||
            (st = get_bool(&r, "rope_interleaved", &c->rope.interleaved)))
            return st;
        if (!(prf > 0 && prf <= 1))
            return tm__errf(TM_EFORMAT, FN, "\"partial_rotary_factor\" "
                            "must be in (0, 1], not %g", prf);
        c->rope.rotary_dim = prf == 1 ? 0 : (int64_t)((double)hd * prf);
        const tm__json_node *rs = tm__json_get(doc, 0, "rope_scaling");
        if (rs && rs->type == TM__JSON_OBJECT) {
            if ((st = read_rope_scaling(doc, (size_t)(rs - doc->nodes), c)))
                return st;
        } else if (rs && rs->type != TM__JSON_NULL) {
            return bad_type(&r, "rope_scaling", "an object or null");
        }
    }
    bool tie = !llama; /* LlamaConfig's default is untied */
    if ((st = get_bool(&r, "tie_word_embeddings", &tie)) ||
        (st = get_bool(&r, "attention_bias", &c->attn_bias)) ||
        (st = get_bool(&r, "mlp_bias", &c->mlp_bias)) ||
        (st = get_token(&r, "bos_token_id", &c->bos_id)) ||
        (st = get_token(&r, "eos_token_id", &c->eos_id)) ||
        (st = get_num(&r, "initializer_range", &c->init_std)) ||
        (st = get_num(&r, "init_std", &c->init_std)) ||
        (st = get_num(&r, "dropout", &c->dropout)))
        return st;
    c->tie_embeddings = tie;
    if (!get(&r, "dropout")) {
        /* Llama's attention_dropout is on the attention weights only, not
         * nanoGPT's four places: refuse rather than train differently. */
        double ad = 0;
        if ((st = get_num(&r, "attention_dropout", &ad))) return st;
        if (ad != 0)
            return tm__errf(TM_EUNSUPPORTED, FN,
                            "attention_dropout %g is not supported (use "
                            "\"dropout\")", ad);
    }
    return TM_OK;
}

tm_status tm_gpt_config_from_json(const char *text, size_t len,
                                  tm_gpt_config *out)
{
    if (!text || !out) return TM_ERR(TM_EINVAL, "text or out is NULL");
    tm__json_doc doc = {0};
    tm_status st = tm__json_parse(&doc, text, len, FN, "config.json: ");
    if (st) return st;
    tm_gpt_config c;
    st = read_config(&doc, &c);
    tm__json_free(&doc);
    if (st) return st;
    if ((st = tm_gpt_config_check(&c))) return tm__relabel_error(FN, st);
    *out = c;
    return TM_OK;
}
