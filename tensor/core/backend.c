/* backend.c — device names, the backend registry, device contexts (their
 * sticky errors and scratch) and synchronization. */
#include "tensor_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- names */

static const char *const tm__type_names[TM_DEVICE_TYPES] = {
    [TM_DEVICE_CPU] = "cpu",
    [TM_DEVICE_CUDA] = "cuda",
    [TM_DEVICE_METAL] = "metal",
    [TM_DEVICE_TEST] = "test",
};

static bool tm__device_valid(tm_device d)
{
    if ((int)d.type < 0 || (int)d.type >= TM_DEVICE_TYPES) return false;
    if (d.type == TM_DEVICE_CPU) return d.index == 0;
    return d.index >= 0 && d.index < TM_MAX_DEVICE_INDEX;
}

bool tm_device_eq(tm_device a, tm_device b)
{
    return a.type == b.type && a.index == b.index;
}

const char *tm_device_type_name(tm_device_type type)
{
    return (int)type >= 0 && (int)type < TM_DEVICE_TYPES
               ? tm__type_names[type]
               : "invalid";
}

/* "cuda:3" for every valid device, built once. */
static char tm__dev_names[TM_DEVICE_TYPES][TM_MAX_DEVICE_INDEX][16];
static pthread_once_t tm__names_once = PTHREAD_ONCE_INIT;

static void tm__names_init(void)
{
    for (int t = 1; t < TM_DEVICE_TYPES; t++)
        for (int i = 0; i < TM_MAX_DEVICE_INDEX; i++)
            snprintf(tm__dev_names[t][i], sizeof tm__dev_names[t][i], "%s:%d",
                     tm__type_names[t], i);
}

const char *tm_device_name(tm_device dev)
{
    if (!tm__device_valid(dev)) return "invalid";
    if (dev.type == TM_DEVICE_CPU) return "cpu";
    pthread_once(&tm__names_once, tm__names_init);
    return tm__dev_names[dev.type][dev.index];
}

tm_status tm_device_parse(const char *s, tm_device *out)
{
    if (!s || !out) return TM_ERR(TM_EINVAL, "device string or out is NULL");
    for (int t = 0; t < TM_DEVICE_TYPES; t++) {
        size_t n = strlen(tm__type_names[t]);
        if (strncmp(s, tm__type_names[t], n) != 0) continue;
        const char *r = s + n;
        long idx = 0;
        if (*r == ':') {
            char *end;
            if (r[1] < '0' || r[1] > '9') break;
            if (r[1] == '0' && r[2]) break; /* no leading zeros: "cuda:01" */
            idx = strtol(r + 1, &end, 10);
            if (*end) break;
        } else if (*r) {
            continue;
        }
        tm_device d = {(tm_device_type)t, idx > INT32_MAX ? -1 : (int)idx};
        if (!tm__device_valid(d))
            return TM_ERR(TM_EINVAL, "device '%s': index out of range (%s "
                          "has indices 0..%d)", s, tm__type_names[t],
                          t == TM_DEVICE_CPU ? 0 : TM_MAX_DEVICE_INDEX - 1);
        *out = d;
        return TM_OK;
    }
    return TM_ERR(TM_EINVAL, "'%s' is not a device (expected cpu, cuda, "
                  "cuda:N, metal:N or test:N)", s);
}

const char *tm_entry_name(tm_entry e)
{
    static const char *const names[] = {
#define TM__ENTRY_NAME(E, n) #n,
        TM_BACKEND_ENTRIES(TM__ENTRY_NAME)
#undef TM__ENTRY_NAME
    };
    return (int)e >= 0 && e < TM_ENTRY_COUNT ? names[e] : "invalid";
}

/* ------------------------------------------------------------- registry */

static pthread_mutex_t tm__reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const tm_backend *tm__registry[TM_DEVICE_TYPES] = {
    [TM_DEVICE_CPU] = &tm__cpu_backend,
};
/* Opened contexts of accelerators; never closed once opened, since
 * storages point at them (the process owns them until exit). */
static tm_ctx *tm__ctxs[TM_DEVICE_TYPES][TM_MAX_DEVICE_INDEX];

static tm_ctx tm__cpu_context = {
    .backend = &tm__cpu_backend,
    .device = {TM_DEVICE_CPU, 0},
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

tm_ctx *tm__cpu_ctx(void) { return &tm__cpu_context; }

tm_status tm_backend_register(const tm_backend *b)
{
    if (!b) return TM_ERR(TM_EINVAL, "backend is NULL");
    if (b->abi_version != TM_BACKEND_ABI_VERSION || b->size != sizeof *b)
        return TM_ERR(TM_EINVAL,
                      "backend '%s' has ABI version %u and size %u; this "
                      "library expects version %u and size %zu",
                      b->name ? b->name : "?", b->abi_version, b->size,
                      TM_BACKEND_ABI_VERSION, sizeof *b);
    if ((int)b->type <= TM_DEVICE_CPU || (int)b->type >= TM_DEVICE_TYPES)
        return TM_ERR(TM_EINVAL, "backend '%s' names device type %d%s",
                      b->name ? b->name : "?", (int)b->type,
                      b->type == TM_DEVICE_CPU ? " (the CPU's is built in)"
                                               : "");
    if (!b->alloc || !b->free || !b->to_device || !b->to_host || !b->copy ||
        !b->fill)
        return TM_ERR(TM_EINVAL, "backend '%s' lacks one of alloc, free, "
                      "to_device, to_host, copy and fill", b->name);
    tm_status st = TM_OK;
    pthread_mutex_lock(&tm__reg_lock);
    if (tm__registry[b->type] && tm__registry[b->type] != b) {
        for (int i = 0; i < TM_MAX_DEVICE_INDEX; i++)
            if (tm__ctxs[b->type][i])
                st = TM_ERR(TM_ESTATE, "device %s is open; backend '%s' "
                            "cannot replace '%s'",
                            tm_device_name(TM_DEVICE(b->type, i)), b->name,
                            tm__registry[b->type]->name);
    }
    if (!st) tm__registry[b->type] = b;
    pthread_mutex_unlock(&tm__reg_lock);
    return st;
}

const tm_backend *tm_backend_get(tm_device_type type)
{
    const tm_backend *b = NULL;
    if ((int)type >= 0 && (int)type < TM_DEVICE_TYPES) {
        pthread_mutex_lock(&tm__reg_lock);
        b = tm__registry[type];
        pthread_mutex_unlock(&tm__reg_lock);
    }
    if (!b)
        TM_ERR(TM_EDEVICE, "device type %s has no backend in this process",
               tm_device_type_name(type));
    return b;
}

int tm_device_count(tm_device_type type)
{
    if (type == TM_DEVICE_CPU) return 1;
    const tm_backend *b = tm_backend_get(type);
    if (!b) return 0;
    int n = b->device_count ? b->device_count() : 1;
    if (n < 0) n = 0;
    return n > TM_MAX_DEVICE_INDEX ? TM_MAX_DEVICE_INDEX : n;
}

tm_ctx *tm_device_ctx(tm_device dev)
{
    if (!tm__device_valid(dev)) {
        TM_ERR(TM_EDEVICE, "device (type %d, index %d) is not a device",
               (int)dev.type, dev.index);
        return NULL;
    }
    if (dev.type == TM_DEVICE_CPU) return &tm__cpu_context;
    pthread_mutex_lock(&tm__reg_lock);
    tm_ctx *cx = tm__ctxs[dev.type][dev.index];
    pthread_mutex_unlock(&tm__reg_lock);
    if (cx) return cx;
    const tm_backend *b = tm_backend_get(dev.type);
    if (!b) return NULL;
    int count = tm_device_count(dev.type);
    if (dev.index >= count) {
        TM_ERR(TM_EDEVICE, "device %s does not exist (%d %s device%s)",
               tm_device_name(dev), count, b->name, count == 1 ? "" : "s");
        return NULL;
    }
    pthread_mutex_lock(&tm__reg_lock);
    cx = tm__ctxs[dev.type][dev.index];
    if (!cx && (cx = tm__calloc(sizeof *cx, __func__))) {
        cx->backend = b;
        cx->device = dev;
        pthread_mutex_init(&cx->lock, NULL);
        if (!(cx->pool = tm__dev_pool_new()) ||
            (b->open && b->open(cx) != TM_OK)) {
            char why[256];
            snprintf(why, sizeof why, "%s", tm_last_error());
            tm__dealloc(cx->pool);
            pthread_mutex_destroy(&cx->lock);
            tm__dealloc(cx);
            cx = NULL;
            TM_ERR(TM_EDEVICE, "device %s does not open: %s",
                   tm_device_name(dev), why);
        } else {
            tm__ctxs[dev.type][dev.index] = cx;
        }
    }
    pthread_mutex_unlock(&tm__reg_lock);
    return cx;
}

bool tm_device_available(tm_device dev) { return tm_device_ctx(dev) != NULL; }

/* ------------------------------------------------------ context access */

tm_device tm_ctx_device(const tm_ctx *ctx) { return ctx->device; }
void *tm_ctx_impl(const tm_ctx *ctx) { return ctx->impl; }
void tm_ctx_set_impl(tm_ctx *ctx, void *impl) { ctx->impl = impl; }

tm_status tm_ctx_fail(tm_ctx *ctx, tm_status st, const char *message)
{
    if (st == TM_OK) return st;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->error == TM_OK) {
        ctx->error = st;
        snprintf(ctx->message, sizeof ctx->message, "%s",
                 message ? message : tm_status_str(st));
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

tm_status tm_ctx_status(tm_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    tm_status st = ctx->error;
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

void *tm_ctx_scratch(tm_ctx *ctx, size_t bytes)
{
    if (!ctx->pool) { /* the CPU: entries run on many callers' threads */
        TM_ERR(TM_EUNSUPPORTED, "%s has no context scratch: its entries "
               "run on the calling threads, several at once",
               tm_device_name(ctx->device));
        return NULL;
    }
    pthread_mutex_lock(&ctx->lock);
    void *h = ctx->scratch;
    if (!h || ctx->scratch_bytes < bytes) {
        if (h) tm__dev_free(ctx, h, ctx->scratch_bytes);
        size_t block = 0;
        h = tm__dev_alloc(__func__, ctx, bytes ? bytes : 1, &block);
        ctx->scratch = h;
        ctx->scratch_bytes = h ? block : 0;
    }
    pthread_mutex_unlock(&ctx->lock);
    return h;
}

tm_status tm__no_entry(const char *fn, const tm_ctx *cx, const char *entry)
{
    return tm__errf(TM_EUNSUPPORTED, fn, "device %s (backend '%s') has no "
                    "'%s' entry", tm_device_name(cx->device),
                    cx->backend->name, entry);
}

tm_status tm__sync(const char *fn, tm_ctx *cx)
{
    if (cx->backend->synchronize) cx->backend->synchronize(cx);
    pthread_mutex_lock(&cx->lock);
    tm_status st = cx->error;
    char msg[sizeof cx->message];
    memcpy(msg, cx->message, sizeof msg);
    cx->error = TM_OK;
    cx->message[0] = 0;
    pthread_mutex_unlock(&cx->lock);
    if (st)
        tm__errf(st, fn, "device %s: %s (found by work queued earlier, "
                 "reported at this synchronization)",
                 tm_device_name(cx->device), msg);
    return st;
}

tm_status tm_synchronize(tm_device dev)
{
    tm_ctx *cx = tm_device_ctx(dev);
    return cx ? tm__sync(__func__, cx) : tm_last_status();
}
