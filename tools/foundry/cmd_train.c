/* foundry train: a tokenizer, a token dataset and a GPT/Llama model from
 * text files, into a run directory that `--resume` continues bit-exactly. */
#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Flags a resumed run may change: how long it runs and how it reports. */
static const char *const MAY_CHANGE[] = {"--steps", "--stop-at", "--threads", "--eval-every",
                                         "--eval-batches", "--checkpoint-every", "--resume",
                                         "--quiet", "--out", NULL};

#define DEFAULT_CORPUS_MB 6

#define F_INT(n, d, l, h, m, t) {.name = n, .kind = CLI_INT, .dst = d, .lo = l, .hi = h, .meta = m, .help = t}
#define F_DBL(n, d, l, h, m, t) {.name = n, .kind = CLI_DOUBLE, .dst = d, .lo = l, .hi = h, .meta = m, .help = t}
#define F_STR(n, d, m, t) {.name = n, .kind = CLI_STR, .dst = d, .meta = m, .help = t}
#define F_BOOL(n, d, t) {.name = n, .kind = CLI_BOOL, .dst = d, .help = t}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* The model's shape: a preset (gpt-tiny unless --preset) with the size flags
 * given on top of it, and the tokenizer's vocabulary. */
static int build_config(const train_opts *o, const tm_tokenizer *tok, const cli_cmd *cmd,
                        tm_gpt_config *c)
{
    if (tm_gpt_preset(o->preset ? o->preset : "gpt-tiny", c) != TM_OK)
        return cli_usage_error(o->sub, "--preset: %s", tm_last_error());
    if (o->rope)
        c->pos = TM_GPT_POS_ROPE;
    if (o->rmsnorm)
        c->norm = TM_GPT_RMSNORM;
    if (o->swiglu)
        c->mlp = TM_GPT_MLP_SWIGLU;
    if (o->d_model)
        c->d_model = o->d_model;
    if (o->layers)
        c->n_layers = o->layers;
    if (o->heads) {
        c->n_heads = o->heads;
        if (!cli_find(cmd, "--kv-heads")->seen)
            c->n_kv_heads = o->heads;
    }
    if (o->kv_heads)
        c->n_kv_heads = o->kv_heads;
    if (o->d_model || o->heads)
        c->head_dim = 0;
    if (o->d_ff)
        c->d_ff = o->d_ff;
    else if (o->d_model)
        c->d_ff = c->mlp == TM_GPT_MLP_SWIGLU ? (8 * c->d_model / 3 + 63) / 64 * 64 : 4 * c->d_model;
    if (o->context)
        c->context = o->context;
    if (cli_find(cmd, "--dropout")->seen)
        c->dropout = o->dropout;
    int64_t hd = c->head_dim ? c->head_dim : (c->n_heads ? c->d_model / c->n_heads : 0);
    if (c->pos == TM_GPT_POS_ROPE) {
        double theta = c->rope.theta > 0 ? c->rope.theta : 10000.0;
        if (c->rope.head_dim != hd) {
            c->rope = tm_rope_defaults(hd);
            c->rope.theta = theta;
        }
    }
    c->vocab_size = tm_tokenizer_vocab_size(tok);
    c->bos_id = tm_tokenizer_bos_id(tok);
    c->eos_id = tm_tokenizer_eos_id(tok);
    if (tm_gpt_config_check(c) != TM_OK)
        return cli_usage_error(o->sub, "model: %s", tm_last_error());
    return CLI_OK;
}

/* The tokenizer and the dataset of a new run: from a .ftok file and its
 * --tokenizer, or from text (the default corpus when --data is absent). */
static int prepare_data(train_opts *o, tm_progress_mode pm, tm_tokenizer **tok_out,
                        tm_token_dataset **ds_out)
{
    corpus c = {0};
    char *def = NULL, *tok_path = cli_path(o->out, "tokenizer.json");
    char *ds_path = cli_path(o->out, "data.ftok");
    tm_tokenizer *tok = NULL;
    tm_token_dataset *ds = NULL;
    int rc = CLI_RUNTIME;
    if (!tok_path || !ds_path)
        goto fail;
    if (o->data.n == 1 && ends_with(o->data.v[0], ".ftok")) {
        if (!o->tokenizer) {
            rc = cli_usage_error(o->sub, "--data %s is a token dataset: give its --tokenizer FILE",
                                 o->data.v[0]);
            goto fail;
        }
        if (!(tok = tm_tokenizer_load(o->tokenizer)) || !(ds = tm_token_dataset_open(o->data.v[0])) ||
            tm_token_dataset_check_tokenizer(ds, tok) != TM_OK ||
            tm_tokenizer_save(tok, tok_path) != TM_OK)
            goto fail;
        printf("data: %s (%lld documents, %lld tokens)\n", o->data.v[0],
               (long long)tm_token_dataset_docs(ds, TM_SPLIT_ALL),
               (long long)tm_token_dataset_tokens(ds, TM_SPLIT_ALL));
        goto done;
    }
    int64_t cap = (o->max_data_mb ? o->max_data_mb : (o->data.n ? INT64_MAX / (1 << 20) : DEFAULT_CORPUS_MB)) *
                  (1 << 20);
    const char *suffix = o->suffix;
    if (o->data.n == 0) {
        if (!(def = corpus_default_dir()))
            goto fail;
        if (!suffix)
            suffix = ".py";
        if (corpus_add(&c, def, suffix, cap) != TM_OK)
            goto fail;
    }
    for (int i = 0; i < o->data.n; i++)
        if (corpus_add(&c, o->data.v[i], suffix, cap) != TM_OK)
            goto fail;
    if (c.n == 0 || c.bytes == 0) {
        tm_set_error(TM_EINVAL, "no text found in --data%s%s", suffix ? " with suffix " : "",
                     suffix ? suffix : "");
        goto fail;
    }
    printf("data: %s%s%s%s: %d files, %.2f MB\n", def ? def : o->data.v[0], o->data.n > 1 ? " ..." : "",
           suffix ? ", *" : "", suffix ? suffix : "", c.n, c.bytes / 1e6);
    fflush(stdout);
    if (!(tok = train_tokenizer(o, &c, pm)) || tm_tokenizer_save(tok, tok_path) != TM_OK ||
        train_write_dataset(ds_path, &c, tok, pm) != TM_OK || !(ds = tm_token_dataset_open(ds_path)))
        goto fail;
done:
    *tok_out = tok;
    *ds_out = ds;
    tok = NULL;
    ds = NULL;
    rc = CLI_OK;
fail:
    if (rc == CLI_RUNTIME)
        cli_lib_error(o->sub);
    tm_tokenizer_free(tok);
    tm_token_dataset_close(ds);
    corpus_free(&c);
    free(def);
    free(tok_path);
    free(ds_path);
    return rc;
}

/* A resumed run: the tokenizer and model of RUN_DIR, the dataset it trained on. */
static int resume_data(train_opts *o, tm_tokenizer **tok_out, tm_token_dataset **ds_out, tm_gpt **m_out)
{
    char *tok_path = cli_path(o->out, "tokenizer.json"), *ds_path = cli_path(o->out, "data.ftok");
    tm_tokenizer *tok = NULL;
    tm_token_dataset *ds = NULL;
    tm_gpt *m = NULL;
    int rc = CLI_RUNTIME;
    if (!tok_path || !ds_path || !(tok = tm_tokenizer_load(tok_path)))
        goto done;
    const char *dsp = (o->data.n == 1 && ends_with(o->data.v[0], ".ftok")) ? o->data.v[0] : ds_path;
    if (!(ds = tm_token_dataset_open(dsp)) || tm_token_dataset_check_tokenizer(ds, tok) != TM_OK ||
        !(m = tm_gpt_load(o->out)))
        goto done;
    if (tm_gpt_config_of(m)->vocab_size != tm_tokenizer_vocab_size(tok)) {
        tm_set_error(TM_EFORMAT, "%s: the model's vocab_size %lld differs from the tokenizer's %lld",
                     o->out, (long long)tm_gpt_config_of(m)->vocab_size,
                     (long long)tm_tokenizer_vocab_size(tok));
        goto done;
    }
    *tok_out = tok;
    *ds_out = ds;
    *m_out = m;
    tok = NULL;
    ds = NULL;
    m = NULL;
    rc = CLI_OK;
done:
    if (rc != CLI_OK)
        cli_lib_error(o->sub);
    tm_gpt_free(m);
    tm_tokenizer_free(tok);
    tm_token_dataset_close(ds);
    free(tok_path);
    free(ds_path);
    return rc;
}

int train_command(int argc, char **argv, const train_ext *ext)
{
    train_opts o = {
        .vocab_size = 2048, .steps = 1000, .batch = 16, .grad_accum = 1, .lr = 1e-3, .min_lr = 1e-4,
        .warmup = 100, .weight_decay = 0.1, .clip = 1.0, .eval_every = 100, .eval_batches = 20,
        .seed = 1337, .val_fraction = 0.1, .out = NULL,
    };
    cli_flag flags[] = {
        {.name = "--data", .kind = CLI_STRS, .dst = &o.data, .meta = "PATH...",
         .help = "text files or directories (walked, sorted), or one .ftok dataset; absent: the Python "
                 "standard library's *.py"},
        F_STR("--suffix", &o.suffix, "SUF", "only files ending in SUF inside directories (e.g. .py)"),
        F_INT("--max-data-mb", &o.max_data_mb, 0, 1e6, "N",
              "use at most N MB of text (0: all of --data, 6 MB of the default corpus)"),
        F_STR("--tokenizer", &o.tokenizer, "FILE", "a tokenizer.json to use instead of training one"),
        F_INT("--vocab-size", &o.vocab_size, 257, 1 << 20, "N", "train a byte-level BPE of N tokens"),
        F_BOOL("--char", &o.char_level, "a char-level tokenizer instead of BPE"),
        F_STR("--preset", &o.preset, "NAME", "model preset (gpt-tiny if absent; llama-tiny, gpt2, ...)"),
        F_INT("--d-model", &o.d_model, 0, 1 << 16, "N", "width (0: the preset's)"),
        F_INT("--layers", &o.layers, 0, 1024, "N", "transformer blocks (0: the preset's)"),
        F_INT("--heads", &o.heads, 0, 1024, "N", "attention heads (0: the preset's)"),
        F_INT("--kv-heads", &o.kv_heads, 0, 1024, "N", "key/value heads, GQA (0: = --heads)"),
        F_INT("--d-ff", &o.d_ff, 0, 1 << 20, "N", "MLP hidden size (0: the preset's, or from --d-model)"),
        F_INT("--context", &o.context, 0, 1 << 20, "N", "context length T (0: the preset's)"),
        F_BOOL("--rope", &o.rope, "rotary positions instead of learned ones"),
        F_BOOL("--rmsnorm", &o.rmsnorm, "RMSNorm instead of LayerNorm"),
        F_BOOL("--swiglu", &o.swiglu, "SwiGLU MLP instead of GELU"),
        F_DBL("--dropout", &o.dropout, 0, 0.99, "P", "dropout probability (absent: the preset's)"),
        F_INT("--steps", &o.steps, 1, 1e12, "N", "optimizer steps"),
        F_INT("--batch", &o.batch, 1, 1 << 20, "B", "sequences per micro-batch"),
        F_INT("--grad-accum", &o.grad_accum, 1, 1 << 20, "N", "micro-batches per step"),
        F_DBL("--lr", &o.lr, 0, 10, "LR", "peak learning rate (AdamW, betas 0.9 0.95)"),
        F_DBL("--min-lr", &o.min_lr, 0, 10, "LR", "learning rate at the end of the cosine decay"),
        F_INT("--warmup", &o.warmup, 0, 1e12, "N", "linear warm-up steps"),
        F_DBL("--weight-decay", &o.weight_decay, 0, 10, "WD", "AdamW weight decay (matrices only)"),
        F_DBL("--clip", &o.clip, 0, 1e9, "NORM", "clip the gradient norm (0: off)"),
        F_INT("--eval-every", &o.eval_every, 0, 1e12, "N", "validation loss every N steps (0: at the end)"),
        F_INT("--eval-batches", &o.eval_batches, 1, 1e9, "N",
              "random val batches per evaluation while training (the final one: the whole split)"),
        F_INT("--checkpoint-every", &o.checkpoint_every, 0, 1e12, "N", "checkpoint every N steps (0: at the end)"),
        F_INT("--seed", &o.seed, 0, 9.2e18, "N", "seed of the initialisation, dropout and batches"),
        F_INT("--threads", &o.threads, 0, 4096, "N", "threads (0: the library's default)"),
        F_DBL("--val-fraction", &o.val_fraction, 0, 0.9, "F", "fraction of documents held out"),
        F_INT("--stop-at", &o.stop_at, 0, 1e12, "N", "stop after step N with a checkpoint, as if interrupted"),
        F_STR("--out", &o.out, "RUN_DIR", "the run directory (required)"),
        F_BOOL("--resume", &o.resume, "continue the run in RUN_DIR from its last checkpoint"),
        F_BOOL("--quiet", &o.quiet, "no progress bars"),
    };
    enum { N_TRAIN = (int)(sizeof flags / sizeof flags[0]) };
    cli_flag all[N_TRAIN + TRAIN_EXT_MAX];
    int n_ext = ext ? ext->n_flags : 0;
    if (n_ext > TRAIN_EXT_MAX)
        return cli_error(ext->name, "too many flags");
    memcpy(all, flags, sizeof flags);
    if (n_ext)
        memcpy(all + N_TRAIN, ext->flags, sizeof(cli_flag) * (size_t)n_ext);
    cli_cmd cmd = {
        .name = "train",
        .usage = "train [--data PATH...] [--tokenizer FILE | --vocab-size N | --char] [--preset NAME] "
                 "[size flags] [--steps N ...] --out RUN_DIR [--resume]",
        .summary = "Trains a tokenizer (unless --tokenizer), writes RUN_DIR/data.ftok, and trains a GPT/Llama\n"
                   "model with AdamW, warm-up then cosine decay, gradient clipping; evaluates on held-out\n"
                   "documents; writes RUN_DIR/metrics.jsonl, loss.svg, model.safetensors, config.json,\n"
                   "tokenizer.json, optimizer.safetensors and trainer.json.",
        .flags = all, .n_flags = N_TRAIN + n_ext, .min_pos = 0, .max_pos = 0,
    };
    o.sub = "train";
    if (ext) {
        o.sub = ext->name;
        cmd.name = ext->name;
        cmd.usage = ext->usage;
        cmd.summary = ext->summary;
    }
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    tm_tokenizer *tok = NULL;
    tm_token_dataset *ds = NULL;
    tm_gpt *m = NULL;
    train_state st = {0};
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    free(pos);
    if (!o.out) {
        rc = cli_usage_error(cmd.name, "--out RUN_DIR is required");
        goto done;
    }
    if (ext && (rc = ext->ready(ext->ctx, &cmd, &o)) != CLI_OK)
        goto done;
    if (o.resume && (rc = ckpt_read_trainer(o.out, &st, &cmd, MAY_CHANGE)) != CLI_OK) {
        if (rc == CLI_RUNTIME)
            cli_lib_error(o.sub);
        goto done;
    }
    /* An earlier run's --stop-at is not this one's. */
    if (o.resume && !cli_find(&cmd, "--stop-at")->seen)
        o.stop_at = 0;
    if ((o.tokenizer != NULL) + o.char_level + cli_find(&cmd, "--vocab-size")->seen > 1) {
        rc = cli_usage_error(o.sub, "--tokenizer, --vocab-size and --char exclude each other");
        goto done;
    }
    if (o.warmup >= o.steps) {
        rc = cli_usage_error(o.sub, "--warmup %lld must be below --steps %lld", (long long)o.warmup,
                             (long long)o.steps);
        goto done;
    }
    if (o.stop_at && o.stop_at <= st.step) {
        rc = cli_usage_error(o.sub, "--stop-at %lld: the run is already at step %lld",
                             (long long)o.stop_at, (long long)st.step);
        goto done;
    }
    if (o.threads)
        tm_set_num_threads((int)o.threads);
    if (cli_mkdir(o.out) != TM_OK) {
        rc = cli_lib_error(o.sub);
        goto done;
    }
    tm_progress_mode pm = o.quiet ? TM_PROGRESS_SILENT : TM_PROGRESS_AUTO;
    if (o.resume) {
        if ((rc = resume_data(&o, &tok, &ds, &m)) != CLI_OK)
            goto done;
        tm_gpt_set_training(m, true);
        if (tm_gpt_set_rng(m, st.model_rng) != TM_OK) {
            rc = cli_lib_error(o.sub);
            goto done;
        }
        printf("resuming %s at step %lld of %lld\n", o.out, (long long)st.step, (long long)o.steps);
    } else {
        tm_gpt_config c;
        if ((rc = prepare_data(&o, pm, &tok, &ds)) != CLI_OK ||
            (rc = build_config(&o, tok, &cmd, &c)) != CLI_OK)
            goto done;
        tm_rng rng = tm_rng_new((uint64_t)o.seed);
        if (!(m = tm_gpt_new(&c, &rng)) || tm_gpt_set_rng(m, tm_rng_split(&rng)) != TM_OK) {
            rc = cli_lib_error(o.sub);
            goto done;
        }
        tm_gpt_set_training(m, true);
    }
    if (tm_token_dataset_set_val_fraction(ds, o.val_fraction) != TM_OK) {
        rc = cli_lib_error(o.sub);
        goto done;
    }
    rc = train_run(&o, &cmd, m, tok, ds, &st);
done:
    tm_gpt_free(m);
    tm_token_dataset_close(ds);
    tm_tokenizer_free(tok);
    cli_strs_free(&o.data);
    ckpt_release();
    return rc;
}

int cmd_train(int argc, char **argv) { return train_command(argc, argv, NULL); }
