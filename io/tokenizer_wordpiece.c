/*
 * tokenizer_wordpiece.c — the WordPiece model and decoder, as HF's
 * models/wordpiece and decoders/wordpiece.
 *
 * A piece is matched greedily, longest first: from each start the longest
 * vocabulary entry (continuations carry the prefix, "##") that the rest of
 * the piece begins with.  Candidates longer than the longest token are
 * never probed, so a piece of n bytes costs at most n * longest hash
 * probes.  When some position matches nothing, or the piece has more than
 * max_input_chars_per_word characters, the whole piece is the unk token.
 */
#include "tokenizer_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

static size_t utf8_chars(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += tm__utf8_next((const unsigned char *)p + i, n - i, &cp);
        k++;
    }
    return k;
}

/* The model token whose string is key[n], or -1 (added-only tokens are
 * not in the WordPiece vocabulary). */
static int32_t vocab_get(const tm_tokenizer *t, const char *key, size_t n)
{
    return tm__idmap_get(&t->by_raw, key, n);
}

tm_status tm__wordpiece_piece(const tm_tokenizer *t, const char *p, size_t n, tm_token_buf *out)
{
    if (t->unk_id < 0)
        return TM_ERR(TM_EINVAL, "the WordPiece tokenizer has no unk_token");
    if ((int64_t)utf8_chars(p, n) > t->wp_max_chars)
        return tm__tok_push(out, (int32_t)t->unk_id);
    size_t pl = t->wp_prefix_len;
    char stackbuf[256], *key = stackbuf;
    if (pl + n > sizeof stackbuf && !(key = malloc(pl + n)))
        return TM_ERR(TM_ENOMEM, "out of memory (%zu bytes)", pl + n);
    memcpy(key, t->wp_prefix, pl);
    int64_t base = out->n;
    tm_status st = TM_OK;
    for (size_t start = 0; start < n && st == TM_OK;) {
        size_t off = start ? pl : 0;
        size_t end = n;
        if (t->wp_longest < off || end - start > t->wp_longest - off) {
            end = t->wp_longest < off ? start : start + (t->wp_longest - off);
            /* back to a character boundary */
            while (end > start && end < n && ((unsigned char)p[end] & 0xC0) == 0x80)
                end--;
        }
        int32_t id = -1;
        while (end > start) {
            const char *k = start ? key : p + start;
            if (start)
                memcpy(key + pl, p + start, end - start);
            if ((id = vocab_get(t, k, off + end - start)) >= 0)
                break;
            end--;
            while (end > start && ((unsigned char)p[end] & 0xC0) == 0x80)
                end--;
        }
        if (id < 0) {
            out->n = base;
            st = tm__tok_push(out, (int32_t)t->unk_id);
            break;
        }
        st = tm__tok_push(out, id);
        start = end;
    }
    if (key != stackbuf)
        free(key);
    return st;
}

typedef struct sbuf { char *p; size_t n, cap; bool oom; } sbuf;

static void sput(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* HF's cleanup, applied to each token (with its leading space) in turn:
 * the replacements in HF's order. */
static void put_clean(sbuf *b, const char *s, size_t n)
{
    static const char *const from[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " do not", " 's", " 've", " 're"};
    static const char *const to[] = {".", "?", "!", ",", "'", "n't", "'m", " don't", "'s", "'ve", "'re"};
    char *cur = malloc(n + 1), *nxt;
    if (!cur) {
        b->oom = true;
        return;
    }
    memcpy(cur, s, n);
    size_t cn = n;
    for (int r = 0; r < 11; r++) {
        size_t fl = strlen(from[r]), tl = strlen(to[r]);
        if (cn < fl)
            continue;
        /* every replacement is no longer than its pattern: the result fits */
        if (!(nxt = malloc(cn + 1))) {
            b->oom = true;
            free(cur);
            return;
        }
        size_t k = 0;
        for (size_t i = 0; i < cn;) {
            if (i + fl <= cn && memcmp(cur + i, from[r], fl) == 0) {
                memcpy(nxt + k, to[r], tl);
                k += tl, i += fl;
            } else {
                nxt[k++] = cur[i++];
            }
        }
        free(cur);
        cur = nxt, cn = k;
    }
    sput(b, cur, cn);
    free(cur);
}

char *tm__wordpiece_decode(const tm_tokenizer *t, const int32_t *ids, int64_t n, bool skip_special, size_t *len)
{
    sbuf b = {0};
    sput(&b, "", 0);
    int64_t i = 0;
    for (int64_t k = 0; k < n; k++) {
        int32_t id = ids[k];
        if (skip_special && (t->kind[id] & TM__TOK_SPECIAL))
            continue;
        const char *s = t->str[id];
        size_t sl = t->str_len[id];
        char *tmp = NULL;
        if (i > 0) {
            if (sl >= t->dec_prefix_len && memcmp(s, t->dec_prefix, t->dec_prefix_len) == 0) {
                s += t->dec_prefix_len, sl -= t->dec_prefix_len;
            } else if ((tmp = malloc(sl + 1))) {
                tmp[0] = ' ';
                memcpy(tmp + 1, s, sl);
                s = tmp, sl++;
            } else {
                b.oom = true;
            }
        }
        if (t->dec_cleanup)
            put_clean(&b, s, sl);
        else
            sput(&b, s, sl);
        free(tmp);
        i++;
    }
    if (b.oom) {
        free(b.p);
        TM_ERR(TM_ENOMEM, "out of memory (decoding %lld ids)", (long long)n);
        return NULL;
    }
    b.p[b.n] = '\0';
    if (len)
        *len = b.n;
    return b.p;
}
