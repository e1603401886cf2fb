/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth: asks localauthd whether the owner of the account is present.
 *
 * Loaded into setuid and long-lived processes (sudo, su, login, gdm, screen lockers), so it
 * reads no environment, starts no thread, allocates nothing that outlives the call, never
 * blocks past its deadline and denies whatever it does not understand.
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
#include "options.h"
#include "wire.h"

#define LA_CLIENT_NAME "pam_localauth 0.1"
#define LA_EXPORT __attribute__((visibility("default")))
/* The daemon gets this much less time than we have, so that its own timedOut RESULT (with a
 * message) normally arrives before our hard deadline cuts the connection. */
#define LA_DAEMON_MARGIN_MS 250
/* After passcodeWrong, how long a follow-up frame (RESULT, passcodeNeeded) may take before
 * we conclude that the daemon simply waits for the next passcode. */
#define LA_FOLLOW_UP_MS 100
/* After a CANCEL, how long the daemon gets to confirm before we stop listening. */
#define LA_CANCEL_GRACE_MS 1000
/* Pause between connect attempts while the daemon's listen backlog is full. */
#define LA_CONNECT_RETRY_MS 10
/* password_first: what the question says. Lockers ignore it; a greeter shows it as the label. */
#define LA_PASSWORD_PROMPT "Password: "
/* The message that finds out whether a caller without a terminal can show the person
 * anything. Not empty: some conversations (libpamtest's) refuse an empty message. */
#define LA_PROBE_LINE "Checking for a fingerprint"
/* run() goes on to the daemon. */
#define LA_CONTINUE (-1)

/* Everything one call owns; lives on pam_sm_authenticate's stack. */
struct session {
    pam_handle_t *pamh;
    const struct la_options *opt;
    int fd;
    int silent;       /* PAM_SILENT, or the conversation cannot show a message */
    int64_t deadline; /* CLOCK_MONOTONIC, milliseconds */
    int sent_passcode;
    struct la_outcome seen;
    struct la_writer w;
    uint8_t body[LA_WIRE_MAX_BODY];
    struct la_reply reply;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void debug(const struct session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void debug(const struct session *s, const char *fmt, ...)
{
    if (!s->opt->debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    pam_vsyslog(s->pamh, LOG_DEBUG, fmt, ap);
    va_end(ap);
}

static void warn_option(void *ctx, const char *arg, const char *why)
{
    pam_syslog((pam_handle_t *)ctx, LOG_WARNING, "ignoring argument \"%s\": %s", arg, why);
}

/* Waits until fd is ready for events or the deadline passes: 0 ready, -1 otherwise. */
static int wait_fd(struct session *s, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
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
static int send_frame(struct session *s, size_t len)
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
static int read_reply(struct session *s, int64_t deadline)
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

/* Connects without ever blocking past the deadline and believes only a daemon run by root. */
static int connect_daemon(struct session *s)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, s->opt->socket, strlen(s->opt->socket) + 1); /* ≤ 107 + NUL */
    s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0)
        return -1;
    for (;;) {
        if (connect(s->fd, (struct sockaddr *)&addr, sizeof addr) == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EINPROGRESS) {
            int err = 0;
            socklen_t n = sizeof err;
            if (wait_fd(s, POLLOUT, s->deadline) != 0 ||
                getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0 || err != 0)
                return -1;
            break;
        }
        /* A full backlog: the daemon is alive but busy; try again until the deadline. */
        if (errno != EAGAIN || now_ms() + LA_CONNECT_RETRY_MS >= s->deadline)
            return -1;
        poll(NULL, 0, LA_CONNECT_RETRY_MS);
    }
    struct ucred cred;
    socklen_t n = sizeof cred;
    if (getsockopt(s->fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) != 0 || n != sizeof cred) {
        pam_syslog(s->pamh, LOG_ERR, "cannot read the peer credentials of %s: %m", s->opt->socket);
        return -1;
    }
    if (cred.uid != 0) {
        /* Anyone can bind a socket somewhere; only root's answer is worth anything. */
        pam_syslog(s->pamh, LOG_ERR, "%s is served by uid %u, not root: not trusted",
                   s->opt->socket, (unsigned)cred.uid);
        return -1;
    }
    return 0;
}

/* Shows one line, unless the application asked for silence. Control characters are
 * replaced: the line ends up on the terminal of a setuid program. */
static void show(struct session *s, int style, const char *msg)
{
    char line[LA_WIRE_MAX_FIELD + 1];
    size_t n = strnlen(msg, LA_WIRE_MAX_FIELD);
    if (s->silent || n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        line[i] = (unsigned char)msg[i] < 0x20 || msg[i] == 0x7f ? '?' : msg[i];
    line[n] = '\0';
    /* A failing conversation for a message is harmless: the request goes on. */
    (void)pam_prompt(s->pamh, style, NULL, "%s", line);
}

static void replace_controls(char *text)
{
    for (; *text != '\0'; text++)
        if ((unsigned char)*text < 0x20 || *text == 0x7f)
            *text = '?';
}

/* Says in one line why the finger was not asked for: always in syslog, and to the person
 * when the conversation can show a message. */
static void skipped(struct session *s, const char *user, const char *why)
{
    char line[LA_WIRE_MAX_FIELD + 1], name[128];
    /* The user name and PAM_RHOST come from outside: no control character reaches the log. */
    snprintf(name, sizeof name, "%s", user != NULL ? user : "(no user yet)");
    snprintf(line, sizeof line, "%s", why);
    replace_controls(name);
    replace_controls(line);
    pam_syslog(s->pamh, LOG_NOTICE, "fingerprint not used for %s: %s", name, line);
    snprintf(line, sizeof line, "Fingerprint not used: %s", why);
    show(s, PAM_TEXT_INFO, line);
}

/* The rule for non-interactive callers (sudo -n or -A without a terminal, scripts, cron): a
 * caller is interactive when PAM_TTY names a terminal, or when it did not ask for PAM_SILENT
 * and its conversation takes a PAM_TEXT_INFO message (LA_PROBE_LINE). Otherwise nothing can
 * tell the person to touch the reader, and the daemon is asked with interactionNotAllowed.
 * password_first has already asked a question that was answered: that caller is
 * interactive. */
static int interactive(struct session *s, const char *tty, int answered)
{
    if (answered || la_tty_names_terminal(tty))
        return 1;
    if (s->silent)
        return 0;
    if (pam_prompt(s->pamh, PAM_TEXT_INFO, NULL, "%s", LA_PROBE_LINE) == PAM_SUCCESS)
        return 1;
    s->silent = 1; /* a conversation that failed once is not asked to show anything else */
    return 0;
}

/* password_first: a screen locker collects the password before it calls PAM and answers
 * every question with it. Something typed goes to PAM_AUTHTOK for the password module
 * (pam_unix try_first_pass) and the finger is skipped; Enter alone means the finger.
 * Returns LA_CONTINUE for the finger, else the PAM code to return at once. */
static int typed_password(struct session *s, const char *user, int *answered)
{
    const void *item = NULL;
    char *answer = NULL;
    if (pam_get_item(s->pamh, PAM_AUTHTOK, &item) == PAM_SUCCESS && item != NULL) {
        if (((const char *)item)[0] == '\0')
            return LA_CONTINUE; /* an earlier module asked, and Enter alone was the answer */
        skipped(s, user, "a password was already given");
        return PAM_AUTHINFO_UNAVAIL;
    }
    int rc = pam_prompt(s->pamh, PAM_PROMPT_ECHO_OFF, &answer, "%s", LA_PASSWORD_PROMPT);
    if (rc == PAM_SUCCESS && answer != NULL && answer[0] == '\0') {
        *answered = 1;
        rc = LA_CONTINUE;
    } else if (rc == PAM_SUCCESS && answer != NULL) {
        rc = pam_set_item(s->pamh, PAM_AUTHTOK, answer); /* libpam keeps its own copy */
        if (rc == PAM_SUCCESS)
            skipped(s, user, "a password was typed");
        else
            pam_syslog(s->pamh, LOG_ERR, "cannot store the typed password: %s",
                       pam_strerror(s->pamh, rc));
        rc = PAM_AUTHINFO_UNAVAIL;
    } else if (rc == PAM_CONV_AGAIN) {
        rc = PAM_INCOMPLETE; /* an event-driven application: call again with the answer */
    } else {
        s->silent = 1;
        skipped(s, user, "the application cannot ask for a password");
        rc = PAM_CONV_ERR;
    }
    if (answer != NULL) {
        explicit_bzero(answer, strlen(answer));
        free(answer);
    }
    return rc;
}

/* Answers passcodeNeeded: PASSCODE, or CANCEL when the person gives nothing or the
 * conversation fails. */
static int answer_passcode(struct session *s)
{
    char *answer = NULL;
    size_t len = 0;
    int rc = pam_prompt(s->pamh, PAM_PROMPT_ECHO_OFF, &answer, "Passcode: ");
    if (rc != PAM_SUCCESS || answer == NULL)
        s->seen.conv_failed = 1;
    else if (answer[0] != '\0' && (len = la_encode_passcode(&s->w, answer)) == 0)
        show(s, PAM_ERROR_MSG, "Passcode too long or not valid text");
    else if (len > 0)
        s->sent_passcode = 1;
    if (answer != NULL) {
        explicit_bzero(answer, strlen(answer));
        free(answer);
    }
    s->seen.tries_exhausted = 0; /* a passcode decides from here on, not the fingers */
    if (len == 0) {
        /* Nothing to send: cancel, and give the daemon a short grace to confirm. */
        len = la_encode_cancel(&s->w);
        if (now_ms() + LA_CANCEL_GRACE_MS < s->deadline)
            s->deadline = now_ms() + LA_CANCEL_GRACE_MS;
    }
    return send_frame(s, len);
}

/* Whether the daemon sent another frame right after passcodeWrong. The protocol does not say
 * whether passcodeWrong alone means "enter it again" (the daemon keeps waiting) or comes
 * before a RESULT or a new passcodeNeeded; a frame sent in the same breath settles it, and
 * silence means the daemon waits for the next passcode. Only the prompt depends on this,
 * never the decision. */
static int follow_up_pending(struct session *s)
{
    int64_t until = now_ms() + LA_FOLLOW_UP_MS;
    if (until > s->deadline)
        until = s->deadline;
    return wait_fd(s, POLLIN, until) == 0;
}

static int on_event(struct session *s)
{
    const struct la_reply *r = &s->reply;
    debug(s, "event %lld: %s", (long long)r->event, r->message);
    switch (r->event) {
    case LA_EVENT_NO_MATCH:
        s->seen.tries_exhausted = r->present & LA_HAS_TRIES_LEFT && r->tries_left <= 0;
        show(s, PAM_ERROR_MSG, r->message);
        return 0;
    case LA_EVENT_BIOMETRY_LOCKED:
        show(s, PAM_ERROR_MSG, r->message);
        return 0;
    case LA_EVENT_PASSCODE_WRONG:
        show(s, PAM_ERROR_MSG, r->message);
        return s->sent_passcode && !follow_up_pending(s) ? answer_passcode(s) : 0;
    case LA_EVENT_PASSCODE_NEEDED:
        /* Only asked for when we declared passcodeCapable; otherwise the daemon is confused. */
        if (s->opt->policy != LA_POLICY_OWNER)
            return -1;
        if (r->present & LA_HAS_DELAY_MS && r->delay_ms > 0)
            show(s, PAM_ERROR_MSG, r->message);
        return answer_passcode(s);
    case LA_EVENT_ENROLL_STAGE:
        return 0;
    default: /* placeFinger, retry, fallbackAvailable, info, and kinds newer than us */
        show(s, PAM_TEXT_INFO, r->message);
        return 0;
    }
}

/* The conversation with the daemon; every failure that is not the daemon's answer is
 * PAM_AUTHINFO_UNAVAIL, so the stack falls back to the password. */
static int run(struct session *s)
{
    const void *item = NULL;
    const char *user = NULL, *service = NULL, *tty = NULL;
    int answered = 0;

    if (pam_get_item(s->pamh, PAM_RHOST, &item) == PAM_SUCCESS && item != NULL &&
        ((const char *)item)[0] != '\0' && strcmp(item, "localhost") != 0) {
        char why[160];
        snprintf(why, sizeof why, "remote session from %.100s", (const char *)item);
        if (pam_get_item(s->pamh, PAM_USER, &item) != PAM_SUCCESS)
            item = NULL;
        skipped(s, item, why);
        return PAM_AUTHINFO_UNAVAIL;
    }
    int rc = pam_get_user(s->pamh, &user, NULL);
    if (rc == PAM_CONV_AGAIN)
        return PAM_INCOMPLETE; /* what an authentication module says for "ask me again" */
    if (rc != PAM_SUCCESS)
        return rc;
    if (user == NULL || user[0] == '\0')
        return PAM_USER_UNKNOWN;
    if (pam_get_item(s->pamh, PAM_SERVICE, &item) == PAM_SUCCESS)
        service = item;
    if (pam_get_item(s->pamh, PAM_TTY, &item) == PAM_SUCCESS)
        tty = item;
    /* Optional strings the daemon would refuse (not UTF-8, too long) are left out. */
    if (service != NULL && (strnlen(service, LA_WIRE_MAX_FIELD + 1) > LA_WIRE_MAX_FIELD ||
                            !la_wire_utf8_valid((const uint8_t *)service, strlen(service))))
        service = NULL;
    if (tty != NULL && (strnlen(tty, LA_WIRE_MAX_FIELD + 1) > LA_WIRE_MAX_FIELD ||
                        !la_wire_utf8_valid((const uint8_t *)tty, strlen(tty))))
        tty = NULL;

    if (s->opt->password_first && (rc = typed_password(s, user, &answered)) != LA_CONTINUE)
        return rc;
    int64_t flags = s->opt->policy == LA_POLICY_OWNER ? LA_FLAG_PASSCODE_CAPABLE : 0;
    /* The daemon answers notInteractive at once and audits it (a recent success that it may
     * reuse still counts), so the reader is never started for a caller nobody watches. */
    if (!interactive(s, tty, answered))
        flags |= LA_FLAG_INTERACTION_NOT_ALLOWED;

    if (connect_daemon(s) != 0) {
        skipped(s, user, "localauthd is not running");
        return PAM_AUTHINFO_UNAVAIL;
    }
    /* HELLO and EVALUATE go out back to back, the WELCOME is read after: the daemon takes
     * frames in order, and the finger prompt comes one round trip sooner (docs/performance.md). */
    if (send_frame(s, la_encode_hello(&s->w, LA_CLIENT_NAME)) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "cannot send HELLO to %s", s->opt->socket);
        skipped(s, user, "localauthd does not answer");
        return PAM_AUTHINFO_UNAVAIL;
    }

    int64_t left = s->deadline - now_ms() - LA_DAEMON_MARGIN_MS;
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
    if (send_frame(s, la_encode_evaluate(&s->w, &ev)) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "cannot send EVALUATE for %s", user);
        skipped(s, user, "localauthd does not answer");
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (read_reply(s, s->deadline) != 0 || s->reply.type != LA_MSG_WELCOME ||
        s->reply.version != LA_WIRE_VERSION) {
        pam_syslog(s->pamh, LOG_ERR, "no usable WELCOME from %s", s->opt->socket);
        skipped(s, user, "localauthd does not answer");
        return PAM_AUTHINFO_UNAVAIL;
    }
    debug(s, "connected to %s", s->reply.server);

    for (;;) {
        if (read_reply(s, s->deadline) != 0) {
            pam_syslog(s->pamh, LOG_ERR, "localauthd went away, stalled or sent a bad frame");
            return s->seen.conv_failed ? PAM_CONV_ERR : PAM_AUTHINFO_UNAVAIL;
        }
        if (s->reply.type == LA_MSG_EVENT) {
            if (on_event(s) != 0) {
                pam_syslog(s->pamh, LOG_ERR, "cannot answer event %lld", (long long)s->reply.event);
                return PAM_AUTHINFO_UNAVAIL;
            }
            continue;
        }
        if (s->reply.type == LA_MSG_RESULT) {
            int64_t code = s->reply.code;
            rc = la_result_to_pam(code, &s->seen);
            if (code == LA_NOT_INTERACTIVE && flags & LA_FLAG_INTERACTION_NOT_ALLOWED)
                skipped(s, user, "no terminal, and the application cannot show a message");
            else if (la_result_is_shown(code))
                show(s, PAM_ERROR_MSG, s->reply.message);
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

LA_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct la_options opt;
    struct session s;
    la_options_parse(&opt, argc, argv, warn_option, pamh);
    memset(&s, 0, sizeof s);
    s.pamh = pamh;
    s.opt = &opt;
    s.fd = -1;
    s.silent = (flags & PAM_SILENT) != 0;
    s.deadline = now_ms() + (int64_t)opt.timeout * 1000;

    int rc = run(&s);

    /* The one exit: closing the connection also cancels anything still running. */
    if (s.fd >= 0)
        close(s.fd);
    explicit_bzero(&s, sizeof s);
    return rc;
}

LA_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}
