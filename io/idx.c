/*
 * idx.c — IDX files (the MNIST / Fashion-MNIST format), raw or gzipped
 * (foundry/io.h).  Layout: bytes 0, 0, a type code, ndim; ndim big-endian
 * uint32 dims; the elements, big-endian, row-major.  The header is parsed
 * and checked here; the elements are decoded into host order by a CPU
 * kernel (cpu/cpu_byteorder.c).
 */
#include "foundry/io.h"

#include "../tensor/core/tensor_impl.h"
#include "../cpu/cpu_byteorder.h"
#include "inflate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void release_block(void *data, void *user)
{
    (void)user;
    tm__dealloc(data);
}

static bool idx_dtype(int code, tm_dtype *dt)
{
    switch (code) {
    case 0x08: *dt = TM_U8; return true;
    case 0x09: *dt = TM_I8; return true;
    case 0x0B: *dt = TM_I16; return true;
    case 0x0C: *dt = TM_I32; return true;
    case 0x0D: *dt = TM_F32; return true;
    case 0x0E: *dt = TM_F64; return true;
    }
    return false;
}

static tm_tensor *parse(const uint8_t *b, size_t n, const char *fn,
                        const char *what)
{
    char sb[TM_SHAPE_BUF];
    if (n < 4) {
        tm__errf(TM_EFORMAT, fn, "%s: %zu bytes is too short for an IDX "
                 "header (4 + 4 * ndim bytes)", what, n);
        return NULL;
    }
    uint32_t magic = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
                     (uint32_t)b[2] << 8 | b[3];
    tm_dtype dt;
    if (b[0] != 0 || b[1] != 0 || !idx_dtype(b[2], &dt)) {
        tm__errf(TM_EFORMAT, fn, "%s: bad IDX magic 0x%08x (want "
                 "0x00000800 | type << 8 | ndim, type one of 08 09 0b 0c "
                 "0d 0e)", what, (unsigned)magic);
        return NULL;
    }
    int ndim = b[3];
    if (ndim < 1 || ndim > TM_MAX_DIMS) {
        tm__errf(TM_EFORMAT, fn, "%s: IDX ndim %d out of range [1, %d]",
                 what, ndim, TM_MAX_DIMS);
        return NULL;
    }
    size_t header = 4 + 4 * (size_t)ndim;
    if (n < header) {
        tm__errf(TM_EFORMAT, fn, "%s: %zu bytes is too short for an IDX "
                 "header of %d dims (%zu bytes)", what, n, ndim, header);
        return NULL;
    }
    int64_t shape[TM_MAX_DIMS], numel;
    for (int d = 0; d < ndim; d++) {
        const uint8_t *p = b + 4 + 4 * d;
        shape[d] = (int64_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                             (uint32_t)p[2] << 8 | p[3]);
    }
    /* Strides multiply the non-zero dims even when another dim is 0, so
     * their product must fit too (dims are < 2^32, the check is exact). */
    int64_t strided = 1;
    bool too_big = false;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] > 1 && strided > INT64_MAX / shape[d]) too_big = true;
        else if (shape[d] > 1) strided *= shape[d];
    }
    if (too_big || tm__check_shape(fn, shape, ndim, dt, &numel) != TM_OK) {
        tm__errf(TM_EOVERFLOW, fn, "%s: IDX dims %s are too large", what,
                 tm__fmt_shape(shape, ndim, sb, sizeof sb));
        return NULL;
    }
    size_t es = tm_dtype_size(dt), payload = (size_t)numel * es;
    if (n - header != payload) {
        tm__errf(TM_EFORMAT, fn, "%s: size %zu bytes != header %zu + "
                 "payload %zu (%s %s)", what, n, header, payload,
                 tm_dtype_name(dt),
                 tm__fmt_shape(shape, ndim, sb, sizeof sb));
        return NULL;
    }
    /* decoded into a host block that the tensor then owns */
    void *host = tm__alloc(payload, fn);
    if (!host) return NULL;
    tm__decode_big_endian(host, b + header, (size_t)numel, es);
    tm_tensor *t = tm_wrap(host, shape, NULL, ndim, dt, release_block, NULL);
    if (!t) tm__relabel_error(fn, tm_last_status());
    return t;
}

/* Deflate cannot expand more than about 1032:1; with a margin this bounds
 * what a hostile gzip stream can make us allocate. */
static size_t out_limit(size_t n)
{
    size_t lim = n < (SIZE_MAX - 4096) / 1100 ? n * 1100 + 4096 : SIZE_MAX;
    return lim;
}

static tm_tensor *load_bytes(const void *bytes, size_t n, const char *fn,
                             const char *what)
{
    if (!tm__is_gzip(bytes, n)) return parse(bytes, n, fn, what);
    uint8_t *raw = NULL;
    size_t rn = 0;
    if (tm__gunzip(bytes, n, out_limit(n), &raw, &rn, fn, what) != TM_OK)
        return NULL;
    tm_tensor *t = parse(raw, rn, fn, what);
    tm__dealloc(raw);
    return t;
}

tm_tensor *tm_idx_load_buffer(const void *bytes, size_t n)
{
    if (!bytes && n) {
        TM_ERR(TM_EINVAL, "bytes is NULL");
        return NULL;
    }
    return load_bytes(bytes ? bytes : "", n, __func__, "buffer");
}

tm_tensor *tm_idx_load(const char *path)
{
    if (!path) {
        TM_ERR(TM_EINVAL, "path is NULL");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        TM_ERR(TM_EIO, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    tm_tensor *t = NULL;
    uint8_t *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        TM_ERR(TM_EIO, "cannot get the size of '%s': %s", path,
               strerror(errno));
        goto done;
    }
    buf = tm__alloc((size_t)size ? (size_t)size : 1, __func__);
    if (!buf) goto done;
    if (size && fread(buf, 1, (size_t)size, f) != (size_t)size) {
        TM_ERR(TM_EIO, "cannot read '%s' (%ld bytes)", path, size);
        goto done;
    }
    char what[512]; /* messages quote the file name */
    snprintf(what, sizeof what, "'%s'", path);
    t = load_bytes(buf, (size_t)size, __func__, what);
done:
    tm__dealloc(buf);
    fclose(f);
    return t;
}
