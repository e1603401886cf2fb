// SPDX-License-Identifier: Apache-2.0
// The floor for figure 8 (`make bench`): the least a socket daemon must do per request on this
// machine. One thread, epoll, non-blocking sockets; per connection it reads the peer's credentials
// (SO_PEERCRED) as localauthd does, answers HELLO with WELCOME and every request with a RESULT
// success, and nothing else: no authorisation, no store, no reader. `localauth-bench concurrent`
// runs against it exactly as against localauthd.
//
//   floor_server SOCKET     (serves until SIGTERM)
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_BODY 4096

struct conn {
    int fd;
    uid_t uid;
    size_t have;
    uint8_t buf[4 + MAX_BODY];
};

static size_t put_field(uint8_t *p, uint16_t tag, const void *value, uint16_t size)
{
    p[0] = (uint8_t)(tag >> 8);
    p[1] = (uint8_t)tag;
    p[2] = (uint8_t)(size >> 8);
    p[3] = (uint8_t)size;
    memcpy(p + 4, value, size);
    return 4u + size;
}

static size_t put_int(uint8_t *p, uint16_t tag, int64_t v)
{
    uint8_t be[8];
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
    return put_field(p, tag, be, 8);
}

// A frame of `type` with an int field 1 or 15 and a string field 2 or 16.
static size_t frame(uint8_t *out, uint16_t type, uint16_t int_tag, int64_t v, uint16_t str_tag,
                    const char *s)
{
    size_t n = 4;
    out[n++] = (uint8_t)(type >> 8);
    out[n++] = (uint8_t)type;
    n += put_int(out + n, int_tag, v);
    n += put_field(out + n, str_tag, s, (uint16_t)strlen(s));
    uint32_t len = (uint32_t)(n - 4);
    out[0] = (uint8_t)(len >> 24);
    out[1] = (uint8_t)(len >> 16);
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
    return n;
}

static void drop(int ep, struct conn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

// Answers every whole frame in the buffer; -1 when the connection must close.
static int serve(struct conn *c)
{
    uint8_t out[256];
    for (;;) {
        if (c->have < 4)
            return 0;
        uint32_t len = (uint32_t)c->buf[0] << 24 | (uint32_t)c->buf[1] << 16 |
                       (uint32_t)c->buf[2] << 8 | c->buf[3];
        if (len < 2 || len > MAX_BODY)
            return -1;
        if (c->have < 4 + len)
            return 0;
        uint16_t type = (uint16_t)(c->buf[4] << 8 | c->buf[5]);
        size_t n = type == 0x0001 ? frame(out, 0x8001, 1, 1, 2, "floor")
                                  : frame(out, 0x8003, 15, 0, 16, "ok");
        if (write(c->fd, out, n) != (ssize_t)n)
            return -1;
        memmove(c->buf, c->buf + 4 + len, c->have - 4 - len);
        c->have -= 4 + len;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: floor_server SOCKET\n");
        return 64;
    }
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (lfd < 0 || strlen(argv[1]) >= sizeof a.sun_path)
        return 1;
    strcpy(a.sun_path, argv[1]);
    unlink(argv[1]);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 256) != 0) {
        perror("floor_server: bind");
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[64];
    for (;;) {
        int n = epoll_wait(ep, events, 64, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 1;
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    struct ucred cred;
                    socklen_t len = sizeof cred;
                    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
                        close(fd);
                        continue;
                    }
                    struct conn *nc = calloc(1, sizeof *nc);
                    if (nc == NULL) {
                        close(fd);
                        continue;
                    }
                    nc->fd = fd;
                    nc->uid = cred.uid;
                    struct epoll_event cev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            ssize_t r = read(c->fd, c->buf + c->have, sizeof c->buf - c->have);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                    continue;
                drop(ep, c);
                continue;
            }
            c->have += (size_t)r;
            if (serve(c) != 0)
                drop(ep, c);
        }
    }
}
