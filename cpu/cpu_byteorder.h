/*
 * cpu_byteorder.h — the CPU kernel of the io front ends (internal):
 * decoding a file's big-endian elements into a tensor's host order.
 *
 * io/ parses a file's header and checks its sizes; the loop over the
 * elements is a kernel, so it lives here.  A file's bytes are host memory,
 * so io/idx.c decodes them into a host block that a CPU tensor then owns
 * (tm_to moves it to another device).
 */
#ifndef FOUNDRY_CPU_BYTEORDER_H
#define FOUNDRY_CPU_BYTEORDER_H

#include <stddef.h>
#include <stdint.h>

/* src is (N) big-endian elements of es bytes (1, 2, 4 or 8), dst is (N)
 * elements of the same size in host order; they do not overlap.
 * Unaligned dst is fine (bytes are stored with memcpy). */
void tm__decode_big_endian(void *dst, const uint8_t *src, size_t n,
                           size_t es);

#endif
