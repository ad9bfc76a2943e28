/* foundry eval: a model's loss on a token dataset. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A text file (anything but a .ftok dataset) as a one-document dataset in
 * memory, tokenized with the model's tokenizer, through a temporary .ftok
 * file that is removed at once. */
static tm_token_dataset *text_dataset(const char *path, const tm_tokenizer *tok)
{
    size_t len = 0;
    char *text = cli_read_file(path, &len), tmp[] = "/tmp/foundry_eval_XXXXXX";
    tm_token_dataset *ds = NULL;
    int fd = text ? mkstemp(tmp) : -1;
    if (text && fd < 0)
        tm_set_error(TM_EIO, "cannot create a temporary file in /tmp");
    if (fd >= 0) {
        close(fd);
        tm_token_writer *w = tm_token_writer_new(tmp, tok);
        if (w && tm_token_writer_add(w, text, len) != TM_OK)
            tm_token_writer_abort(w);
        else if (w && tm_token_writer_close(w) == TM_OK)
            ds = tm_token_dataset_open(tmp);
        remove(tmp);
    }
    free(text);
    return ds;
}

int cmd_eval(int argc, char **argv)
{
    const char *model = NULL, *data = NULL, *split_name = "all";
    int64_t batch = 8, context = 0, max_batches = 0, threads = 0;
    double val_fraction = 0.1;
    bool quiet = false;
    cli_flag flags[] = {
        {.name = "--model", .kind = CLI_STR, .dst = &model, .meta = "RUN_DIR",
         .help = "a run directory (model.safetensors or model.gguf, config.json, tokenizer.json) or a "
                 ".gguf file, quantized or not (required)"},
        {.name = "--data", .kind = CLI_STR, .dst = &data, .meta = "FILE",
         .help = "a .ftok token dataset made with the model's tokenizer (default data.ftok in the "
                 "model's directory), or a text file (any other name), tokenized with the model's "
                 "tokenizer as one document"},
        {.name = "--split", .kind = CLI_STR, .dst = &split_name, .meta = "all|train|val",
         .help = "which documents (split as in training, by --val-fraction)"},
        {.name = "--val-fraction", .kind = CLI_DOUBLE, .dst = &val_fraction, .lo = 0, .hi = 0.9, .meta = "F",
         .help = "fraction of documents in the val split"},
        {.name = "--batch", .kind = CLI_INT, .dst = &batch, .lo = 1, .hi = 1 << 20, .meta = "B",
         .help = "windows per batch"},
        {.name = "--context", .kind = CLI_INT, .dst = &context, .lo = 0, .hi = 1 << 20, .meta = "T",
         .help = "window length (0: the model's context; for a text file at most 512, as "
                 "llama.cpp's perplexity)"},
        {.name = "--max-batches", .kind = CLI_INT, .dst = &max_batches, .lo = 0, .hi = 1e12, .meta = "N",
         .help = "evaluate at most N batches (0: the whole split)"},
        {.name = "--threads", .kind = CLI_INT, .dst = &threads, .lo = 0, .hi = 4096, .meta = "N",
         .help = "threads (0: the library's default)"},
        {.name = "--quiet", .kind = CLI_BOOL, .dst = &quiet, .help = "no progress bar"},
    };
    cli_cmd cmd = {
        .name = "eval", .usage = "eval --model RUN_DIR [--data FILE.ftok|TEXT] [--split all|train|val] [--batch B] "
                                 "[--context T] [--max-batches N]",
        .summary = "Mean loss (nats/token), perplexity, bits per byte and next-token accuracy of a model\n"
                   "over consecutive windows of a token dataset or a text file, and the unigram baseline.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 0, .max_pos = 0,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    tm_gpt *m = NULL;
    tm_tokenizer *tok = NULL;
    tm_token_dataset *ds = NULL;
    tm_progress *pg = NULL;
    char *dir = NULL, *ds_path = NULL;
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    free(pos);
    if (!model)
        return cli_usage_error("eval", "--model RUN_DIR is required");
    tm_token_split split;
    if (!strcmp(split_name, "all"))
        split = TM_SPLIT_ALL;
    else if (!strcmp(split_name, "train"))
        split = TM_SPLIT_TRAIN;
    else if (!strcmp(split_name, "val"))
        split = TM_SPLIT_VAL;
    else
        return cli_usage_error("eval", "--split: expected all, train or val, got \"%s\"", split_name);
    if (threads)
        tm_set_num_threads((int)threads);
    bool text = data && !cli_ends_with(data, ".ftok");
    rc = CLI_RUNTIME;
    if (!(dir = cli_model_dir(model)) || !(ds_path = cli_path(dir, "data.ftok")) ||
        !(tok = cli_load_tokenizer(model)) || !(m = tm_gpt_load(model)) ||
        !(ds = text ? text_dataset(data, tok) : tm_token_dataset_open(data ? data : ds_path)) ||
        tm_token_dataset_check_tokenizer(ds, tok) != TM_OK ||
        tm_token_dataset_set_val_fraction(ds, val_fraction) != TM_OK)
        goto fail;
    int64_t T = context ? context : tm_gpt_config_of(m)->context;
    if (text && !context && T > 512)
        T = 512;
    tm_eval_result r;
    int64_t total = tm_token_dataset_tokens(ds, split) - 1; /* targets: every token after the first */
    if (max_batches && max_batches * batch * T < total)
        total = max_batches * batch * T;
    if (!(pg = tm_progress_new("eval", total, "tok", quiet ? TM_PROGRESS_SILENT : TM_PROGRESS_AUTO, NULL)) ||
        tm_gpt_evaluate(m, ds, split, batch, T, max_batches, pg, &r) != TM_OK)
        goto fail;
    tm_progress_finish(pg);
    printf("tokens      %lld\n", (long long)r.tokens);
    printf("loss        %.4f nats/token\n", r.mean_loss);
    printf("perplexity  %.3f\n", r.perplexity);
    printf("bits/byte   %.4f\n", r.bits_per_byte);
    printf("accuracy    %.2f%%\n", 100 * r.accuracy);
    if (split != TM_SPLIT_TRAIN && tm_token_dataset_tokens(ds, TM_SPLIT_VAL) > 0) {
        double u = tm_token_dataset_unigram_loss(ds, TM_SPLIT_TRAIN, split);
        printf("unigram     %.4f nats/token (fit on the train split)\n", u);
    }
    rc = CLI_OK;
fail:
    if (rc == CLI_RUNTIME)
        cli_lib_error("eval");
    free(dir);
    free(ds_path);
    tm_gpt_free(m);
    tm_tokenizer_free(tok);
    tm_token_dataset_close(ds);
    tm_progress_free(pg);
    return rc;
}
