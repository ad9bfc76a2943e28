/* test_safetensors_bad.c — one test per kind of malformed safetensors file:
 * each must fail to open with TM_EFORMAT and a message that names the
 * problem (the reference reader's rules, then Foundry's own).  Files with
 * dtypes Foundry lacks open and list but cannot be read as tensors. */
#include "harness.h"
#include "tmpfiles.h"

#include <stdlib.h>

/* 8-byte little-endian `len`, then hdr (strlen), then dlen data bytes
 * (0x11 repeated).  Returns a malloc'd image of *size bytes. */
static unsigned char *image_len(uint64_t len, const char *hdr, size_t dlen,
                                size_t *size)
{
    size_t hl = strlen(hdr);
    unsigned char *b = malloc(8 + hl + dlen + 1);
    if (!b) return NULL;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(len >> (8 * i));
    memcpy(b + 8, hdr, hl);
    memset(b + 8 + hl, 0x11, dlen);
    *size = 8 + hl + dlen;
    return b;
}

static tm_safetensors *open_image(const char *hdr, size_t dlen)
{
    size_t n;
    unsigned char *b = image_len(strlen(hdr), hdr, dlen, &n);
    tm_safetensors *f = b ? tm_safetensors_open_memory(b, n) : NULL;
    free(b);
    return f;
}

static void check_fails(const char *file, int line, tm_safetensors *f,
                        const char *substr)
{
    tt_check_error(file, line, "open", f == NULL, TM_EFORMAT, substr);
    if (!strstr(tm_last_error(), "tm_safetensors_open"))
        tt_fail(file, line, "message does not name the function: %s",
                tm_last_error());
    tm_safetensors_close(f);
}

/* The header `hdr` over dlen data bytes must be rejected with `substr`. */
#define CHECK_BAD(hdr, dlen, substr)                                          \
    do {                                                                      \
        tm_clear_error();                                                     \
        check_fails(__FILE__, __LINE__, open_image((hdr), (dlen)), (substr)); \
    } while (0)

#define T1(name, dtype, shape, b, e)                                          \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape                  \
    ",\"data_offsets\":[" #b "," #e "]}"

TEST(safetensors_bad_truncated_file)
{
    /* cut inside the data section */
    CHECK_BAD("{" T1("w", "F32", "[4]", 0, 16) "}", 12,
              "'w': data_offsets [0,16) run past the end of the 12-byte data "
              "section");
    /* shorter than the length field */
    tm_clear_error();
    check_fails(__FILE__, __LINE__,
                tm_safetensors_open_memory("\x02\0\0", 3),
                "<memory>: file is 3 bytes, too short for the 8-byte header "
                "length");
}

TEST(safetensors_bad_empty_file)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    CHECK(tt_write_file(tt_path(p, dir, "empty.st"), "", 0));
    tm_clear_error();
    check_fails(__FILE__, __LINE__, tm_safetensors_open(p),
                "empty.st: file is 0 bytes, too short");
    tt_rmdir(dir);
}

TEST(safetensors_bad_header_too_large)
{
    size_t n;
    unsigned char *b = image_len(100000001, "{}", 8, &n);
    REQUIRE(b);
    tm_clear_error();
    check_fails(__FILE__, __LINE__, tm_safetensors_open_memory(b, n),
                "header length 100000001 exceeds the limit of 100000000 "
                "bytes (header too large)");
    free(b);
}

TEST(safetensors_bad_header_length_overflow)
{
    size_t n;
    unsigned char *b = image_len(UINT64_MAX, "{}", 8, &n);
    REQUIRE(b);
    tm_clear_error();
    check_fails(__FILE__, __LINE__, tm_safetensors_open_memory(b, n),
                "header length 18446744073709551615 overflows");
    free(b);
    /* within the limit but past the end of the file */
    b = image_len(1000, "{}      ", 0, &n);
    REQUIRE(b);
    tm_clear_error();
    check_fails(__FILE__, __LINE__, tm_safetensors_open_memory(b, n),
                "header length 1000 runs past the end of the 16-byte file");
    free(b);
}

TEST(safetensors_bad_not_json)
{
    CHECK_BAD("{\"w\":", 0, "header: invalid JSON: unexpected end of input");
    CHECK_BAD("{\"a\":1,}", 0, "invalid JSON: trailing comma in an object");
    CHECK_BAD("{\"a\":NaN}", 0, "invalid JSON: unexpected character 'N'");
    CHECK_BAD("{}x", 0, "invalid JSON: unexpected data after the value at "
              "byte 2");
    CHECK_BAD("", 0, "invalid JSON: unexpected end of input");
}

TEST(safetensors_bad_header_not_an_object)
{
    CHECK_BAD("[]      ", 0, "header is not a JSON object");
    CHECK_BAD("{\"w\":[1]}", 0, "tensor 'w': entry is not a JSON object");
}

TEST(safetensors_bad_not_utf8)
{
    CHECK_BAD("{\"w\xff\":1}", 0, "header is not valid UTF-8 (byte 0xFF at "
              "header offset 3)");
    CHECK_BAD("{\"\xc0\x80\":1}", 0, "not valid UTF-8"); /* overlong NUL */
    CHECK_BAD("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8"); /* surrogate */
}

TEST(safetensors_bad_unknown_dtype)
{
    CHECK_BAD("{" T1("w", "F7", "[1]", 0, 1) "}", 1,
              "tensor 'w': unknown dtype \"F7\"");
    CHECK_BAD("{" T1("w", "f32", "[1]", 0, 4) "}", 4, "unknown dtype \"f32\"");
}

TEST(safetensors_bad_offsets_overlapping)
{
    CHECK_BAD("{" T1("a", "F32", "[2]", 0, 8) "," T1("b", "F32", "[2]", 4, 12)
              "}", 12,
              "tensor 'b': data_offsets [4,12) overlap the previous tensor "
              "'a' ending at 8");
}

TEST(safetensors_bad_offsets_gapped)
{
    CHECK_BAD("{" T1("a", "F32", "[2]", 0, 8) "," T1("b", "F32", "[2]", 12, 20)
              "}", 20,
              "tensor 'b': data_offsets [12,20) leave a gap of 4 bytes after "
              "the previous tensor 'a' ending at 8");
    CHECK_BAD("{" T1("a", "F32", "[2]", 4, 12) "}", 12,
              "leave a gap of 4 bytes at the start of the data section");
}

TEST(safetensors_bad_offsets_out_of_range)
{
    CHECK_BAD("{" T1("a", "F32", "[2]", 0, 8) "," T1("b", "U8", "[2]", 1000,
                                                     1002) "}", 10,
              "tensor 'b': data_offsets [1000,1002) run past the end of the "
              "10-byte data section (out of range");
    CHECK_BAD("{" T1("a", "F32", "[2]", 0, 9223372036854775807) "}", 8,
              "out of range");
    CHECK_BAD("{" T1("a", "F32", "[2]", 0, 18446744073709551616) "}", 8,
              "integer 18446744073709551616 does not fit int64");
}

TEST(safetensors_bad_offsets_reversed)
{
    CHECK_BAD("{" T1("w", "F32", "[2]", 8, 0) "}", 8,
              "tensor 'w': data_offsets [8,0) are reversed");
}

TEST(safetensors_bad_offsets_malformed)
{
    CHECK_BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}",
              1, "tensor 'w': \"data_offsets\" must be [begin, end]");
    CHECK_BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
              "[0,1,2]}}", 1, "must be [begin, end]");
    CHECK_BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
              "[-1,0]}}", 1, "must be [begin, end]");
    CHECK_BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1,
              "tensor 'w': missing \"data_offsets\"");
    CHECK_BAD("{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
              "tensor 'w': missing \"dtype\"");
    CHECK_BAD("{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
              "\"dtype\" is not a string");
    CHECK_BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}",
              1, "\"shape\" is not an array");
    CHECK_BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":"
              "[0,1]}}", 1, "tensor 'w': dim 0 is not an integer");
}

TEST(safetensors_bad_shape_size_mismatch)
{
    CHECK_BAD("{" T1("w", "F32", "[3]", 0, 8) "}", 8,
              "tensor 'w': shape [3] of F32 needs 12 bytes but data_offsets "
              "[0,8) span 8 (shape-size mismatch)");
    /* sub-byte elements must fill whole bytes */
    CHECK_BAD("{" T1("w", "F4", "[3]", 0, 2) "}", 2,
              "3 elements of F4 do not fill whole bytes");
}

TEST(safetensors_bad_trailing_bytes)
{
    CHECK_BAD("{" T1("w", "F32", "[2]", 0, 8) "}", 12,
              "the data section is 12 bytes but the tensors cover 8: 4 "
              "trailing bytes");
    CHECK_BAD("{}", 1, "1 trailing bytes");
}

TEST(safetensors_bad_duplicate_names)
{
    CHECK_BAD("{" T1("w", "U8", "[1]", 0, 1) "," T1("w", "U8", "[1]", 1, 2)
              "}", 2, "duplicate key \"w\"");
    CHECK_BAD("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
              "duplicate key \"k\"");
}

TEST(safetensors_bad_huge_dims)
{
    CHECK_BAD("{" T1("w", "F32", "[4294967296,4294967296]", 0, 8) "}", 8,
              "tensor 'w': shape [4294967296,4294967296] has more elements "
              "than fit in 63 bits (size overflow)");
    CHECK_BAD("{" T1("w", "F64", "[4611686018427387904]", 0, 8) "}", 8,
              "shape [4611686018427387904] of F64 overflows 64 bits");
    CHECK_BAD("{" T1("w", "U8", "[18446744073709551615]", 0, 8) "}", 8,
              "integer 18446744073709551615 does not fit int64");
    /* empty, but its strides would overflow: Foundry cannot represent it */
    CHECK_BAD("{" T1("w", "U8", "[0,4294967296,4294967296]", 0, 0) "}", 0,
              "shape [0,4294967296,4294967296] has more elements than fit in "
              "63 bits (size overflow)");
}

TEST(safetensors_bad_too_many_dims)
{
    CHECK_BAD("{" T1("w", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1,
              "tensor 'w': shape has 9 dims, more than TM_MAX_DIMS (8)");
}

TEST(safetensors_bad_negative_dims)
{
    CHECK_BAD("{" T1("w", "U8", "[2,-3]", 0, 1) "}", 1,
              "tensor 'w': dim 1 is -3 (negative)");
}

TEST(safetensors_bad_metadata_not_string)
{
    CHECK_BAD("{\"__metadata__\":{\"epoch\":3}}", 0,
              "metadata value for key 'epoch' is not a string");
    CHECK_BAD("{\"__metadata__\":[\"a\"]}", 0,
              "\"__metadata__\" is not a JSON object");
}

TEST(safetensors_bad_nul_in_names)
{
    CHECK_BAD("{" T1("a\\u0000b", "U8", "[1]", 0, 1) "}", 1,
              "tensor name 'a\\x00b' contains a NUL character");
    CHECK_BAD("{\"__metadata__\":{\"k\":\"v\\u0000\"}}", 0,
              "metadata value 'v\\x00' contains a NUL character");
}

/* The message names the file it came from. */
TEST(safetensors_bad_file_message_names_the_path)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return;
    size_t n;
    unsigned char *b = image_len(strlen("{}      "), "{}      ", 3, &n);
    REQUIRE(b);
    CHECK(tt_write_file(tt_path(p, dir, "model.safetensors"), b, n));
    tm_clear_error();
    CHECK(tm_safetensors_open(p) == NULL);
    CHECK(strstr(tm_last_error(), "tm_safetensors_open: "));
    CHECK(strstr(tm_last_error(), p));
    CHECK(strstr(tm_last_error(), "3 trailing bytes"));
    free(b);
    tt_rmdir(dir);
}

/* ------------------------------------------- dtypes Foundry does not have */

/* Every dtype of the format (the reference's Dtype enum) is recognised:
 * files open and list; reading a dtype Foundry lacks is TM_EDTYPE. */
TEST(safetensors_every_spec_dtype_opens_and_lists)
{
    static const struct {
        const char *name;
        int bits;
        int tm; /* -1: unsupported */
    } d[] = {
        {"BOOL", 8, TM_BOOL}, {"F4", 4, -1},        {"F6_E2M3", 6, -1},
        {"F6_E3M2", 6, -1},   {"U8", 8, TM_U8},     {"I8", 8, TM_I8},
        {"F8_E5M2", 8, -1},   {"F8_E4M3", 8, -1},   {"F8_E8M0", 8, -1},
        {"I16", 16, TM_I16},  {"U16", 16, -1},      {"F16", 16, TM_F16},
        {"BF16", 16, TM_BF16}, {"I32", 32, TM_I32}, {"U32", 32, -1},
        {"F32", 32, TM_F32},  {"C64", 64, -1},      {"F64", 64, TM_F64},
        {"I64", 64, TM_I64},  {"U64", 64, -1},
    };
    enum { ND = sizeof d / sizeof d[0] };
    char hdr[4096];
    size_t o = 0, off = 0;
    o += (size_t)snprintf(hdr + o, sizeof hdr - o, "{");
    for (int i = 0; i < ND; i++) {
        size_t nb = (size_t)(8 * d[i].bits / 8); /* shape [8] */
        o += (size_t)snprintf(hdr + o, sizeof hdr - o,
                              "%s\"t_%s\":{\"dtype\":\"%s\",\"shape\":[8],"
                              "\"data_offsets\":[%zu,%zu]}", i ? "," : "",
                              d[i].name, d[i].name, off, off + nb);
        off += nb;
    }
    snprintf(hdr + o, sizeof hdr - o, "}");
    tm_safetensors *f = open_image(hdr, off);
    REQUIRE(f);
    CHECK_INT(tm_safetensors_count(f), ND);
    for (int i = 0; i < ND; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "t_%s", d[i].name);
        int k = tm_safetensors_find(f, nm);
        CHECK(k >= 0);
        if (k < 0) continue;
        CHECK(!strcmp(tm_safetensors_dtype_name(f, k), d[i].name));
        CHECK_INT(tm_safetensors_ndim(f, k), 1);
        CHECK_INT(tm_safetensors_shape(f, k)[0], 8);
        tm_dtype dt;
        if (d[i].tm < 0) {
            CHECK_STATUS(tm_safetensors_dtype(f, k, &dt), TM_EDTYPE,
                         "unsupported dtype");
            CHECK_NULL_ERR(tm_safetensors_get(f, nm), TM_EDTYPE,
                           "unsupported dtype");
            CHECK_NULL_ERR(tm_safetensors_load(f, nm), TM_EDTYPE, d[i].name);
        } else {
            CHECK_INT(tm_safetensors_dtype(f, k, &dt), TM_OK);
            CHECK_INT(dt, d[i].tm);
            tm_tensor *t = tm_safetensors_get(f, nm);
            CHECK(t && tm_dtype_of(t) == (tm_dtype)d[i].tm);
            tm_free(t);
        }
    }
    tm_safetensors_close(f);
}

/* Another writer may place a tensor at an offset that is not a multiple of
 * its element size: get then copies (still read-only, same values). */
TEST(safetensors_misaligned_tensor_is_copied)
{
    /* "a" is 1 byte, so "b" starts at an odd offset */
    const char *hdr = "{" T1("a", "U8", "[1]", 0, 1) ","
                      T1("b", "F32", "[1]", 1, 5) "}";
    size_t n;
    unsigned char *img = image_len(strlen(hdr), hdr, 5, &n);
    REQUIRE(img);
    float one = 1.0f;
    memcpy(img + 8 + strlen(hdr) + 1, &one, 4);
    tm_safetensors *f = tm_safetensors_open_memory(img, n);
    free(img);
    REQUIRE(f);
    tm_tensor *b = tm_safetensors_get(f, "b");
    REQUIRE(b);
    CHECK_VALUES(b, ((double[]){1}), 1, 0, 0);
    CHECK(tm_storage_is_readonly(tm_storage_of(b)));
    CHECK_STATUS(tm_fill_(b, 2), TM_ESTATE, "read-only");
    tm_free(b);
    tm_safetensors_close(f);
}

/* Unknown fields in a tensor entry are ignored, as the reference does;
 * "__metadata__": null means no metadata. */
TEST(safetensors_tolerates_what_the_reference_tolerates)
{
    tm_safetensors *f = open_image(
        "{\"__metadata__\":null,\"w\":{\"extra\":[1,{}],\"dtype\":\"U8\","
        "\"shape\":[2],\"data_offsets\":[0,2]}}  ", 2);
    REQUIRE(f);
    CHECK(!tm_safetensors_has_metadata(f));
    CHECK_INT(tm_safetensors_count(f), 1);
    tm_safetensors_close(f);
    /* tensors listed in any order; zero-size tensors anywhere */
    f = open_image("{" T1("b", "U8", "[1]", 1, 2) "," T1("z", "F32", "[0,3]",
                                                         2, 2) ","
                   T1("a", "U8", "[1]", 0, 1) "}", 2);
    REQUIRE(f);
    CHECK(!strcmp(tm_safetensors_name(f, 0), "a"));
    CHECK(!strcmp(tm_safetensors_name(f, 1), "b"));
    CHECK(!strcmp(tm_safetensors_name(f, 2), "z"));
    tm_safetensors_close(f);
    /* an empty tensor whose other dims exceed the file (found by fuzzing:
     * a view's strides would reach past the mapping) */
    f = open_image("{" T1("e", "U8", "[2,0,4294967296,3]", 0, 0) "}", 0);
    REQUIRE(f);
    tm_tensor *e = tm_safetensors_get(f, "e");
    REQUIRE(e);
    CHECK_SHAPE(e, 2, 0, 4294967296, 3);
    CHECK_INT(tm_numel(e), 0);
    CHECK(tm_storage_is_readonly(tm_storage_of(e)));
    tm_free(e);
    tm_safetensors_close(f);
}
