/* test_gguf_read.c — GGUF files that are well formed: every metadata value
 * type (nested arrays, arrays of strings, strings holding NUL) read from a
 * hand-built image in versions 2 and 3; zero-copy read-only tensors that
 * outlive the reader; the writer's round trip (metadata in order, values
 * replaced in place, aligned tensor data, atomic write) and its errors. */
#include "harness.h"
#include "tmpfiles.h"
#include "gguf_build.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>

/* One kv of each scalar type, a string with a NUL, arrays of numbers, of
 * strings, of arrays; one F32 [2,3] and one I32 [5] tensor. */
static void build_all(gb *b, uint32_t version)
{
    uint64_t ne[2] = {3, 2}, ne1[1] = {5};
    gb_header(b, version, 2, 16);
    const uint64_t u[] = {0xAB, 0x80, 0xBEEF, 0x8000, 0xDEADBEEF,
                          0xFFFFFFFE, 0x3FC00000, 1};
    const int sz[] = {1, 1, 2, 2, 4, 4, 4, 1};
    char key[16];
    for (int t = 0; t < 8; t++) {
        snprintf(key, sizeof key, "s.%d", t);
        gb_str(b, key);
        gb_u32(b, (uint32_t)t);
        gb_le(b, u[t], sz[t]);
    }
    gb_str(b, "s.8");
    gb_u32(b, 8);
    gb_u64(b, 3);
    gb_bytes(b, "a\0b", 3);
    gb_str(b, "s.10");
    gb_u32(b, 10);
    gb_u64(b, UINT64_MAX);
    gb_str(b, "s.11");
    gb_u32(b, 11);
    gb_u64(b, (uint64_t)INT64_MIN);
    gb_str(b, "s.12");
    gb_u32(b, 12);
    gb_u64(b, 0xC000000000000000ull); /* -2.0 */
    gb_str(b, "a.i16");
    gb_u32(b, 9);
    gb_u32(b, 3);
    gb_u64(b, 3);
    gb_le(b, 1, 2);
    gb_le(b, 0xFFFF, 2);
    gb_le(b, 300, 2);
    gb_str(b, "a.str");
    gb_u32(b, 9);
    gb_u32(b, 8);
    gb_u64(b, 2);
    gb_str(b, "one");
    gb_str(b, "");
    gb_str(b, "a.nested");
    gb_u32(b, 9);
    gb_u32(b, 9);
    gb_u64(b, 2);
    gb_u32(b, 6); /* [1.5] */
    gb_u64(b, 1);
    gb_u32(b, 0x3FC00000);
    gb_u32(b, 8); /* ["x"] */
    gb_u64(b, 1);
    gb_str(b, "x");
    gb_str(b, "a.empty");
    gb_u32(b, 9);
    gb_u32(b, 12);
    gb_u64(b, 0);
    gb_tinfo(b, "w", 2, ne, 0, 0);
    gb_tinfo(b, "i", 1, ne1, 26, 32);
    gb_pad(b, 32);
    for (int k = 0; k < 6; k++) {
        float f = (float)k + 0.5f;
        uint32_t x;
        memcpy(&x, &f, 4);
        gb_u32(b, x);
    }
    gb_fill(b, 8, 0);
    for (int k = 0; k < 5; k++) gb_u32(b, (uint32_t)(-k));
}

static void check_all(const tm_gguf *g, uint32_t version)
{
    CHECK_INT(tm_gguf_version(g), version);
    CHECK_INT(tm_gguf_alignment(g), 32);
    CHECK_INT(tm_gguf_n_kv(g), 16);
    CHECK_INT(tm_gguf_n_tensors(g), 2);
    uint64_t u;
    int64_t i;
    double f;
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "s.0"), &u), TM_OK);
    CHECK_INT(u, 0xAB);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "s.1"), &i), TM_OK);
    CHECK_INT(i, -128);
    CHECK_STATUS(tm_gguf_value_u64(tm_gguf_get(g, "s.1"), &u), TM_ERANGE,
                 "int8 value -128 is negative");
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "s.2"), &u), TM_OK);
    CHECK_INT(u, 0xBEEF);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "s.3"), &i), TM_OK);
    CHECK_INT(i, -32768);
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "s.4"), &u), TM_OK);
    CHECK_INT(u, 0xDEADBEEF);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "s.5"), &i), TM_OK);
    CHECK_INT(i, -2);
    CHECK_INT(tm_gguf_value_f64(tm_gguf_get(g, "s.6"), &f), TM_OK);
    CHECK(f == 1.5);
    CHECK_INT(tm_gguf_value_type(tm_gguf_get(g, "s.7")), TM_GGUF_BOOL);
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "s.7"), &u), TM_OK);
    CHECK_INT(u, 1);
    size_t len = 0;
    const char *s = tm_gguf_value_str(tm_gguf_get(g, "s.8"), &len);
    CHECK(s && len == 3 && !memcmp(s, "a\0b", 4));
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "s.10"), &u), TM_OK);
    CHECK(u == UINT64_MAX);
    CHECK_STATUS(tm_gguf_value_i64(tm_gguf_get(g, "s.10"), &i), TM_ERANGE,
                 "uint64 value 18446744073709551615 does not fit in int64");
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "s.11"), &i), TM_OK);
    CHECK(i == INT64_MIN);
    CHECK_INT(tm_gguf_value_f64(tm_gguf_get(g, "s.12"), &f), TM_OK);
    CHECK(f == -2.0);
    CHECK_STATUS(tm_gguf_value_f64(tm_gguf_get(g, "s.8"), &f), TM_EDTYPE,
                 "value is string, not a number");
    CHECK_STATUS(tm_gguf_value_u64(tm_gguf_get(g, "s.12"), &u), TM_EDTYPE,
                 "value is float64, not an integer");
    tm_clear_error();
    CHECK(tm_gguf_value_str(tm_gguf_get(g, "s.0"), NULL) == NULL);
    CHECK_INT(tm_last_status(), TM_EDTYPE);
    /* arrays */
    const tm_gguf_value *a = tm_gguf_get(g, "a.i16");
    CHECK_INT(tm_gguf_value_type(a), TM_GGUF_ARRAY);
    CHECK_INT(tm_gguf_array_type(a), TM_GGUF_INT16);
    CHECK_INT(tm_gguf_array_len(a), 3);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_array_get(a, 1), &i), TM_OK);
    CHECK_INT(i, -1);
    int16_t raw[3];
    memcpy(raw, tm_gguf_array_data(a), sizeof raw);
    CHECK(raw[0] == 1 && raw[1] == -1 && raw[2] == 300);
    tm_clear_error();
    CHECK(tm_gguf_array_get(a, 3) == NULL);
    CHECK_INT(tm_last_status(), TM_ERANGE);
    a = tm_gguf_get(g, "a.str");
    CHECK_INT(tm_gguf_array_type(a), TM_GGUF_STRING);
    CHECK(tm_gguf_array_data(a) == NULL);
    s = tm_gguf_value_str(tm_gguf_array_get(a, 0), &len);
    CHECK(s && !strcmp(s, "one") && len == 3);
    s = tm_gguf_value_str(tm_gguf_array_get(a, 1), &len);
    CHECK(s && !strcmp(s, "") && len == 0);
    a = tm_gguf_get(g, "a.nested");
    CHECK_INT(tm_gguf_array_type(a), TM_GGUF_ARRAY);
    CHECK_INT(tm_gguf_array_len(a), 2);
    const tm_gguf_value *in = tm_gguf_array_get(a, 0);
    CHECK_INT(tm_gguf_array_type(in), TM_GGUF_FLOAT32);
    CHECK_INT(tm_gguf_value_f64(tm_gguf_array_get(in, 0), &f), TM_OK);
    CHECK(f == 1.5);
    in = tm_gguf_array_get(a, 1);
    s = tm_gguf_value_str(tm_gguf_array_get(in, 0), NULL);
    CHECK(s && !strcmp(s, "x"));
    CHECK_INT(tm_gguf_array_len(tm_gguf_get(g, "a.empty")), 0);
    CHECK_INT(tm_gguf_find_key(g, "s.3"), 3);
    CHECK_INT(tm_gguf_find_key(g, "nope"), -1);
    CHECK(tm_gguf_get(g, "nope") == NULL);
    CHECK(!strcmp(tm_gguf_key(g, 15), "a.empty"));
    CHECK(tm_gguf_key(g, 16) == NULL);
    /* tensors */
    tm_gguf_tensor_info ti;
    CHECK_INT(tm_gguf_tensor_info_at(g, 0, &ti), TM_OK);
    CHECK(!strcmp(ti.name, "w"));
    CHECK_INT(ti.dtype, TM_F32);
    CHECK_INT(ti.ndim, 2);
    CHECK_INT(ti.shape[0], 2);
    CHECK_INT(ti.shape[1], 3);
    CHECK_INT(ti.nbytes, 24);
    CHECK_INT(tm_gguf_find_tensor(g, "i"), 1);
    tm_tensor *w = tm_gguf_tensor_by_name(g, "w");
    REQUIRE(w != NULL);
    CHECK_SHAPE(w, 2, 3);
    double want[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
    CHECK_VALUES(w, want, 6, 0, 0);
    tm_free(w);
    tm_tensor *it = tm_gguf_tensor(g, 1);
    REQUIRE(it != NULL);
    CHECK_INT(tm_dtype_of(it), TM_I32);
    double wi[5] = {0, -1, -2, -3, -4};
    CHECK_VALUES(it, wi, 5, 0, 0);
    tm_free(it);
}

TEST(gguf_read_every_value_type_v3_and_v2)
{
    for (uint32_t v = 2; v <= 3; v++) {
        gb b = {0};
        build_all(&b, v);
        tm_gguf *g = tm_gguf_open_memory(b.p, b.n);
        if (!g) tt_fail(__FILE__, __LINE__, "%s", tm_last_error());
        REQUIRE(g != NULL);
        check_all(g, v);
        CHECK_INT(tm_gguf_data_offset(g) % 32, 0);
        /* zero copy: the tensor is the caller's bytes, read-only */
        tm_tensor *w = tm_gguf_tensor(g, 0);
        REQUIRE(w != NULL);
        CHECK(tm_data(w) == b.p + tm_gguf_data_offset(g));
        CHECK_INT(tm_storage_kind_of(tm_storage_of(w)), TM_STORAGE_MAPPED);
        CHECK(tm_storage_is_readonly(tm_storage_of(w)));
        CHECK_INT(tm_fill_(w, 0), TM_ESTATE);
        tm_gguf_close(g);
        /* the tensor outlives the reader */
        double want[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
        CHECK_VALUES(w, want, 6, 0, 0);
        tm_free(w);
        free(b.p);
    }
}

TEST(gguf_read_file_mapped_outlives_reader)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    gb b = {0};
    build_all(&b, 3);
    CHECK(tt_write_file(tt_path(p, dir, "all.gguf"), b.p, b.n));
    tm_gguf *g = tm_gguf_open(p);
    REQUIRE(g != NULL);
    check_all(g, 3);
    tm_tensor *w = tm_gguf_tensor(g, 0);
    tm_gguf_close(g);
    REQUIRE(w != NULL);
    double want[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
    CHECK_VALUES(w, want, 6, 0, 0);
    tm_free(w);
    CHECK(tt_write_file(tt_path(p, dir, "short.gguf"), b.p, 10));
    tm_clear_error();
    CHECK(tm_gguf_open(p) == NULL);
    CHECK(strstr(tm_last_error(), "short.gguf: file is 10 bytes") != NULL);
    tm_clear_error();
    CHECK(tm_gguf_open(dir) == NULL);
    CHECK_INT(tm_last_status(), TM_EIO);
    tt_rmdir(dir);
    free(b.p);
}

/* Zero dims is a scalar; zero-length dims an empty tensor (both as ggml
 * reads them); a misaligned (alignment 1) F32 tensor comes back copied. */
TEST(gguf_read_scalar_empty_and_unaligned)
{
    gb b = {0};
    uint64_t ne0[1] = {0}, ne1[1] = {1};
    gb_header(&b, 3, 3, 1);
    gb_kv_u32(&b, "general.alignment", 1);
    gb_tinfo(&b, "s", 0, NULL, 0, 0);
    gb_tinfo(&b, "e", 1, ne0, 0, 4);
    gb_tinfo(&b, "u", 1, ne1, 0, 5);
    float x = 3.25f, y = -1.0f;
    size_t base = b.n;
    gb_bytes(&b, &x, 4);
    gb_u8(&b, 0);
    gb_bytes(&b, &y, 4);
    tm_gguf *g = tm_gguf_open_memory(b.p, b.n);
    if (!g) tt_fail(__FILE__, __LINE__, "%s", tm_last_error());
    REQUIRE(g != NULL);
    CHECK_INT(tm_gguf_alignment(g), 1);
    CHECK_INT(tm_gguf_data_offset(g), base);
    tm_tensor *s = tm_gguf_tensor(g, 0), *e = tm_gguf_tensor(g, 1),
              *u = tm_gguf_tensor(g, 2);
    REQUIRE(s && e && u);
    CHECK_INT(tm_ndim(s), 0);
    double v = 0;
    CHECK(tm_item(s, &v) == TM_OK && v == 3.25);
    CHECK_INT(tm_numel(e), 0);
    CHECK(tm_item(u, &v) == TM_OK && v == -1.0);
    bool aligned = ((uintptr_t)(b.p + base + 5) % 4) == 0;
    CHECK(aligned == (tm_data(u) == b.p + base + 5));
    CHECK_INT(tm_fill_(u, 0), TM_ESTATE);
    tm_free(s);
    tm_free(e);
    tm_free(u);
    tm_gguf_close(g);
    free(b.p);
}

/* Tensors cut and freed from several threads at once, the reader closed
 * while they live: the mapping's reference count is shared (run under
 * TSan too). */

typedef struct cut_job {
    const tm_gguf *g;
    tm_tensor *keep;
    int bad;
} cut_job;

static void *cut_many(void *arg)
{
    cut_job *j = arg;
    for (int k = 0; k < 200; k++) {
        tm_tensor *t = tm_gguf_tensor(j->g, k % 2);
        if (!t) j->bad++;
        if (k == 199) j->keep = t;
        else tm_free(t);
    }
    return NULL;
}

TEST(gguf_read_tensors_from_many_threads)
{
    gb b = {0};
    build_all(&b, 3);
    tm_gguf *g = tm_gguf_open_memory(b.p, b.n);
    REQUIRE(g != NULL);
    pthread_t th[4];
    cut_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (cut_job){g, NULL, 0};
        CHECK(pthread_create(&th[i], NULL, cut_many, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) CHECK(pthread_join(th[i], NULL) == 0);
    tm_gguf_close(g);
    double want[5] = {0, -1, -2, -3, -4};
    for (int i = 0; i < 4; i++) {
        CHECK_INT(jobs[i].bad, 0);
        REQUIRE(jobs[i].keep != NULL);
        CHECK_VALUES(jobs[i].keep, want, 5, 0, 0);
        tm_free(jobs[i].keep);
    }
    free(b.p);
}
