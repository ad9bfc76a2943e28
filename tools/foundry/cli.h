/*
 * cli.h — the pieces the `foundry` program's subcommands share: a small
 * typed flag parser, the error conventions, and the subcommand entry points.
 *
 * Exit statuses: 0 success, 1 a runtime failure (the library's
 * tm_last_error() message, one line), 2 a usage error (unknown flag, bad
 * flag value, missing argument), always one line on stderr that starts with
 * "foundry SUB: ".
 */
#ifndef FOUNDRY_TOOLS_CLI_H
#define FOUNDRY_TOOLS_CLI_H

#include <foundry.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_OK 0
#define CLI_RUNTIME 1
#define CLI_USAGE 2

typedef enum cli_kind {
    CLI_INT = 0,    /* int64_t, checked against [lo, hi] */
    CLI_DOUBLE = 1, /* double, finite, checked against [lo, hi] */
    CLI_STR = 2,    /* const char * (points into argv) */
    CLI_BOOL = 3,   /* bool; the flag takes no value and sets true */
    CLI_STRS = 4    /* cli_strs: one or more values, up to the next flag */
} cli_kind;

typedef struct cli_strs {
    const char **v; /* malloc'd array of pointers into argv; cli_strs_free */
    int n;
} cli_strs;

typedef struct cli_flag {
    const char *name; /* "--lr" */
    cli_kind kind;
    void *dst;
    double lo, hi;    /* CLI_INT / CLI_DOUBLE range (inclusive) */
    const char *meta; /* value placeholder in --help: "N", "PATH" */
    const char *help;
    bool seen;        /* set by cli_parse when given on the command line */
} cli_flag;

typedef struct cli_cmd {
    const char *name;     /* "train", "tokenize encode" */
    const char *usage;    /* the line after "usage: foundry " */
    const char *summary;  /* one paragraph printed under the usage */
    cli_flag *flags;
    int n_flags;
    int min_pos, max_pos; /* positional arguments allowed */
} cli_cmd;

/* Parses argv[0..argc) (the arguments after the subcommand name) into the
 * flags' destinations and collects positionals (malloc'd array into argv,
 * free() it) in *pos / *n_pos.  Returns CLI_OK, CLI_USAGE after printing
 * the one-line error, or -1 after printing the help for --help / -h (the
 * caller then exits 0). */
int cli_parse(cli_cmd *cmd, int argc, char **argv, const char ***pos, int *n_pos);
void cli_help(const cli_cmd *cmd, FILE *out);
void cli_strs_free(cli_strs *s);
const cli_flag *cli_find(const cli_cmd *cmd, const char *name);

/* The sampling flags `generate` and `chat` share: declare a cli_sampling
 * with its defaults, put CLI_SAMPLING_FLAGS(&s) in the flag table, and
 * pass cli_sampling_opts(&s) to the generator. */
typedef struct cli_sampling {
    double temperature, top_p, min_p, rep;
    int64_t top_k, seed;
} cli_sampling;
#define CLI_SAMPLING_FLAGS(s)                                                  \
    {.name = "--temperature", .kind = CLI_DOUBLE, .dst = &(s)->temperature,    \
     .lo = 0, .hi = 100, .meta = "T", .help = "softmax temperature (0: greedy)"}, \
    {.name = "--top-k", .kind = CLI_INT, .dst = &(s)->top_k, .lo = 0,          \
     .hi = 1e9, .meta = "K",                                                   \
     .help = "sample among the K most likely tokens (0: off)"},                \
    {.name = "--top-p", .kind = CLI_DOUBLE, .dst = &(s)->top_p, .lo = 0,       \
     .hi = 1, .meta = "P", .help = "nucleus sampling (1: off)"},               \
    {.name = "--min-p", .kind = CLI_DOUBLE, .dst = &(s)->min_p, .lo = 0,       \
     .hi = 1, .meta = "P",                                                     \
     .help = "drop tokens below P times the most likely one (0: off)"},        \
    {.name = "--repetition-penalty", .kind = CLI_DOUBLE, .dst = &(s)->rep,     \
     .lo = 1e-6, .hi = 100, .meta = "R",                                       \
     .help = "penalise tokens already seen (1: off)"},                         \
    {.name = "--seed", .kind = CLI_INT, .dst = &(s)->seed, .lo = 0,            \
     .hi = 9.2e18, .meta = "N", .help = "sampling seed"}
tm_sample_opts cli_sampling_opts(const cli_sampling *s);

/* "foundry SUB: message" on stderr; return the status given. */
int cli_usage_error(const char *sub, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cli_error(const char *sub, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The library's last error as one line: "foundry SUB: <tm_last_error()>". */
int cli_lib_error(const char *sub);

/* Reads a whole file (NUL-terminated, *len without it); NULL with a
 * TM_EIO error set naming the path.  free(). */
char *cli_read_file(const char *path, size_t *len);
/* Creates dir (one level; an existing directory is fine). TM_EIO on failure. */
tm_status cli_mkdir(const char *dir);
/* dir + "/" + name, malloc'd; NULL on overflow/ENOMEM (error set). */
char *cli_path(const char *dir, const char *name);
/* Parses a decimal integer in [lo, hi]; false when it is not one. */
bool cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Length of the longest prefix of s[n] that does not end inside a UTF-8
 * sequence (invalid bytes count as complete: they print as they are), so a
 * streamed decode prints multi-byte characters whole (utf8.c). */
size_t cli_utf8_complete(const unsigned char *s, size_t n);

/* Model paths (model_files.c): a run or model directory, a .gguf file, or
 * a .safetensors file with config.json / tokenizer.json beside it. */
bool cli_ends_with(const char *s, const char *suffix);
bool cli_is_dir(const char *path);
/* The directory a model path lives in (itself when a directory); free(). */
char *cli_model_dir(const char *model);
/* The model's tokenizer.json text (beside it, or a GGUF's
 * tokenizer.huggingface.json); NULL with an error set (*found false when
 * there is none).  free(). */
char *cli_tokenizer_json(const char *model, size_t *len, bool *found);
tm_tokenizer *cli_load_tokenizer(const char *model);

int cmd_train(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cli_inspect_gguf(const char *path);
int cmd_plot(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_swarm(int argc, char **argv);

#endif
