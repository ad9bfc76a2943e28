/* foundry embed: sentence embeddings of stdin's lines (foundry/bert.h). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Lines are embedded CHUNK at a time, so output streams and memory stays
 * bounded however long the input is. */
#define CHUNK 1024

static void write_row(const float *v, int64_t dim, bool tsv)
{
    if (!tsv) putchar('[');
    for (int64_t k = 0; k < dim; k++) {
        if (k) fputs(tsv ? "\t" : ", ", stdout);
        /* %.9g round-trips every float32 */
        printf("%.9g", (double)v[k]);
    }
    fputs(tsv ? "\n" : "]\n", stdout);
}

static void free_lines(char **lines, int64_t n)
{
    for (int64_t i = 0; i < n; i++) free(lines[i]);
}

int cmd_embed(int argc, char **argv)
{
    const char *sub = "embed", *model = NULL, *format = "jsonl";
    int64_t batch = 32, threads = 0;
    bool no_norm = false;
    cli_flag flags[] = {
        {.name = "--model", .kind = CLI_STR, .dst = &model, .meta = "DIR",
         .help = "a sentence-transformers model directory (config.json, model.safetensors, "
                 "tokenizer.json, modules.json, ...) (required)"},
        {.name = "--batch-size", .kind = CLI_INT, .dst = &batch, .lo = 1, .hi = 1 << 20, .meta = "N",
         .help = "sentences per forward pass"},
        {.name = "--format", .kind = CLI_STR, .dst = &format, .meta = "jsonl|tsv",
         .help = "one JSON array per line, or tab-separated values"},
        {.name = "--no-normalize", .kind = CLI_BOOL, .dst = &no_norm,
         .help = "skip the L2 normalisation even when modules.json has it"},
        {.name = "--threads", .kind = CLI_INT, .dst = &threads, .lo = 0, .hi = 4096, .meta = "N",
         .help = "threads (0: the library's default, all CPUs)"},
    };
    cli_cmd cmd = {
        .name = sub,
        .usage = "embed --model DIR [--batch-size N] [--format jsonl|tsv] [--no-normalize] < lines.txt",
        .summary = "Embeds each line of stdin (UTF-8; the newline is not part of the text) as "
                   "sentence-transformers does: tokenize, truncate to max_seq_length, encode, pool, "
                   "normalise; writes one embedding per line, in input order.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 0, .max_pos = 0,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
    free(pos);
    if (!model) return cli_usage_error(sub, "--model DIR is required");
    bool tsv = !strcmp(format, "tsv");
    if (!tsv && strcmp(format, "jsonl"))
        return cli_usage_error(sub, "--format: expected jsonl or tsv, got \"%s\"", format);
    if (threads > 0) tm_set_num_threads((int)threads);
    tm_sentence_encoder *e = tm_sentence_encoder_load(model);
    if (!e) return cli_lib_error(sub);
    int64_t dim = tm_sentence_encoder_dim(e);
    bool norm = tm_sentence_encoder_normalizes(e) && !no_norm;
    char **lines = calloc(CHUNK, sizeof *lines);
    float *out = malloc((size_t)(CHUNK * dim) * sizeof *out);
    char *line = NULL;
    size_t cap = 0;
    int64_t n = 0, lineno = 0;
    rc = CLI_OK;
    if (!lines || !out) {
        rc = cli_error(sub, "out of memory");
        goto done;
    }
    for (;;) {
        ssize_t got = getline(&line, &cap, stdin);
        if (got >= 0) {
            lineno++;
            if ((size_t)got != strlen(line)) {
                rc = cli_error(sub, "line %lld contains a NUL byte", (long long)lineno);
                goto done;
            }
            while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
            if (!(lines[n] = strdup(line))) {
                rc = cli_error(sub, "out of memory");
                goto done;
            }
            n++;
        }
        if (n == CHUNK || (got < 0 && n > 0)) {
            if (tm_sentence_encoder_encode_ex(e, (const char *const *)lines, n, batch, norm, out)) {
                /* texts[i] in the library's message is line first + i */
                rc = cli_error(sub, "lines %lld-%lld (texts[0] = line %lld): %s",
                               (long long)(lineno - n + 1), (long long)lineno,
                               (long long)(lineno - n + 1), tm_last_error());
                goto done;
            }
            for (int64_t i = 0; i < n; i++) write_row(out + i * dim, dim, tsv);
            free_lines(lines, n);
            n = 0;
        }
        if (got < 0) break;
    }
    if (ferror(stdin)) rc = cli_error(sub, "reading stdin failed");
    if (fflush(stdout)) rc = cli_error(sub, "writing stdout failed");
done:
    if (lines) free_lines(lines, n);
    free(lines);
    free(out);
    free(line);
    tm_sentence_encoder_free(e);
    return rc;
}
