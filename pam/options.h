/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The module's arguments (the words after pam_localauth.so in a pam.d file), parsed into one
 * struct. Pure code: bad arguments are reported through a callback and ignored, never fatal,
 * so a typo in /etc/pam.d cannot lock anyone out or in.
 */
#ifndef LOCALAUTH_PAM_OPTIONS_H
#define LOCALAUTH_PAM_OPTIONS_H

#include "wire.h"

#define LA_DEFAULT_SOCKET "/run/localauthd/socket"
/* sun_path holds 108 bytes, the terminating NUL included. */
#define LA_SOCKET_PATH_MAX 107
#define LA_DEFAULT_TIMEOUT 30
#define LA_TIMEOUT_MIN 1
#define LA_TIMEOUT_MAX 300
#define LA_DEFAULT_TRIES 3
#define LA_TRIES_MIN 1
#define LA_TRIES_MAX 5

struct la_options {
    char socket[LA_SOCKET_PATH_MAX + 1];
    int policy;      /* enum la_policy */
    int timeout;     /* seconds, the whole pam_sm_authenticate call */
    int tries;       /* fingers allowed */
    int have_reason; /* otherwise the module uses PAM_SERVICE */
    char reason[LA_WIRE_MAX_FIELD + 1];
    int debug;
    int password_first; /* ask for a typed password before the finger (screen lockers) */
    int password_used;  /* placed after the password module: report a password that got there */
};

/* Whether a PAM_TTY value names a terminal or a display a person sits at: "/dev/…", "tty…",
 * "pts/…", "console", or an X display (":0"). Without one, sudo sets "", cron "cron", sshd
 * "ssh". NULL is no terminal. */
int la_tty_names_terminal(const char *tty);

/* Called once for each argument that is ignored, with the argument and why. */
typedef void (*la_options_warn_fn)(void *ctx, const char *arg, const char *why);

/* Fills o with the defaults, then applies argv in order (a later word wins). Returns the
 * number of ignored arguments. warn may be NULL. */
int la_options_parse(struct la_options *o, int argc, const char **argv, la_options_warn_fn warn,
                     void *ctx);

#endif
