/* tcp.c — the sockets the swarm runs over: listen, connect with a
 * deadline, the peer's address for messages. */
#include "swarm_impl.h"

#include "../tensor/runtime/runtime_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

tm_status tm__tcp_listen(int port, int *fd, int *bound)
{
    if (!fd || port < 0 || port > 65535)
        return TM_ERR(TM_EINVAL, "invalid port %d", port);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return TM_ERR(TM_EIO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((uint16_t)port);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0) {
        int e = errno;
        close(s);
        return TM_ERR(TM_EIO, "cannot listen on port %d: %s", port,
                      strerror(e));
    }
    socklen_t len = sizeof a;
    if (getsockname(s, (struct sockaddr *)&a, &len) != 0) {
        int e = errno;
        close(s);
        return TM_ERR(TM_EIO, "getsockname: %s", strerror(e));
    }
    *fd = s;
    if (bound) *bound = ntohs(a.sin_port);
    return TM_OK;
}

/* One non-blocking connect attempt to one address, waited for with poll. */
static int connect_one(const struct addrinfo *ai, int64_t deadline_ms,
                       int *err)
{
    int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                   ai->ai_protocol);
    if (s < 0) {
        *err = errno;
        return -1;
    }
    int fl = fcntl(s, F_GETFL);
    fcntl(s, F_SETFL, fl | O_NONBLOCK);
    int r = connect(s, ai->ai_addr, ai->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
        for (;;) {
            int64_t left = deadline_ms - tm__now_ms();
            if (left <= 0) {
                *err = ETIMEDOUT;
                close(s);
                return -1;
            }
            struct pollfd p = {.fd = s, .events = POLLOUT};
            int pr = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
            if (pr < 0 && errno == EINTR) continue;
            if (pr > 0) break;
            if (pr < 0) {
                *err = errno;
                close(s);
                return -1;
            }
        }
        int so = 0;
        socklen_t sl = sizeof so;
        getsockopt(s, SOL_SOCKET, SO_ERROR, &so, &sl);
        r = so ? -1 : 0;
        errno = so;
    }
    if (r != 0) {
        *err = errno;
        close(s);
        return -1;
    }
    fcntl(s, F_SETFL, fl);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
}

tm_status tm__tcp_connect(const char *host, int port, int64_t deadline_ms,
                          int *fd)
{
    if (!host || !fd || port <= 0 || port > 65535)
        return TM_ERR(TM_EINVAL, "invalid address %s:%d",
                      host ? host : "(null)", port);
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, ps, &hints, &res);
    if (g != 0)
        return TM_ERR(TM_EIO, "cannot resolve %s: %s", host, gai_strerror(g));
    int err = 0, s = -1;
    for (struct addrinfo *ai = res; ai && s < 0; ai = ai->ai_next)
        s = connect_one(ai, deadline_ms, &err);
    freeaddrinfo(res);
    if (s < 0)
        return TM_ERR(TM_EIO, "cannot connect to %s:%d: %s", host, port,
                      strerror(err));
    *fd = s;
    return TM_OK;
}

void tm__tcp_peer_name(int fd, char *buf, size_t size)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    char h[64] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&a, &len) == 0) {
        if (a.ss_family == AF_INET) {
            struct sockaddr_in *v = (struct sockaddr_in *)&a;
            inet_ntop(AF_INET, &v->sin_addr, h, sizeof h);
            port = ntohs(v->sin_port);
        } else if (a.ss_family == AF_INET6) {
            struct sockaddr_in6 *v = (struct sockaddr_in6 *)&a;
            inet_ntop(AF_INET6, &v->sin6_addr, h, sizeof h);
            port = ntohs(v->sin6_port);
        }
    }
    snprintf(buf, size, "%s:%d", h, port);
}
