/*
 * harness.h — the C test harness.
 *
 *   TEST(views_share_storage) { ... CHECK(x == y); ... }
 *
 * Tests register themselves; the runner (harness.c) runs them in order,
 * optionally filtered by a substring given on the command line, checks
 * after each that Foundry's allocator is back at its starting byte count
 * (so every test is also a leak test), and ends with "N passed, N failed".
 * A test passes when none of its checks failed.
 */
#ifndef FOUNDRY_TEST_HARNESS_H
#define FOUNDRY_TEST_HARNESS_H

#include "foundry.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*tt_fn)(void);
void tt_register(const char *name, const char *file, tt_fn fn);
/* Records a failure of the running test (printf-style). */
void tt_fail(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Failures so far in the running test. */
int tt_failures(void);
/* Called after each test, before its leak check (weak: a runner may
 * define its own). */
void tt_after_test(void);

#define TEST(name)                                                            \
    static void name(void);                                                   \
    __attribute__((constructor)) static void name##__reg(void)                \
    {                                                                         \
        tt_register(#name, __FILE__, name);                                   \
    }                                                                         \
    static void name(void)

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) tt_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);         \
    } while (0)

/* Stops the test (after recording) when cond is false. */
#define REQUIRE(cond)                                                         \
    do {                                                                      \
        if (!(cond)) {                                                        \
            tt_fail(__FILE__, __LINE__, "REQUIRE(%s) [last error: %s]",      \
                    #cond, tm_last_error());                                  \
            return;                                                           \
        }                                                                     \
    } while (0)

#define CHECK_INT(a, b)                                                       \
    do {                                                                      \
        long long a_ = (long long)(a), b_ = (long long)(b);                   \
        if (a_ != b_)                                                         \
            tt_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld",    \
                    #a, a_, #b, b_);                                          \
    } while (0)

/* |a - b| <= tol (NaN equals NaN; infinities must match exactly). */
#define CHECK_NEAR(a, b, tol)                                                 \
    do {                                                                      \
        double a_ = (double)(a), b_ = (double)(b);                            \
        if (!tt_near(a_, b_, 0.0, (tol)))                                     \
            tt_fail(__FILE__, __LINE__, "%s == %.17g, expected %.17g (tol %g)",\
                    #a, a_, b_, (double)(tol));                               \
    } while (0)

/* `expr` (a status) must equal `status` and tm_last_error() must contain
 * `substr`. */
#define CHECK_STATUS(expr, status, substr)                                    \
    do {                                                                      \
        tm_clear_error();                                                     \
        tm_status s_ = (expr);                                                \
        tt_check_error(__FILE__, __LINE__, #expr, s_ == (status), (status),   \
                       (substr));                                             \
    } while (0)

/* `expr` (a pointer) must be NULL, with tm_last_status() == status and a
 * message containing `substr`.  A non-NULL result is freed as a tensor. */
#define CHECK_NULL_ERR(expr, status, substr)                                  \
    do {                                                                      \
        tm_clear_error();                                                     \
        tm_tensor *p_ = (expr);                                               \
        tt_check_error(__FILE__, __LINE__, #expr, p_ == NULL, (status),       \
                       (substr));                                             \
        tm_free(p_);                                                          \
    } while (0)

bool tt_near(double got, double want, double rtol, double atol);
void tt_check_error(const char *file, int line, const char *expr, bool ok,
                    tm_status status, const char *substr);

/* Every element of `t` (any dtype/strides) close to want[] (row-major):
 * |got - want| <= atol + rtol * |want|. */
void tt_check_values(const char *file, int line, const tm_tensor *t,
                     const double *want, int64_t n, double rtol, double atol);
#define CHECK_VALUES(t, want, n, rtol, atol)                                  \
    tt_check_values(__FILE__, __LINE__, (t), (want), (n), (rtol), (atol))

/* Shape of t equals shape[ndim]. */
void tt_check_shape(const char *file, int line, const tm_tensor *t,
                    const int64_t *shape, int ndim);
#define CHECK_SHAPE(t, ...)                                                   \
    tt_check_shape(__FILE__, __LINE__, (t), (int64_t[]){__VA_ARGS__},         \
                   (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

/* Runs seq once to count its allocations (there must be at least
 * min_allocs), then once per allocation with that one failing: every run
 * must return TM_ENOMEM, leave TM_ENOMEM and an "out of memory" message in
 * tm_last_error() and return the allocator's byte count to where it was. */
void tt_check_every_alloc_failure(const char *file, int line,
                                  tm_status (*seq)(void),
                                  uint64_t min_allocs);
#define CHECK_EVERY_ALLOC_FAILURE(seq, min_allocs)                            \
    tt_check_every_alloc_failure(__FILE__, __LINE__, (seq), (min_allocs))

/* A tensor from a double list (converted to dt).  Test helper; returns a
 * new reference. */
tm_tensor *tt_tensor(const double *v, const int64_t *shape, int ndim,
                     tm_dtype dt);

#endif
