/* foundry chat: a multi-turn conversation with an instruction-tuned model
 * from a GGUF file, its prompt built by the file's chat template
 * (tokenizer.chat_template).  Each line of stdin is a user turn; the reply
 * streams to stdout and joins the history.  Works from a pipe. */
#include "cli.h"

#include "foundry/gguf.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct chat_stream {
    const tm_tokenizer *tok;
    int32_t *ids;      /* the reply's ids so far */
    int64_t n, cap;
    size_t printed;    /* bytes of the decoded reply already printed */
    bool failed;
} chat_stream;

/* Prints what the reply's text gained (special tokens left out); the reply
 * is decoded whole each time, so characters split across tokens come out
 * once complete. */
static bool show(chat_stream *cs, bool final)
{
    size_t len = 0;
    char *text = tm_tokenizer_decode(cs->tok, cs->ids, cs->n, true, &len);
    if (!text) {
        cs->failed = true;
        return false;
    }
    size_t upto = final ? len : cli_utf8_complete((const unsigned char *)text, len);
    if (upto > cs->printed) {
        fwrite(text + cs->printed, 1, upto - cs->printed, stdout);
        fflush(stdout);
        cs->printed = upto;
    }
    free(text);
    return true;
}

static bool on_token(int64_t token, void *user)
{
    chat_stream *cs = user;
    if (cs->n == cs->cap) {
        int64_t cap = cs->cap ? 2 * cs->cap : 64;
        int32_t *p = realloc(cs->ids, (size_t)cap * sizeof *p);
        if (!p) {
            tm_set_error(TM_ENOMEM, "out of memory");
            cs->failed = true;
            return false;
        }
        cs->ids = p;
        cs->cap = cap;
    }
    cs->ids[cs->n++] = (int32_t)token;
    return show(cs, false);
}

/* One line of stdin without its newline (malloc'd), NULL at the end. */
static char *read_line(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return NULL;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    return line;
}

int cmd_chat(int argc, char **argv)
{
    const char *model = NULL, *system = NULL;
    int64_t max_new = 512, threads = 0;
    cli_sampling smp = {.temperature = 0.0, .top_p = 1.0, .rep = 1.0};
    cli_flag flags[] = {
        {.name = "--model", .kind = CLI_STR, .dst = &model, .meta = "FILE.gguf",
         .help = "a GGUF file with a chat template (tokenizer.chat_template), e.g. "
                 "SmolLM2-135M-Instruct.Q4_1.gguf (required)"},
        {.name = "--system", .kind = CLI_STR, .dst = &system, .meta = "TEXT",
         .help = "a system message first (none: the template may add its own)"},
        {.name = "--max-new-tokens", .kind = CLI_INT, .dst = &max_new, .lo = 1, .hi = 1e9, .meta = "N",
         .help = "tokens per reply at most"},
        CLI_SAMPLING_FLAGS(&smp),
        {.name = "--threads", .kind = CLI_INT, .dst = &threads, .lo = 0, .hi = 4096, .meta = "N",
         .help = "threads (0: the library's default)"},
    };
    cli_cmd cmd = {
        .name = "chat", .usage = "chat --model FILE.gguf [--system TEXT] [sampling flags] < turns.txt",
        .summary = "A conversation: each line of stdin is a user message; the file's chat template turns\n"
                   "the history into the prompt, the reply streams to stdout (one line per turn, until\n"
                   "the end-of-turn token or --max-new-tokens) and joins the history.  Greedy unless\n"
                   "--temperature is above 0.  Ends at the end of stdin.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 0, .max_pos = 0,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    free(pos);
    if (!model)
        return cli_usage_error("chat", "--model FILE.gguf is required");
    if (threads)
        tm_set_num_threads((int)threads);
    tm_gpt *m = NULL;
    tm_tokenizer *tok = NULL;
    tm_chat_template *tpl = NULL;
    tm_gguf *g = NULL;
    tm_chat_msg *msgs = NULL;
    char **owned = NULL; /* the texts msgs point to */
    int n_msgs = 0, cap = 0;
    char *line = NULL, *prompt = NULL;
    tm_token_buf ids = {0};
    int64_t *prompt_ids = NULL, *out = NULL, n_out = 0;
    chat_stream cs = {0};
    bool tty = isatty(STDIN_FILENO);
    rc = CLI_RUNTIME;
    if (!(g = tm_gguf_open(model)) || !(tpl = tm_chat_template_from_gguf(g)) ||
        !(tok = cli_load_tokenizer(model)) || !(m = tm_gpt_load(model)))
        goto fail;
    tm_gguf_close(g);
    g = NULL;
    /* The end of a turn: the file's eos (tokenizer.ggml.eos_token_id,
     * SmolLM2's <|im_end|>) and the tokenizer's, when they differ. */
    int64_t stops[2];
    int n_stop = 0;
    if (tm_gpt_config_of(m)->eos_id >= 0)
        stops[n_stop++] = tm_gpt_config_of(m)->eos_id;
    if (tm_tokenizer_eos_id(tok) >= 0 && (!n_stop || stops[0] != tm_tokenizer_eos_id(tok)))
        stops[n_stop++] = tm_tokenizer_eos_id(tok);
    if (!(out = malloc((size_t)max_new * sizeof *out)))
        goto oom;
    for (;;) {
        if (n_msgs + 3 > cap) {
            int nc = cap ? 2 * cap : 16;
            tm_chat_msg *nm = realloc(msgs, (size_t)nc * sizeof *nm);
            if (nm)
                msgs = nm;
            char **no = nm ? realloc(owned, (size_t)nc * sizeof *no) : NULL;
            if (!no)
                goto oom;
            owned = no;
            cap = nc;
        }
        if (n_msgs == 0 && system) {
            if (!(owned[n_msgs] = strdup(system)))
                goto oom;
            msgs[n_msgs] = (tm_chat_msg){"system", owned[n_msgs]};
            n_msgs++;
        }
        if (tty) {
            fputs("> ", stderr);
            fflush(stderr);
        }
        if (!(line = read_line()))
            break;
        if (!*line) {
            free(line);
            line = NULL;
            continue;
        }
        owned[n_msgs] = line;
        line = NULL;
        msgs[n_msgs] = (tm_chat_msg){"user", owned[n_msgs]};
        n_msgs++;
        size_t plen = 0;
        free(prompt);
        ids.n = 0;
        if (!(prompt = tm_chat_template_apply(tpl, msgs, n_msgs, true, &plen)) ||
            tm_tokenizer_encode(tok, prompt, plen, &ids) != TM_OK)
            goto fail;
        free(prompt_ids);
        if (!(prompt_ids = malloc((size_t)(ids.n ? ids.n : 1) * sizeof *prompt_ids)))
            goto oom;
        for (int64_t i = 0; i < ids.n; i++)
            prompt_ids[i] = ids.ids[i];
        tm_generate_opts go = tm_generate_defaults();
        go.max_new_tokens = max_new;
        go.sample = cli_sampling_opts(&smp);
        go.sample.seed += (uint64_t)n_msgs; /* a new draw each turn */
        go.stop_tokens = n_stop ? stops : NULL;
        go.n_stop = n_stop;
        go.on_token = on_token;
        go.user = &cs;
        cs.tok = tok;
        cs.n = 0;
        cs.printed = 0;
        if (tm_gpt_generate(m, prompt_ids, ids.n, &go, out, &n_out) != TM_OK || cs.failed ||
            !show(&cs, true))
            goto fail;
        fputc('\n', stdout);
        fflush(stdout);
        /* The reply joins the history without its end-of-turn token: the
         * template writes that itself. */
        size_t rlen = 0;
        char *reply = tm_tokenizer_decode(tok, cs.ids, cs.n, true, &rlen);
        if (!reply)
            goto fail;
        owned[n_msgs] = reply;
        msgs[n_msgs] = (tm_chat_msg){"assistant", reply};
        n_msgs++;
    }
    rc = CLI_OK;
    goto fail;
oom:
    tm_set_error(TM_ENOMEM, "out of memory");
fail:
    if (rc == CLI_RUNTIME) {
        fflush(stdout);
        cli_lib_error("chat");
    }
    for (int i = 0; i < n_msgs; i++)
        free(owned[i]);
    free(owned);
    free(msgs);
    free(line);
    free(prompt);
    free(prompt_ids);
    free(out);
    free(cs.ids);
    tm_token_buf_free(&ids);
    tm_gguf_close(g);
    tm_chat_template_free(tpl);
    tm_gpt_free(m);
    tm_tokenizer_free(tok);
    return rc;
}
