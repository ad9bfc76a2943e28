/*
 * attn_ref.c — the reference attention kernels: a query row at a time,
 * its scores in an O(Tk) scratch row, every sum in double and in key
 * order.  Plain loops written straight from the contract in
 * foundry/backend.h, kept simple so they can be the tiled kernels' oracle.
 *
 * Threads: the forward splits the B*H*Tq rows into one contiguous run per
 * part.  The backward's dk and dv rows are sums over every query row of a
 * key/value head's group, so it splits by (b, key/value head): one part
 * owns a group's dq, dk and dv, and results do not depend on the thread
 * count.
 */
#include "attn_impl.h"

typedef struct ref_job {
    const tm_buf *dq, *dk, *dv, *g, *q, *k, *v, *out, *lse, *mask;
    const tm_attn_params *p;
    tm__attn_geom ge;
    tm__attn_dropout dr;
    double *scratch; /* per part: part_doubles */
    size_t part_doubles;
    uint8_t *keep;   /* per part: tk */
} ref_job;

static void store(void *row, tm_dtype dt, int64_t j, double x)
{
    if (dt == TM_F64) ((double *)row)[j] = x;
    else ((float *)row)[j] = (float)x;
}

static void *out_row(const tm_buf *t, int64_t a, int64_t b, int64_t c)
{
    return (void *)tm__attn_row_ptr(t, a, b, c);
}

/* The scores of row (b, h, i) over its visible keys [lo, hi) into s[j]
 * (-inf where masked); returns their max (-inf when none is visible). */
static double row_scores(const ref_job *J, int64_t b, int64_t h, int64_t i,
                         const double *qr, int64_t lo, int64_t hi, double *s)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t hk = h / ge->group;
    double m = -INFINITY;
    for (int64_t j = lo; j < hi; j++) {
        const void *kr = tm__attn_row_ptr(J->k, b, hk, j);
        double dot = 0.0;
        for (int64_t c = 0; c < ge->d; c++)
            dot += qr[c] * tm__attn_load(kr, J->k->dtype, c);
        double sc = J->p->scale * dot;
        if (J->mask && J->mask->handle)
            sc += tm__attn_mask_at(J->mask, b, h, i, j);
        s[j] = sc;
        if (sc > m) m = sc;
    }
    return m;
}

/* The dropout factor of key j (1 when dropout is off). */
static double drop_factor(const ref_job *J, const uint8_t *keep, int64_t j)
{
    if (J->p->dropout_p <= 0.0) return 1.0;
    return keep[j] ? J->dr.keep_scale : 0.0;
}

static void fill_keep(const ref_job *J, int64_t b, int64_t h, int64_t i,
                      int64_t lo, int64_t hi, uint8_t *keep)
{
    if (J->p->dropout_p <= 0.0 || lo >= hi) return;
    const tm__attn_geom *ge = &J->ge;
    uint64_t e0 = (uint64_t)(((b * ge->h + h) * ge->tq + i) * ge->tk);
    tm__attn_dropout_row(&J->dr, e0, lo, hi, keep + lo);
}

static void fwd_part(int part, int nparts, void *ctx)
{
    ref_job *J = ctx;
    const tm__attn_geom *ge = &J->ge;
    int64_t rows = ge->b * ge->h * ge->tq;
    int64_t r0 = rows * part / nparts, r1 = rows * (part + 1) / nparts;
    double *s = J->scratch + J->part_doubles * (size_t)part;
    double *qr = s + ge->tk, *acc = qr + ge->d;
    uint8_t *keep = J->keep + (size_t)ge->tk * (size_t)part;
    tm_dtype qt = J->q->dtype, vt = J->v->dtype;
    for (int64_t r = r0; r < r1; r++) {
        int64_t b = r / (ge->h * ge->tq), h = r / ge->tq % ge->h,
                i = r % ge->tq, hk = h / ge->group, lo, hi;
        const void *qrow = tm__attn_row_ptr(J->q, b, h, i);
        for (int64_t c = 0; c < ge->d; c++) qr[c] = tm__attn_load(qrow, qt, c);
        tm__attn_row_range(J->p, ge->tk, i, &lo, &hi);
        double m = row_scores(J, b, h, i, qr, lo, hi, s);
        void *orow = out_row(J->out, b, h, i);
        double l = 0.0;
        if (m > -INFINITY)
            for (int64_t j = lo; j < hi; j++) l += exp(s[j] - m);
        double lse = m > -INFINITY ? m + log(l) : -INFINITY;
        for (int64_t c = 0; c < ge->dv; c++) acc[c] = 0.0;
        if (m > -INFINITY) {
            fill_keep(J, b, h, i, lo, hi, keep);
            for (int64_t j = lo; j < hi; j++) {
                double w = exp(s[j] - lse) * drop_factor(J, keep, j);
                if (w == 0.0) continue;
                const void *vr = tm__attn_row_ptr(J->v, b, hk, j);
                for (int64_t c = 0; c < ge->dv; c++)
                    acc[c] += w * tm__attn_load(vr, vt, c);
            }
        }
        for (int64_t c = 0; c < ge->dv; c++) store(orow, qt, c, acc[c]);
        if (J->lse && J->lse->handle)
            store(out_row(J->lse, 0, 0, 0), qt, r, lse);
    }
}

static tm_status run(ref_job *J, size_t part_doubles, tm__part_fn fn,
                     int parts, const char *name)
{
    J->part_doubles = part_doubles;
    J->scratch = tm__alloc(part_doubles * (size_t)parts * sizeof(double),
                           name);
    J->keep = J->scratch ? tm__alloc((size_t)(J->ge.tk * parts), name)
                         : NULL;
    if (!J->keep) {
        tm__dealloc(J->scratch);
        return TM_ENOMEM;
    }
    tm__parallel_parts(parts, fn, J);
    tm__dealloc(J->keep);
    tm__dealloc(J->scratch);
    return TM_OK;
}

static int parts_for(int64_t work)
{
    int t = tm_get_num_threads();
    return work < t ? (int)(work > 0 ? work : 1) : t;
}

tm_status tm__attn_ref_forward(const tm_buf *out, const tm_buf *lse,
                               const tm_buf *q, const tm_buf *k,
                               const tm_buf *v, const tm_buf *mask,
                               const tm_attn_params *p)
{
    ref_job J = {.out = out, .lse = lse, .q = q, .k = k, .v = v,
                 .mask = mask, .p = p, .ge = tm__attn_geom_of(q, k, v),
                 .dr = tm__attn_dropout_of(p)};
    int64_t rows = J.ge.b * J.ge.h * J.ge.tq;
    if (rows == 0) return TM_OK;
    return run(&J, (size_t)(J.ge.tk + J.ge.d + J.ge.dv), fwd_part,
               parts_for(rows), __func__);
}

/* One (b, key/value head) group: every query row of its heads, the sums
 * of dk and dv in double (sk, sv: Tk x D and Tk x Dv), then stored. */
static void bwd_group(ref_job *J, int64_t b, int64_t hk, double *w)
{
    const tm__attn_geom *ge = &J->ge;
    tm_dtype qt = J->q->dtype;
    double *s = w, *qr = s + ge->tk, *gr = qr + ge->d, *dqr = gr + ge->dv;
    double *sk = dqr + ge->d, *sv = sk + ge->tk * ge->d;
    uint8_t *keep = J->keep + (w - J->scratch) / J->part_doubles *
                                  (size_t)ge->tk;
    for (int64_t x = 0; x < ge->tk * (ge->d + ge->dv); x++) sk[x] = 0.0;
    for (int64_t h = hk * ge->group; h < (hk + 1) * ge->group; h++) {
        for (int64_t i = 0; i < ge->tq; i++) {
            int64_t lo, hi;
            const void *qrow = tm__attn_row_ptr(J->q, b, h, i);
            const void *grow = tm__attn_row_ptr(J->g, b, h, i);
            const void *orow = tm__attn_row_ptr(J->out, b, h, i);
            for (int64_t c = 0; c < ge->d; c++) {
                qr[c] = tm__attn_load(qrow, qt, c);
                dqr[c] = 0.0;
            }
            double dsum = 0.0; /* D_i = g_i . out_i */
            for (int64_t c = 0; c < ge->dv; c++) {
                gr[c] = tm__attn_load(grow, qt, c);
                dsum += gr[c] * tm__attn_load(orow, qt, c);
            }
            int64_t r = (b * ge->h + h) * ge->tq + i;
            double l = tm__attn_load(tm__attn_row_ptr(J->lse, 0, 0, 0), qt, r);
            tm__attn_row_range(J->p, ge->tk, i, &lo, &hi);
            if (l == -INFINITY) lo = hi; /* a row that saw nothing */
            row_scores(J, b, h, i, qr, lo, hi, s);
            fill_keep(J, b, h, i, lo, hi, keep);
            for (int64_t j = lo; j < hi; j++) {
                double pj = exp(s[j] - l), z = drop_factor(J, keep, j);
                if (pj == 0.0) continue;
                const void *kr = tm__attn_row_ptr(J->k, b, hk, j);
                const void *vr = tm__attn_row_ptr(J->v, b, hk, j);
                double dp = 0.0;
                for (int64_t c = 0; c < ge->dv; c++) {
                    double vv = tm__attn_load(vr, J->v->dtype, c);
                    dp += gr[c] * vv;
                    sv[j * ge->dv + c] += pj * z * gr[c];
                }
                double ds = pj * (dp * z - dsum) * J->p->scale;
                for (int64_t c = 0; c < ge->d; c++) {
                    dqr[c] += ds * tm__attn_load(kr, J->k->dtype, c);
                    sk[j * ge->d + c] += ds * qr[c];
                }
            }
            if (J->dq && J->dq->handle) {
                void *dqrow = out_row(J->dq, b, h, i);
                for (int64_t c = 0; c < ge->d; c++) store(dqrow, qt, c, dqr[c]);
            }
        }
    }
    for (int64_t j = 0; j < ge->tk; j++) {
        if (J->dk && J->dk->handle) {
            void *row = out_row(J->dk, b, hk, j);
            for (int64_t c = 0; c < ge->d; c++)
                store(row, qt, c, sk[j * ge->d + c]);
        }
        if (J->dv && J->dv->handle) {
            void *row = out_row(J->dv, b, hk, j);
            for (int64_t c = 0; c < ge->dv; c++)
                store(row, qt, c, sv[j * ge->dv + c]);
        }
    }
}

static void bwd_part(int part, int nparts, void *ctx)
{
    ref_job *J = ctx;
    int64_t groups = J->ge.b * J->ge.hkv;
    int64_t g0 = groups * part / nparts, g1 = groups * (part + 1) / nparts;
    double *w = J->scratch + J->part_doubles * (size_t)part;
    for (int64_t x = g0; x < g1; x++)
        bwd_group(J, x / J->ge.hkv, x % J->ge.hkv, w);
}

tm_status tm__attn_ref_backward(const tm_buf *dq, const tm_buf *dk,
                                const tm_buf *dv, const tm_buf *g,
                                const tm_buf *q, const tm_buf *k,
                                const tm_buf *v, const tm_buf *out,
                                const tm_buf *lse, const tm_buf *mask,
                                const tm_attn_params *p)
{
    ref_job J = {.dq = dq, .dk = dk, .dv = dv, .g = g, .q = q, .k = k,
                 .v = v, .out = out, .lse = lse, .mask = mask, .p = p,
                 .ge = tm__attn_geom_of(q, k, v),
                 .dr = tm__attn_dropout_of(p)};
    const tm__attn_geom *ge = &J.ge;
    int64_t groups = ge->b * ge->hkv;
    if (groups == 0 || ge->h == 0) return TM_OK;
    size_t per = (size_t)(ge->tk + 2 * ge->d + ge->dv +
                          ge->tk * (ge->d + ge->dv));
    return run(&J, per, bwd_part, parts_for(groups), __func__);
}
