/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth: the socket to localauthd: connect (the daemon must be root's), frames in and
 * out, each within the deadline. Below run() and the conversation; calls neither.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#define PAM_SM_AUTH
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "codes.h"
#include "messages.h"
#include "module.h"
#include "options.h"
#include "rules.h"
#include "terminal.h"
#include "wire.h"

/* The system's English words for an errno, for syslog. */
static const char *english_error(int err)
{
    const char *text = strerrordesc_np(err);
    /* English: syslog only. */
    return text != NULL ? text : "unknown error";
}

/* A reason with the system's words for an errno: English in syslog, the locale's to the person. */
#define WHY_ERRNO(w, fmt, err)                                                                     \
    do {                                                                                           \
        snprintf((w)->log, sizeof(w)->log, fmt, english_error(err));                               \
        snprintf((w)->shown, sizeof(w)->shown, la_text(fmt), strerror(err));                       \
    } while (0)

/* Waits until fd is ready for events or the deadline passes: 0 ready, -1 otherwise. */
static int wait_fd(struct session *s, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - la_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = s->fd, .events = events};
        int n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n > 0)
            return 0; /* POLLHUP and POLLERR too: the next read or write reports them */
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static int send_all(struct session *s, const uint8_t *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        /* MSG_NOSIGNAL: a dead daemon must not SIGPIPE the host process. */
        ssize_t n = send(s->fd, buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            done += (size_t)n;
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        else if (n < 0 && errno == EAGAIN && wait_fd(s, POLLOUT, s->deadline) != 0)
            return -1;
    }
    return 0;
}

/* Sends the frame in s->w, then wipes it: it may hold a passcode. */
int la_send_frame(struct session *s, size_t len)
{
    int rc = len == 0 ? -1 : send_all(s, s->w.buf, len);
    explicit_bzero(s->w.buf, sizeof s->w.buf);
    s->w.len = 0;
    return rc;
}

static int recv_all(struct session *s, uint8_t *buf, size_t len, int64_t deadline)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = recv(s->fd, buf + done, len - done, MSG_DONTWAIT);
        if (n > 0)
            done += (size_t)n;
        else if (n == 0)
            return -1; /* the daemon closed: it died or refused us */
        else if (errno != EAGAIN && errno != EINTR)
            return -1;
        else if (errno == EAGAIN && wait_fd(s, POLLIN, deadline) != 0)
            return -1;
    }
    return 0;
}

/* Reads one daemon frame into s->reply; the length is checked before the body is read. */
int la_read_reply(struct session *s, int64_t deadline)
{
    uint8_t prefix[LA_WIRE_PREFIX];
    if (recv_all(s, prefix, sizeof prefix, deadline) != 0)
        return -1;
    long len = la_wire_body_length(prefix);
    if (len < 0 || recv_all(s, s->body, (size_t)len, deadline) != 0)
        return -1;
    int rc = la_wire_decode_reply(s->body, (size_t)len, &s->reply);
    explicit_bzero(s->body, (size_t)len);
    return rc;
}

/* Connects without ever blocking past the deadline and believes only a daemon run by root.
 * On failure, why says what went wrong in words for the person (messages.h). */
int la_connect_daemon(struct session *s, struct why *why)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, s->opt->socket, strlen(s->opt->socket) + 1); /* ≤ 107 + NUL */
    s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        WHY_ERRNO(why, LA_WHY_NO_SOCKET, errno);
        return -1;
    }
    for (;;) {
        if (connect(s->fd, (struct sockaddr *)&addr, sizeof addr) == 0)
            break;
        int err = errno;
        if (err == EINTR)
            continue;
        if (err == EINPROGRESS) {
            socklen_t n = sizeof err;
            if (wait_fd(s, POLLOUT, s->deadline) != 0 ||
                getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0 || err != 0) {
                la_why_format(why, LA_WHY_NO_ANSWER);
                return -1;
            }
            break;
        }
        /* A full backlog: the daemon is alive but busy; try again until the deadline. */
        if (err == EAGAIN && la_now_ms() + LA_CONNECT_RETRY_MS < s->deadline) {
            poll(NULL, 0, LA_CONNECT_RETRY_MS);
            continue;
        }
        if (err == EAGAIN)
            la_why_format(why, LA_WHY_BUSY);
        else if (err == ENOENT || err == ECONNREFUSED)
            la_why_format(why, LA_WHY_NOT_RUNNING);
        else
            WHY_ERRNO(why, LA_WHY_NO_ACCESS, err);
        return -1;
    }
    struct ucred cred;
    socklen_t n = sizeof cred;
    if (getsockopt(s->fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) != 0 || n != sizeof cred) {
        pam_syslog(s->pamh, LOG_ERR, "cannot read the peer credentials of %s: %m", s->opt->socket);
        la_why_format(why, LA_WHY_NO_CREDENTIALS);
        return -1;
    }
    if (cred.uid != 0) {
        /* Anyone can bind a socket somewhere; only root's answer is worth anything. */
        pam_syslog(s->pamh, LOG_ERR, "%s is served by uid %u, not root: not trusted",
                   s->opt->socket, (unsigned)cred.uid);
        la_why_format(why, LA_WHY_UNTRUSTED, (unsigned)cred.uid);
        return -1;
    }
    return 0;
}

/* Why a frame could not be sent: a daemon that refuses the HELLO sends ERROR and hangs up, and
 * the EVALUATE behind the HELLO may then meet a closed socket; the ERROR is still there to read
 * and says what happened. */
void la_refused_or_silent(struct session *s, struct why *why)
{
    if (la_read_reply(s, la_now_ms() + LA_REFUSAL_READ_MS) == 0 && s->reply.type == LA_MSG_ERROR)
        la_why_format(why, LA_WHY_REFUSED, s->reply.message);
    else
        la_why_format(why, LA_WHY_NO_ANSWER);
}
