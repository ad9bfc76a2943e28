/* foundry generate: samples from a trained model, printing tokens as they
 * come. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct stream_state {
    const tm_tokenizer *tok;
    int32_t pending[16];   /* ids whose bytes end inside a UTF-8 character */
    int n_pending;
    const char *stop_text; /* ends generation once the output contains it */
    char tail[256];        /* the last bytes printed, to find stop_text across tokens */
    size_t tail_len;
    bool stopped, failed;
} stream_state;

static void emit(stream_state *ss, const char *s, size_t n)
{
    fwrite(s, 1, n, stdout);
    fflush(stdout);
    if (!ss->stop_text)
        return;
    size_t k = strlen(ss->stop_text);
    /* Keep the last bytes (enough for the stop text) to match across tokens. */
    for (size_t i = 0; i < n; i++) {
        if (ss->tail_len == sizeof ss->tail - 1) {
            memmove(ss->tail, ss->tail + 128, ss->tail_len - 128);
            ss->tail_len -= 128;
        }
        ss->tail[ss->tail_len++] = s[i];
    }
    ss->tail[ss->tail_len] = '\0';
    for (size_t i = 0; k && i + k <= ss->tail_len && !ss->stopped; i++)
        ss->stopped = !memcmp(ss->tail + i, ss->stop_text, k);
}

static bool flush_pending(stream_state *ss, bool force)
{
    size_t len = 0;
    char *bytes = tm_tokenizer_decode(ss->tok, ss->pending, ss->n_pending, true, &len);
    if (!bytes) {
        ss->failed = true;
        return false;
    }
    size_t ok = cli_utf8_complete((const unsigned char *)bytes, len);
    if (ok == len || force) {
        emit(ss, bytes, len);
        ss->n_pending = 0;
    }
    free(bytes);
    return true;
}

static bool on_token(int64_t token, void *user)
{
    stream_state *ss = user;
    ss->pending[ss->n_pending++] = (int32_t)token;
    /* A character is at most 4 bytes: a longer pending run is not UTF-8, print it. */
    if (!flush_pending(ss, ss->n_pending == (int)(sizeof ss->pending / sizeof ss->pending[0])))
        return false;
    return !ss->stopped;
}

int cmd_generate(int argc, char **argv)
{
    const char *model = NULL, *prompt = "", *stop = NULL;
    int64_t max_new = 200, threads = 0;
    cli_sampling smp = {.temperature = 0.8, .top_p = 1.0, .rep = 1.0};
    bool stats = false;
    cli_flag flags[] = {
        {.name = "--model", .kind = CLI_STR, .dst = &model, .meta = "RUN_DIR",
         .help = "a run directory (model.safetensors or model.gguf, config.json, tokenizer.json) or a "
                 ".gguf file, quantized or not: Foundry's own or llama.cpp's Llama layout with its "
                 "tokenizer (e.g. SmolLM2-135M-Instruct.Q4_1.gguf) (required)"},
        {.name = "--prompt", .kind = CLI_STR, .dst = &prompt, .meta = "TEXT", .help = "text to continue"},
        {.name = "--max-new-tokens", .kind = CLI_INT, .dst = &max_new, .lo = 0, .hi = 1e9, .meta = "N",
         .help = "tokens to generate at most"},
        CLI_SAMPLING_FLAGS(&smp),
        {.name = "--stop", .kind = CLI_STR, .dst = &stop, .meta = "TEXT",
         .help = "stop once the output contains TEXT (the end-of-text token always stops)"},
        {.name = "--threads", .kind = CLI_INT, .dst = &threads, .lo = 0, .hi = 4096, .meta = "N",
         .help = "threads (0: the library's default)"},
        {.name = "--stats", .kind = CLI_BOOL, .dst = &stats,
         .help = "after the text, one line on stderr: tokens generated, seconds, tokens/s"},
    };
    cli_cmd cmd = {
        .name = "generate", .usage = "generate --model RUN_DIR [--prompt TEXT] [sampling flags]",
        .summary = "Prints the prompt, then the model's continuation token by token as it is sampled\n"
                   "(with the KV cache), until --max-new-tokens, the end-of-text token, --stop or the\n"
                   "model's context.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 0, .max_pos = 0,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    tm_gpt *m = NULL;
    tm_tokenizer *tok = NULL;
    tm_token_buf ids = {0};
    int64_t *prompt_ids = NULL, *out = NULL, n_out = 0;
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    free(pos);
    if (!model)
        return cli_usage_error("generate", "--model RUN_DIR is required");
    if (threads)
        tm_set_num_threads((int)threads);
    rc = CLI_RUNTIME;
    if (!(tok = cli_load_tokenizer(model)) ||
        !(m = tm_gpt_load(model)) || tm_tokenizer_encode(tok, prompt, strlen(prompt), &ids) != TM_OK)
        goto fail;
    int64_t eos = tm_tokenizer_eos_id(tok), bos = tm_tokenizer_bos_id(tok);
    int64_t n_prompt = ids.n ? ids.n : 1;
    if (!(prompt_ids = malloc((size_t)n_prompt * sizeof *prompt_ids)) ||
        !(out = malloc(((size_t)max_new + 1) * sizeof *out))) {
        tm_set_error(TM_ENOMEM, "out of memory");
        goto fail;
    }
    for (int64_t i = 0; i < ids.n; i++)
        prompt_ids[i] = ids.ids[i];
    /* An empty prompt starts from a document boundary, as training saw it. */
    if (!ids.n) {
        if (bos < 0 && eos < 0) {
            rc = cli_usage_error("generate", "--prompt is empty and the tokenizer has no bos/eos token "
                                             "to start from");
            goto fail;
        }
        prompt_ids[0] = bos >= 0 ? bos : eos;
    }
    tm_generate_opts go = tm_generate_defaults();
    go.max_new_tokens = max_new;
    go.sample = cli_sampling_opts(&smp);
    /* Stop at the tokenizer's eos and at the model's (a GGUF file's
     * tokenizer.ggml.eos_token_id) when that is another id. */
    int64_t stops[2], meos = tm_gpt_config_of(m)->eos_id;
    int n_stop = 0;
    if (eos >= 0)
        stops[n_stop++] = eos;
    if (meos >= 0 && meos != eos)
        stops[n_stop++] = meos;
    go.stop_tokens = n_stop ? stops : NULL;
    go.n_stop = n_stop;
    stream_state ss = {.tok = tok, .stop_text = stop};
    go.on_token = on_token;
    go.user = &ss;
    fwrite(prompt, 1, strlen(prompt), stdout);
    fflush(stdout);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (tm_gpt_generate(m, prompt_ids, n_prompt, &go, out, &n_out) != TM_OK || ss.failed ||
        (ss.n_pending && !flush_pending(&ss, true)))
        goto fail;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fputc('\n', stdout);
    if (stats) {
        double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        fflush(stdout);
        fprintf(stderr, "generated %lld tokens in %.3f s: %.1f tokens/s (prompt %lld tokens)\n",
                (long long)n_out, sec, sec > 0 ? (double)n_out / sec : 0.0, (long long)n_prompt);
    }
    rc = CLI_OK;
fail:
    if (rc == CLI_RUNTIME) {
        fflush(stdout);
        cli_lib_error("generate");
    }
    tm_token_buf_free(&ids);
    free(prompt_ids);
    free(out);
    tm_gpt_free(m);
    tm_tokenizer_free(tok);
    return rc;
}
