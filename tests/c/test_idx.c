/*
 * test_idx.c — IDX reading and the gzip/zlib/DEFLATE decoder behind it:
 * streams made by Python's zlib and gzip at levels 0, 1, 6, 9 (with every
 * gzip header flag, several members, zlib and raw wrappers;
 * tests/data/idx from tests/gen/gen_idx.py), hand-made corrupt streams,
 * every malformed IDX header, and the Fashion-MNIST files when installed.
 */
#include "harness.h"
#include "tmpfiles.h"

#include "../../io/inflate.h"
#include "../../tensor/core/tensor_impl.h"

#include <stdlib.h>

#define DATA "tests/data/idx/"

/* gen_idx.py pattern(): the payload bytes after the IDX header */
static uint8_t pattern(size_t i)
{
    if (i >= 3000 && i < 4000) return 0;
    return (uint8_t)((i * 7 + (i >> 5) * 13 + ((i * i) >> 7)) & 0xff);
}

/* The IDX file gen_idx.py compresses: u8 [3, 50, 40]. */
static uint8_t *payload(size_t *n)
{
    *n = 16 + 6000;
    uint8_t *b = malloc(*n);
    if (!b) return NULL;
    const uint8_t head[16] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 50,
                              0, 0, 0, 40};
    memcpy(b, head, 16);
    for (size_t i = 0; i < 6000; i++) b[16 + i] = pattern(i);
    return b;
}

typedef tm_status (*unpack_fn)(const void *, size_t, size_t, uint8_t **,
                               size_t *, const char *, const char *);

static tm_status raw_unpack(const void *in, size_t n, size_t max,
                            uint8_t **out, size_t *on, const char *fn,
                            const char *what)
{
    return tm__inflate_raw(in, n, max, out, on, NULL, fn, what);
}

static void check_stream(const char *file, unpack_fn fn)
{
    size_t n = 0, pn = 0, on = 0;
    uint8_t *in = tt_read_file(file, &n), *want = payload(&pn), *out = NULL;
    if (!in || !want) {
        tt_fail(__FILE__, __LINE__, "cannot read %s", file);
    } else if (fn(in, n, 1 << 20, &out, &on, "test", file) != TM_OK) {
        tt_fail(__FILE__, __LINE__, "%s: %s", file, tm_last_error());
    } else if (on != pn || memcmp(out, want, pn) != 0) {
        tt_fail(__FILE__, __LINE__, "%s: %zu bytes differ from the %zu "
                "expected", file, on, pn);
    }
    tm__dealloc(out);
    free(in);
    free(want);
}

TEST(inflate_reads_python_gzip_at_every_level)
{
    const char *files[] = {DATA "level0.idx.gz", DATA "level1.idx.gz",
                           DATA "level6.idx.gz", DATA "level9.idx.gz",
                           DATA "flags.idx.gz", DATA "members.idx.gz"};
    for (int i = 0; i < 6; i++) check_stream(files[i], tm__gunzip);
    check_stream(DATA "payload.zlib", tm__zlib_uncompress);
    check_stream(DATA "payload.deflate", raw_unpack);
}

TEST(idx_load_reads_gzip_transparently)
{
    size_t pn;
    uint8_t *want = payload(&pn);
    REQUIRE(want);
    tm_tensor *t = tm_idx_load(DATA "level9.idx.gz");
    REQUIRE(t);
    CHECK_SHAPE(t, 3, 50, 40);
    CHECK_INT(tm_dtype_of(t), TM_U8);
    CHECK(memcmp(tm_data(t), want + 16, 6000) == 0);
    tm_free(t);
    t = tm_idx_load_buffer(want, pn); /* raw */
    REQUIRE(t);
    CHECK(memcmp(tm_data(t), want + 16, 6000) == 0);
    tm_free(t);
    free(want);
}

/* gen_idx.py --c-arrays */
static const uint8_t fixed_stream[] = {0x4b, 0x4c, 0x4a, 0x4e, 0x84, 0x21,
    0x85, 0x8c, 0xd4, 0x9c, 0x9c, 0x7c, 0x08, 0x09, 0x00};
static const uint8_t bad_type[] = {0x07};
static const uint8_t bad_lengths[] = {0x05, 0x00, 0x92, 0x04};
static const uint8_t too_far[] = {0x4b, 0x04, 0x42, 0x00};
static const uint8_t bad_stored[] = {0x01, 0x03, 0x00, 0x00, 0x00, 0x61,
    0x62, 0x63};

static tm_status raw(const uint8_t *b, size_t n)
{
    uint8_t *out = NULL;
    size_t on;
    tm_status st = tm__inflate_raw(b, n, 1 << 16, &out, &on, NULL, "tm_x",
                                   "buffer");
    tm__dealloc(out);
    return st;
}

TEST(inflate_decodes_fixed_huffman_blocks)
{
    uint8_t *out = NULL;
    size_t on = 0, used = 0;
    CHECK_INT(tm__inflate_raw(fixed_stream, sizeof fixed_stream, 100, &out,
                              &on, &used, "t", "b"), TM_OK);
    const char *want = "abcabcabcabc hello hello";
    CHECK_INT(on, strlen(want));
    CHECK(out && memcmp(out, want, on) == 0);
    CHECK_INT(used, sizeof fixed_stream);
    tm__dealloc(out);
    /* the output limit holds */
    CHECK_STATUS(tm__inflate_raw(fixed_stream, sizeof fixed_stream, 10, &out,
                                 &on, NULL, "t", "b"),
                 TM_EOVERFLOW, "exceeds the limit");
}

TEST(inflate_rejects_corrupt_streams)
{
    CHECK_STATUS(raw(bad_type, sizeof bad_type), TM_EFORMAT,
                 "tm_x: buffer: invalid block type");
    CHECK_STATUS(raw(bad_lengths, sizeof bad_lengths), TM_EFORMAT,
                 "invalid code lengths set");
    CHECK_STATUS(raw(too_far, sizeof too_far), TM_EFORMAT,
                 "invalid distance too far back (distance, bytes written) "
                 "(2, 1)");
    CHECK_STATUS(raw(bad_stored, sizeof bad_stored), TM_EFORMAT,
                 "stored block length does not match");
    CHECK_STATUS(raw(fixed_stream, 5), TM_EFORMAT, "truncated");
    CHECK_STATUS(raw(fixed_stream, 0), TM_EFORMAT, "truncated");
    size_t n;
    uint8_t *gz = tt_read_file(DATA "level6.idx.gz", &n), *out = NULL;
    REQUIRE(gz);
    struct {
        size_t at;
        uint8_t xor_;
        size_t len;
        const char *msg;
    } cases[] = {
        {n - 8, 1, n, "gzip CRC-32 mismatch"},
        {n - 4, 1, n, "gzip ISIZE mismatch"},
        {0, 0, n / 2, "truncated deflate stream"},
        {0, 0, n - 3, "truncated gzip trailer"},
        {2, 1, n, "unknown gzip compression method"},
        {3, 0x20, n, "reserved gzip flag bits"},
        {0, 0, 5, "truncated gzip header"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t *c = malloc(n + 4);
        REQUIRE(c);
        memcpy(c, gz, n);
        c[cases[i].at] ^= cases[i].xor_;
        size_t on;
        CHECK_STATUS(tm__gunzip(c, cases[i].len, 1 << 20, &out, &on, "t",
                                "f.gz"), TM_EFORMAT, cases[i].msg);
        free(c);
    }
    /* a file name that never ends */
    const uint8_t noend[] = {0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3, 'a', 'b'};
    size_t on;
    CHECK_STATUS(tm__gunzip(noend, sizeof noend, 1 << 20, &out, &on, "t",
                            "f.gz"), TM_EFORMAT, "truncated gzip header");
    /* trailing garbage after the member */
    uint8_t *c = malloc(n + 3);
    REQUIRE(c);
    memcpy(c, gz, n);
    memcpy(c + n, "xyz", 3);
    CHECK_STATUS(tm__gunzip(c, n + 3, 1 << 20, &out, &on, "t", "f.gz"),
                 TM_EFORMAT, "trailing bytes");
    free(c);
    /* the same damage through the public reader names the file */
    gz[n - 8] ^= 1;
    CHECK_NULL_ERR(tm_idx_load_buffer(gz, n), TM_EFORMAT,
                   "tm_idx_load_buffer: buffer: gzip CRC-32 mismatch");
    free(gz);
    /* FHCRC checked */
    uint8_t *fl = tt_read_file(DATA "flags.idx.gz", &n);
    REQUIRE(fl);
    fl[10 + 2 + 6 + 6 + 10] ^= 1; /* first byte of the header CRC */
    CHECK_STATUS(tm__gunzip(fl, n, 1 << 20, &out, &on, "t", "f.gz"),
                 TM_EFORMAT, "gzip header CRC mismatch");
    free(fl);
}

/* IDX bytes: header for (type, dims) then `payload` bytes. */
static size_t idx_bytes(uint8_t *b, int type, const uint32_t *dims,
                        int ndim, const void *payload, size_t pn)
{
    b[0] = b[1] = 0;
    b[2] = (uint8_t)type;
    b[3] = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++)
        for (int k = 0; k < 4; k++)
            b[4 + 4 * d + k] = (uint8_t)(dims[d] >> (24 - 8 * k));
    memcpy(b + 4 + 4 * ndim, payload, pn);
    return 4 + 4 * (size_t)ndim + pn;
}

TEST(idx_round_trips_every_type_through_a_file)
{
    char dir[TT_PATH_MAX], path[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    const double vals[6] = {1, -2, 3.5, 100, -7.25, 0};
    struct { int code; tm_dtype dt; int size; } types[] = {
        {0x08, TM_U8, 1}, {0x09, TM_I8, 1}, {0x0B, TM_I16, 2},
        {0x0C, TM_I32, 4}, {0x0D, TM_F32, 4}, {0x0E, TM_F64, 8}};
    for (int t = 0; t < 6; t++) {
        uint8_t pay[48], file[80];
        double want[6];
        for (int i = 0; i < 6; i++) {
            double v = vals[i];
            if (types[t].dt == TM_U8) v = fabs(v);
            if (types[t].dt != TM_F32 && types[t].dt != TM_F64)
                v = (double)(long)v;
            want[i] = v;
            uint64_t bits = 0;
            switch (types[t].dt) {
            case TM_U8: bits = (uint8_t)v; break;
            case TM_I8: bits = (uint8_t)(int8_t)v; break;
            case TM_I16: bits = (uint16_t)(int16_t)v; break;
            case TM_I32: bits = (uint32_t)(int32_t)v; break;
            case TM_F32: {
                float f = (float)v;
                uint32_t u;
                memcpy(&u, &f, 4);
                bits = u;
                break;
            }
            default: memcpy(&bits, &v, 8); break;
            }
            int s = types[t].size;
            for (int k = 0; k < s; k++) /* big-endian */
                pay[i * s + k] = (uint8_t)(bits >> (8 * (s - 1 - k)));
        }
        uint32_t dims[2] = {2, 3};
        size_t n = idx_bytes(file, types[t].code, dims, 2, pay,
                             6 * (size_t)types[t].size);
        tt_write_file(tt_path(path, dir, "x.idx"), file, n);
        tm_tensor *x = tm_idx_load(path);
        REQUIRE(x);
        CHECK_INT(tm_dtype_of(x), types[t].dt);
        CHECK_SHAPE(x, 2, 3);
        CHECK_VALUES(x, want, 6, 0, 0);
        tm_free(x);
    }
    CHECK_NULL_ERR(tm_idx_load(tt_path(path, dir, "missing.idx")), TM_EIO,
                   "cannot open");
    tt_rmdir(dir);
}

TEST(idx_rejects_every_malformed_header)
{
    uint8_t b[64] = {0};
    uint8_t pay[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint32_t d2[2] = {2, 2}, d1[1] = {8}, big[3] = {0xffffffffu,
                                                     0xffffffffu, 4};
    size_t n;
    CHECK_NULL_ERR(tm_idx_load_buffer(b, 3), TM_EFORMAT,
                   "buffer: 3 bytes is too short for an IDX header");
    n = idx_bytes(b, 0x08, d2, 2, pay, 4);
    b[1] = 1;
    CHECK_NULL_ERR(tm_idx_load_buffer(b, n), TM_EFORMAT,
                   "bad IDX magic 0x00010802");
    n = idx_bytes(b, 0x07, d2, 2, pay, 4);
    CHECK_NULL_ERR(tm_idx_load_buffer(b, n), TM_EFORMAT,
                   "bad IDX magic 0x00000702");
    n = idx_bytes(b, 0x08, d2, 0, pay, 4);
    CHECK_NULL_ERR(tm_idx_load_buffer(b, n), TM_EFORMAT,
                   "IDX ndim 0 out of range [1, 8]");
    b[3] = 9;
    CHECK_NULL_ERR(tm_idx_load_buffer(b, 64), TM_EFORMAT,
                   "IDX ndim 9 out of range");
    idx_bytes(b, 0x08, d2, 2, pay, 4);
    CHECK_NULL_ERR(tm_idx_load_buffer(b, 9), TM_EFORMAT,
                   "9 bytes is too short for an IDX header of 2 dims "
                   "(12 bytes)");
    n = idx_bytes(b, 0x0E, big, 3, pay, 0);
    CHECK_NULL_ERR(tm_idx_load_buffer(b, n), TM_EOVERFLOW,
                   "IDX dims [4294967295,4294967295,4] are too large");
    /* a zero dim does not excuse the others: strides would overflow */
    uint32_t zero_big[4] = {0x13000000u, 0, 0xfbffff01u, 0xfbffff01u};
    n = idx_bytes(b, 0x09, zero_big, 4, pay, 0);
    CHECK_NULL_ERR(tm_idx_load_buffer(b, n), TM_EOVERFLOW,
                   "are too large");
    n = idx_bytes(b, 0x08, d2, 2, pay, 3);
    CHECK_NULL_ERR(tm_idx_load_buffer(b, n), TM_EFORMAT,
                   "size 15 bytes != header 12 + payload 4 (u8 [2,2])");
    n = idx_bytes(b, 0x0C, d1, 1, pay, 8);
    CHECK_NULL_ERR(tm_idx_load_buffer(b, n), TM_EFORMAT,
                   "size 16 bytes != header 8 + payload 32 (i32 [8])");
    CHECK_NULL_ERR(tm_idx_load_buffer(NULL, 3), TM_EINVAL, "NULL");
    /* the file name is in the message */
    char dir[TT_PATH_MAX], path[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    n = idx_bytes(b, 0x08, d2, 2, pay, 5);
    tt_write_file(tt_path(path, dir, "bad.idx"), b, n);
    tm_clear_error();
    CHECK(tm_idx_load(path) == NULL);
    CHECK(strstr(tm_last_error(), "bad.idx': size 17 bytes") != NULL);
    tt_rmdir(dir);
}

static const uint8_t *fault_gz;
static size_t fault_n;

static tm_status fault_seq(void)
{
    tm_tensor *t = tm_idx_load_buffer(fault_gz, fault_n);
    if (!t) return tm_last_status();
    tm_free(t);
    return TM_OK;
}

TEST(idx_load_survives_every_allocation_failure)
{
    size_t n;
    uint8_t *gz = tt_read_file(DATA "level1.idx.gz", &n);
    REQUIRE(gz);
    fault_gz = gz;
    fault_n = n;
    CHECK_EVERY_ALLOC_FAILURE(fault_seq, 2);
    free(gz);
}

/* Values printed by Python's gzip + numpy from the Debian package
 * dataset-fashion-mnist (tools/install-deps.sh fashion-mnist). */
TEST(idx_loads_fashion_mnist_when_installed)
{
    const char *dir = "/usr/share/datasets/fashion-mnist/";
    char path[256];
    snprintf(path, sizeof path, "%strain-images-idx3-ubyte.gz", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("  note: %s absent (tools/install-deps.sh fashion-mnist); "
               "skipped\n", path);
        return;
    }
    fclose(f);
    struct {
        const char *file;
        int ndim;
        int64_t shape[3];
        long long sum;
        int64_t at[4];
        int val[4];
    } sets[] = {
        {"train-images-idx3-ubyte.gz", 3, {60000, 28, 28}, 3431114169LL,
         {100, 1000, 12345, 47039999}, {73, 215, 173, 0}},
        {"train-labels-idx1-ubyte.gz", 1, {60000}, 270000,
         {0, 100, 1000, 12345}, {9, 8, 1, 8}},
        {"t10k-images-idx3-ubyte.gz", 3, {10000, 28, 28}, 573469082LL,
         {100, 1000, 14 * 28 + 12, 7839999}, {0, 255, 98, 0}},
        {"t10k-labels-idx1-ubyte.gz", 1, {10000}, 45000,
         {1, 100, 1000, 9999}, {2, 3, 0, 5}},
    };
    for (int s = 0; s < 4; s++) {
        snprintf(path, sizeof path, "%s%s", dir, sets[s].file);
        tm_tensor *t = tm_idx_load(path);
        REQUIRE(t);
        CHECK_INT(tm_dtype_of(t), TM_U8);
        tt_check_shape(__FILE__, __LINE__, t, sets[s].shape, sets[s].ndim);
        const uint8_t *p = tm_data(t);
        long long sum = 0;
        for (int64_t i = 0; i < tm_numel(t); i++) sum += p[i];
        CHECK_INT(sum, sets[s].sum);
        for (int k = 0; k < 4; k++) CHECK_INT(p[sets[s].at[k]], sets[s].val[k]);
        tm_free(t);
    }
}
