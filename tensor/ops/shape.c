/* shape.c — cat, stack, split, split_sizes, chunk, pad, repeat.
 *
 * Everything here is views plus backend copies: results are allocated once
 * and each input is copied into a window of them (a tm_buf whose data
 * pointer is moved and whose shape is cut down), so the code runs on any
 * device that implements copy and fill. */
#include "../core/grad_hooks.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A kernel view of `t` cut to [start, start + len) along dim d. */
static tm_buf tm__window(const tm_tensor *t, int d, int64_t start, int64_t len)
{
    tm_buf b = tm__buf(t);
    b.offset += (size_t)(start * b.strides[d]) * tm_dtype_size(t->dtype);
    b.shape[d] = len;
    return b;
}

/* "[2,*,4]": a shape with dim d shown as '*'. */
static char *tm__fmt_star(const int64_t *shape, int ndim, int d, char *buf,
                          size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++) {
        const char *sep = i ? "," : "";
        if (i == d) n += (size_t)snprintf(buf + n, size - n, "%s*", sep);
        else n += (size_t)snprintf(buf + n, size - n, "%s%lld", sep,
                                   (long long)shape[i]);
    }
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

/* Non-NULL list of n >= 1 non-NULL tensors on one device; *dt gets their
 * promoted dtype. */
static tm_status tm__check_list(const char *fn, tm_tensor *const *ts, int n,
                                tm_dtype *dt)
{
    if (n <= 0) return tm__errf(TM_EINVAL, fn, "needs at least one tensor, "
                                "got n = %d", n);
    if (!ts) return tm__errf(TM_EINVAL, fn, "ts is NULL");
    for (int i = 0; i < n; i++) {
        if (!ts[i]) return tm__errf(TM_EINVAL, fn, "tensor %d is NULL", i);
        if (tm__q_refuse(fn, ts[i], "a tensor")) return tm_last_status();
        *dt = i ? tm_promote_types(*dt, ts[i]->dtype) : ts[i]->dtype;
    }
    return tm__check_same_device(fn, (const tm_tensor *const *)ts, n);
}

static bool tm__legacy_empty(const tm_tensor *t)
{
    return t->ndim == 1 && t->shape[0] == 0;
}

tm_tensor *tm_cat(tm_tensor *const *ts, int n, int dim)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    tm_dtype dt = TM_F32;
    if (tm__check_list(__func__, ts, n, &dt)) return NULL;
    int ref = -1;
    for (int i = 0; i < n && ref < 0; i++)
        if (!tm__legacy_empty(ts[i])) ref = i;
    if (ref < 0) /* only [0] tensors: an empty [0] result */
        return tm__grad_cat(tm__tensor_new(__func__, (int64_t[]){0}, 1, dt,
                                           tm_device_of(ts[0])),
                            ts, n, 0);
    const tm_tensor *r = ts[ref];
    int d;
    if (r->ndim == 0) {
        TM_ERR(TM_EINVAL, "tensor %d is 0-d and cannot be concatenated", ref);
        return NULL;
    }
    if (tm__wrap_dim(__func__, dim, r->ndim, &d)) return NULL;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const tm_tensor *t = ts[i];
        if (tm__legacy_empty(t)) continue;
        if (t->ndim != r->ndim) {
            TM_ERR(TM_ESHAPE, "tensor %d has %d dims (shape %s) but tensor "
                   "%d has %d", i, t->ndim,
                   tm__fmt_shape(t->shape, t->ndim, a, sizeof a), ref,
                   r->ndim);
            return NULL;
        }
        for (int k = 0; k < r->ndim; k++) {
            if (k != d && t->shape[k] != r->shape[k]) {
                TM_ERR(TM_ESHAPE, "tensor %d has shape %s, expected %s (as "
                       "tensor %d): size %lld != %lld at dim %d", i,
                       tm__fmt_shape(t->shape, t->ndim, a, sizeof a),
                       tm__fmt_star(r->shape, r->ndim, d, b, sizeof b), ref,
                       (long long)t->shape[k], (long long)r->shape[k], k);
                return NULL;
            }
        }
        if (t->shape[d] > INT64_MAX - total) {
            TM_ERR(TM_EOVERFLOW, "the sizes along dim %d add up to more "
                   "than %lld", d, (long long)INT64_MAX);
            return NULL;
        }
        total += t->shape[d];
    }
    tm_ctx *cx = tm__ctx(r);
    int64_t shape[TM_MAX_DIMS];
    memcpy(shape, r->shape, sizeof(int64_t) * (size_t)r->ndim);
    shape[d] = total;
    tm_tensor *out = tm__tensor_new(__func__, shape, r->ndim, dt,
                                    tm_device_of(r));
    if (!out) return NULL;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        const tm_tensor *t = ts[i];
        if (tm__legacy_empty(t) || tm_numel(t) == 0) {
            if (!tm__legacy_empty(t)) off += t->shape[d];
            continue;
        }
        tm_buf dst = tm__window(out, d, off, t->shape[d]);
        tm_buf src = tm__buf(t);
        if (TM__CALL(__func__, cx, copy, &dst, &src)) {
            tm_free(out);
            return NULL;
        }
        off += t->shape[d];
    }
    return tm__grad_cat(out, ts, n, d);
}

tm_tensor *tm_stack(tm_tensor *const *ts, int n, int dim)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    tm_dtype dt = TM_F32;
    if (tm__check_list(__func__, ts, n, &dt)) return NULL;
    const tm_tensor *r = ts[0];
    for (int i = 1; i < n; i++) {
        const tm_tensor *t = ts[i];
        if (t->ndim != r->ndim ||
            memcmp(t->shape, r->shape, sizeof(int64_t) * (size_t)r->ndim)) {
            TM_ERR(TM_ESHAPE, "tensor %d has shape %s, expected %s (as "
                   "tensor 0)", i,
                   tm__fmt_shape(t->shape, t->ndim, a, sizeof a),
                   tm__fmt_shape(r->shape, r->ndim, b, sizeof b));
            return NULL;
        }
    }
    if (r->ndim >= TM_MAX_DIMS) {
        TM_ERR(TM_EINVAL, "stacking %d-d tensors needs more than %d dims",
               r->ndim, TM_MAX_DIMS);
        return NULL;
    }
    int d;
    if (tm__wrap_dim(__func__, dim, r->ndim + 1, &d)) return NULL;
    tm_ctx *cx = tm__ctx(r);
    int64_t shape[TM_MAX_DIMS];
    for (int i = 0, k = 0; i <= r->ndim; i++) {
        if (i == d) shape[k++] = n;
        if (i < r->ndim) shape[k++] = r->shape[i];
    }
    tm_tensor *out = tm__tensor_new(__func__, shape, r->ndim + 1, dt,
                                    tm_device_of(r));
    if (!out) return NULL;
    for (int i = 0; i < n && tm_numel(out) > 0; i++) {
        /* out selected at i along d: drop dim d from a window */
        tm_buf dst = tm__window(out, d, i, 1);
        for (int k = d; k < r->ndim; k++) {
            dst.shape[k] = dst.shape[k + 1];
            dst.strides[k] = dst.strides[k + 1];
        }
        dst.ndim = r->ndim;
        tm_buf src = tm__buf(ts[i]);
        if (TM__CALL(__func__, cx, copy, &dst, &src)) {
            tm_free(out);
            return NULL;
        }
    }
    return tm__grad_stack(out, ts, n, d);
}

/* ---------------------------------------------------------------- split */

/* Writes `count` views of t along d to out[]: piece i has sizes[i]
 * elements, or (sizes NULL) `step` elements, the last one fewer.  Nothing
 * stays written on failure. */
static int tm__pieces(const char *fn, const tm_tensor *t, int d,
                      int64_t count, int64_t step, const int64_t *sizes,
                      tm_tensor **out, int max_out)
{
    if (count > max_out)
        return tm__errf(TM_EINVAL, fn, "%lld pieces do not fit in max_out "
                        "= %d", (long long)count, max_out);
    if (count > 0 && !out) return tm__errf(TM_EINVAL, fn, "out is NULL");
    int64_t start = 0, size = t->shape[d], shape[TM_MAX_DIMS];
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    for (int64_t i = 0; i < count; i++) {
        int64_t len = sizes ? sizes[i]
                            : (size - start < step ? size - start : step);
        shape[d] = len;
        out[i] = tm__grad_slice(tm__view_of(fn, t, shape, t->strides,
                                            t->ndim,
                                            t->offset + start * t->strides[d]),
                                t, "SplitBackward", d, start, 1);
        if (!out[i]) {
            while (i-- > 0) {
                tm_free(out[i]);
                out[i] = NULL;
            }
            return tm_last_status();
        }
        start += len;
    }
    return (int)count;
}

/* Checks t (at least 1-D) and wraps dim into *d. */
static tm_status tm__split_args(const char *fn, const tm_tensor *t, int dim,
                                int *d)
{
    if (tm__check_dense_operand(fn, t, "tensor")) return tm_last_status();
    if (t->ndim == 0)
        return tm__errf(TM_EINVAL, fn, "cannot split a 0-d tensor");
    return tm__wrap_dim(fn, dim, t->ndim, d);
}

int tm_split(const tm_tensor *t, int64_t size, int dim, tm_tensor **out,
             int max_out)
{
    int d;
    if (tm__split_args(__func__, t, dim, &d)) return tm_last_status();
    int64_t n = t->shape[d];
    if (size < 0 || (size == 0 && n > 0))
        return TM_ERR(TM_EINVAL, "split size %lld must be positive (0 only "
                      "for a dim of size 0; dim %d has size %lld)",
                      (long long)size, d, (long long)n);
    int64_t count = n == 0 ? 1 : n / size + (n % size != 0);
    return tm__pieces(__func__, t, d, count, size, NULL, out, max_out);
}

int tm_split_sizes(const tm_tensor *t, const int64_t *sizes, int n, int dim,
                   tm_tensor **out, int max_out)
{
    int d;
    if (tm__split_args(__func__, t, dim, &d)) return tm_last_status();
    if (n < 0) return TM_ERR(TM_EINVAL, "n = %d is negative", n);
    if (n > 0 && !sizes) return TM_ERR(TM_EINVAL, "sizes is NULL");
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0)
            return TM_ERR(TM_EINVAL, "sizes[%d] = %lld is negative", i,
                          (long long)sizes[i]);
        if (sizes[i] > INT64_MAX - sum)
            return TM_ERR(TM_EOVERFLOW, "sizes add up to more than %lld",
                          (long long)INT64_MAX);
        sum += sizes[i];
    }
    if (sum != t->shape[d])
        return TM_ERR(TM_ESHAPE, "sizes add up to %lld but dim %d has size "
                      "%lld", (long long)sum, d, (long long)t->shape[d]);
    return tm__pieces(__func__, t, d, n, 0, sizes, out, max_out);
}

int tm_chunk(const tm_tensor *t, int chunks, int dim, tm_tensor **out,
             int max_out)
{
    int d;
    if (tm__split_args(__func__, t, dim, &d)) return tm_last_status();
    if (chunks <= 0)
        return TM_ERR(TM_EINVAL, "chunks = %d must be positive", chunks);
    int64_t n = t->shape[d];
    /* torch.chunk: pieces of ceil(n / chunks), so fewer pieces when the
     * rounding leaves nothing for the last ones; a dim of size 0 gives
     * `chunks` empty pieces */
    int64_t step = n / chunks + (n % chunks != 0);
    int64_t count = n == 0 ? chunks : n / step + (n % step != 0);
    return tm__pieces(__func__, t, d, count, step, NULL, out, max_out);
}

/* ------------------------------------------------------------------ pad */

tm_tensor *tm_pad(const tm_tensor *t, const int64_t *pad, int npad,
                  double value)
{
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    if (npad < 0 || npad % 2 || npad > 2 * t->ndim) {
        TM_ERR(TM_EINVAL, "npad = %d must be even and at most 2 * ndim = %d",
               npad, 2 * t->ndim);
        return NULL;
    }
    if (npad > 0 && !pad) {
        TM_ERR(TM_EINVAL, "pad is NULL");
        return NULL;
    }
    int nd = t->ndim;
    int64_t shape[TM_MAX_DIMS];
    /* the window of t that survives cropping, and where it lands */
    int64_t sstart[TM_MAX_DIMS] = {0}, dstart[TM_MAX_DIMS] = {0};
    int64_t len[TM_MAX_DIMS], before[TM_MAX_DIMS] = {0};
    for (int i = 0; i < nd; i++) shape[i] = len[i] = t->shape[i];
    for (int k = 0; k < npad / 2; k++) {
        int i = nd - 1 - k;
        int64_t lo = pad[2 * k], hi = pad[2 * k + 1], s = t->shape[i];
        /* |pad| beyond 2^61 cannot give a valid size; below that only a
         * huge (empty) dim can overflow the sum */
        const int64_t lim = INT64_MAX / 4;
        bool over = lo > lim || hi > lim || lo < -lim || hi < -lim ||
                    s > INT64_MAX - lim - lim;
        if (over || s + lo + hi < 0) {
            TM_ERR(over ? TM_EOVERFLOW : TM_EINVAL,
                   "padding (%lld, %lld) of dim %d of size %lld gives a "
                   "negative or too large size", (long long)lo,
                   (long long)hi, i, (long long)s);
            return NULL;
        }
        shape[i] = s + lo + hi;
        before[i] = lo;
        sstart[i] = lo < 0 ? -lo : 0;
        dstart[i] = lo > 0 ? lo : 0;
        len[i] = s - sstart[i] - (hi < 0 ? -hi : 0);
        if (len[i] < 0) len[i] = 0;
    }
    tm_ctx *cx = tm__ctx(t);
    tm_tensor *out = tm__tensor_new(__func__, shape, nd, t->dtype,
                                    tm_device_of(t));
    if (!out) return NULL;
    tm_buf o = tm__buf(out), src = tm__buf(t), dst = o;
    int64_t es = (int64_t)tm_dtype_size(t->dtype);
    bool any = true;
    for (int i = 0; i < nd; i++) {
        src.offset += (size_t)(sstart[i] * src.strides[i] * es);
        dst.offset += (size_t)(dstart[i] * dst.strides[i] * es);
        src.shape[i] = dst.shape[i] = len[i];
        if (len[i] == 0) any = false;
    }
    bool full = true; /* does t's window cover all of out? */
    for (int i = 0; i < nd; i++) full = full && len[i] == shape[i];
    tm_status st = TM_OK;
    if (!full && tm_numel(out) > 0) st = TM__CALL(__func__, cx, fill, &o, value);
    if (!st && any && tm_numel(out) > 0) st = TM__CALL(__func__, cx, copy, &dst, &src);
    if (st) {
        tm_free(out);
        return NULL;
    }
    return tm__grad_pad(out, t, before);
}

/* --------------------------------------------------------------- repeat */

tm_tensor *tm_repeat(const tm_tensor *t, const int64_t *repeats, int nrep)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    if (nrep < t->ndim || nrep > TM_MAX_DIMS) {
        TM_ERR(TM_EINVAL, "%d repeats for a %d-d tensor (need %d to %d)",
               nrep, t->ndim, t->ndim, TM_MAX_DIMS);
        return NULL;
    }
    if (nrep > 0 && !repeats) {
        TM_ERR(TM_EINVAL, "repeats is NULL");
        return NULL;
    }
    int lead = nrep - t->ndim;
    /* t seen with nrep dims (leading size-1 dims), and the result shape */
    int64_t ss[TM_MAX_DIMS], sst[TM_MAX_DIMS], shape[TM_MAX_DIMS];
    for (int i = 0; i < nrep; i++) {
        if (repeats[i] < 0) {
            TM_ERR(TM_EINVAL, "repeats %s has a negative entry",
                   tm__fmt_shape(repeats, nrep, a, sizeof a));
            return NULL;
        }
        ss[i] = i < lead ? 1 : t->shape[i - lead];
        sst[i] = i < lead ? 0 : t->strides[i - lead];
        if (ss[i] != 0 && repeats[i] > INT64_MAX / ss[i]) {
            TM_ERR(TM_EOVERFLOW, "shape %s repeated %s overflows",
                   tm__fmt_shape(t->shape, t->ndim, a, sizeof a),
                   tm__fmt_shape(repeats, nrep, b, sizeof b));
            return NULL;
        }
        shape[i] = ss[i] * repeats[i];
    }
    tm_ctx *cx = tm__ctx(t);
    tm_tensor *out = tm__tensor_new(__func__, shape, nrep, t->dtype,
                                    tm_device_of(t));
    if (!out) return NULL;
    if (tm_numel(out) == 0)
        return tm__grad_repeat(out, t, repeats, nrep);
    tm_buf o = tm__buf(out), src = tm__buf(t);
    /* One copy from a stride-0 view: out seen as [r0, s0, r1, s1, ...]
     * (size-1 entries left out) reads t broadcast along every r dim. */
    tm_buf dst = o, s2 = src;
    int k = 0;
    for (int i = 0; i < nrep; i++) k += (repeats[i] != 1) + (ss[i] != 1);
    if (k <= TM_MAX_DIMS) {
        k = 0;
        for (int i = 0; i < nrep; i++) {
            if (repeats[i] != 1) {
                dst.shape[k] = s2.shape[k] = repeats[i];
                dst.strides[k] = o.strides[i] * ss[i];
                s2.strides[k++] = 0;
            }
            if (ss[i] != 1) {
                dst.shape[k] = s2.shape[k] = ss[i];
                dst.strides[k] = o.strides[i];
                s2.strides[k++] = sst[i];
            }
        }
    }
    tm_status st;
    if (k <= TM_MAX_DIMS) {
        dst.ndim = s2.ndim = k;
        st = TM__CALL(__func__, cx, copy, &dst, &s2);
    } else {
        /* More than TM_MAX_DIMS dims that way: copy t into the corner, then
         * double the filled block along each dim in turn. */
        dst = o;
        s2 = src;
        s2.ndim = nrep;
        for (int i = 0; i < nrep; i++) {
            dst.shape[i] = s2.shape[i] = ss[i];
            s2.strides[i] = sst[i];
        }
        st = TM__CALL(__func__, cx, copy, &dst, &s2);
        int64_t es = (int64_t)tm_dtype_size(t->dtype);
        for (int i = 0; i < nrep && !st; i++) {
            for (int64_t m = 1; m < repeats[i] && !st;) {
                int64_t c = repeats[i] - m < m ? repeats[i] - m : m;
                tm_buf from = o, to;
                for (int j = 0; j < nrep; j++)
                    from.shape[j] = j < i ? shape[j] : ss[j];
                from.shape[i] = c * ss[i];
                to = from;
                to.offset = o.offset + (size_t)(m * ss[i] * o.strides[i] * es);
                st = TM__CALL(__func__, cx, copy, &to, &from);
                m += c;
            }
        }
    }
    if (st) {
        tm_free(out);
        return NULL;
    }
    return tm__grad_repeat(out, t, repeats, nrep);
}
