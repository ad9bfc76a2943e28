/*
 * gpt_io_quant.c — quantized models on disk: model.safetensors with the
 * "foundry.quant.<name>" convention (quantized tensors as U8 bytes), GGUF
 * files written and read (foundry/models.h, foundry/gguf.h).
 */
#include "gpt_gguf_llama.h"

#include "foundry/gguf.h"
#include "foundry/io.h"
#include "foundry/quantize.h"

#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUANT_PREFIX "foundry.quant."

/* "q4_0[128,256]" for a dtype and shape; malloc'd. */
static char *quant_desc(tm_dtype dt, const int64_t *shape, int ndim)
{
    char *s = malloc(32 + 24 * (size_t)ndim);
    if (!s) return NULL;
    int k = sprintf(s, "%s[", tm_dtype_name(dt));
    for (int d = 0; d < ndim; d++)
        k += sprintf(s + k, "%s%lld", d ? "," : "", (long long)shape[d]);
    strcpy(s + k, "]");
    return s;
}

tm_tensor *tm__gpt_save_tensor(const tm_gpt *m, int i, bool as_bytes,
                               char **meta, const char *fn)
{
    *meta = NULL;
    tm_tensor *p = tm_params_get(m->params, i), *c = NULL, *out = NULL;
    tm_dtype dt = tm_dtype_of(p);
    if (!tm_dtype_is_quantized(dt)) {
        tm_dtype store = m->store ? m->store[i] : dt;
        out = store == dt ? tm_retain(p) : tm_to_dtype(p, store);
        if (!out) tm__relabel_error(fn, tm_last_status());
        return out;
    }
    if (!as_bytes) return tm_retain(p);
    int nd = tm_ndim(p);
    const int64_t *sh = tm_shape(p);
    int64_t row = sh[nd - 1];
    size_t rb = tm_quant_row_bytes(dt, row);
    int64_t bshape[2] = {row ? tm_numel(p) / row : 0, (int64_t)rb};
    if (!(c = tm_contiguous(p)) ||
        !(out = tm_from_buffer(tm_data(c), bshape, 2, TM_U8)) ||
        !(*meta = quant_desc(dt, sh, nd))) {
        if (!tm_last_status()) tm__errf(TM_ENOMEM, fn, "out of memory");
        tm__relabel_error(fn, tm_last_status());
        tm_free(out);
        out = NULL;
    }
    tm_free(c);
    return out;
}

/* ------------------------------------------------------------- GGUF out */

/* llama.cpp's general.file_type numbers for a model mostly of `dt`. */
static int file_type_of(tm_dtype dt)
{
    switch (dt) {
    case TM_F16: return 1;
    case TM_Q4_0: return 2;
    case TM_Q4_1: return 3;
    case TM_Q8_0: return 7;
    case TM_Q5_0: return 8;
    case TM_Q5_1: return 9;
    case TM_Q4_K: return 14; /* Q4_K_S: every matrix Q4_K */
    case TM_Q5_K: return 16;
    case TM_Q6_K: return 18;
    case TM_BF16: return 32;
    default: return 0;
    }
}

static int derived_file_type(const tm_gpt *m)
{
    int counts[64] = {0}, best = TM_F32;
    for (int i = 0; i < tm_params_count(m->params); i++) {
        tm_tensor *p = tm_params_get(m->params, i);
        if (tm_ndim(p) < 2) continue;
        int dt = tm_dtype_is_quantized(tm_dtype_of(p))
                     ? (int)tm_dtype_of(p)
                     : (int)(m->store ? m->store[i] : tm_dtype_of(p));
        if (dt >= 0 && dt < 64 && ++counts[dt] > counts[best]) best = dt;
    }
    return file_type_of((tm_dtype)best);
}

tm_status tm_gpt_save_gguf(const tm_gpt *m, const char *path,
                           const tm_gpt_gguf_opts *opts)
{
    const char *fn = __func__;
    if (!m || !path || !*path)
        return TM_ERR(TM_EINVAL, "model or path is NULL");
    tm_gpt_gguf_opts o = {0};
    if (opts) o = *opts;
    tm_status st = TM_OK;
    char *json = NULL;
    tm_gguf_writer *w = tm_gguf_writer_new();
    if (!w) return tm__relabel_error(fn, tm_last_status());
    if (!(json = tm_gpt_config_to_json(&m->cfg))) {
        st = tm_last_status();
        goto done;
    }
    int ft = o.file_type ? o.file_type : derived_file_type(m);
    if ((st = tm_gguf_set_str(w, "general.architecture", "foundry_gpt",
                              SIZE_MAX)) ||
        (st = tm_gguf_set_str(w, "general.name",
                              o.name ? o.name : "foundry_gpt", SIZE_MAX)) ||
        (st = tm_gguf_set_u32(w, "general.file_type", (uint32_t)ft)) ||
        (st = tm_gguf_set_u32(w, "general.quantization_version", 2)) ||
        (st = tm_gguf_set_str(w, "foundry.config", json, SIZE_MAX)))
        goto done;
    if (o.tokenizer_json &&
        (st = tm_gguf_set_str(w, "tokenizer.huggingface.json",
                              o.tokenizer_json, SIZE_MAX)))
        goto done;
    for (int i = 0; i < tm_params_count(m->params) && !st; i++) {
        char *meta = NULL;
        tm_tensor *t = tm__gpt_save_tensor(m, i, false, &meta, fn);
        st = t ? tm_gguf_writer_add_tensor(w, tm_params_name(m->params, i), t)
               : tm_last_status();
        tm_free(t); /* the writer keeps its own reference */
    }
    if (!st) st = tm_gguf_writer_write(w, path);
done:
    if (st) tm__relabel_error(fn, st);
    free(json);
    tm_gguf_writer_free(w);
    return st;
}

/* -------------------------------------------------------------- reading */

typedef struct src {
    const char *path;
    tm_safetensors *st;
    tm_gguf *gg;
} src;

static bool skippable(const char *name)
{
    const char *s = strstr(name, "rotary_emb.inv_freq");
    return s && s[strlen("rotary_emb.inv_freq")] == '\0';
}

tm_status tm__gpt_parse_quant_desc(const char *s, tm_dtype *dt,
                                   int64_t *shape, int *ndim)
{
    char name[16];
    size_t k = 0;
    while (s[k] && s[k] != '[' && k < sizeof name - 1) {
        name[k] = s[k];
        k++;
    }
    name[k] = '\0';
    if (s[k] != '[' || tm_dtype_parse(name, dt) != TM_OK ||
        !tm_dtype_is_quantized(*dt))
        return TM_EFORMAT;
    const char *p = s + k + 1;
    *ndim = 0;
    while (*p != ']') {
        if (*ndim == 4 || *p < '0' || *p > '9') return TM_EFORMAT;
        int64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (v > (INT64_MAX - 9) / 10) return TM_EFORMAT;
            v = v * 10 + (*p - '0');
        }
        shape[(*ndim)++] = v;
        if (*p == ',') {
            if (*++p < '0' || *p > '9') return TM_EFORMAT; /* "64,]" */
        } else if (*p != ']') {
            return TM_EFORMAT;
        }
    }
    return p[1] == '\0' && *ndim >= 1 ? TM_OK : TM_EFORMAT;
}

/* Tensor `name` of the file (dense or quantized; NULL with an error
 * naming the file and the tensor). */
static tm_tensor *src_get(const src *f, const char *name, const char *fn)
{
    if (f->gg) {
        if (tm_gguf_find_tensor(f->gg, name) < 0) {
            tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is missing", f->path,
                     name);
            return NULL;
        }
        tm_tensor *t = tm_gguf_tensor_by_name(f->gg, name);
        if (!t)
            tm__errf(tm_last_status(), fn, "%s: tensor '%s': %s", f->path,
                     name, tm_last_error());
        return t;
    }
    if (tm_safetensors_find(f->st, name) < 0) {
        tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is missing", f->path, name);
        return NULL;
    }
    char key[256];
    snprintf(key, sizeof key, QUANT_PREFIX "%s", name);
    const char *desc = tm_safetensors_metadata_get(f->st, key);
    tm_tensor *raw = tm_safetensors_get(f->st, name), *q = NULL;
    if (!raw) {
        tm__errf(tm_last_status(), fn, "%s: tensor '%s': %s", f->path, name,
                 tm_last_error());
        return NULL;
    }
    if (!desc) return raw;
    tm_dtype dt;
    int64_t shape[4];
    int nd;
    if (tm__gpt_parse_quant_desc(desc, &dt, shape, &nd) != TM_OK) {
        tm__errf(TM_EFORMAT, fn, "%s: metadata %s = '%.64s' is not "
                 "'<quantized dtype>[d0,...]'", f->path, key, desc);
        goto done;
    }
    int64_t numel = 1;
    for (int d = 0; d < nd && numel >= 0; d++)
        numel = shape[d] && numel > INT64_MAX / shape[d] ? -1 : numel * shape[d];
    size_t rb = tm_quant_row_bytes(dt, shape[nd - 1]);
    int64_t rows = shape[nd - 1] ? numel / shape[nd - 1] : 0;
    if (numel < 0 || rb == 0 || tm_dtype_of(raw) != TM_U8 ||
        tm_ndim(raw) != 2 || tm_shape(raw)[0] != rows ||
        tm_shape(raw)[1] != (int64_t)rb) {
        char a[TM_SHAPE_BUF];
        tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is %s %s, but %s = '%.64s' "
                 "needs U8 [%lld, %zu]", f->path, name,
                 tm_safetensors_dtype_name(f->st, tm_safetensors_find(f->st, name)),
                 tm__fmt_shape(tm_shape(raw), tm_ndim(raw), a, sizeof a), key,
                 desc, (long long)rows, rb);
        goto done;
    }
    if (!(q = tm_from_buffer(tm_data(raw), shape, nd, dt)))
        tm__relabel_error(fn, tm_last_status());
done:
    tm_free(raw);
    return q;
}

static bool src_has_extra(const src *f, const tm_gpt *m, const char **extra)
{
    int64_t n = f->gg ? tm_gguf_n_tensors(f->gg) : tm_safetensors_count(f->st);
    for (int64_t j = 0; j < n; j++) {
        const char *name;
        if (f->gg) {
            tm_gguf_tensor_info ti;
            if (tm_gguf_tensor_info_at(f->gg, j, &ti)) continue;
            name = ti.name;
        } else {
            name = tm_safetensors_name(f->st, (int)j);
        }
        if (tm_params_index(m->params, name) < 0 && !skippable(name)) {
            *extra = name;
            return true;
        }
    }
    if (f->st)
        for (int j = 0; j < tm_safetensors_metadata_count(f->st); j++) {
            const char *k = tm_safetensors_metadata_key(f->st, j);
            if (!strncmp(k, QUANT_PREFIX, strlen(QUANT_PREFIX)) &&
                tm_params_index(m->params, k + strlen(QUANT_PREFIX)) < 0) {
                *extra = k;
                return true;
            }
        }
    return false;
}

static tm_status config_text(const src *f, const char *config_dir,
                             tm_gpt_config *c, const char *fn)
{
    tm_status st;
    if (!config_dir) {
        const tm_gguf_value *v = tm_gguf_get(f->gg, "foundry.config");
        size_t len = 0;
        const char *s = v ? tm_gguf_value_str(v, &len) : NULL;
        if (!s)
            return tm__errf(TM_EFORMAT, fn, "%s: no string 'foundry.config' "
                            "(the model's config.json) in the metadata",
                            f->path);
        if ((st = tm_gpt_config_from_json(s, len, c)))
            return tm__errf(st, fn, "%s: foundry.config: %s", f->path,
                            tm_last_error());
        return TM_OK;
    }
    char path[4096];
    int k = snprintf(path, sizeof path, "%s/config.json", config_dir);
    if (k < 0 || (size_t)k >= sizeof path)
        return tm__errf(TM_EINVAL, fn, "path '%.64s...' is too long",
                        config_dir);
    return tm__gpt_read_config(path, c, fn);
}


tm_gpt *tm__gpt_load_file(const char *path, const char *config_dir,
                          const char *fn)
{
    src f = {path, NULL, NULL};
    tm_gpt *m = NULL;
    tm_tensor **news = NULL;
    tm_gpt_config c;
    if (tm__ends_with(path, ".gguf")) f.gg = tm_gguf_open(path);
    else f.st = tm_safetensors_open(path);
    if (!f.gg && !f.st) {
        tm__relabel_error(fn, tm_last_status());
        return NULL;
    }
    if (f.gg && tm_gguf_find_key(f.gg, "general.architecture") >= 0) {
        /* llama.cpp's layouts are read by gpt_gguf_llama*.c */
        bool foundry;
        m = tm__gpt_load_gguf_arch(f.gg, path, &foundry, fn);
        if (!foundry) {
            tm_gguf_close(f.gg);
            return m;
        }
    }
    if (!config_dir && f.st) {
        tm__errf(TM_EINVAL, fn, "%s: a safetensors model needs its "
                 "config.json", path);
        goto fail;
    }
    if (config_text(&f, config_dir, &c, fn)) goto fail;
    if (!(m = tm__gpt_create(&c, false, NULL, fn))) goto fail;
    int n = tm_params_count(m->params);
    if (!(news = tm__calloc(sizeof *news * (size_t)n, fn))) goto fail;
    bool prev = tm_no_grad_begin();
    tm_status st = TM_OK;
    for (int i = 0; i < n && !st; i++) {
        const char *name = tm_params_name(m->params, i);
        tm_tensor *p = tm_params_get(m->params, i);
        tm_tensor *t = src_get(&f, name, fn);
        if (!t) {
            st = tm_last_status();
            break;
        }
        bool same = tm_ndim(t) == tm_ndim(p);
        for (int d = 0; same && d < tm_ndim(p); d++)
            same = tm_shape(t)[d] == tm_shape(p)[d];
        tm_dtype dt = tm_dtype_of(t);
        if (!same) {
            char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
            st = tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' has shape %s, the "
                          "config needs %s", path, name,
                          tm__fmt_shape(tm_shape(t), tm_ndim(t), a, sizeof a),
                          tm__fmt_shape(tm_shape(p), tm_ndim(p), b, sizeof b));
        } else if (tm_dtype_is_quantized(dt)) {
            if (dt == TM_Q8_1 || dt == TM_Q8_K)
                st = tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is %s, an "
                              "activation type, not a weight type", path,
                              name, tm_dtype_name(dt));
            else
                news[i] = tm_retain(t);
        } else if (dt != TM_F32 && dt != TM_F16 && dt != TM_BF16) {
            st = tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is %s, not F32, "
                          "F16, BF16 or a quantized type", path, name,
                          tm_dtype_name(dt));
        } else if ((st = tm_copy_(p, t))) {
            tm__relabel_error(fn, st);
        }
        tm_free(t);
    }
    tm_no_grad_end(prev);
    if (st) goto fail;
    /* Every tensor the model needs is there and fits: now anything else
     * in the file is an error. */
    const char *extra = NULL;
    if (src_has_extra(&f, m, &extra)) {
        tm__errf(TM_EFORMAT, fn, "%s: unexpected tensor '%s'%s", path, extra,
                 !strcmp(extra, "lm_head.weight")
                     ? " (the config ties the embeddings)" : "");
        goto fail;
    }
    if (tm__gpt_replace_params(m, news, fn)) goto fail;
    for (int i = 0; i < n; i++) tm_free(news[i]);
    tm__dealloc(news);
    tm_safetensors_close(f.st);
    tm_gguf_close(f.gg);
    m->training = false;
    m->rng = tm_rng_new(0);
    return m;
fail:
    if (news && m)
        for (int i = 0; i < tm_params_count(m->params); i++) tm_free(news[i]);
    tm__dealloc(news);
    tm_gpt_free(m);
    tm_safetensors_close(f.st);
    tm_gguf_close(f.gg);
    return NULL;
}
