/* pad.c — tm_pad_mode: constant padding (tm_pad) and PyTorch's reflect,
 * replicate and circular modes, the latter composed of public ops (one
 * index_select per padded dim with host-computed source indices), so
 * their gradients add each output's gradient into the element it
 * copies.  Negative amounts crop in every mode. */
#include "spatial_impl.h"

#include <stdlib.h>

/* The source of output position j of a dim of length n padded by
 * (a, b).  Circular padding crops first (negative amounts) and wraps
 * around what is left, as PyTorch does. */
static int64_t pd_source(tm_padding_mode mode, int64_t j, int64_t n,
                         int64_t a, int64_t b)
{
    int64_t i = j - a;
    if (mode == TM_PAD_REFLECT) {
        if (i < 0) i = -i;
        if (i > n - 1) i = 2 * (n - 1) - i;
    } else if (mode == TM_PAD_REPLICATE) {
        i = i < 0 ? 0 : i > n - 1 ? n - 1 : i;
    } else {
        int64_t cl = a < 0 ? -a : 0, m = n - cl - (b < 0 ? -b : 0);
        i = j - (a > 0 ? a : 0);
        i = cl + ((i % m) + m) % m;
    }
    return i;
}

static const char *const pd_names[] = {"constant", "reflect", "replicate",
                                       "circular"};

tm_tensor *tm_pad_mode(const tm_tensor *t, const int64_t *pad, int npad,
                       tm_padding_mode mode, double value)
{
    static const char fn[] = "tm_pad_mode";
    char sx[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, t, "t")) return NULL;
    if ((unsigned)mode > TM_PAD_CIRCULAR) {
        tm__errf(TM_EINVAL, fn, "unknown mode %d", (int)mode);
        return NULL;
    }
    if (mode == TM_PAD_CONSTANT) {
        tm_tensor *r = tm_pad(t, pad, npad, value);
        if (!r) tm__relabel_error(fn, tm_last_status());
        return r;
    }
    tm__fmt_shape(t->shape, t->ndim, sx, sizeof sx);
    if (!pad || npad < 2 || npad > 6 || npad % 2) {
        tm__errf(TM_EINVAL, fn, "%s padding needs 2, 4 or 6 amounts, got "
                 "%d", pd_names[mode], npad);
        return NULL;
    }
    int k = npad / 2;
    if (t->ndim != k + 1 && t->ndim != k + 2) {
        tm__errf(TM_ESHAPE, fn, "%s padding of %d dims needs a %dD or %dD "
                 "(batch mode) input, got shape %s", pd_names[mode], k,
                 k + 1, k + 2, sx);
        return NULL;
    }
    int first = mode == TM_PAD_CIRCULAR ? t->ndim - k
                                        : (t->ndim == k + 2 ? 1 : 0);
    for (int d = first; d < t->ndim; d++)
        if (t->shape[d] == 0) {
            tm__errf(TM_ESHAPE, fn, "%s padding: dim %d of t %s is empty",
                     pd_names[mode], d, sx);
            return NULL;
        }
    for (int i = 0; i < k; i++) {
        int d = t->ndim - 1 - i;
        int64_t n = t->shape[d], a = pad[2 * i], b = pad[2 * i + 1];
        bool bad = mode == TM_PAD_REFLECT ? (a >= n || b >= n)
                   : mode == TM_PAD_CIRCULAR && (a > n || b > n);
        int64_t kept = n - (a < 0 ? -a : 0) - (b < 0 ? -b : 0);
        if (bad || n + a + b < 1 || (mode == TM_PAD_CIRCULAR && kept < 1)) {
            tm__errf(TM_EINVAL, fn, "%s padding (%lld, %lld) of dim %d of "
                     "size %lld: %s", pd_names[mode], (long long)a,
                     (long long)b, d, (long long)n,
                     !bad ? "the result would be empty"
                     : mode == TM_PAD_REFLECT ? "each amount must be below "
                     "the size" : "each amount must be at most the size (no "
                     "wrapping around more than once)");
            return NULL;
        }
    }
    tm_tensor *v = tm_retain((tm_tensor *)t);
    for (int i = 0; i < k && v; i++) {
        int d = t->ndim - 1 - i;
        int64_t n = t->shape[d], o = n + pad[2 * i] + pad[2 * i + 1];
        int64_t *idx = malloc((size_t)o * sizeof *idx + 1);
        tm_tensor *nv = NULL;
        if (!idx) {
            tm__errf(TM_ENOMEM, fn, "out of memory");
        } else {
            for (int64_t j = 0; j < o; j++)
                idx[j] = pd_source(mode, j, n, pad[2 * i], pad[2 * i + 1]);
            nv = tm__resample_dim(v, d, o, 1, idx, NULL);
        }
        free(idx);
        tm_free(v);
        v = nv;
    }
    if (!v) tm__relabel_error(fn, tm_last_status());
    return v;
}
