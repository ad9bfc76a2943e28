/* The corpus of `foundry train`: files, the tokenizer trained on them, and
 * the token dataset written from them. */
#include "train.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static tm_status push_file(corpus *c, const char *path, int64_t size)
{
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 64;
        char **np = realloc(c->paths, (size_t)nc * sizeof *np);
        if (!np)
            return tm_set_error(TM_ENOMEM, "corpus: out of memory");
        c->paths = np;
        int64_t *ns = realloc(c->sizes, (size_t)nc * sizeof *ns);
        if (!ns)
            return tm_set_error(TM_ENOMEM, "corpus: out of memory");
        c->sizes = ns;
        c->cap = nc;
    }
    char *p = strdup(path);
    if (!p)
        return tm_set_error(TM_ENOMEM, "corpus: out of memory");
    c->paths[c->n] = p;
    c->sizes[c->n++] = size;
    c->bytes += size;
    return TM_OK;
}

static tm_status walk(corpus *c, const char *path, const char *suffix, int64_t max_bytes,
                      bool top)
{
    struct stat st;
    tm_status s = TM_OK;
    char **names = NULL;
    int n = 0, cap = 0;
    DIR *d = NULL;
    if ((top ? stat(path, &st) : lstat(path, &st)) != 0)
        return tm_set_error(TM_EIO, "cannot read '%s': %s", path, strerror(errno));
    if (S_ISREG(st.st_mode)) {
        /* A file named on the command line is taken whatever its suffix. */
        if ((!top && suffix && !has_suffix(path, suffix)) || c->bytes + st.st_size > max_bytes)
            return TM_OK;
        return push_file(c, path, (int64_t)st.st_size);
    }
    /* Symbolic links inside a tree are not followed: no loops, no escapes. */
    if (!S_ISDIR(st.st_mode))
        return top ? tm_set_error(TM_EIO, "'%s' is not a regular file or directory", path) : TM_OK;
    if (!(d = opendir(path)))
        return tm_set_error(TM_EIO, "cannot open directory '%s': %s", path, strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) {
                s = tm_set_error(TM_ENOMEM, "corpus: out of memory");
                goto done;
            }
            names = nn;
        }
        if (!(names[n] = cli_path(path, e->d_name))) {
            s = TM_ENOMEM;
            goto done;
        }
        n++;
    }
    /* Sorted, so that the same tree gives the same corpus on any file system. */
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n && s == TM_OK; i++)
        s = walk(c, names[i], suffix, max_bytes, false);
done:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return s;
}

tm_status corpus_add(corpus *c, const char *path, const char *suffix, int64_t max_bytes)
{
    return walk(c, path, suffix, max_bytes, true);
}

void corpus_free(corpus *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->paths[i]);
    free(c->paths);
    free(c->sizes);
    memset(c, 0, sizeof *c);
}

static bool is_stdlib(const char *dir)
{
    char *os = cli_path(dir, "os.py");
    struct stat st;
    bool ok = os && stat(os, &st) == 0 && S_ISREG(st.st_mode);
    free(os);
    return ok;
}

char *corpus_default_dir(void)
{
    char buf[4096] = "";
    FILE *p = popen("python3 -c \"import sysconfig; print(sysconfig.get_path('stdlib'))\" 2>/dev/null", "r");
    if (p) {
        if (!fgets(buf, sizeof buf, p))
            buf[0] = '\0';
        pclose(p);
        buf[strcspn(buf, "\r\n")] = '\0';
        if (buf[0] && is_stdlib(buf))
            return strdup(buf);
    }
    /* No python3 on PATH: the newest /usr/lib/python3.N that has an os.py. */
    DIR *d = opendir("/usr/lib");
    char *best = NULL;
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            if (strncmp(e->d_name, "python3.", 8))
                continue;
            char *cand = cli_path("/usr/lib", e->d_name);
            int64_t minor, best_minor;
            if (cand && is_stdlib(cand) && cli_parse_int(e->d_name + 8, 0, 1000, &minor) &&
                (!best || (cli_parse_int(best + strlen("/usr/lib/python3."), 0, 1000, &best_minor) &&
                           minor > best_minor))) {
                free(best);
                best = cand;
            } else {
                free(cand);
            }
        }
        closedir(d);
    }
    if (!best)
        tm_set_error(TM_EIO, "no --data given and no Python standard library found "
                             "(python3's sysconfig stdlib path, /usr/lib/python3.*)");
    return best;
}

tm_tokenizer *train_tokenizer(const train_opts *o, const corpus *c, tm_progress_mode pm)
{
    tm_tokenizer *tok = NULL;
    tm_bpe_trainer *tr = NULL;
    tm_progress *pg = NULL, *merges_pg = NULL;
    char *all = NULL;
    size_t all_len = 0;
    if (o->tokenizer)
        return tm_tokenizer_load(o->tokenizer);
    if (!(pg = tm_progress_new(o->char_level ? "reading corpus" : "tokenizer: counting words",
                               c->bytes, "B", pm, NULL)))
        goto done;
    if (o->char_level) {
        if (!(all = malloc((size_t)c->bytes + 1))) {
            tm_set_error(TM_ENOMEM, "corpus: out of memory for %lld bytes", (long long)c->bytes);
            goto done;
        }
    } else {
        static const char *const specials[] = {"<|endoftext|>"};
        tm_bpe_train_opts bo = tm_bpe_train_defaults(o->vocab_size);
        bo.special_tokens = specials;
        bo.n_special = 1;
        /* The trainer advances a progress bar by one per merge. */
        if (!(merges_pg = tm_progress_new("tokenizer: merges", o->vocab_size > 257 ? o->vocab_size - 257 : 0,
                                          "merge", pm, NULL)))
            goto done;
        bo.progress = merges_pg;
        if (!(tr = tm_bpe_trainer_new(&bo)))
            goto done;
    }
    for (int i = 0; i < c->n; i++) {
        size_t len;
        char *text = cli_read_file(c->paths[i], &len);
        if (!text)
            goto done;
        if (o->char_level) {
            /* The file may have grown since it was listed: take what was counted. */
            size_t take = len < (size_t)c->bytes - all_len ? len : (size_t)c->bytes - all_len;
            memcpy(all + all_len, text, take);
            all_len += take;
        } else if (tm_bpe_trainer_feed(tr, text, len) != TM_OK) {
            free(text);
            goto done;
        }
        free(text);
        tm_progress_update(pg, c->sizes[i]);
    }
    tm_progress_finish(pg);
    if (o->char_level) {
        tok = tm_tokenizer_char_new(all, all_len);
    } else {
        tok = tm_bpe_trainer_finish(tr);
    }
done:
    tm_progress_free(pg);
    tm_progress_free(merges_pg);
    tm_bpe_trainer_free(tr);
    free(all);
    return tok;
}

tm_status train_write_dataset(const char *path, const corpus *c, const tm_tokenizer *tok,
                              tm_progress_mode pm)
{
    tm_status s = TM_OK;
    tm_progress *pg = tm_progress_new("tokenizing", c->bytes, "B", pm, NULL);
    /* Each file one document, the end-of-text token after it. */
    tm_token_writer *w = tm_token_writer_new(path, tok);
    if (!pg || !w) {
        s = tm_last_status();
        goto fail;
    }
    for (int i = 0; i < c->n; i++) {
        size_t len;
        char *text = cli_read_file(c->paths[i], &len);
        s = text ? tm_token_writer_add(w, text, len) : tm_last_status();
        free(text);
        if (s != TM_OK)
            goto fail;
        tm_progress_update(pg, c->sizes[i]);
    }
    s = tm_token_writer_close(w);
    w = NULL;
fail:
    tm_token_writer_abort(w);
    tm_progress_free(pg);
    return s;
}
