/* conv_depthwise.c — the direct F32 depthwise convolution: forward, dx
 * and dw / db (the scheme: conv_depthwise.h).  The inner loops work on
 * blocks of DW_BLOCK independent lanes held in four 4-float vectors (the
 * compiler's generic vectors: SSE on x86-64, NEON on aarch64, scalar code
 * elsewhere), which stay in registers across the taps; -O2 vectorizes the
 * plain lane loops too, but keeps their accumulators in memory, which
 * measured 2x slower.  Each lane's arithmetic is the scalar one, so the
 * results are the same on every target. */
#include "conv_depthwise.h"

#include "../cpu_impl.h"

#include <string.h>

/* Output columns per block: 16 accumulators, four vectors (the x86-64
 * and aarch64 baselines have 16 and 32 vector registers); 32 would waste
 * a quarter of the last block at OW = 56. */
#define DW_BLOCK 16

/* Largest padded frame of one plane (floats), per thread; beyond it the
 * other paths run. */
#define DW_MAX_FRAME ((int64_t)1 << 22)
/* Most output channels per input channel taken by the backward (a C_in =
 * 1 layer with few outputs is this loop too).  The GEMM paths reuse each
 * loaded input across several outputs, this loop does not: measured at
 * 3x3, 56x56 and 28x28, the forward is about as fast with 2 outputs a
 * channel and slower with 4 and 16, the backward is faster with 2 and 4
 * (about half the time) and slower with 16. */
#define DW_MAX_MULT_BWD 4

typedef float dw_v __attribute__((vector_size(16)));

static inline dw_v dw_ld(const float *p)
{
    dw_v v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void dw_st(float *p, dw_v v) { memcpy(p, &v, sizeof v); }

static inline dw_v dw_splat(float x) { return (dw_v){x, x, x, x}; }


/* One convolution of single planes as the kernel runs it: a source plane
 * (sd0 x sh0 x sw0) read through its padded frame into an output plane
 * (od x oh x ow). */
typedef struct dwk {
    int64_t sd0, sh0, sw0;    /* source plane */
    int64_t pd, ph, pw;       /* padding (may be negative) */
    int64_t od, oh, ow;       /* output plane */
    int64_t sd, sh, sw;       /* strides */
    int64_t kd, kh, kw, kvol; /* kernel */
    int64_t Dp, Hp, Wq;       /* frame: depth, rows, one phase's length */
    int64_t rs, hs, size;     /* frame strides: row, depth slice; floats */
    int64_t toff[];           /* kvol tap offsets from an output row's base */
} dwk;

static int64_t dw_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t dw_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t dw_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* ceil(a / b) for b > 0 and any a. */
static int64_t dw_cdiv(int64_t a, int64_t b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* The frame sizes of a plane convolution (no allocation); the sizes are
 * returned in doubles so that absurd geometries can be refused before
 * any product overflows. */
static double dw_frame_floats(int64_t od, int64_t oh, int64_t ow, int64_t kd,
                              int64_t kh, int64_t kw, int64_t sd, int64_t sh,
                              int64_t sw, int64_t dd, int64_t dh, int64_t dwi)
{
    double Dp = (double)(od - 1) * sd + (double)(kd - 1) * dd + 1;
    double Hp = (double)(oh - 1) * sh + (double)(kh - 1) * dh + 1;
    double Wq = (double)dw_up(ow, DW_BLOCK) + (double)((kw - 1) * dwi / sw);
    return Dp * Hp * Wq * (double)sw;
}

/* A plane convolution of the given sizes, with its tap offsets; NULL with
 * the allocation's error set. */
static dwk *dw_setup(const int64_t src[3], const int64_t out[3],
                     const int64_t pad[3], const int64_t str[3],
                     const int64_t dil[3], const int64_t ker[3],
                     const char *fn)
{
    int64_t kvol = ker[0] * ker[1] * ker[2];
    dwk *k = tm__alloc(sizeof *k + (size_t)kvol * sizeof(int64_t), fn);
    if (!k) return NULL;
    k->sd0 = src[0], k->sh0 = src[1], k->sw0 = src[2];
    k->od = out[0], k->oh = out[1], k->ow = out[2];
    k->pd = pad[0], k->ph = pad[1], k->pw = pad[2];
    k->sd = str[0], k->sh = str[1], k->sw = str[2];
    k->kd = ker[0], k->kh = ker[1], k->kw = ker[2], k->kvol = kvol;
    k->Dp = (k->od - 1) * k->sd + (k->kd - 1) * dil[0] + 1;
    k->Hp = (k->oh - 1) * k->sh + (k->kh - 1) * dil[1] + 1;
    k->Wq = dw_up(k->ow, DW_BLOCK) + (k->kw - 1) * dil[2] / k->sw;
    k->rs = k->sw * k->Wq, k->hs = k->Hp * k->rs, k->size = k->Dp * k->hs;
    int64_t t = 0;
    for (int64_t a = 0; a < k->kd; a++)
        for (int64_t i = 0; i < k->kh; i++)
            for (int64_t j = 0; j < k->kw; j++) {
                int64_t c = j * dil[2];
                k->toff[t++] = a * dil[0] * k->hs + i * dil[1] * k->rs +
                               c % k->sw * k->Wq + c / k->sw;
            }
    return k;
}

/* dw_setup for the convolution's own geometry: x to y (the forward and the
 * weight gradient, and dx of a strided convolution). */
static dwk *dw_setup_of(const tm_conv_geom *q, const char *fn)
{
    return dw_setup((int64_t[]){q->d, q->h, q->w},
                    (int64_t[]){q->od, q->oh, q->ow},
                    (int64_t[]){q->pd, q->ph, q->pw},
                    (int64_t[]){q->sd, q->sh, q->sw},
                    (int64_t[]){q->dd, q->dh, q->dw},
                    (int64_t[]){q->kd, q->kh, q->kw}, fn);
}

/* fr = the padded frame of the source plane s: zero where the frame lies
 * outside s, each row split into its SW phases.  The zeros are the same
 * for every plane of a convolution, so a frame already holding another
 * plane's (`zeroed`) gets only s's values: the small zero runs of every
 * row cost a third of the forward's time, measured at 56x56. */
static void dw_pad(const dwk *k, const float *restrict s, float *restrict fr,
                   bool zeroed)
{
    if (!zeroed) memset(fr, 0, (size_t)k->size * sizeof(float));
    for (int64_t z = dw_max(k->pd, 0); z < dw_min(k->Dp, k->pd + k->sd0);
         z++)
        for (int64_t r = dw_max(k->ph, 0);
             r < dw_min(k->Hp, k->ph + k->sh0); r++) {
            const float *row = s + ((z - k->pd) * k->sh0 + r - k->ph) * k->sw0;
            float *d = fr + z * k->hs + r * k->rs;
            for (int64_t p = 0; p < k->sw; p++, d += k->Wq) {
                /* phase index q holds source column q*SW + p - PW */
                int64_t off = p - k->pw;
                int64_t lo = dw_min(dw_max(dw_cdiv(-off, k->sw), 0), k->Wq);
                int64_t hi = dw_min(dw_max(dw_cdiv(k->sw0 - off, k->sw), lo),
                                    k->Wq);
                if (k->sw == 1)
                    memcpy(d + lo, row + lo + off,
                           (size_t)(hi - lo) * sizeof(float));
                else
                    for (int64_t q = lo; q < hi; q++)
                        d[q] = row[q * k->sw + off];
            }
        }
}

/* Stores the block a0..a3 at y[x0, x0 + 16) of a row of ow, cut to the
 * row. */
static inline void dw_put(float *restrict y, int64_t x0, int64_t ow, dw_v a0,
                          dw_v a1, dw_v a2, dw_v a3)
{
    if (x0 + DW_BLOCK <= ow) {
        dw_st(y + x0, a0), dw_st(y + x0 + 4, a1);
        dw_st(y + x0 + 8, a2), dw_st(y + x0 + 12, a3);
    } else {
        dw_v v[4] = {a0, a1, a2, a3};
        memcpy(y + x0, v, (size_t)(ow - x0) * sizeof(float));
    }
}

/* The block's start: bias, or (add) y[x0, x0 + 16) cut to the row. */
static inline void dw_get(const float *restrict y, int64_t x0, int64_t ow,
                          float bias, bool add, dw_v *a)
{
    float v[DW_BLOCK];
    for (int u = 0; u < DW_BLOCK; u++) v[u] = bias;
    if (add)
        memcpy(v, y + x0, (size_t)dw_min(DW_BLOCK, ow - x0) * sizeof(float));
    a[0] = dw_ld(v), a[1] = dw_ld(v + 4), a[2] = dw_ld(v + 8);
    a[3] = dw_ld(v + 12);
}

/* y = bias + the taps wt (kvol) over the frame fr, one output plane; with
 * `add`, y + the taps.  Two output rows a pass, so that eight
 * independent sums hide the adds' latency. */
static void dw_plane_fwd(const dwk *k, const float *restrict fr,
                         float *restrict y, const float *restrict wt,
                         float bias, bool add)
{
    const int64_t kvol = k->kvol, ow = k->ow, rstep = k->sh * k->rs;
    for (int64_t oz = 0; oz < k->od; oz++)
        for (int64_t oy = 0; oy < k->oh; oy += 2) {
            const float *base = fr + oz * k->sd * k->hs + oy * rstep;
            float *yr = y + (oz * k->oh + oy) * ow;
            bool two = oy + 1 < k->oh;
            for (int64_t xb = 0; xb < ow; xb += DW_BLOCK) {
                /* a ragged last block ends at the row's end instead,
                 * recomputing some columns (each column's sum is the same
                 * in any block) but storing whole vectors; not when adding
                 * to y, which the first store changed */
                int64_t x0 = xb + DW_BLOCK > ow && ow >= DW_BLOCK && !add
                                 ? ow - DW_BLOCK
                                 : xb;
                dw_v a[4], b[4] = {0};
                dw_get(yr, x0, ow, bias, add, a);
                if (two) dw_get(yr + ow, x0, ow, bias, add, b);
                dw_v a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
                dw_v b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
                if (two) {
                    for (int64_t t = 0; t < kvol; t++) {
                        const float *s = base + k->toff[t] + x0;
                        const float *r = s + rstep;
                        dw_v wv = dw_splat(wt[t]);
                        a0 += wv * dw_ld(s), a1 += wv * dw_ld(s + 4);
                        a2 += wv * dw_ld(s + 8), a3 += wv * dw_ld(s + 12);
                        b0 += wv * dw_ld(r), b1 += wv * dw_ld(r + 4);
                        b2 += wv * dw_ld(r + 8), b3 += wv * dw_ld(r + 12);
                    }
                    dw_put(yr + ow, x0, ow, b0, b1, b2, b3);
                } else {
                    for (int64_t t = 0; t < kvol; t++) {
                        const float *s = base + k->toff[t] + x0;
                        dw_v wv = dw_splat(wt[t]);
                        a0 += wv * dw_ld(s), a1 += wv * dw_ld(s + 4);
                        a2 += wv * dw_ld(s + 8), a3 += wv * dw_ld(s + 12);
                    }
                }
                dw_put(yr, x0, ow, a0, a1, a2, a3);
            }
        }
}

/* dx by scattering, for strides above 1: the frame fr (zeroed first)
 * gathers every tap's g * w at the position it read, output rows and taps
 * in order, for each output plane of the channel (dw_scatter); then the
 * frame's interior is dx (dw_unframe; positions outside the frame were
 * read by no output: 0). */
static void dw_scatter(const dwk *k, float *restrict fr,
                       const float *restrict g, const float *restrict wt)
{
    const int64_t ow = k->ow;
    for (int64_t oz = 0; oz < k->od; oz++)
        for (int64_t oy = 0; oy < k->oh; oy++) {
            float *base = fr + oz * k->sd * k->hs + oy * k->sh * k->rs;
            const float *gr = g + (oz * k->oh + oy) * ow;
            for (int64_t t = 0; t < k->kvol; t++) {
                float *d = base + k->toff[t], wv = wt[t];
                dw_v wvv = dw_splat(wv);
                int64_t x = 0;
                for (; x + 4 <= ow; x += 4)
                    dw_st(d + x, dw_ld(d + x) + wvv * dw_ld(gr + x));
                for (; x < ow; x++) d[x] += wv * gr[x];
            }
        }
}

static void dw_unframe(const dwk *k, const float *restrict fr,
                       float *restrict dx)
{
    for (int64_t z = 0; z < k->sd0; z++)
        for (int64_t y = 0; y < k->sh0; y++) {
            int64_t fz = z + k->pd, fy = y + k->ph;
            float *d = dx + (z * k->sh0 + y) * k->sw0;
            if (fz < 0 || fz >= k->Dp || fy < 0 || fy >= k->Hp) {
                memset(d, 0, (size_t)k->sw0 * sizeof(float));
                continue;
            }
            const float *row = fr + fz * k->hs + fy * k->rs;
            for (int64_t x = 0; x < k->sw0; x++) {
                int64_t c = x + k->pw;
                d[x] = c >= 0 && c < k->rs ? row[c % k->sw * k->Wq + c / k->sw]
                                           : 0.0f;
            }
        }
}

/* ------------------------------------------------------------ the planes */

typedef enum dw_mode { DW_FWD, DW_DX_GATHER, DW_DX_SCATTER } dw_mode;

typedef struct dw_job {
    const dwk *k;
    dw_mode mode;
    int64_t planes, C, M; /* planes of x: images x C; M outputs each */
    const float *src;     /* x (forward), g (dx) */
    float *dst;           /* y, dx */
    const float *w;       /* C*M x kvol taps (flipped for the gathered dx) */
    const float *bias;    /* C*M or NULL */
    int64_t ssz, dsz;     /* floats per source / destination plane */
    int64_t fsz;       /* floats per part's frame */
    float *scratch;
} dw_job;

static void dw_planes_part(int part, int nparts, void *v)
{
    const dw_job *j = v;
    const dwk *k = j->k;
    float *fr = j->scratch + (size_t)part * (size_t)j->fsz;
    int64_t lo = j->planes * part / nparts;
    int64_t hi = j->planes * (part + 1) / nparts;
    /* p: a plane of x (image p / C, channel c), whose outputs are the M
     * planes p*M + m (channels c*M + m) */
    for (int64_t p = lo; p < hi; p++) {
        int64_t c = p % j->C, M = j->M;
        const float *wc = j->w + c * M * k->kvol;
        if (j->mode == DW_FWD) {
            dw_pad(k, j->src + p * j->ssz, fr, p > lo);
            for (int64_t m = 0; m < M; m++)
                dw_plane_fwd(k, fr, j->dst + (p * M + m) * j->dsz,
                             wc + m * k->kvol,
                             j->bias ? j->bias[c * M + m] : 0.0f, false);
        } else if (j->mode == DW_DX_GATHER) {
            for (int64_t m = 0; m < M; m++) {
                dw_pad(k, j->src + (p * M + m) * j->ssz, fr,
                       p > lo || m > 0);
                dw_plane_fwd(k, fr, j->dst + p * j->dsz, wc + m * k->kvol,
                             0.0f, m > 0);
            }
        } else {
            memset(fr, 0, (size_t)k->size * sizeof(float));
            for (int64_t m = 0; m < M; m++)
                dw_scatter(k, fr, j->src + (p * M + m) * j->ssz,
                           wc + m * k->kvol);
            dw_unframe(k, fr, j->dst + p * j->dsz);
        }
    }
}

/* Parts of the thread pool for `items` independent work items. */
static int dw_parts(int64_t items)
{
    int64_t p = tm_get_num_threads();
    if (p > items) p = items;
    return p < 1 ? 1 : (int)p;
}

/* Runs j over its planes with a frame per part. */
static tm_status dw_run_planes(dw_job *j, const char *fn)
{
    int parts = dw_parts(j->planes);
    /* 16 floats keep each part's frame 64-byte aligned */
    j->fsz = dw_up(j->k->size, 16);
    j->scratch = tm__alloc((size_t)j->fsz * (size_t)parts * sizeof(float), fn);
    if (!j->scratch) return tm_last_status();
    if (parts == 1) dw_planes_part(0, 1, j);
    else tm__parallel_parts(parts, dw_planes_part, j);
    tm__dealloc(j->scratch);
    j->scratch = NULL;
    return TM_OK;
}

bool tm__conv_dw_ok(const tm_conv_geom *q, tm_dtype dt, bool backward)
{
    if (dt != TM_F32 || q->g != q->c || q->c <= 0 || q->oc % q->c != 0 ||
        q->oc / q->c < 1 || q->oc / q->c > (backward ? DW_MAX_MULT_BWD : 1))
        return false;
    if (q->n <= 0 || q->c <= 0 || q->d <= 0 || q->h <= 0 || q->w <= 0)
        return false;
    if (q->od <= 0 || q->oh <= 0 || q->ow <= 0 || q->kd <= 0 ||
        q->kh <= 0 || q->kw <= 0)
        return false;
    if (q->sd <= 0 || q->sh <= 0 || q->sw <= 0 || q->dd <= 0 ||
        q->dh <= 0 || q->dw <= 0)
        return false;
    /* the forward's frame, and the gathered dx's (stride 1: g's frame) */
    double f = dw_frame_floats(q->od, q->oh, q->ow, q->kd, q->kh, q->kw,
                               q->sd, q->sh, q->sw, q->dd, q->dh, q->dw);
    double b = dw_frame_floats(q->d, q->h, q->w, q->kd, q->kh, q->kw, 1, 1,
                               1, q->dd, q->dh, q->dw);
    return f <= (double)DW_MAX_FRAME && b <= (double)DW_MAX_FRAME;
}

tm_status tm__conv_dw_forward(const tm_conv_geom *q, float *y,
                              const float *x, const float *w,
                              const float *bias)
{
    const char *fn = "conv";
    dwk *k = dw_setup_of(q, fn);
    if (!k) return tm_last_status();
    dw_job j = {.k = k, .mode = DW_FWD, .planes = q->n * q->c, .C = q->c,
                .M = q->oc / q->c, .src = x, .dst = y, .w = w, .bias = bias,
                .ssz = q->d * q->h * q->w, .dsz = q->od * q->oh * q->ow};
    tm_status st = dw_run_planes(&j, fn);
    tm__dealloc(k);
    return st;
}

/* dx: with unit strides the forward kernel on g padded by DIL*(K-1) - P
 * with the taps flipped (the transposed convolution); otherwise scattered
 * into the forward's frame. */
static tm_status dw_data_grad(const tm_conv_geom *q, float *dx,
                              const float *g, const float *w)
{
    const char *fn = "conv_backward";
    bool unit = q->sd == 1 && q->sh == 1 && q->sw == 1;
    int64_t kvol = q->kd * q->kh * q->kw;
    float *wf = NULL;
    tm_status st = TM_OK;
    dwk *k;
    if (unit)
        k = dw_setup((int64_t[]){q->od, q->oh, q->ow},
                     (int64_t[]){q->d, q->h, q->w},
                     (int64_t[]){q->dd * (q->kd - 1) - q->pd,
                                 q->dh * (q->kh - 1) - q->ph,
                                 q->dw * (q->kw - 1) - q->pw},
                     (int64_t[]){1, 1, 1}, (int64_t[]){q->dd, q->dh, q->dw},
                     (int64_t[]){q->kd, q->kh, q->kw}, fn);
    else
        k = dw_setup_of(q, fn);
    if (!k) return tm_last_status();
    if (unit) {
        if (!(wf = tm__alloc((size_t)(q->oc * kvol) * sizeof(float), fn))) {
            st = tm_last_status();
            goto fail;
        }
        for (int64_t c = 0; c < q->oc; c++)
            for (int64_t t = 0; t < kvol; t++)
                wf[c * kvol + kvol - 1 - t] = w[c * kvol + t];
    }
    int64_t xs = q->d * q->h * q->w, ys = q->od * q->oh * q->ow;
    dw_job j = {.k = k, .mode = unit ? DW_DX_GATHER : DW_DX_SCATTER,
                .planes = q->n * q->c, .C = q->c, .M = q->oc / q->c,
                .src = g, .dst = dx, .w = unit ? wf : w,
                .ssz = ys, .dsz = xs};
    st = dw_run_planes(&j, fn);
fail:
    tm__dealloc(wf);
    tm__dealloc(k);
    return st;
}

/* ------------------------------------------------------ weight gradient */

typedef struct dw_wjob {
    const dwk *k;
    int64_t n, C, M;    /* images, channels of x, outputs per channel */
    const float *g, *x; /* x NULL: db only */
    float *dw, *db;
    int64_t fsz;        /* floats per part: frame, then the lanes */
    float *scratch;
} dw_wjob;

/* lanes[u] += the products of g and the tap at frame offset off over the
 * plane (columns u mod DW_BLOCK; the last block's ragged end lane by
 * lane). */
static void dw_tap_sum(const dwk *k, const float *restrict fr, int64_t off,
                       const float *restrict g, float *restrict lanes)
{
    const int64_t ow = k->ow, full = ow / DW_BLOCK * DW_BLOCK;
    /* the last block's whole vectors, then its columns one by one */
    const int64_t nv = (ow - full) / 4, rest = full + 4 * nv;
    dw_v a0 = dw_ld(lanes), a1 = dw_ld(lanes + 4), a2 = dw_ld(lanes + 8);
    dw_v a3 = dw_ld(lanes + 12);
    float tail[DW_BLOCK] = {0};
    for (int64_t oz = 0; oz < k->od; oz++)
        for (int64_t oy = 0; oy < k->oh; oy++) {
            const float *s =
                fr + oz * k->sd * k->hs + oy * k->sh * k->rs + off;
            const float *gr = g + (oz * k->oh + oy) * ow;
            for (int64_t x0 = 0; x0 < full; x0 += DW_BLOCK) {
                const float *p = s + x0, *q = gr + x0;
                a0 += dw_ld(q) * dw_ld(p), a1 += dw_ld(q + 4) * dw_ld(p + 4);
                a2 += dw_ld(q + 8) * dw_ld(p + 8);
                a3 += dw_ld(q + 12) * dw_ld(p + 12);
            }
            const float *p = s + full, *q = gr + full;
            if (nv > 0) a0 += dw_ld(q) * dw_ld(p);
            if (nv > 1) a1 += dw_ld(q + 4) * dw_ld(p + 4);
            if (nv > 2) a2 += dw_ld(q + 8) * dw_ld(p + 8);
            for (int64_t x = rest; x < ow; x++)
                tail[x - full] += gr[x] * s[x];
        }
    dw_st(lanes, a0), dw_st(lanes + 4, a1), dw_st(lanes + 8, a2);
    dw_st(lanes + 12, a3);
    for (int64_t u = 0; u < ow - full; u++) lanes[u] += tail[u];
}

/* dw_tap_sum for two taps at once (offsets off, off2; lanes, lanes2),
 * sharing the loads of g: the same sums. */
static void dw_tap_sum2(const dwk *k, const float *restrict fr, int64_t off,
                        int64_t off2, const float *restrict g,
                        float *restrict lanes, float *restrict lanes2)
{
    const int64_t ow = k->ow, full = ow / DW_BLOCK * DW_BLOCK;
    /* the last block's whole vectors, then its columns one by one */
    const int64_t nv = (ow - full) / 4, rest = full + 4 * nv;
    dw_v a0 = dw_ld(lanes), a1 = dw_ld(lanes + 4), a2 = dw_ld(lanes + 8);
    dw_v a3 = dw_ld(lanes + 12), b0 = dw_ld(lanes2);
    dw_v b1 = dw_ld(lanes2 + 4), b2 = dw_ld(lanes2 + 8);
    dw_v b3 = dw_ld(lanes2 + 12);
    float tail[DW_BLOCK] = {0}, tail2[DW_BLOCK] = {0};
    for (int64_t oz = 0; oz < k->od; oz++)
        for (int64_t oy = 0; oy < k->oh; oy++) {
            const float *s = fr + oz * k->sd * k->hs + oy * k->sh * k->rs;
            const float *s1 = s + off, *s2 = s + off2;
            const float *gr = g + (oz * k->oh + oy) * ow;
            for (int64_t x0 = 0; x0 < full; x0 += DW_BLOCK) {
                const float *q = gr + x0, *p = s1 + x0, *r = s2 + x0;
                dw_v g0 = dw_ld(q), g1 = dw_ld(q + 4);
                dw_v g2 = dw_ld(q + 8), g3 = dw_ld(q + 12);
                a0 += g0 * dw_ld(p), a1 += g1 * dw_ld(p + 4);
                a2 += g2 * dw_ld(p + 8), a3 += g3 * dw_ld(p + 12);
                b0 += g0 * dw_ld(r), b1 += g1 * dw_ld(r + 4);
                b2 += g2 * dw_ld(r + 8), b3 += g3 * dw_ld(r + 12);
            }
            const float *q = gr + full, *p = s1 + full, *r = s2 + full;
            for (int64_t v = 0; v < nv; v++) {
                dw_v gv = dw_ld(q + 4 * v);
                dw_v pa = gv * dw_ld(p + 4 * v), pb = gv * dw_ld(r + 4 * v);
                if (v == 0) a0 += pa, b0 += pb;
                else if (v == 1) a1 += pa, b1 += pb;
                else a2 += pa, b2 += pb;
            }
            for (int64_t x = rest; x < ow; x++) {
                tail[x - full] += gr[x] * s1[x];
                tail2[x - full] += gr[x] * s2[x];
            }
        }
    dw_st(lanes, a0), dw_st(lanes + 4, a1), dw_st(lanes + 8, a2);
    dw_st(lanes + 12, a3), dw_st(lanes2, b0), dw_st(lanes2 + 4, b1);
    dw_st(lanes2 + 8, b2), dw_st(lanes2 + 12, b3);
    for (int64_t u = 0; u < ow - full; u++) {
        lanes[u] += tail[u];
        lanes2[u] += tail2[u];
    }
}

/* lanes[u] += g over the plane, as dw_tap_sum. */
static void dw_g_sum(const dwk *k, const float *restrict g,
                     float *restrict lanes)
{
    const int64_t ow = k->ow, full = ow / DW_BLOCK * DW_BLOCK;
    /* the last block's whole vectors, then its columns one by one */
    const int64_t nv = (ow - full) / 4, rest = full + 4 * nv;
    dw_v a0 = dw_ld(lanes), a1 = dw_ld(lanes + 4), a2 = dw_ld(lanes + 8);
    dw_v a3 = dw_ld(lanes + 12);
    float tail[DW_BLOCK] = {0};
    for (int64_t r = 0; r < k->od * k->oh; r++) {
        const float *gr = g + r * ow;
        for (int64_t x0 = 0; x0 < full; x0 += DW_BLOCK) {
            const float *q = gr + x0;
            a0 += dw_ld(q), a1 += dw_ld(q + 4), a2 += dw_ld(q + 8);
            a3 += dw_ld(q + 12);
        }
        const float *q = gr + full;
        if (nv > 0) a0 += dw_ld(q);
        if (nv > 1) a1 += dw_ld(q + 4);
        if (nv > 2) a2 += dw_ld(q + 8);
        for (int64_t x = rest; x < ow; x++) tail[x - full] += gr[x];
    }
    dw_st(lanes, a0), dw_st(lanes + 4, a1), dw_st(lanes + 8, a2);
    dw_st(lanes + 12, a3);
    for (int64_t u = 0; u < ow - full; u++) lanes[u] += tail[u];
}

static float dw_lane_total(const float *lanes)
{
    float s = 0.0f;
    for (int u = 0; u < DW_BLOCK; u++) s += lanes[u];
    return s;
}

static void dw_weight_part(int part, int nparts, void *v)
{
    const dw_wjob *j = v;
    const dwk *k = j->k;
    const int64_t kvol = k->kvol, ys = k->od * k->oh * k->ow;
    const int64_t xs = k->sd0 * k->sh0 * k->sw0;
    float *fr = j->scratch + (size_t)part * (size_t)j->fsz;
    float *lanes = fr + dw_up(k->size, 16); /* kvol + 1 blocks: taps, g */
    /* o: an output channel, reading channel o / M of x */
    int64_t OC = j->C * j->M;
    int64_t lo = OC * part / nparts, hi = OC * (part + 1) / nparts;
    for (int64_t o = lo; o < hi; o++) {
        memset(lanes, 0, (size_t)((kvol + 1) * DW_BLOCK) * sizeof(float));
        for (int64_t b = 0; b < j->n; b++) {
            const float *g = j->g + (b * OC + o) * ys;
            if (j->dw) {
                dw_pad(k, j->x + (b * j->C + o / j->M) * xs, fr,
                       o > lo || b > 0);
                int64_t t = 0;
                for (; t + 2 <= kvol; t += 2)
                    dw_tap_sum2(k, fr, k->toff[t], k->toff[t + 1], g,
                                lanes + t * DW_BLOCK,
                                lanes + (t + 1) * DW_BLOCK);
                for (; t < kvol; t++)
                    dw_tap_sum(k, fr, k->toff[t], g, lanes + t * DW_BLOCK);
            }
            if (j->db) dw_g_sum(k, g, lanes + kvol * DW_BLOCK);
        }
        if (j->dw)
            for (int64_t t = 0; t < kvol; t++)
                j->dw[o * kvol + t] = dw_lane_total(lanes + t * DW_BLOCK);
        if (j->db) j->db[o] = dw_lane_total(lanes + kvol * DW_BLOCK);
    }
}

static tm_status dw_weight_grad(const tm_conv_geom *q, float *dw, float *db,
                                const float *g, const float *x)
{
    const char *fn = "conv_backward";
    dwk *k = dw_setup_of(q, fn);
    if (!k) return tm_last_status();
    tm_status st = TM_OK;
    dw_wjob j = {.k = k, .n = q->n, .C = q->c, .M = q->oc / q->c, .g = g,
                 .x = x, .dw = dw, .db = db};
    int parts = dw_parts(q->oc);
    j.fsz = dw_up(k->size, 16) + dw_up((k->kvol + 1) * DW_BLOCK, 16);
    j.scratch = tm__alloc((size_t)j.fsz * (size_t)parts * sizeof(float), fn);
    if (!j.scratch) {
        st = tm_last_status();
        goto fail;
    }
    if (parts == 1) dw_weight_part(0, 1, &j);
    else tm__parallel_parts(parts, dw_weight_part, &j);
fail:
    tm__dealloc(j.scratch);
    tm__dealloc(k);
    return st;
}

tm_status tm__conv_dw_backward(const tm_conv_geom *q, float *dx, float *dw,
                               float *db, const float *g, const float *x,
                               const float *w)
{
    tm_status st = TM_OK;
    if (dx) st = dw_data_grad(q, dx, g, w);
    if (!st && (dw || db)) st = dw_weight_grad(q, dw, db, g, x);
    return st;
}
