/*
 * dataset_write.c — the token-dataset writer (layout in dataset_impl.h).
 *
 * Tokens stream into an anonymous temporary file as documents arrive (a
 * corpus need not fit in memory); the per-document tables stay in memory
 * because the header and tables precede the tokens.  Close assembles
 * `path`.tmp and renames it, so the final name only ever holds a complete
 * file.
 */
#include "dataset_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void writer_free(tm_token_writer *w)
{
    if (w->release_text) w->release_text(w->text);
    if (w->tokens) fclose(w->tokens);
    free(w->path);
    free(w->tmp);
    tm__dealloc(w->offsets);
    tm__dealloc(w->bytes);
    tm__dealloc(w);
}

void tm_token_writer_abort(tm_token_writer *w)
{
    if (!w) return;
    remove(w->tmp);
    writer_free(w);
}

tm_token_writer *tm_token_writer_new_raw(const char *path, int64_t vocab_size,
                                         uint64_t tokenizer_hash)
{
    const char *fn = __func__;
    if (!path || !*path) {
        TM_ERR(TM_EINVAL, "path is NULL or empty");
        return NULL;
    }
    if (vocab_size < 1 || vocab_size > 4294967296ll) {
        TM_ERR(TM_EINVAL, "vocab_size %lld is not in [1, 2^32]",
               (long long)vocab_size);
        return NULL;
    }
    tm_token_writer *w = tm__calloc(sizeof *w, fn);
    if (!w) return NULL;
    size_t len = strlen(path);
    w->path = malloc(len + 1);
    w->tmp = malloc(len + 5);
    w->cap = 64;
    w->offsets = tm__alloc(sizeof(uint64_t) * (size_t)(w->cap + 1), fn);
    w->bytes = tm__alloc(sizeof(uint64_t) * (size_t)w->cap, fn);
    if (!w->path || !w->tmp || !w->offsets || !w->bytes) {
        if (!w->path || !w->tmp) TM_ERR(TM_ENOMEM, "no memory for the path");
        goto fail;
    }
    memcpy(w->path, path, len + 1);
    memcpy(w->tmp, path, len);
    memcpy(w->tmp + len, ".tmp", 5);
    w->tokens = tmpfile();
    if (!w->tokens) {
        TM_ERR(TM_EIO, "cannot create a temporary file: %s", strerror(errno));
        goto fail;
    }
    w->vocab = vocab_size;
    w->hash = tokenizer_hash;
    w->width = vocab_size <= 65536 ? 2 : 4;
    w->offsets[0] = 0;
    return w;
fail:
    writer_free(w);
    return NULL;
}

static tm_status grow(tm_token_writer *w, const char *fn)
{
    int64_t cap = w->cap * 2;
    uint64_t *o = tm__alloc(sizeof(uint64_t) * (size_t)(cap + 1), fn);
    uint64_t *b = tm__alloc(sizeof(uint64_t) * (size_t)cap, fn);
    if (!o || !b) {
        tm__dealloc(o);
        tm__dealloc(b);
        return TM_ENOMEM;
    }
    memcpy(o, w->offsets, sizeof(uint64_t) * (size_t)(w->n_docs + 1));
    memcpy(b, w->bytes, sizeof(uint64_t) * (size_t)w->n_docs);
    tm__dealloc(w->offsets);
    tm__dealloc(w->bytes);
    w->offsets = o;
    w->bytes = b;
    w->cap = cap;
    return TM_OK;
}

static tm_status add_tokens(tm_token_writer *w, const int32_t *ids, int64_t n,
                            int64_t text_bytes, const char *fn)
{
    if (!ids && n) return tm__errf(TM_EINVAL, fn, "ids is NULL with n %lld",
                                   (long long)n);
    if (n < 0 || text_bytes < 0)
        return tm__errf(TM_EINVAL, fn, "negative count: n %lld, text_bytes "
                        "%lld", (long long)n, (long long)text_bytes);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || (int64_t)ids[i] >= w->vocab)
            return tm__errf(TM_ERANGE, fn, "token %d at position %lld is not "
                            "in [0, vocab size %lld)", (int)ids[i],
                            (long long)i, (long long)w->vocab);
    if (w->n_docs == w->cap && grow(w, fn) != TM_OK) return TM_ENOMEM;
    unsigned char buf[4096];
    size_t fill = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)ids[i];
        for (uint32_t k = 0; k < w->width; k++) buf[fill++] = (unsigned char)(t >> (8 * k));
        if (fill == sizeof buf || i == n - 1) {
            if (fwrite(buf, 1, fill, w->tokens) != fill)
                return tm__errf(TM_EIO, fn, "%s: writing tokens failed: %s",
                                w->path, strerror(errno));
            fill = 0;
        }
    }
    w->n_tokens += n;
    w->n_bytes += text_bytes;
    w->bytes[w->n_docs] = (uint64_t)text_bytes;
    w->offsets[++w->n_docs] = (uint64_t)w->n_tokens;
    return TM_OK;
}

tm_status tm_token_writer_add_tokens(tm_token_writer *w, const int32_t *ids,
                                     int64_t n, int64_t text_bytes)
{
    if (!w) return TM_ERR(TM_EINVAL, "writer is NULL");
    if (w->failed) return TM_ERR(w->failed, "%s: an earlier add failed",
                                 w->path);
    tm_status st = add_tokens(w, ids, n, text_bytes, __func__);
    /* argument errors leave the writer usable; I/O and memory do not */
    if (st == TM_EIO || st == TM_ENOMEM) w->failed = st;
    return st;
}

/* Writes the whole file into w->tmp. */
static tm_status write_file(tm_token_writer *w, const char *fn)
{
    unsigned char h[TM__DS_HEADER];
    memcpy(h, TM__DS_MAGIC, 8);
    for (int k = 0; k < 4; k++) {
        h[8 + k] = (unsigned char)(TM_TOKEN_DATASET_VERSION >> (8 * k));
        h[12 + k] = (unsigned char)(w->width >> (8 * k));
    }
    tm__ds_put64(h + 16, (uint64_t)w->vocab);
    tm__ds_put64(h + 24, w->hash);
    tm__ds_put64(h + 32, (uint64_t)w->n_docs);
    tm__ds_put64(h + 40, (uint64_t)w->n_tokens);
    tm__ds_put64(h + 48, (uint64_t)w->n_bytes);
    tm__ds_put64(h + 56, tm__fnv1a64(h, 56));
    FILE *out = fopen(w->tmp, "wb");
    if (!out)
        return tm__errf(TM_EIO, fn, "%s: cannot create: %s", w->tmp,
                        strerror(errno));
    bool ok = fwrite(h, 1, sizeof h, out) == sizeof h;
    unsigned char b8[8];
    for (int64_t d = 0; ok && d <= w->n_docs; d++) {
        tm__ds_put64(b8, w->offsets[d]);
        ok = fwrite(b8, 1, 8, out) == 8;
    }
    for (int64_t d = 0; ok && d < w->n_docs; d++) {
        tm__ds_put64(b8, w->bytes[d]);
        ok = fwrite(b8, 1, 8, out) == 8;
    }
    ok = ok && fflush(w->tokens) == 0 && fseek(w->tokens, 0, SEEK_SET) == 0;
    unsigned char buf[1 << 16];
    size_t got;
    while (ok && (got = fread(buf, 1, sizeof buf, w->tokens)) > 0)
        ok = fwrite(buf, 1, got, out) == got;
    ok = ok && !ferror(w->tokens);
    int err = errno;
    if (fclose(out) != 0 && ok) ok = false, err = errno;
    if (!ok)
        return tm__errf(TM_EIO, fn, "%s: writing failed: %s", w->tmp,
                        strerror(err));
    return TM_OK;
}

tm_status tm_token_writer_close(tm_token_writer *w)
{
    const char *fn = __func__;
    if (!w) return TM_ERR(TM_EINVAL, "writer is NULL");
    tm_status st = w->failed;
    if (st) {
        tm__errf(st, fn, "%s: an earlier add failed; nothing written", w->path);
        goto fail;
    }
    st = write_file(w, fn);
    if (st != TM_OK) goto fail;
    if (rename(w->tmp, w->path) != 0) {
        st = TM_ERR(TM_EIO, "cannot rename %s to %s: %s", w->tmp, w->path,
                    strerror(errno));
        goto fail;
    }
    writer_free(w);
    return TM_OK;
fail:
    tm_token_writer_abort(w);
    return st;
}
