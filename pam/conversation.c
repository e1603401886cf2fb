/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth: the person's side: lines shown at the terminal the module owns or through the
 * application's conversation, the reasons a finger was not used, the password typed at the
 * module's prompt, and the daemon's events while a finger is awaited.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <langinfo.h>
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
#include <wchar.h>
#include <wctype.h>

#define PAM_SM_AUTH
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "codes.h"
#include "messages.h"
#include "module.h"
#include "options.h"
#include "phrases.h"
#include "rules.h"
#include "terminal.h"
#include "wire.h"

/* The length of the well-formed UTF-8 sequence at s (1 to 4), and its code point in cp; 0 when
 * none starts there. */
static size_t utf8_sequence(const unsigned char *s, uint32_t *cp)
{
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0 || s[0] > 0xf4)
        return 0;
    uint32_t c = s[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* the NUL ends it too */
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

/* How the application's locale (LC_CTYPE, its setlocale) encodes text: the C1 controls
 * U+0080-U+009F are written C2 80-C2 9F in UTF-8, but as the bytes 80-9F in ISO 8859 and
 * other single-byte sets, where a terminal takes 9B for CSI; in a multibyte set such as GBK or
 * Big5 those bytes can be part of a character. The C locale (ASCII) is read as UTF-8: most
 * terminals are, and the module's own English lines are UTF-8 ("—"). */
enum la_charset { LA_CHARSET_UTF8, LA_CHARSET_SINGLE_BYTE, LA_CHARSET_MULTIBYTE };

static enum la_charset charset(void)
{
    const char *codeset = nl_langinfo(CODESET);
    if (strcmp(codeset, "UTF-8") == 0 || strcmp(codeset, "ANSI_X3.4-1968") == 0)
        return LA_CHARSET_UTF8;
    return MB_CUR_MAX == 1 ? LA_CHARSET_SINGLE_BYTE : LA_CHARSET_MULTIBYTE;
}

void la_replace_controls(char *text)
{
    enum la_charset set = charset();
    unsigned char *in = (unsigned char *)text, *out = in;
    mbstate_t state;
    memset(&state, 0, sizeof state);
    while (*in != '\0') {
        uint32_t cp = 0;
        size_t n = 1;
        int control = *in < 0x20 || *in == 0x7f; /* C0 and DEL */
        if (*in >= 0x80 && set == LA_CHARSET_UTF8) {
            n = utf8_sequence(in, &cp);
            control = n == 0 ? *in <= 0x9f : cp <= 0x9f; /* C1, or its raw byte */
            n = n == 0 ? 1 : n;
        } else if (*in >= 0x80 && set == LA_CHARSET_MULTIBYTE) {
            wchar_t wc;
            size_t len =
                mbrtowc(&wc, (const char *)in, strnlen((const char *)in, MB_CUR_MAX), &state);
            if (len == (size_t)-1 || len == (size_t)-2 || len == 0) {
                memset(&state, 0, sizeof state);
                control = *in <= 0x9f;
            } else {
                n = len;
                control = iswcntrl((wint_t)wc) != 0;
            }
        } else if (*in >= 0x80) {
            control = *in <= 0x9f;
        }
        if (control) {
            *out++ = '?'; /* one for the whole character */
        } else {
            memmove(out, in, n);
            out += n;
        }
        in += n;
    }
    *out = '\0';
}

/* Shows one line to the person: at the terminal the module owns, else through the
 * conversation unless nobody can read it (s->silent). Control characters are replaced: the
 * line ends up on the terminal of a setuid program. */
void la_show(struct session *s, int style, const char *msg)
{
    char line[LA_WIRE_MAX_FIELD + 1];
    size_t n = strnlen(msg, LA_WIRE_MAX_FIELD);
    if (n == 0)
        return;
    memcpy(line, msg, n);
    line[n] = '\0';
    la_replace_controls(line);
    snprintf(s->shown, sizeof s->shown, "%s", line);
    if (s->term.fd >= 0)
        la_term_say(&s->term, line);
    else if (!s->silent)
        /* A failing conversation for a message is harmless: the request goes on. */
        (void)pam_prompt(s->pamh, style, NULL, "%s", line);
}

/* The daemon's biometryLocked event and its biometryLockout RESULT carry one message ("Too many
 * attempts: use your password"): said once (issue 26). */
void la_show_pending(struct session *s, int drop)
{
    if (s->pending[0] != '\0' && !drop)
        la_show(s, PAM_ERROR_MSG, s->pending);
    s->pending[0] = '\0';
}

void la_show_result(struct session *s, const char *msg)
{
    char line[LA_WIRE_MAX_FIELD + 1];
    snprintf(line, sizeof line, "%s", msg);
    la_replace_controls(line);
    if (s->shown[0] != '\0' && strcmp(line, s->shown) == 0)
        return;
    la_show(s, PAM_ERROR_MSG, msg);
}

/* Logs in one line why the finger was not used (English), and tells the person (in the
 * application's language) when shown is set. */
void la_skipped_because(struct session *s, const char *user, const struct why *why, int shown)
{
    char line[LA_WIRE_MAX_FIELD + 1], name[128];
    /* The user name and PAM_RHOST come from outside: no control character reaches the log. */
    /* English: syslog only. */
    snprintf(name, sizeof name, "%s", user != NULL ? user : "(no user yet)");
    snprintf(line, sizeof line, "%s", why->log);
    la_replace_controls(name);
    la_replace_controls(line);
    pam_syslog(s->pamh, LOG_NOTICE, LA_LOG_NOT_USED, name, line);
    if (shown) {
        snprintf(line, sizeof line, la_text(LA_TEXT_NOT_USED), why->shown);
        la_show(s, PAM_TEXT_INFO, line);
    }
}

/* The same for a reason without arguments (a msgid of messages.h). */
static void skipped_shown(struct session *s, const char *user, const char *msgid, int shown)
{
    struct why why;
    snprintf(why.log, sizeof why.log, "%s", msgid);
    snprintf(why.shown, sizeof why.shown, "%s", la_text(msgid));
    la_skipped_because(s, user, &why, shown);
}

/* Says in one line why the finger was not asked for: always in syslog, and to the person
 * when a message can be shown. */
void la_skipped(struct session *s, const char *user, const char *msgid)
{
    skipped_shown(s, user, msgid, 1);
}

/* The rule for non-interactive callers (sudo -n or -A without a terminal, scripts, cron): a
 * caller is interactive when PAM_TTY names a terminal, or when it did not ask for PAM_SILENT
 * and its conversation takes a PAM_TEXT_INFO message (LA_TEXT_PROBE). Otherwise nothing can
 * tell the person to touch the reader, and the daemon is asked with interactionNotAllowed.
 * password_first has already asked a question that was answered: that caller is
 * interactive; so is a person at a terminal the module owns. */
int la_interactive(struct session *s, const char *tty, int answered)
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
int la_typed_password(struct session *s, const char *user, int *answered)
{
    const void *item = NULL;
    char *answer = NULL;
    if (pam_get_item(s->pamh, PAM_AUTHTOK, &item) == PAM_SUCCESS && item != NULL) {
        if (((const char *)item)[0] == '\0')
            return LA_CONTINUE; /* an earlier module asked, and Enter alone was the answer */
        la_skipped(s, user, LA_WHY_GIVEN);
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
            la_skipped(s, user, LA_WHY_TYPED);
        else
            pam_syslog(s->pamh, LOG_ERR, "cannot store the typed password: %s",
                       pam_strerror(s->pamh, rc));
        rc = PAM_AUTHINFO_UNAVAIL;
    } else if (rc == PAM_CONV_AGAIN) {
        rc = PAM_INCOMPLETE; /* an event-driven application: call again with the answer */
    } else {
        s->silent = 1;
        la_skipped(s, user, LA_WHY_CANNOT_ASK);
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
        la_show(s, PAM_ERROR_MSG, la_text(LA_TEXT_PASSCODE_INVALID));
    if (answer != NULL) {
        explicit_bzero(answer, strlen(answer));
        free(answer);
    }
    s->seen.tries_exhausted = 0; /* a passcode decides from here on, not the fingers */
    if (len == 0) {
        /* Nothing to send: cancel, and give the daemon a short grace to confirm. */
        len = la_encode_cancel(&s->w);
        if (la_now_ms() + LA_CANCEL_GRACE_MS < s->deadline)
            s->deadline = la_now_ms() + LA_CANCEL_GRACE_MS;
    }
    return la_send_frame(s, len);
}

/* The first placeFinger at a terminal the module owns: the one line that takes a finger or
 * a typed password replaces the daemon's prompt (kept for Enter alone). */
static void put_up_prompt(struct session *s, const char *place_finger)
{
    char prompt[sizeof s->term.prompt], name[LA_PROMPT_USER_MAX + 1];
    snprintf(s->place_finger, sizeof s->place_finger, "%s", place_finger);
    snprintf(name, sizeof name, "%s", s->user);
    la_replace_controls(name);
    snprintf(prompt, sizeof prompt, la_text(LA_TEXT_PASSWORD_OR_FINGER), name);
    if (la_term_prompt(&s->term, prompt) != 0)
        la_show(s, PAM_TEXT_INFO, place_finger); /* the terminal refused: say it as a line */
}

/* What the reply says, for the person: its phrase rendered in the application's language (the
 * catalogue), else the daemon's English message (a daemon without phrases, or a phrase newer
 * than this module). Without policy=owner the fallback is the account's password. */
const char *la_reply_text(struct session *s)
{
    enum la_phrase_style style =
        s->opt->policy == LA_POLICY_OWNER ? LA_PHRASE_DEFAULT : LA_PHRASE_PASSWORD_FALLBACK;
    if (s->reply.present & LA_HAS_PHRASE &&
        la_phrase_render(s->reply.phrase, s->reply.phrase_len, style, s->line, sizeof s->line) == 0)
        return s->line;
    return s->reply.message;
}

int la_on_event(struct session *s)
{
    const struct la_reply *r = &s->reply;
    const char *text = la_reply_text(s);
    la_debug(s, "event %lld: %s", (long long)r->event, r->message);
    /* After the last miss, the lockout's line says it all: one line, then the caller's own
     * password prompt (issue 26). */
    la_show_pending(s, r->event == LA_EVENT_BIOMETRY_LOCKED);
    switch (r->event) {
    case LA_EVENT_PLACE_FINGER:
        if (s->term.mode == LA_TERM_OWN && s->term.fd >= 0 && s->place_finger[0] == '\0')
            put_up_prompt(s, text);
        else if (!s->term.reading)
            la_show(s, PAM_TEXT_INFO, text);
        return 0;
    case LA_EVENT_NO_MATCH:
        s->seen.tries_exhausted = r->present & LA_HAS_TRIES_LEFT && r->tries_left <= 0;
        /* The last finger this request takes: the prompt does not come back under its line
         * (the caller's own password prompt follows; issue 26), and the line waits for what
         * follows (la_show_pending). */
        if (s->seen.tries_exhausted) {
            la_term_end_prompt(&s->term, 1);
            snprintf(s->pending, sizeof s->pending, "%s", text);
        } else {
            la_show(s, PAM_ERROR_MSG, text);
        }
        return 0;
    case LA_EVENT_BIOMETRY_LOCKED:
        la_term_end_prompt(&s->term, 1); /* no finger is taken any more */
        la_show(s, PAM_ERROR_MSG, text);
        return 0;
    case LA_EVENT_PASSCODE_WRONG:
        /* The daemon says what comes next: a passcodeNeeded when it wants another, else the
         * RESULT (docs/protocol.md). Nothing is guessed from silence. */
        la_show(s, PAM_ERROR_MSG, text);
        return 0;
    case LA_EVENT_PASSCODE_NEEDED:
        /* Only asked for when we declared passcodeCapable; otherwise the daemon is confused. */
        if (s->opt->policy != LA_POLICY_OWNER)
            return -1;
        if (r->present & LA_HAS_DELAY_MS && r->delay_ms > 0)
            la_show(s, PAM_ERROR_MSG, text);
        return answer_passcode(s);
    case LA_EVENT_ENROLL_STAGE:
        return 0;
    default: /* retry, fallbackAvailable, info, and kinds newer than us */
        la_show(s, PAM_TEXT_INFO, text);
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
        la_show(s, PAM_TEXT_INFO, s->place_finger);
        return LA_CONTINUE;
    }
    if (len > LA_PASSWORD_MAX) {
        la_show(s, PAM_ERROR_MSG, la_text(LA_TEXT_PASSWORD_TOO_LONG));
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
int la_wait_event(struct session *s)
{
    struct pollfd fds[3];
    int64_t left = s->deadline - la_now_ms();
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
