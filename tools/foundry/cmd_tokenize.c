/* foundry tokenize train|encode|decode. */
#include "train.h"

#include <stdlib.h>
#include <string.h>

static int tok_train(int argc, char **argv)
{
    cli_strs data = {0}, special = {0};
    const char *out = NULL, *pattern = "gpt2", *suffix = NULL;
    int64_t vocab = 0, min_freq = 2;
    bool split_digits = false, quiet = false;
    cli_flag flags[] = {
        {.name = "--data", .kind = CLI_STRS, .dst = &data, .meta = "PATH...",
         .help = "text files or directories (walked, sorted), each file one document (required)"},
        {.name = "--suffix", .kind = CLI_STR, .dst = &suffix, .meta = "SUF",
         .help = "only files ending in SUF inside directories"},
        {.name = "--vocab-size", .kind = CLI_INT, .dst = &vocab, .lo = 1, .hi = 1 << 24, .meta = "N",
         .help = "final vocabulary size: 256 bytes + specials + merges (required)"},
        {.name = "--out", .kind = CLI_STR, .dst = &out, .meta = "FILE", .help = "tokenizer.json to write (required)"},
        {.name = "--special", .kind = CLI_STRS, .dst = &special, .meta = "TOKEN...",
         .help = "special tokens, ids 0.. in order"},
        {.name = "--min-frequency", .kind = CLI_INT, .dst = &min_freq, .lo = 0, .hi = 1e12, .meta = "N",
         .help = "pairs seen fewer times are not merged"},
        {.name = "--pattern", .kind = CLI_STR, .dst = &pattern, .meta = "gpt2|llama3",
         .help = "pre-tokenizer regex"},
        {.name = "--split-digits", .kind = CLI_BOOL, .dst = &split_digits, .help = "every digit its own piece"},
        {.name = "--quiet", .kind = CLI_BOOL, .dst = &quiet, .help = "no progress bars"},
    };
    cli_cmd cmd = {
        .name = "tokenize train",
        .usage = "tokenize train --data PATH... --vocab-size N --out tokenizer.json [--special TOKEN ...] "
                 "[--min-frequency N] [--pattern gpt2|llama3] [--split-digits]",
        .summary = "Trains a byte-level BPE tokenizer (Hugging Face's algorithm) and writes its tokenizer.json.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 0, .max_pos = 0,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    corpus c = {0};
    tm_bpe_trainer *tr = NULL;
    tm_tokenizer *tok = NULL;
    tm_progress *pg = NULL;
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    free(pos);
    if (!data.n || !vocab || !out) {
        rc = cli_usage_error("tokenize train", "%s is required",
                             !data.n ? "--data PATH" : !vocab ? "--vocab-size N" : "--out FILE");
        goto done;
    }
    tm_bpe_train_opts bo = tm_bpe_train_defaults(vocab);
    if (!strcmp(pattern, "gpt2"))
        bo.pretok = TM_PRETOK_GPT2;
    else if (!strcmp(pattern, "llama3"))
        bo.pretok = TM_PRETOK_LLAMA3;
    else {
        rc = cli_usage_error("tokenize train", "--pattern: expected gpt2 or llama3, got \"%s\"", pattern);
        goto done;
    }
    bo.min_frequency = min_freq;
    bo.split_digits = split_digits;
    bo.special_tokens = special.v;
    bo.n_special = special.n;
    rc = CLI_RUNTIME;
    for (int i = 0; i < data.n; i++)
        if (corpus_add(&c, data.v[i], suffix, INT64_MAX) != TM_OK)
            goto done;
    tm_progress_mode pm = quiet ? TM_PROGRESS_SILENT : TM_PROGRESS_AUTO;
    if (!(pg = tm_progress_new("counting words", c.bytes, "B", pm, NULL)) || !(tr = tm_bpe_trainer_new(&bo)))
        goto done;
    for (int i = 0; i < c.n; i++) {
        size_t len;
        char *text = cli_read_file(c.paths[i], &len);
        tm_status s = text ? tm_bpe_trainer_feed(tr, text, len) : tm_last_status();
        free(text);
        if (s != TM_OK)
            goto done;
        tm_progress_update(pg, c.sizes[i]);
    }
    tm_progress_finish(pg);
    if (!(tok = tm_bpe_trainer_finish(tr)) || tm_tokenizer_save(tok, out) != TM_OK)
        goto done;
    printf("wrote %s: %lld tokens from %d files (%.2f MB)\n", out, (long long)tm_tokenizer_vocab_size(tok), c.n,
           c.bytes / 1e6);
    rc = CLI_OK;
done:
    if (rc == CLI_RUNTIME)
        cli_lib_error("tokenize train");
    tm_progress_free(pg);
    tm_tokenizer_free(tok);
    tm_bpe_trainer_free(tr);
    corpus_free(&c);
    cli_strs_free(&data);
    cli_strs_free(&special);
    return rc;
}

static char *read_stdin(size_t *len)
{
    size_t n = 0, cap = 0;
    char *buf = NULL;
    for (;;) {
        if (cap - n < 65536) {
            char *nb = realloc(buf, cap ? cap * 2 + 1 : 65537);
            if (!nb) {
                free(buf);
                tm_set_error(TM_ENOMEM, "reading stdin: out of memory");
                return NULL;
            }
            buf = nb;
            cap = cap ? cap * 2 : 65536;
        }
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (!got)
            break;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* A tokenizer.json, or the tokenizer.ggml.* vocabulary of a .gguf model file. */
static tm_tokenizer *load_tokenizer(const char *path)
{
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".gguf") != 0)
        return tm_tokenizer_load(path);
    tm_gguf *g = tm_gguf_open(path);
    tm_tokenizer *t = g ? tm_tokenizer_from_gguf(g) : NULL;
    tm_gguf_close(g);
    return t;
}

static int tok_encode(int argc, char **argv)
{
    const char *path = NULL;
    cli_flag flags[] = {
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &path, .meta = "FILE",
         .help = "tokenizer.json (or a run directory holding one), or a .gguf model (required)"},
        {.name = "--model", .kind = CLI_STR, .dst = &path, .meta = "FILE.gguf",
         .help = "the same: a GGUF model whose tokenizer.ggml.* metadata is the tokenizer"},
    };
    cli_cmd cmd = {
        .name = "tokenize encode", .usage = "tokenize encode --tokenizer FILE|--model FILE.gguf [TEXT | < stdin]",
        .summary = "Prints the token ids of TEXT (or of standard input, bytes as they are), space-separated.",
        .flags = flags, .n_flags = 2, .min_pos = 0, .max_pos = 1,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    tm_tokenizer *tok = NULL;
    tm_token_buf ids = {0};
    char *text = NULL;
    size_t len = 0;
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (!path) {
        free(pos);
        return cli_usage_error("tokenize encode", "--tokenizer FILE (or --model FILE.gguf) is required");
    }
    rc = CLI_RUNTIME;
    if (!(tok = load_tokenizer(path)))
        goto done;
    if (npos) {
        len = strlen(pos[0]);
        if (!(text = strdup(pos[0])))
            goto done;
    } else if (!(text = read_stdin(&len))) {
        goto done;
    }
    if (tm_tokenizer_encode(tok, text, len, &ids) != TM_OK)
        goto done;
    for (int64_t i = 0; i < ids.n; i++)
        printf("%s%d", i ? " " : "", (int)ids.ids[i]);
    putchar('\n');
    rc = CLI_OK;
done:
    if (rc == CLI_RUNTIME)
        cli_lib_error("tokenize encode");
    free(pos);
    free(text);
    tm_token_buf_free(&ids);
    tm_tokenizer_free(tok);
    return rc;
}

static int tok_decode(int argc, char **argv)
{
    const char *path = NULL;
    bool skip = false;
    cli_flag flags[] = {
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &path, .meta = "FILE",
         .help = "tokenizer.json or a .gguf model (required)"},
        {.name = "--model", .kind = CLI_STR, .dst = &path, .meta = "FILE.gguf", .help = "the same: a GGUF model"},
        {.name = "--skip-special", .kind = CLI_BOOL, .dst = &skip, .help = "leave special tokens out"},
    };
    cli_cmd cmd = {
        .name = "tokenize decode", .usage = "tokenize decode --tokenizer FILE|--model FILE.gguf IDS...",
        .summary = "Writes the bytes of the token ids to standard output (no newline added).",
        .flags = flags, .n_flags = 3, .min_pos = 1, .max_pos = 1 << 30,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    tm_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    char *bytes = NULL;
    size_t len = 0;
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (!path) {
        rc = cli_usage_error("tokenize decode", "--tokenizer FILE (or --model FILE.gguf) is required");
        goto done;
    }
    if (!(ids = malloc((size_t)npos * sizeof *ids))) {
        rc = cli_error("tokenize decode", "out of memory");
        goto done;
    }
    for (int i = 0; i < npos; i++) {
        int64_t v;
        if (!cli_parse_int(pos[i], 0, INT32_MAX, &v)) {
            rc = cli_usage_error("tokenize decode", "IDS: expected a token id, got \"%s\"", pos[i]);
            goto done;
        }
        ids[i] = (int32_t)v;
    }
    rc = CLI_RUNTIME;
    if (!(tok = load_tokenizer(path)) || !(bytes = tm_tokenizer_decode(tok, ids, npos, skip, &len)))
        goto done;
    fwrite(bytes, 1, len, stdout);
    rc = CLI_OK;
done:
    if (rc == CLI_RUNTIME)
        cli_lib_error("tokenize decode");
    free(pos);
    free(ids);
    free(bytes);
    tm_tokenizer_free(tok);
    return rc;
}

int cmd_tokenize(int argc, char **argv)
{
    static const char help[] =
        "usage: foundry tokenize train|encode|decode [flags]   (foundry tokenize SUB --help)\n\n"
        "  train   train a byte-level BPE tokenizer on text files, write tokenizer.json\n"
        "  encode  print the ids of a text\n"
        "  decode  print the text of ids\n";
    if (argc < 1)
        return cli_usage_error("tokenize", "expected train, encode or decode (see foundry tokenize --help)");
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(help, stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[0], "train"))
        return tok_train(argc - 1, argv + 1);
    if (!strcmp(argv[0], "encode"))
        return tok_encode(argc - 1, argv + 1);
    if (!strcmp(argv[0], "decode"))
        return tok_decode(argc - 1, argv + 1);
    return cli_usage_error("tokenize", "unknown subcommand \"%s\" (expected train, encode or decode)", argv[0]);
}
