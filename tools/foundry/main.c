/* `foundry`: train, sample from, evaluate and inspect language models. */
#include "cli.h"

#include <string.h>

typedef struct sub_entry {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *what;
} sub_entry;

static const sub_entry SUBS[] = {
    {"train", cmd_train, "train a GPT/Llama model on text files (the tokenizer too)"},
    {"generate", cmd_generate, "sample text from a trained model or a GGUF file, streamed"},
    {"chat", cmd_chat, "a multi-turn chat with a GGUF model, its chat template applied"},
    {"eval", cmd_eval, "loss, perplexity, bits per byte and accuracy on a dataset"},
    {"quantize", cmd_quantize, "block-quantize a model's weights (GGUF or safetensors), with each tensor's error"},
    {"tokenize", cmd_tokenize, "train a BPE tokenizer, encode text, decode ids"},
    {"inspect", cmd_inspect, "list a safetensors or GGUF file: names, dtypes, shapes, bytes, metadata"},
    {"plot", cmd_plot, "redraw RUN_DIR/loss.svg from RUN_DIR/metrics.jsonl"},
    {"swarm", cmd_swarm, "train across processes and machines: coordinator, worker, keygen"},
    {"embed", cmd_embed, "sentence embeddings of stdin's lines (a sentence-transformers model)"},
};
#define N_SUBS ((int)(sizeof SUBS / sizeof SUBS[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: foundry COMMAND [flags]   (foundry COMMAND --help for its flags)\n\n"
                 "commands:\n");
    for (int i = 0; i < N_SUBS; i++)
        fprintf(out, "  %-10s %s\n", SUBS[i].name, SUBS[i].what);
    fprintf(out, "\n  --help     this text\n  --version  the library's version\n\n"
                 "Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("foundry %s\n", tm_version());
        return CLI_OK;
    }
    for (int i = 0; i < N_SUBS; i++)
        if (!strcmp(argv[1], SUBS[i].name))
            return SUBS[i].run(argc - 2, argv + 2);
    return cli_usage_error(NULL, "unknown command \"%s\" (see foundry --help)", argv[1]);
}
