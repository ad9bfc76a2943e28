/*
 * tensor_impl.h — internals of the tensor core (storage, tensors, views,
 * dtype conversion, the backend registry), shared by the tensor module's
 * files, the backends and the modules above.  Never installed; nothing
 * here is public API.
 */
#ifndef FOUNDRY_TENSOR_IMPL_H
#define FOUNDRY_TENSOR_IMPL_H

#include "../runtime/runtime_impl.h"

#include "foundry/autograd.h"
#include "foundry/backend.h"
#include "foundry/ops.h"
#include "foundry/random.h"
#include "foundry/tensor.h"

#include <stdatomic.h>

/* ------------------------------------------------------------ structures */

struct tm_storage {
    atomic_long refs;
    void *data;
    size_t nbytes;
    tm_storage_kind kind;
    tm_device device;
    tm_release_fn release; /* BORROWED / MAPPED: called with (data, user) */
    void *user;
    /* Bumped by every in-place write through any view of this storage, so
     * autograd can detect that a value it saved has changed. */
    atomic_uint_fast64_t version;
    bool readonly; /* tm_storage_set_readonly: every in-place write fails */
};

struct tm_tensor {
    atomic_long refs;
    tm_storage *storage; /* one reference held */
    int64_t offset;      /* elements from storage->data */
    tm_dtype dtype;
    int ndim;
    int64_t shape[TM_MAX_DIMS];
    int64_t strides[TM_MAX_DIMS];
    void *autograd; /* reserved for the autograd engine; NULL until then */
};

/* -------------------------------------------------------------- checking */

/* Validates ndim and shape (no negatives, product fits int64 and size_t
 * for dtype `dt`); stores the element count in *numel. */
tm_status tm__check_shape(const char *fn, const int64_t *shape, int ndim,
                          tm_dtype dt, int64_t *numel);
/* Normalises a possibly negative dim against ndim into *out. */
tm_status tm__wrap_dim(const char *fn, int dim, int ndim, int *out);
/* Fails unless `t` is non-NULL (names the argument `what`). */
tm_status tm__check_tensor(const char *fn, const tm_tensor *t,
                           const char *what);
/* Fails unless every non-NULL tensor of ts[n] is on the same device. */
tm_status tm__check_same_device(const char *fn, const tm_tensor *const *ts,
                                int n);

/* --------------------------------------------------------------- tensors */

/* A new contiguous tensor with fresh owned storage on `dev`. */
tm_tensor *tm__tensor_new(const char *fn, const int64_t *shape, int ndim,
                          tm_dtype dt, tm_device dev);
/* A new tensor sharing `base`'s storage with the given geometry (trusted:
 * callers have checked bounds). */
tm_tensor *tm__view_of(const char *fn, const tm_tensor *base,
                       const int64_t *shape, const int64_t *strides, int ndim,
                       int64_t offset);
/* A 0-d tensor of `dt` on `dev` holding v (converted to dt). */
tm_tensor *tm__scalar_on(const char *fn, double v, tm_dtype dt,
                         tm_device dev);
/* Fails when t cannot be written in place: its storage is read-only
 * (TM_ESTATE), it requires grad while grad mode is on (TM_ESTATE), or it
 * has an expanded dim (size > 1, stride 0), whose elements share memory and
 * so cannot be written elementwise (TM_EINVAL). */
tm_status tm__check_writable(const char *fn, const tm_tensor *t);
/* Fails (TM_EUNSUPPORTED) when src requires grad while grad mode is on:
 * an in-place op reading it would drop its gradient, since in-place ops
 * record nothing. */
tm_status tm__check_source(const char *fn, const tm_tensor *src);
/* Strides of a contiguous tensor of `shape`. */
void tm__contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
/* The kernel view of a tensor (optionally broadcast to shape[ndim] — the
 * caller has checked that it broadcasts; pass shape NULL for as-is). */
tm_buf tm__buf(const tm_tensor *t);
tm_buf tm__buf_bcast(const tm_tensor *t, const int64_t *shape, int ndim);
/* The backend of t's device (error set and NULL if unavailable). */
const tm_backend *tm__backend(const tm_tensor *t, const char *fn);
/* Marks an in-place write to t's storage (autograd version counter). */
static inline void tm__bump_version(tm_tensor *t)
{
    atomic_fetch_add(&t->storage->version, 1);
}
/* True if the memory ranges reachable from a and b may overlap. */
bool tm__may_overlap(const tm_tensor *a, const tm_tensor *b);

/* ------------------------------------------------------------ conversion */

float tm__f16_to_f32(uint16_t h);
uint16_t tm__f32_to_f16(float f);
uint16_t tm__f64_to_f16(double d);
float tm__bf16_to_f32(uint16_t b);
uint16_t tm__f32_to_bf16(float f);
uint16_t tm__f64_to_bf16(double d);

/* One element of dtype `dt` at p, as double. */
double tm__load_f64(const void *p, tm_dtype dt);
/* Stores a double into one element of dtype `dt` at p. */
void tm__store_f64(void *p, tm_dtype dt, double v);

/* ------------------------------------------------------------- autograd
 * The autograd state a tensor carries (t->autograd) belongs to
 * tensor/autograd/tape.c; the core only needs these two. */

/* True when grad mode is on and t requires grad. */
bool tm__ag_requires(const tm_tensor *t);
/* Releases t's autograd state (called by tm_free). */
void tm__ag_meta_free(tm_tensor *t);

/* ------------------------------------------------------------- backends */

extern const tm_backend tm__cpu_backend;

#endif
