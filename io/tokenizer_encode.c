/*
 * tokenizer_encode.c — encoding: added tokens, pre-tokenizer pieces, BPE.
 *
 * BPE follows HF's Word::merge_all: the pair of lowest rank is merged
 * first, the leftmost among equals; a popped pair that no longer exists is
 * skipped.  Short pieces search the pairs directly; long ones use a binary
 * heap over a linked list of symbols, so a piece of n bytes costs
 * O(n log n), never O(n^2).  Pieces up to CACHE_MAX bytes are cached.
 */
#include "tokenizer_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

#define CACHE_MAX 48     /* longest cached piece, bytes */
#define CACHE_SLOTS (1u << 17)
#define SHORT_PIECE 32   /* symbols; below this the direct search is faster than a heap */


static inline int32_t merge_rank(const tm_tokenizer *t, int32_t a, int32_t b)
{
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (uint64_t i = tm__tok_hbytes(&key, 8) & t->mmask;; i = (i + 1) & t->mmask) {
        int32_t r = t->mrank[i];
        if (r < 0 || t->mkey[i] == key)
            return r;
    }
}

tm_status tm__tok_push(tm_token_buf *out, int32_t id)
{
    if (out->n == out->cap) {
        int64_t cap = out->cap ? out->cap * 2 : 256;
        int32_t *p = realloc(out->ids, (size_t)cap * sizeof *p);
        if (!p)
            return tm__errf(TM_ENOMEM, "tm_tokenizer_encode", "out of memory (%lld ids)", (long long)cap);
        out->ids = p, out->cap = cap;
    }
    out->ids[out->n++] = id;
    return TM_OK;
}

static tm_status push(tm_token_buf *out, int32_t id) { return tm__tok_push(out, id); }

typedef struct sym { int32_t id, prev, next; } sym;
typedef struct hent { int32_t rank, pos; } hent;

static inline bool hless(hent a, hent b)
{
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void hpush(hent *h, size_t *n, hent e)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hless(e, h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static hent hpop(hent *h, size_t *n)
{
    hent top = h[0], e = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && hless(h[c + 1], h[c]))
            c++;
        if (!hless(h[c], e))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = e;
    return top;
}

/* Merges the symbols s[0..n) (a list in index order) in place; the result
 * is the chain from s[0]. */
static tm_status merge_heap(const tm_tokenizer *t, sym *s, int32_t n)
{
    hent *h = malloc((size_t)n * 2 * sizeof *h);
    size_t hn = 0;
    if (!h)
        return TM_ERR(TM_ENOMEM, "out of memory (%d symbols)", n);
    for (int32_t i = 0; i + 1 < n; i++) {
        int32_t r = merge_rank(t, s[i].id, s[i + 1].id);
        if (r >= 0)
            hpush(h, &hn, (hent){r, i});
    }
    while (hn) {
        hent e = hpop(h, &hn);
        sym *a = &s[e.pos];
        if (a->id < 0 || a->next < 0)
            continue;
        sym *b = &s[a->next];
        if (merge_rank(t, a->id, b->id) != e.rank)
            continue;
        a->id = t->merge_new[e.rank];
        b->id = -1;
        a->next = b->next;
        if (a->next >= 0)
            s[a->next].prev = e.pos;
        if (a->prev >= 0) {
            int32_t r = merge_rank(t, s[a->prev].id, a->id);
            if (r >= 0)
                hpush(h, &hn, (hent){r, a->prev});
        }
        if (a->next >= 0) {
            int32_t r = merge_rank(t, a->id, s[a->next].id);
            if (r >= 0)
                hpush(h, &hn, (hent){r, e.pos});
        }
    }
    free(h);
    return TM_OK;
}

/* The same result for short pieces: ids[0..n) merged in place. */
static int32_t merge_short(const tm_tokenizer *t, int32_t *ids, int32_t n)
{
    int32_t rk[SHORT_PIECE];
    for (int32_t i = 0; i + 1 < n; i++)
        rk[i] = merge_rank(t, ids[i], ids[i + 1]);
    while (n > 1) {
        int32_t best = -1, br = INT32_MAX;
        for (int32_t i = 0; i + 1 < n; i++)
            if (rk[i] >= 0 && rk[i] < br)
                br = rk[i], best = i;
        if (best < 0)
            break;
        ids[best] = t->merge_new[br];
        memmove(ids + best + 1, ids + best + 2, (size_t)(n - best - 2) * sizeof *ids);
        memmove(rk + best, rk + best + 1, (size_t)(n - best - 2) * sizeof *rk);
        n--;
        if (best > 0)
            rk[best - 1] = merge_rank(t, ids[best - 1], ids[best]);
        if (best + 1 < n)
            rk[best] = merge_rank(t, ids[best], ids[best + 1]);
    }
    return n;
}

/* The initial symbols of a piece, appended to out. */
static tm_status units(const tm_tokenizer *t, const char *p, size_t n, tm_token_buf *out)
{
    tm_status st;
    bool last_unk = false;
    for (size_t i = 0; i < n;) {
        size_t m = 1;
        int32_t id;
        if (t->pretok.byte_level) {
            id = t->unit_id[(unsigned char)p[i]];
        } else {
            uint32_t cp;
            m = tm__utf8_next((const unsigned char *)p + i, n - i, &cp);
            id = tm__idmap_get(&t->by_raw, p + i, m);
            if (id < 0 && t->byte_fallback) {
                bool all = true;
                for (size_t k = 0; k < m; k++)
                    all = all && t->unit_id[(unsigned char)p[i + k]] >= 0;
                if (all) {
                    for (size_t k = 0; k < m; k++)
                        if ((st = push(out, t->unit_id[(unsigned char)p[i + k]])) < 0)
                            return st;
                    i += m;
                    last_unk = false;
                    continue;
                }
            }
        }
        if (id < 0) {
            if (t->unk_id < 0)
                return tm__errf(TM_EINVAL, "tm_tokenizer_encode",
                                "no token for byte 0x%02X at offset %zu and the tokenizer has no unk_token",
                                (unsigned char)p[i], i);
            id = (int32_t)t->unk_id;
            if (t->fuse_unk && last_unk) {
                i += m;
                continue;
            }
            last_unk = true;
        } else {
            last_unk = false;
        }
        if ((st = push(out, id)) < 0)
            return st;
        i += m;
    }
    return TM_OK;
}

/* Encodes one pre-token, uncached. */
static tm_status encode_piece(const tm_tokenizer *t, const char *p, size_t n, tm_token_buf *out)
{
    if (t->model == TM__MODEL_WORDPIECE)
        return tm__wordpiece_piece(t, p, n, out);
    if (t->ignore_merges) {
        int32_t id = tm__idmap_get(&t->by_raw, p, n);
        if (id >= 0)
            return push(out, id);
    }
    int64_t base = out->n;
    tm_status st = units(t, p, n, out);
    if (st < 0 || t->n_merges == 0)
        return st;
    int64_t k = out->n - base;
    if (k <= SHORT_PIECE) {
        out->n = base + merge_short(t, out->ids + base, (int32_t)k);
        return TM_OK;
    }
    if (k > INT32_MAX / 2)
        return TM_ERR(TM_EOVERFLOW, "piece of %lld symbols is too long", (long long)k);
    sym *s = malloc((size_t)k * sizeof *s);
    if (!s)
        return TM_ERR(TM_ENOMEM, "out of memory (%lld symbols)", (long long)k);
    for (int64_t i = 0; i < k; i++)
        s[i] = (sym){out->ids[base + i], (int32_t)i - 1, i + 1 < k ? (int32_t)i + 1 : -1};
    st = merge_heap(t, s, (int32_t)k);
    if (st == TM_OK) {
        out->n = base;
        for (int32_t i = 0; i >= 0; i = s[i].next)
            out->ids[out->n++] = s[i].id;
    }
    free(s);
    return st;
}

static tm_status cache_init(tm_tokenizer *t)
{
    if (t->cache)
        return TM_OK;
    t->cache = calloc(CACHE_SLOTS, sizeof *t->cache);
    t->ckeys_cap = (size_t)CACHE_SLOTS * 8;
    t->ckeys = malloc(t->ckeys_cap);
    t->cids_cap = (size_t)CACHE_SLOTS * 4;
    t->cids = malloc(t->cids_cap * sizeof *t->cids);
    if (!t->cache || !t->ckeys || !t->cids) {
        free(t->cache), free(t->ckeys), free(t->cids);
        t->cache = NULL, t->ckeys = NULL, t->cids = NULL;
        return TM_ENOMEM;
    }
    t->cmask = CACHE_SLOTS - 1;
    t->cused = t->ckeys_n = t->cids_n = 0;
    return TM_OK;
}

/* Looks piece p up; on a hit appends its ids.  Called with the lock held. */
static bool cache_get(tm_tokenizer *t, uint64_t h, const char *p, size_t n, tm_token_buf *out, tm_status *st)
{
    for (uint64_t i = h & t->cmask;; i = (i + 1) & t->cmask) {
        tm__cache_ent *e = &t->cache[i];
        if (e->nids == 0)
            return false;
        if (e->h == h && e->klen == n && memcmp(t->ckeys + e->koff, p, n) == 0) {
            *st = TM_OK;
            for (uint16_t k = 0; k < e->nids && *st == TM_OK; k++)
                *st = push(out, t->cids[e->ioff + k]);
            return true;
        }
    }
}

static void cache_put(tm_tokenizer *t, uint64_t h, const char *p, size_t n, const int32_t *ids, int64_t nids)
{
    if (t->cused * 4 >= (size_t)CACHE_SLOTS * 3 || t->ckeys_n + n > t->ckeys_cap ||
        t->cids_n + (size_t)nids > t->cids_cap) {
        /* full: start over rather than evict one by one */
        memset(t->cache, 0, CACHE_SLOTS * sizeof *t->cache);
        t->cused = t->ckeys_n = t->cids_n = 0;
    }
    uint64_t i = h & t->cmask;
    while (t->cache[i].nids)
        i = (i + 1) & t->cmask;
    t->cache[i] = (tm__cache_ent){h, (uint32_t)t->ckeys_n, (uint32_t)t->cids_n, (uint16_t)n, (uint16_t)nids};
    memcpy(t->ckeys + t->ckeys_n, p, n);
    memcpy(t->cids + t->cids_n, ids, (size_t)nids * sizeof *ids);
    t->ckeys_n += n, t->cids_n += (size_t)nids, t->cused++;
}

static tm_status encode_cached(const tm_tokenizer *tc, const char *p, size_t n, tm_token_buf *out)
{
    tm_tokenizer *t = (tm_tokenizer *)tc; /* the cache is the only state encoding changes */
    if (n > CACHE_MAX || n == 0 || pthread_mutex_trylock(&t->lock) != 0)
        return encode_piece(t, p, n, out);
    uint64_t h = tm__tok_hbytes(p, n);
    tm_status st = TM_OK;
    if (cache_init(t) == TM_OK && cache_get(t, h, p, n, out, &st)) {
        pthread_mutex_unlock(&t->lock);
        return st;
    }
    pthread_mutex_unlock(&t->lock);
    int64_t base = out->n;
    st = encode_piece(t, p, n, out);
    if (st == TM_OK && pthread_mutex_trylock(&t->lock) == 0) {
        if (t->cache)
            cache_put(t, h, p, n, out->ids + base, out->n - base);
        pthread_mutex_unlock(&t->lock);
    }
    return st;
}

/* A segment without added tokens: pre-tokenize and encode each piece. */
static tm_status encode_segment(const tm_tokenizer *t, const char *s, size_t n, tm_token_buf *out)
{
    char *tmp = NULL;
    tm_status st = TM_OK;
    if (n == 0)
        return TM_OK;
    if (t->pretok.bert) {
        size_t pos = 0, a, b;
        while (st == TM_OK && tm__bert_pretok_next(s, n, &pos, &a, &b))
            st = encode_cached(t, s + a, b - a, out);
        return st;
    }
    if (t->pretok.byte_level && t->pretok.add_prefix_space && s[0] != ' ') {
        if (!(tmp = malloc(n + 1)))
            return TM_ERR(TM_ENOMEM, "out of memory (%zu bytes)", n + 1);
        tmp[0] = ' ';
        memcpy(tmp + 1, s, n);
        s = tmp, n++;
    }
    for (size_t pos = 0; pos < n && st == TM_OK;) {
        size_t end = tm__pretok_next(&t->pretok, s, n, pos);
        st = encode_cached(t, s + pos, end - pos, out);
        pos = end;
    }
    free(tmp);
    return st;
}

/* The leftmost-longest added token of pass `normalized` in s[from..n):
 * its start (n when none) and id. */
static size_t find_added(const tm_tokenizer *t, const char *s, size_t n, size_t from, bool normalized,
                         int32_t *id, size_t *mlen)
{
    for (size_t i = from; i < n; i++) {
        if (!t->added_first[(unsigned char)s[i]])
            continue;
        size_t best = 0;
        for (int k = 0; k < t->n_added; k++) {
            int32_t a = t->added[k];
            size_t l = t->str_len[a];
            if (((t->kind[a] & TM__TOK_NORMALIZED) != 0) != normalized || l > n - i || l <= best ||
                memcmp(s + i, t->str[a], l) != 0)
                continue;
            best = l, *id = a;
        }
        if (best) {
            *mlen = best;
            return i;
        }
    }
    return n;
}

static tm_status encode_added(const tm_tokenizer *t, const char *s, size_t n, bool normalized, tm_token_buf *out);

/* A segment between non-normalized added tokens: normalized (when the
 * tokenizer has a normalizer), then split on the normalized ones. */
static tm_status encode_normalized(const tm_tokenizer *t, const char *s, size_t n, tm_token_buf *out)
{
    if (!t->norm.present || n == 0)
        return encode_added(t, s, n, true, out);
    char *ns;
    size_t nn;
    tm_status st = tm__bert_normalize(&t->norm, s, n, &ns, &nn);
    if (st < 0)
        return st;
    st = encode_added(t, ns, nn, true, out);
    free(ns);
    return st;
}

/* HF splits on the non-normalized added tokens first, then on the
 * normalized ones in what is left. */
static tm_status encode_added(const tm_tokenizer *t, const char *s, size_t n, bool normalized, tm_token_buf *out)
{
    tm_status st = TM_OK;
    size_t pos = 0;
    while (pos < n && st == TM_OK) {
        int32_t id = -1;
        size_t mlen = 0, m = t->n_added ? find_added(t, s, n, pos, normalized, &id, &mlen) : n;
        st = normalized ? encode_segment(t, s + pos, m - pos, out) : encode_normalized(t, s + pos, m - pos, out);
        if (st == TM_OK && m < n)
            st = push(out, id);
        pos = m + mlen;
    }
    return st;
}

tm_status tm_tokenizer_encode_ex(const tm_tokenizer *t, const char *text, size_t len, bool add_special_tokens,
                                 tm_token_buf *out)
{
    if (!t || (!text && len) || !out)
        return TM_ERR(TM_EINVAL, "bad arguments (tokenizer %p, text %p, out %p)", (const void *)t,
                      (const void *)text, (void *)out);
    int64_t n0 = out->n;
    tm_status st = TM_OK;
    for (int i = 0; add_special_tokens && i < t->n_pre && st == TM_OK; i++)
        st = push(out, t->tmpl_pre[i]);
    if (st == TM_OK)
        st = encode_added(t, text, len, false, out);
    for (int i = 0; add_special_tokens && i < t->n_post && st == TM_OK; i++)
        st = push(out, t->tmpl_post[i]);
    if (st < 0)
        out->n = n0;
    return st;
}

tm_status tm_tokenizer_encode(const tm_tokenizer *t, const char *text, size_t len, tm_token_buf *out)
{
    return tm_tokenizer_encode_ex(t, text, len, false, out);
}

tm_status tm_tokenizer_encode_opts(const tm_tokenizer *t, const char *text, size_t len, const tm_encode_opts *o,
                                   tm_token_buf *out)
{
    if (!t || (!text && len) || !out || !o)
        return TM_ERR(TM_EINVAL, "bad arguments (tokenizer %p, text %p, opts %p, out %p)", (const void *)t,
                      (const void *)text, (const void *)o, (void *)out);
    int64_t nsp = o->add_special_tokens ? t->n_pre + t->n_post : 0;
    if (o->max_length < 0 || (o->max_length > 0 && o->max_length < nsp))
        return TM_ERR(TM_EINVAL, "max_length %lld is below the %lld special tokens the template adds",
                      (long long)o->max_length, (long long)nsp);
    int64_t n0 = out->n;
    tm_status st = TM_OK;
    for (int i = 0; o->add_special_tokens && i < t->n_pre && st == TM_OK; i++)
        st = push(out, t->tmpl_pre[i]);
    int64_t body = out->n;
    if (st == TM_OK)
        st = encode_added(t, text, len, false, out);
    /* truncation counts the template's ids, as HF's post_process does */
    if (st == TM_OK && o->max_length > 0 && out->n - body > o->max_length - nsp)
        out->n = body + (o->max_length - nsp);
    for (int i = 0; o->add_special_tokens && i < t->n_post && st == TM_OK; i++)
        st = push(out, t->tmpl_post[i]);
    if (st < 0)
        out->n = n0;
    return st;
}

int64_t tm_tokenizer_num_special_to_add(const tm_tokenizer *t)
{
    return t ? t->n_pre + t->n_post : 0;
}
