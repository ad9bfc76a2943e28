/*
 * bert_impl.h — the BERT model's insides, shared by its loader
 * (bert_io.c), forward pass (bert.c) and the sentence encoder
 * (sentence.c).  Internal; never installed.
 */
#ifndef FOUNDRY_NN_BERT_IMPL_H
#define FOUNDRY_NN_BERT_IMPL_H

#include "foundry/bert.h"

/* One encoder layer.  q, k and v are fused into one [3H, H] projection
 * (one matrix product instead of three over the same input).  The four
 * linear weights are [out, in] views of [in, out] storage (bert_io.c). */
typedef struct tm__bert_layer {
    tm_tensor *qkv_w, *qkv_b;   /* [3H, H], [3H] */
    tm_tensor *ao_w, *ao_b;     /* attention.output.dense [H, H], [H] */
    tm_tensor *ln1_w, *ln1_b;   /* attention.output.LayerNorm [H] */
    tm_tensor *in_w, *in_b;     /* intermediate.dense [I, H], [I] */
    tm_tensor *out_w, *out_b;   /* output.dense [H, I], [H] */
    tm_tensor *ln2_w, *ln2_b;   /* output.LayerNorm [H] */
} tm__bert_layer;

struct tm_bert {
    tm_bert_config cfg;
    tm_tensor *word, *pos, *type; /* [V, H], [P, H], [types, H] */
    tm_tensor *eln_w, *eln_b;     /* embeddings.LayerNorm */
    tm__bert_layer *layers;       /* [num_hidden_layers] */
};

/* Reads config.json text into *c (defaults first); `fn` names the
 * caller in errors. */
tm_status tm__bert_config_from_json(const char *text, size_t len,
                                    tm_bert_config *c, const char *fn);

/* Reads a whole small file (at most `max` bytes) into a malloc'd,
 * NUL-terminated buffer.  TM_EIO naming the path when it cannot be read. */
tm_status tm__bert_read_file(const char *path, size_t max, char **text,
                             size_t *len, const char *fn);

/* The last hidden states of the real tokens, packed: rows of row b are
 * out[off[b] .. off[b+1]) in position order.  ids/mask/type as
 * tm_bert_forward; *off (malloc'd, B + 1 entries) and *posn (malloc'd, the
 * column of every packed row) are the caller's to free. */
tm_tensor *tm__bert_packed(tm_bert *m, const tm_tensor *ids,
                           const tm_tensor *mask, const tm_tensor *type_ids,
                           int64_t **off, int64_t **posn, const char *fn);

#endif
