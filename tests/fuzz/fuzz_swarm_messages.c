/*
 * fuzz_swarm_messages.c — fuzz target for the payload decoders that run on
 * what a peer sent (swarm/sparse.c, swarm/messages.c, swarm/snapshot.c)
 * and for the coordinator's checkpoint reader (swarm/checkpoint.c).
 *
 * With libFuzzer (make fuzz-swarm-messages) LLVMFuzzerTestOneInput is the
 * entry point; built with -DTM_FUZZ_STANDALONE it replays files (make
 * fuzz-corpus).
 *
 * Input: byte 0 % 8 picks the decoder, byte 1 its setting, the rest is
 * the payload (copied to an exact-size heap block, so ASan sees a read one
 * byte past the end):
 *   0 sparse (TOPK/UPDATE body) with the coordinator's bound on k
 *   1 sparse with a small fixed bound on k
 *   2 JOIN   3 CONFIG   4 data-frame prefix   5 dense body
 *   6 STATE snapshot into a small model and its optimizers
 *   7 checkpoint file (written to a temporary directory)
 * What a decoder accepts must satisfy its documented checks and encode
 * back to the same bytes; what it refuses must come with TM_EFORMAT (or
 * TM_EIO / TM_ENOMEM where files or memory are involved) and a message,
 * and a refused snapshot must leave parameters and optimizer state as
 * they were.  No leak: the allocation counter ends where it started.
 */
#include "foundry.h"

#include "../../swarm/compress.h"
#include "../../swarm/coordinator_impl.h"
#include "../../swarm/swarm_impl.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr,                                                   \
                    "fuzz_swarm_messages: invariant failed: %s (%s:%d)\n",    \
                    #c, __FILE__, __LINE__);                                  \
            abort();                                                          \
        }                                                                     \
    } while (0)

static void refused(tm_status st)
{
    FUZZ_ASSERT(st == TM_EFORMAT);
    FUZZ_ASSERT(tm_last_error()[0] != 0);
}

/* ------------------------------------------------------------- sparse */

static void fuzz_sparse(const uint8_t *p, size_t len, uint8_t arg, bool coord)
{
    static const int64_t ns[4] = {10, 1000, (int64_t)1 << 40, 0};
    int64_t n = ns[arg & 3];
    if ((arg & 3) == 3 && len >= 8) { /* the payload's own n */
        uint64_t v = tm__get_u64(p);
        n = v > INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    /* the coordinator bounds k by the frame (each entry takes at least 3
     * bytes); otherwise a small bound, to meet "too many entries" */
    int64_t kmax = coord ? (int64_t)(len / 3) : (int64_t)(arg >> 2);
    if (kmax > n) kmax = n;
    int64_t *idx = malloc(sizeof *idx * (size_t)(kmax ? kmax : 1));
    float *val = malloc(sizeof *val * (size_t)(kmax ? kmax : 1));
    FUZZ_ASSERT(idx && val);
    int64_t k = -1;
    tm_status st = tm__sparse_decode(p, len, n, kmax, &k, idx, val);
    if (st) {
        refused(st);
        FUZZ_ASSERT(k == -1);
    } else {
        FUZZ_ASSERT(k >= 0 && k <= kmax);
        for (int64_t i = 0; i < k; i++) {
            FUZZ_ASSERT(idx[i] >= 0 && idx[i] < n);
            FUZZ_ASSERT(i == 0 || idx[i] > idx[i - 1]);
            FUZZ_ASSERT(isfinite(val[i]));
        }
        /* canonical: the encoder writes the same bytes back */
        int dt = p[16];
        size_t cap = tm__sparse_max_bytes(k, dt), got = 0;
        uint8_t *out = malloc(cap);
        FUZZ_ASSERT(out);
        FUZZ_ASSERT(tm__sparse_encode(n, k, idx, val, dt, out, cap, &got) == TM_OK);
        FUZZ_ASSERT(got == len && !memcmp(out, p, len));
        free(out);
    }
    free(idx);
    free(val);
}

/* ------------------------------------------------- JOIN, CONFIG, prefix */

static void fuzz_join(const uint8_t *p, size_t len)
{
    tm__swarm_join_msg m;
    tm_status st = tm__swarm_join_decode(p, (uint32_t)len, &m);
    if (st) {
        refused(st);
        return;
    }
    FUZZ_ASSERT(len == TM__SWARM_JOIN_BYTES);
    FUZZ_ASSERT(m.numel >= 1 && m.numel <= TM__SWARM_MAX_NUMEL);
    FUZZ_ASSERT(tm__swarm_settings_check(&m.s) == TM_OK);
    /* no NaN slipped through: the settings equal themselves */
    FUZZ_ASSERT(tm__swarm_settings_match(&m.s, &m.s) == TM_OK);
    uint8_t out[TM__SWARM_JOIN_BYTES];
    tm__swarm_join_encode(&m, out);
    FUZZ_ASSERT(!memcmp(out, p, len));
}

static void fuzz_config(const uint8_t *p, size_t len)
{
    tm__swarm_config_msg m;
    tm_status st = tm__swarm_config_decode(p, (uint32_t)len, &m);
    if (st) {
        refused(st);
        return;
    }
    FUZZ_ASSERT(len == TM__SWARM_CONFIG_BYTES && m.worker_id != 0);
    uint8_t out[TM__SWARM_CONFIG_BYTES];
    tm__swarm_config_encode(&m, out);
    FUZZ_ASSERT(!memcmp(out, p, len));
}

static void fuzz_prefix(const uint8_t *p, size_t len)
{
    tm__swarm_prefix m;
    tm_status st = tm__swarm_prefix_decode(p, (uint32_t)len, &m);
    if (st) {
        refused(st);
        return;
    }
    FUZZ_ASSERT(len >= TM__SWARM_PREFIX && m.kind <= TM__SWARM_STATE_KIND);
    uint8_t out[TM__SWARM_PREFIX];
    tm__swarm_prefix_encode(&m, out);
    FUZZ_ASSERT(!memcmp(out, p, TM__SWARM_PREFIX));
}

static void fuzz_dense(const uint8_t *p, size_t len, uint8_t arg)
{
    int64_t n = (arg & 1) && len >= 8 ? (int64_t)((len - 8) / 4) : arg >> 1;
    const uint8_t *v = NULL;
    tm_status st = tm__swarm_dense_decode(p, len, n, &v);
    if (st) {
        refused(st);
        FUZZ_ASSERT(v == NULL);
        return;
    }
    FUZZ_ASSERT(len == 8 + 4 * (size_t)n && v == p + 8);
    FUZZ_ASSERT(tm__get_u64(p) == (uint64_t)n);
    for (int64_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, v + 4 * i, 4);
        FUZZ_ASSERT(isfinite(f));
    }
}

/* ----------------------------------------------------------- snapshot */

/* The model the snapshot corpus is made for: param.0 [2,3], param.1 [3]
 * (F32), an inner optimizer (none, Adam or SGD with momentum: arg & 3,
 * 3 as 0) and, with arg & 4, DiLoCo's outer Nesterov SGD over a copy; each
 * optimizer has taken one step, so it has state to lose. */
typedef struct model {
    tm_params *ps, *gs;
    tm__swarm_flat f;
    tm_optim *opt, *outer;
} model;

static tm_params *make_params(float base)
{
    tm_params *ps = tm_params_new();
    FUZZ_ASSERT(ps);
    const int64_t shapes[2][2] = {{2, 3}, {3, 0}};
    for (int i = 0; i < 2; i++) {
        tm_tensor *t = tm_zeros(shapes[i], i ? 1 : 2, TM_F32);
        FUZZ_ASSERT(t);
        float *d = tm_data(t);
        for (int64_t j = 0; j < tm_numel(t); j++) d[j] = base + (float)(i * 10 + j);
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        FUZZ_ASSERT(tm_params_add(ps, name, t, false) == TM_OK);
        tm_free(t);
    }
    return ps;
}

static tm_optim *make_optim(tm_params *ps, tm_optim_kind kind, bool nesterov)
{
    tm_optim_hparams hp = tm_optim_defaults(kind);
    hp.lr = 0.1;
    if (kind == TM_OPTIM_SGD) {
        hp.momentum = 0.9;
        hp.nesterov = nesterov;
    }
    tm_optim *o = tm_optim_new(kind, &hp);
    FUZZ_ASSERT(o && tm_optim_add_params(o, ps, NULL) >= 0);
    tm__swarm_flat f;
    FUZZ_ASSERT(tm__swarm_flat_init(&f, ps) == TM_OK);
    float g[9];
    for (int i = 0; i < 9; i++) g[i] = 0.5f - 0.125f * (float)i;
    FUZZ_ASSERT(tm__swarm_grads_set(&f, g) == TM_OK);
    FUZZ_ASSERT(tm_optim_step(o) == TM_OK);
    tm_optim_zero_grad(o);
    tm__swarm_flat_free(&f);
    return o;
}

static void model_new(model *m, uint8_t arg)
{
    memset(m, 0, sizeof *m);
    m->ps = make_params(1.0f);
    FUZZ_ASSERT(tm__swarm_flat_init(&m->f, m->ps) == TM_OK);
    FUZZ_ASSERT(m->f.count == 2 && m->f.numel == 9);
    if ((arg & 3) == 1) m->opt = make_optim(m->ps, TM_OPTIM_ADAM, false);
    if ((arg & 3) == 2) m->opt = make_optim(m->ps, TM_OPTIM_SGD, false);
    if (arg & 4) {
        m->gs = make_params(-5.0f);
        m->outer = make_optim(m->gs, TM_OPTIM_SGD, true);
    }
}

static void model_free(model *m)
{
    tm_optim_free(m->opt);
    tm_optim_free(m->outer);
    tm__swarm_flat_free(&m->f);
    tm_params_free(m->ps);
    tm_params_free(m->gs);
}

/* The whole state, as the snapshot encoder writes it. */
static uint8_t *model_bytes(const model *m, size_t *len)
{
    uint8_t *b = NULL;
    FUZZ_ASSERT(tm__swarm_state_encode(&m->f, m->opt, m->outer, &b, len, 0) ==
                TM_OK);
    return b;
}

static void fuzz_state(const uint8_t *p, size_t len, uint8_t arg)
{
    model m;
    model_new(&m, arg);
    size_t n0;
    uint8_t *b0 = model_bytes(&m, &n0);
    uint64_t h = 0;
    tm_status hs = tm__swarm_state_hash(p, len, (uint64_t)m.f.numel, &h);
    FUZZ_ASSERT(hs == TM_OK || hs == TM_EFORMAT || hs == TM_ENOMEM);
    tm_status st = tm__swarm_state_decode(p, len, &m.f, m.opt, m.outer, NULL);
    size_t n1;
    uint8_t *b1 = model_bytes(&m, &n1);
    if (st) {
        FUZZ_ASSERT(st == TM_EFORMAT || st == TM_EINVAL || st == TM_ESHAPE ||
                    st == TM_EDTYPE);
        FUZZ_ASSERT(tm_last_error()[0] != 0);
        /* nothing changed */
        FUZZ_ASSERT(n1 == n0 && !memcmp(b0, b1, n0));
    } else {
        /* the parameters hold the snapshot's values, and what the model
         * now encodes loads back into a fresh model */
        FUZZ_ASSERT(len >= 4 + 4 * 9); /* at least the 9 parameter values */
        /* a holder without the model hashes the parameters as a replica */
        FUZZ_ASSERT(hs == TM_OK && h == tm__swarm_params_hash(&m.f));
        model m2;
        model_new(&m2, arg);
        uint64_t wrong = h ^ 1;
        FUZZ_ASSERT(tm__swarm_state_decode(b1, n1, &m2.f, m2.opt, m2.outer,
                                           &wrong) == TM_EFORMAT);
        FUZZ_ASSERT(tm__swarm_state_decode(b1, n1, &m2.f, m2.opt, m2.outer,
                                           &h) == TM_OK);
        size_t n2;
        uint8_t *b2 = model_bytes(&m2, &n2);
        FUZZ_ASSERT(n2 == n1 && !memcmp(b1, b2, n1));
        tm__dealloc(b2);
        model_free(&m2);
    }
    tm__dealloc(b0);
    tm__dealloc(b1);
    model_free(&m);
}

/* --------------------------------------------------------- checkpoint */

static char g_dir[64];

static void fuzz_checkpoint(const uint8_t *p, size_t len)
{
    if (!g_dir[0]) {
        snprintf(g_dir, sizeof g_dir, "/tmp/fuzz_swarm_ckpt.XXXXXX");
        FUZZ_ASSERT(mkdtemp(g_dir));
    }
    char path[128];
    snprintf(path, sizeof path, "%s/swarm.ckpt", g_dir);
    FILE *fp = fopen(path, "wb");
    FUZZ_ASSERT(fp && fwrite(p, 1, len, fp) == len && fclose(fp) == 0);
    tm_swarm_coordinator *co = calloc(1, sizeof *co);
    FUZZ_ASSERT(co);
    snprintf(co->ckpt, sizeof co->ckpt, "%s", g_dir);
    tm_status st = tm__co_load(co);
    if (st) {
        FUZZ_ASSERT(st == TM_EFORMAT || st == TM_EIO || st == TM_ENOMEM);
        FUZZ_ASSERT(tm_last_error()[0] != 0);
        FUZZ_ASSERT(!co->have_model && !co->snap);
    } else {
        FUZZ_ASSERT(co->have_model && co->snap && co->acc && co->mark);
        FUZZ_ASSERT(len == 8 + TM__SWARM_JOIN_BYTES + 4 + (size_t)co->snap_n + 4);
        FUZZ_ASSERT(!memcmp(co->snap, p + 8 + TM__SWARM_JOIN_BYTES + 4, co->snap_n));
        FUZZ_ASSERT(co->numel >= 1 && tm__swarm_settings_check(&co->s) == TM_OK);
        tm__swarm_prefix pre;
        FUZZ_ASSERT(tm__swarm_prefix_decode(co->snap, co->snap_n, &pre) == TM_OK);
        FUZZ_ASSERT(pre.kind == TM__SWARM_STATE_KIND && pre.round == co->round);
        uint64_t h = 0;
        FUZZ_ASSERT(tm__swarm_state_hash(co->snap + TM__SWARM_PREFIX,
                                         co->snap_n - TM__SWARM_PREFIX, co->numel,
                                         &h) == TM_OK);
        FUZZ_ASSERT(h == pre.hash && h == co->snap_hash);
    }
    tm__dealloc(co->acc);
    tm__dealloc(co->mark);
    tm__dealloc(co->snap);
    free(co);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool warm;
    if (!warm) { /* lazy one-time allocations must not count as leaks */
        model m;
        model_new(&m, 5); /* Adam and the outer SGD */
        model_free(&m);
        warm = true;
    }
    if (size < 2) return 0;
    int which = data[0] % 8;
    uint8_t arg = data[1];
    size_t len = size - 2;
    uint8_t *p = malloc(len ? len : 1);
    FUZZ_ASSERT(p);
    memcpy(p, data + 2, len);
    tm_mem_stats before, after;
    tm_memory_stats(&before);
    switch (which) {
    case 0: fuzz_sparse(p, len, arg, true); break;
    case 1: fuzz_sparse(p, len, arg, false); break;
    case 2: fuzz_join(p, len); break;
    case 3: fuzz_config(p, len); break;
    case 4: fuzz_prefix(p, len); break;
    case 5: fuzz_dense(p, len, arg); break;
    case 6: fuzz_state(p, len, arg); break;
    default: fuzz_checkpoint(p, len); break;
    }
    tm_memory_stats(&after);
    FUZZ_ASSERT(after.current_bytes == before.current_bytes);
    free(p);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_swarm_messages"
#include "standalone.h"
