/* cpu_byteorder.c — big-endian elements to host order (cpu_byteorder.h).
 * The value is assembled byte by byte, most significant first, so the
 * same code is right on little- and big-endian hosts. */
#include "cpu_byteorder.h"

#include <string.h>

void tm__decode_big_endian(void *dst, const uint8_t *src, size_t n,
                           size_t es)
{
    uint8_t *o = dst;
    if (es == 1) {
        if (n) memcpy(o, src, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (size_t k = 0; k < es; k++) v = v << 8 | src[i * es + k];
        if (es == 2) {
            uint16_t u = (uint16_t)v;
            memcpy(o + i * 2, &u, 2);
        } else if (es == 4) {
            uint32_t u = (uint32_t)v;
            memcpy(o + i * 4, &u, 4);
        } else {
            memcpy(o + i * 8, &v, 8);
        }
    }
}
