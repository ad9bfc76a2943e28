/* attn_fwd_pack.c — the tiled attention forward's packing: key tiles
 * transposed into AF_KT-key panels and value rows converted to F32
 * (attn_fwd_job.h). */
#include "attn_fwd_job.h"

/* n elements of a row of F32, F16 or BF16 into dst as F32. */
void tm__af_load_f32(const void *src, tm_dtype dt, int64_t n, float *dst)
{
    if (dt == TM_F32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
    } else if (dt == TM_F16) {
        for (int64_t c = 0; c < n; c++)
            dst[c] = tm__f16_to_f32(((const uint16_t *)src)[c]);
    } else {
        for (int64_t c = 0; c < n; c++)
            dst[c] = tm__bf16_to_f32(((const uint16_t *)src)[c]);
    }
}

void tm__af_pack_unit(const af_job *J, int64_t kvi, int64_t t, float *kt,
                      float *vh)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t b = kvi / ge->hkv, hk = kvi % ge->hkv;
    int64_t j0 = t * AF_KT, nk = ge->tk - j0 < AF_KT ? ge->tk - j0
                                                     : AF_KT;
    float row[256];
    for (int64_t jj = 0; jj < AF_KT; jj++) {
        if (jj >= nk) {
            for (int64_t c = 0; c < ge->d; c++) kt[c * AF_KT + jj] = 0;
            continue;
        }
        const char *src = tm__attn_row_ptr(J->k, b, hk, j0 + jj);
        if (J->k->dtype == TM_F32) {
            const float *f = (const float *)src;
            /* the row 8 keys on, asked for now: each row's loads would
             * otherwise wait on memory behind the scattered stores */
            if (jj + 8 < nk) {
                const char *ahead = (const char *)(f + 8 * J->k->strides[2]);
                for (int64_t c = 0; c < ge->d; c += 16)
                    __builtin_prefetch(ahead + c * 4, 0, 3);
            }
            for (int64_t c = 0; c < ge->d; c++) kt[c * AF_KT + jj] = f[c];
            continue;
        }
        for (int64_t c0 = 0; c0 < ge->d; c0 += 256) {
            int64_t n = ge->d - c0 < 256 ? ge->d - c0 : 256;
            tm__af_load_f32(src + (size_t)c0 * 2, J->k->dtype, n, row);
            for (int64_t c = 0; c < n; c++)
                kt[(c0 + c) * AF_KT + jj] = row[c];
        }
    }
    if (J->v_direct) return;
    float *vp = vh + (size_t)(j0 * J->dvp);
    for (int64_t jj = 0; jj < nk; jj++) {
        float *dst = vp + jj * J->dvp;
        tm__af_load_f32(tm__attn_row_ptr(J->v, b, hk, j0 + jj),
                        J->v->dtype, ge->dv, dst);
        for (int64_t c = ge->dv; c < J->dvp; c++) dst[c] = 0;
    }
}

void tm__af_pack_range(int64_t u0, int64_t u1, void *ctx)
{
    af_job *J = ctx;
    for (int64_t u = u0; u < u1; u++) {
        int64_t kvw = u / J->nkt;
        tm__af_pack_unit(J, J->kv0 + kvw, u % J->nkt,
                         J->kpack + (size_t)(u * J->ge.d * AF_KT),
                         J->v_direct ? NULL
                                     : J->vpack + (size_t)(kvw * J->ge.tk *
                                                           J->dvp));
    }
}
