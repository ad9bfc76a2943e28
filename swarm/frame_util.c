/* frame_util.c — the monotonic clock, system randomness and
 * message-type names for the SWRM frames (frame.h). */
#include <sys/random.h>

#include "frame.h"

#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t tm__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

tm_status tm__random_bytes(void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        ssize_t r = getrandom(b, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        b += r;
        n -= (size_t)r;
    }
    if (!n) return TM_OK;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return TM_ERR(TM_EIO, "no system random source: %s", strerror(errno));
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            close(fd);
            return TM_ERR(TM_EIO, "reading /dev/urandom failed");
        }
        b += r;
        n -= (size_t)r;
    }
    close(fd);
    return TM_OK;
}

const char *tm__swrm_type_name(int type)
{
    static const char *names[] = {"?",         "HELLO",  "CHALLENGE", "PROOF",
                                  "WELCOME",   "JOIN",   "CONFIG",    "STATE",
                                  "STATE_REQ", "TOPK",   "DENSE",     "UPDATE",
                                  "HEARTBEAT", "LEAVE",  "ERROR"};
    return type >= 1 && type < TM__SWRM_TYPE_END ? names[type] : "unknown";
}
