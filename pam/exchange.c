/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth: run(), the request pam_sm_authenticate drives: the HELLO and EVALUATE sent,
 * the daemon's events shown, its RESULT turned into a PAM code. The socket is socket.c's; the
 * person's side is conversation.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
        /* No fallback button: the person types the password at the prompt, or the next module
         * asks for it; a fallbackAvailable event was an extra "Enter password" line. */
        .fallback_title = "",
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
