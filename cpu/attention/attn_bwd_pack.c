/*
 * attn_bwd_pack.c — the tile pieces of the F32 attention backward
 * (attn_bwd.h): operand packing for the GEMM micro-kernels, the tile
 * GEMM and the scores-to-weights step.
 */
#include "attn_bwd.h"
#include "../cpu_features.h"
#include "../vmath/vmath.h"

const tm__gemm_kernel *tm__abwd_kernel(void)
{
    switch (tm__cpu_isa()) {
#if defined(__x86_64__)
    case TM__ISA_AVX512: return &tm__sgemm_avx512;
    case TM__ISA_AVX2: return &tm__sgemm_avx2;
#endif
#if defined(__aarch64__)
    case TM__ISA_NEON: return &tm__sgemm_neon;
#endif
    default: return &tm__sgemm_portable;
    }
}

void tm__abwd_pf_add(tm__abwd_pf *pf, const void *base, int64_t rows,
                     int64_t stride, int64_t bytes, bool write)
{
    if (pf->n == TM__ABWD_PF_RANGES || rows <= 0 || bytes <= 0) return;
    pf->base[pf->n] = base;
    pf->rows[pf->n] = rows;
    pf->stride[pf->n] = stride;
    pf->bytes[pf->n] = bytes;
    pf->write[pf->n] = write;
    pf->n++;
}

static inline void pf_line(const char *p, bool write)
{
    if (write)
        __builtin_prefetch(p, 1, 3);
    else
        __builtin_prefetch(p, 0, 3);
}

void tm__abwd_pf_step(tm__abwd_pf *pf, int lines)
{
    while (lines > 0 && pf->r < pf->n) {
        int r = pf->r;
        const char *row = pf->base[r] + pf->row * pf->stride[r];
        pf_line(row + pf->off, pf->write[r]);
        lines--;
        pf->off += 64;
        if (pf->off >= pf->bytes[r]) {
            /* the row's last byte may sit on one more line */
            if (((uintptr_t)row & 63) + (uintptr_t)pf->bytes[r] >
                (uintptr_t)pf->off)
                pf_line(row + pf->bytes[r] - 1, pf->write[r]);
            pf->off = 0;
            if (++pf->row == pf->rows[r]) pf->row = 0, pf->r++;
        }
    }
}

void tm__abwd_gemm(const tm__gemm_kernel *kr, int64_t m, int64_t n,
                   int64_t kc, const float *a, const float *b, int64_t ldb,
                   float *c, int64_t ldc, float alpha, float beta,
                   tm__abwd_pf *pf)
{
#if defined(__x86_64__)
    if (kr == &tm__sgemm_avx512) {
        tm__abwd_gemm_avx512(m, n, kc, a, b, ldb, c, ldc, alpha, beta, pf);
        return;
    }
#endif
    int64_t mr = kr->mr, nr = kr->nr;
    /* Column panels outside: one kc x NR panel of B stays in L1 while
     * every row panel of A passes over it. */
    for (int64_t j = 0; j < n; j += nr)
        for (int64_t i = 0; i < m; i += mr) {
            kr->ukr(kc, a + i * kc, b + j, ldb, c + i * ldc + j, ldc, alpha,
                    beta);
            if (pf) tm__abwd_pf_step(pf, 8);
        }
}

/* One block: the family's micro-kernel, or the AVX-512 one with the dS
 * epilogue. */
static void block(const tm__gemm_kernel *kr, int64_t kc, const float *a,
                  const float *b, int64_t ldb, float *c, int64_t ldc,
                  float alpha, float beta, const float *rv, const float *s)
{
#if defined(__x86_64__)
    if (kr == &tm__sgemm_avx512) {
        tm__abwd_ukr_avx512(kc, a, b, ldb, c, ldc, alpha, beta, rv, s);
        return;
    }
#endif
    (void)rv, (void)s;
    kr->ukr(kc, a, b, ldb, c, ldc, alpha, beta);
}

/* The union of rows [r0, r1)'s key ranges (they move monotonically). */
static void rows_keys(const tm__abwd_band *bd, int64_t r0, int64_t r1,
                      int64_t *lo, int64_t *hi)
{
    *lo = INT64_MAX, *hi = 0;
    for (int64_t r = r0; r < r1; r++)
        if (bd->lo[r] < bd->hi[r]) {
            if (bd->lo[r] < *lo) *lo = bd->lo[r];
            if (bd->hi[r] > *hi) *hi = bd->hi[r];
        }
}

/* The rows [lo, hi) of [0, m) that see some key of [c0, c1). */
static void keys_rows(const tm__abwd_band *bd, int64_t m, int64_t c0,
                      int64_t c1, int64_t *lo, int64_t *hi)
{
    *lo = m, *hi = 0;
    for (int64_t r = 0; r < m; r++)
        if (bd->lo[r] < c1 && bd->hi[r] > c0 && bd->lo[r] < bd->hi[r]) {
            if (r < *lo) *lo = r;
            *hi = r + 1;
        }
}

void tm__abwd_gemm_band(const tm__gemm_kernel *kr, int kind,
                        const tm__abwd_band *bd, int64_t m, int64_t n,
                        int64_t kc, const float *a, const float *b,
                        int64_t ldb, float *c, int64_t ldc, float alpha,
                        float beta, const float *rv, const float *s,
                        tm__abwd_pf *pf)
{
    int64_t mr = kr->mr, nr = kr->nr, lo, hi;
    for (int64_t j = 0; j < n; j += nr) {
        int64_t dlo = 0, dhi = kc; /* KEYS: the depth this column block sees */
        if (kind == TM__ABWD_KEYS) {
            keys_rows(bd, kc, j, j + nr, &dlo, &dhi);
            if (dlo >= dhi) continue; /* C += 0 */
        }
        for (int64_t i = 0; i < m; i += mr) {
            const float *ab = a + i * kc;
            float *cb = c + i * ldc + j;
            if (kind == TM__ABWD_OUT) {
                rows_keys(bd, i, i + mr, &lo, &hi);
                if (lo >= j + nr || hi <= j) {
                    for (int64_t r = 0; r < mr; r++)
                        for (int64_t x = 0; x < nr; x++) cb[r * ldc + x] = 0;
                    continue;
                }
            } else if (kind == TM__ABWD_ROWS) {
                rows_keys(bd, i, i + mr, &dlo, &dhi);
                if (dlo >= dhi) continue; /* C += 0 */
            }
            block(kr, dhi - dlo, ab + dlo * mr, b + dlo * ldb + j, ldb, cb,
                  ldc, alpha, beta, rv ? rv + i : NULL,
                  s ? s + i * ldc + j : NULL);
            if (pf) tm__abwd_pf_step(pf, 8);
        }
    }
}

#if defined(__x86_64__)
/* Whether the AVX2 copies run (the AVX2 and AVX-512 families). */
static bool use_avx2(void)
{
    tm__isa isa = tm__cpu_isa();
    return isa == TM__ISA_AVX2 || isa == TM__ISA_AVX512;
}
#endif

void tm__abwd_pack_a(const float *src, int64_t ld, int64_t m, int64_t k,
                     int mr, float *dst)
{
#if defined(__x86_64__)
    if (mr == 8 && use_avx2()) {
        tm__abwd_pack_a8_avx2(src, ld, m, k, dst);
        return;
    }
#endif
    for (int64_t i = 0; i < m; i += mr) {
        int64_t rows = m - i < mr ? m - i : mr;
        float *d = dst + i * k;
        for (int64_t r = 0; r < rows; r++) {
            const float *s = src + (i + r) * ld;
            for (int64_t p = 0; p < k; p++) d[p * mr + r] = s[p];
        }
        for (int64_t r = rows; r < mr; r++)
            for (int64_t p = 0; p < k; p++) d[p * mr + r] = 0.0f;
    }
}

void tm__abwd_pack_at(const float *src, int64_t ld, const float *z,
                      int64_t ldz, int64_t k, int64_t m, int mr, float *dst)
{
#if defined(__x86_64__)
    if (mr == 8 && !z && use_avx2()) {
        tm__abwd_pack_at8_avx2(src, ld, k, m, dst);
        return;
    }
#endif
    for (int64_t i = 0; i < m; i += mr) {
        int64_t rows = m - i < mr ? m - i : mr;
        float *d = dst + i * k;
        for (int64_t p = 0; p < k; p++, d += mr) {
            const float *s = src + p * ld + i;
            int64_t r = 0;
            if (z) {
                const float *zz = z + p * ldz + i;
                for (; r < rows; r++) d[r] = s[r] * zz[r];
            } else {
                for (; r < rows; r++) d[r] = s[r];
            }
            for (; r < mr; r++) d[r] = 0.0f;
        }
    }
}

void tm__abwd_rows(const float *src, int64_t ld, int64_t m, int64_t n,
                   float *dst, int64_t ldd)
{
    for (int64_t i = 0; i < m; i++) {
        const float *s = src + i * ld;
        float *d = dst + i * ldd;
        int64_t j = 0;
        for (; j < n; j++) d[j] = s[j];
        for (; j < ldd; j++) d[j] = 0.0f;
    }
}

void tm__abwd_trans(const float *src, int64_t ld, int64_t n, int64_t k,
                    float *dst, int64_t ldd)
{
#if defined(__x86_64__)
    if (use_avx2()) {
        tm__abwd_trans_avx2(src, ld, n, k, dst, ldd);
        return;
    }
#endif
    for (int64_t c = 0; c < k; c++) {
        float *d = dst + c * ldd;
        for (int64_t j = n; j < ldd; j++) d[j] = 0.0f;
    }
    /* Blocks of 8 source rows: each destination row gets 8 neighbours
     * per pass instead of one. */
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        int64_t j1 = j0 + 8 < n ? j0 + 8 : n;
        for (int64_t c = 0; c < k; c++) {
            float *d = dst + c * ldd;
            for (int64_t j = j0; j < j1; j++) d[j] = src[j * ld + c];
        }
    }
}

void tm__abwd_ds(const float *s, const float *z, float *dp, int64_t n,
                 float di, float scale)
{
#if defined(__x86_64__)
    if (use_avx2()) {
        tm__abwd_ds_avx2(s, z, dp, n, di, scale);
        return;
    }
#endif
    if (z)
        for (int64_t c = 0; c < n; c++)
            dp[c] = (z[c] * dp[c] - s[c] * di) * scale;
    else
        for (int64_t c = 0; c < n; c++) dp[c] = s[c] * (dp[c] - di) * scale;
}

/* Adds the mask row of (b, h, i) over keys [j0, j0 + n) to s. */
static void add_mask(const tm_buf *m, const tm__abwd_tile *t, int64_t i,
                     float *s)
{
    const char *base = (const char *)m->handle + m->offset;
    int64_t off = t->b * m->strides[0] + t->h * m->strides[1] +
                  i * m->strides[2] + t->j0 * m->strides[3];
    int64_t st = m->strides[3];
    if (m->dtype == TM_BOOL) {
        const bool *row = (const bool *)base + off;
        for (int64_t c = 0; c < t->n; c++)
            if (!row[c * st]) s[c] = -INFINITY;
    } else {
        const float *row = (const float *)base + off;
        for (int64_t c = 0; c < t->n; c++) s[c] += row[c * st];
    }
}

void tm__abwd_weights(const tm_attn_params *p, const tm_buf *mask,
                      int64_t tk, const tm__abwd_tile *t, bool full,
                      const float *lse, float *s, int64_t ld)
{
    for (int64_t r = 0; r < t->m; r++) {
        float *row = s + r * ld;
        float l = lse[r];
        if (l == -INFINITY) { /* a row that saw nothing passes nothing */
            for (int64_t c = 0; c < t->n; c++) row[c] = 0.0f;
            continue;
        }
        if (!full) {
            int64_t lo, hi;
            tm__attn_row_range(p, tk, t->i0 + r, &lo, &hi);
            for (int64_t c = 0; c < t->n; c++) {
                int64_t j = t->j0 + c;
                if (j < lo || j >= hi) row[c] = -INFINITY;
            }
        }
        if (mask) add_mask(mask, t, t->i0 + r, row);
#if defined(__x86_64__)
        if (use_avx2())
            tm__abwd_sub_avx2(row, t->n, l);
        else
#endif
            for (int64_t c = 0; c < t->n; c++) row[c] -= l;
        tm__vexp_f32(t->n, row, row);
    }
}
