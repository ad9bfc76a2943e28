/* The run directory's checkpoint files besides the model: trainer.json (the
 * loop's state and every flag) and optimizer.safetensors. */
#include "train.h"

#include "../../io/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRAINER_FORMAT "foundry-trainer"
#define TRAINER_VERSION 1

static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_flag(FILE *f, const cli_flag *fl)
{
    switch (fl->kind) {
    case CLI_INT: fprintf(f, "%" PRId64, *(int64_t *)fl->dst); break;
    case CLI_DOUBLE: fprintf(f, "%.17g", *(double *)fl->dst); break;
    case CLI_BOOL: fputs(*(bool *)fl->dst ? "true" : "false", f); break;
    case CLI_STR: {
        const char *s = *(const char **)fl->dst;
        if (s)
            put_json_string(f, s);
        else
            fputs("null", f);
        break;
    }
    case CLI_STRS: {
        const cli_strs *l = fl->dst;
        fputc('[', f);
        for (int i = 0; i < l->n; i++) {
            if (i)
                fputs(", ", f);
            put_json_string(f, l->v[i]);
        }
        fputc(']', f);
        break;
    }
    }
}

tm_status ckpt_write_trainer(const char *dir, const train_state *st, const cli_cmd *cmd)
{
    char *path = cli_path(dir, "trainer.json"), *tmp = cli_path(dir, "trainer.json.tmp");
    tm_status s = TM_OK;
    FILE *f = NULL;
    if (!path || !tmp) {
        s = TM_ENOMEM;
        goto done;
    }
    if (!(f = fopen(tmp, "wb"))) {
        s = tm_set_error(TM_EIO, "cannot write '%s': %s", tmp, strerror(errno));
        goto done;
    }
    /* The generator state as hex strings: JSON integers here are int64. */
    fprintf(f, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"step\": %" PRId64 ",\n"
               "  \"loader_position\": %" PRId64 ",\n  \"model_rng_key\": \"0x%016" PRIx64 "\",\n"
               "  \"model_rng_counter\": \"0x%016" PRIx64 "\",\n  \"flags\": {",
            TRAINER_FORMAT, TRAINER_VERSION, st->step, st->loader_position, st->model_rng.key,
            st->model_rng.counter);
    for (int i = 0; i < cmd->n_flags; i++) {
        fprintf(f, "%s\n    \"%s\": ", i ? "," : "", cmd->flags[i].name + 2);
        put_flag(f, &cmd->flags[i]);
    }
    fprintf(f, "\n  }\n}\n");
    if (ferror(f) | fclose(f)) {
        f = NULL;
        s = tm_set_error(TM_EIO, "cannot write '%s': %s", tmp, strerror(errno));
        goto done;
    }
    f = NULL;
    if (rename(tmp, path) != 0)
        s = tm_set_error(TM_EIO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
done:
    if (s != TM_OK && tmp)
        remove(tmp);
    free(path);
    free(tmp);
    return s;
}

static bool parse_hex64(const char *s, uint64_t *out)
{
    char *end;
    if (strncmp(s, "0x", 2) || !s[2])
        return false;
    errno = 0;
    unsigned long long v = strtoull(s + 2, &end, 16);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* Sets a flag from its saved JSON value (a type mismatch is TM_EFORMAT). */
static tm_status flag_from_json(const tm__json_doc *doc, size_t at, const cli_flag *fl,
                                const char *path, void *dst)
{
    const tm__json_node *n = &doc->nodes[at];
    switch (fl->kind) {
    case CLI_INT:
        if (n->type != TM__JSON_INT)
            break;
        *(int64_t *)dst = n->i;
        return TM_OK;
    case CLI_DOUBLE:
        if (n->type != TM__JSON_INT && n->type != TM__JSON_FLOAT)
            break;
        *(double *)dst = n->f;
        return TM_OK;
    case CLI_BOOL:
        if (n->type != TM__JSON_BOOL)
            break;
        *(bool *)dst = n->i != 0;
        return TM_OK;
    case CLI_STR:
        if (n->type == TM__JSON_NULL) {
            *(const char **)dst = NULL;
            return TM_OK;
        }
        if (n->type != TM__JSON_STRING)
            break;
        *(const char **)dst = n->str;
        return TM_OK;
    case CLI_STRS: {
        if (n->type != TM__JSON_ARRAY)
            break;
        cli_strs *l = dst;
        l->n = 0;
        if (n->count && !(l->v = malloc(n->count * sizeof *l->v)))
            return tm_set_error(TM_ENOMEM, "out of memory");
        for (size_t c = at + 1, k = 0; k < n->count; k++, c = doc->nodes[c].next) {
            if (doc->nodes[c].type != TM__JSON_STRING)
                return tm_set_error(TM_EFORMAT, "%s: flags.%s[%zu] is not a string", path,
                                    fl->name + 2, k);
            l->v[l->n++] = doc->nodes[c].str;
        }
        return TM_OK;
    }
    }
    return tm_set_error(TM_EFORMAT, "%s: flags.%s has the wrong type", path, fl->name + 2);
}

static bool same_value(const cli_flag *fl, const void *saved)
{
    switch (fl->kind) {
    case CLI_INT: return *(int64_t *)fl->dst == *(const int64_t *)saved;
    case CLI_DOUBLE: return *(double *)fl->dst == *(const double *)saved;
    case CLI_BOOL: return *(bool *)fl->dst == *(const bool *)saved;
    case CLI_STR: {
        const char *a = *(const char **)fl->dst, *b = *(const char *const *)saved;
        return (!a && !b) || (a && b && !strcmp(a, b));
    }
    case CLI_STRS: {
        const cli_strs *a = fl->dst, *b = saved;
        if (a->n != b->n)
            return false;
        for (int i = 0; i < a->n; i++)
            if (strcmp(a->v[i], b->v[i]))
                return false;
        return true;
    }
    }
    return false;
}

/* The parsed trainer.json stays alive until exit: restored string flags
 * point into it. */
static tm__json_doc saved_doc;
static char *saved_text;

int ckpt_read_trainer(const char *dir, train_state *st, cli_cmd *cmd,
                      const char *const *may_change)
{
    char *path = cli_path(dir, "trainer.json");
    size_t len = 0;
    int rc = CLI_RUNTIME;
    if (!path || !(saved_text = cli_read_file(path, &len)))
        goto done;
    if (tm__json_parse(&saved_doc, saved_text, len, "foundry train --resume", path) != TM_OK)
        goto done;
    const tm__json_doc *d = &saved_doc;
    const tm__json_node *fmt = tm__json_get(d, 0, "format"), *ver = tm__json_get(d, 0, "version");
    const tm__json_node *step = tm__json_get(d, 0, "step"), *pos = tm__json_get(d, 0, "loader_position");
    const tm__json_node *key = tm__json_get(d, 0, "model_rng_key");
    const tm__json_node *ctr = tm__json_get(d, 0, "model_rng_counter");
    const tm__json_node *flags = tm__json_get(d, 0, "flags");
    if (d->nodes[0].type != TM__JSON_OBJECT || !fmt || fmt->type != TM__JSON_STRING ||
        strcmp(fmt->str, TRAINER_FORMAT)) {
        tm_set_error(TM_EFORMAT, "%s: not a foundry trainer state (\"format\" is not \"%s\")", path,
                     TRAINER_FORMAT);
        goto done;
    }
    if (!ver || ver->type != TM__JSON_INT || ver->i != TRAINER_VERSION) {
        tm_set_error(TM_EFORMAT, "%s: unsupported trainer state version (this build reads %d)", path,
                     TRAINER_VERSION);
        goto done;
    }
    if (!step || step->type != TM__JSON_INT || step->i < 0 || !pos || pos->type != TM__JSON_INT ||
        pos->i < 0 || !key || key->type != TM__JSON_STRING || !ctr || ctr->type != TM__JSON_STRING ||
        !parse_hex64(key->str, &st->model_rng.key) || !parse_hex64(ctr->str, &st->model_rng.counter) ||
        !flags || flags->type != TM__JSON_OBJECT) {
        tm_set_error(TM_EFORMAT, "%s: step, loader_position, model_rng_key, model_rng_counter or "
                                 "flags missing or malformed", path);
        goto done;
    }
    st->step = step->i;
    st->loader_position = pos->i;
    size_t flags_at = (size_t)(flags - d->nodes);
    for (int i = 0; i < cmd->n_flags; i++) {
        cli_flag *fl = &cmd->flags[i];
        const tm__json_node *v = tm__json_get(d, flags_at, fl->name + 2);
        union { int64_t i; double f; bool b; const char *s; cli_strs l; } tmp;
        memset(&tmp, 0, sizeof tmp);
        if (!v) {
            tm_set_error(TM_EFORMAT, "%s: flags.%s missing", path, fl->name + 2);
            goto done;
        }
        if (flag_from_json(d, (size_t)(v - d->nodes), fl, path, &tmp) != TM_OK) {
            if (fl->kind == CLI_STRS)
                free(tmp.l.v);
            goto done;
        }
        bool changeable = false;
        for (const char *const *m = may_change; *m; m++)
            changeable |= !strcmp(*m, fl->name);
        if (fl->seen && !changeable && !same_value(fl, &tmp)) {
            if (fl->kind == CLI_STRS)
                free(tmp.l.v);
            rc = cli_usage_error("train", "%s differs from the run's value in %s; it cannot change "
                                          "on --resume", fl->name, path);
            goto done;
        }
        if (fl->seen) {
            if (fl->kind == CLI_STRS)
                free(tmp.l.v);
            continue;
        }
        switch (fl->kind) {
        case CLI_INT: *(int64_t *)fl->dst = tmp.i; break;
        case CLI_DOUBLE: *(double *)fl->dst = tmp.f; break;
        case CLI_BOOL: *(bool *)fl->dst = tmp.b; break;
        case CLI_STR: *(const char **)fl->dst = tmp.s; break;
        case CLI_STRS:
            cli_strs_free(fl->dst);
            *(cli_strs *)fl->dst = tmp.l;
            break;
        }
    }
    rc = CLI_OK;
done:
    free(path);
    return rc;
}

void ckpt_release(void)
{
    tm__json_free(&saved_doc);
    free(saved_text);
    saved_text = NULL;
}

tm_status ckpt_save_optim(const tm_optim *opt, const char *dir)
{
    tm_params *sd = tm_params_new();
    char *path = cli_path(dir, "optimizer.safetensors");
    const char **names = NULL;
    tm_tensor **ts = NULL;
    tm_status s = TM_ENOMEM;
    if (!sd || !path)
        goto done;
    if ((s = tm_optim_state_dict(opt, sd)) != TM_OK)
        goto done;
    int n = tm_params_count(sd);
    names = calloc((size_t)n + 1, sizeof *names);
    ts = calloc((size_t)n + 1, sizeof *ts);
    if (!names || !ts) {
        s = tm_set_error(TM_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        names[i] = tm_params_name(sd, i);
        ts[i] = tm_params_get(sd, i);
    }
    static const char *const mk[] = {"format", "optimizer"};
    static const char *const mv[] = {"pt", "AdamW"};
    s = tm_safetensors_save_ex(path, names, ts, n, mk, mv, 2, TM_SAVE_NO_SYNC);
done:
    free(names);
    free(ts);
    free(path);
    tm_params_free(sd);
    return s;
}

tm_status ckpt_load_optim(tm_optim *opt, const char *dir)
{
    char *path = cli_path(dir, "optimizer.safetensors");
    tm_safetensors *f = NULL;
    tm_params *sd = tm_params_new();
    tm_status s = TM_ENOMEM;
    if (!path || !sd)
        goto done;
    if (!(f = tm_safetensors_open(path))) {
        s = tm_last_status();
        goto done;
    }
    for (int i = 0; i < tm_safetensors_count(f); i++) {
        tm_tensor *t = tm_safetensors_load(f, tm_safetensors_name(f, i));
        s = t ? tm_params_add_buffer(sd, tm_safetensors_name(f, i), t) : tm_last_status();
        tm_free(t);
        if (s != TM_OK)
            goto done;
    }
    s = tm_optim_load_state_dict(opt, sd);
done:
    tm_safetensors_close(f);
    tm_params_free(sd);
    free(path);
    return s;
}
