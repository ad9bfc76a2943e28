/*
 * dataset_text.c — token datasets from text: the writer fed with documents
 * through a tokenizer, and files and directory trees as documents.
 *
 * Directory walks are sorted bytewise at every level, so the same tree
 * gives the same dataset (and the same split) on every machine.
 */
#include "dataset_impl.h"
#include "foundry/tokenizer.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct text_state {
    const tm_tokenizer *tok;
    int64_t eos;
    tm_token_buf buf;
    int32_t *ext;          /* the ids plus the end-of-text token */
    int64_t cap;
} text_state;

static void release_text(void *p)
{
    text_state *s = p;
    tm_token_buf_free(&s->buf);
    free(s->ext);
    free(s);
}

tm_token_writer *tm_token_writer_new(const char *path, const tm_tokenizer *tok)
{
    if (!tok) {
        TM_ERR(TM_EINVAL, "tokenizer is NULL");
        return NULL;
    }
    text_state *s = calloc(1, sizeof *s);
    if (!s) {
        TM_ERR(TM_ENOMEM, "no memory");
        return NULL;
    }
    tm_token_writer *w = tm_token_writer_new_raw(path, tm_tokenizer_vocab_size(tok),
                                                 tm_tokenizer_hash(tok));
    if (!w) {
        tm__relabel_error(__func__, tm_last_status());
        free(s);
        return NULL;
    }
    s->tok = tok;
    s->eos = tm_tokenizer_eos_id(tok);
    w->text = s;
    w->release_text = release_text;
    return w;
}

tm_status tm_token_writer_add(tm_token_writer *w, const char *text, size_t len)
{
    const char *fn = __func__;
    if (!w) return TM_ERR(TM_EINVAL, "writer is NULL");
    if (!w->text)
        return TM_ERR(TM_ESTATE, "%s: writer has no tokenizer (made by "
                      "tm_token_writer_new_raw)", w->path);
    if (!text && len) return TM_ERR(TM_EINVAL, "text is NULL with len %zu", len);
    text_state *s = w->text;
    s->buf.n = 0;
    tm_status st = tm_tokenizer_encode(s->tok, text ? text : "", len, &s->buf);
    if (st != TM_OK) return tm__relabel_error(fn, st);
    const int32_t *ids = s->buf.ids;
    int64_t n = s->buf.n;
    if (s->eos >= 0) {
        if (n + 1 > s->cap) {
            int32_t *e = realloc(s->ext, sizeof *e * (size_t)(n + 1));
            if (!e) return TM_ERR(TM_ENOMEM, "no memory for %lld tokens",
                                  (long long)(n + 1));
            s->ext = e;
            s->cap = n + 1;
        }
        if (n) memcpy(s->ext, ids, sizeof *ids * (size_t)n);
        s->ext[n++] = (int32_t)s->eos;
        ids = s->ext;
    }
    st = tm_token_writer_add_tokens(w, ids, n, (int64_t)len);
    return st == TM_OK ? TM_OK : tm__relabel_error(fn, st);
}

tm_status tm_token_dataset_check_tokenizer(const tm_token_dataset *ds,
                                           const tm_tokenizer *tok)
{
    if (!ds || !tok) return TM_ERR(TM_EINVAL, "dataset or tokenizer is NULL");
    uint64_t h = tm_tokenizer_hash(tok);
    if (h != ds->hash)
        return TM_ERR(TM_EINVAL, "tokenizer hash mismatch: dataset 0x%016llx "
                      "tokenizer 0x%016llx (the dataset was made with another "
                      "tokenizer)", (unsigned long long)ds->hash,
                      (unsigned long long)h);
    int64_t v = tm_tokenizer_vocab_size(tok);
    if (v != ds->vocab)
        return TM_ERR(TM_EINVAL, "vocab size mismatch: dataset %lld tokenizer "
                      "%lld", (long long)ds->vocab, (long long)v);
    return TM_OK;
}

/* ------------------------------------------------------ files as documents */

typedef struct path_list {
    char **p;
    size_t n, cap;
    int64_t bytes;
    /* the dataset being replaced, when it lies in an input directory */
    bool skip;
    dev_t skip_dev;
    ino_t skip_ino;
} path_list;

static tm_status add_path(path_list *l, const char *path, int64_t size,
                          const char *fn)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **np = realloc(l->p, cap * sizeof *np);
        if (!np) return tm__errf(TM_ENOMEM, fn, "no memory for the file list");
        l->p = np;
        l->cap = cap;
    }
    size_t len = strlen(path);
    char *d = malloc(len + 1);
    if (!d) return tm__errf(TM_ENOMEM, fn, "no memory for the file list");
    memcpy(d, path, len + 1);
    l->p[l->n++] = d;
    l->bytes += size;
    return TM_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n >= k && !memcmp(name + n - k, suffix, k);
}

/* Appends the regular files under dir (sorted, recursively; entries
 * starting with '.' and symbolic links skipped). */
static tm_status walk(path_list *l, const char *dir, const char *suffix,
                      int depth, const char *fn)
{
    if (depth > 64)
        return tm__errf(TM_EINVAL, fn, "%s: directories nested deeper than 64",
                        dir);
    DIR *d = opendir(dir);
    if (!d) return tm__errf(TM_EIO, fn, "%s: cannot open directory: %s", dir,
                            strerror(errno));
    path_list names = {0};
    tm_status st = TM_OK;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && (st = add_path(&names, e->d_name, 0, fn)) != TM_OK)
            break;
    closedir(d);
    if (st == TM_OK && names.n) qsort(names.p, names.n, sizeof *names.p, cmp_names);
    size_t dl = strlen(dir);
    for (size_t i = 0; st == TM_OK && i < names.n; i++) {
        size_t nl = strlen(names.p[i]);
        char *full = malloc(dl + nl + 2);
        if (!full) {
            st = tm__errf(TM_ENOMEM, fn, "no memory for a path");
            break;
        }
        memcpy(full, dir, dl);
        full[dl] = '/';
        memcpy(full + dl + 1, names.p[i], nl + 1);
        struct stat sb;
        if (lstat(full, &sb) != 0) {
            st = tm__errf(TM_EIO, fn, "%s: cannot stat: %s", full, strerror(errno));
        } else if (S_ISDIR(sb.st_mode)) {
            st = walk(l, full, suffix, depth + 1, fn);
        } else if (S_ISREG(sb.st_mode) && (!suffix || has_suffix(names.p[i], suffix)) &&
                   !(l->skip && sb.st_dev == l->skip_dev && sb.st_ino == l->skip_ino)) {
            st = add_path(l, full, (int64_t)sb.st_size, fn);
        }
        free(full);
    }
    for (size_t i = 0; i < names.n; i++) free(names.p[i]);
    free(names.p);
    return st;
}

static char *read_file(const char *path, size_t *len, const char *fn)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tm__errf(TM_EIO, fn, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
    }
    if (!buf) tm__errf(TM_ENOMEM, fn, "%s: no memory to read it", path);
    else if (ferror(f)) {
        tm__errf(TM_EIO, fn, "%s: read failed", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

tm_status tm_token_dataset_write(const char *out_path, const char *const *inputs,
                                 int n_inputs, const char *suffix,
                                 const tm_tokenizer *tok, tm_progress *progress)
{
    const char *fn = __func__;
    if (!out_path || !tok || n_inputs < 1 || !inputs)
        return TM_ERR(TM_EINVAL, "needs an output path, a tokenizer and at "
                      "least one input (n_inputs %d)", n_inputs);
    path_list files = {0};
    tm_status st = TM_OK;
    tm_token_writer *w = NULL;
    struct stat ob;
    if (stat(out_path, &ob) == 0) {
        files.skip = true;
        files.skip_dev = ob.st_dev;
        files.skip_ino = ob.st_ino;
    }
    for (int i = 0; i < n_inputs && st == TM_OK; i++) {
        struct stat sb;
        if (!inputs[i]) st = TM_ERR(TM_EINVAL, "input %d is NULL", i);
        else if (stat(inputs[i], &sb) != 0)
            st = TM_ERR(TM_EIO, "%s: cannot read: %s", inputs[i], strerror(errno));
        else if (S_ISDIR(sb.st_mode)) st = walk(&files, inputs[i], suffix, 0, fn);
        else if (S_ISREG(sb.st_mode))
            st = add_path(&files, inputs[i], (int64_t)sb.st_size, fn);
        else st = TM_ERR(TM_EINVAL, "%s: not a file or directory", inputs[i]);
    }
    if (st == TM_OK && files.n == 0)
        st = TM_ERR(TM_EINVAL, "no input files%s%s%s", suffix ? " ending in \"" : "",
                    suffix ? suffix : "", suffix ? "\"" : "");
    if (st != TM_OK) goto done;
    if (progress) tm_progress_set_total(progress, files.bytes);
    w = tm_token_writer_new(out_path, tok);
    if (!w) {
        st = tm__relabel_error(fn, tm_last_status());
        goto done;
    }
    for (size_t i = 0; i < files.n && st == TM_OK; i++) {
        size_t len = 0;
        char *text = read_file(files.p[i], &len, fn);
        if (!text) {
            st = tm_last_status();
            break;
        }
        st = tm_token_writer_add(w, text, len);
        if (st != TM_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tm_last_error());
            st = TM_ERR(st, "%s: %s", files.p[i], msg);
        }
        free(text);
        tm_progress_update(progress, (int64_t)len);
    }
    if (st == TM_OK) {
        st = tm_token_writer_close(w);
        if (st != TM_OK) tm__relabel_error(fn, st);
    } else {
        tm_token_writer_abort(w);
    }
done:
    for (size_t i = 0; i < files.n; i++) free(files.p[i]);
    free(files.p);
    return st;
}
