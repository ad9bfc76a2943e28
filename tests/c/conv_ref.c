/* conv_ref.c — the F64 convolution reference of conv_ref.h. */
#include "conv_ref.h"

#include "harness.h"

#include <math.h>
#include <stdlib.h>

void tt_conv_fill(float *p, int64_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((s >> 8) / 8388608.0 - 1.0);
    }
}

static double *dzeros(int64_t n)
{
    return calloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

void tt_conv_refs_free(tt_conv_refs *r)
{
    free(r->y), free(r->dx), free(r->dw), free(r->db);
    free(r->sy), free(r->sdx), free(r->sdw), free(r->sdb);
}

bool tt_conv_reference(const tm_conv_geom *q, const float *x, const float *w,
                       const float *b, const float *g, tt_conv_refs *r)
{
    int64_t cg = q->c / q->g, ocg = q->oc / q->g;
    int64_t L = q->od * q->oh * q->ow, X = q->d * q->h * q->w;
    int64_t kv = q->kd * q->kh * q->kw;
    int64_t yn = q->n * q->oc * L, xn = q->n * q->c * X, wn = q->oc * cg * kv;
    *r = (tt_conv_refs){dzeros(yn), dzeros(xn), dzeros(wn), dzeros(q->oc),
                        dzeros(yn), dzeros(xn), dzeros(wn), dzeros(q->oc)};
    if (!(r->y && r->dx && r->dw && r->db && r->sy && r->sdx && r->sdw &&
          r->sdb)) {
        tt_conv_refs_free(r);
        return false;
    }
    for (int64_t n = 0; n < q->n; n++)
        for (int64_t o = 0; o < q->oc; o++)
            for (int64_t l = 0; l < L; l++) {
                int64_t oz = l / (q->oh * q->ow), oy = l / q->ow % q->oh;
                int64_t ox = l % q->ow, yi = (n * q->oc + o) * L + l;
                double gv = g[yi];
                r->y[yi] += b[o], r->sy[yi] += fabs(b[o]);
                r->db[o] += gv, r->sdb[o] += fabs(gv);
                for (int64_t ci = 0; ci < cg; ci++)
                    for (int64_t t = 0; t < kv; t++) {
                        int64_t a = t / (q->kh * q->kw), i = t / q->kw % q->kh;
                        int64_t j = t % q->kw, c = o / ocg * cg + ci;
                        int64_t z = oz * q->sd - q->pd + a * q->dd;
                        int64_t yy = oy * q->sh - q->ph + i * q->dh;
                        int64_t xx = ox * q->sw - q->pw + j * q->dw;
                        if (z < 0 || z >= q->d || yy < 0 || yy >= q->h ||
                            xx < 0 || xx >= q->w)
                            continue;
                        int64_t xi = (n * q->c + c) * X +
                                     (z * q->h + yy) * q->w + xx;
                        int64_t wi = (o * cg + ci) * kv + t;
                        r->y[yi] += (double)w[wi] * x[xi];
                        r->sy[yi] += fabs((double)w[wi] * x[xi]);
                        r->dx[xi] += gv * w[wi];
                        r->sdx[xi] += fabs(gv * w[wi]);
                        r->dw[wi] += gv * x[xi];
                        r->sdw[wi] += fabs(gv * x[xi]);
                    }
            }
    return true;
}

int tt_conv_compare(const char *what, const float *got, const double *ref,
                    const double *mag, int64_t n, double terms)
{
    int bad = 0;
    double u = 1.0 / 16777216.0;
    for (int64_t i = 0; i < n; i++) {
        double tol = 2 * (terms + 2) * u * mag[i];
        if (!(fabs(got[i] - ref[i]) <= tol)) {
            if (!bad)
                tt_fail(__FILE__, __LINE__, "%s[%lld] = %.9g, expected %.9g "
                        "(tol %g)", what, (long long)i, got[i], ref[i], tol);
            bad++;
        }
    }
    return bad;
}
