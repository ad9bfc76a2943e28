/* alloc.c — the one allocator: 64-byte aligned blocks, a size-class cache,
 * byte accounting and fault injection. */
#include "runtime_impl.h"

#include <stdatomic.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TM__ALIGN 64
/* Sizes round up to classes four per power of two (64, 80, 96, 112, 128,
 * 160, ...), so at most 25% is wasted.  Blocks above TM__MAX_CACHED go
 * straight back to the system. */
#define TM__MAX_CACHED ((size_t)64 << 20)
#define TM__NCLASSES 128

/* Sits in the 64 bytes before every block we hand out. */
typedef struct tm__hdr {
    size_t requested; /* bytes the caller asked for (accounting) */
    size_t capacity;  /* usable bytes after the header */
    int cls;          /* size class, or -1 when not cacheable */
    struct tm__hdr *next_free;
} tm__hdr;

_Static_assert(sizeof(tm__hdr) <= TM__ALIGN, "header must fit its slot");

static pthread_mutex_t tm__lock = PTHREAD_MUTEX_INITIALIZER;
static tm__hdr *tm__free_list[TM__NCLASSES];
static tm_mem_stats tm__stats;
static size_t tm__cache_limit = (size_t)256 << 20;
static _Atomic int64_t tm__fail_countdown; /* > 0: fail when it reaches 0 */
static _Atomic uint64_t tm__requests;

/* Class index and capacity for `bytes`, or -1 if not cacheable. */
static int tm__size_class(size_t bytes, size_t *capacity)
{
    if (bytes > TM__MAX_CACHED) {
        *capacity = bytes;
        return -1;
    }
    size_t cap = 64;
    int cls = 0;
    if (bytes <= 64) {
        *capacity = 64;
        return 0;
    }
    /* Find the power of two p with p < bytes <= 2p, then the quarter step. */
    size_t p = 64;
    int exp = 0;
    while (p * 2 < bytes) {
        p *= 2;
        exp++;
    }
    size_t step = p / 4;
    size_t q = (bytes - p + step - 1) / step; /* 1..4 */
    cap = p + q * step;
    cls = 1 + exp * 4 + (int)(q - 1);
    *capacity = cap;
    return cls < TM__NCLASSES ? cls : -1;
}

static bool tm__should_fail(void)
{
    atomic_fetch_add(&tm__requests, 1);
    int64_t c = atomic_load(&tm__fail_countdown);
    while (c > 0) {
        if (atomic_compare_exchange_weak(&tm__fail_countdown, &c, c - 1))
            return c == 1;
    }
    return false;
}

void *tm__alloc(size_t bytes, const char *fn)
{
    if (tm__should_fail()) {
        tm__errf(TM_ENOMEM, fn, "out of memory allocating %zu bytes "
                 "(injected failure)", bytes);
        return NULL;
    }
    size_t cap;
    int cls = tm__size_class(bytes, &cap);
    tm__hdr *h = NULL;
    pthread_mutex_lock(&tm__lock);
    if (cls >= 0 && tm__free_list[cls]) {
        h = tm__free_list[cls];
        tm__free_list[cls] = h->next_free;
        tm__stats.cached_bytes -= h->capacity;
    }
    pthread_mutex_unlock(&tm__lock);
    if (!h) {
        void *raw = NULL;
        if (cap > SIZE_MAX - TM__ALIGN ||
            posix_memalign(&raw, TM__ALIGN, TM__ALIGN + cap) != 0 || !raw) {
            tm__errf(TM_ENOMEM, fn, "out of memory allocating %zu bytes",
                     bytes);
            return NULL;
        }
        h = raw;
        h->capacity = cap;
        h->cls = cls;
    }
    h->requested = bytes;
    h->next_free = NULL;
    pthread_mutex_lock(&tm__lock);
    tm__stats.current_bytes += bytes;
    if (tm__stats.current_bytes > tm__stats.peak_bytes)
        tm__stats.peak_bytes = tm__stats.current_bytes;
    tm__stats.allocs++;
    pthread_mutex_unlock(&tm__lock);
    return (char *)h + TM__ALIGN;
}

void *tm__calloc(size_t bytes, const char *fn)
{
    void *p = tm__alloc(bytes, fn);
    if (p) memset(p, 0, bytes);
    return p;
}

void tm__dealloc(void *ptr)
{
    if (!ptr) return;
    tm__hdr *h = (tm__hdr *)((char *)ptr - TM__ALIGN);
    bool keep = false;
    pthread_mutex_lock(&tm__lock);
    tm__stats.current_bytes -= h->requested;
    tm__stats.frees++;
    if (h->cls >= 0 &&
        tm__stats.cached_bytes + h->capacity <= tm__cache_limit) {
        h->next_free = tm__free_list[h->cls];
        tm__free_list[h->cls] = h;
        tm__stats.cached_bytes += h->capacity;
        keep = true;
    }
    pthread_mutex_unlock(&tm__lock);
    if (!keep) free(h);
}

void tm_memory_stats(tm_mem_stats *out)
{
    if (!out) return;
    pthread_mutex_lock(&tm__lock);
    *out = tm__stats;
    pthread_mutex_unlock(&tm__lock);
}

void tm_memory_reset_peak(void)
{
    pthread_mutex_lock(&tm__lock);
    tm__stats.peak_bytes = tm__stats.current_bytes;
    pthread_mutex_unlock(&tm__lock);
}

/* Frees cached blocks until at most `keep` bytes stay cached.  Called with
 * the lock held. */
static void tm__trim_locked(size_t keep)
{
    for (int c = TM__NCLASSES - 1; c >= 0 && tm__stats.cached_bytes > keep;
         c--) {
        while (tm__free_list[c] && tm__stats.cached_bytes > keep) {
            tm__hdr *h = tm__free_list[c];
            tm__free_list[c] = h->next_free;
            tm__stats.cached_bytes -= h->capacity;
            free(h);
        }
    }
}

void tm_memory_release_cache(void)
{
    pthread_mutex_lock(&tm__lock);
    tm__trim_locked(0);
    pthread_mutex_unlock(&tm__lock);
}

void tm_memory_set_cache_limit(size_t bytes)
{
    pthread_mutex_lock(&tm__lock);
    tm__cache_limit = bytes;
    tm__trim_locked(bytes);
    pthread_mutex_unlock(&tm__lock);
}

void tm_alloc_fail_after(int64_t n)
{
    atomic_store(&tm__fail_countdown, n > 0 ? n : 0);
}

uint64_t tm_alloc_requests(void) { return atomic_load(&tm__requests); }
