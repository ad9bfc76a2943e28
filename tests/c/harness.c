/* harness.c — test registry and runner. */
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>

#define TT_MAX_TESTS 4096

typedef struct {
    const char *name, *file;
    tt_fn fn;
} tt_test;

static tt_test tt_tests[TT_MAX_TESTS];
static int tt_ntests;
static int tt_cur_failures;
static const char *tt_cur_name;

void tt_register(const char *name, const char *file, tt_fn fn)
{
    if (tt_ntests < TT_MAX_TESTS)
        tt_tests[tt_ntests++] = (tt_test){name, file, fn};
}

void tt_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    tt_cur_failures++;
    if (tt_cur_failures > 20) return; /* keep one broken test readable */
    fprintf(stdout, "  FAIL %s (%s:%d): ", tt_cur_name, file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
}

int tt_failures(void) { return tt_cur_failures; }

bool tt_near(double got, double want, double rtol, double atol)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    if (isnan(got) || isinf(got)) return false;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

void tt_check_error(const char *file, int line, const char *expr, bool ok,
                    tm_status status, const char *substr)
{
    if (!ok) {
        tt_fail(file, line, "%s: expected failure %s, got status %s (%s)",
                expr, tm_status_name(status),
                tm_status_name(tm_last_status()), tm_last_error());
        return;
    }
    if (tm_last_status() != status)
        tt_fail(file, line, "%s: last status %s, expected %s (%s)", expr,
                tm_status_name(tm_last_status()), tm_status_name(status),
                tm_last_error());
    if (substr && !strstr(tm_last_error(), substr))
        tt_fail(file, line, "%s: message \"%s\" lacks \"%s\"", expr,
                tm_last_error(), substr);
}

void tt_check_values(const char *file, int line, const tm_tensor *t,
                     const double *want, int64_t n, double rtol, double atol)
{
    if (!t) {
        tt_fail(file, line, "tensor is NULL (%s)", tm_last_error());
        return;
    }
    if (tm_numel(t) != n) {
        tt_fail(file, line, "tensor has %lld elements, expected %lld",
                (long long)tm_numel(t), (long long)n);
        return;
    }
    double *got = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!got || tm_copy_to_buffer(t, got, sizeof(double) * (size_t)n,
                                  TM_F64)) {
        tt_fail(file, line, "cannot read tensor: %s", tm_last_error());
        free(got);
        return;
    }
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!tt_near(got[i], want[i], rtol, atol) && bad++ < 5)
            tt_fail(file, line, "element %lld is %.17g, expected %.17g",
                    (long long)i, got[i], want[i]);
    }
    free(got);
}

void tt_check_shape(const char *file, int line, const tm_tensor *t,
                    const int64_t *shape, int ndim)
{
    if (!t) {
        tt_fail(file, line, "tensor is NULL (%s)", tm_last_error());
        return;
    }
    bool same = tm_ndim(t) == ndim;
    for (int i = 0; same && i < ndim; i++) same = tm_shape(t)[i] == shape[i];
    if (!same) {
        char buf[128];
        tt_fail(file, line, "shape is %s", tm_describe(t, buf, sizeof buf));
    }
}

void tt_check_every_alloc_failure(const char *file, int line,
                                  tm_status (*seq)(void),
                                  uint64_t min_allocs)
{
    tm_alloc_fail_after(0);
    uint64_t r0 = tm_alloc_requests();
    tm_clear_error();
    tm_status st = seq();
    uint64_t n = tm_alloc_requests() - r0;
    if (st != TM_OK || n < min_allocs) {
        tt_fail(file, line, "sequence: status %s with %llu allocations "
                "(need TM_OK and >= %llu): %s", tm_status_name(st),
                (unsigned long long)n, (unsigned long long)min_allocs,
                tm_last_error());
        return;
    }
    tm_mem_stats base;
    tm_memory_stats(&base);
    int unclean = 0;
    for (uint64_t i = 1; i <= n; i++) {
        tm_clear_error();
        tm_alloc_fail_after((int64_t)i);
        st = seq();
        tm_alloc_fail_after(0);
        tm_mem_stats now;
        tm_memory_stats(&now);
        bool ok = st == TM_ENOMEM && tm_last_status() == TM_ENOMEM &&
                  strstr(tm_last_error(), "out of memory") &&
                  now.current_bytes == base.current_bytes;
        if (!ok && unclean++ < 5)
            tt_fail(file, line,
                    "failing allocation %llu of %llu: status %s, message "
                    "\"%s\", %zu bytes held (baseline %zu)",
                    (unsigned long long)i, (unsigned long long)n,
                    tm_status_name(st), tm_last_error(), now.current_bytes,
                    base.current_bytes);
    }
}

tm_tensor *tt_tensor(const double *v, const int64_t *shape, int ndim,
                     tm_dtype dt)
{
    tm_tensor *f = tm_from_buffer(v, shape, ndim, TM_F64);
    if (!f) return NULL;
    tm_tensor *t = tm_to_dtype(f, dt);
    tm_free(f);
    return t;
}

/* Runs after every test, before the leak check; a runner may override it
 * (the backend runner synchronizes its devices and empties their caches,
 * whose bookkeeping is host memory). */
__attribute__((weak)) void tt_after_test(void) {}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    /* Tests exercise failure paths on purpose: keep their log lines out of
     * the report unless asked for with FOUNDRY_LOG. */
    if (!getenv("FOUNDRY_LOG")) tm_set_log_level(TM_LOG_OFF);
    for (int i = 0; i < tt_ntests; i++) {
        tt_test *t = &tt_tests[i];
        bool selected = argc < 2;
        for (int a = 1; a < argc; a++)
            if (strstr(t->name, argv[a]) || strstr(t->file, argv[a]))
                selected = true;
        if (!selected) continue;
        tt_cur_name = t->name;
        tt_cur_failures = 0;
        tm_clear_error();
        tm_mem_stats before, after;
        tm_memory_stats(&before);
        t->fn();
        tt_after_test();
        tm_alloc_fail_after(0);
        tm_memory_stats(&after);
        if (after.current_bytes != before.current_bytes)
            tt_fail(t->file, 0, "allocator holds %zu bytes after the test, "
                    "%zu before (leak)", after.current_bytes,
                    before.current_bytes);
        if (tt_cur_failures) {
            failed++;
            printf("FAIL %s\n", t->name);
        } else {
            passed++;
            if (getenv("TT_VERBOSE")) printf("ok   %s\n", t->name);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
