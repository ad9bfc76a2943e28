/*
 * file_out.h — writing a file atomically: everything goes to a new
 * temporary file beside the target, which is fsynced, closed and renamed
 * over it only when every byte is written, so a failed write (a full
 * disk, a tensor that cannot be copied to the host, out of memory) leaves
 * the old file, or none, and no partial one.  Shared by the safetensors
 * and GGUF writers.  Not installed.
 */
#ifndef FOUNDRY_FILE_OUT_H
#define FOUNDRY_FILE_OUT_H

#include "foundry/tensor.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct tm__file_out {
    int fd;           /* -1 once closed */
    char *tmp;        /* the temporary's path (library allocator) */
    const char *path; /* borrowed: the target */
    const char *fn;   /* the public function, for messages */
} tm__file_out;

/* Creates "<path>.tmp.<pid>.<k>" (never an existing file), with the mode
 * of an existing regular file at `path`, or 0666 less the umask. */
tm_status tm__file_out_open(tm__file_out *f, const char *fn,
                            const char *path);
tm_status tm__file_out_write(tm__file_out *f, const void *data, size_t n);
/* n zero bytes. */
tm_status tm__file_out_pad(tm__file_out *f, size_t n);
/* The first `nbytes` bytes of tensor `t`'s row-major contents: a tensor on
 * another device is copied to the host first (a synchronization point). */
tm_status tm__file_out_tensor(tm__file_out *f, tm_tensor *t, size_t nbytes);
/* fsync (when `sync`), close, rename over the target, then a best-effort
 * fsync of its directory (when `sync`).  On failure the temporary is
 * removed.  Either way `f` is finished. */
tm_status tm__file_out_commit(tm__file_out *f, bool sync);
/* Closes and removes the temporary (after a failed write).  Safe on a
 * finished or never-opened (zeroed, fd -1) `f`. */
void tm__file_out_abort(tm__file_out *f);

/* strerror_r into buf, or "errno N" when it fails.  Returns buf. */
char *tm__io_strerror(int err, char *buf, size_t size);

#endif
