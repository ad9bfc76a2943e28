/* messages.c — the payloads of JOIN, CONFIG and the data frames' prefix
 * (swarm_impl.h; docs/swarm-protocol.md gives the bytes). */
#include "swarm_impl.h"

#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <string.h>

static void put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    tm__put_u64(p, u);
}

static double get_f64(const uint8_t *p)
{
    uint64_t u = tm__get_u64(p);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

void tm__swarm_join_encode(const tm__swarm_join_msg *m,
                           uint8_t out[TM__SWARM_JOIN_BYTES])
{
    memset(out, 0, TM__SWARM_JOIN_BYTES);
    tm__put_u64(out, m->numel);
    memcpy(out + 8, m->fingerprint, 32);
    tm__put_u64(out + 40, m->round);
    tm__put_u64(out + 48, m->hash);
    out[56] = m->s.mode;
    out[57] = m->s.values_f16;
    out[58] = m->s.diloco_topk;
    put_f64(out + 64, m->s.topk_ratio);
    tm__put_u64(out + 72, (uint64_t)m->s.warmup_rounds);
    put_f64(out + 80, m->s.momentum_correction);
    put_f64(out + 88, m->s.clip_norm);
    tm__put_u64(out + 96, (uint64_t)m->s.local_steps);
    put_f64(out + 104, m->s.outer_lr);
    put_f64(out + 112, m->s.outer_momentum);
}

tm_status tm__swarm_settings_check(const tm__swarm_settings *s)
{
    if (s->mode > TM_SWARM_DILOCO)
        return TM_ERR(TM_EFORMAT, "unknown mode %u", s->mode);
    if (s->values_f16 > 1 || s->diloco_topk > 1 ||
        (s->diloco_topk && s->mode != TM_SWARM_DILOCO))
        return TM_ERR(TM_EFORMAT, "values_f16 %u or diloco_topk %u is not "
                      "0 or 1 (diloco_topk only in DiLoCo mode)",
                      s->values_f16, s->diloco_topk);
    if (!(s->topk_ratio > 0 && s->topk_ratio <= 1))
        return TM_ERR(TM_EFORMAT, "topk ratio %g is not in (0, 1]",
                      s->topk_ratio);
    if (s->warmup_rounds < 0 || s->local_steps < 1)
        return TM_ERR(TM_EFORMAT,
                      "warm-up rounds %lld or local steps %lld out of range",
                      (long long)s->warmup_rounds, (long long)s->local_steps);
    if (!(s->momentum_correction >= 0 && s->momentum_correction < 1) ||
        !(s->clip_norm >= 0) || !isfinite(s->clip_norm) ||
        !(s->outer_lr > 0) || !isfinite(s->outer_lr) ||
        !(s->outer_momentum >= 0 && s->outer_momentum < 1))
        return TM_ERR(TM_EFORMAT,
                      "momentum correction %g, clip %g, outer lr %g or outer "
                      "momentum %g out of range",
                      s->momentum_correction, s->clip_norm, s->outer_lr,
                      s->outer_momentum);
    return TM_OK;
}

tm_status tm__swarm_join_decode(const uint8_t *p, uint32_t n,
                                tm__swarm_join_msg *m)
{
    if (n != TM__SWARM_JOIN_BYTES)
        return TM_ERR(TM_EFORMAT, "JOIN of %u bytes, expected %d", n,
                      TM__SWARM_JOIN_BYTES);
    for (int i = 59; i < 64; i++)
        if (p[i]) return TM_ERR(TM_EFORMAT, "JOIN reserved byte %d is set", i);
    m->numel = tm__get_u64(p);
    memcpy(m->fingerprint, p + 8, 32);
    m->round = tm__get_u64(p + 40);
    m->hash = tm__get_u64(p + 48);
    m->s.mode = p[56];
    m->s.values_f16 = p[57];
    m->s.diloco_topk = p[58];
    m->s.topk_ratio = get_f64(p + 64);
    m->s.warmup_rounds = (int64_t)tm__get_u64(p + 72);
    m->s.momentum_correction = get_f64(p + 80);
    m->s.clip_norm = get_f64(p + 88);
    m->s.local_steps = (int64_t)tm__get_u64(p + 96);
    m->s.outer_lr = get_f64(p + 104);
    m->s.outer_momentum = get_f64(p + 112);
    if (m->numel == 0 || m->numel > TM__SWARM_MAX_NUMEL)
        return TM_ERR(TM_EFORMAT, "JOIN with %llu parameter values (1 to %llu)",
                      (unsigned long long)m->numel,
                      (unsigned long long)TM__SWARM_MAX_NUMEL);
    tm_status st = tm__swarm_settings_check(&m->s);
    return st ? tm__relabel_error(__func__, st) : TM_OK;
}

static const char *mode_name(int m)
{
    return m == TM_SWARM_TOPK ? "topk" : m == TM_SWARM_DENSE ? "dense"
                                                             : "diloco";
}

tm_status tm__swarm_settings_match(const tm__swarm_settings *a,
                                   const tm__swarm_settings *b)
{
    if (a->mode != b->mode)
        return TM_ERR(TM_EINVAL, "the swarm trains in %s mode, not %s",
                      mode_name(a->mode), mode_name(b->mode));
    if (a->topk_ratio != b->topk_ratio || a->warmup_rounds != b->warmup_rounds ||
        a->momentum_correction != b->momentum_correction ||
        a->clip_norm != b->clip_norm || a->values_f16 != b->values_f16 ||
        a->diloco_topk != b->diloco_topk)
        return TM_ERR(TM_EINVAL,
                      "the swarm compresses with ratio %g, warm-up %lld, "
                      "momentum %g, clip %g, f16 %d, DiLoCo TopK %d; this "
                      "worker asks %g, %lld, %g, %g, %d, %d",
                      a->topk_ratio, (long long)a->warmup_rounds,
                      a->momentum_correction, a->clip_norm, a->values_f16,
                      a->diloco_topk, b->topk_ratio,
                      (long long)b->warmup_rounds, b->momentum_correction,
                      b->clip_norm, b->values_f16, b->diloco_topk);
    if (a->local_steps != b->local_steps || a->outer_lr != b->outer_lr ||
        a->outer_momentum != b->outer_momentum)
        return TM_ERR(TM_EINVAL,
                      "the swarm's DiLoCo settings are H %lld, outer lr %g, "
                      "momentum %g; this worker asks %lld, %g, %g",
                      (long long)a->local_steps, a->outer_lr,
                      a->outer_momentum, (long long)b->local_steps,
                      b->outer_lr, b->outer_momentum);
    return TM_OK;
}

void tm__swarm_config_encode(const tm__swarm_config_msg *m,
                             uint8_t out[TM__SWARM_CONFIG_BYTES])
{
    memset(out, 0, TM__SWARM_CONFIG_BYTES);
    tm__put_u32(out, m->worker_id);
    out[4] = m->state_follows;
    tm__put_u64(out + 8, m->round);
}

tm_status tm__swarm_config_decode(const uint8_t *p, uint32_t n,
                                  tm__swarm_config_msg *m)
{
    if (n != TM__SWARM_CONFIG_BYTES)
        return TM_ERR(TM_EFORMAT, "CONFIG of %u bytes, expected %d", n,
                      TM__SWARM_CONFIG_BYTES);
    m->worker_id = tm__get_u32(p);
    m->state_follows = p[4];
    m->round = tm__get_u64(p + 8);
    if (m->state_follows > 1 || p[5] || p[6] || p[7] || m->worker_id == 0)
        return TM_ERR(TM_EFORMAT, "malformed CONFIG");
    return TM_OK;
}

void tm__swarm_prefix_encode(const tm__swarm_prefix *m,
                             uint8_t out[TM__SWARM_PREFIX])
{
    memset(out, 0, TM__SWARM_PREFIX);
    tm__put_u64(out, m->round);
    tm__put_u64(out + 8, m->hash);
    tm__put_u32(out + 16, m->contributors);
    out[20] = m->kind;
}

tm_status tm__swarm_prefix_decode(const uint8_t *p, uint32_t n,
                                  tm__swarm_prefix *m)
{
    if (n < TM__SWARM_PREFIX)
        return TM_ERR(TM_EFORMAT, "payload of %u bytes is shorter than its "
                      "%d-byte prefix", n, TM__SWARM_PREFIX);
    m->round = tm__get_u64(p);
    m->hash = tm__get_u64(p + 8);
    m->contributors = tm__get_u32(p + 16);
    m->kind = p[20];
    if (m->kind > TM__SWARM_STATE_KIND || p[21] || p[22] || p[23])
        return TM_ERR(TM_EFORMAT, "malformed payload prefix (kind %u)",
                      m->kind);
    return TM_OK;
}

tm_status tm__swarm_dense_decode(const uint8_t *p, size_t len, int64_t n,
                                 const uint8_t **values)
{
    if (len < 8 || tm__get_u64(p) != (uint64_t)n ||
        (len - 8) / 4 != (uint64_t)n || (len - 8) % 4)
        return TM_ERR(TM_EFORMAT, "dense payload of %zu bytes does not hold "
                      "%lld values", len, (long long)n);
    const uint8_t *v = p + 8;
    for (int64_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, v + 4 * i, 4);
        if (!isfinite(f))
            return TM_ERR(TM_EFORMAT, "value %lld is not finite",
                          (long long)i);
    }
    *values = v;
    return TM_OK;
}

void tm__swarm_set_caps(tm__swrm_conn *c, uint64_t numel)
{
    /* dense: prefix + u64 n + n F32; sparse at most that again (varints
     * of up to 10 bytes); a snapshot holds the parameters and up to seven
     * optimizer slots per value, plus names and shapes. */
    uint64_t dense = TM__SWARM_PREFIX + 8 + 4 * numel;
    uint64_t sparse = TM__SWARM_PREFIX + 24 + 14 * numel;
    uint64_t state = TM__SWARM_PREFIX + 4 + 32 * numel + (1u << 20);
    uint64_t lim = UINT32_MAX;
    tm__swrm_set_cap(c, TM__SWRM_DENSE, (uint32_t)(dense < lim ? dense : lim));
    tm__swrm_set_cap(c, TM__SWRM_TOPK, (uint32_t)(sparse < lim ? sparse : lim));
    tm__swrm_set_cap(c, TM__SWRM_UPDATE,
                     (uint32_t)(sparse < lim ? sparse : lim));
    tm__swrm_set_cap(c, TM__SWRM_STATE, (uint32_t)(state < lim ? state : lim));
}

uint64_t tm__swarm_wire_bytes(const tm__swrm_conn *c, uint32_t n)
{
    uint64_t b = TM__SWRM_HEADER + (uint64_t)n;
    if (c->secured) b += 8 + (c->mode == TM__SWRM_ENCRYPT ? 16 : 32);
    return b;
}

double tm__swarm_norms_median(const tm__swarm_norms *h)
{
    double v[TM__SWARM_NORMS];
    int n = h->n;
    if (n < 3) return 0;
    memcpy(v, h->v, sizeof(double) * (size_t)n);
    for (int i = 1; i < n; i++) /* insertion sort: n <= 32 */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void tm__swarm_norms_add(tm__swarm_norms *h, const double *fresh, int n)
{
    for (int i = 0; i < n && i < TM__SWARM_NORMS; i++) {
        h->v[h->pos] = fresh[i];
        h->pos = (h->pos + 1) % TM__SWARM_NORMS;
        if (h->n < TM__SWARM_NORMS) h->n++;
    }
}
