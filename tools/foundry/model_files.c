/* Where a model's pieces are: a run or model directory (model.safetensors
 * or model.gguf, config.json, tokenizer.json, data.ftok), a .gguf file
 * (config and tokenizer in its metadata: llama.cpp's tokenizer.ggml.*
 * keys or Foundry's tokenizer.huggingface.json) or a .safetensors file
 * with config.json and tokenizer.json beside it. */
#include "cli.h"

#include "foundry/gguf.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool cli_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

bool cli_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

char *cli_model_dir(const char *model)
{
    /* Anything but a model file is taken as a directory, so a missing
     * run directory is reported under its own name. */
    if (cli_is_dir(model) || !(cli_ends_with(model, ".gguf") || cli_ends_with(model, ".safetensors")))
        return strdup(model);
    const char *slash = strrchr(model, '/');
    if (!slash)
        return strdup(".");
    size_t k = (size_t)(slash - model);
    char *d = malloc(k + 2);
    if (!d)
        return NULL;
    memcpy(d, model, k ? k : 1);
    d[k ? k : 1] = '\0';
    return d;
}

/* The GGUF file a model path names, when it is one (malloc'd), else NULL. */
static char *gguf_of(const char *model)
{
    if (cli_ends_with(model, ".gguf") && is_file(model))
        return strdup(model);
    if (!cli_is_dir(model))
        return NULL;
    char *st = cli_path(model, "model.safetensors"), *gg = cli_path(model, "model.gguf");
    bool use = st && gg && !is_file(st) && is_file(gg);
    free(st);
    if (!use) {
        free(gg);
        return NULL;
    }
    return gg;
}

char *cli_tokenizer_json(const char *model, size_t *len, bool *found)
{
    *found = false;
    char *dir = cli_model_dir(model), *path = dir ? cli_path(dir, "tokenizer.json") : NULL;
    char *text = NULL;
    if (path && is_file(path)) {
        *found = true;
        text = cli_read_file(path, len);
    } else {
        char *gg = gguf_of(model);
        tm_gguf *g = gg ? tm_gguf_open(gg) : NULL;
        const tm_gguf_value *v = g ? tm_gguf_get(g, "tokenizer.huggingface.json") : NULL;
        size_t n = 0;
        const char *s = v ? tm_gguf_value_str(v, &n) : NULL;
        if (s) {
            *found = true;
            if ((text = malloc(n + 1))) {
                memcpy(text, s, n);
                text[n] = '\0';
                *len = n;
            } else {
                tm_set_error(TM_ENOMEM, "out of memory");
            }
        } else if (gg && g) {
            tm_set_error(TM_EFORMAT, "%s: no tokenizer.huggingface.json in the metadata and no "
                                     "tokenizer.json beside it", gg);
        } else if (!gg && path) {
            text = cli_read_file(path, len); /* fails naming the file */
        }
        tm_gguf_close(g);
        free(gg);
    }
    free(dir);
    free(path);
    return text;
}

/* A .gguf file whose metadata describes its own vocabulary
 * (tokenizer.ggml.model, as llama.cpp's converters write): that
 * tokenizer, ahead of any tokenizer.json beside the file. */
static tm_tokenizer *gguf_vocab_tokenizer(const char *model, bool *found)
{
    *found = false;
    if (!cli_ends_with(model, ".gguf") || !is_file(model))
        return NULL;
    tm_gguf *g = tm_gguf_open(model);
    if (!g)
        return NULL;
    tm_tokenizer *t = NULL;
    if (tm_gguf_find_key(g, "tokenizer.ggml.model") >= 0) {
        *found = true;
        t = tm_tokenizer_from_gguf(g);
    }
    tm_gguf_close(g);
    return t;
}

tm_tokenizer *cli_load_tokenizer(const char *model)
{
    bool in_gguf = false;
    tm_tokenizer *gt = gguf_vocab_tokenizer(model, &in_gguf);
    if (gt || in_gguf)
        return gt;
    size_t len = 0;
    bool found;
    char *text = cli_tokenizer_json(model, &len, &found);
    if (!text)
        return NULL;
    tm_tokenizer *t = tm_tokenizer_from_json(text, len);
    free(text);
    return t;
}
