/* backend.c — the per-device backend registry. */
#include "tensor_impl.h"

#include <pthread.h>

#define TM__NDEVICES 3

static pthread_mutex_t tm__reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const tm_backend *tm__registry[TM__NDEVICES] = {
    [TM_CPU] = &tm__cpu_backend,
};

const char *tm_device_name(tm_device dev)
{
    switch (dev) {
    case TM_CPU: return "cpu";
    case TM_CUDA: return "cuda";
    case TM_METAL: return "metal";
    }
    return "invalid";
}

tm_status tm_backend_register(const tm_backend *b)
{
    if (!b) return TM_ERR(TM_EINVAL, "backend is NULL");
    if (b->abi_version != TM_BACKEND_ABI_VERSION || b->size != sizeof *b)
        return TM_ERR(TM_EINVAL,
                      "backend '%s' has ABI version %u and size %u; this "
                      "library expects version %u and size %zu",
                      b->name ? b->name : "?", b->abi_version, b->size,
                      TM_BACKEND_ABI_VERSION, sizeof *b);
    if ((int)b->device < 0 || (int)b->device >= TM__NDEVICES)
        return TM_ERR(TM_EINVAL, "backend '%s' names device %d",
                      b->name ? b->name : "?", (int)b->device);
    pthread_mutex_lock(&tm__reg_lock);
    tm__registry[b->device] = b;
    pthread_mutex_unlock(&tm__reg_lock);
    return TM_OK;
}

const tm_backend *tm_backend_get(tm_device dev)
{
    const tm_backend *b = NULL;
    if ((int)dev >= 0 && (int)dev < TM__NDEVICES) {
        pthread_mutex_lock(&tm__reg_lock);
        b = tm__registry[dev];
        pthread_mutex_unlock(&tm__reg_lock);
    }
    if (!b)
        TM_ERR(TM_EDEVICE, "device %s (%d) has no backend in this build",
               tm_device_name(dev), (int)dev);
    return b;
}

bool tm_device_available(tm_device dev)
{
    return tm_backend_get(dev) != NULL;
}
