/*
 * gpt_io.c — a model directory: model.safetensors under Hugging Face names
 * and config.json (foundry/models.h).
 */
#include "gpt_impl.h"

#include "foundry/io.h"

#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_MAX (1 << 20) /* a config.json is a few hundred bytes */

static tm_status join(char *out, size_t size, const char *dir,
                      const char *name, const char *fn)
{
    int k = snprintf(out, size, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= size)
        return tm__errf(TM_EINVAL, fn, "path '%.64s...' is too long", dir);
    return TM_OK;
}

/* Writes text to path through a temporary file and a rename, so readers
 * never see half a file. */
static tm_status write_text(const char *path, const char *text,
                            const char *fn)
{
    char tmp[4096 + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return tm__errf(TM_EIO, fn, "cannot create '%s': %s", tmp,
                        strerror(errno));
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return tm__errf(TM_EIO, fn, "cannot write '%s': %s", path,
                        strerror(e));
    }
    return TM_OK;
}

tm_status tm_gpt_save(const tm_gpt *m, const char *dir)
{
    const char *fn = __func__;
    if (!m || !dir || !*dir) return TM_ERR(TM_EINVAL, "model or dir is NULL");
    char path[4096];
    tm_status st;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return TM_ERR(TM_EIO, "cannot create directory '%s': %s", dir,
                      strerror(errno));
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return TM_ERR(TM_EIO, "'%s' is not a directory", dir);
    int n = tm_params_count(m->params);
    const char **names = calloc((size_t)n, sizeof *names);
    tm_tensor **ts = calloc((size_t)n, sizeof *ts);
    /* "format": "pt", then one "foundry.quant.<name>" per quantized
     * tensor. */
    const char **mk = calloc((size_t)n + 1, sizeof *mk);
    char **mv = calloc((size_t)n + 1, sizeof *mv);
    char **keys = calloc((size_t)n + 1, sizeof *keys);
    int nmeta = 1;
    char *json = NULL;
    if (!names || !ts || !mk || !mv || !keys) {
        st = TM_ERR(TM_ENOMEM, "out of memory");
        goto done;
    }
    mk[0] = "format";
    if (!(mv[0] = strdup("pt"))) {
        st = TM_ERR(TM_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        names[i] = tm_params_name(m->params, i);
        char *desc = NULL;
        if (!(ts[i] = tm__gpt_save_tensor(m, i, true, &desc, fn))) {
            st = tm_last_status();
            goto done;
        }
        if (desc) {
            size_t kl = strlen("foundry.quant.") + strlen(names[i]) + 1;
            if (!(keys[nmeta] = malloc(kl))) {
                free(desc);
                st = TM_ERR(TM_ENOMEM, "out of memory");
                goto done;
            }
            snprintf(keys[nmeta], kl, "foundry.quant.%s", names[i]);
            mk[nmeta] = keys[nmeta];
            mv[nmeta++] = desc;
        }
    }
    if ((st = join(path, sizeof path, dir, "model.safetensors", fn)) ||
        (st = tm_safetensors_save(path, names, ts, n, mk,
                                  (const char *const *)mv, nmeta))) {
        tm__relabel_error(fn, st);
        goto done;
    }
    if (!(json = tm_gpt_config_to_json(&m->cfg))) {
        st = tm__relabel_error(fn, tm_last_status());
        goto done;
    }
    if ((st = join(path, sizeof path, dir, "config.json", fn))) goto done;
    st = write_text(path, json, fn);
done:
    for (int i = 0; ts && i < n; i++) tm_free(ts[i]);
    for (int i = 0; mv && keys && i < nmeta; i++) {
        free(mv[i]);
        free(keys[i]);
    }
    free(names);
    free(ts);
    free(mk);
    free(mv);
    free(keys);
    free(json);
    return st;
}

tm_status tm__gpt_read_config(const char *path, tm_gpt_config *c,
                              const char *fn)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tm__errf(TM_EIO, fn, "cannot open '%s': %s", path,
                        strerror(errno));
    char *buf = malloc(CONFIG_MAX + 1);
    size_t n = buf ? fread(buf, 1, CONFIG_MAX + 1, f) : 0;
    bool err = ferror(f);
    fclose(f);
    tm_status st;
    if (!buf) st = tm__errf(TM_ENOMEM, fn, "out of memory");
    else if (err) st = tm__errf(TM_EIO, fn, "cannot read '%s'", path);
    else if (n > CONFIG_MAX)
        st = tm__errf(TM_EFORMAT, fn, "'%s' is larger than %d bytes", path,
                      CONFIG_MAX);
    else if ((st = tm_gpt_config_from_json(buf, n, c)))
        st = tm__errf(st, fn, "%s: %s", path, tm_last_error());
    free(buf);
    return st;
}

bool tm__ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

tm_gpt *tm_gpt_load(const char *dir)
{
    const char *fn = __func__;
    if (!dir || !*dir) {
        TM_ERR(TM_EINVAL, "dir is NULL or empty");
        return NULL;
    }
    char path[4096];
    tm_gpt *m = NULL;
    if (tm__ends_with(dir, ".gguf") && is_file(dir))
        return tm__gpt_load_file(dir, NULL, fn);
    if (tm__ends_with(dir, ".safetensors") && is_file(dir)) {
        /* config.json lives beside the file. */
        char cdir[4096];
        const char *slash = strrchr(dir, '/');
        size_t k = slash ? (size_t)(slash - dir) : 0;
        if (k >= sizeof cdir) {
            TM_ERR(TM_EINVAL, "path '%.64s...' is too long", dir);
            return NULL;
        }
        if (slash) {
            memcpy(cdir, dir, k);
            cdir[k ? k : 1] = '\0';
            if (!k) cdir[0] = '/';
        } else {
            strcpy(cdir, ".");
        }
        return tm__gpt_load_file(dir, cdir, fn);
    }
    if (join(path, sizeof path, dir, "model.safetensors", fn)) return NULL;
    if (!is_file(path)) {
        char gg[4096];
        if (join(gg, sizeof gg, dir, "model.gguf", fn)) return NULL;
        if (is_file(gg)) return tm__gpt_load_file(gg, NULL, fn);
    }
    char cfg[4096];
    tm_gpt_config c;
    /* The config first, so a directory without one says so. */
    if (join(cfg, sizeof cfg, dir, "config.json", fn) ||
        tm__gpt_read_config(cfg, &c, fn))
        return NULL;
    m = tm__gpt_load_file(path, dir, fn);
    return m;
}
