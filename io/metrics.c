/*
 * metrics.c — training metrics as JSON lines.
 *
 * One object per call, flushed at once, so a plot drawn while the run goes
 * on (tm_plot_metrics_svg) sees every finished line.  %.17g round-trips a
 * double; JSON has no NaN or infinity, so those are null.
 */
#include "foundry/data.h"
#include "../tensor/runtime/runtime_impl.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tm_metrics {
    FILE *f;
    char *path;
    tm_status failed;
};

tm_metrics *tm_metrics_open(const char *path, bool append)
{
    if (!path || !*path) {
        TM_ERR(TM_EINVAL, "path is NULL or empty");
        return NULL;
    }
    tm_metrics *m = calloc(1, sizeof *m);
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!m || !p) {
        TM_ERR(TM_ENOMEM, "no memory");
        goto fail;
    }
    memcpy(p, path, n + 1);
    m->path = p;
    m->f = fopen(path, append ? "ab" : "wb");
    if (!m->f) {
        TM_ERR(TM_EIO, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    return m;
fail:
    free(p);
    free(m);
    return NULL;
}

/* The key as a JSON string; false (with an error) for invalid UTF-8. */
static bool put_key(FILE *f, const char *k, const char *fn)
{
    size_t bad;
    if (!tm__utf8_valid((const unsigned char *)k, strlen(k), &bad)) {
        tm__errf(TM_EINVAL, fn, "key \"%s\" is not valid UTF-8 (byte %zu)", k, bad);
        return false;
    }
    fputc('"', f);
    for (const unsigned char *s = (const unsigned char *)k; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if (*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
    return true;
}

tm_status tm_metrics_log(tm_metrics *m, int64_t step, int n,
                         const char *const *keys, const double *values)
{
    const char *fn = __func__;
    if (!m) return TM_ERR(TM_EINVAL, "metrics is NULL");
    if (n < 0 || (n > 0 && (!keys || !values)))
        return TM_ERR(TM_EINVAL, "n %d with keys %p, values %p", n,
                      (const void *)keys, (const void *)values);
    for (int i = 0; i < n; i++) {
        if (!keys[i]) return TM_ERR(TM_EINVAL, "key %d is NULL", i);
        if (!strcmp(keys[i], "step"))
            return TM_ERR(TM_EINVAL, "key %d is \"step\" (given separately)", i);
        for (int j = 0; j < i; j++)
            if (!strcmp(keys[i], keys[j]))
                return TM_ERR(TM_EINVAL, "key \"%s\" appears twice", keys[i]);
        size_t bad;
        if (!tm__utf8_valid((const unsigned char *)keys[i], strlen(keys[i]), &bad))
            return TM_ERR(TM_EINVAL, "key %d is not valid UTF-8 (byte %zu)", i, bad);
    }
    FILE *f = m->f;
    fprintf(f, "{\"step\": %lld", (long long)step);
    for (int i = 0; i < n; i++) {
        fputs(", ", f);
        put_key(f, keys[i], fn);
        if (isfinite(values[i])) fprintf(f, ": %.17g", values[i]);
        else fputs(": null", f);
    }
    fputs("}\n", f);
    if (fflush(f) != 0 || ferror(f)) {
        m->failed = TM_EIO;
        return TM_ERR(TM_EIO, "%s: write failed: %s", m->path, strerror(errno));
    }
    return TM_OK;
}

tm_status tm_metrics_close(tm_metrics *m)
{
    if (!m) return TM_OK;
    tm_status st = m->failed;
    if (fclose(m->f) != 0 && !st)
        st = TM_ERR(TM_EIO, "%s: close failed: %s", m->path, strerror(errno));
    else if (st)
        TM_ERR(st, "%s: an earlier write failed", m->path);
    free(m->path);
    free(m);
    return st;
}
