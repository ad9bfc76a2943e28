/*
 * qdot_zmm_tmpl.h — a 512-bit row kernel for Q5_0, included by
 * qdot_avx512vnni.c after qdot_x86_tmpl.h (whose helpers it uses).
 *
 * One-row matvec is bound by instruction throughput on one core, not by
 * memory: a zmm register holds two blocks, so the decode (the fifth bits
 * come from one 64-bit mask) and the dot products take fewer instructions
 * per block than the 256-bit kernel.  On CPUs that split 512-bit work in
 * two halves only the saved front-end work shows, which was too little
 * for the other formats to keep a 512-bit kernel.  AVX-512 has no byte
 * sign instruction, so the kernel takes the unsigned five-bit values q
 * against the activations and subtracts 16 * sum(a), both exact in i32.
 * Every row gets the same operations whatever na is; against
 * tm__qdot_ref only F32 summation order differs.
 */

/* Lanes 0..7: w0 a0, lanes 8..15: w1 a1, for the halves w0, w1 (packed
 * in wd) and a0, a1: one vcvtph2ps for the four, as four scalar
 * conversions per block pair cost more than the rest of the loop. */
QX_INLINE __m512 qz_scales(uint32_t wd, uint16_t a0, uint16_t a1)
{
    __m128 f = _mm_cvtph_ps(_mm_insert_epi32(
        _mm_cvtsi32_si128((int)wd), (int)((uint32_t)a0 | (uint32_t)a1 << 16),
        1));
    __m128 p = _mm_mul_ps(f, _mm_movehl_ps(f, f));
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
                                         0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(p));
}

/* The sum of a zmm's two halves (AVX512F only: no AVX512DQ). */
QX_INLINE __m256 qz_fold(__m512 v)
{
    return _mm256_add_ps(_mm512_castps512_ps256(v),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(
                             _mm512_castps_pd(v), 1)));
}

QX_INLINE void qz_q5_0_n(const void *vw, const void *a, size_t as,
                         int64_t nb, float *out, const int na)
{
    const tm__block_q5_0 *wb = vw;
    const __m512i m4 = _mm512_set1_epi8(15), off = _mm512_set1_epi8(16);
    __m512 acc[TM__QNA];
    __m256 acc1[TM__QNA];
    for (int j = 0; j < na; j++) {
        acc[j] = _mm512_setzero_ps();
        acc1[j] = _mm256_setzero_ps();
    }
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        /* [qs_b, qs_b1, qs_b >> 4, qs_b1 >> 4] -> [lo_b, hi_b, lo_b1,
         * hi_b1]: the order of blocks b and b + 1's activation bytes */
        __m256i x = _mm256_set_m128i(
            _mm_loadu_si128((const __m128i *)wb[b + 1].qs),
            _mm_loadu_si128((const __m128i *)wb[b].qs));
        __m512i q = _mm512_and_si512(
            _mm512_inserti64x4(_mm512_castsi256_si512(x),
                               _mm256_srli_epi16(x, 4), 1),
            m4);
        q = _mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(3, 1, 2, 0));
        /* bit i of the pair's mask is value i's fifth bit */
        uint32_t h[2];
        memcpy(h, wb[b].qh, 4);
        memcpy(h + 1, wb[b + 1].qh, 4);
        q = _mm512_or_si512(
            q, _mm512_maskz_mov_epi8((__mmask64)h[0] | (__mmask64)h[1] << 32,
                                     off));
        const uint32_t wd = (uint32_t)wb[b].d | (uint32_t)wb[b + 1].d << 16;
        for (int j = 0; j < na; j++) {
            const tm__block_q8_0 *ab =
                (const tm__block_q8_0 *)QX_AROW(a, as, j) + b;
            __m512i av = _mm512_inserti64x4(
                _mm512_castsi256_si512(
                    _mm256_loadu_si256((const __m256i *)ab[0].qs)),
                _mm256_loadu_si256((const __m256i *)ab[1].qs), 1);
            __m512i p = _mm512_sub_epi32(
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, av),
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, av));
            acc[j] = _mm512_fmadd_ps(qz_scales(wd, ab[0].d, ab[1].d),
                                     _mm512_cvtepi32_ps(p), acc[j]);
        }
    }
    if (b < nb) {
        __m256i q = _mm256_or_si256(qx_nibbles32(wb[b].qs),
                                    qx_bits32(wb[b].qh));
        const float dw = qx_h2f(wb[b].d);
        for (int j = 0; j < na; j++) {
            const tm__block_q8_0 *ab =
                (const tm__block_q8_0 *)QX_AROW(a, as, j) + b;
            __m256i av = _mm256_loadu_si256((const __m256i *)ab->qs);
            __m256i p = _mm256_sub_epi32(
                QX_DOT_US(q, av),
                QX_DOT_US(_mm512_castsi512_si256(off), av));
            acc1[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * qx_h2f(ab->d)),
                                      _mm256_cvtepi32_ps(p), acc1[j]);
        }
    }
    for (int j = 0; j < na; j++)
        out[j] = qx_hsum(_mm256_add_ps(qz_fold(acc[j]), acc1[j]));
}

QX_ROWS(qz_q5_0)
