/* test_safetensors.c — saving and loading safetensors files: round trips
 * of every dtype, byte-exact layout against the reference writer's own test
 * vectors, zero-copy read-only views that outlive the handle, atomic saves,
 * and out-of-memory injection over save + open + get + load.  Malformed
 * files are in test_safetensors_bad.c. */
#include "harness.h"
#include "tmpfiles.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes of a file; NULL on error (a test failure is recorded). */
static unsigned char *slurp(const char *path, size_t *n)
{
    unsigned char *b = tt_read_file(path, n);
    if (!b) tt_fail(__FILE__, __LINE__, "cannot read %s", path);
    return b;
}

/* The file must be exactly 8-byte length + header (padded with spaces to
 * `padded`) + data[dlen]. */
static void check_file(const char *path, const char *header, size_t padded,
                       const void *data, size_t dlen)
{
    size_t n = 0, hl = strlen(header);
    unsigned char *b = slurp(path, &n);
    if (!b) return;
    CHECK_INT(n, 8 + padded + dlen);
    if (n == 8 + padded + dlen) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--) len = (len << 8) | b[i];
        CHECK_INT(len, padded);
        CHECK(memcmp(b + 8, header, hl) == 0);
        for (size_t i = hl; i < padded; i++) CHECK(b[8 + i] == ' ');
        if (dlen) CHECK(memcmp(b + 8 + padded, data, dlen) == 0);
        if (memcmp(b + 8, header, hl))
            tt_fail(__FILE__, __LINE__, "header is %.*s", (int)padded, b + 8);
    }
    free(b);
}

/* The reference writer's unit tests (safetensors/src/tensor.rs:
 * test_serialization, test_serialization_forced_alignement, test_empty)
 * give these exact bytes. */
TEST(safetensors_save_matches_reference_bytes)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    float v[6] = {0, 1, 2, 3, 4, 5};
    tm_tensor *a = tm_from_buffer(v, (int64_t[]){1, 2, 3}, 3, TM_F32);
    tm_tensor *b = tm_from_buffer(v, (int64_t[]){1, 1, 2, 3}, 4, TM_F32);
    REQUIRE(a && b);
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "a.st"),
                                  (const char *[]){"attn.0"}, &a, 1, NULL,
                                  NULL, 0), TM_OK);
    check_file(p, "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],"
               "\"data_offsets\":[0,24]}}", 64, v, 24);
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "b.st"),
                                  (const char *[]){"attn0"}, &b, 1, NULL,
                                  NULL, 0), TM_OK);
    check_file(p, "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],"
               "\"data_offsets\":[0,24]}}", 72, v, 24);
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "empty.st"), NULL, NULL, 0,
                                  NULL, NULL, 0), TM_OK);
    check_file(p, "{}", 8, NULL, 0);
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "meta.st"), NULL, NULL, 0,
                                  (const char *[]){"framework"},
                                  (const char *[]){"pt"}, 1), TM_OK);
    check_file(p, "{\"__metadata__\":{\"framework\":\"pt\"}}", 40, NULL, 0);
    /* without the fsync: the same bytes; unknown flags are refused */
    CHECK_INT(tm_safetensors_save_ex(tt_path(p, dir, "nosync.st"),
                                     (const char *[]){"attn.0"}, &a, 1, NULL,
                                     NULL, 0, TM_SAVE_NO_SYNC), TM_OK);
    check_file(p, "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],"
               "\"data_offsets\":[0,24]}}", 64, v, 24);
    CHECK_STATUS(tm_safetensors_save_ex(p, (const char *[]){"attn.0"}, &a, 1,
                                        NULL, NULL, 0, 6u),
                 TM_EINVAL, "unknown flags 0x6");
    tm_free(a);
    tm_free(b);
    tt_rmdir(dir);
}

/* Largest dtype first in the reference's Dtype order (I64 F64 F32 I32 BF16
 * F16 I16 I8 U8 BOOL), names bytewise within a dtype; offsets contiguous. */
TEST(safetensors_save_orders_by_dtype_then_name)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    static const tm_dtype dts[] = {TM_BOOL, TM_U8, TM_I8, TM_I16, TM_F16,
                                   TM_BF16, TM_I32, TM_F32, TM_F64, TM_I64};
    static const char *const names[] = {"bool", "u8", "i8", "i16", "f16",
                                        "bf16", "i32", "f32b", "f64", "i64",
                                        "f32a", "F32"};
    tm_tensor *t[12];
    for (int i = 0; i < 12; i++)
        t[i] = tm_ones((int64_t[]){3}, 1, i < 10 ? dts[i] : TM_F32);
    tm_status st = tm_safetensors_save(tt_path(p, dir, "o.st"), names, t, 12,
                                       NULL, NULL, 0);
    CHECK_INT(st, TM_OK);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    static const char *const want[] = {"i64", "f64", "F32", "f32a", "f32b",
                                       "i32", "bf16", "f16", "i16", "i8",
                                       "u8", "bool"};
    CHECK_INT(tm_safetensors_count(f), 12);
    uint64_t pos = 0, b, e, ds;
    for (int i = 0; i < 12 && i < tm_safetensors_count(f); i++) {
        const char *nm = tm_safetensors_name(f, i);
        CHECK(nm && !strcmp(nm, want[i]));
        CHECK_INT(tm_safetensors_offsets(f, i, &b, &e, &ds), TM_OK);
        CHECK_INT(b, pos);
        tm_dtype dt = TM_F32;
        CHECK_INT(tm_safetensors_dtype(f, i, &dt), TM_OK);
        CHECK_INT((ds + b) % tm_dtype_size(dt), 0); /* aligned in the file */
        pos = e;
    }
    CHECK_INT(ds % 8, 0);
    tm_safetensors_close(f);
    for (int i = 0; i < 12; i++) tm_free(t[i]);
    tt_rmdir(dir);
}

/* Every dtype Foundry has survives a save and a load bit for bit, in 0-d,
 * 0-size and 2-d shapes. */
TEST(safetensors_round_trip_every_dtype)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    const double vals[6] = {1, -2, 3.5, 0, 127, -0.25};
    tm_tensor *t[3 * TM_NUM_DENSE_DTYPES];
    char names[3 * TM_NUM_DENSE_DTYPES][32];
    const char *np[3 * TM_NUM_DENSE_DTYPES];
    int n = 0;
    for (int d = 0; d < TM_NUM_DENSE_DTYPES; d++) {
        tm_dtype dt = (tm_dtype)d;
        t[n] = tt_tensor(vals, (int64_t[]){2, 3}, 2, dt);
        snprintf(names[n], 32, "%s.matrix", tm_dtype_name(dt));
        n++;
        t[n] = tm_scalar(-7, dt);
        snprintf(names[n], 32, "%s.scalar", tm_dtype_name(dt));
        n++;
        t[n] = tm_zeros((int64_t[]){0, 4}, 2, dt);
        snprintf(names[n], 32, "%s.empty", tm_dtype_name(dt));
        n++;
    }
    for (int i = 0; i < n; i++) {
        REQUIRE(t[i]);
        np[i] = names[i];
    }
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "all.st"), np, t, n, NULL,
                                  NULL, 0), TM_OK);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    CHECK_INT(tm_safetensors_count(f), n);
    CHECK(!tm_safetensors_has_metadata(f));
    for (int i = 0; i < n; i++) {
        tm_tensor *g = tm_safetensors_get(f, np[i]);
        tm_tensor *l = tm_safetensors_load(f, np[i]);
        CHECK(g && l);
        if (!g || !l) {
            tm_free(g);
            tm_free(l);
            continue;
        }
        int k = tm_safetensors_find(f, np[i]);
        tm_dtype dt;
        CHECK_INT(tm_safetensors_dtype(f, k, &dt), TM_OK);
        CHECK_INT(dt, tm_dtype_of(t[i]));
        CHECK_INT(tm_safetensors_ndim(f, k), tm_ndim(t[i]));
        CHECK_INT(tm_dtype_of(g), tm_dtype_of(t[i]));
        CHECK_INT(tm_ndim(g), tm_ndim(t[i]));
        for (int d = 0; d < tm_ndim(t[i]); d++) {
            CHECK_INT(tm_shape(g)[d], tm_shape(t[i])[d]);
            CHECK_INT(tm_shape(l)[d], tm_shape(t[i])[d]);
        }
        CHECK_INT(tm_nbytes(g), tm_nbytes(t[i]));
        CHECK(memcmp(tm_data(g), tm_data(t[i]), tm_nbytes(t[i])) == 0);
        CHECK(memcmp(tm_data(l), tm_data(t[i]), tm_nbytes(t[i])) == 0);
        if (tm_nbytes(g)) /* empty tensors share nothing */
            CHECK_INT(tm_storage_kind_of(tm_storage_of(g)), TM_STORAGE_MAPPED);
        CHECK(tm_storage_is_readonly(tm_storage_of(g)));
        tm_free(g);
        tm_free(l);
    }
    tm_safetensors_close(f);
    for (int i = 0; i < n; i++) tm_free(t[i]);
    tt_rmdir(dir);
}

/* Transposed, sliced and expanded inputs are written as their contiguous
 * copies. */
TEST(safetensors_saves_non_contiguous_inputs)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    const double v[6] = {1, 2, 3, 4, 5, 6};
    tm_tensor *a = tt_tensor(v, (int64_t[]){2, 3}, 2, TM_F64);
    tm_tensor *at = tm_transpose(a, 0, 1);                  /* [3,2] */
    tm_tensor *col = tm_select(a, 1, 2);                    /* {3,6} */
    tm_tensor *row = tt_tensor(v, (int64_t[]){1, 3}, 2, TM_I32);
    tm_tensor *ex = tm_expand(row, (int64_t[]){2, 3}, 2);   /* stride 0 */
    REQUIRE(a && at && col && row && ex);
    CHECK(!tm_is_contiguous(at) && !tm_is_contiguous(ex));
    tm_tensor *ts[3] = {at, col, ex};
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "nc.st"),
                                  (const char *[]){"at", "col", "ex"}, ts, 3,
                                  NULL, NULL, 0), TM_OK);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    tm_tensor *g0 = tm_safetensors_get(f, "at");
    tm_tensor *g1 = tm_safetensors_get(f, "col");
    tm_tensor *g2 = tm_safetensors_get(f, "ex");
    REQUIRE(g0 && g1 && g2);
    CHECK_SHAPE(g0, 3, 2);
    CHECK_VALUES(g0, ((double[]){1, 4, 2, 5, 3, 6}), 6, 0, 0);
    CHECK_VALUES(g1, ((double[]){3, 6}), 2, 0, 0);
    CHECK_VALUES(g2, ((double[]){1, 2, 3, 1, 2, 3}), 6, 0, 0);
    tm_free(g0);
    tm_free(g1);
    tm_free(g2);
    tm_safetensors_close(f);
    tm_free(ex);
    tm_free(row);
    tm_free(col);
    tm_free(at);
    tm_free(a);
    tt_rmdir(dir);
}

TEST(safetensors_metadata_round_trip)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    tm_tensor *t = tm_ones((int64_t[]){2}, 1, TM_F32);
    REQUIRE(t);
    const char *keys[] = {"format", "note", "\xc3\xa9t\xc3\xa9"};
    const char *vals[] = {"pt", "line\nwith \"quotes\" and \\ and \x01",
                          "\xe2\x82\xac \xf0\x9f\x98\x80"};
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "m.st"),
                                  (const char *[]){"w"}, &t, 1, keys, vals, 3),
              TM_OK);
    size_t n;
    unsigned char *raw = slurp(p, &n);
    /* serde_json's escapes: \n, \", \\ and \u0001 (lowercase hex) */
    CHECK(raw && strstr((const char *)raw + 8,
                        "{\"__metadata__\":{\"format\":\"pt\",\"note\":"
                        "\"line\\nwith \\\"quotes\\\" and \\\\ and "
                        "\\u0001\","));
    free(raw);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    CHECK(tm_safetensors_has_metadata(f));
    CHECK_INT(tm_safetensors_metadata_count(f), 3);
    for (int i = 0; i < 3; i++) {
        CHECK(!strcmp(tm_safetensors_metadata_key(f, i), keys[i]));
        CHECK(!strcmp(tm_safetensors_metadata_value(f, i), vals[i]));
        CHECK(!strcmp(tm_safetensors_metadata_get(f, keys[i]), vals[i]));
    }
    CHECK(tm_safetensors_metadata_get(f, "absent") == NULL);
    tm_clear_error();
    CHECK(tm_safetensors_metadata_key(f, 3) == NULL);
    CHECK_INT(tm_last_status(), TM_ERANGE);
    tm_safetensors_close(f);
    /* non-NULL keys with no entries: an empty "__metadata__" */
    CHECK_INT(tm_safetensors_save(p, (const char *[]){"w"}, &t, 1, keys, vals,
                                  0), TM_OK);
    REQUIRE((f = tm_safetensors_open(p)));
    CHECK(tm_safetensors_has_metadata(f));
    CHECK_INT(tm_safetensors_metadata_count(f), 0);
    tm_safetensors_close(f);
    tm_free(t);
    tt_rmdir(dir);
}

/* Names go through JSON escaping and back unchanged. */
TEST(safetensors_names_with_escapes_round_trip)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    const char *names[] = {"q\"b\\n\n\x01\x1f\x7f", "caf\xc3\xa9", ""};
    tm_tensor *t[3];
    for (int i = 0; i < 3; i++) t[i] = tm_full((int64_t[]){1}, 1, i, TM_I64);
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "n.st"), names, t, 3, NULL,
                                  NULL, 0), TM_OK);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    for (int i = 0; i < 3; i++) {
        tm_tensor *g = tm_safetensors_get(f, names[i]);
        CHECK(g);
        if (g) CHECK_VALUES(g, ((double[]){i}), 1, 0, 0);
        tm_free(g);
    }
    tm_safetensors_close(f);
    for (int i = 0; i < 3; i++) tm_free(t[i]);
    tt_rmdir(dir);
}

/* The mapping lives until the last view is freed, after the handle. */
TEST(safetensors_view_outlives_handle_and_is_read_only)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    const double v[4] = {1.5, -2, 3, 4};
    tm_tensor *t = tt_tensor(v, (int64_t[]){2, 2}, 2, TM_F32);
    REQUIRE(t);
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "v.st"),
                                  (const char *[]){"w"}, &t, 1, NULL, NULL, 0),
              TM_OK);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    tm_tensor *a = tm_safetensors_get(f, "w");
    tm_tensor *b = tm_safetensors_get(f, "w");
    tm_tensor *c = tm_safetensors_load(f, "w");
    tm_safetensors_close(f);
    REQUIRE(a && b && c);
    CHECK(tm_storage_of(a) == tm_storage_of(b)); /* one shared mapping */
    CHECK(tm_storage_is_readonly(tm_storage_of(a)));
    tm_free(b);
    CHECK_VALUES(a, v, 4, 0, 0);
    tm_tensor *row = tm_select(a, 0, 1); /* a view of a view */
    REQUIRE(row);
    tm_free(a);
    CHECK_VALUES(row, ((double[]){3, 4}), 2, 0, 0);
    CHECK_STATUS(tm_fill_(row, 0), TM_ESTATE, "read-only");
    CHECK_STATUS(tm_add_(row, row), TM_ESTATE, "read-only");
    CHECK_VALUES(row, ((double[]){3, 4}), 2, 0, 0);
    tm_free(row);
    /* load copies into ordinary writable memory */
    CHECK_INT(tm_storage_kind_of(tm_storage_of(c)), TM_STORAGE_OWNED);
    CHECK_INT(tm_fill_(c, 9), TM_OK);
    tm_free(c);
    tm_free(t);
    tt_rmdir(dir);
}

TEST(safetensors_lookup_errors)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    tm_tensor *t = tm_ones((int64_t[]){2}, 1, TM_F32);
    REQUIRE(t);
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "l.st"),
                                  (const char *[]){"w"}, &t, 1, NULL, NULL, 0),
              TM_OK);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    CHECK_NULL_ERR(tm_safetensors_get(f, "nope"), TM_EINVAL,
                   "no tensor named 'nope'");
    CHECK_NULL_ERR(tm_safetensors_load(f, "nope"), TM_EINVAL, "l.st");
    tm_clear_error();
    CHECK_INT(tm_safetensors_find(f, "nope"), -1);
    CHECK_INT(tm_last_status(), TM_EINVAL);
    CHECK(tm_safetensors_name(f, 1) == NULL);
    CHECK_INT(tm_last_status(), TM_ERANGE);
    CHECK_INT(tm_safetensors_ndim(f, -1), -1);
    CHECK_STATUS(tm_safetensors_dtype(f, 5, NULL), TM_ERANGE, "outside");
    tm_safetensors_close(f);
    tm_safetensors_close(NULL);
    CHECK(tm_safetensors_open(NULL) == NULL);
    CHECK(tm_safetensors_open(tt_path(p, dir, "missing.st")) == NULL);
    CHECK_INT(tm_last_status(), TM_EIO);
    CHECK(strstr(tm_last_error(), "missing.st: cannot open"));
    CHECK(tm_safetensors_open(dir) == NULL);
    CHECK(strstr(tm_last_error(), "not a regular file"));
    tm_free(t);
    tt_rmdir(dir);
}

TEST(safetensors_save_rejects_bad_arguments)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    tt_path(p, dir, "x.st");
    tm_tensor *t = tm_ones((int64_t[]){2}, 1, TM_F32);
    REQUIRE(t);
    tm_tensor *tt[2] = {t, t};
    CHECK_STATUS(tm_safetensors_save(p, (const char *[]){"a", "a"}, tt, 2,
                                     NULL, NULL, 0),
                 TM_EINVAL, "duplicate tensor name 'a'");
    CHECK_STATUS(tm_safetensors_save(p, (const char *[]){"__metadata__"}, tt,
                                     1, NULL, NULL, 0),
                 TM_EINVAL, "reserves");
    CHECK_STATUS(tm_safetensors_save(p, (const char *[]){"a\xff"}, tt, 1,
                                     NULL, NULL, 0),
                 TM_EINVAL, "not valid UTF-8");
    CHECK_STATUS(tm_safetensors_save(p, (const char *[]){NULL}, tt, 1, NULL,
                                     NULL, 0),
                 TM_EINVAL, "names[0] is NULL");
    CHECK_STATUS(tm_safetensors_save(p, (const char *[]){"a"},
                                     (tm_tensor *[]){NULL}, 1, NULL, NULL, 0),
                 TM_EINVAL, "tensors[0] ('a') is NULL");
    CHECK_STATUS(tm_safetensors_save(p, (const char *[]){"a"}, tt, 1,
                                     (const char *[]){"k", "k"},
                                     (const char *[]){"1", "2"}, 2),
                 TM_EINVAL, "duplicate metadata key 'k'");
    CHECK_STATUS(tm_safetensors_save(p, (const char *[]){"a"}, tt, 1,
                                     (const char *[]){"k"},
                                     (const char *[]){NULL}, 1),
                 TM_EINVAL, "meta_values[0] is NULL");
    CHECK_STATUS(tm_safetensors_save(p, NULL, tt, 1, NULL, NULL, 0),
                 TM_EINVAL, "NULL");
    CHECK_STATUS(tm_safetensors_save(NULL, NULL, NULL, 0, NULL, NULL, 0),
                 TM_EINVAL, "path");
    CHECK_INT(tt_count_entries(dir), 0); /* nothing was created */
    tm_free(t);
    tt_rmdir(dir);
}

/* A failed save leaves no temporary file and an existing target as it was;
 * a successful one replaces the file without disturbing views of the old
 * one, and keeps the old file's permission bits. */
TEST(safetensors_save_is_atomic)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX], q[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    tt_path(p, dir, "model.st");
    const double v[6] = {1, 2, 3, 4, 5, 6};
    tm_tensor *old = tt_tensor(v, (int64_t[]){6}, 1, TM_F32);
    tm_tensor *m = tt_tensor(v, (int64_t[]){2, 3}, 2, TM_F64);
    tm_tensor *mt = m ? tm_transpose(m, 0, 1) : NULL; /* saving copies it */
    REQUIRE(old && mt);
    CHECK_INT(tm_safetensors_save(p, (const char *[]){"w"}, &old, 1, NULL,
                                  NULL, 0), TM_OK);
    size_t n0, n1;
    unsigned char *before = slurp(p, &n0);
    REQUIRE(before);

    /* into a directory that does not exist */
    CHECK_STATUS(tm_safetensors_save(tt_path(q, dir, "no/such/dir/m.st"),
                                     (const char *[]){"w"}, &old, 1, NULL,
                                     NULL, 0),
                 TM_EIO, "cannot create a temporary file");

    /* every allocation of a save failing in turn */
    tm_tensor *pair[2] = {mt, old};
    const char *names[2] = {"new", "w"};
    uint64_t r1 = tm_alloc_requests();
    CHECK_INT(tm_safetensors_save(tt_path(q, dir, "probe.st"), names, pair, 2,
                                  NULL, NULL, 0), TM_OK);
    uint64_t nallocs = tm_alloc_requests() - r1;
    unlink(q);
    CHECK(nallocs >= 3);
    for (uint64_t k = 1; k <= nallocs; k++) {
        tm_alloc_fail_after((int64_t)k);
        tm_status st = tm_safetensors_save(p, names, pair, 2, NULL, NULL, 0);
        tm_alloc_fail_after(0);
        CHECK_INT(st, TM_ENOMEM);
        unsigned char *now = slurp(p, &n1);
        CHECK(now && n1 == n0 && !memcmp(now, before, n0));
        free(now);
        CHECK_INT(tt_count_entries(dir), 1);
    }

    /* success: old views keep the old bytes, the new file has the new */
    chmod(p, 0640);
    tm_safetensors *f = tm_safetensors_open(p);
    tm_tensor *view = f ? tm_safetensors_get(f, "w") : NULL;
    tm_safetensors_close(f);
    REQUIRE(view);
    tm_tensor *neu = tm_full((int64_t[]){2}, 1, 7, TM_F32);
    REQUIRE(neu);
    CHECK_INT(tm_safetensors_save(p, (const char *[]){"w"}, &neu, 1, NULL,
                                  NULL, 0), TM_OK);
    CHECK_VALUES(view, v, 6, 0, 0);
    struct stat sb;
    CHECK(stat(p, &sb) == 0 && (sb.st_mode & 07777) == 0640);
    REQUIRE((f = tm_safetensors_open(p)));
    tm_tensor *w = tm_safetensors_get(f, "w");
    CHECK(w);
    if (w) CHECK_VALUES(w, ((double[]){7, 7}), 2, 0, 0);
    tm_free(w);
    tm_safetensors_close(f);
    CHECK_INT(tt_count_entries(dir), 1);
    tm_free(view);
    tm_free(neu);
    free(before);
    tm_free(mt);
    tm_free(m);
    tm_free(old);
    tt_rmdir(dir);
}

/* Files of 0 tensors are valid, with and without metadata. */
TEST(safetensors_zero_tensors)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    CHECK_INT(tm_safetensors_save(tt_path(p, dir, "z.st"), NULL, NULL, 0,
                                  NULL, NULL, 0), TM_OK);
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    CHECK_INT(tm_safetensors_count(f), 0);
    CHECK_INT(tm_safetensors_metadata_count(f), 0);
    CHECK(!tm_safetensors_has_metadata(f));
    tm_safetensors_close(f);
    tt_rmdir(dir);
}

/* ------------------------------------------------ out-of-memory injection */

static char fault_path[TT_PATH_MAX];

static tm_status save_open_get_load(void)
{
    tm_tensor *t[6] = {0};
    tm_safetensors *f = NULL;
    tm_status st = TM_OK;
    const char *names[3] = {"a.weight", "b.t", "c"};
    if (!(t[0] = tm_arange(0, 12, 1, TM_F32)) ||
        !(t[1] = tm_reshape(t[0], (int64_t[]){3, 4}, 2)) ||
        !(t[2] = tm_transpose(t[1], 0, 1)) ||
        !(t[3] = tm_zeros((int64_t[]){5}, 1, TM_I64)))
        goto fail;
    tm_tensor *ts[3] = {t[1], t[2], t[3]};
    /* over a dozen metadata keys: the duplicate check sorts them */
    const char *mk[12], *mv[12];
    static const char *const keys[12] = {"a", "b", "c", "d", "e", "f",
                                         "g", "h", "i", "j", "k", "l"};
    for (int i = 0; i < 12; i++) {
        mk[i] = keys[i];
        mv[i] = "v";
    }
    if ((st = tm_safetensors_save(fault_path, names, ts, 3, mk, mv, 12)))
        goto done;
    if (!(f = tm_safetensors_open(fault_path)) ||
        !(t[4] = tm_safetensors_get(f, "b.t")) ||
        !(t[5] = tm_safetensors_load(f, "a.weight")))
        goto fail;
    goto done;
fail:
    st = tm_last_status();
done:
    tm_safetensors_close(f);
    for (int i = 0; i < 6; i++) tm_free(t[i]);
    return st;
}

TEST(safetensors_every_allocation_failure_is_clean)
{
    char dir[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    tt_path(fault_path, dir, "fault.st");
    CHECK_EVERY_ALLOC_FAILURE(save_open_get_load, 12);
    CHECK_INT(tt_count_entries(dir), 1); /* no temporary files left */
    tt_rmdir(dir);
}
