/* file_map.c — read-only whole-file mappings (file_map.h). */
#include "file_map.h"

#include "file_out.h"

#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool tm__host_le(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

tm_status tm__file_map(const char *fn, const char *path, size_t min_size,
                       void **base, size_t *size)
{
    char why[128];
    *base = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return tm__errf(TM_EIO, fn, "%s: cannot open: %s", path,
                        tm__io_strerror(errno, why, sizeof why));
    struct stat sb;
    tm_status st = TM_OK;
    if (fstat(fd, &sb) != 0) {
        st = tm__errf(TM_EIO, fn, "%s: cannot stat: %s", path,
                      tm__io_strerror(errno, why, sizeof why));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = tm__errf(TM_EIO, fn, "%s: not a regular file", path);
        goto done;
    }
    if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
        st = tm__errf(TM_EOVERFLOW, fn, "%s: file of %lld bytes does not fit "
                      "in memory", path, (long long)sb.st_size);
        goto done;
    }
    *size = (size_t)sb.st_size;
    if (*size < min_size || *size == 0) goto done;
    void *map = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        st = tm__errf(TM_EIO, fn, "%s: cannot map %zu bytes: %s", path,
                      *size, tm__io_strerror(errno, why, sizeof why));
        goto done;
    }
    *base = map;
done:
    close(fd);
    return st;
}
