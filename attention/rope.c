/*
 * rope.c — rotary position embeddings: the tm_rope object (its frequencies
 * and cos/sin tables cached per dtype and device), tm_rope_rotate (the
 * backend's `rope` entry, recorded for autograd: the gradient is the
 * inverse rotation through the same entry) and tm_rope_apply, which picks
 * each row's table entries.  The tables are made on the host from data
 * (tm_from_buffer) and moved to the device; no other element memory is
 * touched here.
 */
#include "rope_impl.h"

#include "../tensor/autograd/autograd_impl.h"
#include "../tensor/autograd/backward.h"

#include <math.h>
#include <pthread.h>

/* Tables kept per rope: one per (dtype, device) in use. */
#define ROPE_TABLES 4
/* The shortest table made: decoding grows a table a token at a time. */
#define ROPE_MIN_LEN 256

typedef struct rope_table {
    tm_dtype dt;
    tm_device dev;
    int64_t len;
    tm_tensor *cos, *sin; /* (len, rotary_dim / 2) */
} rope_table;

struct tm_rope {
    tm_rope_config cfg;
    int64_t half;
    double *inv; /* [half] */
    double attn;
    /* DYNAMIC: the length the frequencies were made for (Hugging Face's
     * max_seq_len_cached), starting at original_max_positions */
    int64_t made_for;
    pthread_mutex_t lock;
    rope_table tab[ROPE_TABLES];
    int next; /* the slot a new (dtype, device) takes when all are used */
};

tm_rope_config tm_rope_defaults(int64_t head_dim)
{
    tm_rope_config c = {
        .head_dim = head_dim,
        .rotary_dim = head_dim,
        .theta = 10000.0,
        .interleaved = false,
        .scaling = TM_ROPE_SCALING_NONE,
        .factor = 1.0,
        .original_max_positions = 0,
        .attention_factor = 0.0,
        .beta_fast = 32.0,
        .beta_slow = 1.0,
        .mscale = 0.0,
        .mscale_all_dim = 0.0,
        .yarn_truncate = true,
        .low_freq_factor = 1.0,
        .high_freq_factor = 4.0,
    };
    return c;
}

static void drop_tables(tm_rope *r)
{
    for (int i = 0; i < ROPE_TABLES; i++) {
        tm_free(r->tab[i].cos);
        tm_free(r->tab[i].sin);
        r->tab[i].cos = r->tab[i].sin = NULL;
        r->tab[i].len = 0;
    }
}

tm_rope *tm_rope_new(const tm_rope_config *cfg)
{
    const char *fn = __func__;
    if (tm__rope_check(fn, cfg)) return NULL;
    tm_rope *r = tm__calloc(sizeof *r, fn);
    if (!r) return NULL;
    r->cfg = *cfg;
    r->half = cfg->rotary_dim / 2;
    r->inv = tm__alloc((size_t)r->half * sizeof *r->inv, fn);
    if (!r->inv) {
        tm__dealloc(r);
        return NULL;
    }
    r->made_for = cfg->original_max_positions;
    tm__rope_freqs(cfg, r->made_for, r->inv, &r->attn);
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void tm_rope_free(tm_rope *rope)
{
    if (!rope) return;
    drop_tables(rope);
    pthread_mutex_destroy(&rope->lock);
    tm__dealloc(rope->inv);
    tm__dealloc(rope);
}

/* DYNAMIC: Hugging Face's update for a sequence of `len` positions —
 * frequencies for a longer length when it grows past them, back to the
 * original ones for a sequence shorter than the original context.  Under
 * the lock. */
static void dynamic_update(tm_rope *r, int64_t len)
{
    int64_t orig = r->cfg.original_max_positions, to = r->made_for;
    if (len > to) to = len;
    if (len < orig && to > orig) to = orig;
    if (to == r->made_for) return;
    r->made_for = to;
    tm__rope_freqs(&r->cfg, to, r->inv, &r->attn);
    drop_tables(r);
}

/* A table of `len` positions in dtype dt on dev, made in double on the
 * host and rounded once.  Under the lock. */
static tm_status make_table(const char *fn, tm_rope *r, rope_table *t,
                            tm_dtype dt, tm_device dev, int64_t len)
{
    int64_t h = r->half, n = len * h;
    size_t es = tm_dtype_size(dt);
    char *cb = tm__alloc((size_t)n * es, fn), *sb = tm__alloc((size_t)n * es,
                                                              fn);
    tm_tensor *c = NULL, *s = NULL;
    tm_status st = TM_OK;
    if (!cb || !sb) goto fail;
    for (int64_t p = 0; p < len; p++)
        for (int64_t k = 0; k < h; k++) {
            double a = (double)p * r->inv[k];
            double cv = cos(a) * r->attn, sv = sin(a) * r->attn;
            if (dt == TM_F64) {
                ((double *)cb)[p * h + k] = cv;
                ((double *)sb)[p * h + k] = sv;
            } else {
                ((float *)cb)[p * h + k] = (float)cv;
                ((float *)sb)[p * h + k] = (float)sv;
            }
        }
    int64_t shape[2] = {len, h};
    c = tm_from_buffer(cb, shape, 2, dt);
    s = tm_from_buffer(sb, shape, 2, dt);
    if (!c || !s) goto fail;
    if (!tm_device_eq(dev, TM_CPU)) {
        tm_tensor *cd = tm_to(c, dev), *sd = tm_to(s, dev);
        tm_free(c);
        tm_free(s);
        c = cd;
        s = sd;
        if (!c || !s) goto fail;
    }
    tm_free(t->cos);
    tm_free(t->sin);
    *t = (rope_table){dt, dev, len, c, s};
    goto done;
fail:
    st = tm__relabel_error(fn, tm_last_status());
    tm_free(c);
    tm_free(s);
done:
    tm__dealloc(cb);
    tm__dealloc(sb);
    return st;
}

/* New references to the (at least `len` long) tables of dt on dev, after
 * the DYNAMIC update for a sequence of `len` positions. */
static tm_status get_tables(const char *fn, tm_rope *r, tm_dtype dt,
                            tm_device dev, int64_t len, tm_tensor **c,
                            tm_tensor **s)
{
    tm_status st = TM_OK;
    pthread_mutex_lock(&r->lock);
    if (r->cfg.scaling == TM_ROPE_SCALING_DYNAMIC) dynamic_update(r, len);
    rope_table *t = NULL;
    for (int i = 0; i < ROPE_TABLES && !t; i++)
        if (r->tab[i].cos && r->tab[i].dt == dt &&
            tm_device_eq(r->tab[i].dev, dev))
            t = &r->tab[i];
    if (!t) {
        for (int i = 0; i < ROPE_TABLES && !t; i++)
            if (!r->tab[i].cos) t = &r->tab[i];
        if (!t) {
            t = &r->tab[r->next];
            r->next = (r->next + 1) % ROPE_TABLES;
        }
    }
    if (!t->cos || t->len < len) {
        /* doubling keeps a token-by-token decode from remaking it often */
        int64_t want = t->cos ? 2 * t->len : ROPE_MIN_LEN;
        if (want < len) want = len;
        st = make_table(fn, r, t, dt, dev, want);
    }
    *c = st ? NULL : tm_retain(t->cos);
    *s = st ? NULL : tm_retain(t->sin);
    pthread_mutex_unlock(&r->lock);
    return st;
}

/* ------------------------------------------------------------- rotation */

typedef struct rope_args {
    int64_t rotary_dim;
    bool interleaved;
} rope_args;

/* out = the rotation of x (F32 or F64, unit last stride) by cos and sin
 * (x's dtype, broadcastable to x's shape with the last dim rotary_dim/2),
 * through the backend; `inverse` rotates back. */
static tm_tensor *rotate_call(const char *fn, const tm_tensor *x,
                              const tm_tensor *c, const tm_tensor *s,
                              const rope_args *a, bool inverse)
{
    int nd = tm_ndim(x);
    int64_t cs[TM_MAX_DIMS];
    for (int k = 0; k < nd; k++) cs[k] = tm_shape(x)[k];
    cs[nd - 1] = a->rotary_dim / 2;
    tm_tensor *out = tm__tensor_new(fn, tm_shape(x), nd, tm_dtype_of(x),
                                    tm_device_of(x));
    if (!out || tm_numel(out) == 0) return out;
    tm_buf ob = tm__buf(out), xb = tm__buf(x);
    tm_buf cb = tm__buf_bcast(c, cs, nd), sb = tm__buf_bcast(s, cs, nd);
    tm_rope_params p = {a->rotary_dim, a->interleaved, inverse};
    tm__stage sg = {0};
    tm__stage_out(&sg, &ob);
    tm__stage_in(&sg, &xb);
    tm__stage_in(&sg, &cb);
    tm__stage_in(&sg, &sb);
    if (TM__CALL_STAGED(fn, tm__ctx(out), &sg, ROPE, 0, rope, &ob, &xb, &cb,
                        &sb, &p)) {
        tm__relabel_error(fn, tm_last_status());
        tm_free(out);
        return NULL;
    }
    return out;
}

/* dx = the inverse rotation of g by the saved cos (slot 0) and sin (1). */
static tm_status rope_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    tm__scratch sc = {0};
    const rope_args *a = TM__AG_ARGS(n, rope_args);
    tm_tensor *gc = tm__sc_keep(&sc, tm_contiguous(g));
    tm_tensor *dx = gc ? tm__sc_keep(&sc, rotate_call(n->name, gc,
                                                      tm__ag_saved(n, 0),
                                                      tm__ag_saved(n, 1), a,
                                                      true))
                       : NULL;
    if (!sc.st) gin[0] = tm_retain(dx);
    return tm__sc_done(&sc, n->name);
}

/* Whether t broadcasts to x's shape with the last dim `half`. */
static bool table_fits(const tm_tensor *t, const tm_tensor *x, int64_t half)
{
    int nt = tm_ndim(t), nx = tm_ndim(x);
    if (nt < 1 || nt > nx || tm_shape(t)[nt - 1] != half) return false;
    for (int k = 1; k < nt; k++) {
        int64_t a = tm_shape(t)[nt - 1 - k], b = tm_shape(x)[nx - 1 - k];
        if (a != 1 && a != b) return false;
    }
    return true;
}

/* t in dtype dt with a unit last stride (a new reference). */
static tm_tensor *as_rows(const tm_tensor *t, tm_dtype dt)
{
    if (tm_dtype_of(t) != dt) return tm_to_dtype(t, dt);
    int nd = tm_ndim(t);
    if (tm_shape(t)[nd - 1] > 1 && tm_strides(t)[nd - 1] != 1)
        return tm_contiguous(t);
    return tm_retain((tm_tensor *)t);
}

tm_tensor *tm_rope_rotate(const tm_tensor *x, const tm_tensor *cos,
                          const tm_tensor *sin, bool interleaved)
{
    const char *fn = __func__;
    char sx[TM_SHAPE_BUF], sc[TM_SHAPE_BUF], ss[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, x, "x") || tm__check_tensor(fn, cos, "cos") ||
        tm__check_tensor(fn, sin, "sin"))
        return NULL;
    const tm_tensor *all[3] = {x, cos, sin};
    if (tm__check_same_device(fn, all, 3)) return NULL;
    tm_dtype xd = tm_dtype_of(x);
    if (!tm_dtype_is_float(xd) || !tm_dtype_is_float(tm_dtype_of(cos)) ||
        !tm_dtype_is_float(tm_dtype_of(sin))) {
        tm__errf(TM_EDTYPE, fn, "x, cos and sin must be float tensors, got "
                 "%s, %s and %s", tm_dtype_name(xd),
                 tm_dtype_name(tm_dtype_of(cos)),
                 tm_dtype_name(tm_dtype_of(sin)));
        return NULL;
    }
    int nd = tm_ndim(x), nc = tm_ndim(cos);
    int64_t d = nd > 0 ? tm_shape(x)[nd - 1] : 0;
    int64_t half = nc > 0 ? tm_shape(cos)[nc - 1] : 0;
    if (nd < 1 || half < 1 || 2 * half > d || !table_fits(cos, x, half) ||
        !table_fits(sin, x, half)) {
        tm__errf(TM_ESHAPE, fn, "cos %s and sin %s must broadcast to x %s "
                 "with a last dim of rotary_dim / 2 (>= 1, rotary_dim <= "
                 "%lld)",
                 tm__fmt_shape(tm_shape(cos), nc, sc, sizeof sc),
                 tm__fmt_shape(tm_shape(sin), tm_ndim(sin), ss, sizeof ss),
                 tm__fmt_shape(tm_shape(x), nd, sx, sizeof sx),
                 (long long)d);
        return NULL;
    }
    if (xd == TM_F16 || xd == TM_BF16) {
        /* computed in F32 and rounded back; both casts carry the grad */
        tm_tensor *xf = tm_to_dtype(x, TM_F32);
        tm_tensor *of = xf ? tm_rope_rotate(xf, cos, sin, interleaved) : NULL;
        tm_tensor *o = of ? tm_to_dtype(of, xd) : NULL;
        if (!o) tm__relabel_error(fn, tm_last_status());
        tm_free(of);
        tm_free(xf);
        return o;
    }
    rope_args a = {2 * half, interleaved};
    tm_tensor *xc = NULL, *c = NULL, *s = NULL, *out = NULL;
    bool prev = tm_no_grad_begin();
    c = as_rows(cos, xd);
    s = c ? as_rows(sin, xd) : NULL;
    tm_no_grad_end(prev);
    /* x's contiguous copy (when needed) is recorded, so the gradient
     * reaches x through it */
    xc = s ? as_rows(x, xd) : NULL;
    if (xc) {
        prev = tm_no_grad_begin();
        out = rotate_call(fn, xc, c, s, &a, false);
        tm_no_grad_end(prev);
    }
    if (!out) goto fail;
    const tm_tensor *ins[1] = {xc};
    tm__record r = {.name = "RopeBackward", .backward = rope_backward,
                    .nin = 1, .in = ins, .save = {c, s}, .args = &a,
                    .args_size = sizeof a};
    if (tm__ag_record(&r, out)) goto fail;
    tm_free(xc);
    tm_free(c);
    tm_free(s);
    return out;
fail:
    tm__relabel_error(fn, tm_last_status());
    tm_free(out);
    tm_free(xc);
    tm_free(c);
    tm_free(s);
    return NULL;
}

/* ----------------------------------------------------- position lookup */

/* Positions beyond this are refused: their tables would not fit memory. */
#define ROPE_MAX_POS ((int64_t)1 << 31)

/* positions (integer, any shape) + offset as I64 (a new reference), with
 * their largest value + 1 in *len (0 when empty); the values are read
 * back to the host. */
static tm_tensor *read_positions(const char *fn, const tm_tensor *pos,
                                 int64_t offset, int64_t *len)
{
    tm_tensor *p = NULL, *mx = NULL, *mn = NULL;
    int64_t hi = -1, lo = 0;
    *len = 0;
    p = tm_to_dtype(pos, TM_I64);
    if (p && offset) {
        tm_tensor *q = tm_add_scalar(p, (double)offset);
        tm_free(p);
        p = q;
    }
    if (!p) goto fail;
    if (tm_numel(p) > 0) {
        mx = tm_max(p, NULL, 0, false);
        mn = mx ? tm_min(p, NULL, 0, false) : NULL;
        if (!mn || tm_item_i64(mx, &hi) || tm_item_i64(mn, &lo)) goto fail;
        if (lo < 0 || hi >= ROPE_MAX_POS) {
            tm__errf(TM_EINVAL, fn, "positions (with offset %lld) must lie "
                     "in [0, 2^31), got %lld", (long long)offset,
                     (long long)(lo < 0 ? lo : hi));
            goto fail_set;
        }
    }
    *len = hi + 1;
    tm_free(mx);
    tm_free(mn);
    return p;
fail:
    tm__relabel_error(fn, tm_last_status());
fail_set:
    tm_free(p);
    tm_free(mx);
    tm_free(mn);
    return NULL;
}

/* The rows of table tab (len, half) at I64 positions p: shape (p's
 * shape..., half). */
static tm_tensor *pick(const tm_tensor *tab, const tm_tensor *p)
{
    int np = tm_ndim(p);
    int64_t n = tm_numel(p), shp[TM_MAX_DIMS];
    tm_tensor *flat = tm_reshape(p, (int64_t[]){n}, 1);
    tm_tensor *rows = flat ? tm_index_select(tab, 0, flat) : NULL;
    for (int k = 0; k < np; k++) shp[k] = tm_shape(p)[k];
    shp[np] = tm_shape(tab)[1];
    tm_tensor *out = rows ? tm_reshape(rows, shp, np + 1) : NULL;
    tm_free(rows);
    tm_free(flat);
    return out;
}

tm_status tm_rope_tables(tm_rope *rope, int64_t offset,
                         const tm_tensor *positions, int64_t length,
                         tm_dtype dt, tm_device dev, tm_tensor **cos,
                         tm_tensor **sin)
{
    const char *fn = __func__;
    tm_tensor *tc = NULL, *ts = NULL, *p = NULL;
    tm_status st = TM_OK;
    if (!cos || !sin) return tm__errf(TM_EINVAL, fn, "cos or sin is NULL");
    *cos = *sin = NULL;
    if (!rope) return tm__errf(TM_EINVAL, fn, "rope is NULL");
    if (dt != TM_F32 && dt != TM_F64)
        return tm__errf(TM_EDTYPE, fn, "tables are F32 or F64, not %s",
                        tm_dtype_name(dt));
    if (offset < 0 || (!positions && (length < 0 ||
                                      length > ROPE_MAX_POS - offset)))
        return tm__errf(TM_EINVAL, fn, "offset %lld and length %lld must be "
                        ">= 0 with offset + length <= 2^31",
                        (long long)offset, (long long)length);
    int64_t len = offset + length;
    if (positions) {
        if (!tm_dtype_is_integer(tm_dtype_of(positions)))
            return tm__errf(TM_EDTYPE, fn, "positions must be an integer "
                            "tensor, got %s",
                            tm_dtype_name(tm_dtype_of(positions)));
        if (!tm_device_eq(tm_device_of(positions), dev))
            return tm__errf(TM_EDEVICE, fn, "positions are on %s, the "
                            "tables asked for on %s",
                            tm_device_name(tm_device_of(positions)),
                            tm_device_name(dev));
        if (!(p = read_positions(fn, positions, offset, &len)))
            return tm_last_status();
    }
    if ((st = get_tables(fn, rope, dt, dev, len, &tc, &ts))) goto done;
    if (p) {
        *cos = pick(tc, p);
        *sin = *cos ? pick(ts, p) : NULL;
    } else {
        *cos = tm_narrow(tc, 0, offset, length);
        *sin = *cos ? tm_narrow(ts, 0, offset, length) : NULL;
    }
    if (!*sin) {
        st = tm__relabel_error(fn, tm_last_status());
        tm_free(*cos);
        *cos = NULL;
    }
done:
    tm_free(p);
    tm_free(tc);
    tm_free(ts);
    return st;
}

tm_tensor *tm_rope_apply(tm_rope *rope, const tm_tensor *x, int64_t offset,
                         const tm_tensor *positions)
{
    const char *fn = __func__;
    char sx[TM_SHAPE_BUF], sp[TM_SHAPE_BUF];
    if (!rope) {
        tm__errf(TM_EINVAL, fn, "rope is NULL");
        return NULL;
    }
    if (tm__check_tensor(fn, x, "x")) return NULL;
    int nd = tm_ndim(x);
    const int64_t *xs = tm_shape(x);
    if (!tm_dtype_is_float(tm_dtype_of(x))) {
        tm__errf(TM_EDTYPE, fn, "x must be a float tensor, got %s",
                 tm_dtype_name(tm_dtype_of(x)));
        return NULL;
    }
    if (nd < 2 || xs[nd - 1] != rope->cfg.head_dim) {
        tm__errf(TM_ESHAPE, fn, "x must be (..., T, head_dim %lld), got %s",
                 (long long)rope->cfg.head_dim,
                 tm__fmt_shape(xs, nd, sx, sizeof sx));
        return NULL;
    }
    int64_t t = xs[nd - 2];
    if (positions) {
        int np = tm_ndim(positions);
        const int64_t *ps = tm_shape(positions);
        bool ok = (np == 1 && ps[0] == t) ||
                  (np == 2 && ps[1] == t && nd >= 3 &&
                   (ps[0] == xs[0] || ps[0] == 1));
        if (!ok) {
            tm__errf(TM_ESHAPE, fn, "positions %s must be (T) or (B, T) for "
                     "x %s (B first, T second to last)",
                     tm__fmt_shape(ps, np, sp, sizeof sp),
                     tm__fmt_shape(xs, nd, sx, sizeof sx));
            return NULL;
        }
    }
    tm_dtype ct = tm_dtype_of(x) == TM_F64 ? TM_F64 : TM_F32;
    tm_tensor *c = NULL, *s = NULL, *out = NULL;
    bool prev = tm_no_grad_begin();
    tm_status st = tm_rope_tables(rope, offset, positions, positions ? 0 : t,
                                  ct, tm_device_of(x), &c, &s);
    if (!st && positions && tm_ndim(positions) == 2 && nd > 3) {
        /* (B, T, half) -> (B, 1, ..., 1, T, half) against x's head dims */
        int64_t shp[TM_MAX_DIMS];
        for (int k = 0; k < nd; k++) shp[k] = 1;
        shp[0] = tm_shape(c)[0];
        shp[nd - 2] = t;
        shp[nd - 1] = rope->half;
        tm_tensor *c2 = tm_view(c, shp, nd), *s2 = tm_view(s, shp, nd);
        tm_free(c);
        tm_free(s);
        c = c2;
        s = s2;
        if (!c || !s) st = tm_last_status();
    }
    tm_no_grad_end(prev);
    if (!st) out = tm_rope_rotate(x, c, s, rope->cfg.interleaved);
    if (!out) tm__relabel_error(fn, tm_last_status());
    tm_free(c);
    tm_free(s);
    return out;
}
