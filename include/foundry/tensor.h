/*
 * foundry/tensor.h — dtypes, devices, storage, tensors, views, creation.
 *
 * A tensor is a strided view onto reference-counted storage: a shape and
 * strides (in elements, int64_t), an element offset, a dtype and a device.
 * Views (transpose, slice, expand, ...) share storage and never copy.
 * Tensors are reference-counted too: tm_retain() adds a reference and
 * tm_free() drops one; storage is released when its last tensor is.
 *
 *   tm_tensor *a = tm_randn((int64_t[]){64, 32}, 2, TM_F32); // new storage
 *   tm_tensor *b = tm_transpose(a, 0, 1);                    // view of a
 *   tm_tensor *c = tm_contiguous(b);                         // copy
 *   tm_free(c); tm_free(b); tm_free(a);                      // any order
 *
 * Ownership words used below: "new reference" — the caller owns one
 * reference and releases it with tm_free; "borrowed" — valid while the
 * argument is alive, do not free.  Tensor arguments are borrowed.
 * Negative dims count from the end (-1 is the last dim) everywhere.
 * Failures return NULL or a negative tm_status; see foundry/base.h.
 * Tensors are not thread-safe objects: do not mutate one tensor from two
 * threads at once.  Reference counting itself is thread-safe.
 */
#ifndef FOUNDRY_TENSOR_H
#define FOUNDRY_TENSOR_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TM_MAX_DIMS 8

/* "To the end" for slice stops, like Python's None. */
#define TM_END INT64_MAX

/* Element types.  Values are explicit and only ever appended. */
typedef enum tm_dtype {
    TM_F32 = 0,  /* the compute type */
    TM_F64 = 1,  /* precise reductions, gradient checks */
    TM_F16 = 2,  /* IEEE half: storage; computed in F32 */
    TM_BF16 = 3, /* bfloat16: storage; computed in F32 */
    TM_I8 = 4,
    TM_U8 = 5,
    TM_I16 = 6,
    TM_I32 = 7,
    TM_I64 = 8,  /* indices */
    TM_BOOL = 9, /* one byte, 0 or 1 */
    /* Block-quantized types (foundry/quantize.h): rows are contiguous
     * runs of blocks laid out exactly as ggml's.  Most ops reject them. */
    TM_Q8_0 = 32,
    TM_Q4_0 = 33,
    TM_Q4_1 = 34,
    TM_Q8_1 = 35, /* activations (for Q4_1 / Q5_1 weights) */
    TM_Q5_0 = 36,
    TM_Q5_1 = 37,
    TM_Q4_K = 38,
    TM_Q5_K = 39,
    TM_Q6_K = 40,
    TM_Q8_K = 41  /* activations (for the K-quants) */
} tm_dtype;

#define TM_QUANT_DTYPE_FIRST TM_Q8_0
#define TM_QUANT_DTYPE_LAST TM_Q8_K

#define TM_NUM_DENSE_DTYPES 10 /* TM_F32 .. TM_BOOL */

/* "f32", "bf16", "bool", ...; "invalid" for unknown values.  Static. */
const char *tm_dtype_name(tm_dtype dt);
/* Bytes per element, or 0 for block-quantized and invalid dtypes. */
size_t tm_dtype_size(tm_dtype dt);
bool tm_dtype_is_float(tm_dtype dt);    /* F32 F64 F16 BF16 */
bool tm_dtype_is_integer(tm_dtype dt);  /* I8 U8 I16 I32 I64 (not BOOL) */
bool tm_dtype_is_valid(tm_dtype dt);    /* one of the dense dtypes */
/* The dtype of a binary op on `a` and `b`, by PyTorch's rules:
 * bool < integers < floats; u8 with i8 gives i16; f16 with bf16 gives f32. */
tm_dtype tm_promote_types(tm_dtype a, tm_dtype b);

/* A device is a type plus an index: cpu, cuda:0, cuda:1, metal:0.  The
 * CPU has index 0 only.  TM_DEVICE_TEST is reserved for the conformance
 * tests' device (tests/backend); the library has no backend for it. */
typedef enum tm_device_type {
    TM_DEVICE_CPU = 0,
    TM_DEVICE_CUDA = 1,
    TM_DEVICE_METAL = 2,
    TM_DEVICE_TEST = 3
} tm_device_type;
#define TM_DEVICE_TYPES 4
/* Devices of one type have indices 0 .. TM_MAX_DEVICE_INDEX - 1. */
#define TM_MAX_DEVICE_INDEX 16

typedef struct tm_device {
    tm_device_type type;
    int index;
} tm_device;

#define TM_DEVICE(type, index) ((tm_device){(type), (index)})
#define TM_CPU TM_DEVICE(TM_DEVICE_CPU, 0)

/* True when a and b are the same device. */
bool tm_device_eq(tm_device a, tm_device b);

/* "cpu", "cuda", "metal", "test"; "invalid" for anything else. */
const char *tm_device_type_name(tm_device_type type);
/* "cpu", "cuda:1", ...: a string owned by the library that stays valid
 * for the life of the process ("invalid" for an invalid device). */
const char *tm_device_name(tm_device dev);
/* Parses "cpu", "cuda", "cuda:1", "metal:0" (a type without an index is
 * index 0).  TM_EINVAL naming the string when it is not a device. */
tm_status tm_device_parse(const char *s, tm_device *out);
/* How many devices of `type` this process can use (0 when its backend is
 * not loaded). */
int tm_device_count(tm_device_type type);
/* True when the device's backend is loaded and the device opens.  When
 * false, tm_last_error() says why. */
bool tm_device_available(tm_device dev);
/* Waits until every piece of work queued on `dev` has finished, then
 * reports the first error that work hit since the last synchronization
 * (and clears it).  The CPU runs work as it is called: always TM_OK. */
tm_status tm_synchronize(tm_device dev);

/* Memory of one device as Foundry's caching allocator sees it (the
 * counters of base.h's tm_mem_stats; for the CPU, the host allocator's).
 * Blocks freed on an accelerator stay cached by device and size class for
 * reuse, up to a limit (default 1 GiB); when the backend runs out, the
 * cache is emptied and the allocation retried once. */
tm_status tm_device_memory_stats(tm_device dev, tm_mem_stats *out);
/* Returns every cached block of `dev` to its backend. */
tm_status tm_device_empty_cache(tm_device dev);
/* Caps the bytes `dev` keeps cached; blocks beyond it go back at once. */
tm_status tm_device_set_cache_limit(tm_device dev, size_t bytes);

typedef struct tm_tensor tm_tensor;
typedef struct tm_storage tm_storage;

/* ------------------------------------------------------------ reference */

/* Adds a reference; returns `t` (NULL for NULL). */
tm_tensor *tm_retain(tm_tensor *t);
/* Drops one reference.  tm_free(NULL) is a no-op. */
void tm_free(tm_tensor *t);

/* --------------------------------------------------------------- getters */

int tm_ndim(const tm_tensor *t);
/* Borrowed arrays of tm_ndim(t) entries. */
const int64_t *tm_shape(const tm_tensor *t);
const int64_t *tm_strides(const tm_tensor *t);
/* Size / stride of one dim (negative dims allowed); -1 with an error set if
 * the dim is out of range. */
int64_t tm_size(const tm_tensor *t, int dim);
int64_t tm_stride(const tm_tensor *t, int dim);
int64_t tm_numel(const tm_tensor *t);
/* numel * element size. */
size_t tm_nbytes(const tm_tensor *t);
/* Offset of the first element from the start of storage, in elements. */
int64_t tm_offset(const tm_tensor *t);
tm_dtype tm_dtype_of(const tm_tensor *t);
tm_device tm_device_of(const tm_tensor *t);
/* Address of the first element of a CPU tensor.  Borrowed.  NULL (with
 * TM_EDEVICE set) for a tensor on another device: its memory is not host
 * memory — copy it with tm_to(t, TM_CPU) or tm_copy_to_buffer. */
void *tm_data(const tm_tensor *t);
/* True when the elements are laid out row-major without gaps. */
bool tm_is_contiguous(const tm_tensor *t);
/* Writes "f32[2,3]" (plus ", strides [1,2]" when not contiguous) into buf;
 * returns buf. */
char *tm_describe(const tm_tensor *t, char *buf, size_t size);

/* ---------------------------------------------------------------- storage */

typedef enum tm_storage_kind {
    TM_STORAGE_OWNED = 0,    /* aligned memory from Foundry's allocator */
    TM_STORAGE_BORROWED = 1, /* caller memory, released through a callback */
    TM_STORAGE_MAPPED = 2,   /* a file mapping shared by tensors cut from it */
    TM_STORAGE_DEVICE = 3    /* memory of a device backend */
} tm_storage_kind;

/* Called once when storage wrapping outside memory dies. */
typedef void (*tm_release_fn)(void *data, void *user);

/* Wraps `nbytes` of outside memory at `data` as storage of `kind`
 * (BORROWED or MAPPED, CPU).  `release` (may be NULL) is called with
 * (data, user) when the last reference goes — also when this call fails.
 * Returns a new storage reference; release with tm_storage_free. */
tm_storage *tm_storage_wrap(void *data, size_t nbytes, tm_storage_kind kind,
                            tm_release_fn release, void *user);
/* Drops one storage reference (NULL is a no-op). */
void tm_storage_free(tm_storage *s);
/* Borrowed storage of a tensor. */
tm_storage *tm_storage_of(const tm_tensor *t);
/* How the storage was obtained (NULL: TM_STORAGE_OWNED with an error set). */
tm_storage_kind tm_storage_kind_of(const tm_storage *s);
size_t tm_storage_nbytes(const tm_storage *s);
/* Marks storage read-only for good: every in-place write through any
 * tensor viewing it then fails with TM_ESTATE (reads and copies are fine).
 * For read-only arrays and file mappings.  NULL is a no-op. */
void tm_storage_set_readonly(tm_storage *s);
bool tm_storage_is_readonly(const tm_storage *s);
/* A tensor viewing `s` (which gains a reference): `shape`/`strides`
 * (strides NULL: contiguous) in elements, starting `offset` elements in.
 * Every reachable element must lie inside the storage.  New reference. */
tm_tensor *tm_tensor_from_storage(tm_storage *s, int64_t offset,
                                  const int64_t *shape,
                                  const int64_t *strides, int ndim,
                                  tm_dtype dt);

/* --------------------------------------------------------------- creation
 * `shape` has `ndim` entries (ndim 0: a scalar; shape may be NULL then).
 * Every creation function returns a new reference, or NULL on bad sizes
 * (negative, product overflowing int64 / size_t, ndim > TM_MAX_DIMS),
 * invalid dtypes, or out of memory. */

/* Uninitialised memory. */
tm_tensor *tm_empty(const int64_t *shape, int ndim, tm_dtype dt);
tm_tensor *tm_zeros(const int64_t *shape, int ndim, tm_dtype dt);
tm_tensor *tm_ones(const int64_t *shape, int ndim, tm_dtype dt);
/* Every element `value`, converted as tm_to_dtype converts. */
tm_tensor *tm_full(const int64_t *shape, int ndim, double value, tm_dtype dt);
/* A 0-d tensor holding `value`. */
tm_tensor *tm_scalar(double value, tm_dtype dt);
/* tm_empty / tm_full on device `dev` (created there: no host copy). */
tm_tensor *tm_empty_on(const int64_t *shape, int ndim, tm_dtype dt,
                       tm_device dev);
tm_tensor *tm_full_on(const int64_t *shape, int ndim, double value,
                      tm_dtype dt, tm_device dev);
/* Same shape, dtype and device as `t`, contiguous. */
tm_tensor *tm_empty_like(const tm_tensor *t);
tm_tensor *tm_zeros_like(const tm_tensor *t);
tm_tensor *tm_ones_like(const tm_tensor *t);
tm_tensor *tm_full_like(const tm_tensor *t, double value);
/* Values start, start+step, ... while < end (> end for negative step);
 * ceil((end-start)/step) elements.  step 0 is an error. */
tm_tensor *tm_arange(double start, double end, double step, tm_dtype dt);
/* `steps` evenly spaced values from start to end inclusive.  arange and
 * linspace refuse TM_BOOL (TM_EUNSUPPORTED, as PyTorch). */
tm_tensor *tm_linspace(double start, double end, int64_t steps, tm_dtype dt);
/* n x m with ones on the main diagonal (m < 0: m = n). */
tm_tensor *tm_eye(int64_t n, int64_t m, tm_dtype dt);
/* A contiguous tensor with a copy of `data`, which holds numel elements of
 * `dt` in row-major order. */
tm_tensor *tm_from_buffer(const void *data, const int64_t *shape, int ndim,
                          tm_dtype dt);
/* A tensor over caller memory without copying.  `strides` may be NULL
 * (contiguous).  `release` (may be NULL) runs with (data, user) when the
 * storage dies — also when this call fails, so ownership always passes.
 * Negative strides are rejected. */
tm_tensor *tm_wrap(void *data, const int64_t *shape, const int64_t *strides,
                   int ndim, tm_dtype dt, tm_release_fn release, void *user);

/* ------------------------------------------------------------ conversion */

/* A contiguous copy of `t` converted to `dt`.  F16/BF16 round to nearest
 * even; NaN and Inf are preserved between float types.  Float to integer
 * truncates toward zero, saturates at the integer's range and maps NaN to
 * 0; anything to BOOL is (x != 0); BOOL is 0 or 1.  Always a new tensor. */
tm_tensor *tm_to_dtype(const tm_tensor *t, tm_dtype dt);
/* `t` on `dev` (a new reference to `t` itself when already there).  A copy
 * off an accelerator waits for it and reports its pending error (a host
 * synchronization point); a copy onto one is queued. */
tm_tensor *tm_to(const tm_tensor *t, tm_device dev);
/* Copies `src` into `dst` in place: src broadcast to dst's shape and
 * converted to dst's dtype.  Overlapping memory is handled. */
tm_status tm_copy_(tm_tensor *dst, const tm_tensor *src);
/* Fills `dst` with `value` (converted to its dtype). */
tm_status tm_fill_(tm_tensor *dst, double value);
/* Copies the elements of `t` in row-major order, converted to `dt`, into
 * `dst` (`size` bytes, which must be at least numel * size of dt).  Waits
 * for t's device (a host synchronization point). */
tm_status tm_copy_to_buffer(const tm_tensor *t, void *dst, size_t size,
                            tm_dtype dt);
/* The single element of a one-element tensor, as double / int64.  Waits
 * for t's device (a host synchronization point), as tm_get does. */
tm_status tm_item(const tm_tensor *t, double *out);
tm_status tm_item_i64(const tm_tensor *t, int64_t *out);
/* Element at multi-index idx[ndim] (negative indices allowed). */
tm_status tm_get(const tm_tensor *t, const int64_t *idx, double *out);
tm_status tm_set(tm_tensor *t, const int64_t *idx, double value);

/* ----------------------------------------------------------------- views
 * All views return a new reference sharing storage with `t` (no copy),
 * except where marked "may copy". */

/* Swaps two dims. */
tm_tensor *tm_transpose(const tm_tensor *t, int dim0, int dim1);
/* Reorders dims: result dim i is t's dim dims[i]. */
tm_tensor *tm_permute(const tm_tensor *t, const int *dims, int ndim);
/* A view with a new shape (one entry may be -1 and is inferred).  Fails
 * with TM_ESHAPE if the strides do not allow a view (use tm_reshape). */
tm_tensor *tm_view(const tm_tensor *t, const int64_t *shape, int ndim);
/* Like tm_view, but copies when no view is possible.  May copy. */
tm_tensor *tm_reshape(const tm_tensor *t, const int64_t *shape, int ndim);
/* Merges dims start..end (inclusive) into one.  May copy. */
tm_tensor *tm_flatten(const tm_tensor *t, int start_dim, int end_dim);
/* Elements start, start+step, ... before stop along `dim`, with Python
 * semantics: negative start/stop count from the end, out-of-range values
 * clamp, TM_END means the end.  step must be >= 1. */
tm_tensor *tm_slice(const tm_tensor *t, int dim, int64_t start, int64_t stop,
                    int64_t step);
/* `length` elements from `start` along `dim` (start may be negative);
 * out-of-range is an error, unlike tm_slice. */
tm_tensor *tm_narrow(const tm_tensor *t, int dim, int64_t start,
                     int64_t length);
/* Removes `dim` by picking `index` (negative counts from the end). */
tm_tensor *tm_select(const tm_tensor *t, int dim, int64_t index);
/* Removes `dim` if it has size 1 (otherwise returns a plain view). */
tm_tensor *tm_squeeze(const tm_tensor *t, int dim);
/* Removes every size-1 dim. */
tm_tensor *tm_squeeze_all(const tm_tensor *t);
/* Inserts a size-1 dim at `dim` (-1: at the end). */
tm_tensor *tm_unsqueeze(const tm_tensor *t, int dim);
/* Repeats size-1 dims to `shape` with stride 0; new leading dims may be
 * added; -1 keeps a dim's size. */
tm_tensor *tm_expand(const tm_tensor *t, const int64_t *shape, int ndim);
/* Like tm_expand with numpy rules (no -1 entries). */
tm_tensor *tm_broadcast_to(const tm_tensor *t, const int64_t *shape, int ndim);
/* Any shape and strides over t's storage, starting `offset` elements into
 * the storage (absolute, as in PyTorch).  Every reachable element must lie
 * inside the storage; negative strides are rejected. */
tm_tensor *tm_as_strided(const tm_tensor *t, const int64_t *shape,
                         const int64_t *strides, int ndim, int64_t offset);
/* A contiguous tensor with t's values: a new reference to `t` itself if it
 * already is contiguous, else a copy.  May copy. */
tm_tensor *tm_contiguous(const tm_tensor *t);
/* Always a contiguous copy. */
tm_tensor *tm_clone(const tm_tensor *t);

/* The broadcast of two shapes by numpy rules into out[TM_MAX_DIMS];
 * *out_ndim gets its length.  TM_ESHAPE if they do not broadcast. */
tm_status tm_broadcast_shapes(const int64_t *a, int na, const int64_t *b,
                              int nb, int64_t *out, int *out_ndim);

#ifdef __cplusplus
}
#endif
#endif
