/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libfailinject.so: an LD_PRELOAD shim that makes the Nth call of one kind fail while
 * pam_authenticate runs, so that pam/tests/failinject.py can sweep N over every call the
 * module's authentication makes (docs/reliability.md, section 4).
 *
 *   FAILINJECT_KIND   alloc (malloc, calloc, realloc), poll, read (read, recv), write (write,
 *                     send), socket (socket, connect), term (open, ioctl, tcgetattr,
 *                     tcsetattr, tcgetpgrp, tcflush, signalfd, sigprocmask, sigpending,
 *                     sigtimedwait: the terminal the module owns); unset: count only
 *   FAILINJECT_N      which call of that kind fails (1 = the first)
 *   FAILINJECT_ERRNO  the errno it fails with (default: ENOMEM, ENOMEM, ECONNRESET, EPIPE,
 *                     EMFILE, EIO by kind); EINTR exercises the retry loops
 *
 * Only calls made while pam_authenticate runs are counted (the whole process: libpam, the
 * conversation and the module). When pam_authenticate returns, one line goes to standard
 * error: "failinject: rc=CODE injected=0|1 alloc=N poll=N read=N write=N socket=N term=N".
 * Must come before libpam_wrapper.so in LD_PRELOAD.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <security/pam_appl.h>

enum kind { K_ALLOC, K_POLL, K_READ, K_WRITE, K_SOCKET, K_TERM, K_COUNT };
static const char *const names[K_COUNT] = {"alloc", "poll", "read", "write", "socket", "term"};
static const int default_errno[K_COUNT] = {ENOMEM, ENOMEM, ECONNRESET, EPIPE, EMFILE, EIO};

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

/* The module is built with _FORTIFY_SOURCE: where the compiler knows a buffer's size, poll
 * and read become these. */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
    static int (*real)(struct pollfd *, nfds_t, int, size_t);
    if (real == NULL)
        real = next("__poll_chk");
    return fail_now(K_POLL) ? -1 : real(fds, n, timeout, fdslen);
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    static ssize_t (*real)(int, void *, size_t, size_t);
    if (real == NULL)
        real = next("__read_chk");
    return fail_now(K_READ) ? -1 : real(fd, buf, n, buflen);
}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    static ssize_t (*real)(int, void *, size_t, size_t, int);
    if (real == NULL)
        real = next("__recv_chk");
    return fail_now(K_READ) ? -1 : real(fd, buf, n, buflen, flags);
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

/* The terminal: every call the module's terminal.c makes that can fail. */
static int open_common(const char *name, const char *path, int flags, va_list ap)
{
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    int (*real)(const char *, int, ...) = next(name);
    return fail_now(K_TERM) ? -1 : real(path, flags, mode);
}

/* open and open64, one definition: the variadic mode goes to open_common. */
#define OPEN_INTERPOSER(fn)                                                                        \
    int fn(const char *path, int flags, ...)                                                       \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        int rc = open_common(#fn, path, flags, ap);                                                \
        va_end(ap);                                                                                \
        return rc;                                                                                 \
    }
OPEN_INTERPOSER(open)
OPEN_INTERPOSER(open64)

int ioctl(int fd, unsigned long request, ...)
{
    static int (*real)(int, unsigned long, ...);
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (real == NULL)
        real = next("ioctl");
    return fail_now(K_TERM) ? -1 : real(fd, request, arg);
}

int tcgetattr(int fd, struct termios *t)
{
    static int (*real)(int, struct termios *);
    if (real == NULL)
        real = next("tcgetattr");
    return fail_now(K_TERM) ? -1 : real(fd, t);
}

int tcsetattr(int fd, int when, const struct termios *t)
{
    static int (*real)(int, int, const struct termios *);
    if (real == NULL)
        real = next("tcsetattr");
    return fail_now(K_TERM) ? -1 : real(fd, when, t);
}

pid_t tcgetpgrp(int fd)
{
    static pid_t (*real)(int);
    if (real == NULL)
        real = next("tcgetpgrp");
    return fail_now(K_TERM) ? -1 : real(fd);
}

int tcflush(int fd, int queue)
{
    static int (*real)(int, int);
    if (real == NULL)
        real = next("tcflush");
    return fail_now(K_TERM) ? -1 : real(fd, queue);
}

int signalfd(int fd, const sigset_t *mask, int flags)
{
    static int (*real)(int, const sigset_t *, int);
    if (real == NULL)
        real = next("signalfd");
    return fail_now(K_TERM) ? -1 : real(fd, mask, flags);
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);
    if (real == NULL)
        real = next("sigprocmask");
    return fail_now(K_TERM) ? -1 : real(how, set, old);
}

int sigpending(sigset_t *set)
{
    static int (*real)(sigset_t *);
    if (real == NULL)
        real = next("sigpending");
    return fail_now(K_TERM) ? -1 : real(set);
}

int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
    static int (*real)(const sigset_t *, siginfo_t *, const struct timespec *);
    if (real == NULL)
        real = next("sigtimedwait");
    return fail_now(K_TERM) ? -1 : real(set, info, timeout);
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
            "failinject: rc=%d injected=%d alloc=%ld poll=%ld read=%ld write=%ld socket=%ld "
            "term=%ld\n",
            rc, injected, counts[K_ALLOC], counts[K_POLL], counts[K_READ], counts[K_WRITE],
            counts[K_SOCKET], counts[K_TERM]);
    return rc;
}
