/*
 * test_progress.c — progress output: the plain line format, bars redrawn
 * in place, unknown totals, metrics, silence, idempotent finish.
 */
#include "harness.h"

#include <stdlib.h>

/* Everything written to f so far (free()). */
static char *contents(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    rewind(f);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fseek(f, 0, SEEK_END);
    return s;
}

static int count_char(const char *s, char c)
{
    int k = 0;
    for (; *s; s++) k += *s == c;
    return k;
}

TEST(progress_plain_lines_show_percent_count_rate_eta_and_metrics)
{
    FILE *f = tmpfile();
    REQUIRE(f);
    tm_progress *p = tm_progress_new("train", 10, "step", TM_PROGRESS_PLAIN, f);
    REQUIRE(p);
    tm_progress_set_interval(p, 0);
    tm_progress_set_metric(p, "loss", 2.5);
    tm_progress_update(p, 5);
    tm_progress_set_metric(p, "loss", 2.25);   /* replaces, keeps its place */
    tm_progress_set_metric(p, "lr", 0.001);
    tm_progress_update(p, 5);
    tm_progress_finish(p);
    tm_progress_finish(p);                     /* idempotent */
    tm_progress_update(p, 1);                  /* after finish: silent */
    CHECK_INT(tm_progress_count(p), 11);
    char *s = contents(f);
    REQUIRE(s);
    CHECK_INT(count_char(s, '\n'), 3);
    CHECK(!strchr(s, '\r'));
    CHECK(!strstr(s, "\xe2\x96\x88"));         /* no bar cells */
    CHECK(!strncmp(s, "train  50% 5/10 [00:00<", 23));
    CHECK(strstr(s, " step/s, loss=2.5]\n"));
    CHECK(strstr(s, "train 100% 10/10 [00:00<00:00, "));
    CHECK(strstr(s, " step/s, loss=2.25, lr=0.001]\n"));
    free(s);
    tm_progress_free(p);
    fclose(f);
}

TEST(progress_plain_lines_wait_for_the_interval_and_unknown_totals_count)
{
    FILE *f = tmpfile();
    REQUIRE(f);
    tm_progress *p = tm_progress_new(NULL, 0, NULL, TM_PROGRESS_AUTO, f);
    REQUIRE(p);   /* a file is not a TTY: plain */
    tm_progress_set_interval(p, 3600);   /* no line can fall due in the loop */
    for (int i = 0; i < 1000; i++) tm_progress_update(p, 3);
    char *s = contents(f);
    REQUIRE(s);
    CHECK_INT(strlen(s), 0);
    free(s);
    tm_progress_free(p);   /* finishes: the final line, unknown total */
    s = contents(f);
    REQUIRE(s);
    CHECK(!strncmp(s, "3000it [00:00, ", 15));
    CHECK(strstr(s, " it/s]\n"));
    CHECK_INT(count_char(s, '\n'), 1);
    free(s);
    fclose(f);
}

TEST(progress_bar_redraws_in_place)
{
    FILE *f = tmpfile();
    REQUIRE(f);
    tm_progress *p = tm_progress_new("data", 1000, "B", TM_PROGRESS_BAR, f);
    REQUIRE(p);
    tm_progress_set_interval(p, 0);
    tm_progress_update(p, 450);
    tm_progress_update(p, 550);
    tm_progress_free(p);
    char *s = contents(f);
    REQUIRE(s);
    CHECK_INT(count_char(s, '\r'), 3);
    CHECK_INT(count_char(s, '\n'), 1);   /* only after the final draw */
    /* 45%: 9 full cells of 20 (4.5 x 2 = 9.0 cells), no partial one */
    CHECK(strstr(s, "\rdata  45%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88"
                    "\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88"
                    "           | 450/1000 ["));
    CHECK(strstr(s, "data 100%|"));
    CHECK(s[strlen(s) - 1] == '\n');
    free(s);
    fclose(f);
}

TEST(progress_silent_prints_nothing)
{
    FILE *f = tmpfile();
    REQUIRE(f);
    tm_progress *p = tm_progress_new("x", 5, "tok", TM_PROGRESS_SILENT, f);
    REQUIRE(p);
    tm_progress_set_interval(p, 0);
    tm_progress_set_metric(p, "loss", 1);
    tm_progress_update(p, 5);
    tm_progress_free(p);
    char *s = contents(f);
    REQUIRE(s);
    CHECK_INT(strlen(s), 0);
    free(s);
    fclose(f);
}

typedef struct sink {
    char buf[4096];
    size_t n;
    int calls;
} sink;

static void to_sink(const char *s, size_t n, void *user)
{
    sink *k = user;
    if (k->n + n < sizeof k->buf) memcpy(k->buf + k->n, s, n), k->n += n;
    k->buf[k->n] = 0;
    k->calls++;
}

TEST(progress_writer_gets_whole_lines)
{
    sink k = {{0}, 0, 0};
    tm_progress *p = tm_progress_new_writer("eval", 4, "batch", TM_PROGRESS_AUTO,
                                            to_sink, &k);
    REQUIRE(p);
    tm_progress_set_interval(p, 0);
    tm_progress_update(p, 2);
    tm_progress_update(p, 2);
    tm_progress_free(p);
    CHECK_INT(k.calls, 3);
    CHECK_INT(count_char(k.buf, '\n'), 3);
    CHECK(!strncmp(k.buf, "eval  50% 2/4 [", 15));
    CHECK(strstr(k.buf, "eval 100% 4/4 ["));
}

TEST(progress_bad_arguments_are_errors)
{
    CHECK(tm_progress_new("x", -1, NULL, TM_PROGRESS_PLAIN, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "tm_progress_new: total -1 is negative"));
    CHECK(tm_progress_new("x", 1, NULL, (tm_progress_mode)9, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "mode 9 is not a tm_progress_mode"));
    CHECK(tm_progress_new_writer("x", 1, NULL, TM_PROGRESS_PLAIN, NULL, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "write is NULL"));
    /* NULL progress is a no-op everywhere: callers pass it to mean "none" */
    tm_progress_update(NULL, 1);
    tm_progress_set_metric(NULL, "a", 1);
    tm_progress_finish(NULL);
    tm_progress_free(NULL);
}
