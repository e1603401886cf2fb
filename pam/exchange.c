/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth: the exchange with localauthd: the socket (connect, frames in and out, each
 * within the deadline) and run(), the conversation with the daemon that pam_sm_authenticate
 * drives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
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

/* The user name goes into the request; one the daemon would refuse is said at once. */
static int user_fits(struct session *s, const char *user)
{
    struct why why;
    size_t n = strnlen(user, LA_WIRE_MAX_FIELD + 1);
    if (n > LA_WIRE_MAX_FIELD)
        la_why_format(&why, LA_WHY_USER_TOO_LONG, strlen(user), LA_WIRE_MAX_FIELD);
    else if (!la_wire_utf8_valid((const uint8_t *)user, n))
        la_why_format(&why, LA_WHY_USER_NOT_TEXT);
    else
        return 1;
    la_skipped_because(s, user, &why, 1);
    return 0;
}

/* The conversation with the daemon; every failure that is not the daemon's answer is
 * PAM_AUTHINFO_UNAVAIL, so the stack falls back to the password. */
int la_run(struct session *s, int pam_silent)
{
    const void *item = NULL;
    const char *user = NULL, *service = NULL, *tty = NULL;
    struct why why;
    int answered = 0;

    if (pam_get_item(s->pamh, PAM_TTY, &item) == PAM_SUCCESS)
        tty = item;
    s->silent = la_quiet(pam_silent, tty);
    if (pam_get_item(s->pamh, PAM_RHOST, &item) == PAM_SUCCESS && la_is_remote(item)) {
        la_why_format(&why, LA_WHY_REMOTE, (const char *)item);
        if (pam_get_item(s->pamh, PAM_USER, &item) != PAM_SUCCESS)
            item = NULL;
        la_skipped_because(s, item, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
    int rc = pam_get_user(s->pamh, &user, NULL);
    if (rc == PAM_CONV_AGAIN)
        return PAM_INCOMPLETE; /* what an authentication module says for "ask me again" */
    if (rc != PAM_SUCCESS)
        return rc;
    if (user == NULL || user[0] == '\0')
        return PAM_USER_UNKNOWN;
    if (!user_fits(s, user))
        return PAM_AUTHINFO_UNAVAIL;
    s->user = user;
    if (pam_get_item(s->pamh, PAM_SERVICE, &item) == PAM_SUCCESS)
        service = item;
    /* Optional strings the daemon would refuse (not UTF-8, too long) are left out. */
    if (service != NULL && !la_wire_text_fits(service))
        service = NULL;
    if (tty != NULL && !la_wire_text_fits(tty))
        tty = NULL;

    if (s->opt->password_first) {
        if ((rc = la_typed_password(s, user, &answered)) != LA_CONTINUE)
            return rc;
    } else {
        switch (la_term_open(&s->term, tty, s->deadline)) {
        case LA_TERM_SCRIPTED:
            la_skipped(s, user, LA_WHY_STDIN);
            return PAM_AUTHINFO_UNAVAIL;
        case LA_TERM_OWN:
            la_term_watch(&s->term); /* on failure: not owned, the conversation as always */
            break;
        default:
            break;
        }
    }
    int64_t flags = s->opt->policy == LA_POLICY_OWNER ? LA_FLAG_PASSCODE_CAPABLE : 0;
    /* The daemon answers notInteractive at once and audits it (a recent success that it may
     * reuse still counts), so the reader is never started for a caller nobody watches. */
    if (!la_interactive(s, tty, answered))
        flags |= LA_FLAG_INTERACTION_NOT_ALLOWED;

    if (la_connect_daemon(s, &why) != 0) {
        la_skipped_because(s, user, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
    /* HELLO and EVALUATE go out back to back, the WELCOME is read after: the daemon takes
     * frames in order, and the finger prompt comes one round trip sooner (docs/performance.md). */
    if (la_send_frame(s, la_encode_hello(&s->w, LA_CLIENT_NAME)) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "cannot send HELLO to %s", s->opt->socket);
        la_refused_or_silent(s, &why);
        la_skipped_because(s, user, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }

    int64_t left = s->deadline - la_now_ms() - LA_DAEMON_MARGIN_MS;
    struct la_evaluate ev = {
        .policy = s->opt->policy,
        .user = user,
        .service = service,
        .tty = tty,
        .reason = s->opt->have_reason ? s->opt->reason : service,
        .flags = flags,
        .tries = s->opt->tries,
        .timeout_ms = left < 1 ? 1 : left,
    };
    if (la_send_frame(s, la_encode_evaluate(&s->w, &ev)) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "cannot send EVALUATE for %s", user);
        la_refused_or_silent(s, &why);
        la_skipped_because(s, user, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (la_read_reply(s, s->deadline) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "no WELCOME from %s", s->opt->socket);
        la_skipped(s, user, LA_WHY_NO_ANSWER);
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (s->reply.type != LA_MSG_WELCOME || s->reply.version != LA_WIRE_VERSION) {
        if (s->reply.type == LA_MSG_ERROR)
            la_why_format(&why, LA_WHY_REFUSED, s->reply.message);
        else if (s->reply.type == LA_MSG_WELCOME)
            la_why_format(&why, LA_WHY_OTHER_VERSION, (long long)s->reply.version, LA_WIRE_VERSION);
        else
            la_why_format(&why, LA_WHY_NO_ANSWER);
        pam_syslog(s->pamh, LOG_ERR, "no usable WELCOME from %s", s->opt->socket);
        la_skipped_because(s, user, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
    la_debug(s, "connected to %s", s->reply.server);

    for (;;) {
        if ((rc = la_wait_event(s)) == LA_CONTINUE)
            continue;
        if (rc != 0)
            return rc;
        if (la_read_reply(s, s->deadline) != 0) {
            pam_syslog(s->pamh, LOG_ERR, "localauthd went away, stalled or sent a bad frame");
            la_term_end_prompt(&s->term, 1);
            return s->seen.conv_failed ? PAM_CONV_ERR : PAM_AUTHINFO_UNAVAIL;
        }
        if (s->reply.type == LA_MSG_EVENT) {
            if (la_on_event(s) != 0) {
                pam_syslog(s->pamh, LOG_ERR, "cannot answer event %lld", (long long)s->reply.event);
                return PAM_AUTHINFO_UNAVAIL;
            }
            continue;
        }
        if (s->reply.type == LA_MSG_RESULT) {
            int64_t code = s->reply.code;
            rc = la_result_to_pam(code, &s->seen);
            /* What was typed and not sent is dropped with the prompt: a finger decided. */
            la_term_end_prompt(&s->term, 1);
            la_show_pending(s, code == LA_BIOMETRY_LOCKOUT && la_result_is_shown(code));
            if (code == LA_NOT_INTERACTIVE && flags & LA_FLAG_INTERACTION_NOT_ALLOWED)
                la_skipped(s, user, LA_WHY_NOT_INTERACTIVE);
            else if (la_result_is_shown(code))
                la_show_result(s, la_reply_text(s));
            pam_syslog(s->pamh, rc == PAM_SUCCESS ? LOG_INFO : LOG_NOTICE,
                       "user %s: %s (%lld): %s: %s", user, la_result_name(code), (long long)code,
                       pam_strerror(s->pamh, rc), s->reply.message);
            return rc;
        }
        pam_syslog(s->pamh, LOG_ERR, "localauthd: error %lld: %s", (long long)s->reply.code,
                   s->reply.type == LA_MSG_ERROR ? s->reply.message : "unexpected frame");
        return PAM_AUTHINFO_UNAVAIL;
    }
}
