/*
 * foundry/bert.h — BERT encoders from Hugging Face files, and sentence
 * embeddings the way sentence-transformers computes them.
 *
 *   tm_sentence_encoder *e = tm_sentence_encoder_load("all-MiniLM-L6-v2");
 *   const char *texts[2] = {"A cat.", "Un chat."};
 *   float out[2 * 384];
 *   tm_sentence_encoder_encode(e, texts, 2, 32, out);   // [2, 384]
 *   tm_sentence_encoder_free(e);
 *
 * The encoder is BERT as transformers' BertModel computes it: word +
 * absolute position + token type embeddings, LayerNorm; per layer
 * post-LayerNorm self-attention and a GELU (erf) feed-forward network.  The
 * weights come from `model.safetensors` (F32, F16 or BF16: embeddings and
 * norms stored F32 stay zero-copy in the file mapping; the linear weights
 * are copied once as [in, out], the layout a product with few rows reads
 * fastest, F16/BF16 widened to F32) and the shape from `config.json`.  Inference only: nothing records gradients.
 *
 * Padding costs nothing: the real tokens of every row (mask 1) are packed
 * into one [N, H] matrix before the layers, so the matrix products see only
 * real tokens and attention runs over each row's own tokens.
 *
 * Thread safety: a loaded model is read-only and may be used from several
 * threads at once.
 */
#ifndef FOUNDRY_BERT_H
#define FOUNDRY_BERT_H

#include "foundry/base.h"
#include "foundry/tensor.h"
#include "foundry/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The config.json keys Foundry reads (BertConfig's names).  Other keys are
 * ignored; a key read with the wrong type, or a value Foundry does not run
 * (model_type not "bert", position_embedding_type not "absolute",
 * hidden_act other than "gelu", "gelu_new" or "relu"), is TM_EFORMAT or
 * TM_EUNSUPPORTED naming the key. */
typedef enum tm_bert_act {
    TM_BERT_GELU = 0,      /* "gelu": x * Phi(x), erf form */
    TM_BERT_GELU_TANH = 1, /* "gelu_new", "gelu_pytorch_tanh" */
    TM_BERT_RELU = 2       /* "relu" */
} tm_bert_act;

typedef struct tm_bert_config {
    int64_t vocab_size;
    int64_t hidden_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t intermediate_size;
    int64_t max_position_embeddings;
    int64_t type_vocab_size;     /* default 2 */
    double layer_norm_eps;       /* default 1e-12 */
    tm_bert_act hidden_act;      /* default gelu */
    int64_t pad_token_id;        /* default 0 */
} tm_bert_config;

typedef struct tm_bert tm_bert;

/* Loads `dir`/config.json and `dir`/model.safetensors.  Tensor names are
 * BertModel's (embeddings.word_embeddings.weight, encoder.layer.N.attention.
 * self.query.weight, ...), optionally all under "bert."; pooler.* and
 * embeddings.position_ids are ignored.  A missing tensor, or one whose
 * shape is not what the config says, is TM_EFORMAT naming the tensor (and
 * both shapes); a dtype other than F32/F16/BF16 is TM_EDTYPE naming it.
 * New model; release with tm_bert_free.  NULL with an error otherwise. */
tm_bert *tm_bert_load(const char *dir);
void tm_bert_free(tm_bert *m); /* NULL is a no-op */
/* Borrowed; valid while m lives. */
const tm_bert_config *tm_bert_config_of(const tm_bert *m);

/* The last hidden state [B, T, H] (F32) for ids [B, T] (I64 or I32, each
 * in [0, vocab_size)), mask [B, T] (I64, I32 or BOOL; nonzero = a real
 * token; NULL = all real) and type_ids [B, T] (NULL = all 0).  Token t of
 * a row sits at position t (as BertModel's default position_ids) and
 * attends to the real tokens of its row.  Rows at padding positions are
 * zeros (BertModel computes values there that nothing should read).  A row
 * without real tokens is all zeros.  T <= max_position_embeddings.  New
 * reference; NULL with TM_EINVAL / TM_EDTYPE / TM_ESHAPE / TM_ERANGE
 * naming the argument. */
tm_tensor *tm_bert_forward(tm_bert *m, const tm_tensor *ids,
                           const tm_tensor *mask, const tm_tensor *type_ids);

/* Sentence pooling over the real tokens of each row. */
typedef enum tm_bert_pool {
    TM_BERT_POOL_MEAN = 0, /* the mean of the real tokens' states */
    TM_BERT_POOL_CLS = 1,  /* the state of the row's first real token */
    TM_BERT_POOL_MAX = 2   /* the elementwise max over the real tokens */
} tm_bert_pool;

/* Pooled [B, H] F32 embeddings of ids/mask as tm_bert_forward reads them
 * (type ids 0): `pool`, then, when `normalize`, divided by
 * max(||x||_2, 1e-12) as torch.nn.functional.normalize.  A row without real
 * tokens is zeros.  New reference; NULL with an error. */
tm_tensor *tm_bert_pool_embed(tm_bert *m, const tm_tensor *ids,
                              const tm_tensor *mask, tm_bert_pool pool,
                              bool normalize);
/* Mean-pooled and L2-normalised [B, H]: all-MiniLM-L6-v2's recipe. */
tm_tensor *tm_bert_embed(tm_bert *m, const tm_tensor *ids,
                         const tm_tensor *mask);

/* ------------------------------------------------- sentence encoders
 * A sentence-transformers model directory: the BERT files above, plus
 * tokenizer.json (the WordPiece tokenizer, with its [CLS] A [SEP]
 * template), modules.json (Transformer, Pooling and optionally Normalize,
 * in that order), the Pooling module's config.json (pooling_mode_mean_tokens,
 * _cls_token or _max_tokens: exactly one true) and sentence_bert_config.json
 * (max_seq_length: texts are truncated to that many tokens, specials
 * included, capped by max_position_embeddings; absent: 512 capped the same
 * way).  A missing file or an unsupported module is an error naming it. */
typedef struct tm_sentence_encoder tm_sentence_encoder;

tm_sentence_encoder *tm_sentence_encoder_load(const char *dir);
void tm_sentence_encoder_free(tm_sentence_encoder *e); /* NULL: no-op */
/* The embedding size (hidden_size). */
int64_t tm_sentence_encoder_dim(const tm_sentence_encoder *e);
/* The truncation length in tokens, specials included. */
int64_t tm_sentence_encoder_max_seq_length(const tm_sentence_encoder *e);
/* Whether modules.json ends with a Normalize module. */
bool tm_sentence_encoder_normalizes(const tm_sentence_encoder *e);
/* The model and tokenizer; borrowed, valid while e lives. */
tm_bert *tm_sentence_encoder_model(const tm_sentence_encoder *e);
const tm_tokenizer *tm_sentence_encoder_tokenizer(
    const tm_sentence_encoder *e);

/* The token ids of `text` (len bytes of UTF-8) as the encoder feeds them:
 * [CLS] ... [SEP], truncated to max_seq_length before the specials are
 * added (the way Hugging Face's tokenizers truncate).  Appends to *out
 * (caller-owned; release with tm_token_buf_free).  Text that is not valid
 * UTF-8 is TM_EINVAL naming the first bad byte. */
tm_status tm_sentence_encoder_tokenize(const tm_sentence_encoder *e,
                                       const char *text, size_t len,
                                       tm_token_buf *out);

/* Embeds texts[n] (NUL-terminated UTF-8) into out[n * dim], batch_size
 * texts per forward pass (<= 0: 32); normalised when `normalize`.  Results
 * do not depend on the batching beyond float rounding.  TM_EINVAL for NULL
 * arguments or a NULL text; tokenizer and model errors as they come. */
tm_status tm_sentence_encoder_encode_ex(tm_sentence_encoder *e,
                                        const char *const *texts, int64_t n,
                                        int64_t batch_size, bool normalize,
                                        float *out);
/* tm_sentence_encoder_encode_ex normalised as modules.json says. */
tm_status tm_sentence_encoder_encode(tm_sentence_encoder *e,
                                     const char *const *texts, int64_t n,
                                     int64_t batch_size, float *out);

#ifdef __cplusplus
}
#endif

#endif
