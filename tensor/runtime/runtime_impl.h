/*
 * runtime_impl.h — the runtime under every module: errors and their
 * messages, the one allocator, the thread pool.  Internal; never
 * installed.
 */
#ifndef FOUNDRY_RUNTIME_IMPL_H
#define FOUNDRY_RUNTIME_IMPL_H

#include "foundry/base.h"

/* ---------------------------------------------------------------- errors */

/* Records "fn: message" for the calling thread; returns `s`. */
tm_status tm__errf(tm_status s, const char *fn, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Error naming the enclosing function. */
#define TM_ERR(status, ...) tm__errf((status), __func__, __VA_ARGS__)

/* Writes "[2,3]" into buf (size >= 8 + 21 * ndim is always enough). */
char *tm__fmt_shape(const int64_t *shape, int ndim, char *buf, size_t size);
#define TM_SHAPE_BUF 192

/* Re-records the calling thread's last error as coming from `fn`: a
 * leading "name: " prefix (a kernel's or helper's own name) is replaced.
 * Returns `st`. */
tm_status tm__relabel_error(const char *fn, tm_status st);

/* Internal invariant (a bug if it fails): logs and returns `ret`. */
#define TM_ASSERT(cond, ret)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            tm__errf(TM_ESTATE, __func__, "internal error: %s (%s:%d)",       \
                     #cond, __FILE__, __LINE__);                              \
            return ret;                                                       \
        }                                                                     \
    } while (0)

/* ------------------------------------------------------------- allocator */

/* 64-byte aligned memory of at least `bytes` (0 is allowed); NULL with
 * TM_ENOMEM set (naming `fn`) on failure or injected failure. */
void *tm__alloc(size_t bytes, const char *fn);
/* Same, zero-filled. */
void *tm__calloc(size_t bytes, const char *fn);
/* Returns memory from tm__alloc (NULL is a no-op). */
void tm__dealloc(void *ptr);

/* ------------------------------------------------------------ threading */

/* Runs fn(begin, end, ctx) over [0, n) split into at most the pool's thread
 * count of contiguous ranges of at least `grain` items each (one range on
 * the calling thread when n < 2 * grain).  The split depends only on n,
 * grain and the thread count. */
typedef void (*tm__range_fn)(int64_t begin, int64_t end, void *ctx);
void tm__parallel_for(int64_t n, int64_t grain, tm__range_fn fn, void *ctx);
/* Runs fn(i, nparts, ctx) for i in [0, nparts) on the pool (nparts <= the
 * thread count is sensible; any value works).  Returns when all are done. */
typedef void (*tm__part_fn)(int part, int nparts, void *ctx);
void tm__parallel_parts(int nparts, tm__part_fn fn, void *ctx);

#endif
