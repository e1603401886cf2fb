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
#include "messages.h"
#include "options.h"
#include "phrases.h"
#include "rules.h"
#include "terminal.h"
#include "wire.h"

#define LA_CLIENT_NAME "pam_localauth 0.1"
#define LA_EXPORT __attribute__((visibility("default")))
/* The daemon gets this much less time than we have, so that its own timedOut RESULT (with a
 * message) normally arrives before our hard deadline cuts the connection. */
#define LA_DAEMON_MARGIN_MS 250
/* How long an ERROR a refusing daemon sent may take to be read after a failed send. */
#define LA_REFUSAL_READ_MS 100
/* After a CANCEL, how long the daemon gets to confirm before we stop listening. */
#define LA_CANCEL_GRACE_MS 1000
/* pam_sm_setcred's report of a used password may take this long (it delays the login). */
#define LA_REPORT_MS 1000
/* Pause between connect attempts while the daemon's listen backlog is full. */
#define LA_CONNECT_RETRY_MS 10
/* run() goes on to the daemon. */
#define LA_CONTINUE (-1)
/* The longest password the module takes at its own prompt: libpam's PAM_MAX_RESP_SIZE - 1,
 * what sudo and pam_unix accept. */
#define LA_PASSWORD_MAX 511
/* The longest user name shown in the prompt. */
#define LA_PROMPT_USER_MAX 64

/* Why the finger was not used: in English for syslog, in the application's language for the
 * person. */
struct why {
    char log[LA_WIRE_MAX_FIELD + 1];
    char shown[LA_WIRE_MAX_FIELD + 1];
};

/* Everything one call owns; lives on pam_sm_authenticate's stack. */
struct session {
    pam_handle_t *pamh;
    const struct la_options *opt;
    int fd;
    int silent;       /* nothing may be shown: la_quiet(), or the conversation failed */
    int64_t deadline; /* CLOCK_MONOTONIC, milliseconds */
    int handed_on;    /* a password typed at the module's prompt went on as PAM_AUTHTOK */
    const char *user;
    struct la_term term;                      /* the caller's terminal, when the module owns it */
    char place_finger[2 * LA_WIRE_MAX_FIELD]; /* the daemon's prompt, for after Enter alone */
    char typed[LA_PASSWORD_MAX + 2];          /* a password typed at the module's prompt */
    struct la_outcome seen;
    struct la_writer w;
    uint8_t body[LA_WIRE_MAX_BODY];
    struct la_reply reply;
    char line[2 * LA_WIRE_MAX_FIELD]; /* the reply's phrase in the application's language */
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

/* Formats a reason (a msgid of messages.h) twice: as it is for syslog, and translated. */
static void why_format(struct why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void why_format(struct why *w, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    vsnprintf(w->log, sizeof w->log, fmt, ap);
    vsnprintf(w->shown, sizeof w->shown, la_text(fmt), aq);
    va_end(aq);
    va_end(ap);
}

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

/* Connects without ever blocking past the deadline and believes only a daemon run by root.
 * On failure, why says what went wrong in words for the person (messages.h). */
static int connect_daemon(struct session *s, struct why *why)
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
                why_format(why, LA_WHY_NO_ANSWER);
                return -1;
            }
            break;
        }
        /* A full backlog: the daemon is alive but busy; try again until the deadline. */
        if (err == EAGAIN && now_ms() + LA_CONNECT_RETRY_MS < s->deadline) {
            poll(NULL, 0, LA_CONNECT_RETRY_MS);
            continue;
        }
        if (err == EAGAIN)
            why_format(why, LA_WHY_BUSY);
        else if (err == ENOENT || err == ECONNREFUSED)
            why_format(why, LA_WHY_NOT_RUNNING);
        else
            WHY_ERRNO(why, LA_WHY_NO_ACCESS, err);
        return -1;
    }
    struct ucred cred;
    socklen_t n = sizeof cred;
    if (getsockopt(s->fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) != 0 || n != sizeof cred) {
        pam_syslog(s->pamh, LOG_ERR, "cannot read the peer credentials of %s: %m", s->opt->socket);
        why_format(why, LA_WHY_NO_CREDENTIALS);
        return -1;
    }
    if (cred.uid != 0) {
        /* Anyone can bind a socket somewhere; only root's answer is worth anything. */
        pam_syslog(s->pamh, LOG_ERR, "%s is served by uid %u, not root: not trusted",
                   s->opt->socket, (unsigned)cred.uid);
        why_format(why, LA_WHY_UNTRUSTED, (unsigned)cred.uid);
        return -1;
    }
    return 0;
}

static void replace_controls(char *text)
{
    for (; *text != '\0'; text++)
        if ((unsigned char)*text < 0x20 || *text == 0x7f)
            *text = '?';
}

/* Shows one line to the person: at the terminal the module owns, else through the
 * conversation unless nobody can read it (s->silent). Control characters are replaced: the
 * line ends up on the terminal of a setuid program. */
static void show(struct session *s, int style, const char *msg)
{
    char line[LA_WIRE_MAX_FIELD + 1];
    size_t n = strnlen(msg, LA_WIRE_MAX_FIELD);
    if (n == 0)
        return;
    memcpy(line, msg, n);
    line[n] = '\0';
    replace_controls(line);
    if (s->term.fd >= 0)
        la_term_say(&s->term, line);
    else if (!s->silent)
        /* A failing conversation for a message is harmless: the request goes on. */
        (void)pam_prompt(s->pamh, style, NULL, "%s", line);
}

/* Logs in one line why the finger was not used (English), and tells the person (in the
 * application's language) when shown is set. */
static void skipped_because(struct session *s, const char *user, const struct why *why, int shown)
{
    char line[LA_WIRE_MAX_FIELD + 1], name[128];
    /* The user name and PAM_RHOST come from outside: no control character reaches the log. */
    /* English: syslog only. */
    snprintf(name, sizeof name, "%s", user != NULL ? user : "(no user yet)");
    snprintf(line, sizeof line, "%s", why->log);
    replace_controls(name);
    replace_controls(line);
    pam_syslog(s->pamh, LOG_NOTICE, LA_LOG_NOT_USED, name, line);
    if (shown) {
        snprintf(line, sizeof line, la_text(LA_TEXT_NOT_USED), why->shown);
        show(s, PAM_TEXT_INFO, line);
    }
}

/* The same for a reason without arguments (a msgid of messages.h). */
static void skipped_shown(struct session *s, const char *user, const char *msgid, int shown)
{
    struct why why;
    snprintf(why.log, sizeof why.log, "%s", msgid);
    snprintf(why.shown, sizeof why.shown, "%s", la_text(msgid));
    skipped_because(s, user, &why, shown);
}

/* Says in one line why the finger was not asked for: always in syslog, and to the person
 * when a message can be shown. */
static void skipped(struct session *s, const char *user, const char *msgid)
{
    skipped_shown(s, user, msgid, 1);
}

/* The rule for non-interactive callers (sudo -n or -A without a terminal, scripts, cron): a
 * caller is interactive when PAM_TTY names a terminal, or when it did not ask for PAM_SILENT
 * and its conversation takes a PAM_TEXT_INFO message (LA_TEXT_PROBE). Otherwise nothing can
 * tell the person to touch the reader, and the daemon is asked with interactionNotAllowed.
 * password_first has already asked a question that was answered: that caller is
 * interactive; so is a person at a terminal the module owns. */
static int interactive(struct session *s, const char *tty, int answered)
{
    if (answered || s->term.mode == LA_TERM_OWN || la_tty_names_terminal(tty))
        return 1;
    if (s->silent)
        return 0;
    if (pam_prompt(s->pamh, PAM_TEXT_INFO, NULL, "%s", la_text(LA_TEXT_PROBE)) == PAM_SUCCESS)
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
        skipped(s, user, LA_WHY_GIVEN);
        return PAM_AUTHINFO_UNAVAIL;
    }
    int rc = pam_prompt(s->pamh, PAM_PROMPT_ECHO_OFF, &answer, "%s", la_text(LA_TEXT_PASSWORD));
    if (rc == PAM_SUCCESS && answer != NULL && answer[0] == '\0') {
        *answered = 1;
        rc = LA_CONTINUE;
    } else if (rc == PAM_SUCCESS && answer != NULL) {
        rc = pam_set_item(s->pamh, PAM_AUTHTOK, answer); /* libpam keeps its own copy */
        s->handed_on = rc == PAM_SUCCESS;
        if (rc == PAM_SUCCESS)
            skipped(s, user, LA_WHY_TYPED);
        else
            pam_syslog(s->pamh, LOG_ERR, "cannot store the typed password: %s",
                       pam_strerror(s->pamh, rc));
        rc = PAM_AUTHINFO_UNAVAIL;
    } else if (rc == PAM_CONV_AGAIN) {
        rc = PAM_INCOMPLETE; /* an event-driven application: call again with the answer */
    } else {
        s->silent = 1;
        skipped(s, user, LA_WHY_CANNOT_ASK);
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
    /* The question goes through the application's conversation, which needs the terminal
     * and the signals as the application left them. */
    la_term_close(&s->term);
    int rc = pam_prompt(s->pamh, PAM_PROMPT_ECHO_OFF, &answer, "%s", la_text(LA_TEXT_PASSCODE));
    if (rc != PAM_SUCCESS || answer == NULL)
        s->seen.conv_failed = 1;
    else if (answer[0] != '\0' && (len = la_encode_passcode(&s->w, answer)) == 0)
        show(s, PAM_ERROR_MSG, la_text(LA_TEXT_PASSCODE_INVALID));
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

/* The first placeFinger at a terminal the module owns: the one line that takes a finger or
 * a typed password replaces the daemon's prompt (kept for Enter alone). */
static void put_up_prompt(struct session *s, const char *place_finger)
{
    char prompt[sizeof s->term.prompt], name[LA_PROMPT_USER_MAX + 1];
    snprintf(s->place_finger, sizeof s->place_finger, "%s", place_finger);
    snprintf(name, sizeof name, "%s", s->user);
    replace_controls(name);
    snprintf(prompt, sizeof prompt, la_text(LA_TEXT_PASSWORD_OR_FINGER), name);
    if (la_term_prompt(&s->term, prompt) != 0)
        show(s, PAM_TEXT_INFO, place_finger); /* the terminal refused: say it as a line */
}

/* What the reply says, for the person: its phrase rendered in the application's language (the
 * catalogue), else the daemon's English message (a daemon without phrases, or a phrase newer
 * than this module). Without policy=owner the fallback is the account's password. */
static const char *reply_text(struct session *s)
{
    enum la_phrase_style style =
        s->opt->policy == LA_POLICY_OWNER ? LA_PHRASE_DEFAULT : LA_PHRASE_PASSWORD_FALLBACK;
    if (s->reply.present & LA_HAS_PHRASE &&
        la_phrase_render(s->reply.phrase, s->reply.phrase_len, style, s->line, sizeof s->line) == 0)
        return s->line;
    return s->reply.message;
}

static int on_event(struct session *s)
{
    const struct la_reply *r = &s->reply;
    const char *text = reply_text(s);
    debug(s, "event %lld: %s", (long long)r->event, r->message);
    switch (r->event) {
    case LA_EVENT_PLACE_FINGER:
        if (s->term.mode == LA_TERM_OWN && s->term.fd >= 0 && s->place_finger[0] == '\0')
            put_up_prompt(s, text);
        else if (!s->term.reading)
            show(s, PAM_TEXT_INFO, text);
        return 0;
    case LA_EVENT_NO_MATCH:
        s->seen.tries_exhausted = r->present & LA_HAS_TRIES_LEFT && r->tries_left <= 0;
        show(s, PAM_ERROR_MSG, text);
        return 0;
    case LA_EVENT_BIOMETRY_LOCKED:
        show(s, PAM_ERROR_MSG, text);
        return 0;
    case LA_EVENT_PASSCODE_WRONG:
        /* The daemon says what comes next: a passcodeNeeded when it wants another, else the
         * RESULT (docs/protocol.md). Nothing is guessed from silence. */
        show(s, PAM_ERROR_MSG, text);
        return 0;
    case LA_EVENT_PASSCODE_NEEDED:
        /* Only asked for when we declared passcodeCapable; otherwise the daemon is confused. */
        if (s->opt->policy != LA_POLICY_OWNER)
            return -1;
        if (r->present & LA_HAS_DELAY_MS && r->delay_ms > 0)
            show(s, PAM_ERROR_MSG, text);
        return answer_passcode(s);
    case LA_EVENT_ENROLL_STAGE:
        return 0;
    default: /* retry, fallbackAvailable, info, and kinds newer than us */
        show(s, PAM_TEXT_INFO, text);
        return 0;
    }
}

/* A line typed at the module's prompt. Returns LA_CONTINUE to go on waiting, else the PAM
 * code: a password becomes PAM_AUTHTOK for the password module after this one
 * (pam_unix try_first_pass) and the finger is given up, without waiting for the reader. */
static int on_typed_line(struct session *s, size_t len)
{
    if (len == 0) {
        /* Enter alone: the finger only, as the daemon asked for it. */
        la_term_stop_reading(&s->term);
        show(s, PAM_TEXT_INFO, s->place_finger);
        return LA_CONTINUE;
    }
    if (len > LA_PASSWORD_MAX) {
        show(s, PAM_ERROR_MSG, la_text(LA_TEXT_PASSWORD_TOO_LONG));
        return LA_CONTINUE;
    }
    int rc = pam_set_item(s->pamh, PAM_AUTHTOK, s->typed); /* libpam keeps its own copy */
    explicit_bzero(s->typed, sizeof s->typed);
    s->handed_on = rc == PAM_SUCCESS;
    if (rc != PAM_SUCCESS) {
        pam_syslog(s->pamh, LOG_ERR, "cannot store the typed password: %s",
                   pam_strerror(s->pamh, rc));
        return PAM_AUTHINFO_UNAVAIL;
    }
    /* The person knows; syslog hears why the reader was not used. */
    skipped_shown(s, s->user, LA_WHY_TYPED, 0);
    la_term_end_prompt(&s->term, 0);
    return PAM_AUTHINFO_UNAVAIL;
}

/* Waits for the daemon's next frame, a line at the module's prompt or a signal key, until the
 * deadline. Returns 0 when a frame is ready to read, LA_CONTINUE when something was handled
 * and the wait goes on, or the PAM code to return. */
static int wait_event(struct session *s)
{
    struct pollfd fds[3];
    int64_t left = s->deadline - now_ms();
    if (left <= 0)
        return 0; /* read_reply reports the deadline */
    fds[0] = (struct pollfd){.fd = s->fd, .events = POLLIN};
    int n = 1 + la_term_pollfds(&s->term, fds + 1);
    int ready = poll(fds, (nfds_t)n, left > INT32_MAX ? INT32_MAX : (int)left);
    if (ready < 0 && errno != EINTR)
        return 0;
    if (ready <= 0)
        return ready == 0 ? 0 : LA_CONTINUE;
    size_t len = 0;
    switch (la_term_check(&s->term, fds + 1, n - 1, s->typed, sizeof s->typed, &len)) {
    case LA_TERM_LINE:
        return on_typed_line(s, len);
    case LA_TERM_INTERRUPT:
        /* Ctrl-C or Ctrl-\: closing the connection frees the reader and counts nothing. */
        la_term_end_prompt(&s->term, 1);
        skipped_shown(s, s->user, LA_WHY_INTERRUPTED, 0);
        return PAM_AUTHINFO_UNAVAIL;
    case LA_TERM_TERMINATE:
        /* SIGTERM: whoever sent it wants the caller gone. PAM_INCOMPLETE is the one code that
         * stops the stack whatever its controls say; otherwise sudo, whose handler only marks
         * the signal, would ask for its password and then die with the terminal left raw. */
        la_term_end_prompt(&s->term, 1);
        skipped_shown(s, s->user, LA_WHY_TERMINATED, 0);
        return PAM_INCOMPLETE;
    case LA_TERM_HANGUP:
        skipped_shown(s, s->user, LA_WHY_TERMINAL_GONE, 0);
        return PAM_AUTHINFO_UNAVAIL;
    case LA_TERM_NOTHING:
        break;
    }
    return fds[0].revents != 0 ? 0 : LA_CONTINUE;
}

/* Why a frame could not be sent: a daemon that refuses the HELLO sends ERROR and hangs up, and
 * the EVALUATE behind the HELLO may then meet a closed socket; the ERROR is still there to read
 * and says what happened. */
static void refused_or_silent(struct session *s, struct why *why)
{
    if (read_reply(s, now_ms() + LA_REFUSAL_READ_MS) == 0 && s->reply.type == LA_MSG_ERROR)
        why_format(why, LA_WHY_REFUSED, s->reply.message);
    else
        why_format(why, LA_WHY_NO_ANSWER);
}

/* The user name goes into the request; one the daemon would refuse is said at once. */
static int user_fits(struct session *s, const char *user)
{
    struct why why;
    size_t n = strnlen(user, LA_WIRE_MAX_FIELD + 1);
    if (n > LA_WIRE_MAX_FIELD)
        why_format(&why, LA_WHY_USER_TOO_LONG, strlen(user), LA_WIRE_MAX_FIELD);
    else if (!la_wire_utf8_valid((const uint8_t *)user, n))
        why_format(&why, LA_WHY_USER_NOT_TEXT);
    else
        return 1;
    skipped_because(s, user, &why, 1);
    return 0;
}

/* The conversation with the daemon; every failure that is not the daemon's answer is
 * PAM_AUTHINFO_UNAVAIL, so the stack falls back to the password. */
static int run(struct session *s, int pam_silent)
{
    const void *item = NULL;
    const char *user = NULL, *service = NULL, *tty = NULL;
    struct why why;
    int answered = 0;

    if (pam_get_item(s->pamh, PAM_TTY, &item) == PAM_SUCCESS)
        tty = item;
    s->silent = la_quiet(pam_silent, tty);
    if (pam_get_item(s->pamh, PAM_RHOST, &item) == PAM_SUCCESS && la_is_remote(item)) {
        why_format(&why, LA_WHY_REMOTE, (const char *)item);
        if (pam_get_item(s->pamh, PAM_USER, &item) != PAM_SUCCESS)
            item = NULL;
        skipped_because(s, item, &why, 1);
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
    if (service != NULL && (strnlen(service, LA_WIRE_MAX_FIELD + 1) > LA_WIRE_MAX_FIELD ||
                            !la_wire_utf8_valid((const uint8_t *)service, strlen(service))))
        service = NULL;
    if (tty != NULL && (strnlen(tty, LA_WIRE_MAX_FIELD + 1) > LA_WIRE_MAX_FIELD ||
                        !la_wire_utf8_valid((const uint8_t *)tty, strlen(tty))))
        tty = NULL;

    if (s->opt->password_first) {
        if ((rc = typed_password(s, user, &answered)) != LA_CONTINUE)
            return rc;
    } else {
        switch (la_term_open(&s->term, tty, s->deadline)) {
        case LA_TERM_SCRIPTED:
            skipped(s, user, LA_WHY_STDIN);
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
    if (!interactive(s, tty, answered))
        flags |= LA_FLAG_INTERACTION_NOT_ALLOWED;

    if (connect_daemon(s, &why) != 0) {
        skipped_because(s, user, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
    /* HELLO and EVALUATE go out back to back, the WELCOME is read after: the daemon takes
     * frames in order, and the finger prompt comes one round trip sooner (docs/performance.md). */
    if (send_frame(s, la_encode_hello(&s->w, LA_CLIENT_NAME)) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "cannot send HELLO to %s", s->opt->socket);
        refused_or_silent(s, &why);
        skipped_because(s, user, &why, 1);
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
        refused_or_silent(s, &why);
        skipped_because(s, user, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (read_reply(s, s->deadline) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "no WELCOME from %s", s->opt->socket);
        skipped(s, user, LA_WHY_NO_ANSWER);
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (s->reply.type != LA_MSG_WELCOME || s->reply.version != LA_WIRE_VERSION) {
        if (s->reply.type == LA_MSG_ERROR)
            why_format(&why, LA_WHY_REFUSED, s->reply.message);
        else if (s->reply.type == LA_MSG_WELCOME)
            why_format(&why, LA_WHY_OTHER_VERSION, (long long)s->reply.version, LA_WIRE_VERSION);
        else
            why_format(&why, LA_WHY_NO_ANSWER);
        pam_syslog(s->pamh, LOG_ERR, "no usable WELCOME from %s", s->opt->socket);
        skipped_because(s, user, &why, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
    debug(s, "connected to %s", s->reply.server);

    for (;;) {
        if ((rc = wait_event(s)) == LA_CONTINUE)
            continue;
        if (rc != 0)
            return rc;
        if (read_reply(s, s->deadline) != 0) {
            pam_syslog(s->pamh, LOG_ERR, "localauthd went away, stalled or sent a bad frame");
            la_term_end_prompt(&s->term, 1);
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
            /* What was typed and not sent is dropped with the prompt: a finger decided. */
            la_term_end_prompt(&s->term, 1);
            if (code == LA_NOT_INTERACTIVE && flags & LA_FLAG_INTERACTION_NOT_ALLOWED)
                skipped(s, user, LA_WHY_NOT_INTERACTIVE);
            else if (la_result_is_shown(code))
                show(s, PAM_ERROR_MSG, reply_text(s));
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

/* What pam_sm_authenticate leaves for pam_sm_setcred and a password_used line (pam_set_data:
 * one value per handle and name, kept until pam_end). The values' addresses are the marks. */
#define LA_DATA_FINGER "pam_localauth_finger"
/* pam_unix's record of its authentication's return value, for its own pam_sm_setcred
 * (Linux-PAM modules/pam_unix/pam_unix_auth.c): PAM_SUCCESS once it accepted the password. */
#define LA_DATA_UNIX "unix_setcred_return"
static const enum la_finger_mark marks[] = {LA_FINGER_NOT_ASKED, LA_FINGER_NOT_USED,
                                            LA_FINGER_TYPED, LA_FINGER_ACCEPTED,
                                            LA_FINGER_REPORTED};

static void mark_finger(pam_handle_t *pamh, enum la_finger_mark mark)
{
    if (pam_set_data(pamh, LA_DATA_FINGER, (void *)&marks[mark], NULL) != PAM_SUCCESS)
        pam_syslog(pamh, LOG_ERR, "cannot keep this authentication's outcome for pam_setcred");
}

/* The user this transaction's pam_sm_authenticate ran for: whose password the stack checked.
 * pam_setcred reports that user and not the PAM_USER of the moment, which the application may
 * have changed in between (sudo sets the target user, root, before pam_setcred). */
#define LA_DATA_USER "pam_localauth_user"

static void free_user(pam_handle_t *pamh, void *data, int error_status)
{
    (void)pamh;
    (void)error_status;
    free(data);
}

static void keep_user(pam_handle_t *pamh)
{
    const void *user = NULL;
    char *copy = NULL;
    if (pam_get_item(pamh, PAM_USER, &user) == PAM_SUCCESS && user != NULL)
        copy = strdup(user);
    /* Without a copy nothing is left to report: the old value goes too (the strict side). */
    if (pam_set_data(pamh, LA_DATA_USER, copy, free_user) != PAM_SUCCESS) {
        free(copy);
        pam_syslog(pamh, LOG_ERR, "cannot keep this authentication's user for pam_setcred");
    }
}

static const char *authenticated_user(pam_handle_t *pamh)
{
    const void *data = NULL;
    return pam_get_data(pamh, LA_DATA_USER, &data) == PAM_SUCCESS ? data : NULL;
}

static enum la_finger_mark finger_mark(pam_handle_t *pamh)
{
    const void *data = NULL;
    if (pam_get_data(pamh, LA_DATA_FINGER, &data) != PAM_SUCCESS || data == NULL)
        return LA_FINGER_NOT_ASKED;
    return *(const enum la_finger_mark *)data;
}

static int unix_accepted(pam_handle_t *pamh)
{
    const void *data = NULL;
    return pam_get_data(pamh, LA_DATA_UNIX, &data) == PAM_SUCCESS && data != NULL &&
           *(const int *)data == PAM_SUCCESS;
}

/* Tells the daemon that user's password just succeeded (PASSWORD_USED), within the deadline;
 * returns the daemon's RESULT message, or why there is none, in why. 0: the daemon recorded it. */
static int report_password(struct session *s, const char *user, const char *service, char *why,
                           size_t cap)
{
    struct why w; /* for syslog: its English words */
    if (connect_daemon(s, &w) != 0) {
        snprintf(why, cap, "%s", w.log);
        return -1;
    }
    if (send_frame(s, la_encode_hello(&s->w, LA_CLIENT_NAME)) != 0 ||
        send_frame(s, la_encode_password_used(&s->w, user, service)) != 0) {
        refused_or_silent(s, &w);
        snprintf(why, cap, "%s", w.log);
        return -1;
    }
    if (read_reply(s, s->deadline) != 0 || s->reply.type != LA_MSG_WELCOME ||
        read_reply(s, s->deadline) != 0 || s->reply.type != LA_MSG_RESULT) {
        snprintf(why, cap, "%s",
                 s->reply.type == LA_MSG_ERROR ? s->reply.message : LA_WHY_NO_ANSWER);
        return -1;
    }
    snprintf(why, cap, "%s", s->reply.message);
    replace_controls(why);
    return s->reply.code == 0 ? 0 : -1;
}

/* Reports the use of user's password (pam_sm_setcred, or a password_used line), logs the
 * outcome, and marks the transaction so that it is reported once. */
static void report(pam_handle_t *pamh, const struct la_options *opt, const char *user)
{
    const void *service = NULL;
    if (user == NULL || strnlen(user, LA_WIRE_MAX_FIELD + 1) > LA_WIRE_MAX_FIELD ||
        !la_wire_utf8_valid((const uint8_t *)user, strlen(user)))
        return;
    if (pam_get_item(pamh, PAM_SERVICE, &service) != PAM_SUCCESS || service == NULL ||
        strnlen(service, LA_WIRE_MAX_FIELD + 1) > LA_WIRE_MAX_FIELD ||
        !la_wire_utf8_valid(service, strlen(service)))
        service = NULL;
    struct session s;
    char why[LA_WIRE_MAX_FIELD + 64], name[128];
    memset(&s, 0, sizeof s);
    s.pamh = pamh;
    s.opt = opt;
    s.fd = -1;
    s.term.fd = s.term.sig_fd = -1;
    s.deadline = now_ms() + LA_REPORT_MS;
    int rc = report_password(&s, user, service, why, sizeof why);
    snprintf(name, sizeof name, "%s", user);
    replace_controls(name);
    pam_syslog(pamh, rc == 0 ? LOG_INFO : LOG_NOTICE,
               rc == 0 ? LA_LOG_PASSWORD_REPORTED : LA_LOG_PASSWORD_NOT_REPORTED, name, why);
    if (s.fd >= 0)
        close(s.fd);
    explicit_bzero(&s, sizeof s);
    if (rc == 0)
        mark_finger(pamh, LA_FINGER_REPORTED);
}

/* `password_used`, a line after the password module: PAM_AUTHTOK is still there while the stack
 * runs (libpam wipes it when pam_authenticate returns). PAM_IGNORE: it decides nothing. */
static int password_used_line(pam_handle_t *pamh, const struct la_options *opt)
{
    const void *authtok = NULL, *rhost = NULL, *user = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &authtok) != PAM_SUCCESS)
        authtok = NULL;
    if (pam_get_item(pamh, PAM_RHOST, &rhost) != PAM_SUCCESS)
        rhost = NULL;
    if (pam_get_item(pamh, PAM_USER, &user) != PAM_SUCCESS)
        user = NULL;
    if (la_reports_after_password(finger_mark(pamh), authtok, rhost))
        report(pamh, opt, user);
    return PAM_IGNORE;
}

LA_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    /* The catalogue for the application's language (its setlocale). Binding our own text domain
     * changes nothing else in the process; the application keeps its locale. */
    bindtextdomain(LA_TEXT_DOMAIN, LA_LOCALEDIR);
    struct la_options opt;
    struct session s;
    la_options_parse(&opt, argc, argv, warn_option, pamh);
    if (opt.password_used)
        return password_used_line(pamh, &opt);
    mark_finger(pamh, LA_FINGER_NOT_USED);
    memset(&s, 0, sizeof s);
    s.pamh = pamh;
    s.opt = &opt;
    s.fd = -1;
    s.term.fd = s.term.sig_fd = -1;
    s.deadline = now_ms() + (int64_t)opt.timeout * 1000;

    int rc = run(&s, (flags & PAM_SILENT) != 0);
    keep_user(pamh);
    if (rc == PAM_SUCCESS)
        mark_finger(pamh, LA_FINGER_ACCEPTED);
    else if (s.handed_on)
        mark_finger(pamh, LA_FINGER_TYPED);

    /* The one exit: closing the connection also cancels anything still running and frees
     * the reader; then the terminal and the signal mask go back to how the caller left them. */
    if (s.fd >= 0)
        close(s.fd);
    la_term_close(&s.term);
    explicit_bzero(&s, sizeof s);
    return rc;
}

/* After a password (not a finger) got the user through the stack, tells the daemon so, for the
 * "password required" rules (docs/adr/0007-password-required.md). Never fails the caller:
 * credentials are not the module's business, and a report that cannot be made only means the
 * password is asked for once more later. */
LA_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    const void *rhost = NULL;
    struct la_options opt;
    if (pam_get_item(pamh, PAM_RHOST, &rhost) != PAM_SUCCESS)
        rhost = NULL;
    la_options_parse(&opt, argc, argv, NULL, NULL); /* pam_sm_authenticate warned already */
    if (!opt.password_used &&
        la_reports_at_setcred(flags, finger_mark(pamh), unix_accepted(pamh), rhost))
        report(pamh, &opt, authenticated_user(pamh));
    return PAM_SUCCESS;
}
