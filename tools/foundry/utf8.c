/* Streaming text: how much of a decoded prefix can be printed now. */
#include "cli.h"

size_t cli_utf8_complete(const unsigned char *s, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char b = s[n - back];
        if ((b & 0xC0) != 0x80) {
            size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
            return need > back ? n - back : n;
        }
    }
    return n;
}
