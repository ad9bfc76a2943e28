/* grad_shape.c — backward functions of views, copies, indexing and shaping
 * ops (see grad_shape.h).  They run with grad mode off and are written with
 * public ops, so they work on any device and dtype. */
#include "grad_shape.h"

#include <string.h>

/* ------------------------------------------------------------ recording */

tm_tensor *tm__ag_record(tm_tensor *out, int nin,
                         const tm_tensor *const *ins, const char *name,
                         tm__backward_fn fn, const int64_t *ip, int ni,
                         const tm_tensor *save)
{
    if (!out || !tm_dtype_is_float(out->dtype) || !tm__ag_needed(nin, ins))
        return out;
    tm__node *n = tm__ag_node(name, fn, nin, ins);
    if (!n) goto fail;
    for (int k = 0; k < ni; k++) n->i[k] = ip[k];
    if (save && tm__ag_save(n, 0, save)) {
        tm__ag_node_free(n);
        goto fail;
    }
    if (tm__ag_attach(n, out)) goto fail; /* consumes n */
    return out;
fail:
    tm_free(out);
    return NULL;
}

tm_tensor *tm__ag_record1(tm_tensor *out, const tm_tensor *t,
                          const char *name, tm__backward_fn fn,
                          const int64_t *ip, int ni)
{
    const tm_tensor *ins[1] = {t};
    return tm__ag_record(out, 1, ins, name, fn, ip, ni, NULL);
}

/* -------------------------------------------------------------- helpers */

/* Zeros of shape/dt on the device of `like`. */
static tm_tensor *tm__gsh_zeros(const int64_t *shape, int ndim, tm_dtype dt,
                               const tm_tensor *like)
{
    tm_tensor *z = tm_zeros(shape, ndim, dt);
    if (!z || tm_device_of(like) == TM_CPU) return z;
    tm_tensor *d = tm_to(z, tm_device_of(like));
    tm_free(z);
    return d;
}

tm_tensor *tm__gsh_place(const tm_tensor *g, const int64_t *shape, int ndim,
                        tm_dtype dt, const int64_t *start,
                        const int64_t *step)
{
    tm_tensor *z = tm__gsh_zeros(shape, ndim, dt, g);
    if (!z || tm_numel(g) == 0) return z;
    int64_t st[TM_MAX_DIMS], off = z->offset;
    for (int i = 0; i < ndim; i++) {
        st[i] = z->strides[i] * (step ? step[i] : 1);
        off += (start ? start[i] : 0) * z->strides[i];
    }
    tm_tensor *v = tm__view_of("tm_backward", z, g->shape, st, ndim, off);
    if (!v || tm_copy_(v, g)) {
        tm_free(v);
        tm_free(z);
        return NULL;
    }
    tm_free(v);
    return z;
}

/* v (consumed) converted to dt. */
static tm_tensor *tm__gsh_as(tm_tensor *v, tm_dtype dt)
{
    if (!v || v->dtype == dt) return v;
    tm_tensor *c = tm_to_dtype(v, dt);
    tm_free(v);
    return c;
}

#define GI_SET(k, expr)                                                       \
    do {                                                                      \
        if (!(gi[k] = (expr))) return tm_last_status();                       \
    } while (0)

/* ---------------------------------------------------------------- views */

tm_status tm__gb_transpose(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    GI_SET(0, tm_transpose(g, (int)n->i[0], (int)n->i[1]));
    return TM_OK;
}

tm_status tm__gb_permute(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    int inv[TM_MAX_DIMS];
    for (int k = 0; k < g->ndim; k++) inv[n->i[k]] = k;
    GI_SET(0, tm_permute(g, inv, g->ndim));
    return TM_OK;
}

tm_status tm__gb_reshape(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    GI_SET(0, tm_reshape(g, n->edges[0].shape, n->edges[0].ndim));
    return TM_OK;
}

tm_status tm__gb_slice(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    int64_t start[TM_MAX_DIMS] = {0}, step[TM_MAX_DIMS];
    for (int k = 0; k < e->ndim; k++) step[k] = 1;
    start[n->i[0]] = n->i[1];
    step[n->i[0]] = n->i[2];
    GI_SET(0, tm__gsh_place(g, e->shape, e->ndim, e->dtype, start, step));
    return TM_OK;
}

tm_status tm__gb_select(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    int64_t start[TM_MAX_DIMS] = {0};
    start[n->i[0]] = n->i[1];
    tm_tensor *u = tm_unsqueeze(g, (int)n->i[0]);
    if (!u) return tm_last_status();
    gi[0] = tm__gsh_place(u, e->shape, e->ndim, e->dtype, start, NULL);
    tm_free(u);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_status tm__gb_expand(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    GI_SET(0, tm__ag_sum_to(g, n->edges[0].shape, n->edges[0].ndim));
    return TM_OK;
}

/* Storage positions of the elements of (off, shape, st) in row-major
 * order. */
static void tm__gsh_positions(int64_t *p, int64_t off, const int64_t *shape,
                             const int64_t *st, int nd, int64_t count)
{
    int64_t idx[TM_MAX_DIMS] = {0}, pos = off;
    for (int64_t k = 0; k < count; k++) {
        p[k] = pos;
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) {
                pos += st[d];
                break;
            }
            pos -= (shape[d] - 1) * st[d];
            idx[d] = 0;
        }
    }
}

/* False when two elements of (shape, st) may share a position (a cheap
 * sufficient test: sorted by stride, each stride exceeds the span of the
 * smaller ones). */
static bool tm__gsh_no_overlap(const int64_t *shape, const int64_t *st, int nd)
{
    int ord[TM_MAX_DIMS], m = 0;
    for (int i = 0; i < nd; i++)
        if (shape[i] > 1) ord[m++] = i;
    for (int i = 1; i < m; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && st[ord[j]] < st[ord[j - 1]]; j--) {
            int x = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = x;
        }
    int64_t span = 0;
    for (int i = 0; i < m; i++) {
        if (st[ord[i]] <= span) return false;
        span += (shape[ord[i]] - 1) * st[ord[i]];
    }
    return true;
}

tm_tensor *tm__ag_record_as_strided(tm_tensor *out, const tm_tensor *t)
{
    const tm_tensor *ins[1] = {t};
    if (!out || !tm_dtype_is_float(out->dtype) || !tm__ag_needed(1, ins))
        return out;
    int64_t len = 2 + out->ndim + t->ndim;
    tm_tensor *geo = tm_empty(&len, 1, TM_I64);
    if (!geo) {
        tm_free(out);
        return NULL;
    }
    int64_t *p = tm_data(geo);
    p[0] = out->offset;
    memcpy(p + 1, out->strides, sizeof(int64_t) * (size_t)out->ndim);
    p[1 + out->ndim] = t->offset;
    memcpy(p + 2 + out->ndim, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    out = tm__ag_record(out, 1, ins, "AsStridedBackward", tm__gb_as_strided,
                        NULL, 0, geo);
    tm_free(geo);
    return out;
}

/* The gradient reaches storage positions: it is scatter-added (overlaps
 * accumulate) into a zero buffer spanning both geometries, and the input
 * reads its elements back; an input whose elements share positions splits
 * each position's gradient evenly among them (as PyTorch does). */
tm_status tm__gb_as_strided(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    const int64_t *geo = tm_data(tm__ag_saved(n, 0));
    int no = g->ndim;
    const int64_t *ost = geo + 1, *ist = geo + 2 + no;
    int64_t nout = tm_numel(g), nin = 1;
    for (int k = 0; k < e->ndim; k++) nin *= e->shape[k];
    if (nin == 0 || nout == 0) {
        GI_SET(0, tm__gsh_zeros(e->shape, e->ndim, e->dtype, g));
        return TM_OK;
    }
    tm_tensor *po = tm_empty(&nout, 1, TM_I64), *pi = tm_empty(&nin, 1, TM_I64);
    tm_tensor *pod = NULL, *pid = NULL, *acc = NULL, *gf = NULL, *s = NULL;
    tm_tensor *r = NULL, *ones = NULL, *cnt = NULL, *c = NULL, *q = NULL;
    tm_status st = TM_OK;
    if (!po || !pi) goto fail;
    int64_t *a = tm_data(po), *b = tm_data(pi);
    tm__gsh_positions(a, geo[0], g->shape, ost, no, nout);
    tm__gsh_positions(b, geo[1 + no], e->shape, ist, e->ndim, nin);
    int64_t lo = a[0], hi = a[0];
    for (int64_t k = 0; k < nout; k++) {
        lo = a[k] < lo ? a[k] : lo;
        hi = a[k] > hi ? a[k] : hi;
    }
    for (int64_t k = 0; k < nin; k++) {
        lo = b[k] < lo ? b[k] : lo;
        hi = b[k] > hi ? b[k] : hi;
    }
    for (int64_t k = 0; k < nout; k++) a[k] -= lo;
    for (int64_t k = 0; k < nin; k++) b[k] -= lo;
    int64_t ext = hi - lo + 1;
    if (!(pod = tm_to(po, tm_device_of(g))) ||
        !(pid = tm_to(pi, tm_device_of(g))) ||
        !(acc = tm__gsh_zeros(&ext, 1, g->dtype, g)) ||
        !(gf = tm_reshape(g, &nout, 1)) ||
        !(s = tm_scatter_add(acc, 0, pod, gf)) ||
        !(r = tm_gather(s, 0, pid)))
        goto fail;
    if (!tm__gsh_no_overlap(e->shape, ist, e->ndim)) {
        tm_tensor *z = tm__gsh_zeros(&ext, 1, g->dtype, g);
        if (!z || !(ones = tm_ones(&nin, 1, g->dtype)) ||
            !(cnt = tm_scatter_add(z, 0, pid, ones)) ||
            !(c = tm_gather(cnt, 0, pid)) || !(q = tm_div(r, c))) {
            tm_free(z);
            goto fail;
        }
        tm_free(z);
        tm_free(r);
        r = q;
        q = NULL;
    }
    if (!(gi[0] = tm_reshape(r, e->shape, e->ndim))) goto fail;
    goto done;
fail:
    st = tm_last_status();
done:
    tm_free(po);
    tm_free(pi);
    tm_free(pod);
    tm_free(pid);
    tm_free(acc);
    tm_free(gf);
    tm_free(s);
    tm_free(r);
    tm_free(ones);
    tm_free(cnt);
    tm_free(c);
    tm_free(q);
    return st;
}

/* --------------------------------------------------------------- copies */

tm_status tm__gb_clone(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    (void)n;
    gi[0] = tm_retain((tm_tensor *)g);
    return TM_OK;
}

tm_status tm__gb_to_dtype(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    GI_SET(0, tm__gsh_as(tm_retain((tm_tensor *)g), n->edges[0].dtype));
    return TM_OK;
}

tm_status tm__gb_to_device(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    GI_SET(0, tm_to(g, (tm_device)n->i[0]));
    return TM_OK;
}

/* ------------------------------------------------------------- indexing */

/* g gathered along d by idx, in the leading block of zeros of e's shape. */
static tm_tensor *tm__gsh_gather_into(const tm_tensor *g, int d,
                                     const tm_tensor *idx, const tm__edge *e)
{
    tm_tensor *v = tm_gather(g, d, idx);
    if (!v) return NULL;
    if (v->ndim == e->ndim &&
        !memcmp(v->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim))
        return tm__gsh_as(v, e->dtype);
    tm_tensor *z = tm__gsh_place(v, e->shape, e->ndim, e->dtype, NULL, NULL);
    tm_free(v);
    return z;
}

tm_status tm__gb_gather(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    tm_tensor *z = tm__gsh_zeros(e->shape, e->ndim, g->dtype, g);
    if (!z) return tm_last_status();
    gi[0] = tm_scatter_add(z, (int)n->i[0], tm__ag_saved(n, 0), g);
    tm_free(z);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_status tm__gb_scatter(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    int d = (int)n->i[0];
    const tm_tensor *idx = tm__ag_saved(n, 0);
    if (n->edges[0].needed) GI_SET(0, tm_scatter_value(g, d, idx, 0.0));
    if (n->nin > 1 && n->edges[1].needed)
        GI_SET(1, tm__gsh_gather_into(g, d, idx, &n->edges[1]));
    return TM_OK;
}

tm_status tm__gb_scatter_add(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    if (n->edges[0].needed) gi[0] = tm_retain((tm_tensor *)g);
    if (n->edges[1].needed)
        GI_SET(1, tm__gsh_gather_into(g, (int)n->i[0], tm__ag_saved(n, 0),
                                     &n->edges[1]));
    return TM_OK;
}

/* index_add: the index, seen along d and expanded to g's shape, scatters g
 * into zeros (colliding indices accumulate). */
tm_status tm__gb_index_select(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    if (e->ndim == 0) {
        GI_SET(0, tm_reshape(g, NULL, 0));
        return TM_OK;
    }
    int d = (int)n->i[0];
    int64_t sh[TM_MAX_DIMS];
    for (int k = 0; k < e->ndim; k++) sh[k] = 1;
    sh[d] = g->shape[d];
    tm_tensor *ix = tm_reshape(tm__ag_saved(n, 0), sh, e->ndim);
    tm_tensor *ixe = ix ? tm_expand(ix, g->shape, g->ndim) : NULL;
    tm_tensor *z = ixe ? tm__gsh_zeros(e->shape, e->ndim, g->dtype, g) : NULL;
    gi[0] = z ? tm_scatter_add(z, d, ixe, g) : NULL;
    tm_free(ix);
    tm_free(ixe);
    tm_free(z);
    return gi[0] ? TM_OK : tm_last_status();
}

/* -------------------------------------------------------------- shaping */

tm_status tm__gb_cat(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    int d = (int)n->i[0];
    int64_t off = 0;
    for (int k = 0; k < n->nin; k++) {
        const tm__edge *e = &n->edges[k];
        /* [0] tensors that were skipped (their ndim differs from g's) */
        bool skipped = e->ndim == 1 && e->shape[0] == 0 && g->ndim != 1;
        int64_t len = skipped ? 0 : e->shape[d], numel = 1;
        for (int j = 0; j < e->ndim; j++) numel *= e->shape[j];
        if (e->needed) {
            if (numel == 0)
                GI_SET(k, tm__gsh_zeros(e->shape, e->ndim, e->dtype, g));
            else
                GI_SET(k, tm__gsh_as(tm_narrow(g, d, off, len), e->dtype));
        }
        off += len;
    }
    return TM_OK;
}

tm_status tm__gb_stack(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    for (int k = 0; k < n->nin; k++)
        if (n->edges[k].needed)
            GI_SET(k, tm__gsh_as(tm_select(g, (int)n->i[0], k),
                                n->edges[k].dtype));
    return TM_OK;
}

/* The window of t that survived (cropped by negative pads) sits at
 * dstart in the output: it is cut from g and placed at sstart. */
tm_status tm__gb_pad(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    int nd = e->ndim;
    int64_t sstart[TM_MAX_DIMS] = {0}, len[TM_MAX_DIMS] = {0};
    int64_t off = g->offset;
    bool whole = true, empty = false;
    for (int k = 0; k < nd; k++) {
        int64_t s = e->shape[k], lo = n->i[k], hi = g->shape[k] - s - lo;
        sstart[k] = lo < 0 ? -lo : 0;
        len[k] = s - sstart[k] - (hi < 0 ? -hi : 0);
        if (len[k] < 0) len[k] = 0;
        off += (lo > 0 ? lo : 0) * g->strides[k];
        whole = whole && len[k] == s;
        empty = empty || len[k] == 0;
    }
    if (empty) {
        GI_SET(0, tm__gsh_zeros(e->shape, nd, e->dtype, g));
        return TM_OK;
    }
    tm_tensor *w = tm__view_of("tm_backward", g, len, g->strides, nd, off);
    if (!w || whole) {
        gi[0] = w;
        return w ? TM_OK : tm_last_status();
    }
    gi[0] = tm__gsh_place(w, e->shape, nd, e->dtype, sstart, NULL);
    tm_free(w);
    return gi[0] ? TM_OK : tm_last_status();
}

/* Sums the tiles one repeated dim at a time: with dims before k already
 * reduced, g is seen as [before, r_k, s_k, after] and summed over r_k. */
tm_status tm__gb_repeat(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    int nrep = g->ndim, lead = nrep - e->ndim;
    int64_t cur[TM_MAX_DIMS];
    memcpy(cur, g->shape, sizeof(int64_t) * (size_t)nrep);
    tm_tensor *c = tm_retain((tm_tensor *)g);
    for (int k = 0; k < nrep && c; k++) {
        int64_t r = n->i[k], s = k < lead ? 1 : e->shape[k - lead];
        if (r == 1) continue;
        int64_t before = 1, after = 1;
        for (int j = 0; j < k; j++) before *= cur[j];
        for (int j = k + 1; j < nrep; j++) after *= cur[j];
        tm_tensor *v = tm_reshape(c, (int64_t[]){before, r, s, after}, 4);
        tm_free(c);
        c = v ? tm_sum(v, (int[]){1}, 1, false) : NULL;
        tm_free(v);
        cur[k] = s;
    }
    if (!c) return tm_last_status();
    gi[0] = tm_reshape(c, e->shape, e->ndim);
    tm_free(c);
    return gi[0] ? TM_OK : tm_last_status();
}
