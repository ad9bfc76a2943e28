/*
 * kv_cache.c — the key/value cache of autoregressive decoding: per layer a
 * k (B, Hkv, S, D) and a v (B, Hkv, S, Dv) tensor, S = max_len slots for a
 * full layer or W for a windowed one (a ring: position p in slot p % W).
 * Tokens go in through tm_copy_ into narrowed views, so the front end never
 * touches element memory and the cache works on any device.
 */
#include "foundry/attention.h"

#include "../tensor/core/tensor_impl.h"

typedef struct kv_layer {
    tm_tensor *k, *v;
    int64_t len;    /* positions appended (a ring counts every one) */
    int64_t window; /* as given: what attention applies (0: none) */
    int64_t slots;  /* size of dim 2 of k and v */
    int64_t lost;   /* a ring: positions < lost were overwritten */
    bool ring;      /* window < max_len: positions wrap around the slots */
} kv_layer;

struct tm_kv_cache {
    int layers;
    int64_t batch, heads, max_len, dk, dv;
    tm_dtype dtype;
    tm_device device;
    kv_layer *layer;
};

void tm_kv_cache_free(tm_kv_cache *c)
{
    if (!c) return;
    for (int l = 0; l < c->layers; l++) {
        tm_free(c->layer[l].k);
        tm_free(c->layer[l].v);
    }
    tm__dealloc(c->layer);
    tm__dealloc(c);
}

static tm_status check_count(const char *what, int64_t n)
{
    if (n > 0) return TM_OK;
    return tm__errf(TM_EINVAL, "tm_kv_cache_new",
                    "%s must be positive, got %lld", what, (long long)n);
}

tm_kv_cache *tm_kv_cache_new(int layers, int64_t batch, int64_t kv_heads,
                             int64_t max_len, int64_t head_dim,
                             const tm_kv_cache_opts *opts)
{
    static const tm_kv_cache_opts zero = {0};
    const tm_kv_cache_opts *o = opts ? opts : &zero;
    tm_kv_cache *c = NULL;
    int64_t dv = o->v_head_dim ? o->v_head_dim : head_dim;
    if (check_count("layers", layers) || check_count("batch", batch) ||
        check_count("kv_heads", kv_heads) || check_count("max_len", max_len) ||
        check_count("head_dim", head_dim) || check_count("v_head_dim", dv))
        return NULL;
    if (!tm_dtype_is_float(o->dtype)) {
        TM_ERR(TM_EDTYPE, "the storage dtype must be f32, f64, f16 or bf16, "
               "got %s", tm_dtype_name(o->dtype));
        return NULL;
    }
    if (!tm_device_available(o->device)) {
        TM_ERR(TM_EDEVICE, "device %s is not available",
               tm_device_name(o->device));
        return NULL;
    }
    for (int l = 0; l < layers; l++) {
        int64_t w = o->windows ? o->windows[l] : o->window;
        if (w < 0) {
            TM_ERR(TM_EINVAL, "layer %d: window must be >= 0, got %lld", l,
                   (long long)w);
            return NULL;
        }
    }
    if (!(c = tm__calloc(sizeof *c, __func__)) ||
        !(c->layer = tm__calloc((size_t)layers * sizeof *c->layer, __func__)))
        goto fail;
    c->layers = layers;
    c->batch = batch;
    c->heads = kv_heads;
    c->max_len = max_len;
    c->dk = head_dim;
    c->dv = dv;
    c->dtype = o->dtype;
    c->device = o->device;
    for (int l = 0; l < layers; l++) {
        kv_layer *L = &c->layer[l];
        L->window = o->windows ? o->windows[l] : o->window;
        L->ring = L->window > 0 && L->window < max_len;
        L->slots = L->ring ? L->window : max_len;
        int64_t ks[4] = {batch, kv_heads, L->slots, head_dim};
        int64_t vs[4] = {batch, kv_heads, L->slots, dv};
        if (!(L->k = tm_empty_on(ks, 4, c->dtype, c->device)) ||
            !(L->v = tm_empty_on(vs, 4, c->dtype, c->device))) {
            tm__relabel_error(__func__, tm_last_status());
            goto fail;
        }
    }
    return c;
fail:
    tm_kv_cache_free(c);
    return NULL;
}

int tm_kv_cache_layers(const tm_kv_cache *c) { return c ? c->layers : 0; }
tm_dtype tm_kv_cache_dtype(const tm_kv_cache *c)
{
    return c ? c->dtype : TM_F32;
}
tm_device tm_kv_cache_device(const tm_kv_cache *c)
{
    return c ? c->device : TM_CPU;
}
int64_t tm_kv_cache_max_len(const tm_kv_cache *c)
{
    return c ? c->max_len : 0;
}

static tm_status check_layer(const char *fn, const tm_kv_cache *c, int layer)
{
    if (!c) return tm__errf(TM_EINVAL, fn, "cache is NULL");
    if (layer < 0 || layer >= c->layers)
        return tm__errf(TM_ERANGE, fn, "layer %d out of range for a cache "
                        "of %d layers", layer, c->layers);
    return TM_OK;
}

int64_t tm_kv_cache_window(const tm_kv_cache *c, int layer)
{
    if (check_layer(__func__, c, layer)) return -1;
    return c->layer[layer].window;
}

int64_t tm_kv_cache_length(const tm_kv_cache *c, int layer)
{
    if (check_layer(__func__, c, layer)) return -1;
    return c->layer[layer].len;
}

size_t tm_kv_cache_nbytes(const tm_kv_cache *c)
{
    size_t n = 0;
    for (int l = 0; c && l < c->layers; l++)
        n += tm_storage_nbytes(tm_storage_of(c->layer[l].k)) +
             tm_storage_nbytes(tm_storage_of(c->layer[l].v));
    return n;
}

/* k (B, Hkv, n, D) and v (B, Hkv, n, Dv) as the cache expects; n in *n. */
static tm_status check_new(const char *fn, const tm_kv_cache *c, int layer,
                           const tm_tensor *k, const tm_tensor *v,
                           int64_t *n)
{
    const tm_tensor *t[2] = {k, v};
    const char *name[2] = {"k", "v"};
    tm_status st = check_layer(fn, c, layer);
    if (st) return st;
    for (int i = 0; i < 2; i++) {
        char buf[TM_SHAPE_BUF];
        if ((st = tm__check_tensor(fn, t[i], name[i]))) return st;
        if (!tm_dtype_is_float(tm_dtype_of(t[i])))
            return tm__errf(TM_EDTYPE, fn, "%s must be a float tensor, got "
                            "%s", name[i], tm_dtype_name(tm_dtype_of(t[i])));
        if (!tm_device_eq(tm_device_of(t[i]), c->device))
            return tm__errf(TM_EDEVICE, fn, "%s is on %s, the cache on %s",
                            name[i], tm_device_name(tm_device_of(t[i])),
                            tm_device_name(c->device));
        const int64_t *s = tm_shape(t[i]);
        int64_t d = i ? c->dv : c->dk;
        if (tm_ndim(t[i]) != 4 || s[0] != c->batch || s[1] != c->heads ||
            s[2] < 1 || s[3] != d || (i && s[2] != tm_shape(k)[2]))
            return tm__errf(TM_ESHAPE, fn, "layer %d: %s has shape %s, "
                            "expected [%lld,%lld,n,%lld] with n >= 1%s",
                            layer, name[i],
                            tm__fmt_shape(s, tm_ndim(t[i]), buf, sizeof buf),
                            (long long)c->batch, (long long)c->heads,
                            (long long)d, i ? " equal to k's" : "");
    }
    *n = tm_shape(k)[2];
    const kv_layer *L = &c->layer[layer];
    if (*n > c->max_len - L->len)
        return tm__errf(TM_ERANGE, fn, "layer %d: appending %lld tokens to "
                        "%lld passes max_len %lld", layer, (long long)*n,
                        (long long)L->len, (long long)c->max_len);
    return TM_OK;
}

/* Up to two views of `t`'s slots holding `count` positions from `pos` on
 * (a ring wraps once at most since count <= slots).  Unused parts NULL. */
static tm_status slot_views(const kv_layer *L, tm_tensor *t, int64_t pos,
                            int64_t count, tm_tensor *part[2])
{
    int64_t s0 = L->ring ? pos % L->slots : pos;
    int64_t first = count < L->slots - s0 ? count : L->slots - s0;
    part[0] = part[1] = NULL;
    if (!(part[0] = tm_narrow(t, 2, s0, first))) return tm_last_status();
    if (first < count && !(part[1] = tm_narrow(t, 2, 0, count - first)))
        return tm_last_status();
    return TM_OK;
}

/* Writes the n new tokens into the layer's slots (a ring keeps the last
 * `slots` of them) without changing its length.  Every view is made
 * before the first copy, so a failure cannot leave half a ring written. */
static tm_status write_tokens(kv_layer *L, const tm_tensor *k,
                              const tm_tensor *v, int64_t n)
{
    int64_t m = n < L->slots ? n : L->slots;
    const tm_tensor *src[2] = {k, v};
    tm_tensor *dst[2] = {L->k, L->v};
    tm_tensor *part[2][2] = {{NULL, NULL}, {NULL, NULL}};
    tm_tensor *from[2][2] = {{NULL, NULL}, {NULL, NULL}};
    tm_status st = TM_OK;
    for (int i = 0; i < 2 && !st; i++) {
        if ((st = slot_views(L, dst[i], L->len + n - m, m, part[i]))) break;
        int64_t first = tm_shape(part[i][0])[2];
        if (!(from[i][0] = tm_narrow(src[i], 2, n - m, first)) ||
            (part[i][1] && !(from[i][1] = tm_narrow(src[i], 2, n - m + first,
                                                     m - first))))
            st = tm_last_status();
    }
    bool prev = tm_no_grad_begin();
    for (int i = 0; i < 2 && !st; i++)
        for (int j = 0; j < 2 && !st; j++)
            if (part[i][j]) st = tm_copy_(part[i][j], from[i][j]);
    tm_no_grad_end(prev);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            tm_free(part[i][j]);
            tm_free(from[i][j]);
        }
    return st;
}

/* The length after n written tokens; writing position p overwrote p - W. */
static void advance(kv_layer *L, int64_t n)
{
    L->len += n;
    if (L->ring && L->len - L->slots > L->lost) L->lost = L->len - L->slots;
}

tm_status tm_kv_cache_append(tm_kv_cache *c, int layer, const tm_tensor *k,
                             const tm_tensor *v)
{
    int64_t n;
    tm_status st = check_new(__func__, c, layer, k, v, &n);
    if (st) return st;
    if ((st = write_tokens(&c->layer[layer], k, v, n)))
        return tm__relabel_error(__func__, st);
    advance(&c->layer[layer], n);
    return TM_OK;
}

/* The window positions held before the new ones that the first new query
 * may see: W - 1 of them at most. */
static int64_t ring_keep(const kv_layer *L)
{
    return L->len < L->window - 1 ? L->len : L->window - 1;
}

/* `t`'s positions [pos, pos + count) of a ring in position order, followed
 * by `tail` converted to the storage dtype (NULL: nothing): a new tensor. */
static tm_tensor *ring_ordered(const kv_layer *L, tm_tensor *t, int64_t pos,
                               int64_t count, const tm_tensor *tail)
{
    tm_tensor *part[2] = {NULL, NULL}, *conv = NULL, *out = NULL;
    tm_tensor *all[3];
    int n = 0;
    bool prev = tm_no_grad_begin();
    if (count > 0) {
        if (slot_views(L, t, pos, count, part)) goto done;
        all[n++] = part[0];
        if (part[1]) all[n++] = part[1];
    }
    if (tail) {
        if (!(conv = tm_to_dtype(tail, tm_dtype_of(t)))) goto done;
        all[n++] = conv;
    }
    out = tm_cat(all, n, 2);
done:
    tm_no_grad_end(prev);
    tm_free(part[0]);
    tm_free(part[1]);
    tm_free(conv);
    return out;
}

/* A wrapped ring's last W - 1 positions in order, then the new k and v:
 * new tensors in *k_all and *v_all, the first new one at *offset. */
static tm_status ring_gather(const kv_layer *L, const tm_tensor *k,
                             const tm_tensor *v, tm_tensor **k_all,
                             tm_tensor **v_all, int64_t *offset)
{
    int64_t keep = ring_keep(L);
    *offset = keep;
    if (!(*k_all = ring_ordered(L, L->k, L->len - keep, keep, k)) ||
        !(*v_all = ring_ordered(L, L->v, L->len - keep, keep, v)))
        return tm_last_status();
    return TM_OK;
}

/* Keys and values over which the new queries attend, in position order,
 * once the n new tokens are written; *offset: the index of the first new
 * one.  For a wrapped ring they are gathered before the write overwrites
 * positions the first new queries still see. */
static tm_status gather_and_write(tm_kv_cache *c, int layer,
                                  const tm_tensor *k, const tm_tensor *v,
                                  int64_t n, tm_tensor **k_all,
                                  tm_tensor **v_all, int64_t *offset)
{
    kv_layer *L = &c->layer[layer];
    tm_status st = TM_OK;
    *k_all = *v_all = NULL;
    if (!L->ring || L->len + n <= L->slots) {
        /* Position = slot: a view once written. */
        int64_t start = L->ring ? L->len - ring_keep(L) : 0;
        if ((st = write_tokens(L, k, v, n))) goto fail;
        if (!(*k_all = tm_narrow(L->k, 2, start, L->len + n - start)) ||
            !(*v_all = tm_narrow(L->v, 2, start, L->len + n - start))) {
            st = tm_last_status();
            goto fail;
        }
        *offset = L->len - start;
    } else {
        if ((st = ring_gather(L, k, v, k_all, v_all, offset)) ||
            (st = write_tokens(L, k, v, n)))
            goto fail;
    }
    advance(L, n);
    return TM_OK;
fail:
    tm_free(*k_all);
    tm_free(*v_all);
    *k_all = *v_all = NULL;
    return st;
}

tm_status tm_kv_cache_update(tm_kv_cache *c, int layer, const tm_tensor *k,
                             const tm_tensor *v, tm_tensor **k_all,
                             tm_tensor **v_all, int64_t *offset)
{
    int64_t n, off = 0;
    tm_tensor *ka = NULL, *va = NULL;
    if (!k_all || !v_all)
        return TM_ERR(TM_EINVAL, "k_all and v_all must not be NULL");
    *k_all = *v_all = NULL;
    tm_status st = check_new(__func__, c, layer, k, v, &n);
    if (st) return st;
    if ((st = gather_and_write(c, layer, k, v, n, &ka, &va, &off)))
        return tm__relabel_error(__func__, st);
    *k_all = ka;
    *v_all = va;
    if (offset) *offset = off;
    return TM_OK;
}

/* q (B, H, n, D) for the layer's n new tokens; opts leave the mask, the
 * causal offset and the window to the cache. */
static tm_status check_query(const tm_kv_cache *c, const tm_tensor *q,
                             int64_t n, const tm_sdpa_opts *o)
{
    const char *fn = "tm_kv_cache_attend";
    char buf[TM_SHAPE_BUF];
    tm_status st = tm__check_tensor(fn, q, "q");
    if (st) return st;
    const int64_t *s = tm_shape(q);
    if (tm_ndim(q) != 4 || s[0] != c->batch || s[1] < 1 ||
        s[1] % c->heads || s[2] != n || s[3] != c->dk)
        return tm__errf(TM_ESHAPE, fn, "q has shape %s, expected "
                        "[%lld,H,%lld,%lld] with H a multiple of %lld",
                        tm__fmt_shape(s, tm_ndim(q), buf, sizeof buf),
                        (long long)c->batch, (long long)n, (long long)c->dk,
                        (long long)c->heads);
    if (o && (o->mask || o->causal_offset || o->window))
        return tm__errf(TM_EINVAL, fn, "opts must leave mask (%s), "
                        "causal_offset (%lld) and window (%lld) unset: the "
                        "cache sets them", o->mask ? "set" : "NULL",
                        (long long)o->causal_offset, (long long)o->window);
    return TM_OK;
}

tm_tensor *tm_kv_cache_attend(tm_kv_cache *c, int layer, const tm_tensor *q,
                              const tm_tensor *k, const tm_tensor *v,
                              const tm_sdpa_opts *opts)
{
    static const tm_sdpa_opts zero = {0};
    tm_sdpa_opts o = opts ? *opts : zero;
    tm_tensor *ka = NULL, *va = NULL, *saved[2] = {NULL, NULL}, *out = NULL;
    int64_t n, off = 0;
    if (check_new(__func__, c, layer, k, v, &n) ||
        check_query(c, q, n, opts))
        return NULL;
    kv_layer *L = &c->layer[layer];
    int64_t len0 = L->len, lost0 = L->lost;
    bool as_is = L->ring && n == 1 && L->len >= L->slots;
    if (as_is) {
        /* One query sees every slot of a full ring once its token is in,
         * and softmax ignores key order: attend over the ring itself.  The
         * slot it overwrites is kept to undo a failed call. */
        int64_t s0 = L->len % L->slots;
        tm_tensor *ks = tm_narrow(L->k, 2, s0, 1);
        tm_tensor *vs = tm_narrow(L->v, 2, s0, 1);
        if (ks && vs) {
            saved[0] = tm_clone(ks);
            saved[1] = tm_clone(vs);
        }
        tm_free(ks);
        tm_free(vs);
        if (!saved[0] || !saved[1] || write_tokens(L, k, v, 1)) goto fail;
        advance(L, 1);
        o.causal = false;
        o.window = 0;
        out = tm_sdpa(q, L->k, L->v, &o);
    } else if (!L->ring || L->len + n <= L->slots) {
        /* Positions are slots: write, then attend over a view. */
        if (gather_and_write(c, layer, k, v, n, &ka, &va, &off)) goto fail;
        o.causal = true;
        o.causal_offset = off;
        o.window = L->window;
        if (!(out = tm_sdpa(q, ka, va, &o))) goto fail;
    } else {
        /* A wrapped ring: attend over an ordered copy before the write
         * overwrites what the first new queries see. */
        if (ring_gather(L, k, v, &ka, &va, &off)) goto fail;
        o.causal = true;
        o.causal_offset = off;
        o.window = L->window;
        if (!(out = tm_sdpa(q, ka, va, &o)) || write_tokens(L, k, v, n))
            goto fail;
        advance(L, n);
    }
    if (!out) goto fail;
    tm_free(ka);
    tm_free(va);
    tm_free(saved[0]);
    tm_free(saved[1]);
    return out;
fail:
    tm__relabel_error(__func__, tm_last_status());
    tm_free(out);
    if (saved[0] && saved[1]) {
        /* Put back the overwritten slot; a failure here leaves nothing
         * better to do than report the first error. */
        int64_t s0 = len0 % L->slots;
        tm_tensor *ks = tm_narrow(L->k, 2, s0, 1);
        tm_tensor *vs = tm_narrow(L->v, 2, s0, 1);
        bool prev = tm_no_grad_begin();
        if (ks && vs) {
            tm_copy_(ks, saved[0]);
            tm_copy_(vs, saved[1]);
        }
        tm_no_grad_end(prev);
        tm_free(ks);
        tm_free(vs);
    }
    L->len = len0;
    L->lost = lost0;
    tm_free(ka);
    tm_free(va);
    tm_free(saved[0]);
    tm_free(saved[1]);
    return NULL;
}

tm_status tm_kv_cache_truncate(tm_kv_cache *c, int64_t n)
{
    if (!c) return TM_ERR(TM_EINVAL, "cache is NULL");
    for (int l = 0; l < c->layers; l++) {
        const kv_layer *L = &c->layer[l];
        if (n < 0 || n > L->len)
            return TM_ERR(TM_ERANGE, "cannot truncate to %lld: layer %d "
                          "holds %lld positions", (long long)n, l,
                          (long long)L->len);
        /* The next query, at position n, sees n - W + 1 .. n - 1. */
        if (L->lost > 0 && n - L->window + 1 < L->lost)
            return TM_ERR(TM_ESTATE, "cannot truncate to %lld: layer %d "
                          "(window %lld) no longer holds positions before "
                          "%lld, and a query at %lld needs them from %lld on",
                          (long long)n, l, (long long)L->window,
                          (long long)L->lost, (long long)n,
                          (long long)(n - L->window + 1 > 0 ?
                                      n - L->window + 1 : 0));
    }
    for (int l = 0; l < c->layers; l++) c->layer[l].len = n;
    return TM_OK;
}

tm_status tm_kv_cache_reset(tm_kv_cache *c)
{
    if (!c) return TM_ERR(TM_EINVAL, "cache is NULL");
    for (int l = 0; l < c->layers; l++) {
        c->layer[l].len = 0;
        c->layer[l].lost = 0;
    }
    return TM_OK;
}
