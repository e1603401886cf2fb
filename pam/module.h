/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth's internals shared by its files, which call only downwards (a request's path
 * reads straight down): pam_localauth.c (the pam_sm_* entry points) → exchange.c (run(), the
 * request) → conversation.c (the person) → socket.c (the daemon's socket) → session.c (clock,
 * debug lines, reasons). Not part of the module's interface: nothing here is exported
 * (-fvisibility=hidden, pam/export.map).
 */
#ifndef LA_MODULE_H
#define LA_MODULE_H

#include <stdint.h>

#include <security/pam_modules.h>

#include "codes.h"
#include "options.h"
#include "terminal.h"
#include "wire.h"

#define LA_CLIENT_NAME "pam_localauth 0.1"
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
    char line[2 * LA_WIRE_MAX_FIELD];    /* the reply's phrase in the application's language */
    char shown[LA_WIRE_MAX_FIELD + 1];   /* the last line la_show showed, as shown */
    char pending[2 * LA_WIRE_MAX_FIELD]; /* the last miss's line, until what follows is known */
};

/* session.c */
int64_t la_now_ms(void);
void la_debug(const struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Formats a reason (a msgid of messages.h) twice: as it is for syslog, and translated. */
void la_why_format(struct why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* socket.c */
int la_send_frame(struct session *s, size_t len);
int la_read_reply(struct session *s, int64_t deadline);
int la_connect_daemon(struct session *s, struct why *why);
void la_refused_or_silent(struct session *s, struct why *why);

/* conversation.c */
/* Replaces each control character of text, in place, by one '?': C0, DEL and C1 (U+0080-U+009F,
 * or the bytes 80-9F where the application's locale is a single-byte one), as the locale
 * encodes them. */
void la_replace_controls(char *text);
void la_show(struct session *s, int style, const char *msg);
/* The RESULT's line: shown unless the line just shown says the same. */
void la_show_result(struct session *s, const char *msg);
/* Shows the last miss's line, held back in case the lockout's line follows (then only that one
 * is shown); drop: forget it instead. */
void la_show_pending(struct session *s, int drop);
void la_skipped_because(struct session *s, const char *user, const struct why *why, int shown);
void la_skipped(struct session *s, const char *user, const char *msgid);
int la_interactive(struct session *s, const char *tty, int answered);
int la_typed_password(struct session *s, const char *user, int *answered);
const char *la_reply_text(struct session *s);
int la_on_event(struct session *s);
int la_wait_event(struct session *s);

/* exchange.c */
int la_run(struct session *s, int pam_silent);

#endif
