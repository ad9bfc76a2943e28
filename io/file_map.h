/*
 * file_map.h — mapping a whole file read-only, for the readers that hand
 * out zero-copy tensors (safetensors, GGUF).  Not installed.
 */
#ifndef FOUNDRY_FILE_MAP_H
#define FOUNDRY_FILE_MAP_H

#include "foundry/base.h"

#include <stdbool.h>
#include <stddef.h>

/* Maps `path`, which must be a regular file (opened without blocking, so
 * a FIFO cannot hang the caller), privately and read-only into *base,
 * *size bytes.  A file shorter than `min_size` (>= 1: mmap cannot map 0
 * bytes) is not mapped: TM_OK with *base NULL and *size its length, so the
 * caller names the problem in its format's words.  Errors (TM_EIO,
 * TM_EOVERFLOW) name `fn` and the path.  Release with munmap. */
tm_status tm__file_map(const char *fn, const char *path, size_t min_size,
                       void **base, size_t *size);
/* True on a little-endian host (the formats' byte order). */
bool tm__host_le(void);

#endif
