/* snapshot.c — the state a joining or resynced worker receives: every
 * trainable parameter and the optimizers' state, as a list of named
 * tensors (swarm_impl.h gives the bytes).  Decoding validates everything
 * before anything changes. */
#include "swarm_impl.h"

#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <string.h>

static int dtype_code(tm_dtype dt)
{
    return dt == TM_F32 ? 0 : dt == TM_I64 ? 1 : dt == TM_F64 ? 2 : -1;
}
static const tm_dtype CODE_DTYPE[3] = {TM_F32, TM_I64, TM_F64};

typedef struct entry {
    char name[96];
    const tm_tensor *t;
} entry;

/* Entries of an optimizer's state dict, appended to *e under prefix. */
static tm_status add_optim(tm_params *sd, const tm_optim *opt)
{
    return opt ? tm_optim_state_dict(opt, sd) : TM_OK;
}

tm_status tm__swarm_state_encode(const tm__swarm_flat *f, const tm_optim *opt,
                                 const tm_optim *outer, uint8_t **out,
                                 size_t *len, size_t reserve)
{
    tm_params *inner = tm_params_new(), *outs = tm_params_new();
    tm_status st = (!inner || !outs) ? TM_ENOMEM : TM_OK;
    if (!st) st = add_optim(inner, opt);
    if (!st) st = add_optim(outs, outer);
    int ni = st ? 0 : tm_params_count(inner), no = st ? 0 : tm_params_count(outs);
    int total = f->count + ni + no;
    entry *e = st ? NULL : tm__alloc(sizeof *e * (size_t)total, __func__);
    if (!st && !e) st = TM_ENOMEM;
    size_t bytes = reserve + 4;
    for (int i = 0; !st && i < total; i++) {
        if (i < f->count) {
            snprintf(e[i].name, sizeof e[i].name, "param.%d", i);
            e[i].t = f->t[i];
        } else {
            const tm_params *s = i < f->count + ni ? inner : outs;
            int j = i < f->count + ni ? i - f->count : i - f->count - ni;
            const char *nm = tm_params_name(s, j);
            if (snprintf(e[i].name, sizeof e[i].name, "%s.%s",
                         s == inner ? "optim" : "outer", nm) >= (int)sizeof e[i].name)
                st = TM_ERR(TM_EINVAL, "state name %s is too long", nm);
            e[i].t = tm_params_get(s, j);
        }
        if (st) break;
        if (dtype_code(tm_dtype_of(e[i].t)) < 0 || !tm_is_contiguous(e[i].t) ||
            tm_device_of(e[i].t).type != TM_DEVICE_CPU)
            st = TM_ERR(TM_EDTYPE, "state %s must be F32, F64 or I64, "
                        "contiguous, on the CPU", e[i].name);
        bytes += 2 + strlen(e[i].name) + 2 + 8 * (size_t)tm_ndim(e[i].t) +
                 tm_nbytes(e[i].t);
    }
    uint8_t *buf = st ? NULL : tm__alloc(bytes, __func__);
    if (!st && !buf) st = TM_ENOMEM;
    if (!st) {
        uint8_t *p = buf + reserve;
        tm__put_u32(p, (uint32_t)total);
        p += 4;
        for (int i = 0; i < total; i++) {
            size_t nl = strlen(e[i].name);
            p[0] = (uint8_t)nl;
            p[1] = (uint8_t)(nl >> 8);
            memcpy(p + 2, e[i].name, nl);
            p += 2 + nl;
            int nd = tm_ndim(e[i].t);
            p[0] = (uint8_t)dtype_code(tm_dtype_of(e[i].t));
            p[1] = (uint8_t)nd;
            p += 2;
            for (int d = 0; d < nd; d++, p += 8)
                tm__put_u64(p, (uint64_t)tm_shape(e[i].t)[d]);
            memcpy(p, tm_data(e[i].t), tm_nbytes(e[i].t));
            p += tm_nbytes(e[i].t);
        }
        *out = buf;
        *len = bytes;
    }
    tm__dealloc(e);
    tm_params_free(inner);
    tm_params_free(outs);
    return st;
}

/* One parsed entry, pointing into the payload. */
typedef struct parsed {
    char name[96];
    tm_dtype dt;
    int ndim;
    int64_t shape[8];
    const uint8_t *data;
    size_t nbytes;
} parsed;

static tm_status parse_one(const uint8_t **pp, const uint8_t *end, parsed *o)
{
    const uint8_t *p = *pp;
    if (end - p < 2) return TM_ERR(TM_EFORMAT, "snapshot truncated");
    size_t nl = (size_t)p[0] | (size_t)p[1] << 8;
    p += 2;
    if (nl == 0 || nl >= sizeof o->name || (size_t)(end - p) < nl + 2)
        return TM_ERR(TM_EFORMAT, "snapshot entry name of %zu bytes", nl);
    memcpy(o->name, p, nl);
    o->name[nl] = 0;
    for (size_t i = 0; i < nl; i++)
        if (o->name[i] < 0x21 || o->name[i] > 0x7e)
            return TM_ERR(TM_EFORMAT, "snapshot entry name is not printable");
    p += nl;
    if (p[0] > 2 || p[1] > 8)
        return TM_ERR(TM_EFORMAT, "snapshot entry %s: dtype code %u, ndim %u",
                      o->name, p[0], p[1]);
    o->dt = CODE_DTYPE[p[0]];
    o->ndim = p[1];
    p += 2;
    if ((size_t)(end - p) < 8 * (size_t)o->ndim)
        return TM_ERR(TM_EFORMAT, "snapshot truncated in %s", o->name);
    /* span, the product of the non-zero dims, is bounded and not numel:
     * an empty tensor's other dims must fit too (strides are made of
     * them), or tm_from_buffer refuses the shape with another status */
    uint64_t numel = 1, span = 1;
    for (int d = 0; d < o->ndim; d++, p += 8) {
        uint64_t s = tm__get_u64(p);
        if (s > ((uint64_t)1 << 40) || (s && span > ((uint64_t)1 << 40) / s))
            return TM_ERR(TM_EFORMAT, "snapshot entry %s is too large", o->name);
        o->shape[d] = (int64_t)s;
        numel *= s;
        if (s) span *= s;
    }
    o->nbytes = (size_t)numel * tm_dtype_size(o->dt);
    if ((size_t)(end - p) < o->nbytes)
        return TM_ERR(TM_EFORMAT, "snapshot truncated in %s", o->name);
    o->data = p;
    *pp = p + o->nbytes;
    return TM_OK;
}

static bool same_shape(const parsed *e, const tm_tensor *t)
{
    if (e->dt != tm_dtype_of(t) || e->ndim != tm_ndim(t)) return false;
    for (int d = 0; d < e->ndim; d++)
        if (e->shape[d] != tm_shape(t)[d]) return false;
    return true;
}

/* Parses the leading param.N entries of a snapshot body: counts them
 * and their values, and fills data/numel[0..n) when they are given. */
static tm_status param_entries(const uint8_t *p, size_t len, uint32_t *n,
                               uint64_t *total, const uint8_t **data,
                               int64_t *numel)
{
    const uint8_t *end = p + len;
    if (len < 4) return TM_ERR(TM_EFORMAT, "snapshot truncated");
    uint32_t count = tm__get_u32(p);
    p += 4;
    *n = 0;
    *total = 0;
    for (; *n < count; ++*n) {
        parsed e;
        tm_status st = parse_one(&p, end, &e);
        if (st) return st;
        char want[32];
        snprintf(want, sizeof want, "param.%u", *n);
        if (strcmp(e.name, want)) break; /* the parameters end here */
        if (e.dt != TM_F32)
            return TM_ERR(TM_EFORMAT, "snapshot entry %s is not F32", e.name);
        if (data) {
            data[*n] = e.data;
            numel[*n] = (int64_t)(e.nbytes / 4);
        }
        *total += e.nbytes / 4;
    }
    return TM_OK;
}

tm_status tm__swarm_state_hash(const uint8_t *p, size_t len, uint64_t numel,
                               uint64_t *hash)
{
    uint32_t n;
    uint64_t total;
    tm_status st = param_entries(p, len, &n, &total, NULL, NULL);
    if (!st && total != numel)
        st = TM_ERR(TM_EFORMAT, "snapshot of %llu parameter values for a "
                    "model of %llu", (unsigned long long)total,
                    (unsigned long long)numel);
    if (st) return st;
    /* the entries, now counted, are parsed again into their runs */
    const uint8_t **data = tm__alloc(sizeof *data * ((size_t)n + 1), __func__);
    int64_t *counts = tm__alloc(sizeof *counts * ((size_t)n + 1), __func__);
    st = data && counts ? param_entries(p, len, &n, &total, data, counts) : TM_ENOMEM;
    if (!st) *hash = tm__swarm_values_hash(data, counts, (int)n);
    tm__dealloc(data);
    tm__dealloc(counts);
    return st;
}

tm_status tm__swarm_state_decode(const uint8_t *p, size_t len,
                                 const tm__swarm_flat *f, tm_optim *opt,
                                 tm_optim *outer, const uint64_t *hash)
{
    const uint8_t *body = p, *end = p + len;
    if (len < 4) return TM_ERR(TM_EFORMAT, "snapshot truncated");
    uint32_t count = tm__get_u32(p);
    p += 4;
    /* the smallest entry (a one-letter name, a 0-d F32) takes 9 bytes:
     * the entry table is sized by what the body can hold */
    if (count < (uint32_t)f->count || count > (len - 4) / 9)
        return TM_ERR(TM_EFORMAT, "snapshot of %u entries for %d parameters",
                      count, f->count);
    parsed *e = tm__alloc(sizeof *e * count, __func__);
    tm_params *inner = tm_params_new(), *outs = tm_params_new();
    tm_status st = (!e || !inner || !outs) ? TM_ENOMEM : TM_OK;
    for (uint32_t i = 0; !st && i < count; i++) {
        st = parse_one(&p, end, &e[i]);
        if (st) break;
        char want[32];
        if (i < (uint32_t)f->count) {
            snprintf(want, sizeof want, "param.%u", i);
            if (strcmp(e[i].name, want) || !same_shape(&e[i], f->t[i]))
                st = TM_ERR(TM_EFORMAT, "snapshot entry %u (%s) does not "
                            "match parameter %u", i, e[i].name, i);
            continue;
        }
        bool is_in = !strncmp(e[i].name, "optim.", 6);
        bool is_out = !strncmp(e[i].name, "outer.", 6);
        if ((!is_in && !is_out) || (is_out && !outer) || (is_in && !opt)) {
            st = TM_ERR(TM_EFORMAT, "unexpected snapshot entry %s", e[i].name);
            break;
        }
        tm_tensor *t = tm_from_buffer(e[i].data, e[i].shape, e[i].ndim, e[i].dt);
        if (!t) st = tm_last_status();
        else st = tm_params_add_buffer(is_in ? inner : outs, e[i].name + 6, t);
        tm_free(t);
    }
    if (!st && p != end)
        st = TM_ERR(TM_EFORMAT, "%zu bytes after the snapshot", (size_t)(end - p));
    uint64_t got = 0;
    if (!st && hash) st = tm__swarm_state_hash(body, len, (uint64_t)f->numel, &got);
    if (!st && hash && got != *hash)
        st = TM_ERR(TM_EFORMAT, "the snapshot's parameters do not match its "
                    "hash (%016llx, claimed %016llx)", (unsigned long long)got,
                    (unsigned long long)*hash);
    /* The optimizers validate their own entries; both load before the
     * parameters change, and the inner state is put back when the outer
     * one is refused, so a refusal leaves everything as it was. */
    tm_params *old = (!st && opt && outer) ? tm_params_new() : NULL;
    if (!st && opt && outer) st = old ? tm_optim_state_dict(opt, old) : TM_ENOMEM;
    if (!st && opt) st = tm_optim_load_state_dict(opt, inner);
    if (!st && outer) {
        st = tm_optim_load_state_dict(outer, outs);
        if (st && opt) {
            tm_status keep = tm_last_status();
            tm_optim_load_state_dict(opt, old);
            st = keep;
        }
    }
    tm_params_free(old);
    if (!st)
        for (int i = 0; i < f->count; i++)
            memcpy(tm_data(f->t[i]), e[i].data, e[i].nbytes);
    tm__dealloc(e);
    tm_params_free(inner);
    tm_params_free(outs);
    return st ? tm__relabel_error(__func__, st) : TM_OK;
}
