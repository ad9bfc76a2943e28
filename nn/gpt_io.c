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
    const char **names = malloc(sizeof *names * (size_t)n);
    tm_tensor **ts = malloc(sizeof *ts * (size_t)n);
    char *json = NULL;
    if (!names || !ts) {
        st = TM_ERR(TM_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        names[i] = tm_params_name(m->params, i);
        ts[i] = tm_params_get(m->params, i);
    }
    static const char *const mk[] = {"format"}, *const mv[] = {"pt"};
    if ((st = join(path, sizeof path, dir, "model.safetensors", fn)) ||
        (st = tm_safetensors_save(path, names, ts, n, mk, mv, 1))) {
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
    free(names);
    free(ts);
    free(json);
    return st;
}

static tm_status read_config(const char *path, tm_gpt_config *c,
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

/* Tensors some checkpoints carry that the model recomputes. */
static bool skippable(const char *name)
{
    const char *s = strstr(name, "rotary_emb.inv_freq");
    return s && s[strlen("rotary_emb.inv_freq")] == '\0';
}

static tm_status check_file(const tm_gpt *m, const tm_safetensors *f,
                            const char *path, const char *fn)
{
    int n = tm_params_count(m->params);
    for (int i = 0; i < n; i++) {
        const char *name = tm_params_name(m->params, i);
        tm_tensor *p = tm_params_get(m->params, i);
        int j = tm_safetensors_find(f, name);
        if (j < 0)
            return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is missing",
                            path, name);
        int nd = tm_safetensors_ndim(f, j);
        const int64_t *fs = tm_safetensors_shape(f, j);
        bool same = nd == tm_ndim(p);
        for (int d = 0; same && d < nd; d++)
            same = fs[d] == tm_shape(p)[d];
        if (!same) {
            char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
            return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' has shape %s, "
                            "the config needs %s", path, name,
                            tm__fmt_shape(fs, nd, a, sizeof a),
                            tm__fmt_shape(tm_shape(p), tm_ndim(p), b,
                                          sizeof b));
        }
        tm_dtype dt;
        if (tm_safetensors_dtype(f, j, &dt) ||
            (dt != TM_F32 && dt != TM_F16 && dt != TM_BF16))
            return tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is %s, not F32, "
                            "F16 or BF16", path, name,
                            tm_safetensors_dtype_name(f, j));
    }
    for (int j = 0; j < tm_safetensors_count(f); j++) {
        const char *name = tm_safetensors_name(f, j);
        if (tm_params_index(m->params, name) < 0 && !skippable(name))
            return tm__errf(TM_EFORMAT, fn, "%s: unexpected tensor '%s'%s",
                            path, name,
                            !strcmp(name, "lm_head.weight")
                                ? " (the config ties the embeddings)" : "");
    }
    return TM_OK;
}

tm_gpt *tm_gpt_load(const char *dir)
{
    const char *fn = __func__;
    if (!dir || !*dir) {
        TM_ERR(TM_EINVAL, "dir is NULL or empty");
        return NULL;
    }
    char path[4096];
    tm_gpt_config c;
    tm_gpt *m = NULL;
    tm_safetensors *f = NULL;
    if (join(path, sizeof path, dir, "config.json", fn) ||
        read_config(path, &c, fn))
        return NULL;
    if (!(m = tm__gpt_create(&c, false, NULL, fn))) return NULL;
    if (join(path, sizeof path, dir, "model.safetensors", fn)) goto fail;
    if (!(f = tm_safetensors_open(path))) {
        tm__relabel_error(fn, tm_last_status());
        goto fail;
    }
    if (check_file(m, f, path, fn)) goto fail;
    bool prev = tm_no_grad_begin();
    tm_status st = TM_OK;
    for (int i = 0; i < tm_params_count(m->params) && !st; i++) {
        const char *name = tm_params_name(m->params, i);
        tm_tensor *src = tm_safetensors_get(f, name);
        st = src ? tm_copy_(tm_params_get(m->params, i), src)
                 : tm_last_status();
        tm_free(src);
    }
    tm_no_grad_end(prev);
    if (st) {
        tm__relabel_error(fn, st);
        goto fail;
    }
    tm_safetensors_close(f);
    m->training = false;
    m->rng = tm_rng_new(0);
    return m;
fail:
    tm_safetensors_close(f);
    tm_gpt_free(m);
    return NULL;
}
