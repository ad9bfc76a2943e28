/*
 * dataset.c — opening and validating token datasets, splits by document,
 * reading token ranges, the unigram baseline.
 *
 * Everything is checked at open (layout in dataset_impl.h), so every later
 * call can trust the offsets and the tokens.
 */
#include "dataset_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t tm__fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

uint64_t tm__splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void free_splits(tm_token_dataset *ds)
{
    for (int s = 0; s < 2; s++) {
        tm__dealloc(ds->split[s].docs);
        tm__dealloc(ds->split[s].cum);
        memset(&ds->split[s], 0, sizeof ds->split[s]);
    }
}

void tm_token_dataset_close(tm_token_dataset *ds)
{
    if (!ds) return;
    free_splits(ds);
    if (ds->mapped) {
        if (ds->size) munmap(ds->base, ds->size);
    } else {
        tm__dealloc(ds->base);
    }
    tm__dealloc(ds);
}

/* Checks the file in ds->base[ds->size]; `fn` and `label` name the error. */
static tm_status validate(tm_token_dataset *ds, const char *fn, const char *L)
{
    const unsigned char *b = ds->base;
    size_t size = ds->size;
    if (size < TM__DS_HEADER)
        return tm__errf(TM_EFORMAT, fn, "%s: truncated: %zu bytes, the header "
                        "alone is %d", L, size, TM__DS_HEADER);
    if (memcmp(b, TM__DS_MAGIC, 8))
        return tm__errf(TM_EFORMAT, fn, "%s: bad magic (not a Foundry token "
                        "dataset)", L);
    uint32_t version = tm__ds_le32(b + 8);
    if (version != TM_TOKEN_DATASET_VERSION)
        return tm__errf(TM_EFORMAT, fn, "%s: version %u not supported (this "
                        "build reads %d)", L, version, TM_TOKEN_DATASET_VERSION);
    uint64_t sum = tm__ds_le64(b + 56);
    if (sum != tm__fnv1a64(b, 56))
        return tm__errf(TM_EFORMAT, fn, "%s: header checksum mismatch "
                        "(corrupt header)", L);
    uint32_t width = tm__ds_le32(b + 12);
    uint64_t vocab = tm__ds_le64(b + 16), docs = tm__ds_le64(b + 32),
             ntok = tm__ds_le64(b + 40), nbytes = tm__ds_le64(b + 48);
    if (width != 2 && width != 4)
        return tm__errf(TM_EFORMAT, fn, "%s: token width %u (must be 2 or 4)",
                        L, width);
    if (vocab < 1 || vocab > (width == 2 ? 65536ull : 4294967296ull))
        return tm__errf(TM_EFORMAT, fn, "%s: vocab size %llu does not fit "
                        "%u-byte tokens", L, (unsigned long long)vocab, width);
    if (width == 4 && vocab <= 65536)
        return tm__errf(TM_EFORMAT, fn, "%s: 4-byte tokens for vocab size "
                        "%llu (the writer uses 2 bytes up to 65536)", L,
                        (unsigned long long)vocab);
    /* Every count below 2^60 keeps the products and sums below 2^64. */
    const uint64_t lim = 1ull << 60;
    if (docs >= lim || ntok >= lim || nbytes >= lim)
        return tm__errf(TM_EFORMAT, fn, "%s: impossible sizes: %llu docs, "
                        "%llu tokens, %llu bytes", L, (unsigned long long)docs,
                        (unsigned long long)ntok, (unsigned long long)nbytes);
    uint64_t tables = 8 * (2 * docs + 1), want_tok = ntok * width;
    uint64_t have = (uint64_t)size - TM__DS_HEADER;
    if (tables > have)
        return tm__errf(TM_EFORMAT, fn, "%s: truncated: header says %llu "
                        "documents, file holds %llu bytes of tables", L,
                        (unsigned long long)docs, (unsigned long long)have);
    if (have - tables < want_tok)
        return tm__errf(TM_EFORMAT, fn, "%s: truncated: header says %llu "
                        "tokens, file holds %llu", L, (unsigned long long)ntok,
                        (unsigned long long)((have - tables) / width));
    if (have - tables > want_tok)
        return tm__errf(TM_EFORMAT, fn, "%s: %llu trailing bytes after the "
                        "tokens", L,
                        (unsigned long long)(have - tables - want_tok));
    ds->width = width;
    ds->vocab = (int64_t)vocab;
    ds->hash = tm__ds_le64(b + 24);
    ds->n_docs = (int64_t)docs;
    ds->n_tokens = (int64_t)ntok;
    ds->n_bytes = (int64_t)nbytes;
    ds->offsets = b + TM__DS_HEADER;
    ds->bytes = ds->offsets + 8 * (docs + 1);
    ds->tokens = ds->bytes + 8 * docs;
    if (tm__ds_offset(ds, 0) != 0)
        return tm__errf(TM_EFORMAT, fn, "%s: first document offset is %llu, "
                        "not 0", L, (unsigned long long)tm__ds_le64(ds->offsets));
    uint64_t bsum = 0;
    for (uint64_t d = 0; d < docs; d++) {
        uint64_t o0 = tm__ds_le64(ds->offsets + 8 * d);
        uint64_t o1 = tm__ds_le64(ds->offsets + 8 * (d + 1));
        if (o1 < o0 || o1 > ntok)
            return tm__errf(TM_EFORMAT, fn, "%s: document %llu offsets %llu.."
                            "%llu are not increasing within %llu tokens", L,
                            (unsigned long long)d, (unsigned long long)o0,
                            (unsigned long long)o1, (unsigned long long)ntok);
        uint64_t nb = tm__ds_le64(ds->bytes + 8 * d);
        if (nb > nbytes - bsum)
            return tm__errf(TM_EFORMAT, fn, "%s: document byte counts exceed "
                            "the header's %llu bytes", L,
                            (unsigned long long)nbytes);
        bsum += nb;
    }
    if (tm__ds_le64(ds->offsets + 8 * docs) != ntok)
        return tm__errf(TM_EFORMAT, fn, "%s: last document ends at token %llu"
                        ", header says %llu tokens", L,
                        (unsigned long long)tm__ds_le64(ds->offsets + 8 * docs),
                        (unsigned long long)ntok);
    if (bsum != nbytes)
        return tm__errf(TM_EFORMAT, fn, "%s: document byte counts sum to %llu"
                        ", header says %llu", L, (unsigned long long)bsum,
                        (unsigned long long)nbytes);
    for (int64_t i = 0; i < ds->n_tokens; i++) {
        int64_t t = tm__ds_token(ds, i);
        if (t >= ds->vocab)
            return tm__errf(TM_EFORMAT, fn, "%s: token %lld at position %lld "
                            "is >= vocab size %lld", L, (long long)t,
                            (long long)i, (long long)ds->vocab);
    }
    return TM_OK;
}

static tm_token_dataset *finish_open(tm_token_dataset *ds, const char *fn,
                                     const char *label)
{
    if (validate(ds, fn, label) != TM_OK) goto fail;
    if (tm_token_dataset_set_val_fraction(ds, 0.1) != TM_OK) {
        tm__relabel_error(fn, tm_last_status());
        goto fail;
    }
    return ds;
fail:
    tm_token_dataset_close(ds);
    return NULL;
}

tm_token_dataset *tm_token_dataset_open(const char *path)
{
    const char *fn = __func__;
    if (!path) {
        TM_ERR(TM_EINVAL, "path is NULL");
        return NULL;
    }
    tm_token_dataset *ds = tm__calloc(sizeof *ds, fn);
    if (!ds) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        TM_ERR(TM_EIO, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        TM_ERR(TM_EIO, "%s: not a regular file", path);
        goto fail;
    }
    ds->size = (size_t)sb.st_size;
    ds->mapped = true;
    if (ds->size) {
        void *m = mmap(NULL, ds->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            TM_ERR(TM_EIO, "%s: cannot map %zu bytes: %s", path, ds->size,
                   strerror(errno));
            ds->size = 0;
            goto fail;
        }
        ds->base = m;
    }
    close(fd);
    return finish_open(ds, fn, path);
fail:
    if (fd >= 0) close(fd);
    tm_token_dataset_close(ds);
    return NULL;
}

tm_token_dataset *tm_token_dataset_open_memory(const void *data, size_t size)
{
    const char *fn = __func__;
    if (!data && size) {
        TM_ERR(TM_EINVAL, "data is NULL with size %zu", size);
        return NULL;
    }
    tm_token_dataset *ds = tm__calloc(sizeof *ds, fn);
    if (!ds) return NULL;
    ds->base = tm__alloc(size, fn);
    if (!ds->base) {
        tm__dealloc(ds);
        return NULL;
    }
    if (size) memcpy(ds->base, data, size);
    ds->size = size;
    return finish_open(ds, fn, "<memory>");
}

/* -------------------------------------------------------------- splits */

static bool bad_split(tm_token_split s)
{
    return s != TM_SPLIT_ALL && s != TM_SPLIT_TRAIN && s != TM_SPLIT_VAL;
}

static double doc_u(int64_t i)
{
    return (double)(tm__splitmix64((uint64_t)i) >> 11) * 0x1p-53;
}

tm_status tm_token_dataset_set_val_fraction(tm_token_dataset *ds, double f)
{
    const char *fn = __func__;
    if (!ds) return TM_ERR(TM_EINVAL, "dataset is NULL");
    if (!(f >= 0 && f < 1))
        return TM_ERR(TM_EINVAL, "val_fraction %g is not in [0, 1)", f);
    int64_t n = ds->n_docs;
    tm__ds_split nw[2] = {{0}, {0}};
    unsigned char *in_val = tm__calloc((size_t)n + 1, fn);
    if (!in_val) return TM_ENOMEM;
    int64_t nval = 0, lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        double u = doc_u(i);
        in_val[i] = u < f;
        nval += in_val[i];
        if (u < doc_u(lo)) lo = i;
        if (u > doc_u(hi)) hi = i;
    }
    if (n >= 2 && f > 0 && nval == 0) in_val[lo] = 1, nval = 1;
    if (n >= 2 && f > 0 && nval == n) in_val[hi] = 0, nval--;
    for (int s = 0; s < 2; s++) {
        int64_t cnt = s ? nval : n - nval;
        nw[s].docs = tm__alloc(sizeof(int64_t) * (size_t)(cnt + 1), fn);
        nw[s].cum = tm__alloc(sizeof(int64_t) * (size_t)(cnt + 1), fn);
        if (!nw[s].docs || !nw[s].cum) goto fail;
        nw[s].cum[0] = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        tm__ds_split *sp = &nw[in_val[i]];
        int64_t len = tm__ds_offset(ds, i + 1) - tm__ds_offset(ds, i);
        sp->docs[sp->n_docs] = i;
        sp->cum[sp->n_docs + 1] = sp->cum[sp->n_docs] + len;
        sp->n_docs++;
        sp->n_bytes += (int64_t)tm__ds_le64(ds->bytes + 8 * (size_t)i);
    }
    tm__dealloc(in_val);
    free_splits(ds);
    ds->split[0] = nw[0];
    ds->split[1] = nw[1];
    ds->val_fraction = f;
    return TM_OK;
fail:
    tm__dealloc(in_val);
    for (int s = 0; s < 2; s++) {
        tm__dealloc(nw[s].docs);
        tm__dealloc(nw[s].cum);
    }
    return TM_ENOMEM;
}

double tm_token_dataset_val_fraction(const tm_token_dataset *ds)
{
    if (!ds) {
        TM_ERR(TM_EINVAL, "dataset is NULL");
        return NAN;
    }
    return ds->val_fraction;
}

#define CHECK_DS_SPLIT(ds, split, ret)                                        \
    do {                                                                      \
        if (!(ds)) {                                                          \
            TM_ERR(TM_EINVAL, "dataset is NULL");                             \
            return ret;                                                       \
        }                                                                     \
        if (bad_split(split)) {                                               \
            TM_ERR(TM_EINVAL, "split %d is not ALL, TRAIN or VAL",            \
                   (int)(split));                                             \
            return ret;                                                       \
        }                                                                     \
    } while (0)

int64_t tm_token_dataset_tokens(const tm_token_dataset *ds, tm_token_split split)
{
    CHECK_DS_SPLIT(ds, split, -1);
    if (split == TM_SPLIT_ALL) return ds->n_tokens;
    const tm__ds_split *s = &ds->split[split - 1];
    return s->cum[s->n_docs];
}

int64_t tm_token_dataset_bytes(const tm_token_dataset *ds, tm_token_split split)
{
    CHECK_DS_SPLIT(ds, split, -1);
    return split == TM_SPLIT_ALL ? ds->n_bytes : ds->split[split - 1].n_bytes;
}

int64_t tm_token_dataset_docs(const tm_token_dataset *ds, tm_token_split split)
{
    CHECK_DS_SPLIT(ds, split, -1);
    return split == TM_SPLIT_ALL ? ds->n_docs : ds->split[split - 1].n_docs;
}

int64_t tm_token_dataset_vocab_size(const tm_token_dataset *ds)
{
    if (!ds) return TM_ERR(TM_EINVAL, "dataset is NULL");
    return ds->vocab;
}

uint64_t tm_token_dataset_tokenizer_hash(const tm_token_dataset *ds)
{
    if (!ds) {
        TM_ERR(TM_EINVAL, "dataset is NULL");
        return 0;
    }
    return ds->hash;
}

/* ---------------------------------------------------------------- reads */

/* Copies tokens [start, start+n) of split s (validated) into out. */
static void read_split(const tm_token_dataset *ds, const tm__ds_split *s,
                       int64_t start, int64_t n, int64_t *out)
{
    /* the document holding `start`: last k with cum[k] <= start */
    int64_t lo = 0, hi = s->n_docs - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (s->cum[mid] <= start) lo = mid;
        else hi = mid - 1;
    }
    for (int64_t k = lo; n > 0; k++) {
        int64_t within = start - s->cum[k];
        int64_t take = s->cum[k + 1] - start;
        if (take > n) take = n;
        int64_t base = tm__ds_offset(ds, s->docs[k]) + within;
        for (int64_t i = 0; i < take; i++) out[i] = tm__ds_token(ds, base + i);
        out += take;
        start += take;
        n -= take;
    }
}

tm_status tm__ds_read(const tm_token_dataset *ds, tm_token_split split,
                      int64_t start, int64_t n, int64_t *out)
{
    if (split == TM_SPLIT_ALL) {
        for (int64_t i = 0; i < n; i++) out[i] = tm__ds_token(ds, start + i);
    } else if (n > 0) {
        read_split(ds, &ds->split[split - 1], start, n, out);
    }
    return TM_OK;
}

tm_status tm_token_dataset_read(const tm_token_dataset *ds, tm_token_split split,
                                int64_t start, int64_t n, int64_t *out)
{
    CHECK_DS_SPLIT(ds, split, TM_EINVAL);
    int64_t total = tm_token_dataset_tokens(ds, split);
    if (start < 0 || n < 0 || start > total || n > total - start)
        return TM_ERR(TM_ERANGE, "tokens [%lld, %lld + %lld) are outside the "
                      "split's %lld tokens", (long long)start, (long long)start,
                      (long long)n, (long long)total);
    if (!out && n) return TM_ERR(TM_EINVAL, "out is NULL");
    return tm__ds_read(ds, split, start, n, out);
}

/* Adds one to counts[t] for every token of split s. */
static void count_split(const tm_token_dataset *ds, tm_token_split split,
                        int64_t *counts)
{
    if (split == TM_SPLIT_ALL) {
        for (int64_t i = 0; i < ds->n_tokens; i++) counts[tm__ds_token(ds, i)]++;
        return;
    }
    const tm__ds_split *s = &ds->split[split - 1];
    for (int64_t k = 0; k < s->n_docs; k++) {
        int64_t b = tm__ds_offset(ds, s->docs[k]);
        int64_t e = tm__ds_offset(ds, s->docs[k] + 1);
        for (int64_t i = b; i < e; i++) counts[tm__ds_token(ds, i)]++;
    }
}

double tm_token_dataset_unigram_loss(const tm_token_dataset *ds, tm_token_split fit,
                                     tm_token_split eval)
{
    CHECK_DS_SPLIT(ds, fit, NAN);
    CHECK_DS_SPLIT(ds, eval, NAN);
    int64_t n_eval = tm_token_dataset_tokens(ds, eval);
    if (n_eval == 0) {
        TM_ERR(TM_EINVAL, "the eval split %d holds no tokens", (int)eval);
        return NAN;
    }
    size_t bytes = sizeof(int64_t) * (size_t)ds->vocab;
    int64_t *fc = tm__calloc(bytes, __func__), *ec = tm__calloc(bytes, __func__);
    double loss = NAN;
    if (!fc || !ec) goto done;
    count_split(ds, fit, fc);
    count_split(ds, eval, ec);
    double denom = log((double)tm_token_dataset_tokens(ds, fit) + (double)ds->vocab);
    double sum = 0;
    for (int64_t t = 0; t < ds->vocab; t++)
        if (ec[t]) sum += (double)ec[t] * (denom - log((double)fc[t] + 1));
    loss = sum / (double)n_eval;
done:
    tm__dealloc(fc);
    tm__dealloc(ec);
    return loss;
}
