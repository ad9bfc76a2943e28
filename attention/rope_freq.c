/*
 * rope_freq.c — the frequencies of each rope scaling kind, in double, as
 * Hugging Face transformers' modeling_rope_utils defines them (its
 * formulas transcribed, its float32 arithmetic not: the host computes in
 * double and the tables round once).
 */
#include "rope_impl.h"

#include <math.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static bool pos_finite(double v) { return isfinite(v) && v > 0; }

static const char *kind_name(tm_rope_scaling s)
{
    switch (s) {
    case TM_ROPE_SCALING_NONE: return "none";
    case TM_ROPE_SCALING_LINEAR: return "linear";
    case TM_ROPE_SCALING_DYNAMIC: return "dynamic";
    case TM_ROPE_SCALING_YARN: return "yarn";
    case TM_ROPE_SCALING_LLAMA3: return "llama3";
    }
    return "unknown";
}

tm_status tm__rope_check(const char *fn, const tm_rope_config *c)
{
    if (!c) return tm__errf(TM_EINVAL, fn, "config is NULL");
    tm_rope_scaling s = c->scaling;
    const char *k = kind_name(s);
    if (c->head_dim < 2)
        return tm__errf(TM_EINVAL, fn, "head_dim must be >= 2, got %lld",
                        (long long)c->head_dim);
    if (c->rotary_dim < 2 || c->rotary_dim % 2 ||
        c->rotary_dim > c->head_dim)
        return tm__errf(TM_EINVAL, fn, "rotary_dim must be even and in [2, "
                        "head_dim %lld], got %lld", (long long)c->head_dim,
                        (long long)c->rotary_dim);
    if (!pos_finite(c->theta))
        return tm__errf(TM_EINVAL, fn, "theta must be finite and > 0, got "
                        "%g", c->theta);
    if ((int)s < (int)TM_ROPE_SCALING_NONE ||
        (int)s > (int)TM_ROPE_SCALING_LLAMA3)
        return tm__errf(TM_EINVAL, fn, "unknown scaling kind %d", (int)s);
    if (!isfinite(c->attention_factor) || c->attention_factor < 0)
        return tm__errf(TM_EINVAL, fn, "attention_factor must be finite and "
                        ">= 0 (0: the default), got %g", c->attention_factor);
    if (s == TM_ROPE_SCALING_NONE) return TM_OK;
    if (!pos_finite(c->factor))
        return tm__errf(TM_EINVAL, fn, "%s scaling: factor must be finite "
                        "and > 0, got %g", k, c->factor);
    if (s != TM_ROPE_SCALING_LINEAR && c->original_max_positions <= 0)
        return tm__errf(TM_EINVAL, fn, "%s scaling: original_max_positions "
                        "must be > 0, got %lld", k,
                        (long long)c->original_max_positions);
    if (s == TM_ROPE_SCALING_DYNAMIC && c->rotary_dim == 2)
        return tm__errf(TM_EINVAL, fn, "dynamic scaling needs rotary_dim > "
                        "2 (its exponent is r / (r - 2)), got 2");
    if (s == TM_ROPE_SCALING_YARN &&
        (!pos_finite(c->beta_fast) || !pos_finite(c->beta_slow) ||
         !isfinite(c->mscale) || c->mscale < 0 ||
         !isfinite(c->mscale_all_dim) || c->mscale_all_dim < 0))
        return tm__errf(TM_EINVAL, fn, "yarn scaling: beta_fast %g and "
                        "beta_slow %g must be finite and > 0, mscale %g and "
                        "mscale_all_dim %g finite and >= 0", c->beta_fast,
                        c->beta_slow, c->mscale, c->mscale_all_dim);
    if (s == TM_ROPE_SCALING_LLAMA3 &&
        (!pos_finite(c->low_freq_factor) || !pos_finite(c->high_freq_factor) ||
         c->low_freq_factor >= c->high_freq_factor))
        return tm__errf(TM_EINVAL, fn, "llama3 scaling: need 0 < "
                        "low_freq_factor < high_freq_factor, got %g and %g",
                        c->low_freq_factor, c->high_freq_factor);
    return TM_OK;
}

/* YaRN's magnitude correction of a scale (1 when not stretching). */
static double yarn_mscale(double scale, double m)
{
    return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0;
}

/* The (fractional) pair dimension at which `rotations` full turns fit in
 * the original context. */
static double yarn_dim(double rotations, double dim, double base,
                       double orig)
{
    return dim * log(orig / (rotations * 2 * M_PI)) / (2 * log(base));
}

static void yarn(const tm_rope_config *c, double *inv, double *attn)
{
    int64_t h = c->rotary_dim / 2;
    double dim = (double)c->rotary_dim, f = c->factor;
    double orig = (double)c->original_max_positions;
    double lo = yarn_dim(c->beta_fast, dim, c->theta, orig);
    double hi = yarn_dim(c->beta_slow, dim, c->theta, orig);
    if (c->yarn_truncate) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    if (lo < 0) lo = 0;
    if (hi > dim - 1) hi = dim - 1;
    if (lo == hi) hi += 0.001; /* the ramp's width must not be 0 */
    for (int64_t t = 0; t < h; t++) {
        double extra = pow(c->theta, -(2.0 * (double)t) / dim);
        double ramp = ((double)t - lo) / (hi - lo);
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        /* ramp 0: the fast dims keep their frequency (extrapolation);
         * ramp 1: the slow ones are interpolated */
        inv[t] = extra / f * ramp + extra * (1 - ramp);
    }
    if (c->attention_factor > 0) *attn = c->attention_factor;
    else if (c->mscale > 0 && c->mscale_all_dim > 0)
        *attn = yarn_mscale(f, c->mscale) / yarn_mscale(f, c->mscale_all_dim);
    else *attn = yarn_mscale(f, 1.0);
}

static void llama3(const tm_rope_config *c, double *inv)
{
    int64_t h = c->rotary_dim / 2;
    double orig = (double)c->original_max_positions, f = c->factor;
    double lf = c->low_freq_factor, hf = c->high_freq_factor;
    double low_wl = orig / lf, high_wl = orig / hf;
    for (int64_t t = 0; t < h; t++) {
        double wl = 2 * M_PI / inv[t];
        if (wl > low_wl) {
            inv[t] /= f;
        } else if (wl >= high_wl) {
            double sm = (orig / wl - lf) / (hf - lf);
            inv[t] = (1 - sm) * inv[t] / f + sm * inv[t];
        }
    }
}

void tm__rope_freqs(const tm_rope_config *c, int64_t len, double *inv,
                    double *attn)
{
    int64_t h = c->rotary_dim / 2;
    double dim = (double)c->rotary_dim, base = c->theta;
    *attn = c->attention_factor > 0 ? c->attention_factor : 1.0;
    if (c->scaling == TM_ROPE_SCALING_YARN) {
        yarn(c, inv, attn);
        return;
    }
    if (c->scaling == TM_ROPE_SCALING_DYNAMIC) {
        double orig = (double)c->original_max_positions, f = c->factor;
        double l = (double)len > orig ? (double)len : orig;
        base *= pow(f * l / orig - (f - 1), dim / (dim - 2));
    }
    for (int64_t t = 0; t < h; t++)
        inv[t] = pow(base, -(2.0 * (double)t) / dim);
    if (c->scaling == TM_ROPE_SCALING_LINEAR)
        for (int64_t t = 0; t < h; t++) inv[t] /= c->factor;
    else if (c->scaling == TM_ROPE_SCALING_LLAMA3)
        llama3(c, inv);
}
