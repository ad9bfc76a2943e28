/*
 * gpt_impl.h — the transformer's internals shared by nn/gpt*.c and
 * nn/eval.c.  Internal; never installed.
 */
#ifndef FOUNDRY_NN_GPT_IMPL_H
#define FOUNDRY_NN_GPT_IMPL_H

#include "foundry/models.h"

/* One block's parameters; NULL where the config has none. */
typedef struct tm__gpt_layer {
    tm_tensor *ln1_w, *ln1_b;
    tm_tensor *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b;
    tm_tensor *ln2_w, *ln2_b;
    tm_tensor *gate_w, *gate_b, *up_w, *up_b, *down_w, *down_b;
} tm__gpt_layer;

struct tm_gpt {
    tm_gpt_config cfg;  /* head_dim and rope.head_dim resolved */
    int64_t hd;
    tm_params *params;  /* holds a reference to every tensor below */
    tm_tensor *wte;     /* [V, D] */
    tm_tensor *wpe;     /* [ctx, D] or NULL */
    tm__gpt_layer *layers;
    tm_tensor *lnf_w, *lnf_b;
    tm_tensor *head;    /* [V, D]: lm_head, or wte when tied */
    tm_rope *rope;      /* RoPE only */
    bool training;
    tm_rng rng;         /* dropout */
    tm_dtype *store;    /* per parameter: the dtype the savers write (NULL:
                           each tensor's own; set by tm_gpt_quantize) */
};

/* The model's parameters allocated (uninitialised when rng is NULL and
 * init is false) in the documented order.  NULL with an error. */
tm_gpt *tm__gpt_create(const tm_gpt_config *c, bool init, tm_rng *rng,
                       const char *fn);

/* Swaps parameter i for news[i] wherever the model holds it (news[i] NULL:
 * kept), rebuilding the set in one go; the set then holds references to
 * the new tensors.  On failure the model is unchanged. */
tm_status tm__gpt_replace_params(tm_gpt *m, tm_tensor *const *news,
                                 const char *fn);
/* GGUF and quantized-safetensors halves of tm_gpt_save / tm_gpt_load
 * (gpt_io_quant.c).  tm__gpt_load_file: `path` a .gguf or .safetensors
 * file, `config_dir` where config.json is (NULL: the GGUF's
 * foundry.config). */
tm_gpt *tm__gpt_load_file(const char *path, const char *config_dir,
                          const char *fn);
/* Reads and parses the config.json at `path` (gpt_io.c); errors name fn
 * and the path. */
tm_status tm__gpt_read_config(const char *path, tm_gpt_config *c,
                              const char *fn);
bool tm__ends_with(const char *s, const char *suffix);
/* Parses a "foundry.quant.*" description, "<quantized dtype>[d0,...]"
 * (1 to 4 dims, decimal, no spaces); TM_EFORMAT (no message) otherwise.
 * shape has room for 4. */
tm_status tm__gpt_parse_quant_desc(const char *s, tm_dtype *dt,
                                   int64_t *shape, int *ndim);
/* The tensor savers write for parameter i: a U8 [rows, row bytes] view of
 * a quantized tensor (*meta gets "<dtype>[d0,...]", malloc'd) or the
 * tensor in its store dtype.  New reference. */
tm_tensor *tm__gpt_save_tensor(const tm_gpt *m, int i, bool as_bytes,
                               char **meta, const char *fn);

#endif
