/* The flag parser and the error conventions of the `foundry` program. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int vreport(const char *sub, int status, const char *fmt, va_list ap)
{
    fprintf(stderr, "foundry%s%s: ", sub ? " " : "", sub ? sub : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    return status;
}

int cli_usage_error(const char *sub, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vreport(sub, CLI_USAGE, fmt, ap);
    va_end(ap);
    return r;
}

int cli_error(const char *sub, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vreport(sub, CLI_RUNTIME, fmt, ap);
    va_end(ap);
    return r;
}

int cli_lib_error(const char *sub)
{
    const char *m = tm_last_error();
    /* One line: a library message never holds a newline, but make sure. */
    char buf[1024];
    size_t i = 0;
    for (; m[i] && i + 1 < sizeof buf; i++)
        buf[i] = (m[i] == '\n' || m[i] == '\r') ? ' ' : m[i];
    buf[i] = '\0';
    return cli_error(sub, "%s", i ? buf : "failed (no message)");
}

bool cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    if (!*s)
        return false;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    if (!*s)
        return false;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

const cli_flag *cli_find(const cli_cmd *cmd, const char *name)
{
    for (int i = 0; i < cmd->n_flags; i++)
        if (!strcmp(cmd->flags[i].name, name))
            return &cmd->flags[i];
    return NULL;
}

static void range_text(const cli_flag *f, char *buf, size_t n)
{
    bool lo = f->lo > -HUGE_VAL, hi = f->hi < HUGE_VAL;
    if (f->kind == CLI_INT) {
        if (lo && hi)
            snprintf(buf, n, " in [%.0f, %.0f]", f->lo, f->hi);
        else if (lo)
            snprintf(buf, n, " >= %.0f", f->lo);
        else
            buf[0] = '\0';
    } else {
        if (lo && hi)
            snprintf(buf, n, " in [%g, %g]", f->lo, f->hi);
        else if (lo)
            snprintf(buf, n, " >= %g", f->lo);
        else
            buf[0] = '\0';
    }
}

static int set_value(const char *sub, cli_flag *f, const char *v)
{
    char range[96];
    range_text(f, range, sizeof range);
    if (f->kind == CLI_INT) {
        int64_t x;
        /* The bounds are doubles; every bound used here is exact. */
        int64_t lo = f->lo > -9.2e18 ? (int64_t)f->lo : INT64_MIN;
        int64_t hi = f->hi < 9.2e18 ? (int64_t)f->hi : INT64_MAX;
        if (!cli_parse_int(v, lo, hi, &x))
            return cli_usage_error(sub, "%s: expected an integer%s, got \"%s\"",
                                   f->name, range, v);
        *(int64_t *)f->dst = x;
    } else if (f->kind == CLI_DOUBLE) {
        double x;
        if (!parse_double(v, &x))
            return cli_usage_error(sub, "%s: expected a number, got \"%s\"", f->name, v);
        if (x < f->lo || x > f->hi)
            return cli_usage_error(sub, "%s: expected a number%s, got \"%s\"",
                                   f->name, range, v);
        *(double *)f->dst = x;
    } else if (f->kind == CLI_STR) {
        *(const char **)f->dst = v;
    } else if (f->kind == CLI_STRS) {
        cli_strs *s = f->dst;
        const char **nv = realloc(s->v, (size_t)(s->n + 1) * sizeof *nv);
        if (!nv)
            return cli_error(sub, "out of memory");
        nv[s->n++] = v;
        s->v = nv;
    }
    return CLI_OK;
}

int cli_parse(cli_cmd *cmd, int argc, char **argv, const char ***pos, int *n_pos)
{
    const char **p = calloc((size_t)argc + 1, sizeof *p);
    int np = 0, rc = CLI_OK;
    bool only_pos = false;
    if (!p)
        return cli_error(cmd->name, "out of memory");
    for (int i = 0; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0' ||
            (a[1] != '-' && strcmp(a, "-h"))) {
            p[np++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli_help(cmd, stdout);
            rc = -1;
            break;
        }
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        cli_flag *f = NULL;
        for (int k = 0; k < cmd->n_flags; k++)
            if (strlen(cmd->flags[k].name) == nlen && !strncmp(cmd->flags[k].name, a, nlen))
                f = &cmd->flags[k];
        if (!f) {
            rc = cli_usage_error(cmd->name, "unknown flag %.*s (see foundry %s --help)",
                                 (int)nlen, a, cmd->name);
            break;
        }
        /* A list given again starts over; any flag given again wins (so
         * make's DEMO_ARGS can override the demo's flags). */
        if (f->seen && f->kind == CLI_STRS)
            cli_strs_free(f->dst);
        f->seen = true;
        if (f->kind == CLI_BOOL) {
            if (eq) {
                rc = cli_usage_error(cmd->name, "%s takes no value, got \"%s\"", f->name, eq + 1);
                break;
            }
            *(bool *)f->dst = true;
            continue;
        }
        if (eq) {
            rc = set_value(cmd->name, f, eq + 1);
            continue;
        }
        if (i + 1 >= argc) {
            rc = cli_usage_error(cmd->name, "%s: missing value (%s)", f->name, f->meta);
            break;
        }
        rc = set_value(cmd->name, f, argv[++i]);
        /* A list flag takes every following argument up to the next flag. */
        while (rc == CLI_OK && f->kind == CLI_STRS && i + 1 < argc &&
               strncmp(argv[i + 1], "--", 2) != 0)
            rc = set_value(cmd->name, f, argv[++i]);
    }
    if (rc == CLI_OK && np < cmd->min_pos)
        rc = cli_usage_error(cmd->name, "missing argument (usage: foundry %s)", cmd->usage);
    else if (rc == CLI_OK && np > cmd->max_pos)
        rc = cli_usage_error(cmd->name, "unexpected argument \"%s\" (usage: foundry %s)",
                             p[cmd->max_pos], cmd->usage);
    if (rc != CLI_OK) {
        free(p);
        return rc;
    }
    *pos = p;
    *n_pos = np;
    return CLI_OK;
}

void cli_help(const cli_cmd *cmd, FILE *out)
{
    fprintf(out, "usage: foundry %s\n\n%s\n", cmd->usage, cmd->summary);
    if (cmd->n_flags)
        fprintf(out, "\nflags:\n");
    for (int i = 0; i < cmd->n_flags; i++) {
        const cli_flag *f = &cmd->flags[i];
        char head[64], def[128] = "";
        snprintf(head, sizeof head, "%s%s%s", f->name, f->meta ? " " : "", f->meta ? f->meta : "");
        switch (f->kind) {
        case CLI_INT: snprintf(def, sizeof def, " (default %lld)", (long long)*(int64_t *)f->dst); break;
        case CLI_DOUBLE: snprintf(def, sizeof def, " (default %g)", *(double *)f->dst); break;
        case CLI_STR: {
            const char *s = *(const char **)f->dst;
            snprintf(def, sizeof def, " (default %s)", s ? s : "none");
            break;
        }
        case CLI_BOOL: snprintf(def, sizeof def, " (default %s)", *(bool *)f->dst ? "on" : "off"); break;
        case CLI_STRS: snprintf(def, sizeof def, " (default none)"); break;
        }
        /* A required flag has no default to show. */
        size_t hl = strlen(f->help), rl = strlen("(required)");
        if (hl >= rl && !strcmp(f->help + hl - rl, "(required)"))
            def[0] = '\0';
        fprintf(out, "  %-24s %s%s\n", head, f->help, def);
    }
}

void cli_strs_free(cli_strs *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

char *cli_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f) {
        tm_set_error(TM_EIO, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (cap - n < 65536) {
            size_t nc = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                tm_set_error(TM_ENOMEM, "reading '%s': out of memory", path);
                goto fail;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        tm_set_error(TM_EIO, "cannot read '%s': %s", path, strerror(errno));
        goto fail;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

tm_status cli_mkdir(const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0777) == 0)
        return TM_OK;
    if (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return TM_OK;
    return tm_set_error(TM_EIO, "cannot create directory '%s': %s", dir, strerror(errno));
}

char *cli_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) {
        tm_set_error(TM_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

tm_sample_opts cli_sampling_opts(const cli_sampling *s)
{
    tm_sample_opts o = tm_sample_defaults();
    o.temperature = s->temperature;
    o.top_k = s->top_k;
    o.top_p = s->top_p;
    o.min_p = s->min_p;
    o.repetition_penalty = s->rep;
    o.seed = (uint64_t)s->seed;
    return o;
}
