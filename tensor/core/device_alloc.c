/* device_alloc.c — the caching allocator in front of every accelerator's
 * `alloc`/`free`, and the per-device memory statistics.
 *
 * Storage sizes round up to classes four per power of two (512, 640, 768,
 * 896, 1024, 1280, ...; at most 25% waste), and a freed block waits in
 * its device's free list for the next storage of its class, so a training
 * step allocates nothing from the backend once the first step has run.
 * Reuse is safe without waiting: a device runs its work in queue order,
 * so work queued after the reuse runs after the work that used the block.
 * The CPU does not come through here: its storage is host memory from the
 * runtime's allocator, which caches the same way. */
#include "tensor_impl.h"

#include <stdio.h>
#include <string.h>

#define TM__DEV_MIN 512
#define TM__DEV_NCLASSES 160
#define TM__DEV_DEFAULT_LIMIT ((size_t)1 << 30)

typedef struct tm__dev_block {
    void *handle;
    struct tm__dev_block *next;
} tm__dev_block;

struct tm__dev_pool {
    pthread_mutex_t lock;
    tm__dev_block *free_list[TM__DEV_NCLASSES];
    tm_mem_stats stats;
    size_t limit;
};

/* The class of `bytes` and its block size; -1 (block = bytes rounded to
 * 512) above the largest class. */
static int tm__dev_class(size_t bytes, size_t *block)
{
    if (bytes <= TM__DEV_MIN) {
        *block = TM__DEV_MIN;
        return 0;
    }
    size_t p = TM__DEV_MIN;
    int exp = 0;
    while (p < ((size_t)1 << 62) && p * 2 < bytes) {
        p *= 2;
        exp++;
    }
    size_t step = p / 4, q = (bytes - p + step - 1) / step; /* 1..4 */
    int cls = 1 + exp * 4 + (int)(q - 1);
    if (cls >= TM__DEV_NCLASSES) {
        *block = (bytes + TM__DEV_MIN - 1) / TM__DEV_MIN * TM__DEV_MIN;
        return -1;
    }
    *block = p + q * step;
    return cls;
}

tm__dev_pool *tm__dev_pool_new(void)
{
    tm__dev_pool *p = tm__calloc(sizeof *p, __func__);
    if (!p) return NULL;
    pthread_mutex_init(&p->lock, NULL);
    p->limit = TM__DEV_DEFAULT_LIMIT;
    return p;
}

/* The block size of class c (the inverse of tm__dev_class). */
static size_t tm__dev_class_size(int c)
{
    if (c == 0) return TM__DEV_MIN;
    size_t p = (size_t)TM__DEV_MIN << ((c - 1) / 4);
    return p + (size_t)((c - 1) % 4 + 1) * (p / 4);
}

/* Hands cached blocks back to the backend, largest first, until at most
 * `keep` bytes stay cached.  The backend's free runs without the lock. */
static void tm__dev_trim(tm_ctx *cx, size_t keep)
{
    tm__dev_pool *p = cx->pool;
    for (;;) {
        tm__dev_block *b = NULL;
        pthread_mutex_lock(&p->lock);
        for (int c = TM__DEV_NCLASSES - 1;
             c >= 0 && !b && p->stats.cached_bytes > keep; c--) {
            if ((b = p->free_list[c])) {
                p->free_list[c] = b->next;
                p->stats.cached_bytes -= tm__dev_class_size(c);
            }
        }
        pthread_mutex_unlock(&p->lock);
        if (!b) return;
        cx->backend->free(cx, b->handle);
        tm__dealloc(b);
    }
}

void *tm__dev_alloc(const char *fn, tm_ctx *cx, size_t bytes, size_t *block)
{
    tm__dev_pool *p = cx->pool;
    size_t sz;
    int cls = tm__dev_class(bytes, &sz);
    *block = sz;
    pthread_mutex_lock(&p->lock);
    tm__dev_block *b = cls >= 0 ? p->free_list[cls] : NULL;
    if (b) {
        p->free_list[cls] = b->next;
        p->stats.cached_bytes -= sz;
    }
    pthread_mutex_unlock(&p->lock);
    void *h = NULL;
    if (b) {
        h = b->handle;
        tm__dealloc(b);
    } else {
        h = cx->backend->alloc(cx, sz);
        if (!h) { /* empty the cache into the backend and try once more */
            tm__dev_trim(cx, 0);
            h = cx->backend->alloc(cx, sz);
        }
        if (!h) {
            char why[256];
            snprintf(why, sizeof why, "%s", tm_last_error());
            tm__errf(TM_ENOMEM, fn, "out of memory on %s allocating %zu "
                     "bytes: %s", tm_device_name(cx->device), bytes, why);
            return NULL;
        }
    }
    pthread_mutex_lock(&p->lock);
    p->stats.allocs++; /* successful allocations, as the host counts */
    p->stats.current_bytes += sz;
    if (p->stats.current_bytes > p->stats.peak_bytes)
        p->stats.peak_bytes = p->stats.current_bytes;
    pthread_mutex_unlock(&p->lock);
    return h;
}

void tm__dev_free(tm_ctx *cx, void *handle, size_t block)
{
    tm__dev_pool *p = cx->pool;
    size_t sz;
    int cls = tm__dev_class(block, &sz);
    tm__dev_block *b = cls >= 0 ? tm__alloc(sizeof *b, __func__) : NULL;
    bool keep = false;
    pthread_mutex_lock(&p->lock);
    p->stats.current_bytes -= block;
    p->stats.frees++;
    if (b && p->stats.cached_bytes + sz <= p->limit) {
        b->handle = handle;
        b->next = p->free_list[cls];
        p->free_list[cls] = b;
        p->stats.cached_bytes += sz;
        keep = true;
    }
    pthread_mutex_unlock(&p->lock);
    if (!keep) {
        tm__dealloc(b);
        cx->backend->free(cx, handle);
    }
}

/* ------------------------------------------------------------ public API */

static tm_ctx *tm__pool_ctx(const char *fn, tm_device dev)
{
    tm_ctx *cx = tm_device_ctx(dev);
    if (!cx) tm__errf(tm_last_status(), fn, "%s", tm_last_error());
    return cx;
}

tm_status tm_device_memory_stats(tm_device dev, tm_mem_stats *out)
{
    if (!out) return TM_ERR(TM_EINVAL, "out is NULL");
    tm_ctx *cx = tm__pool_ctx(__func__, dev);
    if (!cx) return tm_last_status();
    if (!cx->pool) {
        tm_memory_stats(out);
        return TM_OK;
    }
    pthread_mutex_lock(&cx->pool->lock);
    *out = cx->pool->stats;
    pthread_mutex_unlock(&cx->pool->lock);
    return TM_OK;
}

tm_status tm_device_empty_cache(tm_device dev)
{
    tm_ctx *cx = tm__pool_ctx(__func__, dev);
    if (!cx) return tm_last_status();
    if (!cx->pool) tm_memory_release_cache();
    else tm__dev_trim(cx, 0);
    return TM_OK;
}

tm_status tm_device_set_cache_limit(tm_device dev, size_t bytes)
{
    tm_ctx *cx = tm__pool_ctx(__func__, dev);
    if (!cx) return tm_last_status();
    if (!cx->pool) {
        tm_memory_set_cache_limit(bytes);
        return TM_OK;
    }
    pthread_mutex_lock(&cx->pool->lock);
    cx->pool->limit = bytes;
    pthread_mutex_unlock(&cx->pool->lock);
    tm__dev_trim(cx, bytes);
    return TM_OK;
}
