/* test_gguf_errors.c — one test per kind of malformed GGUF file, each built
 * in memory field by field: the reader must refuse it with TM_EFORMAT and a
 * message naming "<memory>" and the problem, before allocating from any
 * count it has not checked against the file's size. */
#include "harness.h"
#include "gguf_build.h"

static void check_bad(const char *file, int line, gb *b, const char *substr)
{
    tm_clear_error();
    tm_gguf *g = tm_gguf_open_memory(b->p, b->n);
    tt_check_error(file, line, "tm_gguf_open_memory", g == NULL, TM_EFORMAT,
                   substr);
    if (!strstr(tm_last_error(), "tm_gguf_open_memory: <memory>: "))
        tt_fail(file, line, "message does not name the function and the "
                "file: %s", tm_last_error());
    tm_gguf_close(g);
    free(b->p);
    memset(b, 0, sizeof *b);
}
#define CHECK_BAD(b, substr) check_bad(__FILE__, __LINE__, (b), (substr))

/* A header with one kv and one F32 [4] tensor at offset 0, aligned. */
static void one_tensor(gb *b, uint64_t n_tensors)
{
    uint64_t ne[1] = {4};
    gb_header(b, 3, n_tensors, 1);
    gb_kv_u32(b, "a.b", 7);
    gb_tinfo(b, "w", 1, ne, 0, 0);
}

TEST(gguf_bad_magic_and_version)
{
    gb b = {0};
    gb_header(&b, 3, 0, 0);
    b.p[3] = 'X';
    CHECK_BAD(&b, "bad magic 'GGUX' (not a GGUF file)");
    gb_header(&b, 1, 0, 0);
    CHECK_BAD(&b, "version 1 is not supported");
    gb_header(&b, 4, 0, 0);
    CHECK_BAD(&b, "unsupported version 4");
    gb_header(&b, 0x03000000u, 0, 0);
    CHECK_BAD(&b, "unsupported version 50331648, a big-endian file?");
    gb_bytes(&b, "GG", 2);
    CHECK_BAD(&b, "header: the magic at byte 0 needs 4 bytes but only 2");
    tm_clear_error();
    CHECK(tm_gguf_open_memory(NULL, 0) == NULL);
    CHECK_INT(tm_last_status(), TM_EFORMAT);
}

/* Every prefix of a valid file (header, kvs of each type, tensor infos,
 * data) fails as truncated. */
TEST(gguf_bad_truncated_everywhere)
{
    gb b = {0};
    uint64_t ne[2] = {4, 2};
    gb_header(&b, 3, 1, 4);
    gb_kv_u32(&b, "k.u32", 5);
    gb_str(&b, "k.str");
    gb_u32(&b, 8);
    gb_str(&b, "hello");
    gb_str(&b, "k.arr");
    gb_u32(&b, 9);
    gb_u32(&b, 9); /* array of arrays */
    gb_u64(&b, 1);
    gb_u32(&b, 8); /* of strings */
    gb_u64(&b, 2);
    gb_str(&b, "x");
    gb_str(&b, "yz");
    gb_str(&b, "k.f64");
    gb_u32(&b, 12);
    gb_u64(&b, 0x3FF0000000000000ull);
    gb_tinfo(&b, "t", 2, ne, 0, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 32, 0x42);
    tm_gguf *g = tm_gguf_open_memory(b.p, b.n);
    REQUIRE(g != NULL);
    tm_gguf_close(g);
    for (size_t n = 0; n < b.n; n++) {
        tm_clear_error();
        g = tm_gguf_open_memory(b.p, n);
        if (g || tm_last_status() != TM_EFORMAT ||
            !strstr(tm_last_error(), "truncated"))
            tt_fail(__FILE__, __LINE__, "prefix of %zu bytes: %s", n,
                    g ? "opened" : tm_last_error());
        tm_gguf_close(g);
    }
    free(b.p);
}

TEST(gguf_bad_counts)
{
    gb b = {0};
    gb_header(&b, 3, 0, (uint64_t)1 << 60);
    CHECK_BAD(&b, "1152921504606846976 metadata entries cannot fit in the 0 "
              "bytes left");
    gb_header(&b, 3, UINT64_MAX, 0);
    gb_fill(&b, 100, 0);
    CHECK_BAD(&b, "tensor infos cannot fit in the 100 bytes left");
    gb_header(&b, 2, 1, 0); /* a tensor info needs >= 24 bytes */
    gb_fill(&b, 23, 0);
    CHECK_BAD(&b, "tensor count out of range");
}

TEST(gguf_bad_lengths)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, UINT64_MAX); /* key length */
    gb_fill(&b, 16, 'a');
    CHECK_BAD(&b, "metadata entry 0: the key of 18446744073709551615 bytes "
              "at byte 32 runs past the end of the file");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "s");
    gb_u32(&b, 8);
    gb_u64(&b, (uint64_t)1 << 40);
    gb_fill(&b, 8, 'a');
    CHECK_BAD(&b, "metadata entry 0 ('s'): a string value of 1099511627776 "
              "bytes");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a");
    gb_u32(&b, 9);
    gb_u32(&b, 4); /* uint32 */
    gb_u64(&b, 5);
    gb_fill(&b, 19, 0);
    CHECK_BAD(&b, "array of 5 uint32 elements at byte 49 needs at least 4 "
              "bytes per element but only 19 bytes are left (array length "
              "out of range");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a");
    gb_u32(&b, 9);
    gb_u32(&b, 8); /* strings: >= 8 bytes each */
    gb_u64(&b, (uint64_t)1 << 61);
    gb_fill(&b, 64, 0);
    CHECK_BAD(&b, "array of 2305843009213693952 string elements");
    /* a key over the cap, though the file holds it */
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 70000);
    gb_fill(&b, 70000, 'k');
    gb_u32(&b, 0);
    gb_u8(&b, 1);
    CHECK_BAD(&b, "the key is 70000 bytes, more than the limit of 65535");
}

TEST(gguf_bad_value_types)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "v");
    gb_u32(&b, 13);
    gb_u32(&b, 0);
    CHECK_BAD(&b, "metadata entry 0 ('v'): value type 13 at byte 33 is not a "
              "GGUF value type");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "v");
    gb_u32(&b, 9);
    gb_u32(&b, 0xFFFFFFFFu);
    gb_u64(&b, 0);
    CHECK_BAD(&b, "array element type 4294967295 at byte 37 is not a GGUF "
              "value type");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "v");
    gb_u32(&b, 7);
    gb_u8(&b, 2);
    CHECK_BAD(&b, "bool value 2 at byte 37 is neither 0 nor 1");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "v");
    gb_u32(&b, 9);
    gb_u32(&b, 7);
    gb_u64(&b, 2);
    gb_u8(&b, 1);
    gb_u8(&b, 9);
    CHECK_BAD(&b, "bool value 9 (element 1, byte 50) is neither 0 nor 1");
    /* nested arrays past the depth cap */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "deep");
    gb_u32(&b, 9);
    for (int d = 0; d < 9; d++) {
        gb_u32(&b, 9);
        gb_u64(&b, 1);
    }
    gb_u32(&b, 0);
    gb_u64(&b, 0);
    CHECK_BAD(&b, "'deep'): arrays nested more than 8 deep");
}

TEST(gguf_bad_names)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 3);
    gb_bytes(&b, "a\xff" "b", 3);
    gb_u32(&b, 0);
    gb_u8(&b, 1);
    CHECK_BAD(&b, "the key is not valid UTF-8 (byte 0xFF at offset 1)");
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 3);
    gb_bytes(&b, "a\0b", 3);
    gb_u32(&b, 0);
    gb_u8(&b, 1);
    CHECK_BAD(&b, "the key contains a NUL byte");
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 0);
    gb_u32(&b, 0);
    gb_u8(&b, 1);
    CHECK_BAD(&b, "metadata entry 0: the key is empty");
    uint64_t ne[1] = {4};
    gb_header(&b, 3, 1, 0);
    gb_u64(&b, 2);
    gb_bytes(&b, "\xc3\x28", 2);
    gb_u32(&b, 1);
    gb_u64(&b, 4);
    gb_u32(&b, 0);
    gb_u64(&b, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 16, 0);
    CHECK_BAD(&b, "tensor 0: the name is not valid UTF-8");
    /* duplicates */
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "x.y", 1);
    gb_kv_u32(&b, "x.y", 2);
    CHECK_BAD(&b, "duplicate metadata key 'x.y' (entries 0 and 1)");
    gb_header(&b, 3, 2, 0);
    gb_tinfo(&b, "w", 1, ne, 0, 0);
    gb_tinfo(&b, "w", 1, ne, 0, 32);
    gb_pad(&b, 32);
    gb_fill(&b, 48, 0);
    CHECK_BAD(&b, "duplicate tensor name 'w' (entries 0 and 1)");
}

TEST(gguf_bad_alignment)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, 10); /* uint64 */
    gb_u64(&b, 32);
    CHECK_BAD(&b, "general.alignment is uint64, not uint32");
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 0);
    CHECK_BAD(&b, "general.alignment is 0: it must be a nonzero power of "
              "two");
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 48);
    CHECK_BAD(&b, "general.alignment is 48");
}

TEST(gguf_bad_dims_and_types)
{
    gb b = {0};
    uint64_t ne[5] = {4, 1, 1, 1, 1};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 5, ne, 0, 0);
    CHECK_BAD(&b, "tensor 0 ('w'): 5 dims, more than 4");
    uint64_t neg[2] = {4, (uint64_t)1 << 63};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, neg, 0, 0);
    CHECK_BAD(&b, "dim 1 is 9223372036854775808 (negative as int64)");
    uint64_t big[3] = {(uint64_t)1 << 32, (uint64_t)1 << 31, 2};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 3, big, 0, 0);
    CHECK_BAD(&b, "the element count overflows int64");
    uint64_t bb[2] = {(uint64_t)1 << 61, 2}; /* 2^62 values of f32 */
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, bb, 0, 0);
    CHECK_BAD(&b, "the byte size overflows int64");
    /* 2^62 f32 values: 2^64 bytes, which wraps to 0 in 64 bits */
    uint64_t wrap[1] = {(uint64_t)1 << 62};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 1, wrap, 0, 0);
    CHECK_BAD(&b, "the byte size overflows int64");
    /* empty, but its strides would not fit either */
    uint64_t ewrap[2] = {(uint64_t)1 << 62, 0};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "e", 2, ewrap, 0, 0);
    CHECK_BAD(&b, "the byte size overflows int64");
    uint64_t r33[1] = {33};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "q", 1, r33, 2, 0); /* Q4_0 */
    CHECK_BAD(&b, "'q'): a row of 33 values is not a multiple of Q4_0's "
              "block of 32");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 1, ne, 31, 0);
    CHECK_BAD(&b, "unknown ggml tensor type 31");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 1, ne, 0xFFFFFFFFu, 0);
    CHECK_BAD(&b, "unknown ggml tensor type 4294967295");
}

TEST(gguf_bad_offsets)
{
    gb b = {0};
    one_tensor(&b, 1);
    b.n -= 8;
    gb_u64(&b, 4);
    gb_pad(&b, 32);
    gb_fill(&b, 64, 0);
    CHECK_BAD(&b, "tensor 0 ('w'): data offset 4 is not a multiple of the "
              "alignment 32 (misaligned tensor data)");
    one_tensor(&b, 1);
    gb_pad(&b, 32);
    gb_fill(&b, 15, 0);
    CHECK_BAD(&b, "tensor 0 ('w'): data at offset 0 of 16 bytes runs past "
              "the end of the 15-byte data section (out of the file");
    one_tensor(&b, 1);
    b.n -= 8;
    gb_u64(&b, (uint64_t)1 << 62);
    gb_pad(&b, 32);
    gb_fill(&b, 64, 0);
    CHECK_BAD(&b, "data at offset 4611686018427387904 of 16 bytes runs past");
    one_tensor(&b, 1);
    b.n -= 8;
    gb_u64(&b, UINT64_MAX - 31);
    gb_pad(&b, 32);
    gb_fill(&b, 64, 0);
    CHECK_BAD(&b, "data offset 18446744073709551584 is out of range");
    /* an empty tensor still has to start inside the data section */
    uint64_t ne0[1] = {0};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "e", 1, ne0, 0, 64);
    gb_pad(&b, 32);
    gb_fill(&b, 32, 0);
    CHECK_BAD(&b, "tensor 0 ('e'): data at offset 64 of 0 bytes runs past "
              "the end of the 32-byte data section");
    /* overlap: two 16-byte tensors at 0 and 0 */
    uint64_t ne[1] = {4}, ne8[1] = {8};
    gb_header(&b, 3, 2, 0);
    gb_tinfo(&b, "a", 1, ne8, 0, 0);
    gb_tinfo(&b, "b", 1, ne, 0, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 64, 0);
    CHECK_BAD(&b, "tensor 1 ('b'): data at offset 0 overlaps tensor 0 ('a') "
              "at [0, 32)");
    /* and with padding respected, the second starts inside the first */
    uint64_t ne16[1] = {16};
    gb_header(&b, 3, 2, 1);
    gb_kv_u32(&b, "general.alignment", 16);
    gb_tinfo(&b, "a", 1, ne16, 0, 32);
    gb_tinfo(&b, "b", 1, ne, 0, 64);
    gb_pad(&b, 16);
    gb_fill(&b, 128, 0);
    CHECK_BAD(&b, "tensor 1 ('b'): data at offset 64 overlaps tensor 0 ('a') "
              "at [32, 96)");
}

/* Types Foundry has no dtype for still validate (their sizes are known)
 * and list; only cutting a tensor fails. */
TEST(gguf_foreign_types_list_but_do_not_cut)
{
    gb b = {0};
    uint64_t ne[2] = {256, 2};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "q2", 2, ne, 10, 0); /* Q2_K: 84 bytes per 256 */
    gb_pad(&b, 32);
    gb_fill(&b, 168, 0x5A);
    tm_gguf *g = tm_gguf_open_memory(b.p, b.n);
    REQUIRE(g != NULL);
    tm_gguf_tensor_info ti;
    CHECK_INT(tm_gguf_tensor_info_at(g, 0, &ti), TM_OK);
    CHECK_INT(ti.ggml_type, 10);
    CHECK_INT((int)ti.dtype, -1);
    CHECK_INT(ti.nbytes, 168);
    CHECK_INT(ti.shape[0], 2);
    CHECK_INT(ti.shape[1], 256);
    CHECK_NULL_ERR(tm_gguf_tensor(g, 0), TM_EUNSUPPORTED,
                   "tensor 'q2' has ggml type Q2_K (10), which Foundry "
                   "cannot compute with");
    CHECK_NULL_ERR(tm_gguf_tensor(g, 1), TM_ERANGE, "tensor index 1 out of "
                   "range");
    CHECK_NULL_ERR(tm_gguf_tensor_by_name(g, "nope"), TM_EINVAL,
                   "no tensor named 'nope'");
    tm_gguf_close(g);
    free(b.p);
}
