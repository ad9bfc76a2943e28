/*
 * test_plot.c — metrics JSON lines (exact text, round-trip numbers, null
 * for NaN) and the SVG drawn from them (structure here; XML validity is
 * checked by a real parser in tests/python/test_data_tokens.py).
 */
#include "harness.h"
#include "tmpfiles.h"

#include <stdlib.h>

/* The whole file, NUL-terminated (free()); length in *n. */
static char *read_text(const char *path, size_t *n)
{
    unsigned char *b = tt_read_file(path, n);
    char *s = b ? malloc(*n + 1) : NULL;
    if (s) {
        memcpy(s, b, *n);
        s[*n] = 0;
    }
    free(b);
    return s;
}

TEST(metrics_lines_are_exact_json)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_metrics *m = tm_metrics_open(tt_path(p, dir, "m.jsonl"), false);
    REQUIRE(m);
    const char *k[3] = {"train_loss", "lr", "tok/s \"x\""};
    double v[3] = {0.1, NAN, -INFINITY};
    CHECK(tm_metrics_log(m, 10, 3, k, v) == TM_OK);
    CHECK(tm_metrics_log(m, 11, 0, NULL, NULL) == TM_OK);
    CHECK_STATUS(tm_metrics_log(m, 12, 1, (const char *[]){"step"}, v), TM_EINVAL,
                 "key 0 is \"step\"");
    CHECK_STATUS(tm_metrics_log(m, 12, 2, (const char *[]){"a", "a"}, v), TM_EINVAL,
                 "key \"a\" appears twice");
    CHECK_STATUS(tm_metrics_log(m, 12, 1, (const char *[]){"\xff"}, v), TM_EINVAL,
                 "not valid UTF-8");
    REQUIRE(tm_metrics_close(m) == TM_OK);
    size_t n = 0;
    char *s = read_text(p, &n);
    REQUIRE(s);
    const char *want = "{\"step\": 10, \"train_loss\": 0.10000000000000001, "
                       "\"lr\": null, \"tok/s \\\"x\\\"\": null}\n{\"step\": 11}\n";
    CHECK_INT(n, strlen(want));
    CHECK(n == strlen(want) && !memcmp(s, want, n));
    free(s);
    m = tm_metrics_open(p, true);   /* append keeps what is there */
    REQUIRE(m);
    CHECK(tm_metrics_log(m, 12, 1, k, v) == TM_OK);
    REQUIRE(tm_metrics_close(m) == TM_OK);
    s = read_text(p, &n);
    REQUIRE(s);
    CHECK_INT(n, strlen(want) + strlen("{\"step\": 12, \"train_loss\": 0.10000000000000001}\n"));
    free(s);
    CHECK(tm_metrics_open("/nonexistent/dir/m.jsonl", false) == NULL);
    CHECK(strstr(tm_last_error(), "/nonexistent/dir/m.jsonl: cannot open"));
    CHECK_INT(tm_metrics_close(NULL), TM_OK);
    tt_rmdir(dir);
}

static bool write_text(const char *path, const char *s)
{
    return tt_write_file(path, s, strlen(s));
}

TEST(plot_draws_both_panels_with_legend_and_escaped_title)
{
    char dir[TT_PATH_MAX], mp[TT_PATH_MAX], sp[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(mp, dir, "m.jsonl");
    tt_path(sp, dir, "loss.svg");
    tm_metrics *m = tm_metrics_open(mp, false);
    REQUIRE(m);
    for (int s = 0; s <= 100; s += 10) {
        const char *k[3] = {"train_loss", "lr", "val_loss"};
        double v[3] = {5.0 / (1 + s / 10.0), 1e-3 * (1 - s / 200.0), 5.5 / (1 + s / 10.0)};
        CHECK(tm_metrics_log(m, s, s % 50 == 0 ? 3 : 2, k, v) == TM_OK);
    }
    REQUIRE(tm_metrics_close(m) == TM_OK);
    REQUIRE(tm_plot_metrics_svg(mp, sp, "gpt-tiny <demo> & co") == TM_OK);
    CHECK_INT(tt_count_entries(dir), 2);   /* no .tmp left */
    size_t n = 0;
    char *s = read_text(sp, &n);
    REQUIRE(s);
    CHECK(!strncmp(s, "<?xml version=\"1.0\"", 19));
    CHECK(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(strstr(s, ">gpt-tiny &lt;demo&gt; &amp; co</text>"));
    CHECK(strstr(s, ">train loss</text>") && strstr(s, ">val loss</text>"));
    CHECK(strstr(s, ">lr</text>"));
    int polylines = 0, circles = 0;
    for (const char *q = s; (q = strstr(q, "<polyline")); q++) polylines++;
    for (const char *q = s; (q = strstr(q, "<circle")); q++) circles++;
    CHECK_INT(polylines, 3);     /* train, val, lr */
    CHECK_INT(circles, 3 + 1);   /* val markers at steps 0, 50, 100 + legend */
    /* step axis 0..100 in ticks of 20 (8 wanted intervals -> 20: 1-2-5) */
    CHECK(strstr(s, ">100</text>") && strstr(s, ">20</text>"));
    CHECK(strstr(s, "</svg>\n"));
    free(s);
    tt_rmdir(dir);
}

TEST(plot_skips_an_unfinished_last_line_and_draws_empty_runs)
{
    char dir[TT_PATH_MAX], mp[TT_PATH_MAX], sp[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(mp, dir, "m.jsonl");
    tt_path(sp, dir, "loss.svg");
    REQUIRE(write_text(mp, "{\"step\": 1, \"train_loss\": 3}\n\n{\"step\": 2, \"trai"));
    CHECK(tm_plot_metrics_svg(mp, sp, NULL) == TM_OK);
    size_t n = 0;
    char *s = read_text(sp, &n);
    REQUIRE(s);
    CHECK(!strstr(s, ">lr</text>"));   /* no lr logged: one panel */
    free(s);
    REQUIRE(write_text(mp, ""));
    CHECK(tm_plot_metrics_svg(mp, sp, NULL) == TM_OK);
    s = read_text(sp, &n);
    REQUIRE(s);
    CHECK(strstr(s, "no losses logged yet"));
    free(s);
    tt_rmdir(dir);
}

TEST(plot_names_the_malformed_line)
{
    char dir[TT_PATH_MAX], mp[TT_PATH_MAX], sp[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(mp, dir, "m.jsonl");
    tt_path(sp, dir, "loss.svg");
    REQUIRE(write_text(mp, "{\"step\": 1}\n{\"step\": 2,}\n"));
    CHECK_STATUS(tm_plot_metrics_svg(mp, sp, NULL), TM_EFORMAT, "m.jsonl: line 2: ");
    REQUIRE(write_text(mp, "{\"step\": 1, \"val_loss\": \"x\"}\n"));
    CHECK_STATUS(tm_plot_metrics_svg(mp, sp, NULL), TM_EFORMAT,
                 "line 1: \"val_loss\" is not a number or null");
    REQUIRE(write_text(mp, "[1]\n"));
    CHECK_STATUS(tm_plot_metrics_svg(mp, sp, NULL), TM_EFORMAT, "not a JSON object");
    REQUIRE(write_text(mp, "{\"loss\": 1}\n"));
    CHECK_STATUS(tm_plot_metrics_svg(mp, sp, NULL), TM_EFORMAT, "no numeric \"step\"");
    CHECK_INT(tt_count_entries(dir), 1);   /* nothing drawn */
    CHECK_STATUS(tm_plot_metrics_svg("/nonexistent.jsonl", sp, NULL), TM_EIO,
                 "/nonexistent.jsonl: cannot open");
    CHECK_STATUS(tm_plot_metrics_svg(mp, sp, "\xff"), TM_EINVAL, "title is not valid UTF-8");
    tt_rmdir(dir);
}
