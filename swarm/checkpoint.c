/* checkpoint.c — the coordinator's checkpoint: the swarm's settings and
 * model fingerprint with its latest snapshot, in DIR/swarm.ckpt:
 *   "SWCK", u32 version 1, the 120-byte JOIN record (numel, fingerprint,
 *   round and hash of the snapshot, settings), u32 snapshot bytes, the
 *   snapshot (a STATE payload), u32 CRC32 of everything before it.
 * Written to a temporary file, flushed and renamed, so a crash leaves the
 * previous checkpoint whole. */
#include "coordinator_impl.h"

#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static tm_status write_all(int fd, const void *p, size_t n, uint32_t *crc)
{
    *crc = tm__crc32(*crc, p, n);
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return TM_ERR(TM_EIO, "write: %s", strerror(errno));
        b += w;
        n -= (size_t)w;
    }
    return TM_OK;
}

tm_status tm__co_save(tm_swarm_coordinator *co)
{
    char path[600], tmp[620];
    snprintf(path, sizeof path, "%s/swarm.ckpt", co->ckpt);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (mkdir(co->ckpt, 0777) != 0 && errno != EEXIST)
        return TM_ERR(TM_EIO, "cannot create %s: %s", co->ckpt, strerror(errno));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return TM_ERR(TM_EIO, "cannot write %s: %s", tmp, strerror(errno));
    uint8_t head[8 + TM__SWARM_JOIN_BYTES + 4];
    memcpy(head, "SWCK", 4);
    tm__put_u32(head + 4, 1);
    tm__swarm_join_msg j = {co->numel, {0}, co->snap_round, co->snap_hash, co->s};
    memcpy(j.fingerprint, co->fingerprint, 32);
    tm__swarm_join_encode(&j, head + 8);
    tm__put_u32(head + 8 + TM__SWARM_JOIN_BYTES, co->snap_n);
    uint32_t crc = 0;
    tm_status st = write_all(fd, head, sizeof head, &crc);
    if (!st) st = write_all(fd, co->snap, co->snap_n, &crc);
    uint8_t tail[4];
    tm__put_u32(tail, crc);
    uint32_t ignore = 0;
    if (!st) st = write_all(fd, tail, 4, &ignore);
    if (!st && fsync(fd) != 0) st = TM_ERR(TM_EIO, "fsync: %s", strerror(errno));
    if (close(fd) != 0 && !st) st = TM_ERR(TM_EIO, "close: %s", strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = TM_ERR(TM_EIO, "cannot rename %s: %s", tmp, strerror(errno));
    if (st) unlink(tmp);
    else
        tm_logf(TM_LOG_INFO, "swarm coordinator: checkpoint at round %llu",
                (unsigned long long)co->snap_round);
    return st;
}

tm_status tm__co_load(tm_swarm_coordinator *co)
{
    char path[600];
    snprintf(path, sizeof path, "%s/swarm.ckpt", co->ckpt);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return TM_OK; /* a fresh directory */
        return TM_ERR(TM_EIO, "cannot read %s: %s", path, strerror(errno));
    }
    uint8_t head[8 + TM__SWARM_JOIN_BYTES + 4];
    tm_status st = TM_OK;
    tm__swarm_join_msg j;
    uint32_t n = 0;
    if (fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, "SWCK", 4) ||
        tm__get_u32(head + 4) != 1)
        st = TM_ERR(TM_EFORMAT, "%s is not a swarm checkpoint (version 1)", path);
    if (!st && tm__swarm_join_decode(head + 8, TM__SWARM_JOIN_BYTES, &j))
        st = TM_ERR(TM_EFORMAT, "%s: %s", path, tm_last_error());
    if (!st) {
        n = tm__get_u32(head + 8 + TM__SWARM_JOIN_BYTES);
        struct stat sb;
        if (fstat(fileno(f), &sb) != 0 ||
            (uint64_t)sb.st_size != sizeof head + (uint64_t)n + 4)
            st = TM_ERR(TM_EFORMAT, "%s is truncated or too long", path);
        /* The snapshot holds every parameter value as F32: a record that
         * claims more values than it can hold is damaged, and must not
         * size the round buffers allocated below. */
        else if (n < TM__SWARM_PREFIX + 4 + 4 * j.numel)
            st = TM_ERR(TM_EFORMAT, "%s: a snapshot of %u bytes cannot hold "
                        "%llu parameter values", path, n,
                        (unsigned long long)j.numel);
    }
    uint8_t *snap = st ? NULL : tm__alloc(n ? n : 1, __func__);
    if (!st && !snap) st = TM_ENOMEM;
    uint8_t tail[4];
    if (!st && (fread(snap, 1, n, f) != n || fread(tail, 1, 4, f) != 4))
        st = TM_ERR(TM_EIO, "cannot read %s", path);
    if (!st && tm__crc32(tm__crc32(0, head, sizeof head), snap, n) !=
                   tm__get_u32(tail))
        st = TM_ERR(TM_EFORMAT, "%s: CRC mismatch (a damaged file)", path);
    tm__swarm_prefix pre;
    if (!st && (tm__swarm_prefix_decode(snap, n, &pre) ||
                pre.kind != TM__SWARM_STATE_KIND || pre.round != j.round))
        st = TM_ERR(TM_EFORMAT, "%s: malformed snapshot", path);
    /* the CRC catches damage; the hash, that the parameters are the ones
     * the record names (joiners get them, and check them against it) */
    uint64_t h = 0;
    if (!st && tm__swarm_state_hash(snap + TM__SWARM_PREFIX, n - TM__SWARM_PREFIX,
                                    j.numel, &h))
        st = TM_ERR(TM_EFORMAT, "%s: %s", path, tm_last_error());
    else if (!st && (h != pre.hash || pre.hash != j.hash))
        st = TM_ERR(TM_EFORMAT, "%s: the snapshot's parameters do not match "
                    "its hash", path);
    fclose(f);
    if (!st) {
        co->acc = tm__calloc((size_t)j.numel * 4, __func__);
        co->mark = tm__calloc((size_t)j.numel, __func__);
        if (!co->acc || !co->mark) st = TM_ENOMEM;
    }
    if (st) {
        tm__dealloc(snap);
        return st;
    }
    co->have_model = true;
    co->numel = j.numel;
    memcpy(co->fingerprint, j.fingerprint, 32);
    co->s = j.s;
    co->round = co->snap_round = j.round;
    co->snap_hash = j.hash;
    co->snap = snap;
    co->snap_n = n;
    tm_logf(TM_LOG_INFO, "swarm coordinator: resuming from %s at round %llu",
            path, (unsigned long long)j.round);
    return TM_OK;
}
