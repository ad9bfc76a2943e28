/*
 * foundry/io.h — reading and writing weights and data sets.
 *
 * Every reader here treats its input as untrusted: a malformed file gives
 * NULL or a negative tm_status with a message naming the file and the
 * problem, never a crash.  Failures follow foundry/base.h.
 */
#ifndef FOUNDRY_IO_H
#define FOUNDRY_IO_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ safetensors
 *
 * The safetensors format (Hugging Face): 8 bytes of little-endian header
 * length N, N bytes of UTF-8 JSON naming each tensor's dtype, shape and
 * byte range, then the tensor bytes (row-major, little-endian).
 *
 *   tm_safetensors *f = tm_safetensors_open("model.safetensors");
 *   tm_tensor *w = tm_safetensors_get(f, "fc.weight"); // view, no copy
 *   tm_safetensors_close(f);                           // w stays valid
 *   ... use w (read-only) ...
 *   tm_free(w);                                        // unmaps at last
 *
 * Opening maps the file read-only and validates the whole header before
 * returning (see docs/safetensors.md for every rule): header length at most
 * 100,000,000 bytes and inside the file; valid UTF-8; a JSON object (strict
 * parser: no duplicate keys, trailing commas or NaN); known dtype names;
 * byte ranges that are sorted-contiguous from 0 and cover the data section
 * exactly; shape x dtype size equal to each range, every product
 * overflow-checked (zeros counted as 1, so strides fit too); at most
 * TM_MAX_DIMS dims, none negative; "__metadata__" an object of string
 * values; no NUL characters in names, keys or values.
 *
 * Every dtype of the format is recognised, so such files open and list.
 * Foundry can represent F32 F64 F16 BF16 I8 U8 I16 I32 I64 BOOL; reading a
 * tensor of any other dtype (U16 U32 U64, the F8 / F6 / F4 variants, C64)
 * fails with TM_EDTYPE ("unsupported dtype").
 *
 * The file's mapping is one reference-counted, read-only storage shared by
 * every tensor cut from it: it lives until the handle is closed and the last
 * such tensor is freed, in any order.  Do not truncate or rewrite a mapped
 * file in place (tm_safetensors_save replaces files by rename, which is
 * safe).  A handle may be read from several threads at once.  Hosts must be
 * little-endian (others get TM_EUNSUPPORTED). */

typedef struct tm_safetensors tm_safetensors;

/* Maps and validates the file at `path`.  Returns a new handle (release
 * with tm_safetensors_close), or NULL: TM_EIO when the file cannot be
 * opened or mapped, TM_EFORMAT when it is malformed, TM_ENOMEM. */
tm_safetensors *tm_safetensors_open(const char *path);
/* Same, over a copy of the `size` bytes at `data` (the caller's buffer is
 * not kept).  Messages name the source "<memory>". */
tm_safetensors *tm_safetensors_open_memory(const void *data, size_t size);
/* Releases the handle (NULL is a no-op).  Tensors from tm_safetensors_get
 * stay valid; names and metadata strings from the handle do not. */
void tm_safetensors_close(tm_safetensors *f);

/* Number of tensors. */
int tm_safetensors_count(const tm_safetensors *f);
/* Name of tensor i (0 <= i < count; in file order, by byte offset).
 * Borrowed until close.  NULL with TM_ERANGE when i is out of range. */
const char *tm_safetensors_name(const tm_safetensors *f, int i);
/* Index of the tensor called `name`, or -1 with TM_EINVAL set when there is
 * none. */
int tm_safetensors_find(const tm_safetensors *f, const char *name);
/* The file's dtype name of tensor i ("F32", "F8_E4M3", ...).  Static
 * string; NULL with TM_ERANGE when i is out of range. */
const char *tm_safetensors_dtype_name(const tm_safetensors *f, int i);
/* The Foundry dtype of tensor i in *out; TM_EDTYPE when Foundry has none
 * for it (the tensor can be listed but not read). */
tm_status tm_safetensors_dtype(const tm_safetensors *f, int i, tm_dtype *out);
/* Number of dims of tensor i (-1 with TM_ERANGE when i is out of range). */
int tm_safetensors_ndim(const tm_safetensors *f, int i);
/* Borrowed array of tm_safetensors_ndim(f, i) sizes; valid until close.
 * NULL for out-of-range i (and possibly for 0-d tensors). */
const int64_t *tm_safetensors_shape(const tm_safetensors *f, int i);
/* Byte range [*begin, *end) of tensor i within the data section, which
 * starts at byte *data_start of the file (any pointer may be NULL). */
tm_status tm_safetensors_offsets(const tm_safetensors *f, int i,
                                 uint64_t *begin, uint64_t *end,
                                 uint64_t *data_start);

/* True when the header holds a "__metadata__" object (even an empty one). */
bool tm_safetensors_has_metadata(const tm_safetensors *f);
/* Number of metadata entries (0 when there is no "__metadata__"). */
int tm_safetensors_metadata_count(const tm_safetensors *f);
/* Key / value of metadata entry i, in header order.  Borrowed until close;
 * NULL with TM_ERANGE when i is out of range. */
const char *tm_safetensors_metadata_key(const tm_safetensors *f, int i);
const char *tm_safetensors_metadata_value(const tm_safetensors *f, int i);
/* The value for `key`, or NULL (no error recorded) when absent. */
const char *tm_safetensors_metadata_get(const tm_safetensors *f,
                                        const char *key);

/* Tensor `name` as a view onto the mapping (no copy).  New reference;
 * release with tm_free.  Its storage is read-only: in-place writes fail
 * with TM_ESTATE (copy it, e.g. with tm_contiguous, to get a writable
 * tensor).  When the tensor's bytes are not aligned to its element size
 * within the file (never for files written by Foundry or by the
 * safetensors package) it is copied instead, and the copy is read-only too;
 * an empty tensor comes back as a fresh read-only empty tensor.
 * NULL with TM_EINVAL (no such name) or TM_EDTYPE (unsupported dtype). */
tm_tensor *tm_safetensors_get(const tm_safetensors *f, const char *name);
/* Tensor `name` copied into a new, writable, contiguous tensor that does
 * not keep the mapping alive.  New reference; release with tm_free. */
tm_tensor *tm_safetensors_load(const tm_safetensors *f, const char *name);

/* Writes tensors[n] under names[n] to `path`, with metadata pairs
 * (meta_keys[i], meta_values[i]) for i < nmeta, the way the reference
 * writer does: tensors ordered by dtype (largest alignment first, as the
 * reference orders its dtypes) then by name (bytewise), compact JSON with
 * "__metadata__" first, header padded with spaces to a multiple of 8, data
 * contiguous from offset 0.  meta_keys NULL writes no "__metadata__";
 * non-NULL with nmeta 0 writes an empty one.  Non-contiguous tensors are
 * written as their contiguous copies; tensors must be on the CPU.
 *
 * Atomic: the bytes go to a new file beside `path` which is flushed to disk
 * (fsync) and then renamed over `path`; on any failure the temporary file
 * is removed and an existing file at `path` is left untouched.  Readers
 * that still map the old file keep seeing the old bytes.  An existing
 * file's permission bits are kept; a new file gets 0666 less the umask.
 *
 * Names and metadata strings must be valid UTF-8; names must be unique and
 * not "__metadata__"; metadata keys must be unique.  Returns TM_OK, or
 * TM_EINVAL / TM_EDTYPE / TM_EDEVICE for bad arguments, TM_EIO (with the
 * system's reason) for file errors, TM_ENOMEM. */
tm_status tm_safetensors_save(const char *path, const char *const *names,
                              tm_tensor *const *tensors, int n,
                              const char *const *meta_keys,
                              const char *const *meta_values, int nmeta);

/* Flags of tm_safetensors_save_ex. */
#define TM_SAVE_NO_SYNC 1u /* skip the fsync of the file and its directory */
/* tm_safetensors_save with flags (0: the same as tm_safetensors_save).
 * TM_SAVE_NO_SYNC leaves the data to the page cache, as the reference
 * writer does: the temporary file and the rename still make the save
 * atomic for readers and against the process dying, but not against power
 * loss or an OS crash.  The fsync otherwise costs the time the disk needs
 * to take the whole file (0.6 to 2.3 s per GB measured here). */
tm_status tm_safetensors_save_ex(const char *path, const char *const *names,
                                 tm_tensor *const *tensors, int n,
                                 const char *const *meta_keys,
                                 const char *const *meta_values, int nmeta,
                                 unsigned flags);

/* -------------------------------------------------- end of safetensors */

/* -------------------------------------------------------------------- IDX
 * IDX files, the format of MNIST and Fashion-MNIST: bytes 0, 0, a type
 * code (08 u8, 09 i8, 0b i16, 0c i32, 0d f32, 0e f64), ndim (1..8); ndim
 * big-endian uint32 dims; the elements, big-endian, row-major.  gzip
 * files (*.gz, recognised by their magic 1f 8b, not by name) are
 * decompressed by Foundry's own inflate (RFC 1951/1952, CRC-32 and size
 * checked), so the dataset files can be read as shipped.
 *
 *   tm_tensor *x = tm_idx_load("/usr/share/datasets/fashion-mnist/"
 *                              "train-images-idx3-ubyte.gz");  // [60000,28,28] U8
 *
 * The header is validated: magic and type, ndim, dims whose product
 * overflows, and the size, which must be exactly header + payload; errors
 * (TM_EFORMAT, TM_EOVERFLOW; TM_EIO for file errors) name the file and
 * the numbers ("'x.idx': size 800 bytes != header 12 + payload 784 (u8
 * [28,28])").  Corrupt gzip data fails with TM_EFORMAT naming the fault
 * (bad CRC, truncated, invalid block type, invalid code lengths, distance
 * too far back).  Returns a new contiguous CPU tensor (release with
 * tm_free) in the file's dtype, or NULL. */
tm_tensor *tm_idx_load(const char *path);
/* Same from n bytes in memory (borrowed; raw or gzip). */
tm_tensor *tm_idx_load_buffer(const void *bytes, size_t n);

/* ------------------------------------------------------------ end of IDX */

#ifdef __cplusplus
}
#endif
#endif
