/*
 * foundry/models.h — decoder-only transformer language models: one
 * definition whose presets are the GPT-2 family and the Llama family
 * (SmolLM2, TinyLlama, Llama 3), its forward pass, loss, KV cache,
 * weights in safetensors with Hugging Face names, evaluation, and
 * generation.
 *
 *   tm_gpt_config c;
 *   tm_gpt_preset("gpt-tiny", &c);
 *   c.vocab_size = tm_tokenizer_vocab_size(tok);
 *   tm_rng rng = tm_rng_new(1);
 *   tm_gpt *m = tm_gpt_new(&c, &rng);
 *   tm_tensor *loss = tm_gpt_loss(m, x, y, NULL);   // x, y [B, T] I64
 *   tm_backward(loss);                              // grads on tm_gpt_params(m)
 *   tm_gpt_save(m, "runs/demo");
 *   tm_gpt_free(m);
 *
 * The block is pre-norm: x += attn(norm1(x)); x += mlp(norm2(x)); then a
 * final norm and the output head.  Everything runs through the ordinary
 * differentiable ops (embedding, layer/RMS norm, linear, scaled-dot-product
 * attention with grouped-query heads, RoPE, GELU / SiLU, fused cross
 * entropy), so gradients come from tm_backward like any other graph.
 *
 * A model is not thread-safe: one thread runs a model's forward at a time
 * (dropout advances the model's generator).  Failures follow foundry/base.h:
 * NULL or a negative tm_status, with tm_last_error() naming the function
 * and the values.
 */
#ifndef FOUNDRY_MODELS_H
#define FOUNDRY_MODELS_H

#include "attention.h"
#include "data.h"
#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tm_gpt_pos {
    TM_GPT_POS_LEARNED = 0, /* a learned table of `context` positions */
    TM_GPT_POS_ROPE = 1     /* rotary embeddings on q and k */
} tm_gpt_pos;
typedef enum tm_gpt_norm { TM_GPT_LAYERNORM = 0, TM_GPT_RMSNORM = 1 } tm_gpt_norm;
typedef enum tm_gpt_mlp {
    TM_GPT_MLP_GELU_TANH = 0, /* GPT-2: down(gelu_tanh(up x)) */
    TM_GPT_MLP_GELU = 1,      /* the erf form */
    TM_GPT_MLP_SWIGLU = 2     /* Llama: down(silu(gate x) * up x) */
} tm_gpt_mlp;

typedef struct tm_gpt_config {
    int64_t vocab_size;
    int64_t context;        /* max positions (learned table size; generation limit) */
    int64_t d_model;
    int64_t n_layers;
    int64_t n_heads;
    int64_t n_kv_heads;     /* == n_heads: MHA; divides n_heads: GQA */
    int64_t head_dim;       /* 0 means d_model / n_heads */
    int64_t d_ff;           /* MLP hidden size */
    tm_gpt_pos pos;
    tm_rope_config rope;    /* used when pos == ROPE; rope.head_dim is set
                               from head_dim (its value is not read);
                               rope.rotary_dim 0 means head_dim */
    tm_gpt_norm norm;
    double norm_eps;
    tm_gpt_mlp mlp;
    bool attn_bias;         /* q, k, v, o projections have biases */
    bool mlp_bias;          /* MLP linears have biases */
    bool tie_embeddings;    /* output head = token embedding */
    double dropout;         /* on attention weights, after the attention
                               projection, after the MLP and after the
                               embeddings (nanoGPT's places); training only */
    double init_std;        /* normal(0, init_std) for linears and
                               embeddings; o_proj and down_proj get
                               init_std / sqrt(2 n_layers) (GPT-2's scaled
                               residual init); biases 0, norm weights 1 */
    int64_t bos_id, eos_id; /* -1 when none */
} tm_gpt_config;

/* Fills *out with a named configuration:
 *   "gpt2" (124M: V 50257, ctx 1024, d 768, 12 layers, 12 heads, d_ff 3072,
 *   LayerNorm 1e-5, gelu_tanh, biases, tied), "gpt2-medium" (d 1024, 24
 *   layers, 16 heads), "smollm2-135m" (V 49152, ctx 8192, d 576, 30 layers,
 *   9 heads, 3 kv heads, d_ff 1536, RoPE theta 1e5, RMSNorm 1e-5, SwiGLU,
 *   no biases, tied), "smollm2-360m", "tinyllama-1.1b", "llama3.2-1b"
 *   (llama3 rope scaling), "llama3-8b", and two small models for training
 *   from scratch: "gpt-tiny" (V 4096, ctx 256, d 256, 4 layers, 4 heads,
 *   d_ff 1024, GPT-2's layout) and "llama-tiny" (the same sizes in Llama's
 *   layout, 2 kv heads, d_ff 768, tied).  Set vocab_size and context to
 *   the tokenizer and data before tm_gpt_new.  Dropout is 0 in every
 *   preset.  An unknown name is TM_EINVAL listing the known names. */
tm_status tm_gpt_preset(const char *name, tm_gpt_config *out);
/* Checks every field's range (TM_EINVAL naming the field and its value):
 * sizes >= 1, heads dividing the model (n_heads * head_dim need not be
 * d_model when head_dim is given), n_kv_heads dividing n_heads, a valid
 * rope configuration for RoPE (even head_dim), norm_eps > 0, dropout in
 * [0, 1), init_std >= 0, bos/eos in [-1, V). */
tm_status tm_gpt_config_check(const tm_gpt_config *c);
/* The head size actually used: head_dim, or d_model / n_heads when 0. */
int64_t tm_gpt_config_head_dim(const tm_gpt_config *c);
/* config.json in Hugging Face's LlamaConfig key names (vocab_size,
 * hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads, head_dim, max_position_embeddings, rms_norm_eps
 * (layer_norm_epsilon for LayerNorm), rope_theta, rope_scaling,
 * tie_word_embeddings, attention_bias, mlp_bias, hidden_act, bos_token_id,
 * eos_token_id) plus Foundry keys where Llama has none ("norm":
 * "layernorm" | "rmsnorm", "position_embedding": "learned" | "rope",
 * "mlp": "gelu_tanh" | "gelu" | "swiglu", "dropout", "init_std"), and
 * "model_type": "llama" when the shape is Llama's (RoPE, RMSNorm, SwiGLU),
 * else "foundry_gpt".  Returns a new NUL-terminated string; release it
 * with free().  NULL with an error for an invalid configuration. */
char *tm_gpt_config_to_json(const tm_gpt_config *c);
/* Parses such a text, or a real Hugging Face Llama config.json: keys
 * Foundry does not use (architectures, torch_dtype, use_cache, ...) are
 * ignored; the keys it uses must have the right JSON type (TM_EFORMAT
 * naming the key); model_type must be "llama" or "foundry_gpt"
 * (TM_EUNSUPPORTED otherwise); an eos_token_id list gives its first entry;
 * initializer_range stands for init_std when that is absent.  The result
 * passes tm_gpt_config_check (its error otherwise).  *out is written only
 * on success. */
tm_status tm_gpt_config_from_json(const char *text, size_t len, tm_gpt_config *out);

typedef struct tm_gpt tm_gpt;
/* A model for the configuration (copied), initialised as the config says
 * from `rng` (NULL: the default generator), F32 on the CPU, in training
 * mode, its dropout generator split from `rng`.  Returns a new model;
 * release with tm_gpt_free.  NULL with an error (the config check's, or
 * TM_ENOMEM). */
tm_gpt *tm_gpt_new(const tm_gpt_config *c, tm_rng *rng);
/* Releases the model and its references to its parameters (tensors the
 * caller retained stay valid).  NULL is a no-op. */
void tm_gpt_free(tm_gpt *m);
/* The model's configuration (borrowed; head_dim and rope.head_dim filled
 * in). */
const tm_gpt_config *tm_gpt_config_of(const tm_gpt *m);
/* Borrowed parameter set, HF names, in this order:
 *   model.embed_tokens.weight [V,D]; model.embed_positions.weight [ctx,D]
 *   (learned positions only); per layer N: model.layers.N.input_layernorm.
 *   {weight,bias}; model.layers.N.self_attn.{q,k,v,o}_proj.{weight,bias};
 *   model.layers.N.post_attention_layernorm.{weight,bias};
 *   model.layers.N.mlp.{gate_proj,up_proj,down_proj}.{weight,bias} (gate
 *   only for SwiGLU; for GELU the MLP is up -> act -> down); model.norm.
 *   {weight,bias}; lm_head.weight (untied only).  Linear weights are
 *   [out, in] (torch's layout); q_proj is [n_heads * head_dim, D], k_proj
 *   and v_proj [n_kv_heads * head_dim, D].  Biases exist only where the
 *   config says (LayerNorm has a bias; RMSNorm does not).
 * No-decay (tm_params_no_decay) is true exactly for parameters with fewer
 * than 2 dims.  Valid while the model lives; write into the tensors under
 * no-grad (optimizers, loading), never replace them. */
tm_params *tm_gpt_params(const tm_gpt *m);
/* Dropout on (training) or off.  True after tm_gpt_new, false after
 * tm_gpt_load. */
void tm_gpt_set_training(tm_gpt *m, bool training);
bool tm_gpt_training(const tm_gpt *m);
/* Dropout's generator (copied in), and its current state (for a
 * checkpoint: restoring it with tm_gpt_set_rng continues the same
 * masks). */
tm_status tm_gpt_set_rng(tm_gpt *m, tm_rng rng);
tm_rng tm_gpt_rng(const tm_gpt *m);

typedef struct tm_gpt_fwd_opts {
    /* NULL: positions 0..T-1, no cache.  Else positions start at the
     * cache's length (layer 0's) and every layer's K/V are appended. */
    tm_kv_cache *cache;
    bool last_only; /* logits for the last position only: [B,1,V] */
} tm_gpt_fwd_opts;
/* ids [B,T] I64 or I32 with values in [0,V) (TM_ERANGE otherwise, naming
 * the value), start + T <= context (TM_ERANGE), start the cache's length.
 * Returns logits [B,T,V] F32 (new reference), recorded for autograd when
 * grad mode is on.  With a cache the tokens are appended; a failed call
 * truncates the cache back to where it was.  The cached forward of T
 * tokens in several calls gives the logits of one uncached call (to
 * rounding).  opts NULL: no cache, all positions. */
tm_tensor *tm_gpt_forward(tm_gpt *m, const tm_tensor *ids, const tm_gpt_fwd_opts *opts);
/* Mean cross entropy over targets [B,T] (I64/I32; -100 ignored), fused
 * (tm_cross_entropy on [B*T, V]); a 0-d F32 tensor, new reference.
 * logits_out (optional): the logits [B,T,V], new reference (NULL on
 * failure).  ids and targets must have the same shape (TM_ESHAPE). */
tm_tensor *tm_gpt_loss(tm_gpt *m, const tm_tensor *ids, const tm_tensor *targets,
                       tm_tensor **logits_out);
/* A cache sized for this model: n_layers, batch, n_kv_heads, max_len
 * (1..context; TM_EINVAL otherwise), head_dim; dtype F32/F16/BF16 (0 is
 * F32).  Release with tm_kv_cache_free. */
tm_kv_cache *tm_gpt_cache_new(const tm_gpt *m, int64_t batch, int64_t max_len, tm_dtype dtype);

/* Writes dir/model.safetensors (the parameters under their HF names, F32,
 * metadata {"format":"pt"}; lm_head.weight is not written when tied) and
 * dir/config.json (tm_gpt_config_to_json); dir is created if missing (its
 * parent must exist).  Each file is replaced atomically. */
tm_status tm_gpt_save(const tm_gpt *m, const char *dir);
/* A model from a dir written by tm_gpt_save or a Hugging Face Llama dir
 * (config.json + model.safetensors; F32/F16/BF16 weights converted to
 * F32).  In evaluation mode, its dropout generator seeded with 0.
 * Missing, mis-shaped or extra tensors are TM_EFORMAT naming the tensor
 * (rotary_emb.inv_freq buffers, which some checkpoints carry, are
 * skipped); a bad config.json gives tm_gpt_config_from_json's error.
 * Returns a new model; release with tm_gpt_free. */
tm_gpt *tm_gpt_load(const char *dir);

/* ---- quantized models (foundry/quantize.h, foundry/gguf.h) ----
 *
 * A model whose parameters are quantized tensors (frozen: the forward runs
 * tm_linear / tm_embedding on them; training them fails).  tm_gpt_save
 * writes them into model.safetensors as U8 [rows, row bytes] tensors with
 * "__metadata__" entries "foundry.quant.<name>" = "<dtype>[d0,d1,...]"
 * (docs/quantize.md); tm_gpt_load also reads a directory holding
 * model.gguf (and no model.safetensors), a .gguf file, or a .safetensors
 * file with config.json beside it, dense or quantized. */
struct tm_quant_plan;
/* What tm_gpt_quantize did to one parameter. */
typedef struct tm_gpt_quant_info {
    const char *name;       /* HF name (borrowed, valid during the call) */
    const int64_t *shape;   /* borrowed */
    int ndim;
    tm_dtype from, to;      /* stored dtype before and after */
    bool fell_back;         /* the plan's fallback type was used */
    size_t bytes_before, bytes_after;
    double rmse, max_abs;   /* against the values before (0 when unchanged) */
    double ref_rms;         /* rms of the values before */
    int64_t count;          /* values compared */
} tm_gpt_quant_info;
typedef void (*tm_gpt_quant_fn)(const tm_gpt_quant_info *info, void *user);
/* Replaces every parameter by the dtype tm_quant_plan_pick gives it (a
 * quantized parameter is dequantized first; a float dtype other than F32
 * keeps F32 values rounded through it, and tm_gpt_save / save_gguf store
 * it in that dtype).  A tied head follows the embedding.  cb (may be NULL)
 * gets each parameter in tm_gpt_params order.  On failure the model is
 * unchanged.  Tensors previously borrowed from tm_gpt_params are no longer
 * the model's. */
tm_status tm_gpt_quantize(tm_gpt *m, const struct tm_quant_plan *plan,
                          tm_gpt_quant_fn cb, void *user);
/* The dtype parameter i is stored in by the savers. */
tm_dtype tm_gpt_param_store_dtype(const tm_gpt *m, int i);

typedef struct tm_gpt_gguf_opts {
    const char *name;           /* general.name (NULL: "foundry_gpt") */
    const char *tokenizer_json; /* tokenizer.huggingface.json (NULL: none) */
    int file_type;              /* general.file_type, llama.cpp's numbering
                                   (0: from the dtype most matrices have) */
} tm_gpt_gguf_opts;
/* Writes the model to the GGUF file `path`: every parameter under its HF
 * name, metadata general.architecture "foundry_gpt", general.name,
 * general.file_type, general.quantization_version 2, foundry.config (the
 * config.json text) and tokenizer.huggingface.json.  opts NULL: the
 * defaults.  Atomic (tm_gguf_writer_write). */
tm_status tm_gpt_save_gguf(const tm_gpt *m, const char *path,
                           const tm_gpt_gguf_opts *opts);

/* ---- models from GGUF files llama.cpp reads ----
 *
 * A model from a GGUF file by its general.architecture: "foundry_gpt"
 * (tm_gpt_save_gguf's files) or "llama" (llama.cpp's converters: SmolLM2,
 * TinyLlama, Llama 2, ...).  For "llama" the configuration comes from the
 * llama.* keys: context_length, embedding_length, block_count,
 * feed_forward_length, attention.head_count and
 * attention.layer_norm_rms_epsilon (required), attention.head_count_kv
 * (default head_count), rope.freq_base (10000), rope.dimension_count (the
 * head size), attention.key_length / value_length (embedding_length /
 * head_count), rope.scaling.type none / linear / yarn with .factor and
 * .original_context_length (or the older rope.scale_linear), vocab_size
 * (else the length of tokenizer.ggml.tokens, else token_embd's rows);
 * bos/eos from tokenizer.ggml.{bos,eos}_token_id; the head is tied when
 * the file has no output.weight; biases when blk.0 has them.  RoPE is the
 * interleaved-pair form (llama.cpp's converter permutes the q and k rows
 * for it), so the rows are used as stored.  Tensors token_embd,
 * output_norm, output, blk.N.{attn_norm, attn_q, attn_k, attn_v,
 * attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down} become the Hugging
 * Face names of tm_gpt_params; quantized ones stay zero-copy views of the
 * file's mapping (which lives while the model does), F32/F16/BF16 ones
 * (the norms) are copied to F32.  In evaluation mode.
 * Errors, each naming the file: TM_EFORMAT for a missing key ("missing key
 * llama.block_count"), a key of the wrong type or range, a token list
 * whose length differs from the embedding's rows, a missing, mis-shaped
 * (both shapes named) or unexpected tensor; TM_EUNSUPPORTED for another
 * architecture, RoPE scaling or tensor type.  tm_gpt_load of a .gguf path
 * reads both architectures too.  Returns a new model; tm_gpt_free. */
tm_gpt *tm_model_load_gguf(const char *path);

/* Evaluation over a split of a token dataset (foundry/data.h): windows of
 * T + 1 tokens in order, window w holding tokens [w T, w T + T] of the
 * split, so every token after the first is a target exactly once; over the
 * whole split (max_batches 0) a shorter last window takes the tokens left
 * over, else it stops after max_batches batches of `batch` windows.  No
 * grad, dropout off during it (the training flag is restored).  progress
 * (may be NULL) advances by the targets evaluated and shows the running
 * loss.  Errors: TM_EINVAL for batch or T < 1, T > context, a dataset
 * vocabulary larger than the model's, a split of fewer than 2 tokens. */
typedef struct tm_eval_result {
    double mean_loss;     /* nats per target token */
    double perplexity;    /* exp(mean_loss) */
    double bits_per_byte; /* mean_loss * tokens / (ln 2 * bytes), bytes = the
                             split's text bytes the targets cover (their
                             share of the split's bytes when partial) */
    double accuracy;      /* argmax == target */
    int64_t tokens;       /* targets evaluated */
} tm_eval_result;
tm_status tm_gpt_evaluate(tm_gpt *m, const tm_token_dataset *ds, tm_token_split split,
                          int64_t batch, int64_t T, int64_t max_batches,
                          tm_progress *progress, tm_eval_result *out);

/* ---- generation ---- */

/* ------------------------------------------------------------ sampling
 *
 * A sampler turns one row of logits into one token id.  It applies, in
 * Hugging Face generate()'s order: the repetition penalty (every distinct
 * id of the history: a logit l < 0 becomes l * p, else l / p), then, unless
 * greedy, the temperature (l / t), top_k (keeps every logit >= the k-th
 * largest: ties at the k-th value are all kept), top_p (nucleus: sorts the
 * logits ascending, ties by id, and drops the prefix whose cumulative
 * probability is <= 1 - top_p, always keeping the most likely token) and
 * min_p (drops tokens with p < min_p * p_max), then draws from the softmax
 * of what is left with its own Philox generator (tm_rng_new(seed)), one
 * 64-bit draw per sample, by the inverse CDF over ids in increasing order.
 * Greedy (temperature 0) is the argmax after the repetition penalty; ties
 * go to the lowest id.  Arithmetic is in double.  Logits may hold -inf
 * (masked ids); NaN or +inf, or no finite logit at all, is TM_EINVAL.
 * A sampler is not thread-safe: one thread at a time. */
typedef struct tm_sample_opts {
    double temperature;         /* 1.0; 0 means greedy (argmax, ties -> lowest id); >= 0, finite */
    int64_t top_k;              /* 0: off; >= 0 */
    double top_p;               /* 1.0: off; in (0, 1] (nucleus, HF TopPLogitsWarper semantics, keeps >= 1 token) */
    double min_p;               /* 0: off; in [0, 1] (keep tokens with p >= min_p * p_max) */
    double repetition_penalty;  /* 1.0: off; > 0, finite; HF/CTRL rule over every token in prompt + generated so far */
    uint64_t seed;              /* 0 */
} tm_sample_opts;
tm_sample_opts tm_sample_defaults(void);
/* Order as HF's generate: repetition penalty, temperature, top_k, top_p, min_p, then draw with the seeded generator. */
typedef struct tm_sampler tm_sampler;
/* A sampler for the options (copied; NULL: the defaults).  Options out of
 * range: NULL with TM_EINVAL naming the field.  Release with
 * tm_sampler_free. */
tm_sampler *tm_sampler_new(const tm_sample_opts *o);
void tm_sampler_free(tm_sampler *s);     /* NULL is a no-op */
/* The id drawn from logits[vocab] (borrowed) given the ids generated and
 * prompted so far, history[n_history] (borrowed; ids in [0, vocab), used
 * only by the repetition penalty).  Advances the generator by one 64-bit
 * draw unless greedy.  < 0: an error status (TM_EINVAL for bad logits or
 * arguments, TM_ERANGE for a history id out of range). */
int64_t tm_sampler_sample(tm_sampler *s, const float *logits, int64_t vocab,
                          const int64_t *history, int64_t n_history);   /* < 0: error status */
/* The distribution tm_sampler_sample draws from: probs[vocab] (caller's
 * buffer) after every processor; greedy is one-hot.  Does not advance the
 * generator.  Same errors as tm_sampler_sample. */
tm_status tm_sampler_probs(tm_sampler *s, const float *logits, int64_t vocab,
                           const int64_t *history, int64_t n_history,
                           double *probs);
/* The sampler's generator now (for checkpoints) and a replacement. */
tm_rng tm_sampler_rng(const tm_sampler *s);
void tm_sampler_set_rng(tm_sampler *s, tm_rng rng);

/* ------------------------------------------------------------ generation
 *
 * Batch 1, with the KV cache: the prompt goes through the model in one
 * forward (last_only), then each new token in one forward of one position
 * appended to the cache; the logits of the last position are copied to the
 * host (a host-sync point) and drawn from by a tm_sampler whose history is
 * the prompt and every token generated so far.  Grad mode and dropout are
 * off during each forward (the model's training flag and the thread's
 * grad mode are restored after it).  Generation ends after a stop token
 * (which is emitted), after max_new_tokens, when the sequence (prompt +
 * new tokens) fills the model's context (a prompt of exactly `context`
 * tokens generates nothing), or when on_token returns false (the token it
 * was given is emitted).  The last token emitted is never fed back, so n
 * new tokens cost one prompt forward and n - 1 one-token forwards. */
typedef struct tm_generate_opts {
    int64_t max_new_tokens;                  /* 64 by default; >= 0 */
    tm_sample_opts sample;                   /* tm_sample_defaults() */
    const int64_t *stop_tokens; int n_stop;  /* generation ends after emitting one of them; borrowed, ids in [0, V) */
    tm_dtype cache_dtype;                    /* F32 default; F16/BF16 store the cache rounded */
    bool (*on_token)(int64_t token, void *user); /* streaming; return false to stop; may be NULL */
    void *user;
} tm_generate_opts;
tm_generate_opts tm_generate_defaults(void);
/* Batch 1.  Writes up to max_new_tokens new ids to out[] (caller-sized), their count to *n_out.
 * Stops at a stop token (included in out), max_new_tokens, or the context limit.
 * prompt[n_prompt]: 1 <= n_prompt <= context (TM_EINVAL otherwise), ids in
 * [0, V) (TM_ERANGE naming the index and the id).  o NULL: the defaults.
 * On failure *n_out still counts the ids written before it. */
tm_status tm_gpt_generate(tm_gpt *m, const int64_t *prompt, int64_t n_prompt,
                          const tm_generate_opts *o, int64_t *out, int64_t *n_out);
/* Incremental form (Python's streaming generator uses it).  The stream
 * copies the prompt, the options and the stop tokens; m is borrowed and
 * must outlive it.  NULL with the errors of tm_gpt_generate.  Release with
 * tm_gpt_stream_free. */
typedef struct tm_gpt_stream tm_gpt_stream;
tm_gpt_stream *tm_gpt_stream_new(tm_gpt *m, const int64_t *prompt, int64_t n_prompt, const tm_generate_opts *o);
/* Next token id; -1 when finished; < -1 an error status.  Because TM_EINVAL
 * is -1, an invalid-argument failure (say, NaN logits) is returned as
 * TM_ESTATE; tm_last_status() keeps the original status.  After an error
 * the stream is finished. */
int64_t tm_gpt_stream_next(tm_gpt_stream *s);
/* Tokens emitted so far. */
int64_t tm_gpt_stream_count(const tm_gpt_stream *s);
void tm_gpt_stream_free(tm_gpt_stream *s);   /* NULL is a no-op */


#ifdef __cplusplus
}
#endif
#endif
