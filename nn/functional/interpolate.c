/* interpolate.c — tm_interpolate: nearest, nearest-exact, (bi/tri)linear
 * and cubic resampling over 1 to 3 spatial dims, composed of public ops
 * one dim at a time (tm__resample_dim: gathered neighbours times host-
 * computed weights), so gradients and devices come with them.  Source
 * indices and weights follow PyTorch's CPU kernels, in their precision:
 * nearest modes compute in float always; linear and cubic in float for
 * F32/F16/BF16 and in double for F64 (rd() rounds each step as float
 * arithmetic would).  Cubic is separable, so the 4 x 4 (x 4)
 * neighbourhood's weights are products of per-dim weights, A = -0.75,
 * taps clamped to the border. */
#include "spatial_impl.h"

#include <math.h>
#include <stdlib.h>

static double rd(bool sp, double v)
{
    return sp ? (double)(float)v : v;
}

/* PyTorch's area_pixel_compute_scale. */
static double ip_scale(bool sp, int64_t in, int64_t out, double s,
                       bool align)
{
    if (align) return out > 1 ? rd(sp, (double)(in - 1) / (double)(out - 1))
                              : 0.0;
    return s > 0 ? rd(sp, 1.0 / s) : rd(sp, (double)in / (double)out);
}

static double cc1(double x, double a)
{
    return ((a + 2) * x - (a + 3)) * x * x + 1;
}

static double cc2(double x, double a)
{
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/* The taps (k per output) and weights (w NULL for nearest) of one dim. */
static void ip_taps(tm_interp_mode mode, bool sp, int64_t in, int64_t out,
                    double s, bool align, int64_t *idx, double *w)
{
    for (int64_t i = 0; i < out; i++) {
        if (mode == TM_INTERP_NEAREST || mode == TM_INTERP_NEAREST_EXACT) {
            float sc = s > 0 ? (float)(1.0 / s) : (float)in / (float)out;
            int64_t j;
            if (mode == TM_INTERP_NEAREST && out == in) j = i;
            else if (mode == TM_INTERP_NEAREST && out == 2 * in) j = i >> 1;
            else if (mode == TM_INTERP_NEAREST)
                j = (int64_t)floorf((float)i * sc);
            else
                j = (int64_t)floorf((float)(((double)i + 0.5) * sc));
            idx[i] = j < in - 1 ? j : in - 1;
            continue;
        }
        bool cubic = mode == TM_INTERP_CUBIC;
        double sc = ip_scale(sp, in, out, s, align), src;
        if (!cubic && out == in) { /* PyTorch's identity shortcut */
            idx[2 * i] = idx[2 * i + 1] = i;
            w[2 * i] = 1, w[2 * i + 1] = 0;
            continue;
        }
        if (align) {
            src = rd(sp, sc * (double)i);
        } else {
            src = rd(sp, rd(sp, sc * rd(sp, (double)i + 0.5)) - 0.5);
            if (!cubic && src < 0) src = 0;
        }
        /* guard_index_and_lambda */
        int64_t i0 = (int64_t)floor(src);
        if (i0 > in - 1) i0 = in - 1;
        double t = rd(sp, src - (double)i0);
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        if (!cubic) {
            idx[2 * i] = i0, idx[2 * i + 1] = i0 + (i0 < in - 1);
            w[2 * i] = rd(sp, 1 - t), w[2 * i + 1] = t;
            continue;
        }
        double a = -0.75, c[4] = {cc2(t + 1, a), cc1(t, a), cc1(1 - t, a),
                                  cc2(2 - t, a)};
        for (int j = 0; j < 4; j++) {
            int64_t p = i0 - 1 + j;
            idx[4 * i + j] = p < 0 ? 0 : p > in - 1 ? in - 1 : p;
            w[4 * i + j] = rd(sp, c[j]);
        }
    }
}

/* Validates x [N, C, *S] (dims spatial dims) and the output sizes. */
static tm_status ip_check(const char *fn, const tm_tensor *x, int dims,
                          const int64_t *size)
{
    char sx[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, x, "x")) return tm_last_status();
    if (dims < 1 || dims > 3 || !size)
        return tm__errf(TM_EINVAL, fn, "spatial dims must be 1, 2 or 3 and "
                        "size given, got dims %d", dims);
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    if (!tm_dtype_is_float(x->dtype))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not supported: a float "
                        "dtype is needed", tm_dtype_name(x->dtype));
    if (x->ndim != dims + 2)
        return tm__errf(TM_ESHAPE, fn, "x must be %dD [N, C, *S], got shape "
                        "%s", dims + 2, sx);
    for (int i = 0; i < dims; i++)
        if (x->shape[2 + i] < 1 || size[i] < 1)
            return tm__errf(TM_ESHAPE, fn, "input and output sizes must be > "
                            "0, got x %s and output size %lld in spatial dim "
                            "%d", sx, (long long)size[i], i);
    return TM_OK;
}

/* PyTorch's antialiasing filters: the triangle (linear) and the cubic
 * with A = -0.5 (not the -0.75 of plain bicubic). */
static double aa_filter(bool cubic, double x)
{
    x = fabs(x);
    if (!cubic) return x < 1 ? 1 - x : 0;
    return x < 1 ? cc1(x, -0.5) : x < 2 ? cc2(x, -0.5) : 0;
}

/* The longest antialiased window of one dim (PyTorch's interp_size/2
 * widened by the scale when downsampling), for sizing the tap arrays. */
static int64_t aa_taps(bool cubic, double sc)
{
    double support = (cubic ? 2.0 : 1.0) * (sc >= 1 ? sc : 1);
    return (int64_t)ceil(support) * 2 + 1;
}

/* Antialiased taps of one dim (PyTorch's
 * _compute_indices_min_size_weights_aa): normalized filter weights over
 * [xmin, xmin + xsize), padded with zero-weight repeats of xmin to k. */
static void aa_weights(bool cubic, bool sp, int64_t in, int64_t out,
                       double s, bool align, int64_t k, int64_t *idx,
                       double *w)
{
    double sc = ip_scale(sp, in, out, s, align);
    double support = rd(sp, (cubic ? 2.0 : 1.0) * (sc >= 1 ? sc : 1));
    double inv = sc >= 1 ? rd(sp, 1.0 / sc) : 1;
    for (int64_t i = 0; i < out; i++) {
        double center = rd(sp, sc * rd(sp, (double)i + 0.5));
        int64_t xmin = (int64_t)rd(sp, rd(sp, center - support) + 0.5);
        int64_t xmax = (int64_t)rd(sp, rd(sp, center + support) + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        double total = 0;
        for (int64_t j = 0; j < k; j++) {
            double v = 0;
            if (j < xmax - xmin)
                v = rd(sp, aa_filter(cubic, rd(sp, rd(sp, rd(sp,
                        (double)(j + xmin) - center) + 0.5) * inv)));
            idx[i * k + j] = j < xmax - xmin ? xmin + j : xmin;
            w[i * k + j] = v;
            total = rd(sp, total + v);
        }
        if (total != 0)
            for (int64_t j = 0; j < k; j++)
                w[i * k + j] = rd(sp, w[i * k + j] / total);
    }
}

tm_tensor *tm_interpolate_aa(const tm_tensor *x, int dims,
                             const int64_t *size, const double *scales,
                             tm_interp_mode mode, bool align_corners)
{
    static const char fn[] = "tm_interpolate_aa";
    if (mode != TM_INTERP_LINEAR && mode != TM_INTERP_CUBIC) {
        tm__errf(TM_EINVAL, fn, "antialiasing needs the linear or cubic "
                 "mode, got %d", (int)mode);
        return NULL;
    }
    if (ip_check(fn, x, dims, size)) return NULL;
    bool sp = x->dtype != TM_F64, cubic = mode == TM_INTERP_CUBIC;
    tm_tensor *v = tm_retain((tm_tensor *)x);
    for (int i = 0; i < dims && v; i++) {
        int64_t in = x->shape[2 + i], o = size[i];
        double s = scales ? scales[i] : 0;
        int64_t k = aa_taps(cubic, ip_scale(sp, in, o, s, align_corners));
        int64_t *idx = malloc((size_t)(o * k) * sizeof *idx);
        double *w = malloc((size_t)(o * k) * sizeof *w);
        tm_tensor *nv = NULL;
        if (!idx || !w) {
            tm__errf(TM_ENOMEM, fn, "out of memory for %lld taps",
                     (long long)(o * k));
        } else {
            aa_weights(cubic, sp, in, o, s, align_corners, k, idx, w);
            nv = tm__resample_dim(v, 2 + i, o, k, idx, w);
        }
        free(idx), free(w);
        tm_free(v);
        v = nv;
    }
    if (!v) tm__relabel_error(fn, tm_last_status());
    return v;
}

tm_tensor *tm_interpolate(const tm_tensor *x, int dims, const int64_t *size,
                          const double *scales, tm_interp_mode mode,
                          bool align_corners)
{
    static const char fn[] = "tm_interpolate";
    if ((unsigned)mode > TM_INTERP_CUBIC) {
        tm__errf(TM_EINVAL, fn, "unknown mode %d", (int)mode);
        return NULL;
    }
    if (ip_check(fn, x, dims, size)) return NULL;
    bool sp = x->dtype != TM_F64;
    int64_t k = mode == TM_INTERP_CUBIC ? 4 : mode == TM_INTERP_LINEAR ? 2
                                                                       : 1;
    bool near = k == 1;
    tm_tensor *v = tm_retain((tm_tensor *)x);
    for (int i = 0; i < dims && v; i++) {
        int64_t in = x->shape[2 + i], o = size[i];
        int64_t *idx = malloc((size_t)(o * k) * sizeof *idx);
        double *w = near ? NULL : malloc((size_t)(o * k) * sizeof *w);
        tm_tensor *nv = NULL;
        if (!idx || (!near && !w)) {
            tm__errf(TM_ENOMEM, fn, "out of memory for %lld taps",
                     (long long)(o * k));
        } else {
            ip_taps(mode, sp, in, o, scales ? scales[i] : 0, align_corners,
                    idx, w);
            nv = tm__resample_dim(v, 2 + i, o, k, idx, w);
        }
        free(idx), free(w);
        tm_free(v);
        v = nv;
    }
    if (!v) tm__relabel_error(fn, tm_last_status());
    return v;
}
