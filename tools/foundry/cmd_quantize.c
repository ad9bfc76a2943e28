/* foundry quantize IN OUT --type TYPE: a model's weights block-quantized
 * by a type plan, with the error each tensor took. */
#include "cli.h"

#include "foundry/quantize.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_KEEP 64

typedef struct totals {
    bool quiet;
    size_t before, after;
    double sq_err, sq_ref; /* sums over every value, for the total RMSE */
    int64_t count;
    int n_tensors, n_fell_back;
} totals;

static void print_size(size_t b)
{
    if (b >= (1u << 20))
        printf("%.2f MiB", (double)b / (1u << 20));
    else if (b >= 1024)
        printf("%.1f KiB", (double)b / 1024);
    else
        printf("%zu B", b);
}

static void on_tensor(const tm_gpt_quant_info *q, void *user)
{
    totals *t = user;
    t->before += q->bytes_before;
    t->after += q->bytes_after;
    t->sq_err += q->rmse * q->rmse * (double)q->count;
    t->sq_ref += q->ref_rms * q->ref_rms * (double)q->count;
    t->count += q->count;
    t->n_tensors++;
    t->n_fell_back += q->fell_back;
    if (t->quiet)
        return;
    char shape[64];
    int k = snprintf(shape, sizeof shape, "[");
    for (int d = 0; d < q->ndim && k < (int)sizeof shape; d++)
        k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", d ? ", " : "", (long long)q->shape[d]);
    if (k < (int)sizeof shape)
        snprintf(shape + k, sizeof shape - (size_t)k, "]");
    char type[24];
    snprintf(type, sizeof type, "%s%s", tm_dtype_name(q->to), q->fell_back ? "*" : "");
    double rel = q->ref_rms > 0 ? q->rmse / q->ref_rms : 0;
    printf("  %-48s %-14s %-7s %10zu  %.3e  %7.3f%%\n", q->name, shape, type, q->bytes_after, q->rmse,
           100 * rel);
}

/* Splits "PATTERN=DTYPE" into a rule; false on a bad value. */
static bool parse_keep(char *s, tm_quant_rule *r)
{
    char *eq = strrchr(s, '=');
    if (!eq || eq == s || !eq[1])
        return false;
    *eq = '\0';
    tm_dtype dt;
    if (tm_dtype_parse(eq + 1, &dt) != TM_OK) {
        *eq = '=';
        return false;
    }
    r->pattern = s;
    r->dtype = dt;
    return true;
}

static bool is_weight_dtype(tm_dtype dt)
{
    return dt == TM_F32 || dt == TM_F16 || dt == TM_BF16 ||
           (tm_dtype_is_quantized(dt) && dt != TM_Q8_1 && dt != TM_Q8_K);
}

/* llama.cpp's general.file_type of a named mix (0: derive from the tensors). */
static int file_type_of_plan(const char *type)
{
    if (!strcmp(type, "q4_k_m")) return 15;
    if (!strcmp(type, "q5_k_m")) return 17;
    return 0;
}

/* Copies src to dst (small text files: config.json, tokenizer.json). */
static tm_status write_text_file(const char *path, const char *text, size_t len)
{
    char *tmp = malloc(strlen(path) + 8);
    if (!tmp)
        return tm_set_error(TM_ENOMEM, "out of memory");
    sprintf(tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    tm_status st = TM_OK;
    if (!f) {
        st = tm_set_error(TM_EIO, "cannot create '%s': %s", tmp, strerror(errno));
    } else {
        bool ok = fwrite(text, 1, len, f) == len;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) != 0) {
            st = tm_set_error(TM_EIO, "cannot write '%s': %s", path, strerror(errno));
            remove(tmp);
        }
    }
    free(tmp);
    return st;
}

static tm_status write_beside(const char *dir, const char *name, const char *text, size_t len)
{
    char *p = cli_path(dir, name);
    tm_status st = p ? write_text_file(p, text, len) : tm_last_status();
    free(p);
    return st;
}

/* OUT.safetensors: tm_gpt_save into a scratch directory beside it, then
 * the two files moved into place. */
static tm_status save_safetensors_file(const tm_gpt *m, const char *out)
{
    char *dir = cli_model_dir(out), *scratch = malloc(strlen(out) + 16);
    char *st_path = NULL, *cfg_src = NULL, *cfg_dst = NULL;
    tm_status st = TM_OK;
    if (!dir || !scratch) {
        st = tm_set_error(TM_ENOMEM, "out of memory");
        goto done;
    }
    sprintf(scratch, "%s.tmpdir", out);
    if ((st = tm_gpt_save(m, scratch)))
        goto done;
    if (!(st_path = cli_path(scratch, "model.safetensors")) || !(cfg_src = cli_path(scratch, "config.json")) ||
        !(cfg_dst = cli_path(dir, "config.json"))) {
        st = tm_last_status();
        goto done;
    }
    if (rename(st_path, out) != 0 || rename(cfg_src, cfg_dst) != 0)
        st = tm_set_error(TM_EIO, "cannot move the files of '%s' into place: %s", out, strerror(errno));
done:
    if (st_path) remove(st_path);
    if (cfg_src) remove(cfg_src);
    if (scratch) rmdir(scratch);
    free(dir);
    free(scratch);
    free(st_path);
    free(cfg_src);
    free(cfg_dst);
    return st;
}

int cmd_quantize(int argc, char **argv)
{
    const char *type = NULL, *format = "gguf", *name = NULL, *keep_help = NULL;
    int64_t threads = 0;
    bool quiet = false;
    cli_flag flags[] = {
        {.name = "--type", .kind = CLI_STR, .dst = &type, .meta = "TYPE",
         .help = "q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m or q5_k_m (required)"},
        {.name = "--keep", .kind = CLI_STR, .dst = &keep_help, .meta = "PATTERN=DTYPE",
         .help = "tensors whose name matches the glob get DTYPE (f32, f16, q8_0, ...); repeatable, "
                 "first match wins, before the type's own rules"},
        {.name = "--format", .kind = CLI_STR, .dst = &format, .meta = "gguf|safetensors",
         .help = "what a directory OUT gets: model.gguf or model.safetensors"},
        {.name = "--name", .kind = CLI_STR, .dst = &name, .meta = "TEXT", .help = "general.name in a GGUF"},
        {.name = "--threads", .kind = CLI_INT, .dst = &threads, .lo = 0, .hi = 4096, .meta = "N",
         .help = "threads (0: the library's default)"},
        {.name = "--quiet", .kind = CLI_BOOL, .dst = &quiet, .help = "only the totals"},
    };
    cli_cmd cmd = {
        .name = "quantize", .usage = "quantize IN OUT --type TYPE [--keep PATTERN=DTYPE]... [--quiet]",
        .summary = "Quantizes a model's weights (IN: a run or model directory, a .gguf file, or a .safetensors\n"
                   "file with config.json beside it) into OUT: a .gguf file, a .safetensors file (quantized\n"
                   "tensors as U8 bytes under the foundry.quant.* metadata convention, config.json written\n"
                   "beside it) or a directory (model.gguf or model.safetensors, config.json, tokenizer.json).\n"
                   "Prints each tensor's type, bytes and RMSE (* marks the fallback for rows that are not\n"
                   "whole blocks) and the totals.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 2, .max_pos = 2,
    };
    /* --keep repeats: take every occurrence out before the flag parser,
     * which keeps only the last value of a flag. */
    tm_quant_rule rules[MAX_KEEP + 64];
    int n_rules = 0, rc = CLI_OK;
    char **av = malloc(sizeof *av * ((size_t)argc + 1));
    char *keeps[MAX_KEEP];
    int n_keeps = 0, ac = 0;
    if (!av)
        return cli_error("quantize", "out of memory");
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--keep")) {
            if (i + 1 >= argc) {
                rc = cli_usage_error("quantize", "--keep: missing value");
                break;
            }
            v = argv[++i];
        } else if (!strncmp(argv[i], "--keep=", 7)) {
            v = argv[i] + 7;
        } else {
            av[ac++] = argv[i];
            continue;
        }
        if (n_keeps == MAX_KEEP) {
            rc = cli_usage_error("quantize", "--keep: at most %d rules", MAX_KEEP);
            break;
        }
        if (!(keeps[n_keeps] = strdup(v))) {
            rc = cli_error("quantize", "out of memory");
            break;
        }
        if (!parse_keep(keeps[n_keeps++], &rules[n_rules])) {
            rc = cli_usage_error("quantize", "--keep: expected PATTERN=DTYPE with a dtype such as f16 or "
                                             "q8_0, got \"%s\"", v);
            break;
        }
        if (!is_weight_dtype(rules[n_rules].dtype)) {
            rc = cli_usage_error("quantize", "--keep: %s cannot store weights (\"%s\")",
                                 tm_dtype_name(rules[n_rules].dtype), v);
            break;
        }
        n_rules++;
    }
    const char **pos = NULL;
    int npos = 0;
    tm_gpt *m = NULL;
    char *tok = NULL, *cfg = NULL, *dst = NULL, *other = NULL;
    if (rc == CLI_OK) {
        rc = cli_parse(&cmd, ac, av, &pos, &npos);
        if (rc < 0) {
            rc = CLI_OK;
            goto done;
        }
    }
    if (rc != CLI_OK)
        goto done;
    if (!type) {
        rc = cli_usage_error("quantize", "--type TYPE is required (q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, "
                                         "q6_k, q4_k_m, q5_k_m)");
        goto done;
    }
    tm_quant_plan plan;
    if (tm_quant_plan_named(type, &plan) != TM_OK) {
        rc = cli_usage_error("quantize", "--type: unknown type \"%s\" (known: q8_0, q4_0, q4_1, q5_0, q5_1, "
                                         "q4_k, q5_k, q6_k, q4_k_m, q5_k_m)", type);
        goto done;
    }
    if (strcmp(format, "gguf") && strcmp(format, "safetensors")) {
        rc = cli_usage_error("quantize", "--format: expected gguf or safetensors, got \"%s\"", format);
        goto done;
    }
    for (int i = 0; i < plan.n_rules; i++)
        rules[n_rules++] = plan.rules[i];
    plan.rules = rules;
    plan.n_rules = n_rules;
    const char *in = pos[0], *out = pos[1];
    bool out_gguf = cli_ends_with(out, ".gguf"), out_st = cli_ends_with(out, ".safetensors");
    if (threads)
        tm_set_num_threads((int)threads);
    rc = CLI_RUNTIME;
    if (!(m = tm_gpt_load(in)))
        goto fail;
    size_t tok_len = 0;
    bool found = false;
    tok = cli_tokenizer_json(in, &tok_len, &found);
    if (!tok && found)
        goto fail;
    tm_clear_error();
    totals t = {.quiet = quiet};
    if (!quiet)
        printf("  %-48s %-14s %-7s %10s  %-9s  %8s\n", "tensor", "shape", "type", "bytes", "rmse", "rel");
    if (tm_gpt_quantize(m, &plan, on_tensor, &t) != TM_OK)
        goto fail;
    if (out_gguf) {
        tm_gpt_gguf_opts go = {.name = name, .tokenizer_json = tok, .file_type = file_type_of_plan(type)};
        if (tm_gpt_save_gguf(m, out, &go) != TM_OK)
            goto fail;
    } else if (out_st) {
        if (save_safetensors_file(m, out) != TM_OK)
            goto fail;
    } else {
        if (cli_mkdir(out) != TM_OK)
            goto fail;
        bool gg = !strcmp(format, "gguf");
        /* A leftover file of the other format would shadow or confuse this one. */
        if (!(other = cli_path(out, gg ? "model.safetensors" : "model.gguf")))
            goto fail;
        if (access(other, F_OK) == 0) {
            tm_set_error(TM_EINVAL, "'%s' exists and would %s the new model: remove it first", other,
                         gg ? "shadow" : "be confused with");
            goto fail;
        }
        if (gg) {
            tm_gpt_gguf_opts go = {.name = name, .tokenizer_json = tok, .file_type = file_type_of_plan(type)};
            if (!(dst = cli_path(out, "model.gguf")) || tm_gpt_save_gguf(m, dst, &go) != TM_OK)
                goto fail;
            if (!(cfg = tm_gpt_config_to_json(tm_gpt_config_of(m))) ||
                write_beside(out, "config.json", cfg, strlen(cfg)) != TM_OK)
                goto fail;
        } else if (tm_gpt_save(m, out) != TM_OK) {
            goto fail;
        }
        if (tok && write_beside(out, "tokenizer.json", tok, tok_len) != TM_OK)
            goto fail;
    }
    double rmse = t.count ? sqrt(t.sq_err / (double)t.count) : 0;
    double ref = t.count ? sqrt(t.sq_ref / (double)t.count) : 0;
    printf("%d tensors (%d fell back), ", t.n_tensors, t.n_fell_back);
    print_size(t.before);
    printf(" -> ");
    print_size(t.after);
    printf(" (%.2f bits/value), total rmse %.4e (%.3f%% of rms)\n",
           t.count ? 8.0 * (double)t.after / (double)t.count : 0.0, rmse, ref > 0 ? 100 * rmse / ref : 0.0);
    printf("wrote %s\n", out);
    rc = CLI_OK;
fail:
    if (rc == CLI_RUNTIME)
        cli_lib_error("quantize");
done:
    for (int i = 0; i < n_keeps; i++)
        free(keeps[i]);
    free(av);
    free(pos);
    free(tok);
    free(cfg);
    free(dst);
    free(other);
    tm_gpt_free(m);
    return rc;
}
