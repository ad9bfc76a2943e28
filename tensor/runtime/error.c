/* error.c — status strings, thread-local errors, logging. */
#include "runtime_impl.h"

#include <stdatomic.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TM__STR(x) #x
#define TM__XSTR(x) TM__STR(x)

const char *tm_version(void)
{
    return TM__XSTR(TM_VERSION_MAJOR) "." TM__XSTR(TM_VERSION_MINOR) "."
        TM__XSTR(TM_VERSION_PATCH);
}

const char *tm_status_str(tm_status s)
{
    switch (s) {
#define TM__CASE(name, value, text) case name: return text;
        TM_STATUS_LIST(TM__CASE)
#undef TM__CASE
    }
    return "unknown status";
}

const char *tm_status_name(tm_status s)
{
    switch (s) {
#define TM__CASE(name, value, text) case name: return #name;
        TM_STATUS_LIST(TM__CASE)
#undef TM__CASE
    }
    return "TM_EUNKNOWN";
}

/* Fixed-size thread-local buffer: recording an error never allocates, so
 * an out-of-memory failure can always be reported. */
static _Thread_local char tm__err_msg[512];
static _Thread_local tm_status tm__err_status = TM_OK;

const char *tm_last_error(void) { return tm__err_msg; }
tm_status tm_last_status(void) { return tm__err_status; }

void tm_clear_error(void)
{
    tm__err_msg[0] = '\0';
    tm__err_status = TM_OK;
}

static tm_status tm__verr(tm_status s, const char *fn, const char *fmt,
                          va_list ap)
{
    /* Format into a scratch buffer first: arguments may point into the
     * current message (e.g. re-raising tm_last_error()). */
    char tmp[sizeof tm__err_msg];
    int n = 0;
    if (fn) n = snprintf(tmp, sizeof tmp, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof tmp) n = 0;
    vsnprintf(tmp + n, sizeof tmp - (size_t)n, fmt, ap);
    memcpy(tm__err_msg, tmp, sizeof tmp);
    tm__err_status = s;
    tm_logf(TM_LOG_DEBUG, "error %s: %s", tm_status_name(s), tm__err_msg);
    return s;
}

tm_status tm_set_error(tm_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tm__verr(s, NULL, fmt, ap);
    va_end(ap);
    return s;
}

tm_status tm__errf(tm_status s, const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tm__verr(s, fn, fmt, ap);
    va_end(ap);
    return s;
}

tm_status tm__relabel_error(const char *fn, tm_status st)
{
    char msg[sizeof tm__err_msg];
    const char *m = tm__err_msg, *colon = strstr(m, ": ");
    if (colon && !memchr(m, ' ', (size_t)(colon - m))) m = colon + 2;
    snprintf(msg, sizeof msg, "%s", m);
    return tm__errf(st, fn, "%s", msg);
}

char *tm__fmt_shape(const int64_t *shape, int ndim, char *buf, size_t size)
{
    size_t n = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    n += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ",%lld" : "%lld",
                              (long long)shape[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

/* --------------------------------------------------------------- logging */

static pthread_mutex_t tm__log_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int tm__log_level = -1; /* -1: not yet read from the env */
static tm_log_fn tm__log_cb;
static void *tm__log_user;

static int tm__log_level_from_env(void)
{
    const char *e = getenv("FOUNDRY_LOG");
    if (!e) return TM_LOG_WARN;
    static const char *names[] = {"debug", "info", "warn", "error", "off"};
    for (int i = 0; i < 5; i++)
        if (strcmp(e, names[i]) == 0) return i;
    return TM_LOG_WARN;
}

void tm_set_log_level(tm_log_level level)
{
    if (level < TM_LOG_DEBUG) level = TM_LOG_DEBUG;
    if (level > TM_LOG_OFF) level = TM_LOG_OFF;
    atomic_store(&tm__log_level, (int)level);
}

tm_log_level tm_get_log_level(void)
{
    int l = atomic_load(&tm__log_level);
    if (l < 0) {
        int want = tm__log_level_from_env();
        int expected = -1;
        atomic_compare_exchange_strong(&tm__log_level, &expected, want);
        l = atomic_load(&tm__log_level);
    }
    return (tm_log_level)l;
}

void tm_set_log_callback(tm_log_fn fn, void *user)
{
    pthread_mutex_lock(&tm__log_lock);
    tm__log_cb = fn;
    tm__log_user = user;
    pthread_mutex_unlock(&tm__log_lock);
}

void tm_logf(tm_log_level level, const char *fmt, ...)
{
    if (level >= TM_LOG_OFF || level < tm_get_log_level()) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    static const char *tags[] = {"debug", "info", "warn", "error"};
    pthread_mutex_lock(&tm__log_lock);
    if (tm__log_cb)
        tm__log_cb(level, msg, tm__log_user);
    else
        fprintf(stderr, "foundry %s: %s\n", tags[level], msg);
    pthread_mutex_unlock(&tm__log_lock);
}
