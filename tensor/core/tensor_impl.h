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
#include "foundry/quantize.h"
#include "foundry/random.h"
#include "foundry/tensor.h"

#include <pthread.h>
#include <stdatomic.h>

/* ------------------------------------------------------------ structures */

/* The caching allocator of one accelerator (device_alloc.c). */
typedef struct tm__dev_pool tm__dev_pool;

/* One open device (backend.c).  Public code sees it as the opaque tm_ctx
 * of backend.h. */
struct tm_ctx {
    const tm_backend *backend;
    tm_device device;
    void *impl; /* the backend's state for this device */
    pthread_mutex_t lock; /* guards the sticky error and the scratch */
    tm_status error;      /* the first asynchronous error since last sync */
    char message[256];
    void *scratch;        /* tm_ctx_scratch's block */
    size_t scratch_bytes;
    tm__dev_pool *pool;   /* NULL for the CPU (the host allocator) */
};

struct tm_storage {
    atomic_long refs;
    void *handle;  /* backend handle; the address on the CPU */
    size_t nbytes;
    tm_storage_kind kind;
    tm_ctx *ctx;   /* the device's context (never closed while used) */
    size_t block;  /* DEVICE: the allocator block's size */
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
/* Normalises a possibly negative dim against ndim into *out; a dim out of
 * range is TM_ERANGE (IndexError in Python, as in PyTorch). */
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
/* The context of t's device. */
static inline tm_ctx *tm__ctx(const tm_tensor *t) { return t->storage->ctx; }
/* The CPU's context (always open). */
tm_ctx *tm__cpu_ctx(void);
static inline bool tm__on_cpu(const tm_tensor *t)
{
    return t->storage->ctx->device.type == TM_DEVICE_CPU;
}
/* Calls entry `e` of ctx's backend with (ctx, ...), or fails with
 * TM_EUNSUPPORTED naming the device and the entry when it has none. */
#define TM__CALL(fn, cx, e, ...)                                              \
    ((cx)->backend->e ? (cx)->backend->e((cx), __VA_ARGS__)                   \
                      : tm__no_entry((fn), (cx), #e))
tm_status tm__no_entry(const char *fn, const tm_ctx *cx, const char *entry);
/* Waits for cx's stream and reports (as fn's error, and clears) the first
 * error its work hit since the last synchronization. */
tm_status tm__sync(const char *fn, tm_ctx *cx);
/* Bytes of the contiguous tensor c to the contiguous tensor o (same shape
 * and dtype) on another device, through the host when neither is the
 * CPU.  Copies to the host synchronize c's device and report its pending
 * error (copy.c). */
tm_status tm__transfer(const char *fn, tm_tensor *o, const tm_tensor *c);

/* Storage memory through the device's caching allocator (device_alloc.c):
 * a handle to at least `bytes` (*block gets the block's size), or NULL
 * with TM_ENOMEM naming the device. */
void *tm__dev_alloc(const char *fn, tm_ctx *cx, size_t bytes, size_t *block);
void tm__dev_free(tm_ctx *cx, void *handle, size_t block);
tm__dev_pool *tm__dev_pool_new(void);

/* ------------------------------------------------ dtype fallback staging
 * When a backend's `supports` declines an entry's dtypes, the front end
 * runs it on converted copies: every float operand of another dtype as
 * F32 and, if that is still declined, every integer and bool operand as
 * I64 too.  Operands are registered with tm__stage_in / _out / _inout
 * (pointers to the call's tm_buf variables, which are redirected to the
 * copies; absent ones are skipped; registering one variable twice makes it
 * in-out); tm__stage_end converts outputs back and frees the copies.  A
 * backend without `supports` costs nothing here. */
#define TM__STAGE_MAX 10
enum { TM__STAGE_IN = 1, TM__STAGE_OUT = 2, TM__STAGE_INOUT = 3 };
/* The copies of a staged call (allocated only when staging happens, so
 * the common path zero-initialises a small struct). */
typedef struct tm__stage_copies {
    tm_buf orig[TM__STAGE_MAX];
    tm_tensor *tmp[TM__STAGE_MAX];
} tm__stage_copies;
typedef struct tm__stage {
    int n;
    bool overflow; /* more than TM__STAGE_MAX operands: refused */
    unsigned char mode[TM__STAGE_MAX];
    tm_buf *buf[TM__STAGE_MAX];
    tm__stage_copies *cp;
} tm__stage;

void tm__stage_add(tm__stage *s, tm_buf *b, int mode);
#define tm__stage_in(s, b) tm__stage_add((s), (b), TM__STAGE_IN)
#define tm__stage_out(s, b) tm__stage_add((s), (b), TM__STAGE_OUT)
#define tm__stage_inout(s, b) tm__stage_add((s), (b), TM__STAGE_INOUT)
/* Asks cx's backend whether it runs (e, op) on the registered dtypes and
 * stages them when not; TM_EUNSUPPORTED when no conversion helps. */
tm_status tm__stage_begin(const char *fn, tm_ctx *cx, tm_entry e, int op,
                          tm__stage *s);
/* Copies staged outputs back (when st is TM_OK) and frees the copies;
 * returns st or the copy's error. */
tm_status tm__stage_end(const char *fn, tm_ctx *cx, tm__stage *s,
                        tm_status st);
/* Entry e (id E, sub-op op) through staging: the registered operands of
 * `sg` are converted when the backend declines their dtypes. */
#define TM__CALL_STAGED(fn, cx, sg, E, op, e, ...)                            \
    tm__stage_end((fn), (cx), (sg),                                           \
                  tm__stage_begin((fn), (cx), TM_ENTRY_##E, (op), (sg))       \
                      ? tm_last_status()                                      \
                      : TM__CALL((fn), (cx), e, __VA_ARGS__))
/* Marks an in-place write to t's storage (autograd version counter). */
static inline void tm__bump_version(tm_tensor *t)
{
    atomic_fetch_add(&t->storage->version, 1);
}
/* True if the memory ranges reachable from a and b may overlap. */
bool tm__may_overlap(const tm_tensor *a, const tm_tensor *b);

/* ------------------------------------------------- quantized tensors
 * (qdtype.c).  A quantized tensor's shape, strides and offset are in
 * values; its block dim (stride 1, a multiple of the block long) holds
 * whole blocks and every other dim of size > 1 steps by whole blocks. */

/* The name of a quantized dtype, NULL for any other value. */
const char *tm__qdtype_name(tm_dtype dt);
/* Bytes from a storage's start to the block holding value offset
 * `elem_offset` (elem_offset * element size for dense dtypes). */
size_t tm__q_byte_offset(tm_dtype dt, int64_t elem_offset);
/* Bytes of a span of n values (whole blocks, rounded up; n * element
 * size for dense dtypes). */
size_t tm__span_bytes(tm_dtype dt, int64_t n);
/* The block dim of a quantized geometry, -1 when there is none. */
int tm__q_block_dim(tm_dtype dt, const int64_t *shape,
                    const int64_t *strides, int ndim);
/* TM_EDTYPE naming fn unless the geometry keeps every row of blocks
 * whole (empty tensors pass; 0-d ones fail). */
tm_status tm__q_check_geometry(const char *fn, tm_dtype dt,
                               const int64_t *shape, const int64_t *strides,
                               int ndim, int64_t offset);
/* TM_EDTYPE naming fn and `what` when t is quantized ("dequantize it
 * first"); TM_OK otherwise (and for NULL). */
tm_status tm__q_refuse(const char *fn, const tm_tensor *t, const char *what);
/* The bytes of quantized t as a U8 geometry [..., row_bytes] (strides in
 * bytes, offset in bytes); TM_EDTYPE unless the block dim is last. */
tm_status tm__q_bytes_geometry(const char *fn, const tm_tensor *t,
                               int64_t *shape, int64_t *strides,
                               size_t *offset);
/* The same as a kernel view, and as a U8 tensor sharing t's storage (no
 * autograd). */
tm_status tm__q_bytes_buf(const char *fn, const tm_tensor *t, tm_buf *out);
tm_tensor *tm__q_bytes_view(const char *fn, const tm_tensor *t);
/* tm__check_tensor, and TM_EDTYPE for a quantized t: the check of every
 * compute op's operands (tensor/ops/). */
static inline tm_status tm__check_dense_operand(const char *fn,
                                                const tm_tensor *t,
                                                const char *what)
{
    if (tm__check_tensor(fn, t, what)) return tm_last_status();
    return tm__q_refuse(fn, t, what);
}
/* A tensor of dtype dt over base's storage with the given geometry (in
 * dt's units; trusted: callers have checked it).  No autograd. */
tm_tensor *tm__reinterpret(const char *fn, const tm_tensor *base, tm_dtype dt,
                           const int64_t *shape, const int64_t *strides,
                           int ndim, int64_t offset);

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

/* ---------------------------------------------------------------- random */

/* The state of `rng` (NULL: the default generator, under its lock), then
 * advances it by `blocks`: for an entry that draws from that state itself
 * (attention's dropout). */
tm_rng tm__rng_take(tm_rng *rng, uint64_t blocks);

/* ------------------------------------------------------------- backends */

extern const tm_backend tm__cpu_backend;

#endif
