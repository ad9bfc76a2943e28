/* test_quant_tensor.c — quantized dtypes in the tensor core: dtype facts,
 * creation, byte counts, the views that keep blocks whole (and the errors
 * for the rest), byte copies, and the ops that must refuse them. */
#include "harness.h"

#include "foundry/quantize.h"

#include <stdint.h>
#include <stdlib.h>

/* Block sizes and bytes as ggml defines the formats (ggml-common.h's
 * block structs), written out independently of the core's table. */
static const struct {
    tm_dtype dt;
    const char *name;
    int64_t block;
    size_t bytes;
} qtab[] = {
    {TM_Q8_0, "q8_0", 32, 34},   {TM_Q4_0, "q4_0", 32, 18},
    {TM_Q4_1, "q4_1", 32, 20},   {TM_Q8_1, "q8_1", 32, 36},
    {TM_Q5_0, "q5_0", 32, 22},   {TM_Q5_1, "q5_1", 32, 24},
    {TM_Q4_K, "q4_k", 256, 144}, {TM_Q5_K, "q5_k", 256, 176},
    {TM_Q6_K, "q6_k", 256, 210}, {TM_Q8_K, "q8_k", 256, 292},
};
#define NQ ((int)(sizeof qtab / sizeof qtab[0]))

TEST(quant_dtype_facts)
{
    for (int i = 0; i < NQ; i++) {
        CHECK(tm_dtype_is_quantized(qtab[i].dt));
        CHECK(!tm_dtype_is_valid(qtab[i].dt));
        CHECK(strcmp(tm_dtype_name(qtab[i].dt), qtab[i].name) == 0);
        CHECK_INT(tm_dtype_block_elems(qtab[i].dt), qtab[i].block);
        CHECK_INT(tm_dtype_block_bytes(qtab[i].dt), qtab[i].bytes);
        CHECK_INT(tm_dtype_size(qtab[i].dt), 0);
        CHECK_INT(tm_quant_row_bytes(qtab[i].dt, 3 * qtab[i].block),
                  3 * qtab[i].bytes);
        tm_dtype got = TM_F32;
        CHECK(tm_dtype_parse(qtab[i].name, &got) == TM_OK);
        CHECK_INT(got, qtab[i].dt);
    }
    CHECK(!tm_dtype_is_quantized(TM_F32));
    CHECK(!tm_dtype_is_quantized(TM_BOOL));
    CHECK(!tm_dtype_is_quantized((tm_dtype)42));
    CHECK(!tm_dtype_is_quantized((tm_dtype)31));
    CHECK(strcmp(tm_dtype_name((tm_dtype)42), "invalid") == 0);
    CHECK_INT(tm_dtype_block_elems(TM_F16), 1);
    CHECK_INT(tm_dtype_block_bytes(TM_F16), 2);
    CHECK_INT(tm_dtype_block_elems((tm_dtype)42), 0);
    CHECK_INT(tm_dtype_block_bytes((tm_dtype)42), 0);
    CHECK_INT(tm_quant_row_bytes(TM_F32, 5), 20);
    CHECK_INT(tm_quant_row_bytes(TM_Q4_0, 0), 0);

    tm_clear_error();
    CHECK_INT(tm_quant_row_bytes(TM_Q4_K, 100), 0);
    CHECK(tm_last_status() == TM_ESHAPE);
    CHECK(strstr(tm_last_error(), "q4_k") && strstr(tm_last_error(), "100"));
    tm_clear_error();
    CHECK_INT(tm_quant_row_bytes(TM_Q8_0, -32), 0);
    CHECK(tm_last_status() == TM_ESHAPE);

    tm_dtype got = TM_F32;
    CHECK(tm_dtype_parse("Q4_K", &got) == TM_OK && got == TM_Q4_K);
    CHECK(tm_dtype_parse("F16", &got) == TM_OK && got == TM_F16);
    CHECK(tm_dtype_parse("bool", &got) == TM_OK && got == TM_BOOL);
    CHECK_STATUS(tm_dtype_parse("q4_2", &got), TM_EINVAL, "\"q4_2\"");
    CHECK_STATUS(tm_dtype_parse("q4_k_", &got), TM_EINVAL, "q4_k_");
    CHECK_STATUS(tm_dtype_parse("", &got), TM_EINVAL, "unknown dtype");
    CHECK_STATUS(tm_dtype_parse(NULL, &got), TM_EINVAL, "NULL");
}

TEST(quant_tensor_create)
{
    for (int i = 0; i < NQ; i++) {
        int64_t n = 2 * qtab[i].block;
        tm_tensor *t = tm_zeros((int64_t[]){3, n}, 2, qtab[i].dt);
        REQUIRE(t);
        CHECK(tm_dtype_of(t) == qtab[i].dt);
        CHECK_SHAPE(t, 3, n);
        CHECK_INT(tm_numel(t), 3 * n);
        CHECK_INT(tm_nbytes(t), 6 * qtab[i].bytes);
        CHECK(tm_is_contiguous(t));
        const unsigned char *p = tm_data(t);
        REQUIRE(p);
        int nz = 0;
        for (size_t k = 0; k < tm_nbytes(t); k++) nz += p[k] != 0;
        CHECK_INT(nz, 0);
        CHECK_INT(tm_storage_nbytes(tm_storage_of(t)), 6 * qtab[i].bytes);
        char d[128];
        char want[64];
        snprintf(want, sizeof want, "%s[3,%lld]", qtab[i].name,
                 (long long)n);
        CHECK(strcmp(tm_describe(t, d, sizeof d), want) == 0);
        tm_free(t);
    }
    /* the last dim of a shape must be whole blocks; 0-d cannot be */
    CHECK_NULL_ERR(tm_empty((int64_t[]){4, 48}, 2, TM_Q4_0), TM_ESHAPE,
                   "multiple of its block of 32");
    CHECK_NULL_ERR(tm_empty((int64_t[]){2, 128}, 2, TM_Q4_K), TM_ESHAPE,
                   "q4_k");
    CHECK_NULL_ERR(tm_empty(NULL, 0, TM_Q8_0), TM_ESHAPE, "at least 1 dim");
    CHECK_NULL_ERR(tm_empty((int64_t[]){32}, 1, (tm_dtype)42), TM_EDTYPE,
                   "not a dtype");
    /* a count whose bytes overflow */
    CHECK_NULL_ERR(tm_empty((int64_t[]){INT64_MAX / 32 / 2, 32}, 2,
                            TM_Q8_K), TM_ESHAPE, "");
    CHECK_NULL_ERR(tm_ones((int64_t[]){32}, 1, TM_Q8_0), TM_EDTYPE,
                   "tm_quantize");
    /* empty tensors */
    tm_tensor *e = tm_empty((int64_t[]){0, 64}, 2, TM_Q5_1);
    REQUIRE(e);
    CHECK_INT(tm_nbytes(e), 0);
    tm_tensor *ec = tm_clone(e);
    CHECK(ec && tm_nbytes(ec) == 0);
    tm_free(ec);
    tm_free(e);
}

TEST(quant_tensor_from_memory)
{
    enum { R = 4, N = 64 };
    size_t rb = 2 * 18; /* q4_0: 2 blocks of 18 bytes per row */
    _Alignas(8) unsigned char raw[R * 36];
    for (size_t k = 0; k < sizeof raw; k++) raw[k] = (unsigned char)(k * 7);
    tm_tensor *a = tm_from_buffer(raw, (int64_t[]){R, N}, 2, TM_Q4_0);
    REQUIRE(a);
    CHECK(memcmp(tm_data(a), raw, sizeof raw) == 0);
    CHECK(tm_data(a) != (void *)raw);

    tm_tensor *w = tm_wrap(raw, (int64_t[]){R, N}, NULL, 2, TM_Q4_0, NULL,
                           NULL);
    REQUIRE(w);
    CHECK(tm_data(w) == (void *)raw);
    CHECK_INT(tm_storage_nbytes(tm_storage_of(w)), sizeof raw);

    /* rows 1..3 of the same storage, by an offset in values */
    tm_tensor *v = tm_tensor_from_storage(tm_storage_of(w), N,
                                          (int64_t[]){R - 1, N}, NULL, 2,
                                          TM_Q4_0);
    REQUIRE(v);
    CHECK(tm_data(v) == (void *)(raw + rb));
    CHECK_INT(tm_nbytes(v), (R - 1) * rb);
    tm_free(v);
    /* past the end, an offset inside a block, a row splitting blocks */
    CHECK_NULL_ERR(tm_tensor_from_storage(tm_storage_of(w), 2 * N,
                                          (int64_t[]){R - 1, N}, NULL, 2,
                                          TM_Q4_0), TM_ERANGE, "storage");
    CHECK_NULL_ERR(tm_tensor_from_storage(tm_storage_of(w), 16,
                                          (int64_t[]){2, N}, NULL, 2,
                                          TM_Q4_0), TM_EDTYPE, "split");
    CHECK_NULL_ERR(tm_tensor_from_storage(tm_storage_of(w), 0,
                                          (int64_t[]){2, 32},
                                          (int64_t[]){48, 1}, 2, TM_Q4_0),
                   TM_EDTYPE, "q4_0");
    /* blocks must sit at addresses their halves can be read from */
    CHECK_NULL_ERR(tm_wrap(raw + 1, (int64_t[]){1, N}, NULL, 2, TM_Q4_0,
                           NULL, NULL), TM_EINVAL, "aligned");
    static _Alignas(8) unsigned char k8[2 * 292];
    CHECK_NULL_ERR(tm_wrap(k8 + 2, (int64_t[]){1, 256}, NULL, 2, TM_Q8_K,
                           NULL, NULL), TM_EINVAL, "4-byte aligned");
    tm_tensor *k8t = tm_wrap(k8 + 4, (int64_t[]){1, 256}, NULL, 2, TM_Q8_K,
                             NULL, NULL);
    CHECK(k8t != NULL);
    tm_free(k8t);
    /* a transposed geometry: the block dim first */
    tm_tensor *tr = tm_tensor_from_storage(tm_storage_of(w), 0,
                                           (int64_t[]){N, R},
                                           (int64_t[]){1, N}, 2, TM_Q4_0);
    REQUIRE(tr);
    CHECK_INT(tm_stride(tr, 0), 1);
    tm_free(tr);
    tm_free(w);
    tm_free(a);
}

TEST(quant_tensor_views)
{
    enum { R = 6, N = 96 };
    size_t rb = 3 * 34; /* q8_0 */
    tm_tensor *f = tm_arange(0, R * N, 1, TM_U8);
    REQUIRE(f);
    unsigned char raw[R * 102];
    for (size_t k = 0; k < sizeof raw; k++) raw[k] = (unsigned char)(k % 251);
    tm_free(f);
    tm_tensor *q = tm_from_buffer(raw, (int64_t[]){R, N}, 2, TM_Q8_0);
    REQUIRE(q);
    const unsigned char *base = tm_data(q);

    tm_tensor *s = tm_select(q, 0, 2);
    REQUIRE(s);
    CHECK_SHAPE(s, N);
    CHECK(tm_data(s) == (const void *)(base + 2 * rb));
    CHECK_INT(tm_nbytes(s), rb);
    tm_free(s);

    tm_tensor *nr = tm_narrow(q, 0, 1, 3);
    REQUIRE(nr);
    CHECK(tm_data(nr) == (const void *)(base + rb));
    CHECK(tm_is_contiguous(nr));
    tm_free(nr);

    /* whole blocks of the block dim: allowed; a split block: refused */
    tm_tensor *nb = tm_narrow(q, 1, 32, 64);
    REQUIRE(nb);
    CHECK(tm_data(nb) == (const void *)(base + 34));
    tm_free(nb);
    CHECK_NULL_ERR(tm_narrow(q, 1, 16, 32), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_select(q, 1, 0), TM_EDTYPE, "split");
    CHECK_NULL_ERR(tm_slice(q, 1, 0, N, 2), TM_EDTYPE, "blocks");
    CHECK_NULL_ERR(tm_expand(q, (int64_t[]){2, R, N}, 3), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_view(q, (int64_t[]){R * 6, 16}, 2), TM_EDTYPE,
                   "q8_0");

    tm_tensor *u = tm_unsqueeze(q, 0);
    REQUIRE(u);
    CHECK_SHAPE(u, 1, R, N);
    tm_tensor *sq = tm_squeeze(u, 0);
    REQUIRE(sq);
    CHECK_SHAPE(sq, R, N);
    tm_free(sq);
    tm_free(u);
    tm_tensor *u2 = tm_unsqueeze(q, 2);
    CHECK(u2 && tm_ndim(u2) == 3);
    tm_free(u2);

    tm_tensor *fl = tm_reshape(q, (int64_t[]){R * N}, 1);
    REQUIRE(fl);
    CHECK(tm_data(fl) == (const void *)base);
    CHECK_INT(tm_nbytes(fl), sizeof raw);
    tm_free(fl);
    tm_tensor *sp = tm_view(q, (int64_t[]){2, 3, 3, 32}, 4);
    REQUIRE(sp);
    tm_tensor *sp1 = tm_select(sp, 2, 1); /* one block of every row */
    REQUIRE(sp1);
    CHECK(tm_data(sp1) == (const void *)(base + 34));
    tm_free(sp1);
    tm_free(sp);

    tm_tensor *t = tm_transpose(q, 0, 1);
    REQUIRE(t);
    CHECK_SHAPE(t, N, R);
    CHECK(!tm_is_contiguous(t));
    CHECK(tm_data(t) == (const void *)base);
    CHECK_NULL_ERR(tm_contiguous(t), TM_EDTYPE, "block dim last");
    CHECK_NULL_ERR(tm_reshape(t, (int64_t[]){R * N}, 1), TM_EDTYPE,
                   "block dim last");
    tm_tensor *tt = tm_transpose(t, 0, 1);
    CHECK(tt && tm_is_contiguous(tt));
    tm_free(tt);
    tm_tensor *p = tm_permute(t, (int[]){1, 0}, 2);
    CHECK(p && tm_is_contiguous(p));
    tm_free(p);
    tm_free(t);
    CHECK_NULL_ERR(tm_view_dtype(q, TM_U8), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_as_strided(q, (int64_t[]){R, 16}, (int64_t[]){N, 1},
                                 2, 0), TM_EDTYPE, "q8_0");
    tm_free(q);
}

TEST(quant_tensor_copies)
{
    enum { R = 5, N = 256 };
    size_t rb = 176; /* q5_k: one super-block per row */
    unsigned char raw[R * 176];
    for (size_t k = 0; k < sizeof raw; k++)
        raw[k] = (unsigned char)((k * 131) >> 3);
    tm_tensor *q = tm_from_buffer(raw, (int64_t[]){R, N}, 2, TM_Q5_K);
    REQUIRE(q);
    tm_tensor *c = tm_clone(q);
    REQUIRE(c);
    CHECK(tm_dtype_of(c) == TM_Q5_K);
    CHECK(tm_data(c) != tm_data(q));
    CHECK(memcmp(tm_data(c), raw, sizeof raw) == 0);

    /* rows 0, 2, 4: not contiguous, copied row by row */
    tm_tensor *ev = tm_slice(q, 0, 0, R, 2);
    REQUIRE(ev);
    CHECK(!tm_is_contiguous(ev));
    tm_tensor *evc = tm_contiguous(ev);
    REQUIRE(evc);
    CHECK(tm_is_contiguous(evc));
    const unsigned char *e = tm_data(evc);
    for (int r = 0; r < 3; r++)
        CHECK(memcmp(e + r * rb, raw + 2 * r * rb, rb) == 0);
    tm_tensor *evr = tm_reshape(ev, (int64_t[]){3 * N}, 1);
    CHECK(evr && memcmp(tm_data(evr), e, 3 * rb) == 0);
    tm_free(evr);

    /* copy_ between two of one dtype and shape: the bytes */
    tm_tensor *z = tm_zeros((int64_t[]){3, N}, 2, TM_Q5_K);
    REQUIRE(z);
    CHECK(tm_copy_(z, ev) == TM_OK);
    CHECK(memcmp(tm_data(z), e, 3 * rb) == 0);
    tm_tensor *z4 = tm_zeros((int64_t[]){3, N}, 2, TM_Q4_K);
    CHECK_STATUS(tm_copy_(z4, ev), TM_EDTYPE, "tm_quantize");
    tm_tensor *f = tm_zeros((int64_t[]){3, N}, 2, TM_F32);
    CHECK_STATUS(tm_copy_(f, ev), TM_EDTYPE, "q5_k");
    CHECK_STATUS(tm_copy_(ev, f), TM_EDTYPE, "q5_k");
    tm_tensor *one = tm_narrow(q, 0, 0, 1);
    CHECK_STATUS(tm_copy_(z, one), TM_ESHAPE, "broadcast");
    tm_free(one);
    /* a copy into rows of a view writes only those rows */
    tm_tensor *c1 = tm_narrow(c, 0, 1, 3);
    CHECK(c1 && tm_copy_(c1, z) == TM_OK);
    const unsigned char *cc = tm_data(c);
    CHECK(memcmp(cc, raw, rb) == 0);
    CHECK(memcmp(cc + rb, e, 3 * rb) == 0);
    CHECK(memcmp(cc + 4 * rb, raw + 4 * rb, rb) == 0);
    tm_free(c1);

    tm_tensor *same = tm_to(q, TM_CPU);
    CHECK(same == q);
    tm_free(same);
    CHECK_NULL_ERR(tm_to_dtype(q, TM_F32), TM_EDTYPE, "tm_dequantize");
    CHECK_NULL_ERR(tm_to_dtype(f, TM_Q8_0), TM_EDTYPE, "tm_quantize");
    tm_free(f);
    tm_free(z4);
    tm_free(z);
    tm_free(evc);
    tm_free(ev);
    tm_free(c);
    tm_free(q);
}

TEST(quant_tensor_refused_ops)
{
    tm_tensor *q = tm_zeros((int64_t[]){2, 64}, 2, TM_Q4_1);
    tm_tensor *f = tm_ones((int64_t[]){2, 64}, 2, TM_F32);
    REQUIRE(q && f);
    CHECK_NULL_ERR(tm_add(q, f), TM_EDTYPE, "q4_1");
    CHECK_NULL_ERR(tm_add(f, q), TM_EDTYPE, "q4_1");
    CHECK_NULL_ERR(tm_exp(q), TM_EDTYPE, "q4_1");
    CHECK_NULL_ERR(tm_sum(q, NULL, 0, false), TM_EDTYPE, "q4_1");
    CHECK_NULL_ERR(tm_softmax(q, -1), TM_EDTYPE, "q4_1");
    CHECK_NULL_ERR(tm_cat((tm_tensor *[]){q, q}, 2, 0), TM_EDTYPE,
                   "q4_1");
    CHECK_STATUS(tm_fill_(q, 1.0), TM_EDTYPE, "q4_1");
    CHECK_STATUS(tm_requires_grad_(q, true), TM_EDTYPE, "q4_1");
    CHECK(!tm_requires_grad(q));
    double v;
    CHECK_STATUS(tm_get(q, (int64_t[]){0, 0}, &v), TM_EDTYPE, "q4_1");
    CHECK_STATUS(tm_set(q, (int64_t[]){0, 0}, 1.0), TM_EDTYPE, "q4_1");
    CHECK_STATUS(tm_copy_to_buffer(q, &v, sizeof v, TM_F64), TM_EDTYPE,
                 "q4_1");
    tm_free(f);
    tm_free(q);
}

/* A sweep over the op families: each must refuse a quantized operand
 * with TM_EDTYPE (or, for those that check shapes first, a clear error),
 * never run a kernel on its blocks.  The message must name the dtype. */
TEST(quant_tensor_refused_sweep)
{
    tm_tensor *q = tm_zeros((int64_t[]){4, 32}, 2, TM_Q8_0);
    tm_tensor *f = tm_ones((int64_t[]){4, 32}, 2, TM_F32);
    tm_tensor *ix = tm_zeros((int64_t[]){4, 32}, 2, TM_I64);
    tm_tensor *i1 = tm_zeros((int64_t[]){2}, 1, TM_I64);
    tm_tensor *m = tm_zeros((int64_t[]){4, 32}, 2, TM_BOOL);
    REQUIRE(q && f && ix && i1 && m);
    tm_tensor *outs[] = {
        tm_where(m, q, f),
        tm_where(m, f, q),
        tm_clamp(q, 0, 1),
        tm_isfinite(q),
        tm_nan_to_num(q, 0, 0, 0),
        tm_isclose(q, f, 1e-5, 1e-8, false),
        tm_cumsum(q, 1),
        tm_argmax(q, 1, false),
        tm_layer_norm(q, NULL, NULL, 1e-5),
        tm_gather(q, 1, ix),
        tm_index_select(q, 0, i1),
        tm_masked_fill(q, m, 0),
        tm_pad(q, (int64_t[]){1, 1}, 2, 0),
        tm_repeat(q, (int64_t[]){2, 1}, 2),
        tm_tril(q, 0),
        tm_flip(q, (int[]){0}, 1),
        tm_roll(q, (int64_t[]){1}, 1, (int[]){0}, 1),
        tm_diagonal(q, 0, 0, 1),
        tm_unfold(q, 1, 32, 32),
        tm_nonzero(q),
        tm_einsum("ij->ji", (tm_tensor *[]){q}, 1),
        tm_stack((tm_tensor *[]){q, q}, 2, 0),
        tm_scatter_add(q, 1, ix, f),
        tm_scatter_add(f, 1, ix, q),
        tm_take_along_dim(q, ix, (int[]){1}),
        tm_repeat_interleave_int(q, 2, (int[]){0}, -1),
        tm_matmul(q, f),
    };
    int n = (int)(sizeof outs / sizeof outs[0]);
    for (int i = 0; i < n; i++) {
        if (outs[i]) tt_fail(__FILE__, __LINE__, "op %d accepted q8_0", i);
        tm_free(outs[i]);
    }
    tm_tensor *v = NULL, *iv = NULL;
    CHECK_STATUS(tm_sort(q, 1, false, &v, &iv), TM_EDTYPE, "q8_0");
    CHECK_STATUS(tm_topk(q, 1, 1, true, &v, &iv), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_cumsum(q, 1), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_isfinite(q), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_layer_norm(q, NULL, NULL, 1e-5), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_index_select(q, 0, i1), TM_EDTYPE, "q8_0");
    CHECK_NULL_ERR(tm_gather(q, 1, ix), TM_EDTYPE, "q8_0");
    tm_free(m);
    tm_free(i1);
    tm_free(ix);
    tm_free(f);
    tm_free(q);
}
