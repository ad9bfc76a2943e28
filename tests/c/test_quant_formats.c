/* test_quant_formats.c — byte compatibility with independent
 * implementations of ggml's layouts: tests/data/quant/<dtype>.qvec, made by
 * tests/gen/gen_quant_vectors.py from the `gguf` package and numpy
 * transcriptions of ggml's reference code (never from Foundry).  Checks
 *   - quantize: the 32-value formats, Q8_1 and Q8_K byte-identical to the
 *     oracle, through the reference, the dispatching row function and
 *     tm_quantize_rows (1 and 3 threads);
 *   - dequantize: bit-identical for every dtype (NaN matches any NaN:
 *     payloads of NaN produced from Inf * 0 differ between CPUs), through
 *     the reference, every kernel family this CPU runs, tm_dequantize_rows;
 *   - round trips on Gaussian, Laplace, Student-t, uniform and real
 *     trained weights: within each format's bound (quant_bounds.h), and
 *     for the K-quants our scale search's RMSE <= that of ggml's
 *     reference quantizer on the same data (computed by the
 *     transcription). */
#include "harness.h"
#include "../../cpu/cpu_features.h"
#include "../../quantize/quant_impl.h"
#include "quant_bounds.h"

#include <stdlib.h>

#define DATA "tests/data/quant/"

typedef struct {
    unsigned char *buf;
    size_t len, pos;
} reader;

static bool rd(reader *r, void *out, size_t n)
{
    if (r->len - r->pos < n) return false;
    memcpy(out, r->buf + r->pos, n);
    r->pos += n;
    return true;
}

static bool load(const char *name, reader *r)
{
    char path[256];
    snprintf(path, sizeof path, DATA "%s.qvec", name);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    r->buf = malloc((size_t)len);
    r->len = (size_t)len;
    r->pos = 0;
    bool ok = r->buf && fread(r->buf, 1, r->len, f) == r->len;
    fclose(f);
    return ok;
}

/* Bit-identical, except that any NaN equals any NaN. */
static int64_t count_mismatch(const float *got, const float *want, int64_t n,
                              int64_t *first)
{
    int64_t bad = 0;
    *first = -1;
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        if (a == b || (got[i] != got[i] && want[i] != want[i])) continue;
        if (*first < 0) *first = i;
        bad++;
    }
    return bad;
}

typedef struct {
    int quantize, dequantize, rmse;
} counts;

/* True when an expected block holds an infinite binary16 scale: ggml's
 * bytes for values too large for the format, which tm_quantize_rows
 * writes too but reports as TM_ERANGE. */
static bool has_inf_scale(tm_dtype dt, const unsigned char *q, size_t nb,
                          size_t bytes)
{
    int off[2] = {0, 2}, k = 0;
    switch (dt) {
    case TM_Q8_0:
    case TM_Q4_0:
    case TM_Q5_0: k = 1; break;
    case TM_Q4_1:
    case TM_Q5_1:
    case TM_Q8_1: k = 2; break;
    default: k = 0; /* Q8_K: an F32 scale */
    }
    for (size_t b = 0; b < nb; b += bytes)
        for (int i = 0; i < k; i++)
            if ((q[b + (size_t)off[i] + 1] & 0x7c) == 0x7c) return true;
    return false;
}

static void check_quantize(const tm__qtraits *t, const char *label,
                           const float *x, const unsigned char *want,
                           int64_t n, size_t nb)
{
    unsigned char *got = malloc(nb);
    REQUIRE(got);
    const tm_status rows_status =
        has_inf_scale(t->dtype, want, nb, t->bytes) ? TM_ERANGE : TM_OK;
    const tm__isa best = tm__cpu_isa();
    /* path 0: reference; 1..TM__ISA_COUNT: the row quantizer of each
     * family (SIMD activation quantizers where the backend has them);
     * then tm_quantize_rows on 1 and 3 threads */
    for (int path = 0; path < TM__ISA_COUNT + 3; path++) {
        memset(got, 0xa5, nb);
        if (path == 0) t->quantize_ref(x, got, n);
        else if (path <= TM__ISA_COUNT) {
            if (!tm__set_isa((tm__isa)(path - 1))) continue;
            tm__quantize_row(t->dtype, x, got, n);
            tm__set_isa(best);
        } else {
            tm_set_num_threads(path == TM__ISA_COUNT + 1 ? 1 : 3);
            /* rows of one block each, so threads split the work */
            CHECK_INT(tm_quantize_rows(t->dtype, x, got, n / t->block,
                                       t->block), rows_status);
            tm_set_num_threads(0);
        }
        size_t i = 0;
        while (i < nb && got[i] == want[i]) i++;
        if (i < nb)
            tt_fail(__FILE__, __LINE__,
                    "%s quantize '%s' (path %d): byte %zu (block %zu) is "
                    "0x%02x, expected 0x%02x",
                    t->name, label, path, i, i / t->bytes, got[i], want[i]);
    }
    free(got);
}

static void check_dequantize(const tm__qtraits *t, const char *label,
                             const unsigned char *q, const float *want,
                             int64_t n)
{
    float *got = malloc((size_t)n * sizeof *got);
    REQUIRE(got);
    tm__isa best = tm__cpu_isa();
    /* path 0: reference; 1..TM__ISA_COUNT: each family; then rows */
    for (int path = 0; path <= TM__ISA_COUNT + 1; path++) {
        memset(got, 0xa5, (size_t)n * sizeof *got);
        if (path == 0) t->dequantize_ref(q, got, n);
        else if (path <= TM__ISA_COUNT) {
            if (!tm__set_isa((tm__isa)(path - 1))) continue;
            tm__dequantize_row(t->dtype, q, got, n);
        } else {
            tm__set_isa(best);
            tm_set_num_threads(3);
            CHECK_INT(tm_dequantize_rows(t->dtype, q, got, n / t->block,
                                         t->block), TM_OK);
            tm_set_num_threads(0);
        }
        int64_t first, bad = count_mismatch(got, want, n, &first);
        if (bad)
            tt_fail(__FILE__, __LINE__,
                    "%s dequantize '%s' (path %d): %lld values differ, "
                    "first [%lld] = %.9g, expected %.9g",
                    t->name, label, path, (long long)bad, (long long)first,
                    got[first], want[first]);
    }
    tm__set_isa(best);
    free(got);
}

static void check_rmse(const tm__qtraits *t, const char *label,
                       const float *x, double ggml_rmse, int64_t n)
{
    unsigned char *q = malloc((size_t)(n / t->block) * t->bytes);
    float *y = malloc((size_t)n * sizeof *y);
    REQUIRE(q && y);
    CHECK_INT(tm_quantize_rows(t->dtype, x, q, 1, n), TM_OK);
    CHECK_INT(tm_dequantize_rows(t->dtype, q, y, 1, n), TM_OK);
    double se = 0;
    for (int64_t i = 0; i < n; i++)
        se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    const double ours = sqrt(se / (double)n);
    /* K-quants: no slack ("no worse than ggml's reference").  The 32-value
     * formats produce ggml's bytes, so the RMSEs are equal up to the order
     * of the F64 summation (numpy's pairwise sum against this loop). */
    const double slack = t->block == 32 ? 1e-12 * ggml_rmse : 0.0;
    if (!(ours <= ggml_rmse + slack))
        tt_fail(__FILE__, __LINE__, "%s '%s': rmse %.6g > ggml's %.6g",
                t->name, label, ours, ggml_rmse);
    const int64_t bad = tt_quant_bound_violations(t->dtype, x, y, n);
    if (bad)
        tt_fail(__FILE__, __LINE__, "%s '%s': %lld %s beyond the round-trip "
                "bound", t->name, label, (long long)bad,
                t->block == 32 ? "values" : "super-blocks");
    free(q);
    free(y);
}

static void run_file(tm_dtype dt, counts *c)
{
    const tm__qtraits *t = tm__qtraits_of(dt);
    reader r = {0};
    if (!load(t->name, &r)) {
        tt_fail(__FILE__, __LINE__, "cannot read " DATA "%s.qvec", t->name);
        free(r.buf);
        return;
    }
    char magic[8];
    uint32_t nrec = 0;
    if (!rd(&r, magic, 8) || memcmp(magic, "FQVEC1\0\0", 8) ||
        !rd(&r, &nrec, 4)) {
        tt_fail(__FILE__, __LINE__, "%s.qvec: bad header", t->name);
        goto done;
    }
    for (uint32_t k = 0; k < nrec; k++) {
        uint32_t kind, ll;
        uint64_t n;
        char label[256] = {0};
        if (!rd(&r, &kind, 4) || !rd(&r, &ll, 4) || ll >= sizeof label ||
            !rd(&r, label, ll) || !rd(&r, &n, 8) || n % (uint64_t)t->block ||
            n > (1u << 24)) {
            tt_fail(__FILE__, __LINE__, "%s.qvec: bad record %u", t->name, k);
            goto done;
        }
        const size_t nb = (size_t)(n / (uint64_t)t->block) * t->bytes;
        const size_t nf = (size_t)n * sizeof(float);
        const unsigned char *p = r.buf + r.pos;
        size_t need = kind == 3 ? nf + 8 : nf + nb;
        if (r.len - r.pos < need) {
            tt_fail(__FILE__, __LINE__, "%s.qvec: short record %u", t->name, k);
            goto done;
        }
        float *f = malloc(nf);
        REQUIRE(f);
        if (kind == 1) {
            memcpy(f, p, nf);
            check_quantize(t, label, f, p + nf, (int64_t)n, nb);
            c->quantize++;
        } else if (kind == 2) {
            /* blocks hold halves / an F32: copy them to aligned memory */
            unsigned char *blocks = malloc(nb);
            REQUIRE(blocks);
            memcpy(blocks, p, nb);
            memcpy(f, p + nb, nf);
            check_dequantize(t, label, blocks, f, (int64_t)n);
            free(blocks);
            c->dequantize++;
        } else if (kind == 3) {
            double e;
            memcpy(f, p, nf);
            memcpy(&e, p + nf, 8);
            check_rmse(t, label, f, e, (int64_t)n);
            c->rmse++;
        }
        free(f);
        r.pos += need;
    }
done:
    free(r.buf);
}

TEST(quant_formats_32_value_quantize_byte_identical_to_ggml)
{
    static const tm_dtype fmts[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                    TM_Q5_1, TM_Q8_1, TM_Q8_K};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        counts c = {0};
        run_file(fmts[i], &c);
        /* every file carries quantize and dequantize vectors, the weight
         * formats round-trip data (real weights included) */
        CHECK(c.quantize >= 8);
        CHECK(c.dequantize >= 2);
        CHECK(c.rmse >= (fmts[i] == TM_Q8_1 || fmts[i] == TM_Q8_K ? 0 : 5));
    }
}

TEST(quant_formats_k_quants_decode_identically_and_beat_ggml_rmse)
{
    static const tm_dtype fmts[] = {TM_Q4_K, TM_Q5_K, TM_Q6_K};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        counts c = {0};
        run_file(fmts[i], &c);
        CHECK(c.dequantize >= 3);
        CHECK(c.rmse >= 5);
    }
}
