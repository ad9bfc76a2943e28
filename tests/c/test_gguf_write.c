/* test_gguf_write.c — the GGUF writer: a file written reads back with the
 * same metadata (in order, values replaced in place, nested arrays copied
 * from another file) and tensors (bytes, shapes, dtypes, alignment), the
 * write is atomic, and bad input is refused with a clear error. */
#include "harness.h"
#include "tmpfiles.h"

#include <stdio.h>
#include <stdlib.h>

static tm_tensor *arange_f32(const int64_t *shape, int nd)
{
    tm_tensor *t = tm_empty(shape, nd, TM_F32);
    if (!t) return NULL;
    float *p = tm_data(t);
    for (int64_t i = 0; i < tm_numel(t); i++) p[i] = (float)i * 0.25f - 3;
    return t;
}

TEST(gguf_write_round_trip)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    tt_path(p, dir, "out.gguf");
    tm_gguf_writer *w = tm_gguf_writer_new();
    REQUIRE(w != NULL);
    CHECK_INT(tm_gguf_set_str(w, "general.architecture", "gpt2", SIZE_MAX),
              TM_OK);
    CHECK_INT(tm_gguf_set_u8(w, "k.u8", 200), TM_OK);
    CHECK_INT(tm_gguf_set_i8(w, "k.i8", -5), TM_OK);
    CHECK_INT(tm_gguf_set_u16(w, "k.u16", 60000), TM_OK);
    CHECK_INT(tm_gguf_set_i16(w, "k.i16", -30000), TM_OK);
    CHECK_INT(tm_gguf_set_u32(w, "k.u32", 4000000000u), TM_OK);
    CHECK_INT(tm_gguf_set_i32(w, "k.i32", -2000000000), TM_OK);
    CHECK_INT(tm_gguf_set_u64(w, "k.u64", UINT64_MAX), TM_OK);
    CHECK_INT(tm_gguf_set_i64(w, "k.i64", INT64_MIN), TM_OK);
    CHECK_INT(tm_gguf_set_f32(w, "k.f32", 0.1f), TM_OK);
    CHECK_INT(tm_gguf_set_f64(w, "k.f64", 0.1), TM_OK);
    CHECK_INT(tm_gguf_set_bool(w, "k.bool", true), TM_OK);
    CHECK_INT(tm_gguf_set_str(w, "k.nul", "x\0y", 3), TM_OK);
    const float fa[3] = {1, -2, 3.5f};
    CHECK_INT(tm_gguf_set_array(w, "k.fa", TM_GGUF_FLOAT32, fa, 3), TM_OK);
    const char *sa[3] = {"a", "", "ccc"};
    CHECK_INT(tm_gguf_set_str_array(w, "k.sa", sa, 3), TM_OK);
    /* replaced in place: keeps its position */
    CHECK_INT(tm_gguf_set_i8(w, "k.u8", 7), TM_OK);
    CHECK_INT(tm_gguf_writer_set_alignment(w, 64), TM_OK);
    int64_t s1[2] = {3, 5}, s2[1] = {7}, s3[4] = {1, 2, 1, 3};
    tm_tensor *a = arange_f32(s1, 2), *b = tm_full(s2, 1, 2.5, TM_F16),
              *c = tm_full(s3, 4, -9, TM_I64);
    REQUIRE(a && b && c);
    CHECK_INT(tm_gguf_writer_add_tensor(w, "a", a), TM_OK);
    CHECK_INT(tm_gguf_writer_add_tensor(w, "b.weight", b), TM_OK);
    CHECK_INT(tm_gguf_writer_add_tensor(w, "c", c), TM_OK);
    CHECK_INT(tm_gguf_writer_write(w, p), TM_OK);
    CHECK_INT(tt_count_entries(dir), 1); /* no temporary left */
    tm_gguf *g = tm_gguf_open(p);
    if (!g) tt_fail(__FILE__, __LINE__, "%s", tm_last_error());
    REQUIRE(g != NULL);
    CHECK_INT(tm_gguf_version(g), 3);
    CHECK_INT(tm_gguf_alignment(g), 64);
    CHECK_INT(tm_gguf_data_offset(g) % 64, 0);
    CHECK_INT(tm_gguf_n_kv(g), 16);
    CHECK(!strcmp(tm_gguf_key(g, 0), "general.architecture"));
    CHECK(!strcmp(tm_gguf_key(g, 1), "k.u8"));
    CHECK(!strcmp(tm_gguf_key(g, 15), "general.alignment"));
    CHECK_INT(tm_gguf_value_type(tm_gguf_kv_value(g, 1)), TM_GGUF_INT8);
    int64_t i;
    uint64_t u;
    double f;
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "k.u8"), &i), TM_OK);
    CHECK_INT(i, 7);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "k.i8"), &i), TM_OK);
    CHECK_INT(i, -5);
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "k.u16"), &u), TM_OK);
    CHECK_INT(u, 60000);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "k.i16"), &i), TM_OK);
    CHECK_INT(i, -30000);
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "k.u32"), &u), TM_OK);
    CHECK(u == 4000000000u);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "k.i32"), &i), TM_OK);
    CHECK_INT(i, -2000000000);
    CHECK_INT(tm_gguf_value_u64(tm_gguf_get(g, "k.u64"), &u), TM_OK);
    CHECK(u == UINT64_MAX);
    CHECK_INT(tm_gguf_value_i64(tm_gguf_get(g, "k.i64"), &i), TM_OK);
    CHECK(i == INT64_MIN);
    CHECK_INT(tm_gguf_value_f64(tm_gguf_get(g, "k.f32"), &f), TM_OK);
    CHECK(f == (double)0.1f);
    CHECK_INT(tm_gguf_value_type(tm_gguf_get(g, "k.f64")), TM_GGUF_FLOAT64);
    CHECK_INT(tm_gguf_value_f64(tm_gguf_get(g, "k.f64"), &f), TM_OK);
    CHECK(f == 0.1);
    CHECK_INT(tm_gguf_value_type(tm_gguf_get(g, "k.bool")), TM_GGUF_BOOL);
    size_t len;
    const char *s = tm_gguf_value_str(tm_gguf_get(g, "k.nul"), &len);
    CHECK(s && len == 3 && !memcmp(s, "x\0y", 3));
    const tm_gguf_value *v = tm_gguf_get(g, "k.fa");
    CHECK_INT(tm_gguf_array_type(v), TM_GGUF_FLOAT32);
    CHECK(tm_gguf_array_len(v) == 3 &&
          !memcmp(tm_gguf_array_data(v), fa, sizeof fa));
    v = tm_gguf_get(g, "k.sa");
    CHECK_INT(tm_gguf_array_len(v), 3);
    s = tm_gguf_value_str(tm_gguf_array_get(v, 2), NULL);
    CHECK(s && !strcmp(s, "ccc"));
    CHECK_INT(tm_gguf_n_tensors(g), 3);
    tm_tensor *src[3] = {a, b, c};
    for (int k = 0; k < 3; k++) {
        tm_gguf_tensor_info ti;
        CHECK_INT(tm_gguf_tensor_info_at(g, k, &ti), TM_OK);
        CHECK_INT(ti.offset % 64, 0);
        tm_tensor *t = tm_gguf_tensor(g, k);
        REQUIRE(t != NULL);
        CHECK_INT(tm_dtype_of(t), tm_dtype_of(src[k]));
        CHECK_INT(tm_ndim(t), tm_ndim(src[k]));
        for (int d = 0; d < tm_ndim(t); d++)
            CHECK_INT(tm_shape(t)[d], tm_shape(src[k])[d]);
        CHECK_INT(tm_nbytes(t), tm_nbytes(src[k]));
        CHECK(!memcmp(tm_data(t), tm_data(src[k]), tm_nbytes(t)));
        tm_free(t);
    }
    CHECK_INT(tm_gguf_type_of_dtype(TM_F16), 1);
    CHECK_INT(tm_gguf_type_of_dtype(TM_Q4_K), 12);
    CHECK_INT(tm_gguf_type_of_dtype(TM_BOOL), -1);
    CHECK_INT(tm_dtype_of_gguf_type(30), TM_BF16);
    CHECK_INT(tm_dtype_of_gguf_type(10), -1);
    CHECK_INT(tm_dtype_of_gguf_type(99), -1);

    /* a second file copies values (nested arrays included) from the first
     * and views of its tensors (non-contiguous: a transpose) */
    tm_gguf_writer *w2 = tm_gguf_writer_new();
    REQUIRE(w2 != NULL);
    for (int64_t k = 0; k < tm_gguf_n_kv(g); k++)
        CHECK_INT(tm_gguf_set_value(w2, tm_gguf_key(g, k),
                                    tm_gguf_kv_value(g, k)), TM_OK);
    tm_tensor *ta = tm_gguf_tensor(g, 0);
    tm_tensor *tt = ta ? tm_transpose(ta, 0, 1) : NULL;
    REQUIRE(tt != NULL);
    CHECK_INT(tm_gguf_writer_add_tensor(w2, "at", tt), TM_OK);
    tm_free(ta);
    tm_free(tt);
    tm_gguf_close(g);
    tt_path(p, dir, "copy.gguf");
    CHECK_INT(tm_gguf_writer_write(w2, p), TM_OK);
    tm_gguf_writer_free(w2);
    g = tm_gguf_open(p);
    REQUIRE(g != NULL);
    CHECK_INT(tm_gguf_n_kv(g), 16);
    CHECK_INT(tm_gguf_alignment(g), 64);
    s = tm_gguf_value_str(tm_gguf_array_get(tm_gguf_get(g, "k.sa"), 0), NULL);
    CHECK(s && !strcmp(s, "a"));
    tm_tensor *at = tm_gguf_tensor(g, 0);
    REQUIRE(at != NULL);
    CHECK_SHAPE(at, 5, 3);
    double want[15];
    for (int r = 0; r < 5; r++)
        for (int q = 0; q < 3; q++) want[r * 3 + q] = (q * 5 + r) * 0.25 - 3;
    CHECK_VALUES(at, want, 15, 0, 0);
    tm_free(at);
    tm_gguf_close(g);
    tm_gguf_writer_free(w);
    tm_free(a);
    tm_free(b);
    tm_free(c);
    tt_rmdir(dir);
}

TEST(gguf_write_errors)
{
    tm_gguf_writer *w = tm_gguf_writer_new();
    REQUIRE(w != NULL);
    CHECK_STATUS(tm_gguf_writer_set_alignment(w, 48), TM_EINVAL,
                 "alignment 48 is not a power of two");
    CHECK_STATUS(tm_gguf_set_u64(w, "general.alignment", 32), TM_EINVAL,
                 "general.alignment must be uint32, not uint64");
    CHECK_STATUS(tm_gguf_set_u32(w, "general.alignment", 0), TM_EINVAL,
                 "general.alignment 0 is not a nonzero power of two");
    CHECK_STATUS(tm_gguf_set_u8(w, "", 1), TM_EINVAL, "key is empty");
    CHECK_STATUS(tm_gguf_set_u8(w, "bad\xff", 1), TM_EINVAL,
                 "is not valid UTF-8");
    CHECK_STATUS(tm_gguf_set_array(w, "a", TM_GGUF_STRING, "x", 1),
                 TM_EINVAL, "element type string is not numeric");
    CHECK_STATUS(tm_gguf_set_array(w, "a", TM_GGUF_INT32, NULL, 2),
                 TM_EINVAL, "bad array: n = 2, data NULL");
    const uint8_t bools[2] = {1, 2};
    CHECK_STATUS(tm_gguf_set_array(w, "a", TM_GGUF_BOOL, bools, 2),
                 TM_EINVAL, "bool value 2 is neither 0 nor 1");
    int64_t s1[1] = {4};
    tm_tensor *t = tm_zeros(s1, 1, TM_F32), *bt = tm_zeros(s1, 1, TM_BOOL);
    tm_tensor *sc = tm_zeros(NULL, 0, TM_F32);
    REQUIRE(t && bt && sc);
    CHECK_INT(tm_gguf_writer_add_tensor(w, "t", t), TM_OK);
    CHECK_STATUS(tm_gguf_writer_add_tensor(w, "t", t), TM_EINVAL,
                 "duplicate tensor name 't'");
    CHECK_STATUS(tm_gguf_writer_add_tensor(w, "b", bt), TM_EDTYPE,
                 "tensor 'b': dtype bool has no GGUF type");
    CHECK_STATUS(tm_gguf_writer_add_tensor(w, "s", sc), TM_ESHAPE,
                 "tensor 's': 0 dims (GGUF holds 1..4)");
    CHECK_STATUS(tm_gguf_writer_write(w, "/nonexistent-dir/x.gguf"), TM_EIO,
                 "/nonexistent-dir/x.gguf: cannot create a temporary file");
    tm_free(t);
    tm_free(bt);
    tm_free(sc);
    tm_gguf_writer_free(w); /* drops its reference on t */
    tm_gguf_writer_free(NULL);
    tm_gguf_close(NULL);
}

/* Quantized tensors go through as their blocks: written, read back as
 * zero-copy tensors of the same dtype, shape and bytes; at an offset that
 * breaks the blocks' alignment (general.alignment 1) they come back as a
 * read-only copy instead. */
TEST(gguf_write_quantized_round_trip)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    const tm_dtype dts[4] = {TM_Q4_0, TM_Q8_0, TM_Q4_K, TM_Q6_K};
    tm_tensor *src[4] = {NULL};
    for (int align = 1; align <= 32; align += 31) {
        tm_gguf_writer *w = tm_gguf_writer_new();
        REQUIRE(w != NULL);
        CHECK_INT(tm_gguf_writer_set_alignment(w, (size_t)align), TM_OK);
        CHECK_INT(tm_gguf_set_u8(w, "pad", 1), TM_OK); /* odd offsets */
        for (int k = 0; k < 4; k++) {
            int64_t sh[2] = {3, 256};
            if (!src[k]) {
                src[k] = tm_empty(sh, 2, dts[k]);
                REQUIRE(src[k] != NULL);
                unsigned char *b = tm_data(src[k]);
                for (size_t i = 0; i < tm_nbytes(src[k]); i++)
                    b[i] = (unsigned char)(i * 7 + k);
            }
            char nm[16];
            snprintf(nm, sizeof nm, "q%d", k);
            CHECK_INT(tm_gguf_writer_add_tensor(w, nm, src[k]), TM_OK);
        }
        tt_path(p, dir, "q.gguf");
        CHECK_INT(tm_gguf_writer_write(w, p), TM_OK);
        tm_gguf_writer_free(w);
        tm_gguf *g = tm_gguf_open(p);
        if (!g) tt_fail(__FILE__, __LINE__, "%s", tm_last_error());
        REQUIRE(g != NULL);
        for (int k = 0; k < 4; k++) {
            tm_gguf_tensor_info ti;
            CHECK_INT(tm_gguf_tensor_info_at(g, k, &ti), TM_OK);
            CHECK_INT(ti.ggml_type, tm_gguf_type_of_dtype(dts[k]));
            CHECK_INT(ti.nbytes, tm_nbytes(src[k]));
            tm_tensor *t = tm_gguf_tensor(g, k);
            if (!t) tt_fail(__FILE__, __LINE__, "%s", tm_last_error());
            REQUIRE(t != NULL);
            CHECK_INT(tm_dtype_of(t), dts[k]);
            CHECK_SHAPE(t, 3, 256);
            CHECK_INT(tm_nbytes(t), tm_nbytes(src[k]));
            CHECK(!memcmp(tm_data(t), tm_data(src[k]), tm_nbytes(t)));
            CHECK(tm_storage_is_readonly(tm_storage_of(t)));
            if (align == 32)
                CHECK_INT(tm_storage_kind_of(tm_storage_of(t)),
                          TM_STORAGE_MAPPED);
            tm_free(t);
        }
        tm_gguf_close(g);
    }
    for (int k = 0; k < 4; k++) tm_free(src[k]);
    tt_rmdir(dir);
}

/* Every allocation of a write, and of an open + cut, failing in turn: a
 * clean TM_ENOMEM, no leak (LSan), no file left behind. */
TEST(gguf_out_of_memory_everywhere)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    tt_path(p, dir, "m.gguf");
    int64_t sh[2] = {2, 32};
    tm_tensor *t = tm_full(sh, 2, 1.5, TM_F32);
    REQUIRE(t != NULL);
    const char *strs[2] = {"a", "b"};
    const int32_t ints[3] = {1, 2, 3};
    for (uint64_t k = 1;; k++) {
        tm_alloc_fail_after((int64_t)k);
        tm_status st = TM_OK;
        tm_gguf_writer *w = tm_gguf_writer_new();
        if (!w) st = tm_last_status();
        if (!st) st = tm_gguf_set_str(w, "s", "hello", SIZE_MAX);
        if (!st) st = tm_gguf_set_array(w, "a", TM_GGUF_INT32, ints, 3);
        if (!st) st = tm_gguf_set_str_array(w, "sa", strs, 2);
        if (!st) st = tm_gguf_set_u32(w, "u", 3);
        if (!st) st = tm_gguf_writer_add_tensor(w, "t", t);
        if (!st) st = tm_gguf_writer_write(w, p);
        tm_alloc_fail_after(0);
        tm_gguf_writer_free(w);
        if (st == TM_OK) break;
        CHECK_INT(st, TM_ENOMEM);
        CHECK_INT(tt_count_entries(dir), 0);
        if (k > 1000) break;
    }
    size_t n = 0;
    unsigned char *img = tt_read_file(p, &n);
    REQUIRE(img != NULL);
    for (uint64_t k = 1;; k++) {
        tm_alloc_fail_after((int64_t)k);
        tm_gguf *g = tm_gguf_open_memory(img, n);
        tm_tensor *x = g ? tm_gguf_tensor_by_name(g, "t") : NULL;
        tm_status st = x ? TM_OK : tm_last_status();
        tm_alloc_fail_after(0);
        tm_free(x);
        tm_gguf_close(g);
        if (st == TM_OK) break;
        CHECK_INT(st, TM_ENOMEM);
        if (k > 1000) break;
    }
    free(img);
    tm_free(t);
    tt_rmdir(dir);
}
