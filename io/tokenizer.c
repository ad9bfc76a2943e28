/*
 * tokenizer.c — building a tokenizer from its tables, the char-level
 * constructor, accessors and decoding.  Encoding is in tokenizer_encode.c,
 * tokenizer.json in tokenizer_json.c.
 */
#include "tokenizer_impl.h"
#include "json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t tm__tok_hbytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
        s += 8, n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, s, n);
    h = (h ^ v) * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
}

int32_t tm__idmap_get(const tm__idmap *m, const char *k, size_t n)
{
    for (uint64_t i = tm__tok_hbytes(k, n) & m->mask;; i = (i + 1) & m->mask) {
        int32_t id = m->slot[i];
        if (id < 0)
            return -1;
        if (m->keylens[id] == n && memcmp(m->keys[id], k, n) == 0)
            return id;
    }
}

tm_status tm__idmap_build(tm__idmap *m, char *const *keys, const size_t *lens, int64_t n,
                             int64_t *dup, const char *fn)
{
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2)
        cap <<= 1;
    m->slot = malloc(cap * sizeof *m->slot);
    if (!m->slot)
        return tm__errf(TM_ENOMEM, fn, "out of memory (%llu map slots)", (unsigned long long)cap);
    memset(m->slot, 0xff, cap * sizeof *m->slot);
    m->mask = cap - 1, m->keys = keys, m->keylens = lens;
    *dup = -1;
    for (int64_t id = 0; id < n; id++) {
        if (!keys[id])
            continue;
        uint64_t i = tm__tok_hbytes(keys[id], lens[id]) & m->mask;
        for (;; i = (i + 1) & m->mask) {
            int32_t o = m->slot[i];
            if (o < 0)
                break;
            if (lens[o] == lens[id] && memcmp(keys[o], keys[id], lens[id]) == 0) {
                if (*dup < 0)
                    *dup = id;
                goto next;
            }
        }
        m->slot[i] = (int32_t)id;
    next:;
    }
    return TM_OK;
}

static char *dupmem(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *tm__bytes_to_mapped(const char *b, size_t n, size_t *out_len)
{
    char *d = malloc(2 * n + 1), *p = d;
    if (!d)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned c = tm__byte_char[(unsigned char)b[i]];
        if (c < 0x80) {
            *p++ = (char)c;
        } else {
            *p++ = (char)(0xC0 | (c >> 6));
            *p++ = (char)(0x80 | (c & 0x3F));
        }
    }
    *p = '\0';
    if (out_len)
        *out_len = (size_t)(p - d);
    return d;
}

/* The bytes a byte-level string stands for, or NULL (*ok false) when a
 * character is outside the byte alphabet. */
static char *mapped_to_bytes(const char *s, size_t n, size_t *out_len, bool *ok)
{
    char *d = malloc(n + 1);
    size_t k = 0;
    *ok = true;
    if (!d)
        return NULL;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += tm__utf8_next((const unsigned char *)s + i, n - i, &cp);
        int b = tm__char_byte(cp);
        if (b < 0) {
            *ok = false;
            free(d);
            return NULL;
        }
        d[k++] = (char)b;
    }
    d[k] = '\0';
    *out_len = k;
    return d;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* "<0xNN>" -> NN, else -1 (HF's ByteFallback reads the two hex digits). */
static int fallback_byte(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int a = hexval(s[3]), b = hexval(s[4]);
    return a < 0 || b < 0 ? -1 : a * 16 + b;
}

void tm_tokenizer_free(tm_tokenizer *t)
{
    if (!t)
        return;
    for (int64_t i = 0; t->str && t->raw && t->dec && i < t->n; i++) {
        if (t->raw[i] != t->str[i])
            free(t->raw[i]);
        if (t->dec[i] != t->str[i] && t->dec[i] != t->raw[i])
            free(t->dec[i]);
        free(t->str[i]);
    }
    free(t->str), free(t->str_len), free(t->raw), free(t->raw_len);
    free(t->dec), free(t->dec_len), free(t->kind);
    free(t->by_str.slot), free(t->by_raw.slot);
    free(t->merges), free(t->merge_new), free(t->mkey), free(t->mrank);
    free(t->added), free(t->post_json), free(t->tmpl_pre), free(t->tmpl_post);
    free(t->wp_prefix), free(t->dec_prefix), free(t->extra.trunc_json), free(t->extra.pad_json);
    free(t->cache), free(t->ckeys), free(t->cids);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static tm_status build_strings(tm_tokenizer *t, const tm__tok_spec *sp, const char *fn)
{
    int64_t n = t->n;
    t->str = calloc((size_t)n, sizeof *t->str);
    t->str_len = calloc((size_t)n, sizeof *t->str_len);
    t->raw = calloc((size_t)n, sizeof *t->raw);
    t->raw_len = calloc((size_t)n, sizeof *t->raw_len);
    t->dec = calloc((size_t)n, sizeof *t->dec);
    t->dec_len = calloc((size_t)n, sizeof *t->dec_len);
    t->kind = malloc((size_t)n);
    if (!t->str || !t->str_len || !t->raw || !t->raw_len || !t->dec || !t->dec_len || !t->kind)
        return tm__errf(TM_ENOMEM, fn, "out of memory (%lld tokens)", (long long)n);
    bool bl = sp->pretok.byte_level;
    for (int64_t i = 0; i < n; i++) {
        uint8_t k = sp->kind[i];
        t->kind[i] = k;
        if (!(k & (TM__TOK_MODEL | TM__TOK_ADDED)))
            return tm__errf(TM_EFORMAT, fn, "token %lld is neither a model nor an added token", (long long)i);
        if (sp->strs) {
            t->str[i] = dupmem(sp->strs[i], sp->str_lens[i]);
            t->str_len[i] = sp->str_lens[i];
        } else if (bl && !(k & TM__TOK_ADDED)) {
            t->str[i] = tm__bytes_to_mapped(sp->bytes[i], sp->lens[i], &t->str_len[i]);
        } else {
            t->str[i] = dupmem(sp->bytes[i], sp->lens[i]);
            t->str_len[i] = sp->lens[i];
        }
        if (!t->str[i])
            return tm__errf(TM_ENOMEM, fn, "out of memory (token %lld)", (long long)i);
        const char *s = t->str[i];
        size_t sl = t->str_len[i];
        bool ok = true;
        /* the text a model token matches in encoding */
        if (k & TM__TOK_MODEL) {
            if (bl) {
                t->raw[i] = mapped_to_bytes(s, sl, &t->raw_len[i], &ok);
                if (!t->raw[i] && ok)
                    return tm__errf(TM_ENOMEM, fn, "out of memory (token %lld)", (long long)i);
            } else {
                t->raw[i] = t->str[i], t->raw_len[i] = sl;
            }
        }
        /* decoded bytes, as HF's decoders write them */
        if (t->decoder & TM__DEC_BYTELEVEL) {
            if (t->raw[i] && bl) {
                t->dec[i] = t->raw[i], t->dec_len[i] = t->raw_len[i];
            } else {
                t->dec[i] = mapped_to_bytes(s, sl, &t->dec_len[i], &ok);
                if (!t->dec[i] && ok)
                    return tm__errf(TM_ENOMEM, fn, "out of memory (token %lld)", (long long)i);
                if (!ok)
                    t->dec[i] = t->str[i], t->dec_len[i] = sl;
            }
        } else {
            int b = (t->decoder & TM__DEC_BYTEFALLBACK) ? fallback_byte(s, sl) : -1;
            if (b >= 0) {
                char c = (char)b;
                if (!(t->dec[i] = dupmem(&c, 1)))
                    return tm__errf(TM_ENOMEM, fn, "out of memory (token %lld)", (long long)i);
                t->dec_len[i] = 1;
            } else {
                t->dec[i] = t->str[i], t->dec_len[i] = sl;
            }
        }
    }
    return TM_OK;
}

static tm_status build_merges(tm_tokenizer *t, const tm__tok_spec *sp, const char *fn)
{
    int64_t nm = sp->n_merges;
    uint64_t cap = 16;
    while (cap < (uint64_t)nm * 2)
        cap <<= 1;
    t->n_merges = nm;
    t->merges = malloc((size_t)(nm ? nm : 1) * sizeof *t->merges);
    t->merge_new = malloc((size_t)(nm ? nm : 1) * sizeof *t->merge_new);
    t->mkey = malloc(cap * sizeof *t->mkey);
    t->mrank = malloc(cap * sizeof *t->mrank);
    char *buf = NULL;
    size_t bcap = 0;
    tm_status st = TM_OK;
    if (!t->merges || !t->merge_new || !t->mkey || !t->mrank)
        return tm__errf(TM_ENOMEM, fn, "out of memory (%lld merges)", (long long)nm);
    memset(t->mrank, 0xff, cap * sizeof *t->mrank);
    t->mmask = cap - 1;
    for (int64_t r = 0; r < nm; r++) {
        int32_t a = sp->merges[r][0], b = sp->merges[r][1];
        if (a < 0 || b < 0 || a >= t->n || b >= t->n || !(t->kind[a] & TM__TOK_MODEL) ||
            !(t->kind[b] & TM__TOK_MODEL)) {
            st = tm__errf(TM_EFORMAT, fn, "merge %lld names ids %d and %d, not both model tokens",
                          (long long)r, a, b);
            goto fail;
        }
        size_t la = t->str_len[a], lb = t->str_len[b];
        if (la + lb + 1 > bcap) {
            free(buf);
            bcap = 2 * (la + lb + 1);
            if (!(buf = malloc(bcap))) {
                st = tm__errf(TM_ENOMEM, fn, "out of memory");
                goto fail;
            }
        }
        memcpy(buf, t->str[a], la);
        memcpy(buf + la, t->str[b], lb);
        int32_t c = tm__idmap_get(&t->by_str, buf, la + lb);
        if (c < 0 || !(t->kind[c] & TM__TOK_MODEL)) {
            char nb[80];
            st = tm__errf(TM_EFORMAT, fn, "merge %lld: the merged token \"%s\" is not in the vocab",
                          (long long)r, tm__fmt_name(nb, sizeof nb, buf, la + lb));
            goto fail;
        }
        t->merges[r][0] = a, t->merges[r][1] = b, t->merge_new[r] = c;
        uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
        uint64_t i = tm__tok_hbytes(&key, 8) & t->mmask;
        while (t->mrank[i] >= 0 && t->mkey[i] != key)
            i = (i + 1) & t->mmask;
        if (t->mrank[i] < 0) { /* a repeated pair keeps its first (lowest) rank, as HF does */
            t->mkey[i] = key;
            t->mrank[i] = (int32_t)r;
        }
    }
fail:
    free(buf);
    return st;
}

tm_tokenizer *tm__tokenizer_build(const tm__tok_spec *sp, const char *fn)
{
    tm_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        tm__errf(TM_ENOMEM, fn, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&t->lock, NULL);
    int64_t dup;
    if (sp->n_tokens < 1 || sp->n_tokens > INT32_MAX) {
        tm__errf(TM_EFORMAT, fn, "vocabulary size %lld out of range [1, 2^31)", (long long)sp->n_tokens);
        goto fail;
    }
    if (sp->pretok.add_prefix_space && sp->pretok.split_digits) {
        tm__errf(TM_EUNSUPPORTED, fn, "add_prefix_space together with Digits is not supported");
        goto fail;
    }
    t->n = sp->n_tokens;
    t->pretok = sp->pretok;
    t->ignore_merges = sp->ignore_merges, t->byte_fallback = sp->byte_fallback;
    t->fuse_unk = sp->fuse_unk, t->unk_id = sp->unk_id;
    t->decoder = sp->decoder ? sp->decoder
                             : sp->pretok.byte_level ? TM__DEC_BYTELEVEL : TM__DEC_BYTEFALLBACK | TM__DEC_FUSE;
    t->model = sp->model;
    t->norm = sp->norm;
    t->wp_max_chars = sp->wp_max_chars;
    t->dec_cleanup = sp->dec_cleanup;
    t->defaults.pad_id = -1;
    if (sp->model == TM__MODEL_WORDPIECE || (t->decoder & TM__DEC_WORDPIECE)) {
        const char *wp = sp->wp_prefix ? sp->wp_prefix : "##", *dp = sp->dec_prefix ? sp->dec_prefix : "##";
        t->wp_prefix_len = strlen(wp), t->dec_prefix_len = strlen(dp);
        if (!(t->wp_prefix = dupmem(wp, t->wp_prefix_len)) || !(t->dec_prefix = dupmem(dp, t->dec_prefix_len))) {
            tm__errf(TM_ENOMEM, fn, "out of memory");
            goto fail;
        }
    }
    if (build_strings(t, sp, fn) < 0)
        goto fail;
    for (int64_t i = 0; i < t->n; i++)
        if ((t->kind[i] & TM__TOK_MODEL) && t->str_len[i] > t->wp_longest)
            t->wp_longest = t->str_len[i];
    if (tm__idmap_build(&t->by_str, t->str, t->str_len, t->n, &dup, fn) < 0)
        goto fail;
    if (dup >= 0) {
        char nb[80];
        tm__errf(TM_EFORMAT, fn, "token \"%s\" appears twice (ids %d and %lld)",
                 tm__fmt_name(nb, sizeof nb, t->str[dup], t->str_len[dup]),
                 tm__idmap_get(&t->by_str, t->str[dup], t->str_len[dup]), (long long)dup);
        goto fail;
    }
    if (tm__idmap_build(&t->by_raw, t->raw, t->raw_len, t->n, &dup, fn) < 0)
        goto fail;
    if (t->unk_id >= t->n || (t->unk_id >= 0 && !(t->kind[t->unk_id] & TM__TOK_MODEL))) {
        tm__errf(TM_EFORMAT, fn, "unk_token id %lld is not a model token", (long long)t->unk_id);
        goto fail;
    }
    for (int b = 0; b < 256; b++) {
        char key[8];
        t->unit_id[b] = -1;
        if (t->pretok.byte_level) {
            key[0] = (char)b;
            t->unit_id[b] = tm__idmap_get(&t->by_raw, key, 1);
        } else if (t->byte_fallback) {
            snprintf(key, sizeof key, "<0x%02X>", b);
            int32_t id = tm__idmap_get(&t->by_str, key, 6);
            t->unit_id[b] = id >= 0 && (t->kind[id] & TM__TOK_MODEL) ? id : -1;
        }
    }
    if (build_merges(t, sp, fn) < 0)
        goto fail;
    int na = 0;
    for (int64_t i = 0; i < t->n; i++)
        na += (t->kind[i] & TM__TOK_ADDED) != 0;
    t->added = malloc((size_t)(na ? na : 1) * sizeof *t->added);
    if (!t->added) {
        tm__errf(TM_ENOMEM, fn, "out of memory");
        goto fail;
    }
    for (int64_t i = 0; i < t->n; i++) {
        if (!(t->kind[i] & TM__TOK_ADDED))
            continue;
        if (t->str_len[i] == 0) {
            tm__errf(TM_EFORMAT, fn, "added token %lld is empty", (long long)i);
            goto fail;
        }
        t->added[t->n_added++] = (int32_t)i;
        t->added_first[(unsigned char)t->str[i][0]] = true;
    }
    return t;
fail:
    tm_tokenizer_free(t);
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

tm_tokenizer *tm_tokenizer_char_new(const char *text, size_t len)
{
    uint32_t *cps = NULL;
    char **bytes = NULL;
    size_t *lens = NULL;
    uint8_t *kind = NULL;
    tm_tokenizer *t = NULL;
    int64_t nc = 0;
    if (!text && len) {
        TM_ERR(TM_EINVAL, "text is NULL");
        return NULL;
    }
    /* distinct code points: a bitmap over the 0x110000 possible ones */
    uint8_t *seen = calloc(0x110000 / 8, 1);
    if (!seen) {
        TM_ERR(TM_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += tm__utf8_next((const unsigned char *)text + i, len - i, &cp);
        if (cp != 0xFFFFFFFFu && !(seen[cp >> 3] & (1u << (cp & 7)))) {
            seen[cp >> 3] |= (uint8_t)(1u << (cp & 7));
            nc++;
        }
    }
    int64_t n = nc + 256;
    cps = malloc((size_t)(nc ? nc : 1) * sizeof *cps);
    bytes = calloc((size_t)n, sizeof *bytes);
    lens = calloc((size_t)n, sizeof *lens);
    kind = malloc((size_t)n);
    if (!cps || !bytes || !lens || !kind) {
        TM_ERR(TM_ENOMEM, "out of memory (%lld tokens)", (long long)n);
        goto done;
    }
    int64_t k = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++)
        if (seen[cp >> 3] & (1u << (cp & 7)))
            cps[k++] = cp;
    qsort(cps, (size_t)nc, sizeof *cps, cmp_u32);
    for (int64_t i = 0; i < n; i++) {
        char *b = malloc(8);
        if (!b) {
            TM_ERR(TM_ENOMEM, "out of memory");
            goto done;
        }
        bytes[i] = b;
        kind[i] = TM__TOK_MODEL;
        if (i < nc) {
            uint32_t c = cps[i];
            size_t m = 0;
            if (c < 0x80) {
                b[m++] = (char)c;
            } else if (c < 0x800) {
                b[m++] = (char)(0xC0 | (c >> 6));
                b[m++] = (char)(0x80 | (c & 0x3F));
            } else if (c < 0x10000) {
                b[m++] = (char)(0xE0 | (c >> 12));
                b[m++] = (char)(0x80 | ((c >> 6) & 0x3F));
                b[m++] = (char)(0x80 | (c & 0x3F));
            } else {
                b[m++] = (char)(0xF0 | (c >> 18));
                b[m++] = (char)(0x80 | ((c >> 12) & 0x3F));
                b[m++] = (char)(0x80 | ((c >> 6) & 0x3F));
                b[m++] = (char)(0x80 | (c & 0x3F));
            }
            lens[i] = m;
        } else {
            snprintf(b, 8, "<0x%02X>", (unsigned)(i - nc));
            lens[i] = 6;
        }
    }
    tm__tok_spec sp = {0};
    sp.n_tokens = n;
    sp.bytes = (const char *const *)bytes;
    sp.lens = lens;
    sp.kind = kind;
    sp.byte_fallback = true;
    sp.unk_id = -1;
    t = tm__tokenizer_build(&sp, __func__);
done:
    if (bytes)
        for (int64_t i = 0; i < n; i++)
            free(bytes[i]);
    free(seen), free(cps), free(bytes), free(lens), free(kind);
    return t;
}

int64_t tm_tokenizer_vocab_size(const tm_tokenizer *t)
{
    return t ? t->n : TM_ERR(TM_EINVAL, "tokenizer is NULL");
}

int64_t tm_tokenizer_model_vocab_size(const tm_tokenizer *t)
{
    if (!t)
        return TM_ERR(TM_EINVAL, "tokenizer is NULL");
    int64_t n = 0;
    for (int64_t i = 0; i < t->n; i++)
        n += (t->kind[i] & TM__TOK_MODEL) != 0;
    return n;
}

int64_t tm_tokenizer_token_to_id(const tm_tokenizer *t, const char *token)
{
    if (!t || !token)
        return -1;
    return tm__idmap_get(&t->by_str, token, strlen(token));
}

const char *tm_tokenizer_id_to_token(const tm_tokenizer *t, int64_t id)
{
    return t && id >= 0 && id < t->n ? t->str[id] : NULL;
}

bool tm_tokenizer_in_model(const tm_tokenizer *t, int64_t id)
{
    return t && id >= 0 && id < t->n && (t->kind[id] & TM__TOK_MODEL);
}

bool tm_tokenizer_is_special(const tm_tokenizer *t, int64_t id)
{
    return t && id >= 0 && id < t->n && (t->kind[id] & TM__TOK_SPECIAL);
}

static int64_t first_of(const tm_tokenizer *t, const char *const *names, int n)
{
    for (int i = 0; t && i < n; i++) {
        int64_t id = tm_tokenizer_token_to_id(t, names[i]);
        if (id >= 0)
            return id;
    }
    return -1;
}

int64_t tm_tokenizer_eos_id(const tm_tokenizer *t)
{
    static const char *const names[] = {"<|endoftext|>", "</s>", "<|im_end|>", "<|end_of_text|>"};
    return first_of(t, names, 4);
}

int64_t tm_tokenizer_bos_id(const tm_tokenizer *t)
{
    static const char *const names[] = {"<|begin_of_text|>", "<s>", "<|im_start|>", "<|startoftext|>"};
    return first_of(t, names, 4);
}

char *tm_tokenizer_decode(const tm_tokenizer *t, const int32_t *ids, int64_t n, bool skip_special, size_t *len)
{
    if (!t || (!ids && n) || n < 0) {
        TM_ERR(TM_EINVAL, "bad arguments (tokenizer %p, ids %p, n %lld)", (const void *)t,
               (const void *)ids, (long long)n);
        return NULL;
    }
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n) {
            TM_ERR(TM_ERANGE, "id %d at position %lld is out of range [0, %lld)", ids[i], (long long)i,
                   (long long)t->n);
            return NULL;
        }
        total += t->dec_len[ids[i]];
    }
    if (t->decoder & TM__DEC_WORDPIECE)
        return tm__wordpiece_decode(t, ids, n, skip_special, len);
    char *out = malloc(total + 1), *p = out;
    if (!out) {
        TM_ERR(TM_ENOMEM, "out of memory (%zu bytes)", total + 1);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (skip_special && (t->kind[id] & TM__TOK_SPECIAL))
            continue;
        memcpy(p, t->dec[id], t->dec_len[id]);
        p += t->dec_len[id];
    }
    *p = '\0';
    if (len)
        *len = (size_t)(p - out);
    return out;
}

int64_t tm_tokenizer_pad_id(const tm_tokenizer *t)
{
    static const char *const names[] = {"[PAD]", "<pad>", "<|padding|>"};
    if (!t)
        return -1;
    if (t->defaults.pad && t->defaults.pad_id >= 0)
        return t->defaults.pad_id;
    return first_of(t, names, 3);
}

tm_status tm_tokenizer_json_defaults_of(const tm_tokenizer *t, tm_tokenizer_json_defaults *out)
{
    if (!t || !out)
        return TM_ERR(TM_EINVAL, "tokenizer or out is NULL");
    *out = t->defaults;
    return TM_OK;
}

void tm_token_buf_free(tm_token_buf *b)
{
    if (!b)
        return;
    free(b->ids);
    b->ids = NULL;
    b->n = b->cap = 0;
}
