/*
 * foundry/base.h — status codes, errors, logging, memory accounting, threads.
 *
 * Every Foundry function reports failure in one way: a function that returns a
 * pointer returns NULL, a function that returns tm_status returns a negative
 * code.  In both cases tm_last_error() then holds a message for the calling
 * thread that names the function and the offending values, for example
 *   "tm_matmul: shapes [3,4] and [5,6] do not match: 4 != 5".
 * The library never aborts or exits on anything a caller can cause.
 */
#ifndef FOUNDRY_BASE_H
#define FOUNDRY_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TM_VERSION_MAJOR 0
#define TM_VERSION_MINOR 1
#define TM_VERSION_PATCH 0

/* Returns the library version as "MAJOR.MINOR.PATCH".  Static string. */
const char *tm_version(void);

/* ---------------------------------------------------------------- status */

/* X(name, value, description).  Values are explicit and only ever appended. */
#define TM_STATUS_LIST(X)                                                    \
    X(TM_OK, 0, "success")                                                   \
    X(TM_EINVAL, -1, "invalid argument")                                     \
    X(TM_ESHAPE, -2, "shape mismatch")                                       \
    X(TM_EDTYPE, -3, "unsupported dtype")                                    \
    X(TM_ENOMEM, -4, "out of memory")                                        \
    X(TM_ERANGE, -5, "index out of range")                                   \
    X(TM_EOVERFLOW, -6, "size overflow")                                     \
    X(TM_EDEVICE, -7, "device unavailable or device mismatch")               \
    X(TM_EIO, -8, "input/output error")                                      \
    X(TM_EFORMAT, -9, "malformed data")                                      \
    X(TM_ESTATE, -10, "invalid state")                                       \
    X(TM_EUNSUPPORTED, -11, "unsupported operation")

typedef enum tm_status {
#define TM__STATUS_ENUM(name, value, text) name = value,
    TM_STATUS_LIST(TM__STATUS_ENUM)
#undef TM__STATUS_ENUM
} tm_status;

/* Human description of a status ("shape mismatch").  Static string; unknown
 * codes give "unknown status". */
const char *tm_status_str(tm_status s);
/* The enum name of a status ("TM_ESHAPE").  Static string. */
const char *tm_status_name(tm_status s);

/* ---------------------------------------------------------------- errors */

/* The message of the most recent failure on the calling thread, or "" if
 * none.  Borrowed: valid until the next Foundry call on this thread.
 * Successful calls do not clear it; use tm_clear_error() for that. */
const char *tm_last_error(void);
/* The status of the most recent failure on the calling thread (TM_OK if
 * none since the last tm_clear_error()). */
tm_status tm_last_status(void);
/* Clears the calling thread's error message and status. */
void tm_clear_error(void);
/* Records a failure for the calling thread (printf-style message) and
 * returns `s`.  For libraries built on Foundry that want one error channel. */
tm_status tm_set_error(tm_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --------------------------------------------------------------- logging */

typedef enum tm_log_level {
    TM_LOG_DEBUG = 0,
    TM_LOG_INFO = 1,
    TM_LOG_WARN = 2,
    TM_LOG_ERROR = 3,
    TM_LOG_OFF = 4
} tm_log_level;

/* A log sink.  `msg` is borrowed for the duration of the call. */
typedef void (*tm_log_fn)(tm_log_level level, const char *msg, void *user);

/* Messages below `level` are dropped.  The default is TM_LOG_WARN, or the
 * value of the environment variable FOUNDRY_LOG (debug|info|warn|error|off)
 * read at the first log call.  Thread-safe. */
void tm_set_log_level(tm_log_level level);
tm_log_level tm_get_log_level(void);
/* Routes messages to `fn` (NULL restores the default: one line on stderr).
 * `fn` may be called from any thread. */
void tm_set_log_callback(tm_log_fn fn, void *user);
/* Emits one message at `level`. */
void tm_logf(tm_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---------------------------------------------------------------- memory */

/* Allocator accounting.  All tensor memory and all of Foundry's own
 * bookkeeping go through one 64-byte aligned allocator with a size-class
 * cache, so training loops do not hit malloc every step. */
typedef struct tm_mem_stats {
    size_t current_bytes; /* bytes handed out and not yet returned */
    size_t peak_bytes;    /* high-water mark of current_bytes */
    size_t cached_bytes;  /* bytes held in the cache for reuse */
    uint64_t allocs;      /* successful allocations so far */
    uint64_t frees;       /* releases so far */
} tm_mem_stats;

/* Fills *out with the allocator's counters.  Thread-safe. */
void tm_memory_stats(tm_mem_stats *out);
/* Sets peak_bytes to current_bytes. */
void tm_memory_reset_peak(void);
/* Returns every cached block to the system. */
void tm_memory_release_cache(void);
/* Caps the cache (default 256 MiB); blocks beyond it are released at once. */
void tm_memory_set_cache_limit(size_t bytes);

/* Fault injection for tests: the n-th allocation from now (n = 1: the next
 * one) fails as if the system were out of memory; every later one succeeds
 * again.  n <= 0 disables injection.  Process-wide. */
void tm_alloc_fail_after(int64_t n);
/* Number of allocation requests so far (successful or not). */
uint64_t tm_alloc_requests(void);

/* --------------------------------------------------------------- threads */

/* Sets the number of threads large ops are split across.  n <= 0 restores
 * the default: FOUNDRY_NUM_THREADS if set, else the number of online CPUs.
 * Elementwise results are bitwise identical for any thread count;
 * reductions are deterministic for a given thread count. */
void tm_set_num_threads(int n);
int tm_get_num_threads(void);

#ifdef __cplusplus
}
#endif
#endif
