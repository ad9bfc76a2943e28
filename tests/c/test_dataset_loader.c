/*
 * test_dataset_loader.c — the (B, T+1) window loader: y is x shifted,
 * batch k of a seed is always the same (seek resumes exactly), windows stay
 * inside their split, start positions cover exactly [0, N - T - 1].
 */
#include "harness.h"
#include "tmpfiles.h"

#include <stdlib.h>

/* 12 documents; token value = its position in the file, so a window's
 * start is its first token. */
static tm_token_dataset *open_counting(char *dir, int64_t *total)
{
    char p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return NULL;
    tm_token_writer *w = tm_token_writer_new_raw(tt_path(p, dir, "c.tok"), 1000, 0);
    if (!w) return NULL;
    int32_t ids[60];
    int32_t at = 0;
    for (int d = 0; d < 12; d++) {
        int n = 20 + 3 * d;
        for (int i = 0; i < n; i++) ids[i] = at++;
        if (tm_token_writer_add_tokens(w, ids, n, n) != TM_OK) {
            tm_token_writer_abort(w);
            return NULL;
        }
    }
    *total = at;
    if (tm_token_writer_close(w) != TM_OK) return NULL;
    return tm_token_dataset_open(p);
}

static bool same_tensor(const tm_tensor *a, const tm_tensor *b)
{
    return tm_numel(a) == tm_numel(b) &&
           !memcmp(tm_data(a), tm_data(b), sizeof(int64_t) * (size_t)tm_numel(a));
}

TEST(loader_windows_are_shifted_pairs_of_the_split)
{
    char dir[TT_PATH_MAX];
    int64_t total = 0;
    tm_token_dataset *ds = open_counting(dir, &total);
    REQUIRE(ds);
    int64_t nval = tm_token_dataset_tokens(ds, TM_SPLIT_VAL);
    REQUIRE(nval > 9);
    int64_t *val = malloc(sizeof(int64_t) * (size_t)nval);
    REQUIRE(val);
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_VAL, 0, nval, val) == TM_OK);
    tm_token_loader *l = tm_token_loader_new(ds, TM_SPLIT_VAL, 4, 8, 42);
    REQUIRE(l);
    bool ok = true;
    for (int k = 0; k < 20 && ok; k++) {
        tm_tensor *x = NULL, *y = NULL;
        REQUIRE(tm_token_loader_next(l, &x, &y) == TM_OK);
        CHECK_SHAPE(x, 4, 8);
        CHECK_SHAPE(y, 4, 8);
        CHECK_INT(tm_dtype_of(x), TM_I64);
        const int64_t *px = tm_data(x), *py = tm_data(y);
        for (int b = 0; b < 4; b++) {
            /* find the window's start in the val concatenation */
            int64_t s = -1;
            for (int64_t i = 0; i + 9 <= nval && s < 0; i++)
                if (val[i] == px[b * 8]) s = i;
            ok = ok && s >= 0;
            for (int t = 0; t < 8 && ok; t++)
                ok = val[s + t] == px[b * 8 + t] && val[s + t + 1] == py[b * 8 + t];
        }
        tm_free(x);
        tm_free(y);
    }
    CHECK(ok);
    CHECK_INT(tm_token_loader_position(l), 20);
    tm_token_loader_free(l);
    free(val);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(loader_same_seed_same_batches_and_seek_resumes_exactly)
{
    char dir[TT_PATH_MAX];
    int64_t total = 0;
    tm_token_dataset *ds = open_counting(dir, &total);
    REQUIRE(ds);
    tm_token_loader *a = tm_token_loader_new(ds, TM_SPLIT_TRAIN, 3, 16, 7);
    tm_token_loader *b = tm_token_loader_new(ds, TM_SPLIT_TRAIN, 3, 16, 7);
    tm_token_loader *c = tm_token_loader_new(ds, TM_SPLIT_TRAIN, 3, 16, 8);
    REQUIRE(a && b && c);
    tm_tensor *xa[6] = {0}, *ya[6] = {0};
    for (int k = 0; k < 6; k++) REQUIRE(tm_token_loader_next(a, &xa[k], &ya[k]) == TM_OK);
    tm_tensor *x = NULL, *y = NULL;
    REQUIRE(tm_token_loader_next(b, &x, &y) == TM_OK);
    CHECK(same_tensor(x, xa[0]) && same_tensor(y, ya[0]));
    tm_free(x);
    tm_free(y);
    REQUIRE(tm_token_loader_seek(b, 4) == TM_OK);
    CHECK_INT(tm_token_loader_position(b), 4);
    REQUIRE(tm_token_loader_next(b, &x, &y) == TM_OK);
    CHECK(same_tensor(x, xa[4]) && same_tensor(y, ya[4]));
    tm_free(x);
    tm_free(y);
    REQUIRE(tm_token_loader_seek(b, 1) == TM_OK);   /* backwards too */
    REQUIRE(tm_token_loader_next(b, &x, &y) == TM_OK);
    CHECK(same_tensor(x, xa[1]));
    tm_free(x);
    tm_free(y);
    REQUIRE(tm_token_loader_next(c, &x, &y) == TM_OK);
    CHECK(!same_tensor(x, xa[0]));   /* 3 random starts out of ~300 agreeing: p ~ 1e-7 */
    CHECK(!same_tensor(xa[0], xa[1]));
    tm_free(x);
    tm_free(y);
    for (int k = 0; k < 6; k++) {
        tm_free(xa[k]);
        tm_free(ya[k]);
    }
    CHECK_STATUS(tm_token_loader_seek(b, -1), TM_EINVAL, "batches -1 is negative");
    tm_token_loader_free(a);
    tm_token_loader_free(b);
    tm_token_loader_free(c);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(loader_batches_are_pinned_across_platforms)
{
    /* The first starts of seed 1 over the whole file: fixed by Philox and
     * splitmix64, so a change of the generator or its keying (which would
     * break --resume of old runs) fails here. */
    char dir[TT_PATH_MAX];
    int64_t total = 0;
    tm_token_dataset *ds = open_counting(dir, &total);
    REQUIRE(ds);
    tm_token_loader *l = tm_token_loader_new(ds, TM_SPLIT_ALL, 4, 5, 1);
    REQUIRE(l);
    tm_tensor *x = NULL, *y = NULL;
    REQUIRE(tm_token_loader_next(l, &x, &y) == TM_OK);
    const int64_t *px = tm_data(x);
    const int64_t want[4] = {176, 23, 18, 420};
    for (int b = 0; b < 4; b++) CHECK_INT(px[5 * b], want[b]);
    tm_free(x);
    tm_free(y);
    tm_token_loader_free(l);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(loader_starts_cover_exactly_the_valid_range)
{
    char dir[TT_PATH_MAX];
    int64_t total = 0;
    tm_token_dataset *ds = open_counting(dir, &total);
    REQUIRE(ds);
    /* T = total - 11: only 11 possible starts, 0 .. 10 */
    int64_t T = total - 11;
    tm_token_loader *l = tm_token_loader_new(ds, TM_SPLIT_ALL, 64, T, 3);
    REQUIRE(l);
    int hits[11] = {0};
    bool in_range = true;
    for (int k = 0; k < 20; k++) {
        tm_tensor *x = NULL, *y = NULL;
        REQUIRE(tm_token_loader_next(l, &x, &y) == TM_OK);
        const int64_t *px = tm_data(x);
        for (int b = 0; b < 64; b++) {
            int64_t s = px[b * T];
            in_range = in_range && s >= 0 && s <= 10;
            if (s >= 0 && s <= 10) hits[s]++;
        }
        tm_free(x);
        tm_free(y);
    }
    CHECK(in_range);
    /* 1280 draws over 11 values, expected 116 each: every value within
     * 60..180 fails with probability < 1e-8 under uniformity */
    for (int s = 0; s <= 10; s++) CHECK(hits[s] >= 60 && hits[s] <= 180);
    tm_token_loader_free(l);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(loader_refuses_splits_shorter_than_a_window)
{
    char dir[TT_PATH_MAX];
    int64_t total = 0;
    tm_token_dataset *ds = open_counting(dir, &total);
    REQUIRE(ds);
    int64_t nval = tm_token_dataset_tokens(ds, TM_SPLIT_VAL);
    tm_clear_error();
    CHECK(tm_token_loader_new(ds, TM_SPLIT_VAL, 1, nval, 0) == NULL);
    CHECK(strstr(tm_last_error(), "fewer than T + 1"));
    tm_token_loader *l = tm_token_loader_new(ds, TM_SPLIT_VAL, 1, nval - 1, 0);
    CHECK(l != NULL);   /* exactly one window */
    tm_token_loader_free(l);
    CHECK(tm_token_loader_new(ds, TM_SPLIT_ALL, 0, 4, 0) == NULL);
    CHECK(strstr(tm_last_error(), "batch 0 and T 4 must be positive"));
    CHECK(tm_token_loader_new(ds, (tm_token_split)9, 1, 4, 0) == NULL);
    CHECK(strstr(tm_last_error(), "tm_token_loader_new: split 9"));
    CHECK(tm_token_loader_new(NULL, TM_SPLIT_ALL, 1, 4, 0) == NULL);
    CHECK_STATUS(tm_token_loader_next(NULL, NULL, NULL), TM_EINVAL, "NULL");
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(loader_keeps_its_split_when_the_val_fraction_changes)
{
    char dir[TT_PATH_MAX];
    int64_t total = 0;
    tm_token_dataset *ds = open_counting(dir, &total);
    REQUIRE(ds);
    tm_token_loader *a = tm_token_loader_new(ds, TM_SPLIT_VAL, 2, 4, 5);
    REQUIRE(a);
    tm_tensor *x0 = NULL, *y0 = NULL, *x1 = NULL, *y1 = NULL;
    REQUIRE(tm_token_loader_next(a, &x0, &y0) == TM_OK);
    REQUIRE(tm_token_dataset_set_val_fraction(ds, 0.6) == TM_OK);
    REQUIRE(tm_token_loader_seek(a, 0) == TM_OK);
    REQUIRE(tm_token_loader_next(a, &x1, &y1) == TM_OK);
    CHECK(same_tensor(x0, x1));
    tm_free(x0);
    tm_free(y0);
    tm_free(x1);
    tm_free(y1);
    tm_token_loader_free(a);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}
