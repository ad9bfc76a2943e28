/*
 * bpe_train_core.c — the word table, the vocabulary table and the merge
 * loop of the BPE trainer (see bpe_train_impl.h).
 */
#include "bpe_train_impl.h"

#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

/* Grows a tm__alloc'd array to hold at least `need` items of `size` bytes
 * (doubling).  *cap is in items. */
static tm_status grow(void **p, uint64_t *cap, uint64_t need, size_t size,
                      const char *fn)
{
    if (need <= *cap) return TM_OK;
    uint64_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > (UINT64_MAX / 2) / size)
            return tm__errf(TM_EOVERFLOW, fn, "table of %llu items of %zu "
                            "bytes is too large", (unsigned long long)need,
                            size);
        nc *= 2;
    }
    void *q = tm__alloc((size_t)(nc * size), fn);
    if (!q) return TM_ENOMEM;
    if (*p) memcpy(q, *p, (size_t)(*cap * size));
    tm__dealloc(*p);
    *p = q;
    *cap = nc;
    return TM_OK;
}

static uint64_t hash_bytes(const unsigned char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* ------------------------------------------------------------ word table */

static tm_status words_rehash(tm__bpe_words *ws, uint64_t nslots)
{
    uint32_t *s = tm__calloc((size_t)nslots * sizeof *s, "tm_bpe_trainer");
    if (!s) return TM_ENOMEM;
    for (uint32_t i = 0; i < ws->n; i++) {
        uint64_t h = ws->w[i].hash & (nslots - 1);
        while (s[h]) h = (h + 1) & (nslots - 1);
        s[h] = i + 1;
    }
    tm__dealloc(ws->slots);
    ws->slots = s;
    ws->nslots = nslots;
    return TM_OK;
}

tm_status tm__bpe_words_add(tm__bpe_words *ws, const unsigned char *p,
                            size_t len, uint64_t count)
{
    const char *fn = "tm_bpe_trainer_feed";
    if (len == 0) return TM_OK;
    if (len >= UINT32_MAX)
        return tm__errf(TM_EINVAL, fn, "a pre-token piece of %zu bytes is "
                        "too long", len);
    if ((uint64_t)ws->n + 1 >= ws->nslots / 2) {
        if (ws->n >= UINT32_MAX - 2)
            return tm__errf(TM_EOVERFLOW, fn, "more than %u distinct words",
                            ws->n);
        tm_status st = words_rehash(ws, ws->nslots ? ws->nslots * 2 : 1024);
        if (st) return st;
    }
    uint32_t full = (uint32_t)hash_bytes(p, len);
    uint64_t h = full & (ws->nslots - 1);
    for (; ws->slots[h]; h = (h + 1) & (ws->nslots - 1)) {
        tm__bpe_word *w = &ws->w[ws->slots[h] - 1];
        if (w->hash == full && w->len == len &&
            !memcmp(ws->bytes + w->off, p, len)) {
            w->count += count;
            return TM_OK;
        }
    }
    uint64_t cap = ws->cap;
    tm_status st = grow((void **)&ws->w, &cap, (uint64_t)ws->n + 1,
                        sizeof *ws->w, fn);
    if (st) return st;
    ws->cap = (uint32_t)(cap > UINT32_MAX ? UINT32_MAX : cap);
    st = grow((void **)&ws->bytes, &ws->capbytes, ws->nbytes + len, 1, fn);
    if (st) return st;
    memcpy(ws->bytes + ws->nbytes, p, len);
    ws->w[ws->n] = (tm__bpe_word){.off = ws->nbytes, .len = (uint32_t)len,
                                  .hash = full, .count = count};
    ws->nbytes += len;
    ws->slots[h] = ++ws->n;
    return TM_OK;
}

void tm__bpe_words_free(tm__bpe_words *ws)
{
    if (!ws) return;
    tm__dealloc(ws->bytes);
    tm__dealloc(ws->w);
    tm__dealloc(ws->slots);
    memset(ws, 0, sizeof *ws);
}

/* ------------------------------------------------------------ vocabulary */

static tm_status vocab_rehash(tm__bpe_vocab *v, uint64_t nslots)
{
    int32_t *s = tm__calloc((size_t)nslots * sizeof *s, "tm_bpe_trainer");
    if (!s) return TM_ENOMEM;
    for (int32_t i = 0; i < v->ntok; i++) {
        if (v->hidden[i]) continue;
        uint64_t h = hash_bytes(v->bytes + v->off[i], v->len[i]) &
                     (nslots - 1);
        while (s[h]) h = (h + 1) & (nslots - 1);
        s[h] = i + 1;
    }
    tm__dealloc(v->slots);
    v->slots = s;
    v->nslots = nslots;
    return TM_OK;
}

int32_t tm__bpe_vocab_find(const tm__bpe_vocab *v, const unsigned char *p,
                           size_t len)
{
    if (!v->nslots) return -1;
    uint64_t h = hash_bytes(p, len) & (v->nslots - 1);
    for (; v->slots[h]; h = (h + 1) & (v->nslots - 1)) {
        int32_t id = v->slots[h] - 1;
        if (v->len[id] == len && !memcmp(v->bytes + v->off[id], p, len))
            return id;
    }
    return -1;
}

int64_t tm__bpe_vocab_add(tm__bpe_vocab *v, const unsigned char *p,
                          size_t len, bool findable)
{
    const char *fn = "tm_bpe_trainer";
    if (len >= UINT32_MAX || v->ntok >= INT32_MAX - 1)
        return tm__errf(TM_EOVERFLOW, fn, "token of %zu bytes or vocabulary"
                        " of %d tokens is too large", len, (int)v->ntok);
    if (findable && tm__bpe_vocab_find(v, p, len) >= 0)
        return tm__errf(TM_EINVAL, fn, "token '%.*s' is already in the "
                        "vocabulary", (int)(len > 64 ? 64 : len),
                        (const char *)p);
    if ((uint64_t)v->ntok + 1 >= v->nslots / 2) {
        tm_status st = vocab_rehash(v, v->nslots ? v->nslots * 2 : 1024);
        if (st) return st;
    }
    uint64_t cap = (uint64_t)v->captok, cap2 = cap, cap3 = cap;
    tm_status st = grow((void **)&v->off, &cap, (uint64_t)v->ntok + 1,
                        sizeof *v->off, fn);
    if (!st) st = grow((void **)&v->len, &cap2, (uint64_t)v->ntok + 1,
                       sizeof *v->len, fn);
    if (!st) st = grow((void **)&v->hidden, &cap3, (uint64_t)v->ntok + 1,
                       sizeof *v->hidden, fn);
    if (st) return st;
    v->captok = (int32_t)(cap < INT32_MAX ? cap : INT32_MAX);
    st = grow((void **)&v->bytes, &v->capbytes, v->nbytes + len + 1, 1, fn);
    if (st) return st;
    if (len) memcpy(v->bytes + v->nbytes, p, len);
    v->off[v->ntok] = v->nbytes;
    v->len[v->ntok] = (uint32_t)len;
    v->hidden[v->ntok] = !findable;
    v->nbytes += len;
    int32_t id = v->ntok++;
    if (findable) {
        uint64_t h = hash_bytes(p, len) & (v->nslots - 1);
        while (v->slots[h]) h = (h + 1) & (v->nslots - 1);
        v->slots[h] = id + 1;
    }
    return id;
}

void tm__bpe_vocab_free(tm__bpe_vocab *v)
{
    if (!v) return;
    tm__dealloc(v->bytes);
    tm__dealloc(v->off);
    tm__dealloc(v->len);
    tm__dealloc(v->hidden);
    tm__dealloc(v->slots);
    memset(v, 0, sizeof *v);
}

void tm__bpe_byte_order(unsigned char order[256])
{
    int k = 0;
    /* GPT-2's bytes_to_unicode keeps these bytes as their own code point
     * and moves every other byte to U+0100 onwards, in byte order. */
    for (int b = 0; b < 256; b++)
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
            order[k++] = (unsigned char)b;
    for (int b = 0; b < 256; b++)
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174))
            order[k++] = (unsigned char)b;
}

/* ------------------------------------------------------------ pair counts */

typedef struct pair_map {
    uint64_t *keys;   /* (a << 32 | b) + 1; 0 empty */
    int64_t *counts;
    uint64_t n, nslots;
} pair_map;

static uint64_t pair_key(int32_t a, int32_t b)
{
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

static tm_status pairs_rehash(pair_map *m, uint64_t nslots)
{
    uint64_t *k = tm__calloc((size_t)nslots * sizeof *k, "tm_bpe_trainer");
    int64_t *c = tm__alloc((size_t)nslots * sizeof *c, "tm_bpe_trainer");
    if (!k || !c) {
        tm__dealloc(k);
        tm__dealloc(c);
        return TM_ENOMEM;
    }
    for (uint64_t i = 0; i < m->nslots; i++) {
        if (!m->keys[i]) continue;
        uint64_t h = hash_u64(m->keys[i]) & (nslots - 1);
        while (k[h]) h = (h + 1) & (nslots - 1);
        k[h] = m->keys[i];
        c[h] = m->counts[i];
    }
    tm__dealloc(m->keys);
    tm__dealloc(m->counts);
    m->keys = k;
    m->counts = c;
    m->nslots = nslots;
    return TM_OK;
}

/* The count slot of a pair, created at 0 when absent; NULL on no memory. */
static int64_t *pair_slot(pair_map *m, uint64_t key)
{
    uint64_t h = 0;
    if (m->nslots) {
        h = hash_u64(key + 1) & (m->nslots - 1);
        for (; m->keys[h]; h = (h + 1) & (m->nslots - 1))
            if (m->keys[h] == key + 1) return &m->counts[h];
    }
    if (m->n + 1 >= m->nslots / 2) {
        if (pairs_rehash(m, m->nslots ? m->nslots * 2 : 4096)) return NULL;
        h = hash_u64(key + 1) & (m->nslots - 1);
        while (m->keys[h]) h = (h + 1) & (m->nslots - 1);
    }
    m->keys[h] = key + 1;
    m->counts[h] = 0;
    m->n++;
    return &m->counts[h];
}

/* -------------------------------------------------------------- the heap */

typedef struct entry {
    int64_t count;
    uint64_t pair;     /* pair_key: comparing keys compares (a, b) */
    uint64_t pos_off;  /* its words: pos[pos_off .. pos_off + pos_len) */
    uint64_t pos_len;
} entry;

/* Hugging Face's order: the higher count, then the smaller pair. */
static bool before(const entry *x, const entry *y)
{
    return x->count != y->count ? x->count > y->count : x->pair < y->pair;
}

typedef struct heap {
    entry *e;
    uint64_t n, cap;
} heap;

static tm_status heap_push(heap *h, entry x)
{
    tm_status st = grow((void **)&h->e, &h->cap, h->n + 1, sizeof x,
                        "tm_bpe_trainer");
    if (st) return st;
    uint64_t i = h->n++;
    while (i > 0) {
        uint64_t p = (i - 1) / 2;
        if (!before(&x, &h->e[p])) break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = x;
    return TM_OK;
}

static entry heap_pop(heap *h)
{
    entry top = h->e[0], x = h->e[--h->n];
    uint64_t i = 0;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->e[c + 1], &h->e[c])) c++;
        if (!before(&h->e[c], &x)) break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n) h->e[i] = x;
    return top;
}

/* ------------------------------------------------------------ merge loop */

/* A pair formed in a word during a merge. */
typedef struct formed {
    uint64_t pair;
    uint32_t word;
} formed;

static int formed_cmp(const void *x, const void *y)
{
    const formed *a = x, *b = y;
    if (a->pair != b->pair) return a->pair < b->pair ? -1 : 1;
    return (a->word > b->word) - (a->word < b->word);
}

typedef struct state {
    pair_map pairs;
    heap h;
    uint32_t *pos;        /* word-index lists of the heap entries */
    uint64_t npos, cappos;
    formed *fm;           /* pairs formed by the current merge */
    uint64_t nfm, capfm;
    int32_t *sym;         /* every word's current symbols, back to back */
    uint64_t *woff;       /* word i: sym[woff[i] .. woff[i] + wlen[i]) */
    uint32_t *wlen;
} state;

static tm_status change(state *s, int32_t a, int32_t b, int64_t delta,
                        uint32_t word, uint64_t count)
{
    uint64_t key = pair_key(a, b);
    int64_t *c = pair_slot(&s->pairs, key);
    if (!c) return TM_ENOMEM;
    *c += delta * (int64_t)count;
    if (delta > 0) {
        tm_status st = grow((void **)&s->fm, &s->capfm, s->nfm + 1,
                            sizeof *s->fm, "tm_bpe_trainer");
        if (st) return st;
        s->fm[s->nfm++] = (formed){.pair = key, .word = word};
    }
    return TM_OK;
}

/* Pushes one heap entry per distinct pair of s->fm (sorted), with its
 * distinct words, when the pair's count is positive; empties s->fm. */
static tm_status push_formed(state *s)
{
    if (s->nfm > 1) qsort(s->fm, s->nfm, sizeof *s->fm, formed_cmp);
    for (uint64_t i = 0; i < s->nfm;) {
        uint64_t key = s->fm[i].pair, start = s->npos;
        for (; i < s->nfm && s->fm[i].pair == key; i++) {
            if (s->npos > start && s->pos[s->npos - 1] == s->fm[i].word)
                continue;
            tm_status st = grow((void **)&s->pos, &s->cappos, s->npos + 1,
                                sizeof *s->pos, "tm_bpe_trainer");
            if (st) return st;
            s->pos[s->npos++] = s->fm[i].word;
        }
        int64_t *c = pair_slot(&s->pairs, key);
        if (!c) return TM_ENOMEM;
        if (*c > 0) {
            tm_status st = heap_push(&s->h, (entry){.count = *c, .pair = key,
                                     .pos_off = start,
                                     .pos_len = s->npos - start});
            if (st) return st;
        } else {
            s->npos = start;
        }
    }
    s->nfm = 0;
    return TM_OK;
}

/* Replaces every (a, b) in word w by id, left to right, recording the pairs
 * destroyed and formed as Hugging Face's Word::merge does. */
static tm_status merge_word(state *s, uint32_t w, uint64_t count, int32_t a,
                            int32_t b, int32_t id)
{
    int32_t *sym = s->sym + s->woff[w];
    uint32_t n = s->wlen[w], out = 0, i = 0;
    tm_status st = TM_OK;
    while (i < n) {
        if (sym[i] == a && i + 1 < n && sym[i + 1] == b) {
            if (out > 0) {
                if ((st = change(s, sym[out - 1], a, -1, w, count)) ||
                    (st = change(s, sym[out - 1], id, 1, w, count)))
                    return st;
            }
            sym[out++] = id;
            i += 2;
            if (i < n) {
                if ((st = change(s, b, sym[i], -1, w, count)) ||
                    (st = change(s, id, sym[i], 1, w, count)))
                    return st;
            }
        } else {
            sym[out++] = sym[i++];
        }
    }
    s->wlen[w] = out;
    return TM_OK;
}

/* The initial pairs, every adjacent pair of bytes in every word weighted by
 * the word's count, with the words each occurs in: a counting sort over
 * the 65536 byte pairs (words are visited in order, so each list comes
 * out sorted and without repeats), then one heap entry per pair. */
static tm_status init_pairs(state *s, const tm__bpe_words *ws,
                            const int32_t byte_id[256])
{
    const char *fn = "tm_bpe_trainer_finish";
    enum { NB = 65536 };
    int64_t *cnt = tm__calloc(NB * sizeof *cnt, fn);
    uint64_t *nw = tm__calloc(NB * sizeof *nw, fn);
    uint64_t *off = tm__alloc(NB * sizeof *off, fn);
    uint32_t *last = tm__calloc(NB * sizeof *last, fn);
    tm_status st = TM_OK;
    if (!cnt || !nw || !off || !last) {
        st = TM_ENOMEM;
        goto fail;
    }
    for (uint32_t w = 0; w < ws->n; w++) {
        const unsigned char *p = ws->bytes + ws->w[w].off;
        for (uint32_t i = 1; i < ws->w[w].len; i++) {
            unsigned bk = (unsigned)p[i - 1] << 8 | p[i];
            cnt[bk] += (int64_t)ws->w[w].count;
            if (last[bk] != w + 1) {
                last[bk] = w + 1;
                nw[bk]++;
            }
        }
    }
    uint64_t total = 0;
    for (unsigned bk = 0; bk < NB; bk++) {
        off[bk] = total;
        total += nw[bk];
    }
    if ((st = grow((void **)&s->pos, &s->cappos, total ? total : 1,
                   sizeof *s->pos, fn)))
        goto fail;
    s->npos = total;
    memset(last, 0, NB * sizeof *last);
    memset(nw, 0, NB * sizeof *nw);
    for (uint32_t w = 0; w < ws->n; w++) {
        const unsigned char *p = ws->bytes + ws->w[w].off;
        for (uint32_t i = 1; i < ws->w[w].len; i++) {
            unsigned bk = (unsigned)p[i - 1] << 8 | p[i];
            if (last[bk] != w + 1) {
                last[bk] = w + 1;
                s->pos[off[bk] + nw[bk]++] = w;
            }
        }
    }
    for (unsigned bk = 0; bk < NB; bk++) {
        if (!nw[bk]) continue;
        uint64_t key = pair_key(byte_id[bk >> 8], byte_id[bk & 255]);
        int64_t *c = pair_slot(&s->pairs, key);
        if (!c) {
            st = TM_ENOMEM;
            goto fail;
        }
        *c = cnt[bk];
        if ((st = heap_push(&s->h, (entry){.count = cnt[bk], .pair = key,
                                           .pos_off = off[bk],
                                           .pos_len = nw[bk]})))
            goto fail;
    }
fail:
    tm__dealloc(cnt);
    tm__dealloc(nw);
    tm__dealloc(off);
    tm__dealloc(last);
    return st;
}

static void state_free(state *s)
{
    tm__dealloc(s->pairs.keys);
    tm__dealloc(s->pairs.counts);
    tm__dealloc(s->h.e);
    tm__dealloc(s->pos);
    tm__dealloc(s->fm);
    tm__dealloc(s->sym);
    tm__dealloc(s->woff);
    tm__dealloc(s->wlen);
}

tm_status tm__bpe_run(const tm__bpe_words *ws, tm__bpe_vocab *v,
                      const int32_t byte_id[256], int64_t vocab_size,
                      int64_t min_frequency, tm__bpe_step_fn step,
                      void *user, tm__bpe_merge **merges_out,
                      int64_t *n_merges_out)
{
    const char *fn = "tm_bpe_trainer_finish";
    state s;
    memset(&s, 0, sizeof s);
    tm__bpe_merge *merges = NULL;
    uint64_t nm = 0, capm = 0;
    unsigned char *cat = NULL;
    uint64_t capcat = 0;
    tm_status st = TM_OK;
    *merges_out = NULL;
    *n_merges_out = 0;

    uint64_t nw = ws->n ? ws->n : 1, nsym = ws->nbytes ? ws->nbytes : 1;
    s.sym = tm__alloc((size_t)nsym * sizeof *s.sym, fn);
    s.woff = tm__alloc((size_t)nw * sizeof *s.woff, fn);
    s.wlen = tm__alloc((size_t)nw * sizeof *s.wlen, fn);
    if (!s.sym || !s.woff || !s.wlen) {
        st = TM_ENOMEM;
        goto fail;
    }
    for (uint32_t w = 0; w < ws->n; w++) {
        const unsigned char *p = ws->bytes + ws->w[w].off;
        s.woff[w] = ws->w[w].off;
        s.wlen[w] = ws->w[w].len;
        for (uint32_t i = 0; i < ws->w[w].len; i++)
            s.sym[s.woff[w] + i] = byte_id[p[i]];
    }
    if ((st = init_pairs(&s, ws, byte_id))) goto fail;

    while (v->ntok < vocab_size && s.h.n) {
        entry top = heap_pop(&s.h);
        const int64_t *slot = pair_slot(&s.pairs, top.pair);
        if (!slot) {
            st = TM_ENOMEM;
            goto fail;
        }
        int64_t now = *slot;
        if (top.count != now) {
            /* Stale: some of its occurrences were merged away since it
             * was pushed.  Back in with the current count, same words. */
            top.count = now;
            if ((st = heap_push(&s.h, top))) goto fail;
            continue;
        }
        if (top.count < 1 || top.count < min_frequency) break;
        int32_t a = (int32_t)(top.pair >> 32), b = (int32_t)top.pair;
        uint64_t la = v->len[a], lb = v->len[b];
        if ((st = grow((void **)&cat, &capcat, la + lb, 1, fn))) goto fail;
        memcpy(cat, v->bytes + v->off[a], la);
        memcpy(cat + la, v->bytes + v->off[b], lb);
        int64_t id = tm__bpe_vocab_find(v, cat, la + lb);
        if (id < 0 && (id = tm__bpe_vocab_add(v, cat, la + lb, true)) < 0) {
            st = (tm_status)id;
            goto fail;
        }
        if ((st = grow((void **)&merges, &capm, nm + 1, sizeof *merges, fn)))
            goto fail;
        merges[nm++] = (tm__bpe_merge){.a = a, .b = b, .id = (int32_t)id};
        for (uint64_t k = 0; k < top.pos_len; k++) {
            uint32_t w = s.pos[top.pos_off + k];
            if ((st = merge_word(&s, w, ws->w[w].count, a, b, (int32_t)id)))
                goto fail;
        }
        if ((st = push_formed(&s))) goto fail;
        if (step) step((int64_t)nm, user);
    }
    *merges_out = merges;
    *n_merges_out = (int64_t)nm;
    merges = NULL;
fail:
    tm__dealloc(merges);
    tm__dealloc(cat);
    state_free(&s);
    return st;
}
