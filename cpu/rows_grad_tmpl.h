/*
 * rows_grad_tmpl.h — the per-row pass of the fused layer_norm / rms_norm
 * backward (cpu_rows_grad.c) for one element type, instantiated for float
 * and double (no include guard).  The includer defines NRB_T and
 * NRB_N(name).
 */

static void NRB_N(tm__nrb_row)(const tm__nrb *c, int64_t r, double *pdw,
                            double *pdb)
{
    int64_t n = c->cols;
    const NRB_T *x = (const NRB_T *)tm__ptr(c->x) + r * n;
    const NRB_T *g = (const NRB_T *)tm__ptr(c->g) + r * n;
    const NRB_T *w = c->w && tm__ptr(c->w) ? (const NRB_T *)tm__ptr(c->w) : NULL;
    NRB_T *dx = c->dx && tm__ptr(c->dx) ? (NRB_T *)tm__ptr(c->dx) + r * n : NULL;
    double x0 = c->rms ? 0.0 : (double)x[0], s1 = 0, s2 = 0;
    for (int64_t j = 0; j < n; j++) {
        double d = (double)x[j] - x0;
        s1 += d;
        s2 += d * d;
    }
    double m1 = c->rms ? 0.0 : s1 / (double)n;
    double var = s2 / (double)n - m1 * m1;
    if (var < 0) var = 0;
    double mean = x0 + m1, rstd = 1.0 / sqrt(var + c->eps);
    double a = 0, b = 0;
    for (int64_t j = 0; j < n; j++) {
        double xh = ((double)x[j] - mean) * rstd;
        double gy = (double)g[j] * (w ? (double)w[j] : 1.0);
        a += gy;
        b += gy * xh;
        if (pdw) pdw[j] += (double)g[j] * xh;
        if (pdb) pdb[j] += (double)g[j];
    }
    if (!dx) return;
    a = c->rms ? 0.0 : a / (double)n;
    b /= (double)n;
    for (int64_t j = 0; j < n; j++) {
        double xh = ((double)x[j] - mean) * rstd;
        double gy = (double)g[j] * (w ? (double)w[j] : 1.0);
        dx[j] = (NRB_T)(rstd * (gy - a - xh * b));
    }
}
