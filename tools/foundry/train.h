/*
 * train.h — the pieces of `foundry train`: its options, the corpus and
 * tokenizer set-up, the run directory's checkpoint files, and the loop.
 */
#ifndef FOUNDRY_TOOLS_TRAIN_H
#define FOUNDRY_TOOLS_TRAIN_H

#include "cli.h"

typedef struct train_opts {
    const char *sub; /* the command's name in messages: "train" */
    cli_strs data;
    const char *suffix;
    int64_t max_data_mb;
    const char *tokenizer;
    int64_t vocab_size;
    bool char_level;
    const char *preset;
    int64_t d_model, layers, heads, kv_heads, d_ff, context;
    bool rope, rmsnorm, swiglu;
    double dropout;
    int64_t steps, batch, grad_accum;
    double lr, min_lr;
    int64_t warmup;
    double weight_decay, clip;
    int64_t eval_every, eval_batches, checkpoint_every, seed, threads;
    double val_fraction;
    int64_t stop_at;
    const char *out;
    bool resume, quiet;
    int64_t sample_tokens;
    const char *sample_prompt;
    /* A worker's part in a swarm (foundry swarm worker); NULL: alone.
     * Each step then exchanges gradients through tm_swarm_step. */
    const tm_swarm_opts *swarm;
} train_opts;

/* Another command built on train's flags and pipeline (foundry swarm
 * worker): its name and help, up to TRAIN_EXT_MAX flags of its own, and a
 * check run after parsing that may refuse the combination (a CLI_* code,
 * errors printed) and sets o->swarm. */
#define TRAIN_EXT_MAX 24
typedef struct train_ext {
    const char *name, *usage, *summary;
    cli_flag *flags;
    int n_flags;
    int (*ready)(void *ctx, const cli_cmd *cmd, train_opts *o);
    void *ctx;
} train_ext;
int train_command(int argc, char **argv, const train_ext *ext);

/* The corpus: files (directories walked recursively, entries sorted by name
 * so a run is deterministic), filtered by suffix, at most max_bytes in all
 * (files past the cap are left out whole).  paths/sizes are malloc'd;
 * corpus_free. */
typedef struct corpus {
    char **paths;
    int64_t *sizes;
    int n, cap;
    int64_t bytes;
} corpus;
tm_status corpus_add(corpus *c, const char *path, const char *suffix, int64_t max_bytes);
void corpus_free(corpus *c);
/* The Python standard library's directory (python3's sysconfig, else the
 * first /usr/lib/python3.* with an os.py), malloc'd; NULL with an error. */
char *corpus_default_dir(void);

/* Trains (BPE with --vocab-size, or char-level with --char) on the corpus,
 * or loads --tokenizer.  Returns a new tokenizer or NULL (error set). */
tm_tokenizer *train_tokenizer(const train_opts *o, const corpus *c, tm_progress_mode pm);
/* Encodes every corpus file as one document into path (a .ftok dataset). */
tm_status train_write_dataset(const char *path, const corpus *c, const tm_tokenizer *tok,
                              tm_progress_mode pm);

/* What trainer.json keeps beside the flags. */
typedef struct train_state {
    int64_t step;            /* optimizer steps done */
    int64_t loader_position; /* batches drawn from the train loader */
    tm_rng model_rng;        /* the model's dropout generator */
} train_state;

/* Writes RUN_DIR/trainer.json (atomically: a temporary file renamed):
 * format, version, the state, and every flag of cmd by name. */
tm_status ckpt_write_trainer(const char *dir, const train_state *st, const cli_cmd *cmd);
/* Reads RUN_DIR/trainer.json into *st and sets every flag of cmd the
 * command line did not give; a flag given with another value than the
 * run's is an error unless it is in `may_change` (NULL-terminated).
 * Returns CLI_OK, CLI_USAGE (printed) or CLI_RUNTIME (error set, not
 * printed). */
int ckpt_read_trainer(const char *dir, train_state *st, cli_cmd *cmd,
                      const char *const *may_change);
/* Releases what ckpt_read_trainer kept (the restored string flags point
 * into it). */
void ckpt_release(void);
/* optimizer.safetensors: tm_optim_state_dict written / loaded back. */
tm_status ckpt_save_optim(const tm_optim *opt, const char *dir);
tm_status ckpt_load_optim(tm_optim *opt, const char *dir);

/* Runs the training loop from st->step to o->steps (or o->stop_at) and the
 * final evaluation; returns a CLI_* status (errors printed). */
int train_run(const train_opts *o, const cli_cmd *cmd, tm_gpt *m, tm_tokenizer *tok,
              tm_token_dataset *ds, train_state *st);

#endif
