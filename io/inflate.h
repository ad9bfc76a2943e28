/*
 * inflate.h — DEFLATE decompression (RFC 1951) with the zlib (RFC 1950)
 * and gzip (RFC 1952) wrappers, for readers of compressed files (IDX
 * datasets).  Internal; never installed.
 *
 * Every function reads only in[0..n) and writes only its own output
 * buffer, whatever the bytes are; output beyond max_out bytes is an error,
 * so a small hostile input cannot claim large memory.  On success *out is
 * a tm__alloc'd buffer (release with tm__dealloc) of *out_n bytes; on
 * failure nothing is allocated and the error (TM_EFORMAT for bad data,
 * TM_ENOMEM, TM_EOVERFLOW for the limit) names `fn` and starts with
 * "<what>: " (a file name or "buffer").
 */
#ifndef FOUNDRY_IO_INFLATE_H
#define FOUNDRY_IO_INFLATE_H

#include "foundry/base.h"

#include <stddef.h>
#include <stdint.h>

/* CRC-32 (ISO-HDLC, as gzip and zlib.crc32) of p[n], continuing `crc`
 * (start with 0). */
uint32_t tm__crc32(uint32_t crc, const void *p, size_t n);

/* True when the bytes start with the gzip magic 1f 8b. */
bool tm__is_gzip(const void *in, size_t n);

/* A gzip file: one or more members, each with its CRC-32 and ISIZE
 * checked; header flags FTEXT, FHCRC (checked), FEXTRA, FNAME, FCOMMENT.
 * Bytes after the last member are an error. */
tm_status tm__gunzip(const void *in, size_t n, size_t max_out,
                     uint8_t **out, size_t *out_n, const char *fn,
                     const char *what);
/* A zlib stream (header check, no preset dictionary, Adler-32 checked). */
tm_status tm__zlib_uncompress(const void *in, size_t n, size_t max_out,
                              uint8_t **out, size_t *out_n, const char *fn,
                              const char *what);
/* A raw DEFLATE stream; *consumed (may be NULL) gets the number of input
 * bytes up to the end of the final block. */
tm_status tm__inflate_raw(const void *in, size_t n, size_t max_out,
                          uint8_t **out, size_t *out_n, size_t *consumed,
                          const char *fn, const char *what);

#endif
