/* conv_igemm.c — the implicit-GEMM F32 convolution with unit strides:
 * forward, dx and dw / db (the scheme: conv_igemm.h).  The products run
 * the CPU's GEMM micro-kernels (cpu/gemm/, the family tm__cpu_isa picks:
 * AVX-512, AVX2, NEON or portable) on panels packed straight from the
 * padded input (conv_pack.c), with the GEMM's blocking: a KC-deep block of
 * B panels (L2) against MR-row panels of A (L1). */
#include "conv_igemm.h"

#include "../cpu_features.h"
#include "../cpu_impl.h"
#include "../gemm/gemm_impl.h"
#include "conv_pack.h"

#include <string.h>

/* Frame columns per forward work item: the B block (KC x 256) and the
 * output block stay in L2. */
#define IG_NCB 256
/* Largest padded copy / partial-sum scratch taken (elements); beyond it
 * the im2col path (which works in chunks of images) runs instead. */
#define IG_MAX_SCRATCH ((int64_t)1 << 26)
/* Image chunks of the weight gradient: partial sums per chunk, added in
 * chunk order (a count fixed by the batch, not by the threads). */
#define IG_DW_CHUNKS 16

typedef struct ig {
    const tm__gemm_kernel *k;
    int mr, nr;
    int64_t n, G, cg, oc, ocg, kvol, K;
    int64_t D, H, W, pd, ph, pw, Dp, Hp, Wp, hw, plane, xps;
    int64_t OD, OH, OW, L, Lp;
    int64_t *koff;   /* K patch offsets in a padded image (one group) */
    const float *x;  /* the input */
    float *xp_own;   /* its padded copy (NULL: no padding, xp = x) */
    const float *xp; /* n padded images of xps elements */
} ig;

static const tm__gemm_kernel *ig_kernel(void)
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

static int64_t ig_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }
static int64_t ig_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Sizes of the convolution q (no allocation). */
static void ig_init(ig *c, const tm_conv_geom *q)
{
    memset(c, 0, sizeof *c);
    c->k = ig_kernel();
    c->mr = c->k->mr, c->nr = c->k->nr;
    c->n = q->n, c->G = q->g, c->cg = q->c / q->g;
    c->oc = q->oc, c->ocg = q->oc / q->g;
    c->kvol = q->kd * q->kh * q->kw, c->K = c->cg * c->kvol;
    c->D = q->d, c->H = q->h, c->W = q->w;
    c->pd = q->pd, c->ph = q->ph, c->pw = q->pw;
    c->Dp = q->d + 2 * q->pd, c->Hp = q->h + 2 * q->ph;
    c->Wp = q->w + 2 * q->pw;
    c->hw = c->Hp * c->Wp, c->plane = c->Dp * c->hw;
    c->xps = q->c * c->plane;
    c->OD = q->od, c->OH = q->oh, c->OW = q->ow;
    c->L = q->od * q->oh * q->ow;
    c->Lp = (q->od - 1) * c->hw + (q->oh - 1) * c->Wp + q->ow;
}

bool tm__conv_igemm_fwd_ok(const tm_conv_geom *q, tm_dtype dt)
{
    if (dt != TM_F32 || q->sd != 1 || q->sh != 1 || q->sw != 1) return false;
    if (q->n <= 0 || q->oc <= 0 || q->c <= 0 || q->g <= 0) return false;
    if (q->od <= 0 || q->oh <= 0 || q->ow <= 0 || q->kd <= 0 ||
        q->kh <= 0 || q->kw <= 0)
        return false;
    if (q->pd < 0 || q->ph < 0 || q->pw < 0) return false;
    /* Every read must lie in the padded frame: a geometry may give output
     * sizes beyond the ones its padding derives (padding='same' with an
     * even kernel reads zeros past x's far edge), and the im2col path
     * handles those. */
    if (q->od + q->dd * (q->kd - 1) > q->d + 2 * q->pd ||
        q->oh + q->dh * (q->kh - 1) > q->h + 2 * q->ph ||
        q->ow + q->dw * (q->kw - 1) > q->w + 2 * q->pw)
        return false;
    ig c;
    ig_init(&c, q);
    double xp = (double)c.n * (double)c.xps;
    double ap = (double)c.G * (double)ig_up(c.ocg, c.mr) * (double)c.K;
    return xp <= (double)IG_MAX_SCRATCH && ap <= (double)IG_MAX_SCRATCH;
}

bool tm__conv_igemm_bwd_ok(const tm_conv_geom *q, tm_dtype dt, bool want_dx,
                           bool want_dw, bool want_db)
{
    if (!want_dx && !want_dw && !want_db) return false;
    if (!tm__conv_igemm_fwd_ok(q, dt)) return false;
    if (want_dx) {
        /* dx is a forward convolution of g padded by DIL*(K-1) - P */
        if (q->pd > q->dd * (q->kd - 1) || q->ph > q->dh * (q->kh - 1) ||
            q->pw > q->dw * (q->kw - 1))
            return false;
        tm_conv_geom t = *q;
        t.c = q->oc, t.oc = q->c, t.d = q->od, t.h = q->oh, t.w = q->ow;
        t.od = q->d, t.oh = q->h, t.ow = q->w;
        t.pd = q->dd * (q->kd - 1) - q->pd;
        t.ph = q->dh * (q->kh - 1) - q->ph;
        t.pw = q->dw * (q->kw - 1) - q->pw;
        if (!tm__conv_igemm_fwd_ok(&t, dt)) return false;
    }
    if (want_dw || want_db) {
        ig c;
        ig_init(&c, q);
        double parts = (double)IG_DW_CHUNKS * (double)c.G *
                       (double)ig_up(c.ocg, c.mr) *
                       (double)ig_up(c.K + 1, c.nr);
        /* g of one image and group in the padded frame, per thread */
        double gp = (double)ig_up(c.ocg, c.mr) * (double)c.Lp;
        if (parts > (double)IG_MAX_SCRATCH || gp > (double)IG_MAX_SCRATCH / 8)
            return false;
    }
    return true;
}

/* ------------------------------------------------------ shared set-up */

/* Planes p of the padded copy: zero, then the rows of x. */
static void ig_pad_range(int64_t p0, int64_t p1, void *v)
{
    const ig *c = v;
    for (int64_t p = p0; p < p1; p++) {
        const float *s = c->x + p * c->D * c->H * c->W;
        float *d = c->xp_own + p * c->plane;
        memset(d, 0, (size_t)c->plane * sizeof(float));
        for (int64_t z = 0; z < c->D; z++)
            for (int64_t y = 0; y < c->H; y++)
                memcpy(d + (z + c->pd) * c->hw + (y + c->ph) * c->Wp + c->pw,
                       s + (z * c->H + y) * c->W, (size_t)c->W * sizeof(float));
    }
}

/* The patch offsets and the padded input of c (x: n images of C planes);
 * TM_OK or the allocation's status. */
static tm_status ig_prepare(ig *c, const tm_conv_geom *q, const float *x,
                            const char *fn)
{
    c->koff = tm__alloc((size_t)c->K * sizeof(int64_t), fn);
    if (!c->koff) return tm_last_status();
    int64_t k = 0;
    for (int64_t ci = 0; ci < c->cg; ci++)
        for (int64_t a = 0; a < q->kd; a++)
            for (int64_t i = 0; i < q->kh; i++)
                for (int64_t j = 0; j < q->kw; j++)
                    c->koff[k++] = ci * c->plane + a * q->dd * c->hw +
                                   i * q->dh * c->Wp + j * q->dw;
    c->x = x;
    c->xp = x;
    if (c->pd || c->ph || c->pw) {
        c->xp_own = tm__alloc((size_t)(c->n * c->xps) * sizeof(float), fn);
        if (!c->xp_own) return tm_last_status();
        int64_t planes = c->n * (c->xps / c->plane);
        int64_t grain = 32768 / c->plane + 1;
        tm__parallel_for(planes, grain, ig_pad_range, c);
        c->xp = c->xp_own;
    }
    return TM_OK;
}

static void ig_release(ig *c)
{
    tm__dealloc(c->koff);
    tm__dealloc(c->xp_own);
    c->koff = NULL, c->xp_own = NULL;
}

/* Parts of the thread pool for `items` independent work items. */
static int ig_parts(int64_t items)
{
    int64_t p = tm_get_num_threads();
    if (p > items) p = items;
    return p < 1 ? 1 : (int)p;
}

/* ------------------------------------------------------------- forward */

typedef struct ig_fwd {
    const ig *c;
    const float *ap; /* packed weight: G blocks of mpad x K panels */
    const float *bias;
    float *y;
    int64_t mpad, ncb, nlb, items;
    size_t part_floats; /* B block (KC x ncb) + output block (mpad x ncb) */
    float *scratch;
} ig_fwd;

/* dst[l] = src[l] + v for l < n.  Runs are short (an output row), so
 * blocks of 8 (vectorized; see cpu_conv_tmpl.h on why the plain loop
 * stays scalar) end with one block over the run's last 8 elements,
 * overlapping the previous one: the overlapped elements are written
 * twice with the same value. */
static void ig_copy_add(float *restrict dst, const float *restrict src,
                        float v, int64_t n)
{
    if (n < 8) {
        for (int64_t l = 0; l < n; l++) dst[l] = src[l] + v;
        return;
    }
    int64_t l = 0;
    for (; l + 8 <= n; l += 8)
        for (int u = 0; u < 8; u++) dst[l + u] = src[l + u] + v;
    if (l < n)
        for (int u = 0; u < 8; u++) dst[n - 8 + u] = src[n - 8 + u] + v;
}

/* Writes frame columns [l0, l0 + nc) of the output block yb (rows of ncb)
 * to y (image b, group gi), dropping the frame's extra columns. */
static void ig_scatter(const ig_fwd *f, const float *yb, int64_t b,
                       int64_t gi, int64_t l0, int64_t nc)
{
    const ig *c = f->c;
    float *yg = f->y + (b * c->oc + gi * c->ocg) * c->L;
    for (int64_t l = l0; l < l0 + nc;) {
        int64_t oz = l / c->hw, r = l % c->hw, oy = r / c->Wp, ox = r % c->Wp;
        if (oy >= c->OH) {
            l = (oz + 1) * c->hw;
            continue;
        }
        if (ox >= c->OW) {
            l += c->Wp - ox;
            continue;
        }
        int64_t len = ig_min(c->OW - ox, l0 + nc - l);
        int64_t yi = (oz * c->OH + oy) * c->OW + ox;
        for (int64_t o = 0; o < c->ocg; o++) {
            float v = f->bias ? f->bias[gi * c->ocg + o] : 0.0f;
            ig_copy_add(yg + o * c->L + yi, yb + o * f->ncb + (l - l0), v,
                        len);
        }
        l += len;
    }
}

/* Without extra frame columns (the frame is the output: no padding
 * beyond what the kernel consumes, e.g. 1x1), full tiles are written
 * straight into y (ldc = L) and only ragged ones go through yb; the bias
 * is then added in place.  Measured on the 1x1 64->256 layer at 56x56:
 * staging every tile and copying it out cost more than the product. */
static bool ig_direct(const ig *c)
{
    return c->Wp == c->OW && (c->OD == 1 || c->Hp == c->OH);
}

/* The direct form's rows [0, full_rows) and columns [0, full_cols) of the
 * block are in y: add the bias there; everything else comes from yb. */
static void ig_finish_direct(const ig_fwd *f, const float *yb, int64_t b,
                             int64_t gi, int64_t l0, int64_t nc,
                             int64_t full_rows, int64_t full_cols)
{
    const ig *c = f->c;
    float *yg = f->y + (b * c->oc + gi * c->ocg) * c->L + l0;
    for (int64_t o = 0; o < c->ocg; o++) {
        float v = f->bias ? f->bias[gi * c->ocg + o] : 0.0f;
        float *row = yg + o * c->L;
        int64_t from = o < full_rows ? full_cols : 0;
        if (from > 0 && f->bias) {
            int64_t l = 0;
            for (; l + 8 <= from; l += 8)
                for (int u = 0; u < 8; u++) row[l + u] += v;
            for (; l < from; l++) row[l] += v;
        }
        if (from < nc)
            ig_copy_add(row + from, yb + o * f->ncb + from, v, nc - from);
    }
}

static void ig_fwd_item(const ig_fwd *f, float *bp, float *yb, int64_t item)
{
    const ig *c = f->c;
    const tm__gemm_kernel *k = c->k;
    const int64_t mr = c->mr, nr = c->nr;
    int64_t b = item / f->nlb, l0 = item % f->nlb * f->ncb;
    int64_t nc = ig_min(f->ncb, c->Lp - l0), ncp = ig_up(nc, nr);
    const float *xb = c->xp + b * c->xps;
    bool direct = ig_direct(c);
    int64_t full_rows = direct ? c->ocg / mr * mr : 0;
    int64_t full_cols = direct ? nc / nr * nr : 0;
    for (int64_t gi = 0; gi < c->G; gi++) {
        const float *xg = xb + gi * c->cg * c->plane + l0;
        const float *ag = f->ap + gi * f->mpad * c->K;
        float *yd = f->y + (b * c->oc + gi * c->ocg) * c->L + l0;
        for (int64_t pc = 0; pc < c->K; pc += k->kc) {
            int64_t kc = ig_min(k->kc, c->K - pc);
            for (int64_t jr = 0; jr < nc; jr += nr)
                tm__cvp_pack_rows(bp + jr * kc, xg + jr, c->koff + pc, kc,
                                  ig_min(nr, nc - jr), (int)nr);
            double beta = pc == 0 ? 0.0 : 1.0;
            for (int64_t ir = 0; ir < f->mpad; ir += mr) {
                const float *apan = ag + ir * c->K + pc * mr;
                int64_t rows = ig_min(mr, c->ocg - ir);
                /* a ragged panel of a few rows (depthwise: one) runs the
                 * one-row kernel per row instead of MR rows of padding */
                bool by_row = k->ukr_row && rows <= mr / 2;
                for (int64_t jr = 0; jr < ncp; jr += nr) {
                    if (ir < full_rows && jr < full_cols) {
                        k->ukr(kc, apan, bp + jr * kc, nr, yd + ir * c->L + jr,
                               c->L, 1.0, beta);
                        continue;
                    }
                    if (by_row) {
                        for (int64_t r = 0; r < rows; r++)
                            k->ukr_row(kc, apan + r, bp + jr * kc, nr,
                                       yb + (ir + r) * f->ncb + jr, 1.0,
                                       beta);
                        continue;
                    }
                    k->ukr(kc, apan, bp + jr * kc, nr, yb + ir * f->ncb + jr,
                           f->ncb, 1.0, beta);
                }
            }
        }
        if (direct)
            ig_finish_direct(f, yb, b, gi, l0, nc, full_rows, full_cols);
        else
            ig_scatter(f, yb, b, gi, l0, nc);
    }
}

static void ig_fwd_part(int part, int nparts, void *v)
{
    const ig_fwd *f = v;
    float *bp = f->scratch + (size_t)part * f->part_floats;
    float *yb = bp + (size_t)(f->c->k->kc * f->ncb);
    int64_t lo = f->items * part / nparts, hi = f->items * (part + 1) / nparts;
    for (int64_t it = lo; it < hi; it++) ig_fwd_item(f, bp, yb, it);
}

/* Packs w (OC, K) into G blocks of mpad x K in MR-row panels (rows past
 * ocg zero). */
static void ig_pack_weight(const ig *c, float *ap, const float *w,
                           int64_t mpad)
{
    const int64_t mr = c->mr;
    for (int64_t gi = 0; gi < c->G; gi++)
        for (int64_t i0 = 0; i0 < mpad; i0 += mr) {
            float *d = ap + gi * mpad * c->K + i0 * c->K;
            for (int64_t p = 0; p < c->K; p++)
                for (int64_t r = 0; r < mr; r++) {
                    int64_t o = i0 + r;
                    d[p * mr + r] =
                        o < c->ocg ? w[(gi * c->ocg + o) * c->K + p] : 0.0f;
                }
        }
}

tm_status tm__conv_igemm_forward(const tm_conv_geom *q, float *y,
                                 const float *x, const float *w,
                                 const float *bias)
{
    const char *fn = "conv";
    ig c;
    ig_init(&c, q);
    ig_fwd f;
    memset(&f, 0, sizeof f);
    float *ap = NULL;
    tm_status st = ig_prepare(&c, q, x, fn);
    if (st) goto fail;
    f.c = &c, f.y = y, f.bias = bias;
    f.mpad = ig_up(c.ocg, c.mr);
    f.ncb = IG_NCB / c.nr * c.nr;
    f.nlb = (c.Lp + f.ncb - 1) / f.ncb;
    f.items = c.n * f.nlb;
    if (!(ap = tm__alloc((size_t)(c.G * f.mpad * c.K) * sizeof(float), fn))) {
        st = tm_last_status();
        goto fail;
    }
    ig_pack_weight(&c, ap, w, f.mpad);
    f.ap = ap;
    int parts = ig_parts(f.items);
    /* 16 floats of slack keep each part's blocks 64-byte aligned */
    f.part_floats = (size_t)ig_up((c.k->kc + f.mpad) * f.ncb, 16);
    f.scratch = tm__alloc(f.part_floats * (size_t)parts * sizeof(float), fn);
    if (!f.scratch) {
        st = tm_last_status();
        goto fail;
    }
    if (parts == 1) ig_fwd_part(0, 1, &f);
    else tm__parallel_parts(parts, ig_fwd_part, &f);
fail:
    tm__dealloc(f.scratch);
    tm__dealloc(ap);
    ig_release(&c);
    return st;
}

/* ------------------------------------------------------ weight gradient */

typedef struct ig_dw {
    const ig *c;
    const float *g;
    bool db;             /* one more column: the bias gradient */
    int64_t mpad, npad;  /* rows / columns of a partial product */
    int64_t chunks, per; /* image chunks, images per chunk */
    int64_t nsplit;      /* column ranges a chunk is cut into (work items:
                            chunks x nsplit); a tile's sum is the same in
                            any range, so this may follow the threads */
    float *partial;      /* chunks x G x mpad x npad */
    float *ones;         /* KC ones: the bias column's B operand */
    size_t part_floats;  /* gp (mpad x Lp) + A block + B block */
    float *scratch;
    const float **ptrs;  /* per part: mr + nr row pointers */
} ig_dw;

/* gp = g of image b, group gi, in the padded frame (rows of Lp, zero in
 * the frame's extra columns). */
static void ig_frame_g(const ig_dw *d, float *gp, int64_t b, int64_t gi)
{
    const ig *c = d->c;
    for (int64_t o = 0; o < c->ocg; o++) {
        const float *s = d->g + (b * c->oc + gi * c->ocg + o) * c->L;
        float *r = gp + o * c->Lp;
        memset(r, 0, (size_t)c->Lp * sizeof(float));
        for (int64_t oz = 0; oz < c->OD; oz++)
            for (int64_t oy = 0; oy < c->OH; oy++)
                memcpy(r + oz * c->hw + oy * c->Wp,
                       s + (oz * c->OH + oy) * c->OW,
                       (size_t)c->OW * sizeof(float));
    }
}

/* Columns [j0, j1) (multiples of NR) of chunk ch's partial product. */
static void ig_dw_chunk(const ig_dw *d, float *scr, const float **ptrs,
                        int64_t ch, int64_t j0, int64_t j1)
{
    const ig *c = d->c;
    const tm__gemm_kernel *k = c->k;
    const int64_t mr = c->mr, nr = c->nr, ncol = c->K + (d->db ? 1 : 0);
    float *gp = scr, *apk = gp + ig_up(d->mpad * c->Lp, 16);
    float *bpk = apk + ig_up(d->mpad * k->kc, 16);
    float *part = d->partial + ch * c->G * d->mpad * d->npad;
    for (int64_t r = 0; r < c->G * d->mpad; r++)
        memset(part + r * d->npad + j0, 0, (size_t)(j1 - j0) * sizeof(float));
    int64_t b1 = ig_min(c->n, (ch + 1) * d->per);
    for (int64_t b = ch * d->per; b < b1; b++)
        for (int64_t gi = 0; gi < c->G; gi++) {
            ig_frame_g(d, gp, b, gi);
            const float *xg = c->xp + b * c->xps + gi * c->cg * c->plane;
            float *pg = part + gi * d->mpad * d->npad;
            for (int64_t p0 = 0; p0 < c->Lp; p0 += k->kc) {
                int64_t kc = ig_min(k->kc, c->Lp - p0);
                for (int64_t ir = 0; ir < d->mpad; ir += mr) {
                    int rows = (int)ig_min(mr, c->ocg - ir);
                    for (int r = 0; r < rows; r++)
                        ptrs[r] = gp + (ir + r) * c->Lp + p0;
                    tm__cvp_pack_t(apk + ir * kc, ptrs, rows, kc, (int)mr);
                }
                for (int64_t jr = j0; jr < j1; jr += nr) {
                    int cols = (int)ig_min(nr, ncol - jr);
                    for (int j = 0; j < cols; j++)
                        ptrs[mr + j] = jr + j < c->K
                                           ? xg + c->koff[jr + j] + p0
                                           : d->ones;
                    tm__cvp_pack_t(bpk + (jr - j0) * kc, ptrs + mr, cols,
                                   kc, (int)nr);
                }
                for (int64_t ir = 0; ir < d->mpad; ir += mr) {
                    int64_t rows = ig_min(mr, c->ocg - ir);
                    bool by_row = k->ukr_row && rows <= mr / 2;
                    for (int64_t jr = j0; jr < j1; jr += nr) {
                        const float *bpan = bpk + (jr - j0) * kc;
                        if (by_row) { /* as in the forward */
                            for (int64_t r = 0; r < rows; r++)
                                k->ukr_row(kc, apk + ir * kc + r, bpan, nr,
                                           pg + (ir + r) * d->npad + jr, 1.0,
                                           1.0);
                            continue;
                        }
                        k->ukr(kc, apk + ir * kc, bpan, nr,
                               pg + ir * d->npad + jr, d->npad, 1.0, 1.0);
                    }
                }
            }
        }
}

static void ig_dw_part(int part, int nparts, void *v)
{
    const ig_dw *d = v;
    float *scr = d->scratch + (size_t)part * d->part_floats;
    const float **ptrs = d->ptrs + (size_t)part * (size_t)(d->c->mr +
                                                            d->c->nr);
    int64_t items = d->chunks * d->nsplit, panels = d->npad / d->c->nr;
    int64_t lo = items * part / nparts, hi = items * (part + 1) / nparts;
    for (int64_t it = lo; it < hi; it++) {
        int64_t ch = it / d->nsplit, s = it % d->nsplit;
        ig_dw_chunk(d, scr, ptrs, ch, panels * s / d->nsplit * d->c->nr,
                    panels * (s + 1) / d->nsplit * d->c->nr);
    }
}

/* dw and db = the chunks' partial products added in chunk order. */
static void ig_dw_reduce(const ig_dw *d, float *dw, float *db)
{
    const ig *c = d->c;
    const int64_t blk = d->mpad * d->npad, step = c->G * blk;
    for (int64_t gi = 0; gi < c->G; gi++)
        for (int64_t o = 0; o < c->ocg; o++) {
            const float *p = d->partial + gi * blk + o * d->npad;
            float *r = dw ? dw + (gi * c->ocg + o) * c->K : NULL;
            if (r) {
                memcpy(r, p, (size_t)c->K * sizeof(float));
                for (int64_t ch = 1; ch < d->chunks; ch++)
                    for (int64_t k = 0; k < c->K; k++) r[k] += p[ch * step + k];
            }
            if (db) {
                float s = p[c->K];
                for (int64_t ch = 1; ch < d->chunks; ch++)
                    s += p[ch * step + c->K];
                db[gi * c->ocg + o] = s;
            }
        }
}

static tm_status ig_weight_grad(const tm_conv_geom *q, float *dw, float *db,
                                const float *g, const float *x)
{
    const char *fn = "conv_backward";
    ig c;
    ig_init(&c, q);
    ig_dw d;
    memset(&d, 0, sizeof d);
    tm_status st = ig_prepare(&c, q, x, fn);
    if (st) goto fail;
    d.c = &c, d.g = g, d.db = db != NULL;
    d.mpad = ig_up(c.ocg, c.mr);
    d.npad = ig_up(c.K + (d.db ? 1 : 0), c.nr);
    d.chunks = c.n < IG_DW_CHUNKS ? c.n : IG_DW_CHUNKS;
    d.per = (c.n + d.chunks - 1) / d.chunks;
    d.chunks = (c.n + d.per - 1) / d.per;
    /* fewer chunks than threads (small batches): cut the columns too */
    int64_t th = tm_get_num_threads(), panels = d.npad / c.nr;
    d.nsplit = d.chunks >= th ? 1 : ig_min(panels, (th + d.chunks - 1) /
                                                        d.chunks);
    int parts = ig_parts(d.chunks * d.nsplit);
    size_t pf = (size_t)(d.chunks * c.G * d.mpad * d.npad);
    d.partial = tm__alloc(pf * sizeof(float), fn);
    d.ones = tm__alloc((size_t)c.k->kc * sizeof(float), fn);
    d.part_floats = (size_t)(ig_up(d.mpad * c.Lp, 16) +
                             ig_up(d.mpad * c.k->kc, 16) +
                             ig_up(c.k->kc * d.npad, 16));
    d.scratch = tm__alloc(d.part_floats * (size_t)parts * sizeof(float), fn);
    d.ptrs = tm__alloc((size_t)(parts * (c.mr + c.nr)) * sizeof(float *), fn);
    if (!d.partial || !d.ones || !d.scratch || !d.ptrs) {
        st = tm_last_status();
        goto fail;
    }
    for (int64_t i = 0; i < c.k->kc; i++) d.ones[i] = 1.0f;
    if (parts == 1) ig_dw_part(0, 1, &d);
    else tm__parallel_parts(parts, ig_dw_part, &d);
    ig_dw_reduce(&d, dw, db);
fail:
    tm__dealloc(d.partial);
    tm__dealloc(d.ones);
    tm__dealloc(d.scratch);
    tm__dealloc((void *)d.ptrs);
    ig_release(&c);
    return st;
}

/* -------------------------------------------------------- data gradient */

/* dx = the forward kernel on g with the weight flipped and transposed:
 * wt[gi*cg + ci, o, t'] = w[gi*ocg + o, ci, kvol - 1 - t'], g padded by
 * DIL*(K-1) - P. */
static tm_status ig_data_grad(const tm_conv_geom *q, float *dx,
                              const float *g, const float *w)
{
    const char *fn = "conv_backward";
    int64_t G = q->g, cg = q->c / G, ocg = q->oc / G;
    int64_t kvol = q->kd * q->kh * q->kw;
    float *wt = tm__alloc((size_t)(q->c * ocg * kvol) * sizeof(float), fn);
    if (!wt) return tm_last_status();
    for (int64_t gi = 0; gi < G; gi++)
        for (int64_t o = 0; o < ocg; o++)
            for (int64_t ci = 0; ci < cg; ci++)
                for (int64_t t = 0; t < kvol; t++)
                    wt[((gi * cg + ci) * ocg + o) * kvol + (kvol - 1 - t)] =
                        w[((gi * ocg + o) * cg + ci) * kvol + t];
    tm_conv_geom t = *q;
    t.c = q->oc, t.oc = q->c, t.d = q->od, t.h = q->oh, t.w = q->ow;
    t.od = q->d, t.oh = q->h, t.ow = q->w;
    t.pd = q->dd * (q->kd - 1) - q->pd;
    t.ph = q->dh * (q->kh - 1) - q->ph;
    t.pw = q->dw * (q->kw - 1) - q->pw;
    tm_status st = tm__conv_igemm_forward(&t, dx, g, wt, NULL);
    tm__dealloc(wt);
    return st;
}

tm_status tm__conv_igemm_backward(const tm_conv_geom *q, float *dx,
                                  float *dw, float *db, const float *g,
                                  const float *x, const float *w)
{
    tm_status st = TM_OK;
    if (dx) st = ig_data_grad(q, dx, g, w);
    if (!st && (dw || db)) {
        if (dw) {
            st = ig_weight_grad(q, dw, db, g, x);
        } else { /* db alone: the sum of g over images and positions */
            int64_t L = q->od * q->oh * q->ow;
            for (int64_t o = 0; o < q->oc; o++) {
                double s = 0;
                for (int64_t b = 0; b < q->n; b++)
                    for (int64_t l = 0; l < L; l++)
                        s += g[(b * q->oc + o) * L + l];
                db[o] = (float)s;
            }
        }
    }
    return st;
}
