/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libfailinject.so: an LD_PRELOAD shim that makes the Nth call of one kind fail while
 * pam_authenticate runs, so that pam/tests/failinject.py can sweep N over every call the
 * module's authentication makes (docs/reliability.md, section 4).
 *
 *   FAILINJECT_KIND   alloc (malloc, calloc, realloc), poll, read (read, recv), write (write,
 *                     send), socket (socket, connect); unset: count only
 *   FAILINJECT_N      which call of that kind fails (1 = the first)
 *   FAILINJECT_ERRNO  the errno it fails with (default: ENOMEM, ENOMEM, ECONNRESET, EPIPE,
 *                     EMFILE by kind); EINTR exercises the retry loops
 *
 * Only calls made while pam_authenticate runs are counted (the whole process: libpam, the
 * conversation and the module). When pam_authenticate returns, one line goes to standard
 * error: "failinject: rc=CODE injected=0|1 alloc=N poll=N read=N write=N socket=N".
 * Must come before libpam_wrapper.so in LD_PRELOAD.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <security/pam_appl.h>

enum kind { K_ALLOC, K_POLL, K_READ, K_WRITE, K_SOCKET, K_COUNT };
static const char *const names[K_COUNT] = {"alloc", "poll", "read", "write", "socket"};
static const int default_errno[K_COUNT] = {ENOMEM, ENOMEM, ECONNRESET, EPIPE, EMFILE};

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static int active;
static int configured;
static int fail_kind = -1;
static long fail_n;
static int fail_errno;
static int injected;
static long counts[K_COUNT];

static void configure(void)
{
    configured = 1;
    const char *k = getenv("FAILINJECT_KIND");
    const char *n = getenv("FAILINJECT_N");
    const char *e = getenv("FAILINJECT_ERRNO");
    for (int i = 0; k != NULL && i < K_COUNT; i++)
        if (strcmp(k, names[i]) == 0)
            fail_kind = i;
    fail_n = n != NULL ? strtol(n, NULL, 10) : 0;
    if (fail_kind >= 0)
        fail_errno = e != NULL ? atoi(e) : default_errno[fail_kind];
}

/* Counts the call; 1 when this one is to fail (errno is then set). */
static int fail_now(enum kind k)
{
    if (!active)
        return 0;
    counts[k]++;
    if ((int)k != fail_kind || counts[k] != fail_n)
        return 0;
    injected = 1;
    errno = fail_errno;
    return 1;
}

static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL)
        abort();
    return f;
}

void *malloc(size_t n)
{
    return fail_now(K_ALLOC) ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    return fail_now(K_ALLOC) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return fail_now(K_ALLOC) ? NULL : __libc_realloc(p, n);
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    static int (*real)(struct pollfd *, nfds_t, int);
    if (real == NULL)
        real = next("poll");
    return fail_now(K_POLL) ? -1 : real(fds, n, timeout);
}

ssize_t read(int fd, void *buf, size_t n)
{
    static ssize_t (*real)(int, void *, size_t);
    if (real == NULL)
        real = next("read");
    return fail_now(K_READ) ? -1 : real(fd, buf, n);
}

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    static ssize_t (*real)(int, void *, size_t, int);
    if (real == NULL)
        real = next("recv");
    return fail_now(K_READ) ? -1 : real(fd, buf, n, flags);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (real == NULL)
        real = next("write");
    return fail_now(K_WRITE) ? -1 : real(fd, buf, n);
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    static ssize_t (*real)(int, const void *, size_t, int);
    if (real == NULL)
        real = next("send");
    return fail_now(K_WRITE) ? -1 : real(fd, buf, n, flags);
}

int socket(int domain, int type, int protocol)
{
    static int (*real)(int, int, int);
    if (real == NULL)
        real = next("socket");
    return fail_now(K_SOCKET) ? -1 : real(domain, type, protocol);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    static int (*real)(int, const struct sockaddr *, socklen_t);
    if (real == NULL)
        real = next("connect");
    return fail_now(K_SOCKET) ? -1 : real(fd, addr, len);
}

int pam_authenticate(pam_handle_t *pamh, int flags)
{
    static int (*real)(pam_handle_t *, int);
    if (real == NULL)
        real = next("pam_authenticate");
    if (!configured)
        configure();
    active = 1;
    int rc = real(pamh, flags);
    active = 0;
    fprintf(stderr,
            "failinject: rc=%d injected=%d alloc=%ld poll=%ld read=%ld write=%ld socket=%ld\n", rc,
            injected, counts[K_ALLOC], counts[K_POLL], counts[K_READ], counts[K_WRITE],
            counts[K_SOCKET]);
    return rc;
}
